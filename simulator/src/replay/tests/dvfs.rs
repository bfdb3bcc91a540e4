//! Pstates changing during the replay: the wait policy, per-region
//! pstates, the switch cost, and the energy they give, by hand.

use super::*;
use crate::dvfs::{Dvfs, RegionPstates};
use crate::energy::{PowerRange, Pstate};

/// Two one-core hosts with pstates of 1, 0.8 and 0.6 Gflop/s drawing
/// 100:120:200, 90:105:160 and 80:90:120 W; one rank each; L = 1 ms.
fn hosts(switch_s: f64) -> Platform {
    let mut p = simple();
    let ps = |speed_flops: f64, w: &str| Pstate { speed_flops, watts: Some(PowerRange::parse(w).unwrap()) };
    let pstates = vec![ps(1e9, "100:120:200"), ps(0.8e9, "90:105:160"), ps(0.6e9, "80:90:120")];
    p.hosts = ["n0", "n1"].iter().map(|n| Host { pstates: pstates.clone(), pstate_switch_s: switch_s, ..Host::new(*n, 1) }).collect();
    p
}

fn wait_at(p: &Platform, k: usize) -> Platform {
    let mut p = p.clone();
    p.dvfs = Dvfs { wait_pstate: Some(k), ..Dvfs::default() };
    p
}

/// Rank 0 computes 1e9 flops then sends 8 bytes; rank 1 receives, then
/// computes `after` flops.
fn ping(after: f64) -> Vec<Vec<Action>> {
    vec![vec![Action::Flops { flops: 1e9 }, send(1, 8), Action::Finalize], vec![recv(0), Action::Flops { flops: after }, Action::Finalize]]
}

#[test]
fn waiting_at_a_lower_pstate_saves_its_idle_power_and_no_time() {
    let p = hosts(0.0);
    let still = run(&p, ping(0.0)).unwrap();
    let low = run(&wait_at(&p, 2), ping(0.0)).unwrap();
    // Rank 1 waits from 0 until the message arrives at 1 s + L, the makespan.
    let m = 1.0 + L;
    assert_eq!(still.makespan_s, low.makespan_s);
    close(still.makespan_s, m);
    // n0: busy at 200 W for 1 s, then idle at 100 W; n1 idle all along.
    close(still.hosts[0].energy_j.unwrap(), 200.0 + 100.0 * L);
    close(still.hosts[1].energy_j.unwrap(), 100.0 * m);
    close(low.hosts[0].energy_j.unwrap(), still.hosts[0].energy_j.unwrap());
    // The saving is (Idle0 − Idle2) × the waiting time on n1.
    close(still.energy_j.unwrap() - low.energy_j.unwrap(), (100.0 - 80.0) * m);
}

#[test]
fn a_switch_costs_its_time_at_the_slower_speed_and_the_larger_power() {
    let s = 0.1;
    let free = run(&wait_at(&hosts(0.0), 2), ping(1e9)).unwrap();
    let paid = run(&wait_at(&hosts(s), 2), ping(1e9)).unwrap();
    // Rank 1 resumes at t1 = 1 s + L and computes 1 s of work: the first
    // 0.1 s at 0.6 Gflop/s do 0.06 s of it, the other 0.94 s take 0.94 s.
    let t1 = 1.0 + L;
    close(free.makespan_s, t1 + 1.0);
    close(paid.makespan_s, t1 + s + 0.94);
    close(paid.makespan_s - free.makespan_s, s * (1.0 - 0.6));
    // n1: switching down 0–0.1 (idle, the larger Idle: 100 W), idle at
    // pstate 2 until t1 (80 W), switching up busy (the larger AllCores:
    // 200 W) for 0.1 s, then busy at pstate 0 (200 W) for 0.94 s.
    close(paid.hosts[1].energy_j.unwrap(), 100.0 * s + 80.0 * (t1 - s) + 200.0 * (s + 0.94));
    // n0: busy 1 s, then idle at 100 W (its rank never waits).
    close(paid.hosts[0].energy_j.unwrap(), 200.0 + 100.0 * (paid.makespan_s - 1.0));
}

#[test]
fn a_region_at_a_slower_pstate_takes_the_speed_ratio_longer() {
    let key = "app.c:10:app.c:20";
    let region = crate::trace::region_key_id(key);
    let mut p = hosts(0.0);
    p.hosts.truncate(1);
    let ranks = || vec![vec![Action::Compute { seconds: 1.5, region }, compute(1.0), Action::Finalize]];
    let base = run(&p, ranks()).unwrap();
    p.dvfs.regions = RegionPstates::parse(&format!("region,pstate\n\"{key}\",2\n"), std::path::Path::new("r.csv")).unwrap();
    let slow = run(&p, ranks()).unwrap();
    close(base.makespan_s, 2.5);
    close(slow.makespan_s, 1.5 / 0.6 + 1.0);
    // Busy at pstate 2 (120 W) for 2.5 s, then at pstate 0 (200 W) for 1 s.
    close(slow.energy_j.unwrap(), 120.0 * 2.5 + 200.0);
}

#[test]
fn a_blocking_collective_is_one_wait_from_entry_to_exit() {
    // Rank 0 computes 1 s, then both enter a barrier; rank 1 waits in it
    // from 0 to its exit: its host is at pstate 2 all that time.
    let p = hosts(0.0);
    let ranks = || {
        let barrier = Action::Barrier { comm: 0 };
        vec![vec![Action::Flops { flops: 1e9 }, barrier.clone(), Action::Finalize], vec![barrier, Action::Finalize]]
    };
    let still = run(&p, ranks()).unwrap();
    let low = run(&wait_at(&p, 2), ranks()).unwrap();
    assert_eq!(still.makespan_s, low.makespan_s);
    let exit1 = low.ranks[1].end_s;
    // Rank 0's part of the barrier is also a wait, from 1 s to its exit.
    let exit0 = low.ranks[0].end_s;
    let saved = (100.0 - 80.0) * exit1 + (100.0 - 80.0) * (exit0 - 1.0);
    close(still.energy_j.unwrap() - low.energy_j.unwrap(), saved);
}

#[test]
fn energy_integrated_in_slices_equals_energy_integrated_at_the_end() {
    // Two ranks per 2-core host in a ring of compute, sends and receives:
    // the meter integrates each host every 64 events, or once at the end.
    let mut p = wait_at(&hosts(1e-4), 2);
    p.hosts.iter_mut().for_each(|h| h.cores = 2);
    let ranks = || -> Vec<Vec<Action>> {
        (0..4u32)
            .map(|r| {
                let mut v = Vec::new();
                for i in 0..500 {
                    v.push(Action::Flops { flops: 1e6 * (1 + (r + i) % 3) as f64 });
                    v.push(send((r + 1) % 4, 8));
                    v.push(recv(((r + 3) % 4) as i32));
                }
                v.push(Action::Finalize);
                v
            })
            .collect()
    };
    let whole = run(&p, ranks()).unwrap();
    crate::energy::meter::TEST_FLUSH_EVENTS.with(|c| c.set(64));
    let sliced = run(&p, ranks()).unwrap();
    crate::energy::meter::TEST_FLUSH_EVENTS.with(|c| c.set(crate::energy::meter::FLUSH_EVENTS));
    assert_eq!(whole.makespan_s, sliced.makespan_s);
    for h in 0..2 {
        let (a, b) = (whole.hosts[h].energy_j.unwrap(), sliced.hosts[h].energy_j.unwrap());
        assert!((a - b).abs() <= 1e-9 * a, "host {h}: {a} J whole, {b} J sliced");
    }
    // The waits at pstate 2 show against the static run.
    let mut still = hosts(1e-4);
    still.hosts.iter_mut().for_each(|h| h.cores = 2);
    let still = run(&still, ranks()).unwrap();
    assert!(still.energy_j.unwrap() > whole.energy_j.unwrap(), "{:?} {:?}", still.energy_j, whole.energy_j);
}

#[test]
fn polling_waits_keep_a_core_busy_and_idle_waits_do_not() {
    let mut p = hosts(0.0);
    p.dvfs.waiting_busy = true;
    let r = run(&p, ping(0.0)).unwrap();
    // n1's rank polls from 0 to 1 s + L: one of one core busy at pstate 0 (200 W).
    close(r.hosts[1].energy_j.unwrap(), 200.0 * (1.0 + L));
    // Polling at pstate 2 (wait=2): 120 W.
    p.dvfs.wait_pstate = Some(2);
    let r = run(&p, ping(0.0)).unwrap();
    close(r.hosts[1].energy_j.unwrap(), 120.0 * (1.0 + L));
}
