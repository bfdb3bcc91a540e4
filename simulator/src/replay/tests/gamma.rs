//! The reduction cost ([`ReduceCost`], the γ term of Thakur, Rabenseifner
//! & Gropp, IJHPCA 2005) charged by the engine: worked examples on the
//! module's one-host platform (transfer = L for any size).

use super::*;
use crate::collectives::ReduceCost;

fn with(coll: &str, alg: &str, reduce: ReduceCost) -> Platform {
    let mut p = simple();
    p.collectives.algs.set(coll, alg).unwrap();
    p.collectives.reduce = reduce;
    p
}

fn with_reduce(reduce: ReduceCost) -> Platform {
    let mut p = simple();
    p.collectives.reduce = reduce;
    p
}

fn replay_all(x: &Platform, ranks: Vec<Vec<Action>>) -> ReplayReport {
    let streams: Vec<ActionStream<'static, Infallible>> =
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    replay(x, streams).unwrap()
}

const GAMMA: ReduceCost = ReduceCost { intercept_s: 2e-7, s_per_byte: 1.5e-10, min_bytes: 0 };

#[test]
fn rdb_allreduce_on_2_ranks_costs_one_reduction_step_more() {
    let bytes = 8192;
    let ranks = || (0..2).map(|_| vec![Action::Allreduce { bytes, comm: 0 }]).collect();
    let free = replay_all(&with("allreduce", "rdb", ReduceCost::default()), ranks());
    let paid = replay_all(&with("allreduce", "rdb", GAMMA), ranks());
    let step = GAMMA.intercept_s + bytes as f64 * GAMMA.s_per_byte;
    close(paid.makespan_s - free.makespan_s, step);
    for (p, f) in paid.ranks.iter().zip(&free.ranks) {
        close(p.compute_s - f.compute_s, step);
        close(p.comm_s, f.comm_s);
    }
    balanced(&paid);
}

#[test]
fn ring_allreduce_on_4_ranks_charges_its_reduce_scatter_steps_only() {
    // 4 blocks of 1024 B: n − 1 = 3 reduction steps of one block each
    // (the all-gather half combines nothing).
    let bytes = 4096;
    let gamma = ReduceCost { intercept_s: 0.0, s_per_byte: 1e-9, min_bytes: 0 };
    let ranks = || (0..4).map(|_| vec![Action::Allreduce { bytes, comm: 0 }]).collect();
    let free = replay_all(&with("allreduce", "ring", ReduceCost::default()), ranks());
    let paid = replay_all(&with("allreduce", "ring", gamma), ranks());
    close(paid.makespan_s - free.makespan_s, 3.0 * 1024.0 * 1e-9);
    for r in &paid.ranks {
        close(r.compute_s, 3.0 * 1024.0 * 1e-9);
    }
    balanced(&paid);
}

#[test]
fn collectives_without_reductions_cost_the_same() {
    let x = with_reduce(GAMMA);
    for action in [Action::Bcast { root: 0, bytes: 8192, comm: 0 }, Action::Allgather { bytes: 64, comm: 0 }, Action::Barrier { comm: 0 }] {
        let ranks = || (0..4).map(|_| vec![action.clone()]).collect::<Vec<_>>();
        let free = replay_all(&simple(), ranks());
        let paid = replay_all(&x, ranks());
        close(paid.makespan_s, free.makespan_s);
        assert!(paid.ranks.iter().all(|r| r.compute_s == 0.0), "{action:?}");
    }
}

#[test]
fn a_nonblocking_allreduce_completes_a_reduction_step_later() {
    let bytes = 8192;
    let ranks = || {
        (0..2)
            .map(|_| vec![Action::Icoll { req: 1, coll: Box::new(Action::Allreduce { bytes, comm: 0 }) }, Action::Wait { req: 1 }])
            .collect()
    };
    let free = replay_all(&with("allreduce", "rdb", ReduceCost::default()), ranks());
    let paid = replay_all(&with("allreduce", "rdb", GAMMA), ranks());
    close(paid.makespan_s - free.makespan_s, GAMMA.intercept_s + bytes as f64 * GAMMA.s_per_byte);
    // The progress engine reduces: the rank computes nothing.
    assert!(paid.ranks.iter().all(|r| r.compute_s == 0.0));
}
