//! LogGP(S) as a point-to-point model: LogGP (Alexandrov et al., "LogGP:
//! incorporating long messages into the LogP model", SPAA '95) with the
//! rendezvous threshold S of LogGOPS (Hoefler et al., "LogGOPSim",
//! HPDC '10, §2), expressed exactly as a [`P2pModel`].
//!
//! For a message of s bytes (writing (s−1)G as 0 for s = 0):
//! - **eager** (s < S): the sender is busy max(o_s, g) (LogP: one message
//!   per max(o, g)); the last byte arrives o_s + L + (s−1)G after the send
//!   starts, and the receive completes o_r later, or o_r after it is posted
//!   if that is later: transfer(s) = o_s + L + (s−1)G + o_r and
//!   recv_overhead = o_r under [`P2pModel`]'s rules.
//! - **rendezvous** (s ≥ S): once both sides have posted, a 0-byte
//!   clear-to-send (o_s + L + o_r) precedes the data; both complete at
//!   max(posts) + 2(o_s + L + o_r) + (s−1)G.
//!
//! In our platform TOML: `[network.inter] loggp = { L = 2e-6, o_s = 1e-6,
//! o_r = 1e-6, g = 1e-6, G = 1e-10, S = 65536 }` in place of the
//! piecewise fields. `calibrate network --model loggp` writes its fitted
//! LogGP this way (as the equivalent piecewise model).

use serde::{Deserialize, Serialize};

use super::{P2pModel, Piecewise, Segment};

/// LogGP(S) parameters; field names are the model's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct LogGps {
    /// `L`: network latency, seconds.
    pub L: f64,
    /// `o` at the sender, seconds.
    pub o_s: f64,
    /// `o` at the receiver, seconds.
    pub o_r: f64,
    /// `g`: gap between consecutive messages of a sender, seconds.
    #[serde(default)]
    pub g: f64,
    /// `G`: gap per byte, seconds per byte (1 / bandwidth).
    pub G: f64,
    /// `S`: messages of at least S bytes use rendezvous, bytes
    /// (mirrors LogGOPSim's `-S`; default: never).
    #[serde(default = "never")]
    pub S: u64,
}

fn never() -> u64 {
    u64::MAX
}

impl LogGps {
    /// One line for humans, in microseconds and GB/s (`S` left out).
    pub fn summary(&self) -> String {
        let bw = if self.G > 0.0 { format!("{:.3} GB/s", 1e-9 / self.G) } else { "inf".into() };
        format!(
            "LogGP: L = {:.3} us, o_s = {:.3} us, o_r = {:.3} us, g = {:.3} us, G = {:.3e} s/B ({bw})",
            self.L * 1e6,
            self.o_s * 1e6,
            self.o_r * 1e6,
            self.g * 1e6,
            self.G
        )
    }

    /// Checks that every parameter is finite and ≥ 0.
    ///
    /// # Errors
    /// A message naming the first bad parameter.
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (k, v) in [("L", self.L), ("o_s", self.o_s), ("o_r", self.o_r), ("g", self.g), ("G", self.G)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("loggp.{k} must be finite and >= 0, got {v}").into());
            }
        }
        Ok(())
    }

    /// The equivalent [`P2pModel`] (semantics in the module docs).
    pub fn to_p2p(&self) -> P2pModel {
        let bw = if self.G > 0.0 { 1.0 / self.G } else { f64::INFINITY };
        let one = self.o_s + self.L + self.o_r;
        let g = if self.G > 0.0 { self.G } else { 0.0 };
        let mut segments = Vec::new();
        let mut push = |max_bytes: Option<u64>, intercept_s: f64, per_byte: bool| {
            segments.push(Segment { max_bytes, intercept_s, bandwidth_bytes_per_s: if per_byte { bw } else { f64::INFINITY } })
        };
        // 0 bytes: no (s−1)G term; then eager up to S; then rendezvous.
        match self.S {
            0 => push(Some(1), 2.0 * one, false),
            _ => push(Some(1), one, false),
        }
        if self.S > 1 {
            push((self.S != u64::MAX).then_some(self.S), one - g, true);
        }
        if self.S != u64::MAX {
            push(None, 2.0 * one - g, true);
        }
        let flat = |v: f64| Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: v, bandwidth_bytes_per_s: f64::INFINITY }] };
        P2pModel {
            eager_threshold_bytes: self.S,
            transfer: Piecewise { segments },
            send_overhead: flat(self.o_s.max(self.g)),
            recv_overhead: flat(self.o_r),
            rma: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loggps_times_by_hand() {
        let m = LogGps { L: 5e-6, o_s: 1e-6, o_r: 2e-6, g: 3e-6, G: 1e-9, S: 4096 }.to_p2p();
        assert!(m.validate().is_ok(), "{:?}", m.validate());
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-15, "{a} != {b}");
        close(m.transfer.eval(0), 8e-6);
        close(m.transfer.eval(1), 8e-6);
        close(m.transfer.eval(1001), 8e-6 + 1000.0 * 1e-9);
        close(m.transfer.eval(4095), 8e-6 + 4094.0 * 1e-9);
        // Rendezvous from S on: a clear-to-send, then the data.
        close(m.transfer.eval(4096), 16e-6 + 4095.0 * 1e-9);
        assert!(m.is_eager(4095) && !m.is_eager(4096));
        close(m.send_overhead.eval(10), 3e-6);
        close(m.recv_overhead.eval(10), 2e-6);
        let never = LogGps { S: u64::MAX, ..LogGps { L: 1.0, o_s: 0.0, o_r: 0.0, g: 0.0, G: 1.0, S: 0 } }.to_p2p();
        close(never.transfer.eval(1 << 40), 1.0 + ((1u64 << 40) - 1) as f64);
        let all = LogGps { L: 1.0, o_s: 0.0, o_r: 0.0, g: 0.0, G: 1.0, S: 0 }.to_p2p();
        close(all.transfer.eval(0), 2.0);
        close(all.transfer.eval(3), 4.0);
        assert!(!all.is_eager(0));
    }
}
