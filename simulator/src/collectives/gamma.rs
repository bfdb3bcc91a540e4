//! The local cost of combining received data in a reduction: the γ term
//! of Thakur, Rabenseifner & Gropp's α + nβ + nγ (IJHPCA 2005, §2).

use serde::{Deserialize, Serialize};

/// Seconds one reduction step takes on the receiving rank: `intercept_s +
/// bytes × s_per_byte` for a step of at least `min_bytes`, else nothing;
/// charged as local compute when the round whose receive brought the
/// `bytes` completes ([`super::Step::reduce_bytes`]). The default, all
/// zero, times no reduction, as SimGrid's SMPI.
///
/// `calibrate network` sets `min_bytes` to the eager threshold: on shared
/// memory with a single-copy rendezvous (Open MPI's CMA) the receiver's
/// kernel reads the sender's buffer, whose cache lines the sender must
/// then take back to write its partial result (here 1.4 µs beyond the
/// exchange for an 8 KiB step, 0.18 ns/B from 8 KiB to 1 MiB), while an
/// eager step, copied through the sender's own shared-memory fragments,
/// costs too little to measure (64 B-2 KiB within the exchange model's
/// error).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ReduceCost {
    /// Fixed cost per reduction step, seconds (`reduce_intercept_s`).
    pub intercept_s: f64,
    /// Cost per byte combined, seconds per byte (γ, `reduce_s_per_byte`).
    pub s_per_byte: f64,
    /// Smallest step charged, bytes (`reduce_min_bytes`; 0: every step).
    #[serde(default)]
    pub min_bytes: u64,
}

impl ReduceCost {
    /// Seconds to combine `bytes` received bytes; 0 for 0 bytes (no step).
    pub fn eval(&self, bytes: u64) -> f64 {
        if bytes == 0 || bytes < self.min_bytes {
            return 0.0;
        }
        self.intercept_s + bytes as f64 * self.s_per_byte
    }

    /// True when every reduction is free (the default).
    pub fn is_zero(&self) -> bool {
        self.intercept_s == 0.0 && self.s_per_byte == 0.0
    }

    /// Checks that both terms are finite and `>= 0`.
    ///
    /// # Errors
    /// The name of the first bad field (`reduce_intercept_s`, `reduce_s_per_byte`).
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (name, v) in [("reduce_intercept_s", self.intercept_s), ("reduce_s_per_byte", self.s_per_byte)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be finite and >= 0, got {v}").into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_below_min_bytes_cost_nothing() {
        let c = ReduceCost { intercept_s: 1e-7, s_per_byte: 1e-10, min_bytes: 4041 };
        assert_eq!(c.eval(4040), 0.0);
        assert_eq!(c.eval(0), 0.0);
        assert!((c.eval(8192) - (1e-7 + 8192.0 * 1e-10)).abs() < 1e-18);
        assert_eq!(ReduceCost { min_bytes: 0, ..c }.eval(64), 1e-7 + 64.0 * 1e-10);
    }
}
