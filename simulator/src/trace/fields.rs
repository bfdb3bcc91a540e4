//! The binary payloads of a format-4 rank file's header and end chunks:
//! tagged fields in place of formats 2 and 3's JSON (about 150 bytes per
//! rank file instead of 570).
//!
//! ```text
//! payload := field*
//! field   := key:varint value             key = number << 2 | wire
//! value   := wire 0: varint | wire 1: f64, 8 bytes little-endian | wire 2: len:varint bytes[len]
//! ```
//! Fields come in any order; a reader skips the numbers it does not know
//! by their wire type, so fields can be added without a new format.
//!
//! | chunk | number: field (wire) |
//! |---|---|
//! | Header | 1 `rank` (0), 2 `ranks` (0), 3 `host` (2), 4 `pid` (0), 5 `timing_source` (0: 0 `clock_gettime`, 1 `wall_only`, 2 `perf_counters`), 6 `tsc_hz` (1, absent: `CLOCK_MONOTONIC`), 7 `epoch_unix_s` (1) |
//! | End | 1 `records`, 2 `failed_calls`, 3 `dropped_records`, 4 `overhead_cpu_ns`, 5 `overhead_wall_ns` (0, absent: 0), 6 `counters` (2, packed text, absent: empty), 7 a module (2, repeated) |
//! | module | 1 `path` (2), 2 `start` (0), 3 `end − start` (0), 4 `file_offset` (0) |
//!
//! Every header field but `tsc_hz` is required. The counters note is
//! packed text: byte `k` in 1..=[`PHRASES`]`.len()` stands for
//! `PHRASES[k − 1]` (the notes the interposer writes, which would
//! otherwise take 130 bytes per rank), 0 escapes the byte after it, any
//! other byte is itself.

use super::{Module, RankFooter, RankHeader, TimingSource};

/// The phrases a packed counters note abbreviates, in code order (code 1
/// first). Append only: codes are part of the format.
pub const PHRASES: [&str; 15] = [
    "sw (hardware counters unavailable: ",
    "hw (cycles, instructions)",
    "no hardware cycle counter (a VM without a virtual PMU?)",
    "forbidden by /proc/sys/kernel/perf_event_paranoid",
    "the kernel has no perf_event",
    "perf_event_open failed",
    " (No such file or directory (os error 2))",
    " (Operation not supported (os error 95))",
    " (Permission denied (os error 13))",
    " (Operation not permitted (os error 1))",
    " (Function not implemented (os error 38))",
    "; wall time from CLOCK_MONOTONIC (",
    "the CPU reports no invariant TSC",
    "the kernel's clocksource is not the TSC",
    "the TSC did not advance",
];

const VARINT: u8 = 0;
const F64: u8 = 1;
const BYTES: u8 = 2;

/// A field's value as read.
enum Value<'a> {
    Int(u64),
    Float(f64),
    Bytes(&'a [u8]),
}

#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn int(&mut self, n: u64, v: u64) {
        self.varint(n << 2 | VARINT as u64);
        self.varint(v);
    }
    /// `int`, left out when `v` is 0.
    fn nonzero(&mut self, n: u64, v: u64) {
        if v != 0 {
            self.int(n, v);
        }
    }
    fn float(&mut self, n: u64, v: f64) {
        self.varint(n << 2 | F64 as u64);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, n: u64, b: &[u8]) {
        self.varint(n << 2 | BYTES as u64);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
}

/// The fields of a payload, in order; `Err` names what is malformed.
fn fields(mut b: &[u8]) -> impl Iterator<Item = Result<(u64, Value<'_>), String>> {
    fn varint(b: &mut &[u8]) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&x, rest) = b.split_first().ok_or("a field cut short")?;
            *b = rest;
            v |= ((x & 0x7f) as u64) << shift;
            if x & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a varint over 64 bits".into())
    }
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let mut one = || -> Result<(u64, Value<'_>), String> {
            let key = varint(&mut b)?;
            let value = match (key & 3) as u8 {
                VARINT => Value::Int(varint(&mut b)?),
                F64 => {
                    let (x, rest) = b.split_first_chunk::<8>().ok_or("a field cut short")?;
                    b = rest;
                    Value::Float(f64::from_le_bytes(*x))
                }
                BYTES => {
                    let n = varint(&mut b)?;
                    let n = usize::try_from(n).ok().filter(|&n| n <= b.len()).ok_or("a field cut short")?;
                    let (x, rest) = b.split_at(n);
                    b = rest;
                    Value::Bytes(x)
                }
                w => return Err(format!("unknown wire type {w} of field {}", key >> 2)),
            };
            Ok((key >> 2, value))
        };
        let r = one();
        if r.is_err() {
            b = &[];
        }
        Some(r)
    })
}

fn text(b: &[u8], what: &str) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
}

fn mismatch(n: u64) -> String {
    format!("field {n} has the wrong wire type")
}

/// Encodes a rank file's header.
pub fn header_bytes(h: &RankHeader) -> Vec<u8> {
    let mut o = Out::default();
    o.int(1, h.rank as u64);
    o.int(2, h.ranks as u64);
    o.bytes(3, h.host.as_bytes());
    o.int(4, h.pid as u64);
    let source = match h.timing_source {
        TimingSource::ClockGettime => 0,
        TimingSource::WallOnly => 1,
        TimingSource::PerfCounters => 2,
    };
    o.int(5, source);
    if let Some(hz) = h.tsc_hz {
        o.float(6, hz);
    }
    o.float(7, h.epoch_unix_s);
    o.0
}

/// Decodes a header payload.
///
/// # Errors
/// A message naming the malformed or missing field.
pub fn parse_header(b: &[u8]) -> Result<RankHeader, crate::error::Invalid> {
    let (mut rank, mut ranks, mut host, mut pid, mut source, mut tsc_hz, mut epoch) = (None, None, None, None, None, None, None);
    for f in fields(b) {
        match f? {
            (1, Value::Int(v)) => rank = Some(v as u32),
            (2, Value::Int(v)) => ranks = Some(v as u32),
            (3, Value::Bytes(v)) => host = Some(text(v, "host")?),
            (4, Value::Int(v)) => pid = Some(v as u32),
            (5, Value::Int(v)) => {
                let s = [TimingSource::ClockGettime, TimingSource::WallOnly, TimingSource::PerfCounters];
                source = Some(*s.get(v as usize).ok_or_else(|| format!("unknown timing source {v}"))?);
            }
            (6, Value::Float(v)) => tsc_hz = Some(v),
            (7, Value::Float(v)) => epoch = Some(v),
            (n @ 1..=7, _) => return Err(mismatch(n).into()),
            _ => {}
        }
    }
    let need = |name: &str| format!("no {name} field");
    Ok(RankHeader {
        rank: rank.ok_or_else(|| need("rank"))?,
        ranks: ranks.ok_or_else(|| need("ranks"))?,
        host: host.ok_or_else(|| need("host"))?,
        pid: pid.ok_or_else(|| need("pid"))?,
        timing_source: source.ok_or_else(|| need("timing_source"))?,
        tsc_hz,
        epoch_unix_s: epoch.ok_or_else(|| need("epoch_unix_s"))?,
    })
}

/// Encodes a rank file's end chunk: `footer`, then `modules`.
pub fn end_bytes(footer: &RankFooter, modules: &[&Module]) -> Vec<u8> {
    let mut o = Out::default();
    o.nonzero(1, footer.records);
    o.nonzero(2, footer.failed_calls);
    o.nonzero(3, footer.dropped_records);
    o.nonzero(4, footer.overhead_cpu_ns);
    o.nonzero(5, footer.overhead_wall_ns);
    if !footer.counters.is_empty() {
        o.bytes(6, &pack(&footer.counters));
    }
    for m in modules {
        let mut e = Out::default();
        e.bytes(1, m.path.as_bytes());
        e.int(2, m.start);
        e.int(3, m.end.wrapping_sub(m.start));
        e.int(4, m.file_offset);
        o.bytes(7, &e.0);
    }
    o.0
}

/// Decodes an end payload into the footer and the module table.
///
/// # Errors
/// A message naming the malformed field.
pub fn parse_end(b: &[u8]) -> Result<(RankFooter, Vec<Module>), crate::error::Invalid> {
    let (mut footer, mut modules) = (RankFooter::default(), Vec::new());
    for f in fields(b) {
        match f? {
            (1, Value::Int(v)) => footer.records = v,
            (2, Value::Int(v)) => footer.failed_calls = v,
            (3, Value::Int(v)) => footer.dropped_records = v,
            (4, Value::Int(v)) => footer.overhead_cpu_ns = v,
            (5, Value::Int(v)) => footer.overhead_wall_ns = v,
            (6, Value::Bytes(v)) => footer.counters = unpack(v)?,
            (7, Value::Bytes(v)) => modules.push(parse_module(v)?),
            (n @ 1..=7, _) => return Err(mismatch(n).into()),
            _ => {}
        }
    }
    Ok((footer, modules))
}

fn parse_module(b: &[u8]) -> Result<Module, String> {
    let (mut path, mut start, mut len, mut file_offset) = (None, 0, 0, 0);
    for f in fields(b) {
        match f? {
            (1, Value::Bytes(v)) => path = Some(text(v, "module path")?),
            (2, Value::Int(v)) => start = v,
            (3, Value::Int(v)) => len = v,
            (4, Value::Int(v)) => file_offset = v,
            (n @ 1..=4, _) => return Err(format!("module {}", mismatch(n))),
            _ => {}
        }
    }
    let path = path.ok_or("a module without a path")?;
    Ok(Module { path, start, end: start.wrapping_add(len), file_offset })
}

/// Packs a counters note: each of [`PHRASES`] becomes its code byte.
pub fn pack(note: &str) -> Vec<u8> {
    let (mut out, mut rest) = (Vec::with_capacity(note.len()), note.as_bytes());
    while let Some(&b) = rest.first() {
        if let Some(k) = PHRASES.iter().position(|p| rest.starts_with(p.as_bytes())) {
            out.push(k as u8 + 1);
            rest = &rest[PHRASES[k].len()..];
            continue;
        }
        if b as usize <= PHRASES.len() {
            out.push(0);
        }
        out.push(b);
        rest = &rest[1..];
    }
    out
}

/// Unpacks a counters note written by [`pack`].
///
/// # Errors
/// When the text is not UTF-8 or ends in an escape.
pub fn unpack(packed: &[u8]) -> Result<String, crate::error::Invalid> {
    let mut out = Vec::with_capacity(packed.len() + 64);
    let mut bytes = packed.iter();
    while let Some(&b) = bytes.next() {
        match b as usize {
            0 => out.push(*bytes.next().ok_or("counters note ends in an escape")?),
            k if k <= PHRASES.len() => out.extend_from_slice(PHRASES[k - 1].as_bytes()),
            _ => out.push(b),
        }
    }
    Ok(text(&out, "counters note")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_end_round_trip_and_unknown_fields_are_skipped() {
        let h = RankHeader {
            rank: 3,
            ranks: 4,
            host: "node-7".into(),
            pid: 31986,
            timing_source: TimingSource::PerfCounters,
            tsc_hz: Some(2_445_405_720.655_546),
            epoch_unix_s: 1_795_488_280.021_252_9,
        };
        let mut b = header_bytes(&h);
        assert_eq!(parse_header(&b), Ok(h.clone()));
        // A later writer's field 9 (bytes) and 10 (varint): skipped.
        b.extend_from_slice(&[9 << 2 | 2, 2, b'h', b'i', 10 << 2, 0x80, 1]);
        assert_eq!(parse_header(&b), Ok(h));
        let footer = RankFooter {
            records: 126,
            failed_calls: 0,
            dropped_records: 2,
            overhead_cpu_ns: 652,
            overhead_wall_ns: 50,
            counters: "sw (hardware counters unavailable: no hardware cycle counter (a VM without a virtual PMU?) (No such file or directory (os error 2)))".into(),
        };
        let m = Module {
            path: "/work/c-tests/build/fortran_calls".into(),
            start: 0x55c6_1000_0000,
            end: 0x55c6_1000_1000,
            file_offset: 0x1000,
        };
        let b = end_bytes(&footer, &[&m]);
        assert!(b.len() < 70, "{} bytes", b.len());
        assert_eq!(parse_end(&b), Ok((footer, vec![m])));
        assert_eq!(parse_end(&[]), Ok((RankFooter::default(), vec![])));
    }

    #[test]
    fn missing_or_mistyped_fields_are_named() {
        let h = RankHeader {
            rank: 0,
            ranks: 1,
            host: String::new(),
            pid: 1,
            timing_source: TimingSource::WallOnly,
            tsc_hz: None,
            epoch_unix_s: 0.0,
        };
        let b = header_bytes(&h);
        assert_eq!(parse_header(&b[2..]), Err("no rank field".into()));
        assert_eq!(parse_header(&[1 << 2 | 1, 0]), Err("a field cut short".into()));
        assert_eq!(parse_end(&[1 << 2 | 2, 0]), Err("field 1 has the wrong wire type".into()));
        assert_eq!(parse_end(&[3]), Err("unknown wire type 3 of field 0".into()));
    }

    #[test]
    fn counters_notes_pack_losslessly() {
        for note in [
            "",
            "off",
            "sw",
            "hw (cycles, instructions)",
            "sw; wall time from CLOCK_MONOTONIC (the TSC did not advance)",
            "odd \u{1} \0 bytes ✓",
        ] {
            let p = pack(note);
            assert_eq!(unpack(&p).as_deref(), Ok(note));
            assert!(p.len() <= note.len() + 2, "{note}");
        }
        assert_eq!(pack("hw (cycles, instructions)"), [2]);
        assert_eq!(unpack(&[b'a', 0]), Err("counters note ends in an escape".into()));
    }
}
