//! calibrate library.
