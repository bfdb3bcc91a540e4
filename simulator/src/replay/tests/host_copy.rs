//! A host's copy rate shared by its concurrent rendezvous transfers
//! (`[network] host_copy_bytes_per_s`), and a rank's shared by the
//! transfers it receives at once (`serial_receives`): hand-computed cases.

use super::*;

const MB: u64 = 1_000_000;
/// Transfer latency, seconds, and bound, bytes/s.
const A: f64 = 1e-6;
const B: f64 = 1e10;
/// The hosts' copy rate, bytes/s: two transfers at once get C / 2 < B each.
const C: f64 = 1.25e10;

/// `hosts` hosts of two cores (ranks 0, 1 on the first, 2, 3 on the
/// second), transfers A + bytes / B within and between hosts.
fn hosts(n: usize, copy: Option<f64>) -> Platform {
    let hosts = (0..n).map(|i| Host::new(format!("h{i}"), 2)).collect();
    let mut p = Platform::new("t", hosts, model(A, B, 0.0, 0.0));
    p.network.inter = Some(model(A, B, 0.0, 0.0));
    p.network.host_copy_bytes_per_s = copy;
    p
}

fn exchange(peer: u32) -> Action {
    Action::Sendrecv { dst: peer, send_tag: 0, send_bytes: MB, src: peer as i32, recv_tag: 0, recv_bytes: MB, comm: 0 }
}

#[test]
fn an_exchange_shares_the_copy_rate_and_a_one_way_transfer_keeps_its_bound() {
    let alone = A + MB as f64 / B;
    let shared = A + MB as f64 / (C / 2.0);
    for (copy, want) in [(None, alone), (Some(C), shared)] {
        let r = run(&hosts(1, copy), vec![vec![exchange(1)], vec![exchange(0)]]).unwrap();
        close(r.makespan_s, want);
        balanced(&r);
    }
    let one_way = vec![vec![send(1, MB)], vec![recv(0)]];
    close(run(&hosts(1, Some(C)), one_way).unwrap().makespan_s, alone);
    // A copy rate above the two bounds together never binds.
    let r = run(&hosts(1, Some(2.0 * B)), vec![vec![exchange(1)], vec![exchange(0)]]).unwrap();
    close(r.makespan_s, alone);
}

#[test]
fn overlapping_transfers_share_only_while_both_move_data() {
    // 0 → 1 starts at 0 and moves alone at B from A to 40 µs + A, when
    // 1 → 0 (posted after 40 µs of compute) ends its latency; both then
    // move at C / 2 until 0 → 1's last 6e5 bytes are through, and 1 → 0
    // finishes its last 4e5 bytes alone at B.
    let isend = |dst, req| Action::Isend { dst, tag: 0, bytes: MB, comm: 0, req };
    let irecv = |src, req| Action::Irecv { src, tag: 0, bytes: MB, comm: 0, req };
    let ranks = vec![
        vec![irecv(1, 1), isend(1, 2), Action::Waitall { reqs: vec![1, 2] }],
        vec![irecv(0, 1), compute(40e-6), isend(0, 2), Action::Waitall { reqs: vec![1, 2] }],
    ];
    let r = run(&hosts(1, Some(C)), ranks).unwrap();
    let first_end = 40e-6 + A + 6e5 / (C / 2.0);
    let second_end = first_end + 4e5 / B;
    close(r.ranks[0].end_s, second_end);
    close(r.ranks[1].end_s, second_end);
    balanced(&r);
    assert!(first_end < second_end && second_end < 40e-6 + A + MB as f64 / (C / 2.0));
}

#[test]
fn transfers_on_other_hosts_and_between_hosts_do_not_share_a_copy_rate() {
    // Ranks 0 ↔ 1 on h0 and 2 ↔ 3 on h1: each pair shares its own host's rate.
    let pairs = vec![vec![exchange(1)], vec![exchange(0)], vec![exchange(3)], vec![exchange(2)]];
    let r = run(&hosts(2, Some(C)), pairs).unwrap();
    close(r.makespan_s, A + MB as f64 / (C / 2.0));
    // Ranks 0 ↔ 2 and 1 ↔ 3 exchange between hosts: no copy rate applies.
    let across = vec![vec![exchange(2)], vec![exchange(3)], vec![exchange(0)], vec![exchange(1)]];
    let r = run(&hosts(2, Some(C)), across).unwrap();
    close(r.makespan_s, A + MB as f64 / B);
}

#[test]
fn a_negative_intercept_keeps_a_lone_transfers_time() {
    // A line fitted through large sizes may cross zero below them.
    let mut p = hosts(1, Some(C));
    p.network.intra = model(-5e-6, B, 0.0, 0.0);
    let one_way = vec![vec![send(1, MB)], vec![recv(0)]];
    close(run(&p, one_way).unwrap().makespan_s, -5e-6 + MB as f64 / B);
    // Two at once: no latency, and the bound that gives that time alone
    // (MB / 95 µs > C / 2), so each moves at C / 2.
    let r = run(&p, vec![vec![exchange(1)], vec![exchange(0)]]).unwrap();
    close(r.makespan_s, MB as f64 / (C / 2.0));
}

#[test]
fn a_bad_copy_rate_is_refused_by_name() {
    for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        let e = hosts(1, Some(bad)).validate().unwrap_err().to_string();
        assert!(e.contains("network.host_copy_bytes_per_s"), "{e}");
    }
}

/// Rank 0 receives two transfers of `MB` at once from rank 1 (two
/// `MPI_Irecv`, two `MPI_Isend`, each side waiting for both).
fn two_at_once() -> Vec<Vec<Action>> {
    let isend = |req| Action::Isend { dst: 0, tag: req as i32, bytes: MB, comm: 0, req };
    let irecv = |req| Action::Irecv { src: 1, tag: req as i32, bytes: MB, comm: 0, req };
    vec![vec![irecv(1), irecv(2), Action::Waitall { reqs: vec![1, 2] }], vec![isend(1), isend(2), Action::Waitall { reqs: vec![1, 2] }]]
}

#[test]
fn serial_receives_share_the_receivers_copy_rate() {
    let mut p = hosts(1, None);
    // Each transfer at its own bound: both end after one transfer's time.
    close(run(&p, two_at_once()).unwrap().makespan_s, A + MB as f64 / B);
    // The receiver copies them one after another: B shared, twice the time.
    p.network.serial_receives = true;
    let r = run(&p, two_at_once()).unwrap();
    close(r.makespan_s, A + 2.0 * MB as f64 / B);
    balanced(&r);
    // An exchange has one transfer into each rank: nothing to share.
    close(run(&p, vec![vec![exchange(1)], vec![exchange(0)]]).unwrap().makespan_s, A + MB as f64 / B);
    // Transfers below the size from which receives take turns move in parallel.
    p.network.serial_receives_min_bytes = MB + 1;
    close(run(&p, two_at_once()).unwrap().makespan_s, A + MB as f64 / B);
    p.network.serial_receives_min_bytes = MB;
    close(run(&p, two_at_once()).unwrap().makespan_s, A + 2.0 * MB as f64 / B);
    // With a host copy rate as well, the tighter of the two binds.
    p.network.host_copy_bytes_per_s = Some(C);
    close(run(&p, two_at_once()).unwrap().makespan_s, A + 2.0 * MB as f64 / B);
    close(run(&p, vec![vec![exchange(1)], vec![exchange(0)]]).unwrap().makespan_s, A + MB as f64 / (C / 2.0));
}
