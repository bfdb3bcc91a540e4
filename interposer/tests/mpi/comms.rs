//! Ranks on communicators other than WORLD are recorded as world ranks,
//! also on communicators freed and created again with other members
//! (`tests/mpi/recreate.c`), where MPI may hand out a freed handle again.

use std::collections::BTreeMap;

use simulator::trace::{open_dir, Params};

use super::online::test_program;
use super::{mpirun, records};

#[test]
fn recreated_communicators_record_world_ranks_of_their_own_members() {
    let prog = test_program("recreate");
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun(6, prog.to_str().unwrap(), &["12"], &[("INTERPOSER_OUT", dir.path().to_str().unwrap())], true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut want: BTreeMap<u32, Vec<(i32, i32)>> = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(rest) = l.strip_prefix("expect@") else { continue };
        let v: Vec<i32> = rest.split_whitespace().map(|x| x.parse().unwrap()).collect();
        want.entry(v[0] as u32).or_default().push((v[1], v[2]));
    }
    let (_, ranks) = open_dir(dir.path()).unwrap();
    assert_eq!(ranks.len(), 6);
    for t in &ranks {
        let got: Vec<(i32, i32)> = records(t)
            .iter()
            .filter_map(|r| match r.params {
                Params::Sendrecv { dst, src, comm, .. } if comm != 0 => Some((dst, src)),
                _ => None,
            })
            .collect();
        assert_eq!(got.len(), 24, "rank {}: 12 iterations × 2 Sendrecv", t.header.rank);
        assert_eq!(got, want[&t.header.rank], "rank {}: recorded (dst, src) vs MPI's groups", t.header.rank);
    }
}
