use super::*;

#[test]
fn factors_are_written_to_round_trip() {
    let p = SmpiProps {
        os: vec![(0, 1e-7, 0.0)],
        ois: vec![(0, 1e-7, 0.0)],
        or: vec![(0, 1e-7, 1e-11)],
        bw_factor: vec![(0, 0.1234567891234)],
        lat_factor: vec![(0, 1.0), (1039, 2.5)],
        async_small_thresh: 0,
        send_is_detached_thresh: 65536,
        wtime_s: None,
        iprobe_s: None,
        link_latency_s: 1e-6,
        link_bandwidth_bytes_per_s: 1e9,
    };
    let props = p.props();
    let get = |id: &str| props.iter().find(|(k, _)| *k == id).map(|(_, v)| v.clone());
    assert_eq!(get("smpi/bw-factor").as_deref(), Some("0:0.1234567891234"));
    assert_eq!(get("smpi/lat-factor").as_deref(), Some("0:1;1039:2.5"));
    assert_eq!(get("network/TCP-gamma"), None);
    // 4 MiB / (2 · 1 s) is below 1 GBps: gamma is raised so that it does not bound the rate.
    let slow = SmpiProps { link_latency_s: 1.0, ..p };
    let gamma = slow.props().into_iter().find(|(k, _)| *k == "network/TCP-gamma").unwrap().1;
    assert!(gamma.parse::<f64>().unwrap() / 2.0 >= 1e9, "{gamma}");
}
