//! A seeded mutation fuzzer on stable Rust for the readers of untrusted
//! input: the interposer trace's chunks and record decoder, the SimGrid
//! TI parser, the platform TOML, the SimGrid platform XML, the jitter
//! trace and the CSV readers.
//!
//! Each [`Target`] has valid seed inputs; [`run`] derives `count` inputs
//! from them by stacked random mutations (bit flips, interesting bytes,
//! tokens such as `1e308` or `18446744073709551615` inserted or put in
//! place of a range, ranges deleted or repeated, splices of two seeds),
//! in the style of AFL's havoc stage (Zalewski, *american fuzzy lop*
//! technical details, "havoc"), and feeds each to the reader. A reader
//! passes when it returns, error or not, without a panic; the same seed
//! gives the same inputs. Tests run every target for a bounded count;
//! `cargo run --release --example fuzz` runs ten million per target.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

mod targets;

pub use targets::targets;

/// Longest input made, bytes: mutations that would grow past it cut it.
pub const MAX_INPUT: usize = 16 * 1024;

/// One reader under test.
pub struct Target {
    /// Short name (`ti`, `platform-toml`, …).
    pub name: &'static str,
    /// Valid inputs the mutations start from.
    pub seeds: Vec<Vec<u8>>,
    /// Byte strings worth inserting (field values at the edges of their
    /// ranges, keywords, separators).
    pub tokens: &'static [&'static [u8]],
    /// Feeds one input to the reader; `true` when it was accepted.
    pub run: fn(&[u8]) -> bool,
}

/// What [`run`] saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Inputs fed.
    pub inputs: u64,
    /// Inputs the reader accepted (the others were refused with an error).
    pub accepted: u64,
    /// Longest time one input took, seconds.
    pub slowest_s: f64,
    /// Wall time of the whole run, seconds.
    pub elapsed_s: f64,
}

/// A reader that panicked: the input and the panic's message.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The target's name.
    pub target: &'static str,
    /// The input that made it panic.
    pub input: Vec<u8>,
    /// The panic's message.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = String::from_utf8_lossy(&self.input[..self.input.len().min(400)]).into_owned();
        write!(f, "{}: panic `{}` on a {}-byte input: {shown:?}", self.target, self.message, self.input.len())
    }
}

pub use simulator::rng::Rng;

/// Applies 1 to 8 random mutations to `input`, drawing tokens from
/// `tokens` and splices from `seeds`; the result is at most
/// [`MAX_INPUT`] bytes.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, seeds: &[Vec<u8>], tokens: &[&[u8]]) {
    const BYTES: [u8; 10] = [0, 1, 0x7f, 0x80, 0xff, b'0', b'9', b'-', b'\n', b' '];
    for _ in 0..1 + rng.below(8) {
        let len = input.len();
        let at = if len == 0 { 0 } else { rng.below(len + 1) };
        let range = |rng: &mut Rng| -> (usize, usize) {
            if len == 0 {
                return (0, 0);
            }
            let a = rng.below(len);
            (a, (a + 1 + rng.below(32)).min(len))
        };
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = BYTES[rng.below(BYTES.len())];
            }
            2 | 3 if !tokens.is_empty() => {
                let t = tokens[rng.below(tokens.len())];
                input.splice(at..at, t.iter().copied());
            }
            4 if !tokens.is_empty() => {
                let (a, b) = range(rng);
                let t = tokens[rng.below(tokens.len())];
                input.splice(a..b, t.iter().copied());
            }
            5 => {
                let (a, b) = range(rng);
                input.drain(a..b);
            }
            6 => {
                let (a, b) = range(rng);
                let copy = input[a..b].to_vec();
                input.splice(at..at, copy);
            }
            7 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + 1 + rng.below(256)).min(other.len());
                    input.splice(at..at, other[a..b].iter().copied());
                }
            }
            8 if len > 0 => input.truncate(rng.below(len)),
            _ => {}
        }
    }
    input.truncate(MAX_INPUT);
}

/// Feeds `count` mutated inputs (from seed `seed`) to `target`, calling
/// `before(input)` ahead of each (to keep it for a report should the
/// process abort).
///
/// # Errors
/// The first [`Finding`]: an input on which the reader panicked.
pub fn run(target: &Target, seed: u64, count: u64, before: &mut dyn FnMut(&[u8])) -> Result<Stats, Box<Finding>> {
    let mut rng = Rng::new(seed ^ target.name.len() as u64);
    let mut stats = Stats::default();
    let started = Instant::now();
    let mut input = Vec::with_capacity(MAX_INPUT + 1024);
    for i in 0..count {
        input.clear();
        if !target.seeds.is_empty() {
            input.extend_from_slice(&target.seeds[rng.below(target.seeds.len())]);
        }
        // Every 16th input is a seed as it is, to check the seeds read.
        if i % 16 != 0 {
            mutate(&mut rng, &mut input, &target.seeds, target.tokens);
        }
        before(&input);
        let t = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        stats.slowest_s = stats.slowest_s.max(t.elapsed().as_secs_f64());
        stats.inputs += 1;
        match result {
            Ok(accepted) => stats.accepted += accepted as u64,
            Err(p) => {
                let message = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "non-text panic".into());
                return Err(Box::new(Finding { target: target.name, input: input.clone(), message }));
            }
        }
    }
    stats.elapsed_s = started.elapsed().as_secs_f64();
    Ok(stats)
}

#[cfg(test)]
mod tests;
