//! The calibration's summary for humans: the fits' pieces and the
//! per-call costs, in microseconds, nanoseconds and GB/s.

use super::{rma, NetworkFit};

impl NetworkFit {
    /// A table of the pieces of every fit, with microseconds and GB/s.
    pub fn summary(&self) -> String {
        let mut out =
            format!("{:<14} {:>21} {:>8} {:>14} {:>11} {:>8}\n", "model", "sizes (B)", "points", "intercept (us)", "bw (GB/s)", "rms err");
        let mut fits = vec![("transfer", &self.transfer), ("send_overhead", &self.send), ("recv_overhead", &self.recv)];
        fits.extend(self.isend.as_ref().map(|f| ("isend", f)));
        fits.extend(self.rma.iter().flat_map(rma::RmaFit::rows));
        for (name, f) in fits {
            for (i, p) in f.pieces.iter().enumerate() {
                let bw = if p.slope_s_per_byte > 0.0 { format!("{:.3}", 1e-9 / p.slope_s_per_byte) } else { "inf".into() };
                out.push_str(&format!(
                    "{:<14} {:>10}..{:<9} {:>8} {:>14.3} {:>11} {:>7.1}%\n",
                    if i == 0 { name } else { "" },
                    p.first_bytes,
                    p.last_bytes,
                    p.points,
                    p.intercept_s * 1e6,
                    bw,
                    p.rms_rel_residual * 100.0
                ));
            }
        }
        out.push_str(&format!("eager_threshold_bytes = {} ({})\n", self.eager_threshold_bytes, self.threshold_note));
        if let (Some(w), Some(p)) = (self.wtime_s, self.iprobe_s) {
            out.push_str(&format!("MPI_Wtime {:.1} ns, MPI_Iprobe {:.1} ns per call\n", w * 1e9, p * 1e9));
        }
        if let (Some(i), Some(w)) = (self.irecv_s, self.wait_s) {
            out.push_str(&format!("MPI_Irecv post {:.1} ns, MPI_Wait on a satisfied request {:.1} ns\n", i * 1e9, w * 1e9));
        }
        if let Some(r) = self.rma_call_s {
            out.push_str(&format!("one-sided call (half a lock, unlock epoch) {:.1} ns\n", r * 1e9));
        }
        out.push_str(&rma::calls_summary(&self.rma_calls));
        match self.host_copy_bytes_per_s {
            Some(c) => out.push_str(&format!("host copy rate shared by concurrent transfers {:.3} GB/s\n", c * 1e-9)),
            None => out.push_str("host copy rate: no sharing seen in the exchange samples\n"),
        }
        out.push_str(&self.pairs_summary());
        out
    }

    /// One line on the `pair` samples: the ratios and the verdict.
    fn pairs_summary(&self) -> String {
        let Some(f) = &self.pairs else {
            return "two transfers into one rank at once: no pair samples (serial_receives assumed at every size)\n".into();
        };
        let range = |r: &[(u64, f64)]| {
            let (lo, hi) = r.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(x.1), hi.max(x.1)));
            format!("{lo:.2}-{hi:.2}x one transfer's time at {}..{} B", r[0].0, r[r.len() - 1].0)
        };
        match f.serial_from_bytes {
            Some(b) => {
                let k = f.ratios.iter().position(|r| r.0 == b).unwrap_or(0);
                let below = if k > 0 { format!("{}, ", range(&f.ratios[..k])) } else { String::new() };
                format!(
                    "two transfers into one rank at once: {below}{}: copied one at a time from {b} B (serial_receives)\n",
                    range(&f.ratios[k..])
                )
            }
            None => format!("two transfers into one rank at once: {}: in parallel\n", range(&f.ratios)),
        }
    }
}
