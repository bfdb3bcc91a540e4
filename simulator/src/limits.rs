//! Bounds on the sizes, times and rates read from any input (interposer
//! traces, SimGrid TI traces, platform TOML and XML, jitter traces, CSV
//! tables), so that a corrupt or hostile value is refused where it is read
//! instead of wrapping an integer or ending as an infinite makespan.

use crate::error::Invalid;

/// The largest message or I/O size accepted, bytes: 2^53, the largest
/// integer every `f64` time computation represents exactly (8 PiB).
pub const MAX_BYTES: u64 = 1 << 53;

/// The default bound on a platform's host count (`--max-hosts` on the
/// commands that load a platform): hosts are expanded one by one, so a
/// cluster radical such as `0-999999999999` would otherwise allocate
/// without bound.
pub const MAX_HOSTS: usize = 1 << 20;

/// `v` when it is at most [`MAX_BYTES`].
///
/// # Errors
/// [`Invalid`] naming `what` and the value.
pub fn bytes(what: &str, v: u64) -> Result<u64, Invalid> {
    if v <= MAX_BYTES {
        Ok(v)
    } else {
        Err(Invalid(format!("{what} {v} exceeds the limit of 2^53 bytes")))
    }
}

/// A byte count computed in floating point (a count times a datatype
/// size), rounded to the nearest integer, when finite, `>= 0` and at most
/// [`MAX_BYTES`].
///
/// # Errors
/// [`Invalid`] naming `what` and the value.
pub fn bytes_f64(what: &str, x: f64) -> Result<u64, Invalid> {
    if x.is_finite() && x >= 0.0 && x <= MAX_BYTES as f64 {
        Ok(x.round() as u64)
    } else {
        Err(Invalid(format!("{what} {x} is not a size in 0..=2^53 bytes")))
    }
}

/// `x` when it is a time: finite and `>= 0`, seconds.
///
/// # Errors
/// [`Invalid`] naming `what` and the value.
pub fn seconds(what: &str, x: f64) -> Result<f64, Invalid> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(Invalid(format!("{what} must be a finite time >= 0 s, got {x}")))
    }
}

/// `x` when it is a rate (bytes/s, flop/s, watts): finite and `> 0`.
///
/// # Errors
/// [`Invalid`] naming `what` and the value.
pub fn rate(what: &str, x: f64) -> Result<f64, Invalid> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(Invalid(format!("{what} must be finite and > 0, got {x}")))
    }
}

/// `x` when it is finite, else an error naming `what` as the cause (a
/// makespan, an energy, a sum of times that overflowed).
///
/// # Errors
/// [`Invalid`] saying which result is not finite.
pub fn finite(what: &str, x: f64) -> Result<f64, Invalid> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(Invalid(format!("{what} is {x}: a time, size or rate in the input is too large for the model")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_refuse_what_overflows() {
        assert_eq!(bytes("size", MAX_BYTES), Ok(MAX_BYTES));
        assert!(bytes("size", MAX_BYTES + 1).unwrap_err().0.contains("size"));
        assert_eq!(bytes_f64("size", 7.6), Ok(8));
        for x in [f64::NAN, -1.0, 1e308, f64::INFINITY] {
            assert!(bytes_f64("size", x).is_err(), "{x}");
            assert!(rate("bw", -x.abs()).is_err(), "{x}");
        }
        assert!(seconds("t", f64::INFINITY).is_err());
        assert!(rate("bw", 0.0).unwrap_err().0.starts_with("bw must be"));
        assert!(finite("makespan", f64::INFINITY).unwrap_err().0.starts_with("makespan is inf"));
    }
}
