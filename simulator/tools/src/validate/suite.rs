//! The validation suite: which programs `simulator validate` runs, with
//! which arguments and on how many ranks, read from TOML.
//!
//! ```toml
//! [[case]]
//! name = "ring"              # optional; default: the program's file name
//! program = "build/ring"     # relative to the suite file, or absolute
//! args = ["300000", "8"]     # optional
//! ranks = 2
//! hostfile = "hosts"         # optional, relative to the suite file
//! mpirun_args = ["--bind-to", "none"]   # optional, before the program
//! time_regex = 'elapsed: ([0-9.e+-]+) s'  # optional: the program's own timing line
//! env = { OMP_NUM_THREADS = "1" }       # optional: set for every rank
//! inputs = ["inputs/LU.dat"]            # optional: copied into the run's directory
//! prepare = ["ld1.x", "-i", "si.ld1"]   # optional: run there first, untimed
//! workdir = true                        # optional: a working directory even without inputs
//! timeout_s = 120                       # optional: instead of --timeout-s
//! source = "skeleton.c"                 # optional: what smpicc/smpicxx/smpif90 build for --reference smpi
//!                                       #   (a list for several files: ["a.cc", "b.cc"])
//! smpi_cflags = ["-DUSE_MPI=1"]         # optional: more flags of that build
//! smpi_cfg = ["smpi/simulate-computation:no"]  # optional: SimGrid settings of this case's smpirun
//! traced_ranks = [2, 4, 8, 27]          # optional: instead of --traced-ranks for --reference
//! ```
//!
//! `program` without a `/` that is not a file beside the suite is looked
//! up in `$PATH` (installed programs: `program = "hpcc"`). A case with
//! `inputs`, `prepare` or `workdir = true` runs in a fresh working
//! directory of its own for every run (`<run log without .log>.work/` in
//! the output directory): the input files are copied there, then
//! `prepare` (a command and its arguments, not under `mpirun`, without
//! the interposer) writes what else the program reads, then the program
//! starts there; other cases run in the directory `validate` was started
//! in. Relative paths (`program`, `hostfile`, `inputs`) are taken from
//! the suite file's directory and made absolute.
//!
//! A case is timed by the program's last `wall_s=<seconds>` line (the
//! c-tests' convention) when it prints one; else by the interposer
//! (`INTERPOSER_MODE=time`: `MPI_Init` to `MPI_Finalize`, after barriers),
//! or by the first capture group of `time_regex` on its last matching line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One program to validate.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Row label (unique within the suite).
    pub name: String,
    /// The MPI executable, resolved against the suite file's directory.
    pub program: PathBuf,
    /// Its command-line arguments.
    pub args: Vec<String>,
    /// MPI ranks (`mpirun -np`).
    pub ranks: u32,
    /// Hostfile for `mpirun --hostfile`, resolved like `program`.
    pub hostfile: Option<PathBuf>,
    /// Extra launcher arguments, placed before the program.
    pub mpirun_args: Vec<String>,
    /// How a run's time is read.
    pub timing: Timing,
    /// Environment variables set for every rank (forwarded by the launcher).
    pub env: Vec<(String, String)>,
    /// Files copied into the run's working directory, resolved like `program`.
    pub inputs: Vec<PathBuf>,
    /// Command (and arguments) run in the working directory before each
    /// run, untimed; empty for none.
    pub prepare: Vec<String>,
    /// Kill a run after this long instead of after the launcher's timeout.
    pub timeout: Option<std::time::Duration>,
    /// Run in a fresh working directory even without inputs or `prepare`.
    pub workdir: bool,
    /// The program's C, C++ or Fortran source files, resolved like
    /// `program`, that `--reference smpi` builds with `smpicc`, `smpicxx`
    /// or `smpif90` (by the first file's extension); empty: the
    /// program's file name with `.c`, `.f90` or `.f` beside the suite.
    pub source: Vec<PathBuf>,
    /// Flags of that build after `-O2` (`-D...`, `-I...`).
    pub smpi_cflags: Vec<String>,
    /// SimGrid settings (`name:value`) of this case's `smpirun` under
    /// `--reference smpi`, after `--smpi-cfg`'s.
    pub smpi_cfg: Vec<String>,
    /// Rank counts traced for this case's extrapolation under
    /// `--reference`, instead of `--traced-ranks`.
    pub traced_ranks: Option<Vec<u32>>,
}

impl Case {
    /// True when the case runs in a fresh working directory of its own
    /// (`workdir = true`, or it has `inputs` or `prepare`).
    pub fn needs_workdir(&self) -> bool {
        self.workdir || !self.inputs.is_empty() || !self.prepare.is_empty()
    }
}

/// How the time of a run is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Timing {
    /// `WallLine` when the program prints `wall_s=`, else `Span`
    /// (decided by a first, uncounted run).
    Auto,
    /// The program's last `wall_s=<seconds>` line; predicted over its
    /// barrier-to-barrier region.
    WallLine,
    /// The interposer's `MPI_Init`-to-`MPI_Finalize` span
    /// (`INTERPOSER_MODE=time` for plain runs); predicted by the makespan.
    Span,
    /// The first capture group of this regular expression on the last
    /// line it matches, seconds; predicted by the makespan.
    Regex(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteToml {
    #[serde(default)]
    case: Vec<CaseToml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseToml {
    name: Option<String>,
    program: PathBuf,
    #[serde(default)]
    args: Vec<String>,
    ranks: u32,
    hostfile: Option<PathBuf>,
    #[serde(default)]
    mpirun_args: Vec<String>,
    time_regex: Option<String>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    inputs: Vec<PathBuf>,
    #[serde(default)]
    prepare: Vec<String>,
    timeout_s: Option<f64>,
    #[serde(default)]
    workdir: bool,
    #[serde(default)]
    source: Sources,
    #[serde(default)]
    smpi_cflags: Vec<String>,
    #[serde(default)]
    smpi_cfg: Vec<String>,
    traced_ranks: Option<Vec<u32>>,
}

/// A case's `source`: one file or a list of them.
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum Sources {
    #[default]
    None,
    One(PathBuf),
    Many(Vec<PathBuf>),
}

impl Sources {
    fn files(&self) -> &[PathBuf] {
        match self {
            Sources::None => &[],
            Sources::One(f) => std::slice::from_ref(f),
            Sources::Many(v) => v,
        }
    }
}

/// Error reading a suite; the message names the file (and the TOML line or
/// the case at fault).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {what}")]
pub struct SuiteError {
    /// The suite file.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
}

/// Reads the suite at `path`; relative paths inside it are taken from the
/// file's directory.
///
/// # Errors
/// [`SuiteError`] when the file is unreadable, is not valid TOML (the
/// message gives the line), lists no case, repeats a name, or has a case
/// with `ranks = 0`, without a program file name, with an environment
/// variable name that is empty or holds `=`, or with a `timeout_s` that is
/// not a positive number.
pub fn load(path: &Path) -> Result<Vec<Case>, SuiteError> {
    let e = |what: String| SuiteError { path: path.to_path_buf(), what };
    let text = std::fs::read_to_string(path).map_err(|x| e(x.to_string()))?;
    parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(e)
}

fn parse(text: &str, base: &Path) -> Result<Vec<Case>, String> {
    let raw: SuiteToml = toml::from_str(text).map_err(|x| x.to_string().replace('\n', " "))?;
    if raw.case.is_empty() {
        return Err("no [[case]] listed".into());
    }
    let mut cases: Vec<Case> = Vec::with_capacity(raw.case.len());
    for (i, c) in raw.case.into_iter().enumerate() {
        let name = match c.name {
            Some(n) => n,
            None => c.program.file_name().ok_or_else(|| format!("case[{i}].program has no file name"))?.to_string_lossy().into_owned(),
        };
        if name.is_empty() || name.contains(['/', ',', '|', '\n']) {
            return Err(format!("case[{i}].name {name:?}: must be non-empty, without '/', ',' or '|'"));
        }
        if c.ranks == 0 {
            return Err(format!("case[{i}] ({name}): ranks must be >= 1"));
        }
        if let Some(re) = &c.time_regex {
            check_regex(re).map_err(|w| format!("case[{i}] ({name}).time_regex: {w}"))?;
        }
        if let Some(k) = c.env.keys().find(|k| k.is_empty() || k.contains(['=', '\0'])) {
            return Err(format!("case[{i}] ({name}).env: variable name {k:?} must be non-empty, without '='"));
        }
        let timeout = match c.timeout_s {
            Some(t) if !(t.is_finite() && t > 0.0) => {
                return Err(format!("case[{i}] ({name}).timeout_s: {t} is not a positive number of seconds"))
            }
            t => t.map(std::time::Duration::from_secs_f64),
        };
        if cases.iter().any(|x| x.name == name) {
            return Err(format!("case[{i}]: name {name:?} is used twice (give each case its own name)"));
        }
        cases.push(Case {
            name,
            program: resolve_program(base, c.program),
            args: c.args,
            ranks: c.ranks,
            hostfile: c.hostfile.map(|h| absolute(&base.join(h))),
            mpirun_args: c.mpirun_args,
            timing: c.time_regex.map_or(Timing::Auto, Timing::Regex),
            env: c.env.into_iter().collect(),
            inputs: c.inputs.into_iter().map(|f| absolute(&base.join(f))).collect(),
            prepare: c.prepare,
            timeout,
            workdir: c.workdir,
            source: c.source.files().iter().map(|f| absolute(&base.join(f))).collect(),
            smpi_cflags: c.smpi_cflags,
            smpi_cfg: c.smpi_cfg,
            traced_ranks: c.traced_ranks,
        });
    }
    Ok(cases)
}

/// `path` made absolute against the current directory (a case that runs
/// in its own working directory still finds it); as it is if that fails.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The program of a case: beside the suite file, or, for a bare name with
/// no such file there, the first match in `$PATH`.
fn resolve_program(base: &Path, program: PathBuf) -> PathBuf {
    let beside = base.join(&program);
    if program.components().count() == 1 && !beside.exists() {
        let found = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join(&program))
            .find(|f| f.is_file());
        if let Some(f) = found {
            return f;
        }
    }
    absolute(&beside)
}

/// The cases of `cases` named in `names` (each may be a comma list), in
/// the suite's order; all of them when `names` is empty.
///
/// # Errors
/// A one-line message naming an unknown case and listing the suite's.
pub fn select(cases: Vec<Case>, names: &[String]) -> Result<Vec<Case>, String> {
    let wanted: Vec<&str> = names.iter().flat_map(|n| n.split(',')).map(str::trim).filter(|n| !n.is_empty()).collect();
    if wanted.is_empty() {
        return Ok(cases);
    }
    if let Some(w) = wanted.iter().find(|w| !cases.iter().any(|c| c.name == **w)) {
        let known: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        return Err(format!("no case named {w:?} in the suite (its cases: {})", known.join(", ")));
    }
    Ok(cases.into_iter().filter(|c| wanted.contains(&c.name.as_str())).collect())
}

/// Checks that `re` compiles and has a capture group (the seconds).
///
/// # Errors
/// A one-line message when it does not.
pub fn check_regex(re: &str) -> Result<(), String> {
    let r = regex::Regex::new(re).map_err(|e| e.to_string().replace('\n', " "))?;
    if r.captures_len() < 2 {
        return Err(format!("`{re}` has no capture group for the seconds"));
    }
    Ok(())
}

/// The seconds the first capture group of `re` gives on the last line of
/// `text` it matches, if finite and ≥ 0.
pub fn regex_seconds(re: &str, text: &str) -> Option<f64> {
    let r = regex::Regex::new(re).ok()?;
    let v: f64 = text.lines().rev().find_map(|l| r.captures(l))?.get(1)?.as_str().trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_resolve_against_the_suite_directory() {
        let text = "[[case]]\nprogram = \"build/ring\"\nargs = [\"10\", \"8\"]\nranks = 2\n\n[[case]]\nname = \"ring4\"\nprogram = \"/abs/ring\"\nranks = 4\nhostfile = \"hosts\"\nmpirun_args = [\"--map-by\", \"node\"]\n";
        let cases = parse(text, Path::new("/suite")).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].name, "ring");
        assert_eq!(cases[0].program, Path::new("/suite/build/ring"));
        assert_eq!(cases[0].args, ["10", "8"]);
        assert_eq!(cases[1].program, Path::new("/abs/ring"));
        assert_eq!(cases[1].hostfile.as_deref(), Some(Path::new("/suite/hosts")));
        assert_eq!(cases[1].mpirun_args, ["--map-by", "node"]);
    }

    #[test]
    fn environment_inputs_prepare_and_timeout_are_read() {
        let text = "[[case]]\nname = \"pw\"\nprogram = \"sh\"\nranks = 2\nenv = { OMP_NUM_THREADS = \"1\", A = \"b c\" }\ninputs = [\"in/si.pw\"]\nprepare = [\"ld1.x\", \"-i\", \"si.ld1\"]\ntimeout_s = 2.5\n";
        let c = &parse(text, Path::new("/suite")).unwrap()[0];
        assert_eq!(c.env, [("A".to_string(), "b c".to_string()), ("OMP_NUM_THREADS".to_string(), "1".to_string())]);
        assert_eq!(c.inputs, [Path::new("/suite/in/si.pw")]);
        assert_eq!(c.prepare, ["ld1.x", "-i", "si.ld1"]);
        assert_eq!(c.timeout, Some(std::time::Duration::from_millis(2500)));
        assert!(c.needs_workdir());
        // A bare name not beside the suite is found in $PATH.
        assert!(c.program.is_absolute() && c.program.is_file() && c.program.ends_with("sh"), "{}", c.program.display());
        let plain = &parse("[[case]]\nprogram = \"build/ring\"\nranks = 2\n", Path::new("rel")).unwrap()[0];
        assert!(!plain.needs_workdir() && plain.timeout.is_none() && plain.env.is_empty());
        assert!(parse("[[case]]\nprogram = \"a\"\nranks = 2\nworkdir = true\n", Path::new(".")).unwrap()[0].needs_workdir());
        assert!(plain.program.is_absolute() && plain.program.ends_with("rel/build/ring"), "{}", plain.program.display());
    }

    #[test]
    fn smpi_sources_are_one_file_or_a_list_with_flags() {
        let one = &parse("[[case]]\nprogram = \"build/ring\"\nranks = 2\nsource = \"ring.c\"\n", Path::new("/suite")).unwrap()[0];
        assert_eq!(one.source, [Path::new("/suite/ring.c")]);
        assert!(one.smpi_cflags.is_empty());
        let text = "[[case]]\nprogram = \"/opt/lulesh2.0\"\nranks = 8\nsource = [\"/src/lulesh.cc\", \"comm.cc\"]\nsmpi_cflags = [\"-DUSE_MPI=1\"]\n";
        let many = &parse(text, Path::new("/suite")).unwrap()[0];
        assert_eq!(many.source, [Path::new("/src/lulesh.cc"), Path::new("/suite/comm.cc")]);
        assert_eq!(many.smpi_cflags, ["-DUSE_MPI=1"]);
        let none = &parse("[[case]]\nprogram = \"build/ring\"\nranks = 2\n", Path::new("/suite")).unwrap()[0];
        assert!(none.source.is_empty());
        let e = parse("[[case]]\nprogram = \"a\"\nranks = 2\nsource = 3\n", Path::new(".")).unwrap_err();
        assert!(e.contains("line 4"), "{e}");
    }

    #[test]
    fn cases_are_selected_by_name_in_the_suites_order() {
        let text = "[[case]]\nprogram = \"build/ring\"\nranks = 2\n[[case]]\nname = \"ring-64k\"\nprogram = \"build/ring\"\nranks = 2\n[[case]]\nprogram = \"build/rma\"\nranks = 2\n";
        let cases = parse(text, Path::new(".")).unwrap();
        let names = |v: Vec<Case>| v.into_iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(names(select(cases.clone(), &[]).unwrap()), ["ring", "ring-64k", "rma"]);
        let picked = select(cases.clone(), &["rma, ring".into(), "rma".into()]).unwrap();
        assert_eq!(names(picked), ["ring", "rma"]);
        let e = select(cases, &["rng".into()]).unwrap_err();
        assert_eq!(e, "no case named \"rng\" in the suite (its cases: ring, ring-64k, rma)");
    }

    #[test]
    fn bad_suites_name_the_case_or_line() {
        let e = |t: &str| parse(t, Path::new(".")).unwrap_err();
        assert!(e("").contains("no [[case]]"));
        assert!(e("[[case]]\nprogram = \"a\"\nranks = 0\n").contains("case[0] (a): ranks must be >= 1"));
        assert!(e("[[case]]\nprogram = \"a\"\nranks = 2\n[[case]]\nprogram = \"b/a\"\nranks = 2\n")
            .contains("case[1]: name \"a\" is used twice"));
        assert!(e("[[case]]\nprogram = \"a\"\nrank = 2\n").contains("line 3"), "{}", e("[[case]]\nprogram = \"a\"\nrank = 2\n"));
        assert!(e("[[case]]\nprogram = \"a\"\nranks = 2\ntimeout_s = 0\n").contains("case[0] (a).timeout_s: 0 is not a positive"));
        assert!(e("[[case]]\nprogram = \"a\"\nranks = 2\nenv = { \"A=B\" = \"1\" }\n").contains("case[0] (a).env: variable name \"A=B\""));
        assert!(e("[[case]]\nprogram = \"a\"\nranks = 2\nenv = { A = 1 }\n").contains("line 4"));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, "[[case]]\nprogram = 1\n").unwrap();
        assert!(load(&p).unwrap_err().to_string().starts_with(&format!("{}: ", p.display())));
    }
}
