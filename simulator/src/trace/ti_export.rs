//! Export of an interposer trace as a SimGrid time-independent (TI) trace:
//! a trace-list file naming one action file per rank, in the grammar that
//! `smpirun -trace-ti` writes and `smpirun -replay` reads (SimGrid 3.32).
//!
//! Sizes are written in bytes (`init` without a datatype field makes
//! `MPI_BYTE` the default). A compute block of `t` seconds becomes
//! `compute <t × host_speed>` flops. Requests are written by SMPI's key
//! (source, destination, tag); an `MPI_Waitall` becomes one `wait` per
//! listed request, which keeps its exact set. Calls without a TI verb
//! (probes, communicator management, rank and size queries, MPI-IO) are
//! left out. Persistent requests become an `isend`/`irecv` at each
//! `MPI_Start`; `MPI_Mrecv` a `recv` from the source its probe matched;
//! `MPI_Waitsome`/`Testsome` a `wait` per completed request.
//! v-collectives are written with their count vectors (`gatherv`,
//! `scatterv`, `allgatherv`, `alltoallv`, `reducescatter`; a vector MPI
//! leaves undefined on this rank, as the receive counts of a non-root's
//! gatherv, as zeros); `MPI_Alltoallw` as an `alltoallv` of its bytes.
//! v-collectives of traces written before their counts were recorded are
//! written as their regular form with this rank's size.
//!
//! One-sided communication (MPI RMA) and MPI-IO are left out too, counted
//! per MPI call in [`TiExport::dropped`]: SimGrid's TI replay registers
//! no RMA or I/O verb (`smpi_replay.cpp` of SimGrid 3.32 knows the
//! point-to-point, collective, `compute`, `sleep` and `location` actions
//! only).
//!
//! # Errors
//! A collective on a communicator other than `MPI_COMM_WORLD` is an error:
//! TI traces carry no communicator, and SMPI would replay it on all ranks.
//! So are nonblocking collectives (SMPI 3.32 aborts on them),
//! neighbourhood collectives and `MPI_Cancel` (TI has no verb for them).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::record::{CallRecord, Op, Params, COMM_WORLD, PROC_NULL};
use super::{RankTrace, TraceError};

/// Name of the trace-list file written into the output directory.
pub const TI_LIST: &str = "ti_traces.txt";

/// Error exporting a TI trace; the message names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TiExportError {
    /// Reading the interposer trace failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// Writing an output file failed.
    #[error("{path}: {source}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The trace holds something TI cannot express.
    #[error("{path}: record {index}: {what}")]
    Unsupported {
        /// The rank file.
        path: PathBuf,
        /// 0-based record index.
        index: u64,
        /// What cannot be expressed.
        what: String,
    },
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiExport {
    /// The trace-list file.
    pub list: PathBuf,
    /// Action lines written, over all ranks.
    pub lines: u64,
    /// Records left out (no TI verb).
    pub skipped: u64,
    /// One-sided (MPI RMA) and MPI-IO records among them, per MPI function
    /// name, over all ranks: TI traces have no verbs for them, so their
    /// cost is lost.
    pub dropped: BTreeMap<&'static str, u64>,
}

impl TiExport {
    /// The one-line warning about the dropped calls, `None` when there
    /// were none, e.g. `left out 12 one-sided (MPI RMA) and MPI-IO calls,
    /// which TI traces cannot express: MPI_Put 8, MPI_Win_fence 4`.
    pub fn dropped_warning(&self) -> Option<String> {
        let total: u64 = self.dropped.values().sum();
        let each: Vec<String> = self.dropped.iter().map(|(name, n)| format!("{name} {n}")).collect();
        let what = "one-sided (MPI RMA) and MPI-IO calls, which TI traces cannot express";
        (total > 0).then(|| format!("left out {total} {what}: {}", each.join(", ")))
    }
}

/// Writes `ranks` as a TI trace into `out` (created if missing):
/// `ti_traces.txt` and `rank-<r>.ti`. `host_speed_flops` converts compute
/// seconds to flops (flop/s of the host the replay platform declares).
///
/// # Errors
/// [`TiExportError`] naming the rank file or output file at fault.
pub fn export_ti(ranks: &[RankTrace], out: &Path, host_speed_flops: f64) -> Result<TiExport, TiExportError> {
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TiExportError::Write { path: path.clone(), source }
    };
    std::fs::create_dir_all(out).map_err(werr(out))?;
    let list = out.join(TI_LIST);
    let mut names = String::new();
    let (mut lines, mut skipped, mut dropped) = (0, 0, BTreeMap::new());
    for t in ranks {
        let path = out.join(format!("rank-{}.ti", t.header.rank));
        let mut w = BufWriter::new(File::create(&path).map_err(werr(&path))?);
        let mut state = RankState { me: t.header.rank as i32, ranks: t.header.ranks as usize, ..RankState::default() };
        for (index, rec) in t.records()?.enumerate() {
            let rec = rec?;
            let mut text = String::new();
            if rec.compute_cpu_ns > 0 && !matches!(rec.op, Op::Init | Op::InitThread) {
                text += &format!("{} compute {}\n", t.header.rank, (rec.compute_cpu_ns as f64 * 1e-9 * host_speed_flops).round());
            }
            let unsupported = |what: String| TiExportError::Unsupported { path: t.path.clone(), index: index as u64, what };
            let verbs = state.verbs(&rec).map_err(unsupported)?;
            if verbs.is_empty() {
                skipped += 1;
            }
            if matches!(rec.params, Params::Rma { .. } | Params::Io { .. } | Params::IoInfo { .. }) {
                *dropped.entry(rec.op.mpi_name()).or_insert(0) += 1;
            }
            for v in verbs {
                text += &format!("{} {v}\n", t.header.rank);
            }
            lines += text.lines().count() as u64;
            w.write_all(text.as_bytes()).map_err(werr(&path))?;
        }
        w.flush().map_err(werr(&path))?;
        names += &format!("{}\n", path.display());
    }
    std::fs::write(&list, names).map_err(werr(&list))?;
    Ok(TiExport { list, lines, skipped, dropped })
}

/// Per-rank export state: pending requests by handle, as SMPI's keys.
#[derive(Default)]
struct RankState {
    me: i32,
    /// Size of `MPI_COMM_WORLD`: the length of TI's count vectors.
    ranks: usize,
    requests: HashMap<u64, (i32, i32, i32)>,
    /// Persistent request → its init record, as the `Isend`/`Irecv` a start posts.
    persistent: HashMap<u64, CallRecord>,
    /// Message handle of a matched probe → (source, tag).
    messages: HashMap<u64, (i32, i32)>,
}

impl RankState {
    /// The TI verbs (without the rank prefix) of one record.
    fn verbs(&mut self, rec: &CallRecord) -> Result<Vec<String>, String> {
        use Op::*;
        let me = self.me;
        let v = |s: String| Ok(vec![s]);
        match (rec.op, &rec.params) {
            (Init | InitThread, _) => v("init".into()),
            (Finalize, _) => v("finalize".into()),
            (_, &Params::P2p { peer, .. }) if peer == PROC_NULL => Ok(vec![]),
            (Send | Ssend | Bsend | Rsend, &Params::P2p { peer, tag, bytes, .. }) => v(format!("send {peer} {tag} {bytes}")),
            (Recv, &Params::P2p { peer, tag, bytes, .. }) => v(format!("recv {peer} {tag} {bytes}")),
            (Isend | Issend | Ibsend | Irsend, &Params::P2p { peer, tag, bytes, request, .. }) => {
                self.requests.insert(request, (me, peer, tag));
                v(format!("isend {peer} {tag} {bytes}"))
            }
            (Irecv, &Params::P2p { peer, tag, bytes, request, .. }) => {
                self.requests.insert(request, (peer, me, tag));
                v(format!("irecv {peer} {tag} {bytes}"))
            }
            (SendInit | SsendInit | BsendInit | RsendInit | RecvInit, &Params::P2p { request, .. }) => {
                let op = if rec.op == RecvInit { Irecv } else { Isend };
                self.persistent.insert(request, CallRecord { op, ..rec.clone() });
                Ok(vec![])
            }
            (Start, &Params::Request { request }) => self.start(&[request]),
            (Startall, Params::Waitall { requests }) => self.start(requests),
            (RequestFree, &Params::Request { request }) => {
                self.persistent.remove(&request);
                Ok(vec![])
            }
            (Mprobe | Improbe, &Params::P2p { peer, tag, request, .. }) if request != 0 => {
                self.messages.insert(request, (peer, tag));
                Ok(vec![])
            }
            (Mrecv | Imrecv, &Params::Mrecv { message, bytes, request }) => match self.messages.remove(&message) {
                Some((peer, tag)) if rec.op == Mrecv => v(format!("recv {peer} {tag} {bytes}")),
                Some((peer, tag)) => {
                    self.requests.insert(request, (peer, me, tag));
                    v(format!("irecv {peer} {tag} {bytes}"))
                }
                None => Ok(vec![]),
            },
            (Waitsome | Testsome, Params::RequestSome { requests, completed }) => {
                let done: Vec<u64> = completed.iter().filter_map(|&i| requests.get(i as usize).copied()).collect();
                Ok(self.wait(&done))
            }
            (Cancel, _) => Err("MPI_Cancel: TI traces have no cancel (the receive would stay posted)".into()),
            (op, Params::Icoll { .. }) => {
                Err(format!("{}: TI traces have no nonblocking collectives (SMPI aborts on them)", op.mpi_name()))
            }
            (Wait, &Params::Wait { request, .. }) => Ok(self.wait(&[request])),
            (Test, &Params::Test { request, completed: true }) => Ok(self.wait(&[request])),
            (Waitall, Params::Waitall { requests }) => Ok(self.wait(requests)),
            (Testall, Params::RequestSet { requests, result: 1 }) => Ok(self.wait(requests)),
            (Waitany | Testany, Params::RequestSet { requests, result }) if *result >= 0 => {
                Ok(requests.get(*result as usize).map(|&r| self.wait(&[r])).unwrap_or_default())
            }
            (Sendrecv | SendrecvReplace, &Params::Sendrecv { dst, send_bytes, src, recv_bytes, .. }) => {
                v(format!("sendRecv {send_bytes} {dst} {recv_bytes} {src}"))
            }
            (op, Params::Vcoll { request, .. }) if *request != 0 => {
                Err(format!("{}: TI traces have no nonblocking collectives (SMPI aborts on them)", op.mpi_name()))
            }
            (op, &Params::Vcoll { comm, .. }) if comm != COMM_WORLD => Err(format!(
                "{} on communicator {comm}: TI traces have no communicators (SMPI would replay it on all ranks)",
                op.mpi_name()
            )),
            (op, Params::Vcoll { root, send, recv, .. }) => {
                let root = root.max(&0);
                let list = |v: &[u64]| -> String {
                    (0..self.ranks).map(|i| v.get(i).copied().unwrap_or(0).to_string()).collect::<Vec<_>>().join(" ")
                };
                let one = |v: &[u64]| v.first().copied().unwrap_or(0);
                let sum = |v: &[u64]| v.iter().sum::<u64>();
                v(match op {
                    Gatherv => format!("gatherv {} {} {root}", one(send), list(recv)),
                    Scatterv => format!("scatterv {} {} {root}", list(send), one(recv)),
                    Allgatherv => format!("allgatherv {} {}", one(send), list(recv)),
                    Alltoallv | Alltoallw => format!("alltoallv {} {} {} {}", sum(send), list(send), sum(recv), list(recv)),
                    ReduceScatter => format!("reducescatter {} 0", list(recv)),
                    _ => return Err(format!("{}: no TI verb", op.mpi_name())),
                })
            }
            (op, Params::Neighbor { .. }) => Err(format!("{}: TI traces have no neighbourhood collectives", op.mpi_name())),
            (_, &Params::Coll { comm, .. }) if comm != COMM_WORLD && rec.op != CommFree => Err(format!(
                "{} on communicator {comm}: TI traces have no communicators (SMPI would replay it on all ranks)",
                rec.op.mpi_name()
            )),
            (op, &Params::Coll { root, bytes, .. }) => {
                let root = root.max(0);
                Ok(match op {
                    Barrier => vec!["barrier".into()],
                    Bcast => vec![format!("bcast {bytes} {root}")],
                    Reduce => vec![format!("reduce {bytes} 0 {root}")],
                    Allreduce => vec![format!("allreduce {bytes} 0")],
                    Gather | GathervTotal => vec![format!("gather {bytes} {bytes} {root}")],
                    Scatter | ScattervTotal => vec![format!("scatter {bytes} {bytes} {root}")],
                    Allgather | AllgathervTotal => vec![format!("allgather {bytes} {bytes}")],
                    Alltoall | AlltoallvTotal => vec![format!("alltoall {bytes} {bytes}")],
                    Scan => vec![format!("scan {bytes} 0")],
                    Exscan => vec![format!("exscan {bytes} 0")],
                    _ => vec![],
                })
            }
            _ => Ok(vec![]),
        }
    }

    /// The `isend`/`irecv` verbs of starting persistent `requests`.
    fn start(&mut self, requests: &[u64]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for r in requests {
            if let Some(init) = self.persistent.get(r).cloned() {
                out.extend(self.verbs(&init)?);
            }
        }
        Ok(out)
    }

    /// One `wait <src> <dst> <tag>` per known request; unknown or null
    /// handles (already complete) are left out.
    fn wait(&mut self, requests: &[u64]) -> Vec<String> {
        requests.iter().filter_map(|r| self.requests.remove(r)).map(|(src, dst, tag)| format!("wait {src} {dst} {tag}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Module, RankHeader, RankWriter, TimingSource};

    fn rec(op: Op, params: Params) -> CallRecord {
        CallRecord {
            op,
            failed: false,
            caller: 1,
            compute_cpu_ns: 2_000,
            compute_wall_ns: 2_000,
            counters: None,
            t_start_ns: 0,
            t_end_ns: 0,
            params,
        }
    }

    #[test]
    fn writes_smpi_verbs_with_request_keys() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rank-0.trace");
        let header = RankHeader {
            rank: 0,
            ranks: 2,
            host: "h".into(),
            pid: 1,
            timing_source: TimingSource::ClockGettime,
            tsc_hz: None,
            epoch_unix_s: 0.0,
        };
        let mut w = RankWriter::create(File::create(&p).unwrap(), &header).unwrap();
        let p2p = |peer, request| Params::P2p { peer, tag: 5, bytes: 64, comm: 0, request };
        let rma = |target, bytes| Params::Rma { win: 1, comm: 0, target, disp: 0, bytes, op: 0, assert: 0, request: 0, group: vec![] };
        for r in [
            rec(Op::Init, Params::None),
            rec(Op::Isend, p2p(1, 11)),
            rec(Op::Irecv, p2p(1, 12)),
            rec(Op::Waitall, Params::Waitall { requests: vec![12, 11, 0] }),
            rec(Op::Allreduce, Params::Coll { root: -1, bytes: 8, comm: 0 }),
            rec(Op::WinCreate, rma(-1, 64)),
            rec(Op::Put, rma(1, 8)),
            rec(Op::Put, rma(1, 8)),
            rec(Op::WinFence, rma(-1, 0)),
            rec(Op::CommRank, Params::None),
            rec(Op::Finalize, Params::None),
        ] {
            w.push(&r).unwrap();
        }
        w.finish(&[Module { path: "/a".into(), start: 0, end: 10, file_offset: 0 }]).unwrap();
        let t = RankTrace::open(&p).unwrap();
        let out = dir.path().join("ti");
        let e = export_ti(&[t], &out, 1e9).unwrap();
        let text = std::fs::read_to_string(out.join("rank-0.ti")).unwrap();
        let expect = "0 init\n0 compute 2000\n0 isend 1 5 64\n0 compute 2000\n0 irecv 1 5 64\n0 compute 2000\n\
                      0 wait 1 0 5\n0 wait 0 1 5\n0 compute 2000\n0 allreduce 8 0\n0 compute 2000\n0 compute 2000\n0 compute 2000\n\
                      0 compute 2000\n0 compute 2000\n0 compute 2000\n0 finalize\n";
        assert_eq!(text, expect);
        assert_eq!(e.skipped, 5);
        let want =
            "left out 4 one-sided (MPI RMA) and MPI-IO calls, which TI traces cannot express: MPI_Put 2, MPI_Win_create 1, MPI_Win_fence 1";
        assert_eq!(e.dropped_warning().as_deref(), Some(want));
        assert!(std::fs::read_to_string(&e.list).unwrap().contains("rank-0.ti"));
    }

    #[test]
    fn persistent_requests_and_matched_receives_become_smpi_verbs() {
        let mut st = RankState { me: 0, ..RankState::default() };
        let p2p = |peer, tag, request| Params::P2p { peer, tag, bytes: 64, comm: 0, request };
        let mut verbs = |op, params| st.verbs(&rec(op, params));
        assert!(verbs(Op::SendInit, p2p(1, 5, 11)).unwrap().is_empty());
        assert!(verbs(Op::RecvInit, p2p(1, 6, 12)).unwrap().is_empty());
        let started = verbs(Op::Startall, Params::Waitall { requests: vec![11, 12] }).unwrap();
        assert_eq!(started, ["isend 1 5 64", "irecv 1 6 64"]);
        let waited = verbs(Op::Waitsome, Params::RequestSome { requests: vec![11, 12], completed: vec![1] }).unwrap();
        assert_eq!(waited, ["wait 1 0 6"]);
        assert_eq!(verbs(Op::Start, Params::Request { request: 12 }).unwrap(), ["irecv 1 6 64"]);
        assert!(verbs(Op::Mprobe, p2p(1, 7, 0x99)).unwrap().is_empty());
        let got = verbs(Op::Mrecv, Params::Mrecv { message: 0x99, bytes: 64, request: 0 }).unwrap();
        assert_eq!(got, ["recv 1 7 64"]);
        let icoll = Params::Icoll { root: -1, bytes: 8, comm: 0, request: 3 };
        assert!(verbs(Op::Iallreduce, icoll).unwrap_err().contains("MPI_Iallreduce"));
    }

    #[test]
    fn v_collectives_carry_their_count_vectors() {
        let mut st = RankState { me: 1, ranks: 3, ..RankState::default() };
        let vc = |root, send: &[u64], recv: &[u64]| Params::Vcoll { root, comm: 0, request: 0, send: send.to_vec(), recv: recv.to_vec() };
        let mut verbs = |op, params| st.verbs(&rec(op, params));
        assert_eq!(verbs(Op::Gatherv, vc(0, &[8], &[])).unwrap(), ["gatherv 8 0 0 0 0"]);
        assert_eq!(verbs(Op::Gatherv, vc(1, &[8], &[4, 8, 16])).unwrap(), ["gatherv 8 4 8 16 1"]);
        assert_eq!(verbs(Op::Scatterv, vc(2, &[], &[24])).unwrap(), ["scatterv 0 0 0 24 2"]);
        assert_eq!(verbs(Op::Allgatherv, vc(-1, &[8], &[4, 8, 16])).unwrap(), ["allgatherv 8 4 8 16"]);
        assert_eq!(verbs(Op::Alltoallw, vc(-1, &[1, 2, 3], &[4, 5, 6])).unwrap(), ["alltoallv 6 1 2 3 15 4 5 6"]);
        assert_eq!(verbs(Op::ReduceScatter, vc(-1, &[], &[8, 8, 16])).unwrap(), ["reducescatter 8 8 16 0"]);
        let on = Params::Vcoll { root: -1, comm: 2, request: 0, send: vec![], recv: vec![8, 8] };
        assert!(verbs(Op::ReduceScatter, on).unwrap_err().contains("communicator 2"));
        let nb = Params::Neighbor { comm: 2, request: 0, dsts: vec![0], send: vec![8], srcs: vec![], recv: vec![] };
        assert!(verbs(Op::NeighborAlltoall, nb).unwrap_err().contains("MPI_Neighbor_alltoall"));
    }
}
