//! The local cost of combining received data in a reduction: the γ term
//! of Thakur, Rabenseifner & Gropp's α + nβ + nγ (IJHPCA 2005, §2).

use serde::{Deserialize, Serialize};

/// Seconds one reduction step takes on the receiving rank: `intercept_s +
/// bytes × s_per_byte`, charged as local compute when the round whose
/// receive brought the `bytes` completes ([`super::Step::reduce_bytes`]).
/// The default, all zero, times no reduction, as SimGrid's SMPI.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ReduceCost {
    /// Fixed cost per reduction step, seconds (`reduce_intercept_s`).
    pub intercept_s: f64,
    /// Cost per byte combined, seconds per byte (γ, `reduce_s_per_byte`).
    pub s_per_byte: f64,
}

impl ReduceCost {
    /// Seconds to combine `bytes` received bytes; 0 for 0 bytes (no step).
    pub fn eval(&self, bytes: u64) -> f64 {
        if bytes == 0 {
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
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [("reduce_intercept_s", self.intercept_s), ("reduce_s_per_byte", self.s_per_byte)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be finite and >= 0, got {v}"));
            }
        }
        Ok(())
    }
}
