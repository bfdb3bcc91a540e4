//! One set of wrappers per MPI ABI in one library (`csrc/abi.c` explains
//! the scheme): finds each MPI's compile flags, compiles the wrappers
//! against them, renames what each build defines to `ipr_<abi>_<name>`,
//! weakens its references to the MPI's symbols (binutils `nm` and
//! `objcopy`), and generates the exported trampolines (`abi_gen.c`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// An MPI ABI the interposer is built for.
pub struct Abi {
    /// Symbol prefix tag: `ipr_<tag>_`.
    pub tag: &'static str,
    /// Name in messages.
    pub label: &'static str,
    /// Environment variable naming its compiler wrapper.
    pub env: &'static str,
    /// The compiler wrapper's default name and the flag printing its
    /// compile line.
    pub wrapper: (&'static str, &'static str),
    /// Its pkg-config package, tried when the wrapper fails.
    pub pkg: &'static str,
}

/// The ABIs, in the order of `ipr_abi_slots` in `csrc/abi.c`.
pub const ABIS: [Abi; 2] = [
    Abi { tag: "ompi", label: "Open MPI", env: "IPR_MPICC_OPENMPI", wrapper: ("mpicc.openmpi", "-showme:compile"), pkg: "ompi" },
    Abi { tag: "mpich", label: "MPICH", env: "IPR_MPICC_MPICH", wrapper: ("mpicc.mpich", "-show"), pkg: "mpich" },
];

/// The `-I`/`-D` flags of the ABI's compiler wrapper, else of its
/// pkg-config package (as rsmpi's mpi-sys finds an MPI).
///
/// # Errors
/// Every method that failed, and why, in one line.
pub fn flags(abi: &Abi) -> Result<Vec<String>, String> {
    let cc = std::env::var(abi.env).unwrap_or_else(|_| abi.wrapper.0.to_string());
    let wrapper = compile_flags(&cc, &[abi.wrapper.1]);
    wrapper.or_else(|e| compile_flags("pkg-config", &["--cflags", abi.pkg]).map_err(|p| format!("{e}; {p}")))
}

fn compile_flags(cmd: &str, args: &[&str]) -> Result<Vec<String>, String> {
    let line = format!("`{cmd} {}`", args.join(" "));
    let out = Command::new(cmd).args(args).output().map_err(|e| format!("{line}: cannot run: {e}"))?;
    if !out.status.success() {
        return Err(format!("{line} exited with {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let flags: Vec<String> = text.split_whitespace().filter(|w| w.starts_with("-I") || w.starts_with("-D")).map(str::to_string).collect();
    if !flags.iter().any(|f| f.starts_with("-I")) {
        return Err(format!("{line} named no include directory"));
    }
    Ok(flags)
}

/// A global symbol of an object file, from `nm -P`.
struct Sym {
    name: String,
    /// `nm`'s type letter: `T`/`W` code, `U`/`w`/`v` undefined, others data.
    kind: char,
}

fn nm(obj: &Path) -> Vec<Sym> {
    let out = Command::new("nm").arg("-P").arg("-g").arg(obj).output().unwrap_or_else(|e| panic!("nm: cannot run: {e} (install binutils)"));
    assert!(out.status.success(), "nm -P -g {} failed", obj.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            let kind = w.next()?.chars().next()?;
            Some(Sym { name, kind })
        })
        .collect()
}

fn undefined(kind: char) -> bool {
    matches!(kind, 'U' | 'w' | 'v')
}

/// The symbols of an MPI that the wrappers may reference: weak after the
/// rename, so that the library loads into the other MPI's processes.
fn mpi_symbol(name: &str) -> bool {
    !name.starts_with("ipr_") && name.to_ascii_lowercase().contains("mpi")
}

/// Renames and weakens one ABI's objects (see the module doc); returns the
/// renamed objects and the functions they define, by original name.
pub fn rename(abi: &Abi, objects: &[PathBuf], dir: &Path) -> (Vec<PathBuf>, BTreeSet<String>) {
    let syms: Vec<Vec<Sym>> = objects.iter().map(|o| nm(o)).collect();
    let defined: BTreeSet<&str> = syms.iter().flatten().filter(|s| !undefined(s.kind)).map(|s| s.name.as_str()).collect();
    let functions: BTreeSet<String> = syms.iter().flatten().filter(|s| matches!(s.kind, 'T' | 'W')).map(|s| s.name.clone()).collect();
    let weak: BTreeSet<&str> = syms
        .iter()
        .flatten()
        .filter(|s| undefined(s.kind) && !defined.contains(s.name.as_str()) && mpi_symbol(&s.name))
        .map(|s| s.name.as_str())
        .collect();
    let map: String = defined.iter().map(|n| format!("{n} ipr_{}_{n}\n", abi.tag)).collect();
    let weak_list: String = weak.iter().map(|n| format!("{n}\n")).collect();
    std::fs::create_dir_all(dir).expect("create renamed objects' directory");
    let (map_file, weak_file) = (dir.join("rename.txt"), dir.join("weaken.txt"));
    std::fs::write(&map_file, map).expect("write rename.txt");
    std::fs::write(&weak_file, weak_list).expect("write weaken.txt");
    let mut out = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let stem = o.file_name().unwrap().to_string_lossy();
        let renamed = dir.join(format!("{}-{i}-{stem}", abi.tag));
        let st = Command::new("objcopy")
            .arg(format!("--redefine-syms={}", map_file.display()))
            .arg(format!("--weaken-symbols={}", weak_file.display()))
            .arg(o)
            .arg(&renamed)
            .status()
            .unwrap_or_else(|e| panic!("objcopy: cannot run: {e} (install binutils)"));
        assert!(st.success(), "objcopy of {} failed", o.display());
        out.push(renamed);
    }
    (out, functions)
}

/// Asserts that objects built once for every ABI reference no MPI symbol.
pub fn check_neutral(objects: &[PathBuf]) {
    for o in objects {
        let bad: Vec<String> = nm(o).into_iter().filter(|s| undefined(s.kind) && mpi_symbol(&s.name)).map(|s| s.name).collect();
        assert!(bad.is_empty(), "{}: the ABI-neutral C code references MPI symbols: {}", o.display(), bad.join(", "));
    }
}

/// `abi_gen.c`: the slot table, each ABI's functions, and the exported
/// trampolines and lazy stubs (x86_64 assembly). `built[a]` holds the
/// functions ABI `a` defines, `None` when it was not built.
pub fn trampolines(built: &[Option<BTreeSet<String>>]) -> String {
    let all: BTreeSet<&String> = built.iter().flatten().flatten().collect();
    let names: Vec<&String> = all.into_iter().collect();
    let index: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let n = names.len().max(1);
    let mut c = String::from("/* Generated by interposer/build.rs (build/abi.rs): do not edit. */\n#include <stddef.h>\n\n");
    c += &format!("const unsigned ipr_slots = {};\n", names.len());
    c += &format!("const char *const ipr_slot_names[{n}] = {{\n");
    for name in &names {
        c += &format!("    \"{name}\",\n");
    }
    c += "};\n";
    for i in 0..names.len() {
        c += &format!("extern char ipr_lazy_{i}[];\n");
    }
    c += &format!("void *const ipr_slot_lazy[{n}] = {{\n");
    for i in 0..names.len() {
        c += &format!("    ipr_lazy_{i},\n");
    }
    c += "};\n";
    c += &format!("__attribute__((visibility(\"hidden\"))) void *ipr_slot[{n}] = {{\n");
    for i in 0..names.len() {
        c += &format!("    ipr_lazy_{i},\n");
    }
    c += "};\n";
    let mut tables = Vec::new();
    for (a, abi) in ABIS.iter().enumerate() {
        let table = format!("ipr_slots_{}", abi.tag);
        let fns = built.get(a).cloned().flatten().unwrap_or_default();
        for f in &fns {
            c += &format!("extern char ipr_{}_{f}[];\n", abi.tag);
        }
        c += &format!("static void *const {table}[{n}] = {{\n");
        for name in &names {
            if fns.contains(*name) {
                c += &format!("    ipr_{}_{name},\n", abi.tag);
            } else {
                c += "    NULL,\n";
            }
        }
        c += "};\n";
        tables.push(table);
    }
    let flags: Vec<&str> = (0..ABIS.len()).map(|a| if built.get(a).is_some_and(Option::is_some) { "1" } else { "0" }).collect();
    c += &format!("const int ipr_abi_built[{}] = {{{}}};\n", ABIS.len(), flags.join(", "));
    c += &format!("void *const *const ipr_abi_slots[{}] = {{{}}};\n", ABIS.len(), tables.join(", "));
    c += "\n__asm__(\".text\\n\"\n";
    for name in &names {
        let i = index[name];
        let off = 8 * i;
        c += &format!(
            "        \".globl {name}\\n.type {name},@function\\n{name}:\\n    jmp *ipr_slot+{off}(%rip)\\n.size {name}, .-{name}\\n\"\n"
        );
        c += &format!(
            "        \".globl ipr_lazy_{i}\\n.hidden ipr_lazy_{i}\\n.type ipr_lazy_{i},@function\\nipr_lazy_{i}:\\n    lea ipr_slot+{off}(%rip), %r11\\n    jmp ipr_lazy\\n\"\n"
        );
    }
    c += "        );\n";
    c
}
