//! interposer
