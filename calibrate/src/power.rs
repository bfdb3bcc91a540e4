//! Power model from wattmeter samples: `P = P_static + P_dyn × u` per host
//! and pstate (u = active cores ÷ cores), a quadratic in frequency across
//! pstates, and SimGrid's `wattage_per_state` (Heinrich et al., IEEE
//! Cluster 2017, §4.2, §6.1, Figs. 6 and 9).
//!
//! Input: a CSV with header `timestamp_s,host,pstate_or_frequency_hz,
//! active_cores,watts`, one wattmeter sample per line. A steady segment is
//! a run of consecutive samples (per host, by time) with the same pstate
//! and active cores; as in the paper its first and last
//! [`TRIM`] samples are dropped (transitions), then outliers beyond
//! [`OUTLIER_MADS`] median absolute deviations of the segment's median.
//! The segment's mean is one point of the per-pstate fit.

use std::collections::BTreeMap;
use std::path::Path;

use statrs::statistics::{Data, Median, Statistics};

use crate::error::{Error, ErrorKind};

/// Samples dropped at each end of a steady segment.
pub const TRIM: usize = 2;
/// Outlier cut, in (normal-consistent) median absolute deviations.
pub const OUTLIER_MADS: f64 = 3.0;
/// Header of the input CSV.
pub const CSV_HEADER: &str = "timestamp_s,host,pstate_or_frequency_hz,active_cores,watts";
/// Values of the pstate column at least this large are frequencies in Hz.
pub const MIN_FREQUENCY_HZ: f64 = 1e6;

/// One wattmeter sample.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSample {
    /// Time, seconds.
    pub timestamp_s: f64,
    /// Host name.
    pub host: String,
    /// Pstate index, or frequency in Hz (≥ [`MIN_FREQUENCY_HZ`]).
    pub pstate: f64,
    /// Cores running the load.
    pub active_cores: u32,
    /// Power, watts.
    pub watts: f64,
}

/// Parses a power CSV (header [`CSV_HEADER`]).
///
/// # Errors
/// [`ErrorKind::Io`] naming `path`; [`ErrorKind::Csv`] naming `path` and the
/// line of a wrong header, a missing column or a non-numeric field.
pub fn read_csv(path: &Path) -> Result<Vec<PowerSample>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_csv(&text, path)
}

/// Largest power one host may draw, watts: a reading above is a unit or
/// wattmeter error.
pub const MAX_WATTS: f64 = 1e6;

/// [`read_csv`] of the CSV `text` read from `path`: timestamps finite and
/// `>= 0`, watts in (0, [`MAX_WATTS`]].
///
/// # Errors
/// As [`read_csv`], and an out-of-range value naming its column and line.
pub fn parse_csv(text: &str, path: &Path) -> Result<Vec<PowerSample>, Error> {
    crate::bench::parse_rows(text, path, CSV_HEADER, |f, bad| {
        let num = |k: usize, name: &str| {
            f[k].parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| bad(&format!("{name} `{}` is not a number", f[k])))
        };
        let active = f[3].parse::<u32>().map_err(|_| bad(&format!("active_cores `{}` is not a whole number", f[3])))?;
        let timestamp_s = num(0, "timestamp_s")?;
        if timestamp_s < 0.0 {
            return Err(bad(&format!("timestamp_s `{}` must be >= 0", f[0])));
        }
        let watts = num(4, "watts")?;
        if !(watts > 0.0 && watts <= MAX_WATTS) {
            return Err(bad(&format!("watts `{}` must be > 0 and at most {MAX_WATTS:e}", f[4])));
        }
        Ok(PowerSample { timestamp_s, host: f[1].to_string(), pstate: num(2, "pstate_or_frequency_hz")?, active_cores: active, watts })
    })
}

/// The fit of one host at one pstate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PstateFit {
    /// Pstate index or frequency in Hz, as in the input.
    pub pstate: f64,
    /// `P_static`, watts (the fit at u = 0).
    pub static_w: f64,
    /// `P_dyn`, watts (all cores busy minus idle).
    pub dynamic_w: f64,
    /// Steady segments fitted.
    pub segments: usize,
}

/// The power model of one host.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPower {
    /// Host name.
    pub host: String,
    /// Cores (the most active cores seen).
    pub cores: u32,
    /// Per pstate, in SimGrid pstate order (fastest first for frequencies).
    pub pstates: Vec<PstateFit>,
    /// When the pstates are frequencies: `(static, dynamic)` coefficients
    /// `[c0, c1, c2]` of `c0 + c1 f + c2 f²`, f in GHz, watts.
    pub quadratic: Option<([f64; 3], [f64; 3])>,
    /// The fitted points: `(pstate, u, mean watts)` per steady segment.
    pub points: Vec<(f64, f64, f64)>,
}

impl HostPower {
    /// SimGrid's `wattage_per_state`: `Idle:Epsilon:AllCores` per pstate,
    /// comma-separated, where Epsilon is one core busy.
    pub fn wattage_per_state(&self) -> String {
        let c = self.cores.max(1) as f64;
        self.pstates
            .iter()
            .map(|p| format!("{:.3}:{:.3}:{:.3}", p.static_w, p.static_w + p.dynamic_w / c, p.static_w + p.dynamic_w))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Least squares of `y = a + b x`, or `None` with fewer than 2 distinct x.
fn line(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    let (mx, my) = pts.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0 / n, b + p.1 / n));
    let (sxy, sxx) = pts.iter().fold((0.0, 0.0), |(a, b), p| (a + (p.0 - mx) * (p.1 - my), b + (p.0 - mx).powi(2)));
    (sxx > 0.0).then(|| (my - sxy / sxx * mx, sxy / sxx))
}

/// Least squares of `y = c0 + c1 x + c2 x²` (normal equations, Cramer).
fn quadratic(pts: &[(f64, f64)]) -> Option<[f64; 3]> {
    let mut m = [[0.0f64; 3]; 3];
    let mut v = [0.0f64; 3];
    for &(x, y) in pts {
        let p = [1.0, x, x * x];
        for r in 0..3 {
            v[r] += p[r] * y;
            for c in 0..3 {
                m[r][c] += p[r] * p[c];
            }
        }
    }
    let det = |a: &[[f64; 3]; 3]| {
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
            + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    };
    let d = det(&m);
    if d.abs() < 1e-12 * m[0][0].powi(3).max(1.0) {
        return None;
    }
    let mut out = [0.0; 3];
    for (k, o) in out.iter_mut().enumerate() {
        let mut mk = m;
        for r in 0..3 {
            mk[r][k] = v[r];
        }
        *o = det(&mk) / d;
    }
    Some(out)
}

/// Trimmed, outlier-free mean of one steady segment, or `None` when too
/// short (fewer than `2 × TRIM + 1` samples).
fn segment_mean(watts: &[f64]) -> Option<f64> {
    if watts.len() < 2 * TRIM + 1 {
        return None;
    }
    let kept = &watts[TRIM..watts.len() - TRIM];
    // Medians of even counts are the mean of the two middle values.
    let med = Data::new(kept.to_vec()).median();
    // The median absolute deviation, scaled to estimate a normal's σ.
    let mad = 1.4826 * Data::new(kept.iter().map(|w| (w - med).abs()).collect::<Vec<_>>()).median();
    Some(kept.iter().filter(|&&w| mad == 0.0 || (w - med).abs() <= OUTLIER_MADS * mad).mean())
}

/// Fits every host of `samples` (see the module doc); `name` names the
/// input in errors.
///
/// # Errors
/// [`ErrorKind::Fit`] naming the file and host when a host has a single
/// pstate, or the file and pstate when a pstate has fewer than 2 distinct
/// core counts with a long enough steady segment.
pub fn fit_power(samples: &[PowerSample], name: &Path) -> Result<Vec<HostPower>, Error> {
    let fail = |what: String| Error::new(ErrorKind::Fit, format!("{}: {what}", name.display()));
    let mut by_host: BTreeMap<&str, Vec<&PowerSample>> = BTreeMap::new();
    for s in samples {
        by_host.entry(&s.host).or_default().push(s);
    }
    if by_host.is_empty() {
        return Err(fail("no power samples".into()));
    }
    let mut out = Vec::new();
    for (host, mut rows) in by_host {
        rows.sort_by(|a, b| a.timestamp_s.total_cmp(&b.timestamp_s));
        let cores = rows.iter().map(|r| r.active_cores).max().unwrap_or(1).max(1);
        // Steady segments: (pstate, active cores) → segment means.
        let mut points: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
        let mut start = 0;
        for i in 1..=rows.len() {
            if i == rows.len() || rows[i].pstate != rows[start].pstate || rows[i].active_cores != rows[start].active_cores {
                let watts: Vec<f64> = rows[start..i].iter().map(|r| r.watts).collect();
                if let Some(mean) = segment_mean(&watts) {
                    points.entry(rows[start].pstate.to_bits()).or_default().push((rows[start].active_cores as f64 / cores as f64, mean));
                }
                start = i;
            }
        }
        let distinct: std::collections::BTreeSet<u64> = rows.iter().map(|r| r.pstate.to_bits()).collect();
        if distinct.len() < 2 {
            return Err(fail(format!("host {host}: a single pstate ({}); the frequency fit needs at least 2", rows[0].pstate)));
        }
        let mut pstates = Vec::new();
        for bits in distinct {
            let pstate = f64::from_bits(bits);
            let pts = points.get(&bits).map_or(&[][..], Vec::as_slice);
            let (a, b) = line(pts).ok_or_else(|| {
                fail(format!(
                    "host {host}, pstate {pstate}: {} steady segment(s) of >= {} samples; need 2 distinct core counts",
                    pts.len(),
                    2 * TRIM + 1
                ))
            })?;
            pstates.push(PstateFit { pstate, static_w: a, dynamic_w: b, segments: pts.len() });
        }
        let freq = pstates.iter().all(|p| p.pstate >= MIN_FREQUENCY_HZ);
        if freq {
            pstates.sort_by(|a, b| b.pstate.total_cmp(&a.pstate));
        }
        let quad = |pick: fn(&PstateFit) -> f64| -> Option<[f64; 3]> {
            let pts: Vec<(f64, f64)> = pstates.iter().map(|p| (p.pstate * 1e-9, pick(p))).collect();
            quadratic(&pts).or_else(|| line(&pts).map(|(a, b)| [a, b, 0.0]))
        };
        let quadratic = if freq { quad(|p| p.static_w).zip(quad(|p| p.dynamic_w)) } else { None };
        let points = points.iter().flat_map(|(&bits, v)| v.iter().map(move |&(u, w)| (f64::from_bits(bits), u, w))).collect();
        out.push(HostPower { host: host.to_string(), cores, pstates, quadratic, points });
    }
    Ok(out)
}

/// Our power model as TOML: one `[[hosts]]` table per host with its
/// `wattage_per_state`, `[[hosts.pstates]]` fits and, for frequencies, the
/// quadratic coefficients.
pub fn to_toml(hosts: &[HostPower]) -> String {
    let mut out =
        String::from("# calibrate power: P = static_w + dynamic_w * u, u = active cores / cores (Heinrich et al. 2017, Fig. 6)\n");
    for h in hosts {
        out.push_str(&format!(
            "\n[[hosts]]\nname = \"{}\"\ncores = {}\nwattage_per_state = \"{}\"\n",
            h.host,
            h.cores,
            h.wattage_per_state()
        ));
        if let Some((s, d)) = &h.quadratic {
            out.push_str(&format!("# c0 + c1 f + c2 f^2, f in GHz, watts\nstatic_w_quadratic_ghz = [{:e}, {:e}, {:e}]\ndynamic_w_quadratic_ghz = [{:e}, {:e}, {:e}]\n", s[0], s[1], s[2], d[0], d[1], d[2]));
        }
        for p in &h.pstates {
            out.push_str(&format!(
                "\n[[hosts.pstates]]\npstate = {:e}\nstatic_w = {:e}\ndynamic_w = {:e}\nsegments = {}\n",
                p.pstate, p.static_w, p.dynamic_w, p.segments
            ));
        }
    }
    out
}

/// Where RAPL energy counters are exposed on this machine, if anywhere:
/// `/sys/class/powercap/intel-rapl:*` or perf's `power/energy-pkg/` event.
pub fn rapl_source() -> Option<String> {
    let perf = Path::new("/sys/bus/event_source/devices/power/events/energy-pkg");
    if perf.exists() {
        return Some(perf.display().to_string());
    }
    std::fs::read_dir("/sys/class/powercap")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("intel-rapl")))
        .map(|p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P = static(f) + dyn(f) u with known quadratics, 10 samples per
    /// segment: transients at both ends, ±1 % wobble, one spike.
    fn synthetic() -> (Vec<PowerSample>, [f64; 3], [f64; 3]) {
        let (qs, qd) = ([60.0, 5.0, 2.0], [10.0, 8.0, 6.0]);
        let mut out = Vec::new();
        let mut t = 0.0;
        for f_ghz in [1.2, 1.8, 2.4, 3.0] {
            let (st, dy) = (qs[0] + qs[1] * f_ghz + qs[2] * f_ghz * f_ghz, qd[0] + qd[1] * f_ghz + qd[2] * f_ghz * f_ghz);
            for active in 0..=4u32 {
                for k in 0..10 {
                    let p = st + dy * active as f64 / 4.0;
                    let w = match k {
                        0 | 9 => p * 1.3,
                        1 | 8 => p * 0.8,
                        5 if active == 2 => p * 3.0,
                        _ => p * (1.0 + 0.01 * ((k % 3) as f64 - 1.0)),
                    };
                    out.push(PowerSample { timestamp_s: t, host: "node0".into(), pstate: f_ghz * 1e9, active_cores: active, watts: w });
                    t += 1.0;
                }
            }
        }
        (out, qs, qd)
    }

    #[test]
    fn recovers_known_coefficients_within_2_percent() {
        let (samples, qs, qd) = synthetic();
        let hosts = fit_power(&samples, Path::new("p.csv")).unwrap();
        let h = &hosts[0];
        assert_eq!((h.cores, h.pstates.len()), (4, 4));
        assert_eq!(h.pstates[0].pstate, 3.0e9, "fastest first");
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 0.02;
        for p in &h.pstates {
            let f = p.pstate * 1e-9;
            assert!(close(p.static_w, qs[0] + qs[1] * f + qs[2] * f * f) && close(p.dynamic_w, qd[0] + qd[1] * f + qd[2] * f * f), "{p:?}");
        }
        let (s, d) = h.quadratic.unwrap();
        for k in 0..3 {
            assert!(close(s[k], qs[k]) && close(d[k], qd[k]), "{s:?} {d:?}");
        }
        let w = h.wattage_per_state();
        assert_eq!(w.split(", ").count(), 4);
        assert!(w.split(", ").all(|t| t.split(':').count() == 3), "{w}");
        assert!(to_toml(&hosts).contains("wattage_per_state = \""));
    }

    #[test]
    fn bad_input_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("power.csv");
        let e = |text: &str| {
            std::fs::write(&p, text).unwrap();
            read_csv(&p).unwrap_err().to_string()
        };
        assert!(e("time,watts\n").ends_with("power.csv:1: expected header `timestamp_s,host,pstate_or_frequency_hz,active_cores,watts`"));
        assert!(e(&format!("{CSV_HEADER}\n0,n,1e9,1,50\n1,n,1e9,1\n"))
            .ends_with("power.csv:3: expected 5 columns (timestamp_s,host,pstate_or_frequency_hz,active_cores,watts), found 4"));
        assert!(e(&format!("{CSV_HEADER}\n0,n,1e9,1,high\n")).ends_with("power.csv:2: watts `high` is not a number"));
        assert!(e(&format!("{CSV_HEADER}\n\n0,\"node 1, rack 2\",1e9,1,x\n")).ends_with("power.csv:3: watts `x` is not a number"));
        let one: Vec<PowerSample> = synthetic().0.into_iter().filter(|s| s.pstate == 1.2e9).collect();
        let e = fit_power(&one, Path::new("power.csv")).unwrap_err();
        assert!(e.to_string().starts_with("power.csv: host node0: a single pstate"), "{e}");
        let few: Vec<PowerSample> = synthetic().0.into_iter().filter(|s| s.active_cores == 0).collect();
        let e = fit_power(&few, Path::new("power.csv")).unwrap_err();
        assert!(e.to_string().contains("need 2 distinct core counts") && !e.to_string().contains('\n'), "{e}");
    }
}
