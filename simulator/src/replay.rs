//! Discrete-event replay of per-rank action streams on a platform.
