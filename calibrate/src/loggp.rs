//! LogGP parameters from parametrized round trips (PRTT), netgauge's
//! method (Hoefler, Lichei & Rehm, "Low-Overhead LogGP Parameter
//! Assessment for Modern Interconnection Networks", IPDPS 2007; LogGP:
//! Alexandrov et al., SPAA '95).
//!
//! `PRTT(n, d, s)`: the client sends `n` messages of `s` bytes, waiting `d`
//! after each but the last, then receives one `s`-byte reply. In LogGP,
//! - `PRTT(1, 0, s) = 2 (o_s + L + o_r + (s − 1) G)`;
//! - `PRTT(n, 0, s) = PRTT(1, 0, s) + (n − 1) · (g + (s − 1) G)` when the
//!   gap dominates the send overhead;
//! - `PRTT(n, d, s) = PRTT(1, 0, s) + (n − 1) · (o_s + d)` when `d`
//!   exceeds the gap.
//!
//! Hence per size `gap(s) = (PRTT(n,0,s) − PRTT(1,0,s)) / (n − 1)`, fitted
//! as `g + (s − 1) G` by least squares; `o_s(s) = (PRTT(n,d,s) −
//! PRTT(1,0,s)) / (n − 1) − d`, whose median over the small sizes is
//! `o_s`; `o_r` is the receive overhead of an arrived message (the `recv`
//! samples); and `L = PRTT(1,0,s_min) / 2 − o_s − o_r`.

use crate::bench::{Op, Sample};
use crate::error::{Error, ErrorKind};
use crate::segmented::median_by_size;
use simulator::network::loggp::LogGps;
use statrs::statistics::{Data, Median};

/// Largest size whose `o_s(s)` enters the median giving `o_s`, bytes.
pub const SMALL_BYTES: u64 = 1024;

/// Fits LogGP from PRTT `samples` (ops `prtt1`, `prttn`, `prttd`, taken
/// with `n` messages and delay `d_s` seconds) and the receive overhead
/// `o_r_s`, seconds (see the module doc). Medians per size make it robust
/// to outliers.
///
/// # Errors
/// [`ErrorKind::Fit`] when fewer than 2 sizes have all three PRTT samples,
/// or `n < 2`.
pub fn fit_loggp(samples: &[Sample], n: u32, d_s: f64, o_r_s: f64) -> Result<LogGps, Error> {
    if n < 2 {
        return Err(Error::new(ErrorKind::Fit, format!("LogGP: PRTT needs n >= 2 messages, got {n}")));
    }
    let med = |op: Op| median_by_size(&samples.iter().filter(|s| s.op == op).map(|s| (s.size_bytes, s.duration_s)).collect::<Vec<_>>());
    let (one, many, delayed) = (med(Op::Prtt1), med(Op::PrttN), med(Op::PrttD));
    let k = (n - 1) as f64;
    // (size, prtt1, gap, o_s) for the sizes with all three.
    let rows: Vec<(u64, f64, f64, f64)> = one
        .iter()
        .filter_map(|&(s, p1)| {
            let pn = many.iter().find(|x| x.0 == s)?.1;
            let pd = delayed.iter().find(|x| x.0 == s)?.1;
            Some((s, p1, (pn - p1) / k, (pd - p1) / k - d_s))
        })
        .collect();
    if rows.len() < 2 {
        return Err(Error::new(
            ErrorKind::Fit,
            format!("LogGP: {} sizes with prtt1, prttn and prttd samples; need at least 2", rows.len()),
        ));
    }
    // Least squares of gap against (s - 1).
    let m = rows.len() as f64;
    let (sx, sy) = rows.iter().fold((0.0, 0.0), |(a, b), r| (a + (r.0 - 1) as f64, b + r.2));
    let (mx, my) = (sx / m, sy / m);
    let (sxy, sxx) = rows.iter().fold((0.0, 0.0), |(a, b), r| {
        let dx = (r.0 - 1) as f64 - mx;
        (a + dx * (r.2 - my), b + dx * dx)
    });
    let big_g = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    let g = (my - big_g * mx).max(0.0);
    let mut small: Vec<f64> = rows.iter().filter(|r| r.0 <= SMALL_BYTES).map(|r| r.3).collect();
    if small.is_empty() {
        small = rows.iter().map(|r| r.3).collect();
    }
    let o_s = Data::new(small).median().max(0.0);
    let first = rows.iter().min_by_key(|r| r.0).map_or(0.0, |r| r.1);
    let latency = (first / 2.0 - o_s - o_r_s).max(0.0);
    // S: the rendezvous threshold is not part of the PRTT fit (the
    // piecewise model's eager threshold gives it, see `calibrate network`).
    Ok(LogGps { L: latency, o_s, o_r: o_r_s, g, G: big_g, S: u64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PRTT samples of an exact LogGP machine, with ±2 % wobble.
    fn synthetic(p: &LogGps, n: u32, d: f64) -> Vec<Sample> {
        let mut out = Vec::new();
        for (i, s) in [1u64, 8, 64, 300, 700, 1000, 2000, 3000].into_iter().enumerate() {
            let x = (s - 1) as f64;
            let p1 = 2.0 * (p.o_s + p.L + p.o_r + x * p.G);
            let k = (n - 1) as f64;
            let pn = p1 + k * (p.g + x * p.G).max(p.o_s);
            let pd = p1 + k * (p.o_s + d).max(p.g + x * p.G);
            for rep in 0..5 {
                let w = 1.0 + 0.02 * (((i + rep) % 5) as f64 - 2.0) / 2.0;
                for (op, y) in [(Op::Prtt1, p1), (Op::PrttN, pn), (Op::PrttD, pd)] {
                    out.push(Sample { op, size_bytes: s, start_s: 0.0, duration_s: y * if rep == 2 { 1.0 } else { w } });
                }
            }
        }
        out
    }

    #[test]
    fn recovers_known_parameters() {
        let truth = LogGps { L: 0.3e-6, o_s: 0.15e-6, o_r: 0.1e-6, g: 0.4e-6, G: 1e-10, S: u64::MAX };
        let got = fit_loggp(&synthetic(&truth, 8, 5e-6), 8, 5e-6, truth.o_r).unwrap();
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 0.02;
        assert!(close(got.L, truth.L) && close(got.o_s, truth.o_s), "{got:?}");
        assert!(close(got.g, truth.g) && close(got.G, truth.G), "{got:?}");
        assert!(got.summary().starts_with("LogGP: L = 0.300 us"), "{}", got.summary());
    }

    #[test]
    fn too_few_sizes_is_an_error() {
        let truth = LogGps { L: 1e-6, o_s: 1e-7, o_r: 1e-7, g: 1e-7, G: 1e-10, S: u64::MAX };
        let one_size: Vec<Sample> = synthetic(&truth, 4, 1e-6).into_iter().filter(|s| s.size_bytes == 1).collect();
        let e = fit_loggp(&one_size, 4, 1e-6, 1e-7).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Fit);
        assert!(e.to_string().contains("1 sizes"), "{e}");
        assert!(fit_loggp(&one_size, 1, 1e-6, 1e-7).is_err());
    }
}
