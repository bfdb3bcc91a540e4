//! Hand-computed sharing cases and the network against a plain event loop.
use super::*;

fn net() -> Net {
    let m = FlowSharing {
        link_bw_bytes_per_s: 1e6,
        nominal_rate_bytes_per_s: 1e6,
        crosstraffic: 0.05,
        header_bytes: 0,
        topology: Default::default(),
        latency_per_link: false,
    };
    Net::new(m, 4)
}

fn done(start: f64) -> Done {
    Done { dst: 0, recv_slot: 0, recv_ready: 0.0, src: 0, send_slot: 0, start }
}

fn run(n: &mut Net) -> Vec<f64> {
    let mut out = Vec::new();
    n.finish_until(0.0, &mut Vec::new());
    while let Some(t) = n.next_event() {
        let mut ended = Vec::new();
        n.finish_until(t, &mut ended);
        out.extend(ended.iter().map(|_| t));
    }
    out
}

#[test]
fn n_flows_through_one_uplink_take_n_times_one() {
    let mut one = net();
    one.start(0.0, (0, 1), 1_000_000, (0.0, 1e6), done(0.0));
    let t1 = run(&mut one)[0];
    assert!((t1 - 1.0).abs() < 1e-9, "{t1}");
    for n in [2usize, 3] {
        let mut many = net();
        for k in 0..n {
            many.start(0.0, (0, 1 + k), 1_000_000, (0.0, 1e6), done(0.0));
        }
        let ends = run(&mut many);
        assert_eq!(ends.len(), n);
        assert!(ends.iter().all(|t| (t - n as f64 * t1).abs() < 1e-9), "{n}: {ends:?}");
    }
}

#[test]
fn transfers_between_other_hosts_share_a_backbone() {
    let m = FlowSharing { topology: crate::network::topology::Topology::Backbone { ratio: 1.0 }, ..net().model };
    // One transfer: the backbone also carries its acknowledgements'
    // 0.05 (both directions share it), so it runs at 1 / 1.05.
    let mut alone = Net::new(m.clone(), 4);
    alone.start(0.0, (0, 1), 1_000_000, (0.0, 1e6), done(0.0));
    let t = run(&mut alone)[0];
    assert!((t - 1.05).abs() < 1e-9, "{t}");
    // Two transfers on disjoint private links: the backbone carries
    // both and their acknowledgements, so each runs at 1 / 2.1.
    let mut two = Net::new(m, 4);
    two.start(0.0, (0, 1), 1_000_000, (0.0, 1e6), done(0.0));
    two.start(0.0, (2, 3), 1_000_000, (0.0, 1e6), done(0.0));
    let ends = run(&mut two);
    assert!(ends.len() == 2 && ends.iter().all(|t| (t - 2.1).abs() < 1e-9), "{ends:?}");
}

#[test]
fn opposite_flows_slow_each_other_by_the_crosstraffic() {
    let mut n = net();
    n.start(0.0, (0, 1), 1_000_000, (0.0, 0.94e6), done(0.0));
    n.start(0.0, (1, 0), 1_000_000, (0.0, 0.94e6), done(0.0));
    let ends = run(&mut n);
    let want = 1.0 / 0.94 * 1.05;
    assert!(ends.iter().all(|t| (t - want).abs() < 1e-9), "{ends:?} vs {want}");
}

#[test]
fn flows_of_different_factors_get_equal_use_of_a_bottleneck() {
    // Host 0's up link (1e6 B/s) carries a flow of factor 0.5 (bound
    // 0.5e6) and one of factor 1: each uses half the link, so they
    // move 0.25e6 and 0.5e6 B/s (SimGrid's max-min over the variables,
    // not over the data rates). The second ends at 2 s; the first,
    // alone then, moves its last 0.5e6 bytes at 0.5e6 B/s.
    let mut m = net().model;
    m.crosstraffic = 0.0;
    let mut n = Net::new(m, 4);
    n.start(0.0, (0, 1), 1_000_000, (0.0, 0.5e6), done(0.0));
    n.start(0.0, (0, 2), 1_000_000, (0.0, 1e6), done(0.0));
    let ends = run(&mut n);
    assert!(ends.len() == 2 && (ends[0] - 2.0).abs() < 1e-9 && (ends[1] - 3.0).abs() < 1e-9, "{ends:?}");
}

#[test]
fn with_latencies_per_link_a_longer_route_gets_a_smaller_share() {
    // Ring of 4: 0 → 2 crosses links (0,1) and (1,2), 1 → 2 only (1,2).
    // SimGrid weights each flow by its route's latency (here its hops):
    // on (1,2) the 2-hop flow gets half the 1-hop one's use, 1/3 and 2/3
    // of the link. The short one ends at 1.5 s; the long one has moved
    // 0.5e6 bytes by then and the rest alone takes 0.5 s.
    let m = FlowSharing {
        link_bw_bytes_per_s: 1e6,
        nominal_rate_bytes_per_s: 0.0,
        crosstraffic: 0.0,
        header_bytes: 0,
        topology: crate::network::topology::Topology::Torus { dims: vec![4] },
        latency_per_link: true,
    };
    let mut n = Net::new(m.clone(), 4);
    n.start(0.0, (0, 2), 1_000_000, (0.0, 1e6), done(0.0));
    n.start(0.0, (1, 2), 1_000_000, (0.0, 1e6), done(0.0));
    let ends = run(&mut n);
    assert!(ends.len() == 2 && (ends[0] - 1.5).abs() < 1e-9 && (ends[1] - 2.0).abs() < 1e-9, "{ends:?}");
    // Without latencies per link every flow weighs the same.
    let mut n = Net::new(FlowSharing { latency_per_link: false, ..m }, 4);
    n.start(0.0, (0, 2), 1_000_000, (0.0, 1e6), done(0.0));
    n.start(0.0, (1, 2), 1_000_000, (0.0, 1e6), done(0.0));
    let ends = run(&mut n);
    assert!(ends.len() == 2 && ends.iter().all(|t| (t - 2.0).abs() < 1e-9), "{ends:?}");
}

/// A transfer for [`plain_ends`] and the network: start (seconds),
/// hosts, payload bytes, latency (seconds), bound (bytes/s).
type Transfer = (f64, (usize, usize), u64, f64, f64);

/// Each transfer's end as an event loop that advances every flow's
/// bytes left at every event and fills from scratch, over all flows at
/// once, at every event (the plain progressive filling of `maxmin::tests`).
fn plain_ends(model: &FlowSharing, hosts: usize, ts: &[Transfer]) -> Vec<f64> {
    let base = Net::new(model.clone(), hosts).base;
    // In the sharing's variable units: bytes and bounds ÷ f.
    let inv_f = |bound: f64| model.nominal_rate_bytes_per_s / bound;
    let links = |a: usize, b: usize| {
        let (mut there, mut back) = (Vec::new(), Vec::new());
        model.topology.route(a, b, &mut there);
        model.topology.route(b, a, &mut back);
        let mut l: Vec<(u32, f64)> = there.iter().map(|&l| (l, 1.0)).collect();
        l.extend(back.iter().map(|&l| (l, model.crosstraffic)));
        l
    };
    // (transfer, bytes left) in their bandwidth phase, in start order.
    let mut live: Vec<(usize, f64)> = Vec::new();
    let mut ends = vec![f64::NAN; ts.len()];
    let lat_end = |k: usize| ts[k].0 + ts[k].3;
    let mut entered = vec![false; ts.len()];
    let (mut now, mut rates) = (0.0, Vec::new());
    loop {
        let mut next = (0..ts.len()).filter(|&k| !entered[k]).map(lat_end).fold(f64::INFINITY, f64::min);
        for (&(_, left), &r) in live.iter().zip(&rates) {
            if r > 0.0 {
                next = next.min(now + left / r);
            }
        }
        if !next.is_finite() {
            return ends;
        }
        let eps = 1e-12 * next.abs().max(1.0);
        for ((k, left), &r) in live.iter_mut().zip(&rates) {
            *left -= r * (next - now);
            if *left <= 1e-9 || *left / r <= eps {
                ends[*k] = next;
            }
        }
        now = next;
        live.retain(|&(k, _)| ends[k].is_nan());
        let mut enter: Vec<usize> = (0..ts.len()).filter(|&k| !entered[k] && lat_end(k) <= now).collect();
        enter.sort_by(|&a, &b| lat_end(a).total_cmp(&lat_end(b)).then(a.cmp(&b)));
        for k in enter {
            entered[k] = true;
            live.push((k, ts[k].2 as f64 * inv_f(ts[k].4)));
        }
        live.sort_by_key(|&(k, _)| k);
        let flows: Vec<maxmin::tests::Flow> = live
            .iter()
            .map(|&(k, _)| maxmin::tests::Flow { links: links(ts[k].1 .0, ts[k].1 .1), bound: ts[k].4 * inv_f(ts[k].4) })
            .collect();
        rates = maxmin::tests::reference(&base, &flows).0;
    }
}

/// The network's transfer ends, replayed as the engine drives it.
fn net_ends(model: &FlowSharing, hosts: usize, ts: &[Transfer]) -> Vec<f64> {
    net_run(model, hosts, ts, CROWD).0
}

/// [`net_ends`] with classes looked up from `crowd` entries on a link,
/// and the network's class counts (`Net::most`).
fn net_run(model: &FlowSharing, hosts: usize, ts: &[Transfer], crowd: usize) -> (Vec<f64>, (u32, u64)) {
    let mut n = Net::new(model.clone(), hosts);
    n.crowd = crowd;
    let mut ends = vec![f64::NAN; ts.len()];
    let (mut k, mut wake) = (0, f64::INFINITY);
    loop {
        let t = wake.min(n.next_event().unwrap_or(f64::INFINITY));
        if k < ts.len() && ts[k].0 <= t {
            let (start, hosts, bytes, lat, bound) = ts[k];
            let d = Done { dst: k as u32, ..done(start) };
            wake = wake.min(n.start(start, hosts, bytes, (lat, bound), d));
            k += 1;
            continue;
        }
        if !t.is_finite() {
            return (ends, n.most);
        }
        let mut ended = Vec::new();
        n.finish_until(t, &mut ended);
        wake = f64::INFINITY;
        for d in ended {
            ends[d.dst as usize] = t;
        }
    }
}

/// Random transfers (starts, hosts, sizes, latencies and bounds often
/// tied) end where the plain event loop ends them, to 1e-9 relative:
/// the network solves only the components a change touches and brings
/// bytes left up to date only when a rate changes. Few hosts make one
/// component, many hosts several.
#[test]
fn transfer_ends_are_those_of_the_plain_event_loop() {
    let mut rng = crate::rng::Rng::new(7);
    // Transfers of about a second, so that the 1e-12 s under which a
    // flow counts as over is far below 1e-9 of their times.
    let model = net().model;
    let (mut worst, mut n_ends) = (0.0f64, 0);
    for run in 0..400 {
        let hosts = if run % 2 == 0 { 2 + rng.below(6) } else { 8 + rng.below(40) };
        let mut ts: Vec<Transfer> = (0..1 + rng.below(60))
            .map(|_| {
                let start = rng.below(40) as f64 * 0.1;
                let a = rng.below(hosts);
                let b = (a + 1 + rng.below(hosts - 1)) % hosts;
                let bytes = [1u64 << 20, 65536, 1 + rng.below(1 << 21) as u64][rng.below(3)];
                let lat = [0.0, 0.002, rng.below(100) as f64 * 1e-3][rng.below(3)];
                let bound = [1e6, 0.94e6, 1e5 + rng.below(1000) as f64 * 1e3][rng.below(3)];
                (start, (a, b), bytes, lat, bound)
            })
            .collect();
        ts.sort_by(|x, y| x.0.total_cmp(&y.0));
        let want = plain_ends(&model, hosts, &ts);
        let got = net_ends(&model, hosts, &ts);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let rel = (g - w).abs() / w;
            assert!(rel <= 1e-9, "run {run} transfer {k}: {g} vs {w} ({rel:e} relative)");
            worst = worst.max(rel);
            n_ends += 1;
        }
    }
    assert!(n_ends > 6000, "{n_ends} transfers, worst {worst:e}");
}

/// Many hosts sending to one, as a linear gather's root receives, with
/// transfers between the senders now and then (so a sender's lone links
/// become shared): the flows into the root share its links in classes
/// of many flows, and every transfer ends where the plain event loop
/// ends it, to 1e-9 relative.
#[test]
fn flows_into_one_host_share_in_classes_as_the_plain_event_loop() {
    let mut rng = crate::rng::Rng::new(11);
    let model = net().model;
    let (mut most, mut shared, mut n_ends) = (0, 0, 0);
    for run in 0..60 {
        let hosts = 8 + rng.below(40);
        let mut ts: Vec<Transfer> = (0..20 + rng.below(80))
            .map(|_| {
                let start = rng.below(30) as f64 * 0.05;
                let a = 1 + rng.below(hosts - 1);
                let b = if rng.below(5) == 0 { 1 + (a + rng.below(hosts - 2)) % (hosts - 1) } else { 0 };
                let b = if b == a { 0 } else { b };
                let bytes = [65536u64, 1 << 16 | 1, 1 + rng.below(1 << 18) as u64][rng.below(3)];
                let bound = if run % 3 == 0 { [1e6, 0.94e6][rng.below(2)] } else { 1e6 };
                (start, (a, b), bytes, [0.0, 0.001][rng.below(2)], bound)
            })
            .collect();
        ts.sort_by(|x, y| x.0.total_cmp(&y.0));
        let want = plain_ends(&model, hosts, &ts);
        let (got, (m, s)) = net_run(&model, hosts, &ts, [1, CROWD][run % 2]);
        (most, shared) = (most.max(m), shared + s);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let rel = (g - w).abs() / w;
            assert!(rel <= 1e-9, "run {run} transfer {k}: {g} vs {w} ({rel:e} relative)");
            n_ends += 1;
        }
    }
    assert!(n_ends > 2000 && most >= 10 && shared > 100, "{n_ends} transfers, classes of up to {most} flows, {shared} lone links shared");
}

#[test]
fn latency_phase_uses_no_bandwidth() {
    let mut n = net();
    n.start(0.0, (0, 1), 1_000_000, (0.0, 1e6), done(0.0));
    n.start(0.0, (0, 2), 500_000, (2.0, 1e6), done(0.0));
    let ends = run(&mut n);
    assert!((ends[0] - 1.0).abs() < 1e-9 && (ends[1] - 2.5).abs() < 1e-9, "{ends:?}");
}
