//! Compiles the bare C timestamp-reader loops used as the reference in the
//! resolution benchmark (`tracecollector::bare`).

fn main() {
    println!("cargo:rerun-if-changed=csrc/bare_loop.c");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        cc::Build::new().file("csrc/bare_loop.c").opt_level(2).compile("tc_bare_loop");
    }
}
