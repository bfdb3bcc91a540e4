//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use simulator::jitter_trace::JitterHeader;

/// The header of a synthetic 1 GHz, 10 ms jitter trace of `node0`, CPU `cpu`.
pub fn jitter_header(cpu: u32, window: Option<u64>) -> JitterHeader {
    JitterHeader {
        host: "node0".into(),
        cpu,
        tsc_hz: 1e9,
        tsc_hz_kernel: None,
        tsc_hz_kernel_source: None,
        t_min_cycles: 20,
        threshold_cycles: 180,
        timer_read: "rdtsc".into(),
        start_unix_ns: 0,
        requested_duration_s: 0.01,
        kernel: "test".into(),
        cosched_window_cycles: window,
        cosched_origin_cycles: window.map(|_| 0),
    }
}
