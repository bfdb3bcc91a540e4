//! The TI line parser, on bytes: fields split on ASCII whitespace (so a
//! `\r` before the newline and trailing blanks are ignored), numbers
//! parsed from the field's bytes without a per-line `String`. Counts of
//! up to 15 digits and plain integers take an exact fast path; anything
//! else goes through the standard library's (correctly rounded) parsers
//! on the field, so results equal `str::parse` on the same text.

use crate::action::Action;
use crate::limits::MAX_BYTES;
use crate::trace::record::PROC_NULL;

use super::{SENDRECV_TAG, TI_PROC_NULL};

/// Splits a line into fields separated by runs of ASCII whitespace
/// (space, tab, `\n`, form feed, `\r`), as `str::split_ascii_whitespace`.
#[derive(Clone)]
pub(super) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(super) fn new(line: &'a [u8]) -> Self {
        Fields { rest: line }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let rest = &self.rest[start..];
        let len = rest.iter().position(u8::is_ascii_whitespace).unwrap_or(rest.len());
        self.rest = &rest[len..];
        Some(&rest[..len])
    }
}

/// The digits of `s` as an integer when `s` is 1 to `max` ASCII digits.
fn digits(s: &[u8], max: usize) -> Option<u64> {
    if s.is_empty() || s.len() > max {
        return None;
    }
    let mut v = 0u64;
    for &d in s {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// `s` parsed as `str::parse::<T>` would, `None` when it is not UTF-8 or
/// does not parse.
fn std_parse<T: std::str::FromStr>(s: &[u8]) -> Option<T> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// A count `>= 0` (finite): at most 15 digits exactly, otherwise any
/// decimal float `str::parse::<f64>` accepts (exponents, fractions).
pub(super) fn count(s: &[u8]) -> Option<f64> {
    // 15 digits are below 2^53: the conversion is exact.
    digits(s, 15).map(|v| v as f64).or_else(|| std_parse::<f64>(s)).filter(|v| v.is_finite() && *v >= 0.0)
}

/// A signed 32-bit integer, as `str::parse::<i32>`.
pub(super) fn int(s: &[u8]) -> Option<i32> {
    let (neg, d) = match s.split_first() {
        Some((b'-', d)) => (true, d),
        _ => (false, s),
    };
    match digits(d, 9) {
        Some(v) if neg => Some(-(v as i32)),
        Some(v) => Some(v as i32),
        None => std_parse(s),
    }
}

/// An unsigned 32-bit integer, as `str::parse::<u32>`.
pub(super) fn uint(s: &[u8]) -> Option<u32> {
    digits(s, 9).map(|v| v as u32).or_else(|| std_parse(s))
}

/// A field for an error message (invalid UTF-8 shown as U+FFFD).
fn show(s: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(s)
}

/// One rank's parsing state: its rank, the default datatype `init` set,
/// and the requests it posted and not yet waited for.
pub struct RankParser {
    rank: u32,
    ranks: u32,
    default_dt: u64,
    /// Pending requests in posting order: (src, dst, tag) key and id.
    reqs: Vec<((i32, i32, i32), u64)>,
    next_req: u64,
    /// The file holds every rank's lines: others' lines are skipped.
    shared: bool,
}

impl RankParser {
    /// The parser of rank `rank` of a trace of `ranks` ranks; `shared`:
    /// the file holds every rank's lines and others' lines are skipped.
    pub fn new(rank: u32, ranks: u32, shared: bool) -> Self {
        RankParser { rank, ranks, default_dt: 1, reqs: Vec::new(), next_req: 1, shared }
    }

    fn post(&mut self, key: (i32, i32, i32)) -> u64 {
        let id = self.next_req;
        self.next_req += 1;
        self.reqs.push((key, id));
        id
    }

    /// Parses one line (its newline removed or not) into zero or more
    /// actions appended to `out` (a `Flops` of 0 is dropped).
    ///
    /// # Errors
    /// What is wrong with the line, one line of text (the caller adds the
    /// file and line number).
    pub fn line(&mut self, line: &[u8], out: &mut Vec<Action>) -> Result<(), String> {
        let mut it = Fields::new(line);
        let Some(rank) = it.next() else { return Ok(()) };
        let me_u = self.rank;
        let r = uint(rank);
        if self.shared && r.is_some_and(|r| r != me_u) {
            return Ok(());
        }
        if r != Some(me_u) {
            return Err(format!("expected rank {me_u} in the first column, found `{}`", show(rank)));
        }
        let verb = it.next().ok_or_else(|| "missing action after the rank".to_string())?;
        // Fields without a heap allocation for the common short lines.
        let mut short: [&[u8]; 16] = [b""; 16];
        let mut nf = 0;
        let mut long: Vec<&[u8]> = Vec::new();
        for x in it {
            if nf < short.len() {
                short[nf] = x;
            } else {
                if long.is_empty() {
                    long.extend_from_slice(&short);
                }
                long.push(x);
            }
            nf += 1;
        }
        let f: &[&[u8]] = if long.is_empty() { &short[..nf] } else { &long };
        let flops_at = |i: usize| -> Result<Action, String> { Ok(Action::Flops { flops: field_count(verb, f, i)? }) };
        let a = match verb {
            b"init" => {
                self.default_dt = if f.is_empty() { 1 } else { 8 };
                Action::Init
            }
            b"finalize" => Action::Finalize,
            b"compute" => Action::Flops { flops: field_count(verb, f, 0)? },
            b"sleep" => Action::Compute { seconds: field_count(verb, f, 0)?, region: 0 },
            b"test" | b"location" | b"comm_size" | b"comm_split" | b"comm_dup" => return Ok(()),
            b"reduce" | b"ireduce" | b"allreduce" | b"iallreduce" | b"scan" | b"exscan" | b"iscan" | b"iexscan" => {
                need(verb, f, 2)?;
                let flops = flops_at(1)?;
                let a = self.action(verb, f)?;
                push(out, a);
                push(out, flops);
                return Ok(());
            }
            b"reducescatter" | b"ireducescatter" => {
                need(verb, f, self.ranks as usize + 1)?;
                let flops = flops_at(self.ranks as usize)?;
                let a = self.action(verb, f)?;
                push(out, a);
                push(out, flops);
                return Ok(());
            }
            _ => self.action(verb, f)?,
        };
        push(out, a);
        Ok(())
    }

    /// The action of a verb other than `init`, `finalize`, `compute`,
    /// `sleep` and the ignored ones (for reductions: without their `Flops`).
    fn action(&mut self, verb: &[u8], f: &[&[u8]]) -> Result<Action, String> {
        let vs = || show(verb);
        let me_u = self.rank;
        let me = me_u as i32;
        let n = self.ranks as usize;
        let default_dt = self.default_dt;
        let num = |i: usize| field_count(verb, f, i);
        let int = |i: usize| -> Result<i32, String> {
            let s = f.get(i).ok_or_else(|| format!("`{}`: missing field {}", vs(), i + 1))?;
            int(s).ok_or_else(|| format!("`{}`: field {} `{}` is not an integer", vs(), i + 1, show(s)))
        };
        let dt = |i: usize| -> Result<u64, String> {
            match f.get(i) {
                None => Ok(default_dt),
                Some(s) => dt_size(s).ok_or_else(|| format!("`{}`: unknown datatype code `{}`", vs(), show(s))),
            }
        };
        let bytes = |count: f64, size: u64| -> Result<u64, String> {
            let x = count * size as f64;
            if x <= MAX_BYTES as f64 {
                Ok(round_bytes(x))
            } else {
                let c = if count < 1e15 { count.to_string() } else { format!("{count:e}") };
                Err(format!("`{}`: {c} × {size} B exceeds the limit of 2^53 bytes", vs()))
            }
        };
        let root = |i: usize| -> Result<u32, String> {
            let r = if f.len() > i { int(i)? } else { 0 };
            u32::try_from(r).ok().filter(|&r| (r as usize) < n).ok_or_else(|| format!("`{}`: root {r} is not among the {n} ranks", vs()))
        };
        let counts = |from: usize, size: u64| -> Result<Vec<u64>, String> { (from..from + n).map(|i| bytes(num(i)?, size)).collect() };
        let peer = |p: i32| if p == TI_PROC_NULL { PROC_NULL } else { p };
        let need = |k: usize| need(verb, f, k);
        let comm = 0;
        Ok(match verb {
            b"send" | b"isend" | b"recv" | b"irecv" => {
                need(3)?;
                let (p, tag, b) = (peer(int(0)?), int(1)?, bytes(num(2)?, dt(3)?)?);
                if p != PROC_NULL && !(0..n as i64).contains(&(p as i64)) {
                    return Err(format!("`{}`: peer {p} is not among the {n} ranks", vs()));
                }
                match verb {
                    b"send" => Action::Send { dst: p as u32, tag, bytes: b, comm },
                    b"recv" => Action::Recv { src: p, tag, bytes: b, comm },
                    b"isend" => {
                        let key = (me, int(0)?, tag);
                        Action::Isend { dst: p as u32, tag, bytes: b, comm, req: self.post(key) }
                    }
                    _ => {
                        let key = (int(0)?, me, tag);
                        Action::Irecv { src: p, tag, bytes: b, comm, req: self.post(key) }
                    }
                }
            }
            b"sendRecv" => {
                need(4)?;
                let sdt = dt(4)?;
                let rdt = if f.len() > 5 { dt(5)? } else { sdt };
                let (dst, src) = (peer(int(1)?), peer(int(3)?));
                Action::Sendrecv {
                    dst: dst as u32,
                    send_tag: SENDRECV_TAG,
                    send_bytes: bytes(num(0)?, sdt)?,
                    src,
                    recv_tag: SENDRECV_TAG,
                    recv_bytes: bytes(num(2)?, rdt)?,
                    comm,
                }
            }
            b"wait" => {
                let pos = if f.is_empty() {
                    self.reqs.len().checked_sub(1)
                } else {
                    need(3)?;
                    let key = (int(0)?, int(1)?, int(2)?);
                    self.reqs.iter().position(|(k, _)| *k == key)
                };
                Action::Wait { req: pos.map(|i| self.reqs.remove(i).1).unwrap_or(0) }
            }
            b"waitAny" | b"waitany" => Action::Wait { req: if self.reqs.is_empty() { 0 } else { self.reqs.remove(0).1 } },
            b"waitall" | b"waitAll" => Action::Waitall { reqs: self.reqs.drain(..).map(|(_, id)| id).collect() },
            b"barrier" | b"ibarrier" => Action::Barrier { comm },
            b"bcast" | b"ibcast" => {
                need(1)?;
                Action::Bcast { root: root(1)?, bytes: bytes(num(0)?, dt(2)?)?, comm }
            }
            b"reduce" | b"ireduce" => Action::Reduce { root: root(2)?, bytes: bytes(num(0)?, dt(3)?)?, comm },
            b"allreduce" | b"iallreduce" => Action::Allreduce { bytes: bytes(num(0)?, dt(2)?)?, comm },
            b"scan" | b"exscan" | b"iscan" | b"iexscan" => {
                Action::Scan { bytes: bytes(num(0)?, dt(2)?)?, exclusive: verb.ends_with(b"exscan"), comm }
            }
            b"alltoall" | b"ialltoall" => {
                need(2)?;
                Action::Alltoall { bytes: bytes(num(0)?, dt(2)?)?, comm }
            }
            b"allgather" | b"iallgather" => {
                need(2)?;
                Action::Allgather { bytes: bytes(num(0)?, dt(2)?)?, comm }
            }
            b"gather" | b"igather" => {
                need(2)?;
                Action::Gather { root: root(2)?, bytes: bytes(num(0)?, dt(3)?)?, comm }
            }
            b"scatter" | b"iscatter" => {
                need(2)?;
                Action::Scatter { root: root(2)?, bytes: bytes(num(0)?, dt(3)?)?, comm }
            }
            b"gatherv" | b"igatherv" => {
                need(1 + n)?;
                // The receive counts are checked, not replayed: the root
                // receives what each rank sends.
                counts(1, 1)?;
                Action::Gather { root: root(1 + n)?, bytes: bytes(num(0)?, dt(2 + n)?)?, comm }
            }
            b"allgatherv" | b"iallgatherv" => {
                need(1 + n)?;
                let size = if f.len() > 2 + n { dt(2 + n)? } else { dt(1 + n)? };
                Action::Allgatherv { recv_bytes: counts(1, size)?, comm }
            }
            b"scatterv" | b"iscatterv" => {
                need(n + 1)?;
                let root = root(n + 1)?;
                let send_bytes = if root == me_u { counts(0, dt(n + 2)?)? } else { Vec::new() };
                Action::Scatterv { root, send_bytes, comm }
            }
            b"alltoallv" | b"ialltoallv" => {
                need(2 * n + 2)?;
                Action::Alltoallv { send_bytes: counts(1, dt(2 * n + 2)?)?, comm }
            }
            b"reducescatter" | b"ireducescatter" => Action::ReduceScatter { recv_bytes: counts(0, dt(n + 1)?)?, comm },
            other => return Err(format!("unknown action `{}`", show(other))),
        })
    }
}

/// `x.round() as u64` for `x >= 0` (or NaN), without a call to libm:
/// `x - ⌊x⌋` is exact, and from 2^64 on the cast saturates as it does.
pub(super) fn round_bytes(x: f64) -> u64 {
    if x.is_nan() || x >= 18_446_744_073_709_551_616.0 {
        return x.round() as u64;
    }
    let t = x as u64;
    if x - t as f64 >= 0.5 {
        t + 1
    } else {
        t
    }
}

/// Appends `a` unless it is a `Flops` of 0 (which costs nothing).
fn push(out: &mut Vec<Action>, a: Action) {
    if !matches!(a, Action::Flops { flops } if flops == 0.0) {
        out.push(a);
    }
}

/// Field `i` of `f` as a [`count`].
fn field_count(verb: &[u8], f: &[&[u8]], i: usize) -> Result<f64, String> {
    let s = f.get(i).ok_or_else(|| format!("`{}`: missing field {}", show(verb), i + 1))?;
    count(s).ok_or_else(|| format!("`{}`: field {} `{}` is not a count >= 0", show(verb), i + 1, show(s)))
}

/// Checks that `f` has at least `k` fields.
fn need(verb: &[u8], f: &[&[u8]], k: usize) -> Result<(), String> {
    if f.len() < k {
        Err(format!("`{}` needs at least {k} fields, found {}", show(verb), f.len()))
    } else {
        Ok(())
    }
}

/// [`super::datatype_size`] of a field's bytes.
pub(super) fn dt_size(code: &[u8]) -> Option<u64> {
    super::datatype_size_of(uint(code)?)
}
