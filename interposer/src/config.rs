//! The interposer's environment: `INTERPOSER_OUT`, `INTERPOSER_MODE`,
//! `INTERPOSER_PLATFORM` (see DESIGN.md, "Interfaces others rely on";
//! `INTERPOSER_MODE` also takes `regions`, [`Mode::Regions`]), and
//! for online mode `INTERPOSER_VIRTUAL_WTIME`, `INTERPOSER_JITTER`,
//! `INTERPOSER_SPEED_RATIOS`, `INTERPOSER_DVFS`, `INTERPOSER_ONLINE_STALL_S`,
//! `INTERPOSER_GHOST_RANKS` and `INTERPOSER_GHOST_TRACES`.

use std::path::PathBuf;

use crate::counters::Counters;

/// What the interposer does in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Record a per-rank trace (default).
    Trace,
    /// Predict the target platform's run time while running, and record
    /// the trace too (see [`crate::online`]).
    Online,
    /// Record nothing but the run's wall time from the end of `MPI_Init`
    /// to the start of `MPI_Finalize`, each after a barrier
    /// ([`crate::span`]).
    Time,
    /// Per call-site region, the count and the summed thread CPU and wall
    /// time of the compute blocks, kept in memory and written at
    /// `MPI_Finalize` as `rank-<r>.regions.json` (no trace): the blocks of
    /// a run whose calls cost only the timer and a table update, to set
    /// against a traced run's (`simulator trace perturbation`). Intercepts
    /// the same calls, and names the same regions, as [`Mode::Trace`];
    /// times blocks as `INTERPOSER_COUNTERS=sw` (or `off`), never with
    /// hardware counters.
    Regions,
}

/// Parsed configuration of a traced run.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Trace directory, created if missing.
    pub out: PathBuf,
    /// Mode.
    pub mode: Mode,
    /// Platform file for online mode.
    pub platform: Option<PathBuf>,
    /// Which clocks time compute blocks (`INTERPOSER_COUNTERS`).
    pub counters: Counters,
    /// Online mode: `MPI_Wtime` returns virtual time
    /// (`INTERPOSER_VIRTUAL_WTIME=1`; default real time).
    pub virtual_wtime: bool,
    /// Online mode: a tracecollector trace (file or directory) whose OS
    /// jitter stretches compute blocks (`INTERPOSER_JITTER`).
    pub jitter: Option<PathBuf>,
    /// Online mode: per-region speed ratios (`INTERPOSER_SPEED_RATIOS`, a
    /// `calibrate speed` CSV, as `simulator replay --speed-ratios`).
    pub speed_ratios: Option<PathBuf>,
    /// Online mode: a DVFS policy, as `simulator replay --dvfs`
    /// (`INTERPOSER_DVFS=wait=K,regions=FILE.csv`); checked against the
    /// platform when online mode starts.
    pub dvfs: Option<String>,
    /// Online mode: seconds a drain of the clock's work may go without
    /// progress before online mode stops predicting
    /// (`INTERPOSER_ONLINE_STALL_S`, default [`DEFAULT_STALL_S`]).
    pub stall_s: f64,
    /// Online mode: the rank count to predict with ghost ranks
    /// (`INTERPOSER_GHOST_RANKS`; see `crate::online` ghost ranks).
    pub ghost_ranks: Option<u32>,
    /// Online mode: traces of the same program at other rank counts that,
    /// with this run's, build the ghost ranks' model
    /// (`INTERPOSER_GHOST_TRACES`, comma-separated directories).
    pub ghost_traces: Vec<PathBuf>,
}

/// Largest `INTERPOSER_GHOST_RANKS` accepted (2^24 ranks).
pub const MAX_GHOST_RANKS: u32 = 1 << 24;

/// Default of `INTERPOSER_ONLINE_STALL_S`, seconds.
pub const DEFAULT_STALL_S: f64 = 5.0;

/// Reads the configuration through `get` (the environment in production).
///
/// Returns the configuration, or `None` when the interposer must stay
/// passive, plus warnings to print once. Never fails: a bad value
/// disables recording and the application runs unchanged.
pub fn from_env(get: impl Fn(&str) -> Option<String>) -> (Option<Config>, Vec<String>) {
    let mut warnings = Vec::new();
    let mode = match get("INTERPOSER_MODE").as_deref().map(str::trim) {
        None | Some("") | Some("trace") => Mode::Trace,
        Some("online") => Mode::Online,
        Some("time") => Mode::Time,
        Some("regions") => Mode::Regions,
        Some("off") => return (None, warnings),
        Some(other) => {
            warnings.push(format!("INTERPOSER_MODE={other:?} is not one of trace|online|time|regions|off; recording disabled"));
            return (None, warnings);
        }
    };
    let out = match get("INTERPOSER_OUT") {
        Some(v) if !v.trim().is_empty() => PathBuf::from(v),
        _ => {
            warnings.push("INTERPOSER_OUT is unset; recording disabled (set it to a trace directory)".into());
            return (None, warnings);
        }
    };
    let platform = get("INTERPOSER_PLATFORM").filter(|p| !p.is_empty()).map(PathBuf::from);
    let counters = match get("INTERPOSER_COUNTERS") {
        None => Counters::Auto,
        Some(v) => Counters::parse(&v).unwrap_or_else(|| {
            warnings.push(format!("INTERPOSER_COUNTERS={v:?} is not one of auto|hw|sw|off; using auto"));
            Counters::Auto
        }),
    };
    // Hardware counters are read at every block end, on the recorder's
    // slow path: regions mode keeps to the TSC and the thread CPU clock.
    let counters = match (mode, counters) {
        (Mode::Regions, Counters::Hw) => {
            warnings.push("INTERPOSER_COUNTERS=hw does not apply to INTERPOSER_MODE=regions; using sw".into());
            Counters::Sw
        }
        (Mode::Regions, Counters::Auto) => Counters::Sw,
        (_, c) => c,
    };
    let mut mode = mode;
    if mode == Mode::Online && platform.is_none() {
        warnings.push("INTERPOSER_MODE=online needs INTERPOSER_PLATFORM=<platform file>; recording a trace only".into());
        mode = Mode::Trace;
    }
    let virtual_wtime = match get("INTERPOSER_VIRTUAL_WTIME").as_deref().map(str::trim) {
        None | Some("") | Some("0") => false,
        Some("1") => true,
        Some(other) => {
            warnings.push(format!("INTERPOSER_VIRTUAL_WTIME={other:?} is not 0 or 1; MPI_Wtime returns real time"));
            false
        }
    };
    let jitter = get("INTERPOSER_JITTER").filter(|p| !p.trim().is_empty()).map(PathBuf::from);
    let speed_ratios = get("INTERPOSER_SPEED_RATIOS").filter(|p| !p.trim().is_empty()).map(PathBuf::from);
    let dvfs = get("INTERPOSER_DVFS").filter(|v| !v.trim().is_empty());
    let stall_s = match get("INTERPOSER_ONLINE_STALL_S") {
        None => DEFAULT_STALL_S,
        Some(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s <= 1e6 => s,
            _ => {
                warnings.push(format!("INTERPOSER_ONLINE_STALL_S={v:?} is not a number of seconds in (0, 1e6]; using {DEFAULT_STALL_S}"));
                DEFAULT_STALL_S
            }
        },
    };
    let ghost_ranks = match get("INTERPOSER_GHOST_RANKS").filter(|v| !v.trim().is_empty()) {
        None => None,
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_GHOST_RANKS).contains(&n) => Some(n),
            _ => {
                warnings.push(format!("INTERPOSER_GHOST_RANKS={v:?} is not a rank count in 1..={MAX_GHOST_RANKS}; no ghost ranks"));
                None
            }
        },
    };
    let ghost_traces = get("INTERPOSER_GHOST_TRACES")
        .map(|v| v.split(',').map(str::trim).filter(|d| !d.is_empty()).map(PathBuf::from).collect())
        .unwrap_or_default();
    if ghost_ranks.is_some() && mode != Mode::Online {
        warnings.push("INTERPOSER_GHOST_RANKS applies to INTERPOSER_MODE=online only; no ghost ranks".into());
    }
    let ghost_ranks = ghost_ranks.filter(|_| mode == Mode::Online);
    let cfg = Config { out, mode, platform, counters, virtual_wtime, jitter, speed_ratios, dvfs, stall_s, ghost_ranks, ghost_traces };
    (Some(cfg), warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn defaults_to_trace_mode() {
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x")]));
        assert_eq!(c.unwrap().mode, Mode::Trace);
        assert!(w.is_empty());
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", " time ")]));
        assert!(c.unwrap().mode == Mode::Time && w.is_empty());
    }

    #[test]
    fn regions_mode_times_blocks_without_hardware_counters() {
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "regions")]));
        let c = c.unwrap();
        assert!(c.mode == Mode::Regions && c.counters == Counters::Sw && w.is_empty(), "{w:?}");
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "regions"), ("INTERPOSER_COUNTERS", "hw")]));
        assert_eq!(c.unwrap().counters, Counters::Sw);
        assert!(w.len() == 1 && w[0].contains("INTERPOSER_COUNTERS=hw"), "{w:?}");
        let (c, _) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "regions"), ("INTERPOSER_COUNTERS", "off")]));
        assert_eq!(c.unwrap().counters, Counters::Off);
    }

    #[test]
    fn bad_or_missing_values_warn_and_disable() {
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "fast")]));
        assert!(c.is_none() && w[0].contains("INTERPOSER_MODE"));
        let (c, w) = from_env(env(&[]));
        assert!(c.is_none() && w[0].contains("INTERPOSER_OUT"));
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "off")]));
        assert!(c.is_none() && w.is_empty());
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_COUNTERS", "lots")]));
        assert_eq!(c.unwrap().counters, Counters::Auto);
        assert!(w[0].contains("INTERPOSER_COUNTERS"));
        for bad in ["0", "-1", "soon", "nan", "inf"] {
            let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_ONLINE_STALL_S", bad)]));
            assert_eq!(c.unwrap().stall_s, DEFAULT_STALL_S, "{bad}");
            assert!(w.len() == 1 && w[0].contains("INTERPOSER_ONLINE_STALL_S"), "{bad}: {w:?}");
        }
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_ONLINE_STALL_S", " 0.5 ")]));
        assert!(c.unwrap().stall_s == 0.5 && w.is_empty(), "{w:?}");
    }

    #[test]
    fn online_without_platform_falls_back_to_tracing() {
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "online")]));
        assert_eq!(c.unwrap().mode, Mode::Trace);
        assert!(w.len() == 1 && w[0].contains("INTERPOSER_PLATFORM"), "{w:?}");
        let vars = [
            ("INTERPOSER_OUT", "/tmp/x"),
            ("INTERPOSER_MODE", "online"),
            ("INTERPOSER_PLATFORM", "p.toml"),
            ("INTERPOSER_VIRTUAL_WTIME", "yes"),
        ];
        let (c, w) = from_env(env(&vars));
        let c = c.unwrap();
        assert_eq!((c.mode, c.virtual_wtime), (Mode::Online, false));
        assert_eq!(c.stall_s, DEFAULT_STALL_S);
        assert!(w[0].contains("INTERPOSER_VIRTUAL_WTIME"), "{w:?}");
    }

    #[test]
    fn ghost_ranks_need_online_mode_and_a_rank_count() {
        let online = [("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_MODE", "online"), ("INTERPOSER_PLATFORM", "p.toml")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v = online.to_vec();
            v.extend_from_slice(extra);
            from_env(env(&v))
        };
        let (c, w) = with(&[("INTERPOSER_GHOST_RANKS", " 64 "), ("INTERPOSER_GHOST_TRACES", "/t/2, /t/8,")]);
        let c = c.unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((c.ghost_ranks, c.ghost_traces), (Some(64), vec![PathBuf::from("/t/2"), PathBuf::from("/t/8")]));
        for bad in ["0", "-3", "many", "99999999999"] {
            let (c, w) = with(&[("INTERPOSER_GHOST_RANKS", bad)]);
            assert!(c.unwrap().ghost_ranks.is_none() && w.len() == 1 && w[0].contains("INTERPOSER_GHOST_RANKS"), "{bad}: {w:?}");
        }
        let (c, w) = from_env(env(&[("INTERPOSER_OUT", "/tmp/x"), ("INTERPOSER_GHOST_RANKS", "64")]));
        assert!(c.unwrap().ghost_ranks.is_none() && w[0].contains("online only"), "{w:?}");
    }
}
