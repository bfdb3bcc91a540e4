//! Helpers shared by the interposer's benchmarks.

use std::path::{Path, PathBuf};

/// The release build directory, where `cargo build --release` put the
/// library and the binaries: `$CARGO_TARGET_DIR/release` (relative to the
/// workspace at `root` when relative), else `<root>/target/release`.
pub fn release_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |d| root.join(d)).join("release")
}
