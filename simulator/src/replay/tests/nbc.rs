//! Nonblocking collectives, `Cancel` and `Request_free`: worked examples
//! on the parent's platform (transfer = L = 1 ms, eager below 1024 bytes,
//! zero overheads; all-reduce by recursive doubling).

use super::*;
use crate::action::RequestBook;
use crate::trace::{CallRecord, Op, Params};

fn iallreduce(req: u64) -> Action {
    Action::Icoll { req, coll: Box::new(Action::Allreduce { bytes: 8, comm: 0 }) }
}
fn wait(req: u64) -> Action {
    Action::Wait { req }
}

#[test]
fn iallreduce_hides_behind_longer_compute() {
    // One round (0 <-> 1) done at L = 1 ms, while both compute 5 ms.
    let rank = vec![iallreduce(1), compute(5e-3), wait(1), Action::Finalize];
    let r = run(&simple(), vec![rank.clone(), rank]).unwrap();
    close(r.makespan_s, 5e-3);
    balanced(&r);
    // The blocking collective costs its round on top: 1 ms + 5 ms.
    let blocking = vec![Action::Allreduce { bytes: 8, comm: 0 }, compute(5e-3), Action::Finalize];
    close(run(&simple(), vec![blocking.clone(), blocking]).unwrap().makespan_s, 6e-3);
}

#[test]
fn a_wait_before_the_collective_ends_waits_for_it() {
    // Compute 0.5 ms, then wait for the round that ends at 1 ms: 0.5 ms
    // of communication (the collective's own span is 1 ms).
    let rank = vec![iallreduce(1), compute(0.5e-3), wait(1), Action::Finalize];
    let r = run(&simple(), vec![rank.clone(), rank]).unwrap();
    close(r.makespan_s, 1e-3);
    close(r.ranks[0].comm_s, 0.5e-3);
    balanced(&r);
}

#[test]
fn rounds_progress_while_the_rank_computes() {
    // 4 ranks; rank 3 joins at 3 ms. Round 1 (0-1, 2-3): ranks 0, 1 done
    // at 1 ms; rank 2 gets rank 3's message at 4 ms; rank 3 has rank 2's
    // since 1 ms, so done at 3 ms. Round 2 (0-2, 1-3), each posted when
    // its round 1 ends: rank 0 gets rank 2's message (sent at 4 ms) at
    // 5 ms, inside its 6 ms compute. Makespan 6 ms; were the schedule
    // advanced only inside MPI_Wait, rank 0 would post round 2 at 6 ms
    // and end at 7 ms.
    let early = vec![iallreduce(1), compute(6e-3), wait(1), Action::Finalize];
    let late = vec![compute(3e-3), iallreduce(1), wait(1), Action::Finalize];
    let r = run(&simple(), vec![early.clone(), early.clone(), early, late]).unwrap();
    close(r.makespan_s, 6e-3);
    close(r.ranks[3].end_s, 3e-3);
    balanced(&r);
}

#[test]
fn nonblocking_and_blocking_collectives_interleave() {
    // Two outstanding Iallreduces and a Barrier in between, waited in reverse.
    let rank = vec![iallreduce(1), iallreduce(2), Action::Barrier { comm: 0 }, wait(2), wait(1), Action::Finalize];
    let r = run(&simple(), vec![rank.clone(), rank.clone(), rank.clone(), rank]).unwrap();
    // Each all-reduce: 2 rounds of 1 ms from t = 0; the barrier
    // (dissemination, 2 rounds) too: all done at 2 ms.
    close(r.makespan_s, 2e-3);
    balanced(&r);
}

#[test]
fn a_nonblocking_collective_must_wrap_a_collective() {
    let bad = vec![Action::Icoll { req: 1, coll: Box::new(compute(1.0)) }];
    let e = run(&simple(), vec![bad]).unwrap_err();
    assert!(e.to_string().contains("blocking collective"), "{e}");
}

#[test]
fn a_cancelled_receive_leaves_the_message_to_the_next() {
    // Without the cancel, the Irecv would take rank 1's message and the
    // Recv would deadlock.
    let r0 = vec![
        Action::Irecv { src: 1, tag: 9, bytes: 8, comm: 0, req: 3 },
        Action::Cancel { req: 3 },
        wait(3),
        Action::Recv { src: 1, tag: 9, bytes: 8, comm: 0 },
        Action::Finalize,
    ];
    let r1 = vec![compute(2e-3), Action::Send { dst: 0, tag: 9, bytes: 8, comm: 0 }, Action::Finalize];
    let r = run(&simple(), vec![r0, r1]).unwrap();
    close(r.ranks[0].end_s, 3e-3);
    // A receive that already matched is not cancelled.
    let r0 = vec![
        Action::Irecv { src: 1, tag: 9, bytes: 8, comm: 0, req: 3 },
        compute(2e-3),
        Action::Cancel { req: 3 },
        wait(3),
        Action::Finalize,
    ];
    let r1 = vec![Action::Send { dst: 0, tag: 9, bytes: 8, comm: 0 }, Action::Finalize];
    let r = run(&simple(), vec![r0, r1]).unwrap();
    close(r.ranks[0].end_s, 2e-3);
}

#[test]
fn a_freed_request_still_completes() {
    // A rendezvous Isend freed at once: the sender goes on; the receive,
    // posted at 2 ms, ends at 3 ms.
    let r0 = vec![
        Action::Isend { dst: 1, tag: 0, bytes: 4096, comm: 0, req: 4 },
        Action::RequestFree { req: 4 },
        compute(0.5e-3),
        Action::Finalize,
    ];
    let r1 = vec![compute(2e-3), Action::Recv { src: 0, tag: 0, bytes: 4096, comm: 0 }, Action::Finalize];
    let r = run(&simple(), vec![r0, r1]).unwrap();
    close(r.ranks[0].end_s, 0.5e-3);
    close(r.makespan_s, 3e-3);
}

/// Records of one rank turned into actions by [`RequestBook`], with a
/// compute block wherever the list says so.
fn from_records(recs: Vec<Result<(Op, Params), f64>>) -> Vec<Action> {
    let mut book = RequestBook::default();
    let mut out = std::collections::VecDeque::new();
    for r in recs {
        match r {
            Ok((op, params)) => {
                let rec = CallRecord::bare(op, params);
                book.push_actions(&rec, &mut out).unwrap();
            }
            Err(seconds) => out.push_back(compute(seconds)),
        }
    }
    out.into()
}

#[test]
fn persistent_requests_are_reused_and_mrecv_takes_the_probed_message() {
    use Op::*;
    let p2p = |peer, tag, bytes, request| Params::P2p { peer, tag, bytes, comm: 0, request };
    let req = |request| Params::Request { request };
    // Rank 0: a persistent 8-byte send started twice, 2 ms apart, then a
    // 2048-byte (rendezvous) send the receiver takes by Mprobe + Mrecv.
    let r0 = from_records(vec![
        Ok((SendInit, p2p(1, 0, 8, 5))),
        Ok((Start, req(5))),
        Ok((Wait, Params::Wait { request: 5, source: -1 })),
        Err(2e-3),
        Ok((Startall, Params::Waitall { requests: vec![5] })),
        Ok((Waitsome, Params::RequestSome { requests: vec![0, 5], completed: vec![1] })),
        Ok((RequestFree, req(5))),
        Ok((Send, p2p(1, 3, 2048, 0))),
        Ok((Finalize, Params::None)),
    ]);
    assert!(matches!(r0[..2], [Action::Isend { dst: 1, bytes: 8, req: 5, .. }, Action::Wait { req: 5 }]), "{r0:?}");
    assert!(matches!(&r0[4], Action::Waitall { reqs } if reqs == &[5]), "{r0:?}");
    let r1 = from_records(vec![
        Ok((RecvInit, p2p(0, 0, 8, 7))),
        Ok((Start, req(7))),
        Ok((Wait, Params::Wait { request: 7, source: 0 })),
        Ok((Start, req(7))),
        Ok((Wait, Params::Wait { request: 7, source: 0 })),
        Ok((Mprobe, p2p(0, 3, 2048, 0x99))),
        Ok((Mrecv, Params::Mrecv { message: 0x99, bytes: 2048, request: 0 })),
        Ok((Finalize, Params::None)),
    ]);
    // Rank 1's second receive ends when the second send (at 2 ms) arrives,
    // 3 ms; the rendezvous send, posted by rank 0 at 2 ms, matched at 3
    // ms, ends at 4 ms on both sides.
    let r = run(&simple(), vec![r0, r1]).unwrap();
    close(r.makespan_s, 4e-3);
    close(r.ranks[0].end_s, 4e-3);
    balanced(&r);
}
