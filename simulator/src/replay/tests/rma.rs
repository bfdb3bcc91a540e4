//! One-sided communication (MPI RMA): worked examples with hand-computed
//! makespans. Transfer = L + bytes / (1 MB/s), so 1000 bytes take 2 L;
//! zero overheads; one rank per host (the network moves the data) unless
//! a test says otherwise; barriers by dissemination (one round of L at 2
//! ranks, two at 3).

use super::*;
use crate::action::RmaCall;
use crate::network::rma::RmaCosts;

/// 1000 bytes take 1 ms on top of L; three one-core hosts.
fn slow() -> Platform {
    let hosts = (0..3).map(|h| Host::new(format!("node{h}"), 1)).collect();
    Platform::new("test", hosts, model(L, 1e6, 0.0, 0.0))
}

fn rma(call: RmaCall) -> Action {
    Action::Rma { win: 7, call }
}
fn create() -> Action {
    rma(RmaCall::Create { comm: 0 })
}
fn put(target: u32, bytes: u64) -> Action {
    rma(RmaCall::Put { target, bytes, req: 0 })
}

#[test]
fn a_fence_ends_when_the_puts_of_the_epoch_arrived_and_all_ranks_entered() {
    // Creation: a barrier, both end at L. Rank 0 puts 4000 B at L: done at
    // L + (L + 4 L) = 6 L, its fence enters the barrier then. Rank 1 puts
    // 1000 B at L (done 3 L), computes to 2 L and waits for its put to 3 L.
    // Barrier: rank 0 gets rank 1's message (sent 3 L) at 4 L < 6 L, ends
    // at 6 L; rank 1 gets rank 0's (sent 6 L) at 7 L.
    let fence = rma(RmaCall::Fence);
    let r0 = vec![create(), put(1, 4000), fence.clone(), Action::Finalize];
    let r1 = vec![create(), put(0, 1000), compute(L), fence, Action::Finalize];
    let r = run(&slow(), vec![r0, r1]).unwrap();
    close(r.ranks[0].end_s, 6.0 * L);
    close(r.ranks[1].end_s, 7.0 * L);
    close(r.makespan_s, 7.0 * L);
    close(r.ranks[0].comm_s, L + 5.0 * L); // the create barrier's round, then waiting for its own put
    assert_eq!((r.ranks[0].messages, r.ranks[0].bytes_sent), (1 + 2, 4000));
    balanced(&r);
}

#[test]
fn exclusive_locks_serialize_and_shared_ones_do_not() {
    // Three ranks: the create barrier ends at 2 L everywhere. Rank 1 locks
    // rank 0 at 2 L, puts 1000 B (done 4 L), unlocks at 4 L. Rank 2 asks
    // at 2.5 L: exclusive, it waits until 4 L, puts to 6 L; shared, it
    // gets the lock at once and its put is done at 4.5 L.
    let epoch = |exclusive: bool, before: f64| {
        vec![
            create(),
            compute(before),
            rma(RmaCall::Lock { target: 0, exclusive }),
            put(0, 1000),
            rma(RmaCall::Unlock { target: 0 }),
            Action::Finalize,
        ]
    };
    let r = run(&slow(), vec![vec![create()], epoch(true, 0.0), epoch(true, 0.5 * L)]).unwrap();
    close(r.ranks[0].end_s, 2.0 * L);
    close(r.ranks[1].end_s, 4.0 * L);
    close(r.ranks[2].end_s, 6.0 * L);
    close(r.ranks[2].wait_s - r.ranks[1].wait_s, 1.5 * L); // the lock; the barrier is alike
    balanced(&r);
    let r = run(&slow(), vec![vec![create()], epoch(false, 0.0), epoch(false, 0.5 * L)]).unwrap();
    close(r.ranks[2].end_s, 4.5 * L);
    close(r.makespan_s, 4.5 * L);
    balanced(&r);
}

#[test]
fn pscw_start_waits_for_the_post_and_wait_for_the_complete() {
    // Create: both end at L. The target computes to 3 L and posts: the
    // notice reaches the origin at 4 L, where its start (blocked since L)
    // ends. Its put of 1000 B is done at 6 L; complete waits for it and
    // notifies the target, whose wait (since 3 L) ends at 7 L.
    let target = vec![create(), compute(2.0 * L), rma(RmaCall::Post { origins: vec![1] }), rma(RmaCall::Wait), Action::Finalize];
    let origin = vec![create(), rma(RmaCall::Start { targets: vec![0] }), put(0, 1000), rma(RmaCall::Complete), Action::Finalize];
    let r = run(&slow(), vec![target, origin]).unwrap();
    close(r.ranks[0].end_s, 7.0 * L);
    close(r.ranks[1].end_s, 6.0 * L);
    close(r.ranks[1].wait_s, 3.0 * L); // the start
    close(r.ranks[0].wait_s, 4.0 * L); // the wait
    balanced(&r);
    // A post that came first: the start does not wait.
    let target = vec![create(), rma(RmaCall::Post { origins: vec![1] }), rma(RmaCall::Wait), Action::Finalize];
    let origin =
        vec![create(), compute(3.0 * L), rma(RmaCall::Start { targets: vec![0] }), put(0, 1000), rma(RmaCall::Complete), Action::Finalize];
    let r = run(&slow(), vec![target, origin]).unwrap();
    close(r.ranks[1].end_s, 6.0 * L);
    close(r.ranks[0].end_s, 7.0 * L);
}

#[test]
fn gets_and_request_based_puts_complete_by_the_model() {
    // A get of 1000 B: the request (L) and the data back (2 L), done at
    // 1 L + 3 L; a flush waits for it. An Rput of 1000 B completes its
    // request at 2 L after it was issued; the wait ends there.
    let r0 = vec![
        create(),
        rma(RmaCall::Get { target: 1, bytes: 1000, req: 0 }),
        rma(RmaCall::Flush { target: Some(1) }),
        rma(RmaCall::Put { target: 1, bytes: 1000, req: 9 }),
        Action::Wait { req: 9 },
        Action::Finalize,
    ];
    let r = run(&slow(), vec![r0, vec![create()]]).unwrap();
    close(r.ranks[0].end_s, 6.0 * L);
    balanced(&r);
}

#[test]
fn within_a_host_the_origin_copies_the_data_itself() {
    // One host: rank 0's put of 1000 B keeps it busy its 2 L, where
    // between hosts it would return at once (its flush then waits).
    let r0 = vec![create(), put(1, 1000), compute(L), rma(RmaCall::Flush { target: None }), Action::Finalize];
    let one_host = platform(model(L, 1e6, 0.0, 0.0));
    let r = run(&one_host, vec![r0.clone(), vec![create()]]).unwrap();
    close(r.ranks[0].end_s, L + 2.0 * L + L);
    close(r.ranks[0].comm_s, L + 2.0 * L);
    let r = run(&slow(), vec![r0, vec![create()]]).unwrap();
    close(r.ranks[0].end_s, L + 2.0 * L);
    balanced(&r);
}

#[test]
fn an_unknown_window_and_an_unmatched_start_are_reported() {
    let e = run(&simple(), vec![vec![put(0, 8)]]).unwrap_err().to_string();
    assert!(e.contains("window 7 of rank 0 was never created"), "{e}");
    let e = run(&simple(), vec![vec![create(), rma(RmaCall::Start { targets: vec![1] })], vec![create()]]).unwrap_err().to_string();
    assert!(e.contains("MPI_Win_start(window 7)"), "{e}");
}

#[test]
fn each_one_sided_call_but_creation_costs_its_call_time() {
    // The fence example with `rma_call_s` = L. Rank 0: its put starts at
    // 2 L (done 7 L), its fence call ends at 3 L, waits for the put, enters
    // the barrier at 7 L. Rank 1: put at 2 L (done 4 L), computes to 3 L,
    // fence call to 4 L, enters at 4 L. Rank 0 leaves at 7 L, rank 1 gets
    // rank 0's message at 8 L.
    let mut p = slow();
    p.smpi.rma_call_s = L;
    let fence = rma(RmaCall::Fence);
    let r0 = vec![create(), put(1, 4000), fence.clone(), Action::Finalize];
    let r1 = vec![create(), put(0, 1000), compute(L), fence, Action::Finalize];
    let r = run(&p, vec![r0, r1]).unwrap();
    close(r.ranks[0].end_s, 7.0 * L);
    close(r.ranks[1].end_s, 8.0 * L);
    balanced(&r);
}

#[test]
fn measured_one_sided_costs_replace_the_point_to_point_ones() {
    // Measured: a put takes 3 L, a get 5 L, an accumulate 7 L whatever
    // the size (a point-to-point transfer of 1000 B would take 2 L).
    // Rank 0 puts, gets and accumulates to rank 1 after the create
    // barrier (L), then flushes: done at L + 3 L + 5 L + 7 L between hosts
    // (issued together, the last completes at L + 7 L = 8 L; its flush
    // waits for it) and at 16 L within a host (it copies each in turn).
    let flat = |s: f64| Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: s, bandwidth_bytes_per_s: f64::INFINITY }] };
    let measured = |mut p: Platform| {
        p.network.intra.rma = Some(RmaCosts { put: flat(3.0 * L), get: flat(5.0 * L), accumulate: flat(7.0 * L) });
        p
    };
    let r0 = vec![
        create(),
        put(1, 1000),
        rma(RmaCall::Get { target: 1, bytes: 1000, req: 0 }),
        rma(RmaCall::Accumulate { target: 1, bytes: 1000, req: 0 }),
        rma(RmaCall::Flush { target: None }),
        Action::Finalize,
    ];
    let r = run(&measured(slow()), vec![r0.clone(), vec![create()]]).unwrap();
    close(r.ranks[0].end_s, 8.0 * L);
    let r = run(&measured(platform(model(L, 1e6, 0.0, 0.0))), vec![r0, vec![create()]]).unwrap();
    close(r.ranks[0].end_s, 16.0 * L);
    balanced(&r);
}

#[test]
fn a_movement_to_the_origin_itself_costs_only_the_call() {
    // Rank 0 locks its own window, accumulates and gets there, unlocks:
    // the create barrier (L) and four calls of `rma_call_s` = L.
    let mut p = slow();
    p.smpi.rma_call_s = L;
    let r0 = vec![
        create(),
        rma(RmaCall::Lock { target: 0, exclusive: true }),
        rma(RmaCall::Accumulate { target: 0, bytes: 1000, req: 0 }),
        rma(RmaCall::Get { target: 0, bytes: 1000, req: 0 }),
        rma(RmaCall::Unlock { target: 0 }),
        Action::Finalize,
    ];
    let r = run(&p, vec![r0, vec![create()]]).unwrap();
    close(r.ranks[0].end_s, 5.0 * L);
    assert_eq!(r.ranks[0].messages, 1, "the create barrier's; a local copy sends none");
}

#[test]
fn measured_call_costs_replace_the_one_call_cost() {
    // `rma_call_s` = L; creation 10 L, lock 2 L, unlock 3 L, free 4 L,
    // post 5 L, complete 6 L. Rank 0 alone on its window (one host, so no
    // barrier round): creation 10 L; lock, a local put (one call, L) and
    // unlock: 2 L + L + 3 L; post, start (L), complete, wait (L): 5 L + L
    // + 6 L + L; free 4 L. Without the measured costs: eight calls of L.
    let mut p = slow();
    p.smpi.rma_call_s = L;
    let calls = vec![
        create(),
        rma(RmaCall::Lock { target: 0, exclusive: false }),
        put(0, 1000),
        rma(RmaCall::Unlock { target: 0 }),
        rma(RmaCall::Post { origins: vec![0] }),
        rma(RmaCall::Start { targets: vec![0] }),
        rma(RmaCall::Complete),
        rma(RmaCall::Wait),
        rma(RmaCall::Free),
        Action::Finalize,
    ];
    let r = run(&p, vec![calls.clone()]).unwrap();
    close(r.ranks[0].end_s, 8.0 * L);
    p.smpi.rma_calls = crate::platform::RmaCalls {
        lock_s: Some(2.0 * L),
        unlock_s: Some(3.0 * L),
        post_s: Some(5.0 * L),
        complete_s: Some(6.0 * L),
        create_s: Some(10.0 * L),
        free_s: Some(4.0 * L),
    };
    let r = run(&p, vec![calls]).unwrap();
    close(r.ranks[0].end_s, 10.0 * L + 6.0 * L + 13.0 * L + 4.0 * L);
    close(r.ranks[0].comm_s, r.ranks[0].end_s);
}
