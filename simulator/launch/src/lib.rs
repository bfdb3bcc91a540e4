//! Finding and starting MPI the same way in every tool, test and
//! benchmark: which launcher and compiler wrapper, tried one way after
//! another with every failure reported (as the rsmpi crate's build finds
//! its MPI), the environment a run needs (Open MPI as root, more ranks
//! than cores, a session directory of its own), and waits that end.
//!
//! ```no_run
//! let mpi = mpi_launch::Mpi::find(None)?;
//! let (mut cmd, _session) = mpi.command(4)?;
//! let mut child = cmd.arg("./ring").spawn()?;
//! let status = mpi_launch::wait_bounded(&mut child, std::time::Duration::from_secs(60))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// Which MPI a launcher belongs to, as its `--version` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Open MPI (`mpirun (Open MPI) 4.1.x`, or its OpenRTE runtime).
    OpenMpi,
    /// MPICH's Hydra (`HYDRA build details`).
    Mpich,
    /// Another launcher (Intel MPI, MVAPICH, a site wrapper).
    Other,
}

/// Why no launcher or compiler wrapper could be used: every candidate
/// tried and what went wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// What was looked for ("MPI launcher", "MPI C compiler").
    pub what: &'static str,
    /// Each candidate tried, in order, with its failure.
    pub tried: Vec<(String, String)>,
    /// How a user names one explicitly.
    pub hint: &'static str,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tried: Vec<String> = self.tried.iter().map(|(c, why)| format!("`{c}` ({why})")).collect();
        write!(f, "no {} found: tried {}; {}", self.what, tried.join(", "), self.hint)
    }
}

impl std::error::Error for NotFound {}

/// The candidates for a program named `given`, else by the environment
/// variable `var`, else by each of `names`, without repeats.
fn candidates(given: Option<&str>, var: &str, names: &[&str]) -> Vec<String> {
    if let Some(g) = given {
        return vec![g.to_string()];
    }
    let mut out: Vec<String> = std::env::var(var).ok().filter(|v| !v.is_empty()).into_iter().collect();
    for n in names {
        if !out.iter().any(|c| c == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// The output of `program --version`, or why it gave none.
fn version_of(program: &str) -> Result<String, String> {
    match Command::new(program).arg("--version").stdin(Stdio::null()).output() {
        Err(e) => Err(e.to_string()),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
            if out.status.success() || !text.trim().is_empty() {
                Ok(text)
            } else {
                Err(format!("`--version` exited with {}", out.status))
            }
        }
    }
}

/// An MPI launcher that answered `--version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mpi {
    program: String,
    flavour: Flavour,
    version: String,
}

impl Mpi {
    /// The launcher `given` (`--mpirun`), else `$MPIRUN`, else `mpirun`,
    /// else `mpiexec`: the first that runs `--version`.
    ///
    /// # Errors
    /// [`NotFound`] listing every candidate and its failure.
    pub fn find(given: Option<&str>) -> Result<Mpi, NotFound> {
        let mut tried = Vec::new();
        for c in candidates(given, "MPIRUN", &["mpirun", "mpiexec"]) {
            match version_of(&c) {
                Ok(text) => return Ok(Mpi::with_version(c, &text)),
                Err(why) => tried.push((c, why)),
            }
        }
        Err(NotFound { what: "MPI launcher", tried, hint: "give --mpirun or set $MPIRUN" })
    }

    /// The launcher `program` whose `--version` printed `text`.
    pub fn with_version(program: String, text: &str) -> Mpi {
        let flavour = if text.contains("Open MPI") || text.contains("OpenRTE") {
            Flavour::OpenMpi
        } else if text.contains("HYDRA") || text.contains("MPICH") {
            Flavour::Mpich
        } else {
            Flavour::Other
        };
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        // Hydra prints "HYDRA build details:" first; its version is a later line.
        let version = match text.lines().find(|l| l.trim_start().starts_with("Version:")) {
            Some(v) if first.starts_with("HYDRA") => format!("{first} {}", v.trim()),
            _ => first.to_string(),
        };
        Mpi { program, flavour, version }
    }

    /// The launcher's path or name.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Whose launcher it is.
    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// The first line of its `--version` (with Hydra's `Version:` line
    /// after it, e.g. "HYDRA build details: Version: 4.0.2").
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `<launcher> -np <np>` with what every run needs, and the session
    /// directory to keep while it runs. Open MPI: `--oversubscribe` (more
    /// ranks than cores), `OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1` (root in
    /// containers), and its own `OMPI_MCA_orte_tmpdir_base` (Open MPI 4
    /// runs started at the same moment by one user race on one session
    /// directory). Hydra forwards the whole environment itself.
    ///
    /// # Errors
    /// The operating system's error creating the session directory.
    pub fn command(&self, np: u32) -> std::io::Result<(Command, Session)> {
        let mut cmd = Command::new(&self.program);
        let session = tempfile::Builder::new().prefix("mpi-launch-").tempdir()?;
        if self.flavour == Flavour::OpenMpi {
            cmd.arg("--oversubscribe");
            cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            cmd.env("OMPI_MCA_orte_tmpdir_base", session.path());
        }
        cmd.args(["-np", &np.to_string()]);
        Ok((cmd, Session(session)))
    }

    /// Sets `key=value` in `cmd`'s environment and has the launcher pass
    /// it to the ranks (Open MPI: `-x key`, placed before the program).
    pub fn forward(&self, cmd: &mut Command, key: &str, value: impl AsRef<std::ffi::OsStr>) {
        cmd.env(key, value);
        if self.flavour == Flavour::OpenMpi {
            cmd.args(["-x", key]);
        }
    }

    /// Passes `key=value` to the ranks only, not to the launcher's own
    /// environment (a library to preload into the ranks but not into the
    /// launcher): Open MPI's `-x key=value`, Hydra's `-env key value`;
    /// another launcher gets it in its environment, as [`Mpi::forward`].
    /// Placed before the program, like `forward`.
    pub fn forward_to_ranks(&self, cmd: &mut Command, key: &str, value: impl AsRef<std::ffi::OsStr>) {
        match self.flavour {
            Flavour::OpenMpi => {
                let mut kv = std::ffi::OsString::from(format!("{key}="));
                kv.push(value.as_ref());
                cmd.arg("-x").arg(kv);
            }
            Flavour::Mpich => {
                cmd.args(["-env", key]).arg(value.as_ref());
            }
            Flavour::Other => {
                cmd.env(key, value);
            }
        }
    }
}

/// A run's session directory, removed when dropped.
#[derive(Debug)]
pub struct Session(tempfile::TempDir);

impl Session {
    /// Its path.
    pub fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

/// The MPI C compiler wrapper `given`, else `$MPICC`, else `mpicc`: the
/// first that runs `--version`.
///
/// # Errors
/// [`NotFound`] listing every candidate and its failure.
pub fn find_mpicc(given: Option<&str>) -> Result<String, NotFound> {
    let mut tried = Vec::new();
    for c in candidates(given, "MPICC", &["mpicc"]) {
        match version_of(&c) {
            Ok(_) => return Ok(c),
            Err(why) => tried.push((c, why)),
        }
    }
    Err(NotFound { what: "MPI C compiler", tried, hint: "set $MPICC" })
}

/// Waits for `child` at most `timeout`: its exit status, or `None` after
/// killing and reaping it when it ran longer (a launcher tears its ranks
/// down when killed).
///
/// # Errors
/// The operating system's error from waiting or killing.
pub fn wait_bounded(child: &mut Child, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
    match child.wait_timeout(timeout)? {
        Some(status) => Ok(Some(status)),
        None => {
            child.kill()?;
            child.wait()?;
            Ok(None)
        }
    }
}

/// True when `log`, a failed `mpirun`'s output, is Open MPI 4's report of
/// a rank with PID 0 "exiting improperly": its runtime's race between a
/// rank's exit and the daemon's bookkeeping, which fails a run whose
/// ranks all finalized. Such a run may be made again; a crash names the
/// rank's real PID or a signal instead.
pub fn open_mpi_exit_race(log: &str) -> bool {
    log.contains("with PID 0 on") && log.contains("exiting improperly")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_that_cannot_run_is_named_with_its_failure() {
        let e = Mpi::find(Some("/nonexistent/mpirun")).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("no MPI launcher found: tried `/nonexistent/mpirun` ("), "{text}");
        assert!(text.ends_with("give --mpirun or set $MPIRUN"), "{text}");
        assert_eq!(e.tried.len(), 1);
        let e = find_mpicc(Some("/nonexistent/mpicc")).unwrap_err();
        assert!(e.to_string().contains("no MPI C compiler found: tried `/nonexistent/mpicc`"), "{e}");
    }

    #[test]
    fn without_a_name_every_default_is_tried_once() {
        assert_eq!(candidates(None, "MPI_LAUNCH_TEST_UNSET", &["mpirun", "mpiexec"]), ["mpirun", "mpiexec"]);
        assert_eq!(candidates(Some("x"), "MPI_LAUNCH_TEST_UNSET", &["mpirun"]), ["x"]);
    }

    #[test]
    fn the_flavour_comes_from_the_version_text_and_open_mpi_gets_its_options() {
        let ompi = Mpi::with_version("mpirun".into(), "mpirun (Open MPI) 4.1.6\n\nReport bugs to ...\n");
        assert_eq!((ompi.flavour(), ompi.version()), (Flavour::OpenMpi, "mpirun (Open MPI) 4.1.6"));
        let hydra = Mpi::with_version("mpiexec.hydra".into(), "HYDRA build details:\n    Version: 4.0.2\n");
        assert_eq!((hydra.flavour(), hydra.version()), (Flavour::Mpich, "HYDRA build details: Version: 4.0.2"));
        let (mut cmd, session) = ompi.command(3).unwrap();
        ompi.forward(&mut cmd, "LD_PRELOAD", "lib.so");
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args, ["--oversubscribe", "-np", "3", "-x", "LD_PRELOAD"]);
        let env: Vec<(String, Option<String>)> =
            cmd.get_envs().map(|(k, v)| (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned()))).collect();
        assert!(env.contains(&("OMPI_MCA_orte_tmpdir_base".into(), Some(session.path().display().to_string()))));
        assert!(env.contains(&("OMPI_ALLOW_RUN_AS_ROOT".into(), Some("1".into()))));
        let (mut cmd, _s) = hydra.command(2).unwrap();
        hydra.forward(&mut cmd, "K", "v");
        assert_eq!(cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(), ["-np", "2"]);
    }

    #[test]
    fn what_only_the_ranks_get_stays_out_of_the_launchers_environment() {
        let args = |cmd: &Command| cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>();
        let ompi = Mpi::with_version("mpirun".into(), "mpirun (Open MPI) 4.1.6\n");
        let (mut cmd, _s) = ompi.command(2).unwrap();
        ompi.forward_to_ranks(&mut cmd, "LD_PRELOAD", "lib.so");
        assert_eq!(args(&cmd), ["--oversubscribe", "-np", "2", "-x", "LD_PRELOAD=lib.so"]);
        assert!(cmd.get_envs().all(|(k, _)| k != "LD_PRELOAD"));
        let hydra = Mpi::with_version("mpiexec.hydra".into(), "HYDRA build details:\n    Version: 4.0.2\n");
        let (mut cmd, _s) = hydra.command(2).unwrap();
        hydra.forward_to_ranks(&mut cmd, "LD_PRELOAD", "lib.so");
        assert_eq!(args(&cmd), ["-np", "2", "-env", "LD_PRELOAD", "lib.so"]);
        assert!(cmd.get_envs().all(|(k, _)| k != "LD_PRELOAD"));
    }

    #[test]
    fn a_bounded_wait_kills_what_runs_too_long() {
        let mut child = Command::new("sleep").arg("10").spawn().unwrap();
        let t = std::time::Instant::now();
        assert_eq!(wait_bounded(&mut child, Duration::from_millis(100)).unwrap(), None);
        assert!(t.elapsed() < Duration::from_secs(5));
        let mut child = Command::new("true").spawn().unwrap();
        assert!(wait_bounded(&mut child, Duration::from_secs(10)).unwrap().is_some_and(|s| s.success()));
    }

    #[test]
    fn only_open_mpi_s_pid_0_report_is_its_exit_race() {
        assert!(open_mpi_exit_race("mpirun has exited due to process rank 2 with PID 0 on node x exiting improperly."));
        assert!(!open_mpi_exit_race("process rank 2 with PID 4711 on node x exiting improperly"));
    }
}
