//! Running a suite case under `mpirun`: plainly, timed, traced or in the
//! interposer's online mode, and reading the run's time as the case says
//! ([`Timing`]): the `wall_s=` line the program prints (the c-tests'
//! convention: `MPI_Wtime` between two barriers, printed by rank 0), its
//! own line through a regular expression, or the interposer's
//! `MPI_Init`-to-`MPI_Finalize` span (`time.json`; in online mode the
//! predicted makespan of `online.json`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::suite::{regex_seconds, Case, Timing};

/// How a run is made.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// No interposer.
    Plain,
    /// `INTERPOSER_MODE=time`: the interposer records only the run's span.
    Time {
        /// The interposer library.
        lib: PathBuf,
        /// Where `time.json` goes.
        out: PathBuf,
    },
    /// `LD_PRELOAD=<lib> INTERPOSER_OUT=<out>` (trace mode).
    Trace {
        /// The interposer library.
        lib: PathBuf,
        /// Trace directory.
        out: PathBuf,
    },
    /// `INTERPOSER_MODE=regions`: per-region block sums only, for the
    /// perturbation tracing causes (`crate::perturbation`).
    Regions {
        /// The interposer library.
        lib: PathBuf,
        /// Where `rank-<r>.regions.json` go.
        out: PathBuf,
    },
    /// `INTERPOSER_MODE=online INTERPOSER_PLATFORM=<platform>` as well, and
    /// `INTERPOSER_VIRTUAL_WTIME=1`: the program's own `wall_s` is then its
    /// timed region in the online model's virtual time.
    Online {
        /// The interposer library.
        lib: PathBuf,
        /// Trace directory, where `online.json` is expected.
        out: PathBuf,
        /// Platform of the online model.
        platform: PathBuf,
    },
}

impl Mode {
    /// Short name for logs and tables: `plain`, `trace`, `online`.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Time { .. } => "timed",
            Mode::Trace { .. } => "trace",
            Mode::Regions { .. } => "regions",
            Mode::Online { .. } => "online",
        }
    }
}

/// The MPI launcher and what every run gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Launcher {
    /// `mpirun` path or name; default `$MPIRUN`, else `mpirun`.
    pub mpirun: String,
    /// True for Open MPI (`mpirun --version` says so): environment variables
    /// are forwarded with `-x`, `--oversubscribe` is added and every run
    /// gets its own `OMPI_MCA_orte_tmpdir_base`. Other launchers (MPICH's
    /// hydra) forward the whole environment themselves.
    pub open_mpi: bool,
    /// Launcher arguments for every case, after the case's own.
    pub extra_args: Vec<String>,
    /// Hostfile for every case without its own.
    pub hostfile: Option<PathBuf>,
    /// A run still going after this long is killed and counts as failed.
    pub timeout: Duration,
}

impl Launcher {
    /// The launcher `mpirun`, else the one [`mpi_launch::Mpi::find`]
    /// finds (`$MPIRUN`, `mpirun`, `mpiexec`), probed once with
    /// `--version`; other fields at their defaults (no extra arguments, no
    /// hostfile, 600 s timeout).
    ///
    /// # Errors
    /// A one-line message naming every launcher tried and its failure.
    pub fn detect(mpirun: Option<&str>) -> Result<Launcher, String> {
        let mpi = mpi_launch::Mpi::find(mpirun).map_err(|e| e.to_string())?;
        let open_mpi = mpi.flavour() == mpi_launch::Flavour::OpenMpi;
        Ok(Launcher {
            mpirun: mpi.program().to_string(),
            open_mpi,
            extra_args: Vec::new(),
            hostfile: None,
            timeout: Duration::from_secs(600),
        })
    }

    /// The launcher's arguments for `case` in `mode`, up to and including
    /// the program and its arguments.
    pub fn args(&self, case: &Case, mode: &Mode) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        if self.open_mpi {
            a.push("--oversubscribe".into());
            for (k, _) in env_of(case, mode) {
                a.extend(["-x".into(), k.into()]);
            }
            for (k, _) in &case.env {
                a.extend(["-x".into(), k.clone()]);
            }
        }
        a.extend(["-np".into(), case.ranks.to_string()]);
        if let Some(h) = case.hostfile.as_ref().or(self.hostfile.as_ref()) {
            a.extend(["--hostfile".into(), h.display().to_string()]);
        }
        a.extend(case.mpirun_args.iter().cloned());
        a.extend(self.extra_args.iter().cloned());
        a.push(case.program.display().to_string());
        a.extend(case.args.iter().cloned());
        a
    }

    /// Runs `case` once in `mode`, its stdout and stderr going to `log`;
    /// returns its time as `case.timing` reads it, seconds (`Auto` reads
    /// `wall_s=`). A case that [needs one](Case::needs_workdir) runs in a
    /// fresh [`work_dir`] beside `log`. A run Open MPI reports as a rank
    /// with PID 0 exiting improperly (its exit race) is made once more.
    ///
    /// # Errors
    /// A one-line message naming the case and `log` when the working
    /// directory cannot be made, `prepare` fails, the launcher cannot
    /// start, the run fails or times out (the case's `timeout_s`, else
    /// [`Launcher::timeout`]), or gives no valid time (no `wall_s=` line:
    /// the message says so).
    pub fn run(&self, case: &Case, mode: &Mode, log: &Path) -> Result<f64, String> {
        match self.run_once(case, mode, log) {
            Err(e) if self.open_mpi && std::fs::read_to_string(log).is_ok_and(|t| mpi_launch::open_mpi_exit_race(&t)) => {
                self.run_once(case, mode, log).map_err(|again| format!("{again} (made again after: {e})"))
            }
            done => done,
        }
    }

    /// One run of [`Launcher::run`].
    fn run_once(&self, case: &Case, mode: &Mode, log: &Path) -> Result<f64, String> {
        let fail = |what: String| format!("{} ({} run): {what}; log in {}", case.name, mode.name(), log.display());
        let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let file2 = file.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
        let timeout = case.timeout.unwrap_or(self.timeout);
        let mut cmd = Command::new(&self.mpirun);
        if case.needs_workdir() {
            let work = work_dir(log);
            prepare_work_dir(case, &work, timeout).map_err(fail)?;
            cmd.current_dir(&work);
        }
        cmd.args(self.args(case, mode)).stdin(Stdio::null()).stdout(file).stderr(file2);
        for k in ["LD_PRELOAD", "INTERPOSER_OUT", "INTERPOSER_MODE", "INTERPOSER_PLATFORM", "INTERPOSER_VIRTUAL_WTIME"] {
            cmd.env_remove(k);
        }
        cmd.envs(env_of(case, mode));
        cmd.envs(case.env.iter().map(|(k, v)| (k, v)));
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        // Open MPI 4 runs started together race on one session directory.
        let session = tempfile::Builder::new().prefix("validate-ompi-").tempdir().map_err(|e| fail(format!("temporary directory: {e}")))?;
        if self.open_mpi {
            cmd.env("OMPI_MCA_orte_tmpdir_base", session.path());
        }
        let mut child = cmd.spawn().map_err(|e| fail(format!("cannot run `{}` ({e})", self.mpirun)))?;
        let status = match mpi_launch::wait_bounded(&mut child, timeout) {
            Ok(Some(s)) => s,
            Ok(None) => return Err(fail(format!("timed out after {timeout:?}"))),
            Err(e) => return Err(fail(format!("waiting for `{}`: {e}", self.mpirun))),
        };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if !status.success() {
            let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
            return Err(fail(format!("{status}: {last}")));
        }
        match (&case.timing, mode) {
            (Timing::Auto | Timing::WallLine, _) => wall_s(&text).ok_or_else(|| fail(NO_WALL_S.into())),
            (Timing::Regex(re), _) => regex_seconds(re, &text).ok_or_else(|| fail(format!("no line of its output matches `{re}`"))),
            (Timing::Span, Mode::Online { out, .. }) => json_seconds(&out.join("online.json"), "makespan_s").map_err(fail),
            (Timing::Span, Mode::Time { out, .. } | Mode::Trace { out, .. } | Mode::Regions { out, .. }) => {
                json_seconds(&out.join("time.json"), "wall_s").map_err(fail)
            }
            (Timing::Span, Mode::Plain) => Err(fail("a plain run has no interposer to time it".into())),
        }
    }
}

/// The working directory of the run logged to `log`: `log` with its
/// extension replaced by `work` (`plain-0.log` runs in `plain-0.work/`).
pub fn work_dir(log: &Path) -> PathBuf {
    log.with_extension("work")
}

/// Makes `work` afresh, copies the case's inputs into it and runs its
/// `prepare` command there (output to `prepare.log` in it), bounded by
/// `timeout`.
///
/// # Errors
/// A one-line message naming the directory, the input file or the
/// `prepare` command (and its log) at fault.
pub fn prepare_work_dir(case: &Case, work: &Path, timeout: Duration) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).map_err(|e| format!("working directory {}: {e}", work.display()))?;
    for f in &case.inputs {
        let name = f.file_name().ok_or_else(|| format!("input {}: no file name", f.display()))?;
        std::fs::copy(f, work.join(name)).map_err(|e| format!("input {}: {e}", f.display()))?;
    }
    let Some((exe, args)) = case.prepare.split_first() else { return Ok(()) };
    let log = work.join("prepare.log");
    let what = format!("prepare command `{}`", case.prepare.join(" "));
    let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(args).current_dir(work).stdin(Stdio::null()).stdout(out).stderr(err);
    for k in ["LD_PRELOAD", "INTERPOSER_OUT", "INTERPOSER_MODE", "INTERPOSER_PLATFORM", "INTERPOSER_VIRTUAL_WTIME"] {
        cmd.env_remove(k);
    }
    cmd.envs(case.env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd.spawn().map_err(|e| format!("{what}: cannot start ({e})"))?;
    match mpi_launch::wait_bounded(&mut child, timeout) {
        Ok(Some(s)) if s.success() => Ok(()),
        Ok(Some(s)) => Err(format!("{what} failed ({s}); log in {}", log.display())),
        Ok(None) => Err(format!("{what} timed out after {timeout:?}; log in {}", log.display())),
        Err(e) => Err(format!("{what}: {e}")),
    }
}

/// What [`Launcher::run`] says when a program prints no `wall_s=` line.
pub const NO_WALL_S: &str = "no valid wall_s=<seconds> line in its output";

/// The number `key` of the JSON object in `path`, if finite and ≥ 0.
fn json_seconds(path: &Path, key: &str) -> Result<f64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    v.get(key)
        .and_then(serde_json::Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .ok_or_else(|| format!("{}: no valid {key}", path.display()))
}

/// The interposer's environment for `case` in `mode`. Online runs get a
/// virtual `MPI_Wtime` when the program's own output gives the time (so
/// that it prints its predicted time); a case timed over the
/// interposer's span is predicted by `online.json` and keeps the real
/// clock, so that a program which adapts its work to the time it reads
/// (timing loops, timer-granularity checks) does what its plain runs do.
fn env_of(case: &Case, mode: &Mode) -> Vec<(&'static str, String)> {
    match mode {
        Mode::Plain => Vec::new(),
        Mode::Time { lib, out } => vec![
            ("LD_PRELOAD", lib.display().to_string()),
            ("INTERPOSER_OUT", out.display().to_string()),
            ("INTERPOSER_MODE", "time".into()),
        ],
        Mode::Trace { lib, out } | Mode::Regions { lib, out } => {
            vec![
                ("LD_PRELOAD", lib.display().to_string()),
                ("INTERPOSER_OUT", out.display().to_string()),
                ("INTERPOSER_MODE", mode.name().into()),
            ]
        }
        Mode::Online { lib, out, platform } => {
            let mut env = vec![
                ("LD_PRELOAD", lib.display().to_string()),
                ("INTERPOSER_OUT", out.display().to_string()),
                ("INTERPOSER_MODE", "online".into()),
                ("INTERPOSER_PLATFORM", platform.display().to_string()),
            ];
            if !matches!(case.timing, Timing::Span) {
                env.push(("INTERPOSER_VIRTUAL_WTIME", "1".into()));
            }
            env
        }
    }
}

/// The value of the last `wall_s=<seconds>` line of `text`, if it is a
/// finite number ≥ 0.
pub fn wall_s(text: &str) -> Option<f64> {
    let v: f64 = text.lines().rev().find_map(|l| l.trim().strip_prefix("wall_s="))?.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Case {
        Case {
            name: "ring".into(),
            program: "/b/ring".into(),
            args: vec!["10".into()],
            ranks: 4,
            hostfile: None,
            mpirun_args: vec!["--map-by".into(), "node".into()],
            timing: Timing::Auto,
            env: vec![("OMP_NUM_THREADS".into(), "1".into())],
            inputs: Vec::new(),
            prepare: Vec::new(),
            timeout: None,
            workdir: false,
            source: Vec::new(),
            smpi_cflags: Vec::new(),
            smpi_cfg: Vec::new(),
            traced_ranks: None,
        }
    }

    #[test]
    fn open_mpi_forwards_the_interposer_environment_with_x() {
        let l = Launcher {
            mpirun: "mpirun".into(),
            open_mpi: true,
            extra_args: vec!["--bind-to".into(), "none".into()],
            hostfile: Some("/h".into()),
            timeout: Duration::from_secs(1),
        };
        let online = Mode::Online { lib: "/l.so".into(), out: "/o".into(), platform: "/p.toml".into() };
        let a = l.args(&case(), &online).join(" ");
        assert_eq!(
            a,
            "--oversubscribe -x LD_PRELOAD -x INTERPOSER_OUT -x INTERPOSER_MODE -x INTERPOSER_PLATFORM -x INTERPOSER_VIRTUAL_WTIME -x OMP_NUM_THREADS -np 4 --hostfile /h --map-by node --bind-to none /b/ring 10"
        );
        let span = Case { timing: Timing::Span, ..case() };
        assert!(!l.args(&span, &online).contains(&"INTERPOSER_VIRTUAL_WTIME".to_string()), "a span-timed case keeps the real clock");
        let hydra = Launcher { open_mpi: false, hostfile: None, extra_args: vec![], ..l };
        assert_eq!(hydra.args(&case(), &Mode::Plain).join(" "), "-np 4 --map-by node /b/ring 10");
    }

    #[test]
    fn a_work_dir_gets_the_inputs_and_what_prepare_writes() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.txt");
        std::fs::write(&input, "data\n").unwrap();
        let mut c = case();
        c.inputs = vec![input];
        c.prepare = ["sh", "-c", "cat in.txt in.txt > made.txt && echo \"$OMP_NUM_THREADS\" > env.txt"].map(String::from).to_vec();
        let work = work_dir(&dir.path().join("plain-0.log"));
        assert_eq!(work, dir.path().join("plain-0.work"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("stale"), "").unwrap();
        prepare_work_dir(&c, &work, Duration::from_secs(30)).unwrap();
        assert_eq!(std::fs::read_to_string(work.join("made.txt")).unwrap(), "data\ndata\n");
        assert_eq!(std::fs::read_to_string(work.join("env.txt")).unwrap(), "1\n", "the case's environment reaches prepare");
        assert!(!work.join("stale").exists(), "every run starts in a fresh directory");
        c.prepare = ["sh", "-c", "exit 3"].map(String::from).to_vec();
        let e = prepare_work_dir(&c, &work, Duration::from_secs(30)).unwrap_err();
        assert!(e.starts_with("prepare command `sh -c exit 3` failed") && e.contains("prepare.log"), "{e}");
        c.inputs = vec![dir.path().join("missing.dat")];
        let e = prepare_work_dir(&c, &work, Duration::from_secs(30)).unwrap_err();
        assert!(e.starts_with(&format!("input {}: ", dir.path().join("missing.dat").display())), "{e}");
    }

    #[test]
    fn a_case_runs_under_mpirun_in_its_work_dir_with_its_environment() {
        let Ok(l) = Launcher::detect(None) else {
            eprintln!("skipped: no MPI launcher");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("seconds.txt");
        std::fs::write(&input, "0.25\n").unwrap();
        let script = "test -f made && echo wall_s=$(cat seconds.txt) && echo rank_env=$VALIDATE_CASE_VAR";
        let mut c = Case {
            name: "sh".into(),
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            ranks: 2,
            hostfile: None,
            mpirun_args: Vec::new(),
            timing: Timing::WallLine,
            env: vec![("VALIDATE_CASE_VAR".into(), "42".into())],
            inputs: vec![input],
            prepare: vec!["touch".into(), "made".into()],
            timeout: Some(Duration::from_secs(60)),
            workdir: false,
            source: Vec::new(),
            smpi_cflags: Vec::new(),
            smpi_cfg: Vec::new(),
            traced_ranks: None,
        };
        let log = dir.path().join("plain-0.log");
        assert_eq!(l.run(&c, &Mode::Plain, &log), Ok(0.25));
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.matches("rank_env=42").count(), 2, "every rank gets the case's environment:\n{text}");
        assert!(work_dir(&log).join("made").is_file());
        c.args = vec!["-c".into(), "sleep 5".into()];
        c.timeout = Some(Duration::from_millis(500));
        let e = l.run(&c, &Mode::Plain, &dir.path().join("plain-1.log")).unwrap_err();
        assert!(e.contains("timed out after 500ms"), "{e}");
    }

    #[test]
    fn the_last_wall_line_counts() {
        assert_eq!(wall_s("x\nwall_s=1.5\nwall_s=2.25\n"), Some(2.25));
        assert_eq!(wall_s("  wall_s=3e-3 \n"), Some(3e-3));
        assert_eq!(wall_s("wall_s=abc\n"), None);
        assert_eq!(wall_s("wall_s=-1\n"), None);
        assert_eq!(wall_s("nothing"), None);
    }
}
