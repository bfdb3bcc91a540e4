//! The error of the core's small parsers and validators.

/// An invalid value or a malformed field. The message names it: a TOML
/// path (`hosts[0].cores must be >= 1`), a trace field (`no rank field`),
/// or the option value at fault, quoted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    /// The same error with `prefix` put before its message (a path such
    /// as `network.intra.`).
    pub fn within(self, prefix: &str) -> Invalid {
        Invalid(format!("{prefix}{}", self.0))
    }
}

impl From<String> for Invalid {
    fn from(s: String) -> Invalid {
        Invalid(s)
    }
}

impl From<&str> for Invalid {
    fn from(s: &str) -> Invalid {
        Invalid(s.to_string())
    }
}
