//! Generates the bindings to the OTF2 library (Debian
//! `libopen-trace-format2-dev`) and links it.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/wrapper.h");
    println!("cargo:rustc-link-lib=open-trace-format2");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let bindings = bindgen::Builder::default()
        .header("src/wrapper.h")
        .allowlist_function("OTF2_.*")
        .allowlist_type("OTF2_.*")
        .allowlist_var("OTF2_.*")
        .prepend_enum_name(false)
        .layout_tests(false)
        .generate()
        .unwrap_or_else(|e| panic!("bindgen on <otf2/otf2.h> failed ({e}); install libopen-trace-format2-dev (.ci/setup)"));
    bindings.write_to_file(out.join("bindings.rs")).expect("cannot write bindings.rs");
}
