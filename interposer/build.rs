//! Compiles the PMPI wrappers (generated from `csrc/mpi.tbl`, plus `csrc/lifecycle.c` and `csrc/online.c`) with the MPI compiler
//! wrapper and links them into the cdylib, exporting the `MPI_*` symbols.
//!
//! The MPI compiler is found the way rsmpi's mpi-sys does it: `$MPICC`,
//! then `mpicc`; each candidate must answer `-show`/`-showme`. When all
//! fail, the build stops with every failure listed.

use std::path::PathBuf;
use std::process::Command;

#[path = "build/wrappers.rs"]
mod wrappers;

fn probe(cc: &str) -> Result<Vec<String>, String> {
    let mut why = Vec::new();
    for flag in ["-showme:link", "-show"] {
        match Command::new(cc).arg(flag).output() {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout).to_string();
                let link: Vec<String> = text
                    .split_whitespace()
                    .filter(|w| w.starts_with("-L") || w.starts_with("-l") || w.starts_with("-Wl,-rpath"))
                    .map(str::to_string)
                    .collect();
                if link.iter().any(|w| w.starts_with("-lmpi")) {
                    return Ok(link);
                }
                why.push(format!("`{cc} {flag}` named no -lmpi library"));
            }
            Ok(o) => why.push(format!("`{cc} {flag}` exited with {}", o.status)),
            Err(e) => return Err(format!("{cc}: cannot run: {e}")),
        }
    }
    Err(why.join("; "))
}

fn main() {
    println!("cargo:rerun-if-env-changed=MPICC");
    for f in ["csrc/mpi.tbl", "csrc/support.h", "csrc/fast.h", "csrc/lifecycle.c", "csrc/online.h", "csrc/online.c", "build/wrappers.rs"] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-changed=src/exports.map");
    let mut candidates = Vec::new();
    if let Ok(cc) = std::env::var("MPICC") {
        candidates.push(cc);
    }
    candidates.push("mpicc".to_string());
    let mut failures = Vec::new();
    let mut found = None;
    for cc in &candidates {
        match probe(cc) {
            Ok(link) => {
                found = Some((cc.clone(), link));
                break;
            }
            Err(e) => failures.push(e),
        }
    }
    let Some((mpicc, link)) = found else {
        panic!(
            "no MPI C compiler found; tried:\n  {}\nInstall OpenMPI (apt-get install libopenmpi-dev) or MPICH, or set MPICC.",
            failures.join("\n  ")
        );
    };
    let table = std::fs::read_to_string("csrc/mpi.tbl").expect("csrc/mpi.tbl");
    let entries = wrappers::parse(&table).unwrap_or_else(|e| panic!("{e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let generated = out.join("wrappers_gen.c");
    std::fs::write(&generated, wrappers::generate(&entries)).expect("write wrappers_gen.c");
    cc::Build::new()
        .compiler(&mpicc)
        .include("csrc")
        .file("csrc/lifecycle.c")
        .file("csrc/online.c")
        .file(&generated)
        .flag("-fvisibility=default")
        .warnings(true)
        .link_lib_modifier("+whole-archive")
        .compile("ipr_wrappers");
    for w in link {
        if let Some(dir) = w.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = w.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    let map = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("src/exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
    println!("cargo:rustc-env=IPR_MPICC={mpicc}");
}
