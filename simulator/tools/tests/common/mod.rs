//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use simulator::jitter_trace::JitterHeader;

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// `target/<profile>/`, with libinterposer.so, calibrate and the C tests
/// built once per test binary: cargo builds none of them for the
/// simulator's tests.
pub fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--quiet", "-p", "interposer", "-p", "calibrate"]).current_dir(root());
        if !cfg!(debug_assertions) {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("cargo").success(), "cargo build -p interposer -p calibrate failed");
        let st = Command::new("make").arg("-s").arg("-C").arg(root().join("c-tests")).status().expect("make");
        assert!(st.success(), "make -C c-tests failed");
        Path::new(env!("CARGO_BIN_EXE_simulator")).parent().unwrap().to_path_buf()
    })
}

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
