//! CPU sharing on oversubscribed hosts and the per-call costs of
//! nonblocking point-to-point (worked examples on the parent's model:
//! 1 ms latency, no overheads).

use super::*;
use crate::platform::WaitingRanks;

fn host(cores: u32, waiting: WaitingRanks) -> Platform {
    let mut p = Platform::new("test", vec![Host::new("node0", cores)], model(L, f64::INFINITY, 0.0, 0.0));
    p.waiting_ranks = waiting;
    p
}

#[test]
fn four_ranks_computing_on_two_cores_take_twice_as_long_and_are_reported() {
    for w in [WaitingRanks::Poll, WaitingRanks::Yield] {
        let r = run(&host(2, w), vec![vec![compute(1.0)]; 4]).unwrap();
        close(r.makespan_s, 2.0);
        balanced(&r);
        assert_eq!(r.oversubscribed.len(), 1);
        let o = &r.oversubscribed[0];
        assert_eq!((o.host.as_str(), o.ranks, o.cores, o.waiting_ranks), ("node0", 4, 2, w));
        assert!(o.warning().contains("4 ranks on 2 cores"), "{}", o.warning());
    }
    // A core per rank: no sharing, nothing reported.
    let r = run(&host(4, WaitingRanks::Poll), vec![vec![compute(1.0)]; 4]).unwrap();
    close(r.makespan_s, 1.0);
    assert!(r.oversubscribed.is_empty());
}

#[test]
fn waiting_ranks_that_poll_keep_their_share_of_the_cores() {
    // 4 ranks on 2 cores; rank 0 computes 1 s and sends to the three
    // others, which wait. Yield: rank 0 computes alone (1 s). Poll: the
    // three waiting ranks keep 3/4 of the cores busy, rank 0 gets half a
    // core (2 s).
    let ranks = || {
        let mut v = vec![vec![compute(1.0), send(1, 8), send(2, 8), send(3, 8)]];
        v.extend((1..4).map(|_| vec![recv(0)]));
        v
    };
    let y = run(&host(2, WaitingRanks::Yield), ranks()).unwrap();
    close(y.ranks[0].end_s, 1.0);
    close(y.makespan_s, 1.0 + L);
    let p = run(&host(2, WaitingRanks::Poll), ranks()).unwrap();
    close(p.ranks[0].end_s, 2.0);
    close(p.makespan_s, 2.0 + L);
    balanced(&y);
    balanced(&p);
}

#[test]
fn a_block_speeds_up_when_its_neighbour_stops_computing() {
    // 2 ranks on 1 core: rank 0 computes 2 s, rank 1 computes 1 s then
    // waits for rank 0's message. Both at half speed until rank 1's block
    // ends at 2 s (rank 0 has 1 s left). Yield: rank 0 then alone, ends
    // at 3. Poll: rank 1 keeps polling, rank 0 ends at 4.
    let ranks = || vec![vec![compute(2.0), send(1, 8)], vec![compute(1.0), recv(0)]];
    for (w, end) in [(WaitingRanks::Yield, 3.0), (WaitingRanks::Poll, 4.0)] {
        let r = run(&host(1, w), ranks()).unwrap();
        close(r.ranks[0].end_s, end);
        close(r.ranks[1].end_s, end + L);
        close(r.ranks[1].compute_s, 2.0);
        balanced(&r);
    }
}

#[test]
fn a_finalized_rank_leaves_its_core_to_the_others() {
    // Poll, 2 ranks on 1 core: rank 1 computes 0.5 s and finalizes at
    // 1 s (half speed); rank 0's 2 s block then runs at full speed:
    // 0.5 s done at 1 s, 1.5 s more.
    let r = run(&host(1, WaitingRanks::Poll), vec![vec![compute(2.0)], vec![compute(0.5)]]).unwrap();
    close(r.ranks[1].end_s, 1.0);
    close(r.ranks[0].end_s, 2.5);
}

#[test]
fn irecv_posts_and_waits_cost_their_platform_times() {
    // Each rank: Irecv, Isend 8 B, Waitall of both. Without costs the
    // exchange takes one latency. With irecv_s = 0.1 ms the send is
    // posted 0.1 ms later; the Waitall then costs 2 x wait_s = 0.4 ms.
    let ranks = || {
        (0..2u32)
            .map(|r| {
                let peer = 1 - r;
                vec![
                    Action::Irecv { src: peer as i32, tag: 0, bytes: 8, comm: 0, req: 1 },
                    Action::Isend { dst: peer, tag: 0, bytes: 8, comm: 0, req: 2 },
                    Action::Waitall { reqs: vec![1, 2] },
                ]
            })
            .collect::<Vec<_>>()
    };
    let mut p = simple();
    close(run(&p, ranks()).unwrap().makespan_s, L);
    p.smpi.irecv_s = 1e-4;
    p.smpi.wait_s = 2e-4;
    let r = run(&p, ranks()).unwrap();
    close(r.makespan_s, 1e-4 + L + 4e-4);
    balanced(&r);
    // A wait on requests complete long ago still costs wait_s each.
    let late = vec![Action::Irecv { src: 1, tag: 0, bytes: 8, comm: 0, req: 1 }, compute(1.0), Action::Wait { req: 1 }];
    let r = run(&p, vec![late, vec![send(0, 8)]]).unwrap();
    close(r.ranks[0].end_s, 1e-4 + 1.0 + 2e-4);
    balanced(&r);
}

#[test]
fn each_poll_costs_poll_s() {
    // Rank 0 polls four times for a message that arrives at L: with
    // poll_s = 0.4 L the polls end at 1.6 L and the wait returns at once;
    // with poll_s = 0.1 L the wait ends at L (within the transfer's
    // duration, so communication too).
    let polling = || {
        let mut a = vec![Action::Irecv { src: 1, tag: 0, bytes: 8, comm: 0, req: 1 }];
        a.extend([Action::Poll, Action::Poll, Action::Poll, Action::Poll, Action::Wait { req: 1 }]);
        vec![a, vec![send(0, 8)]]
    };
    let mut p = simple();
    for (poll, end) in [(0.4 * L, 1.6 * L), (0.1 * L, L)] {
        p.smpi.poll_s = poll;
        let r = run(&p, polling()).unwrap();
        close(r.ranks[0].end_s, end);
        close(r.ranks[0].comm_s, end);
        balanced(&r);
    }
}
