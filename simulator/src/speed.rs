//! Per-region compute speed ratios, in SimGrid's CSV format.
//!
//! A ratio file scales the recorded time of compute blocks region by
//! region: a block of region `r` lasting `t` seconds in the reference run
//! takes `t × ratio(r)` on the target. It mirrors the file SimGrid reads
//! through `smpi/comp-adjustment-file` (Heinrich et al., IEEE Cluster 2017,
//! §5): a header line `"start-stop","ratio"`, then one line per region,
//! `"<start>:<stop>",<ratio>`, where the key names the call sites before
//! and after the block (`file:line:file:line` once symbolized; before that,
//! the interposer's `module+0xoffset:module+0xoffset`, exactly as
//! [`CallSite`](crate::trace::CallSite)'s `Display` prints it).
//!
//! Lookup is by the region id of [`Action::Compute`](crate::action::Action),
//! the FNV-1a hash [`region_key_id`] of the key string.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::trace::region_key_id;

/// The header line of a ratio file, as SimGrid writes it.
pub const HEADER: &str = "\"start-stop\",\"ratio\"";

/// Error reading or writing a ratio file: one line naming the file and,
/// for a bad row, its 1-based line number.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedError {
    /// The file at fault.
    pub path: PathBuf,
    /// 1-based line number, when one line is at fault.
    pub line: Option<usize>,
    /// What is wrong, one line.
    pub what: String,
}

impl fmt::Display for SpeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.path.display(), self.what),
            None => write!(f, "{}: {}", self.path.display(), self.what),
        }
    }
}

impl std::error::Error for SpeedError {}

/// Per-region speed ratios (dimensionless: target time ÷ reference time),
/// keyed by region key string, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpeedRatios {
    entries: Vec<(String, f64)>,
    by_id: HashMap<u64, usize>,
}

impl SpeedRatios {
    /// No ratios: every region keeps ratio 1.
    pub fn new() -> SpeedRatios {
        SpeedRatios::default()
    }

    /// Sets the ratio of region `key` (e.g. `"app+0x11a0:app+0x11f4"`),
    /// replacing an earlier one.
    ///
    /// # Errors
    /// A message when `ratio` is not finite and positive or `key` is empty
    /// or holds a line break.
    pub fn insert(&mut self, key: &str, ratio: f64) -> Result<(), crate::error::Invalid> {
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(format!("region `{key}`: ratio {ratio} is not a positive finite number").into());
        }
        if key.is_empty() || key.contains(['\n', '\r']) {
            return Err(format!("region `{key}`: a key must be non-empty, without line breaks").into());
        }
        let id = region_key_id(key);
        match self.by_id.get(&id) {
            Some(&i) => self.entries[i].1 = ratio,
            None => {
                self.by_id.insert(id, self.entries.len());
                self.entries.push((key.to_string(), ratio));
            }
        }
        Ok(())
    }

    /// The ratio of the region with id `region` (as in
    /// `Action::Compute { region, .. }`), if the file names it.
    pub fn get(&self, region: u64) -> Option<f64> {
        self.by_id.get(&region).map(|&i| self.entries[i].1)
    }

    /// The ratio of region `region`, or 1 when the file does not name it.
    pub fn ratio(&self, region: u64) -> f64 {
        self.get(region).unwrap_or(1.0)
    }

    /// The ratio of the region keyed `key`, if present.
    pub fn get_key(&self, key: &str) -> Option<f64> {
        self.get(region_key_id(key))
    }

    /// `(key, ratio)` pairs in insertion (file) order.
    pub fn entries(&self) -> &[(String, f64)] {
        &self.entries
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no region has a ratio.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses the text of a ratio file; `path` only names it in errors.
    /// Blank lines are skipped; the key may be quoted (`""` escapes a
    /// quote, a quoted key may hold commas) or bare; spaces around the
    /// ratio are ignored.
    ///
    /// # Errors
    /// [`SpeedError`] naming `path` and the line of a missing or wrong
    /// header, a row without exactly two fields, an unterminated quote, a
    /// ratio that is not a positive finite number, or a key given twice.
    pub fn parse(text: &str, path: &Path) -> Result<SpeedRatios, SpeedError> {
        let bad = |line: u64, what: String| SpeedError { path: path.to_path_buf(), line: Some(line as usize), what };
        let mut rows = crate::csv_text::records(text)
            .map(|r| r.map_err(|(line, what)| SpeedError { path: path.to_path_buf(), line: line.map(|l| l as usize), what }));
        match rows.next().transpose()? {
            Some((_, h)) if h.iter().map(str::trim).eq(["start-stop", "ratio"]) => {}
            Some((n, _)) => return Err(bad(n, format!("expected header `{HEADER}`"))),
            None => {
                return Err(SpeedError { path: path.to_path_buf(), line: None, what: format!("empty file; expected header `{HEADER}`") })
            }
        }
        let mut out = SpeedRatios::new();
        for row in rows {
            let (n, f) = row?;
            if f.len() != 2 {
                return Err(bad(n, format!("expected 2 fields (\"start-stop\",ratio), found {}", f.len())));
            }
            let ratio: f64 = f[1].trim().parse().map_err(|_| bad(n, format!("ratio `{}` is not a number", &f[1])))?;
            if out.get_key(&f[0]).is_some() {
                return Err(bad(n, format!("region `{}` given twice", &f[0])));
            }
            out.insert(&f[0], ratio).map_err(|w| bad(n, w.0))?;
        }
        Ok(out)
    }

    /// Reads the ratio file at `path` (see [`SpeedRatios::parse`]).
    ///
    /// # Errors
    /// [`SpeedError`] naming `path` when it cannot be read or is malformed.
    pub fn load(path: &Path) -> Result<SpeedRatios, SpeedError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpeedError { path: path.to_path_buf(), line: None, what: e.to_string() })?;
        SpeedRatios::parse(&text, path)
    }

    /// The file text: [`HEADER`], then `"<key>",<ratio>` per region in
    /// insertion order (quotes in a key doubled), ratios with enough
    /// digits to round-trip.
    pub fn to_csv(&self) -> String {
        let mut w = csv::WriterBuilder::new().quote_style(csv::QuoteStyle::NonNumeric).from_writer(Vec::new());
        let rows = std::iter::once(["start-stop".to_string(), "ratio".to_string()])
            .chain(self.entries.iter().map(|(key, ratio)| [key.clone(), ratio.to_string()]));
        for row in rows {
            w.write_record(&row).expect("CSV into memory");
        }
        String::from_utf8(w.into_inner().expect("CSV into memory")).expect("CSV of UTF-8 fields")
    }

    /// Writes [`SpeedRatios::to_csv`] to `path`.
    ///
    /// # Errors
    /// [`SpeedError`] naming `path` when it cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), SpeedError> {
        std::fs::write(path, self.to_csv()).map_err(|e| SpeedError { path: path.to_path_buf(), line: None, what: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::region_id;
    use crate::trace::CallSite;

    #[test]
    fn round_trips_and_looks_up_by_region_id() {
        let mut r = SpeedRatios::new();
        r.insert("jacobi2d+0x1234:jacobi2d+0x1280", 2.0).unwrap();
        r.insert("init+0x0:jacobi2d+0x1234", 0.987654321).unwrap();
        let text = r.to_csv();
        assert!(text.starts_with("\"start-stop\",\"ratio\"\n\"jacobi2d+0x1234:jacobi2d+0x1280\",2\n"), "{text}");
        let back = SpeedRatios::parse(&text, Path::new("r.csv")).unwrap();
        assert_eq!(back, r);
        let site = |o| CallSite { module: "jacobi2d".into(), offset: o };
        assert_eq!(back.get(region_id(&site(0x1234), &site(0x1280))), Some(2.0));
        assert_eq!(back.ratio(region_id(&site(0x1280), &site(0x1234))), 1.0);
        assert_eq!(back.get_key("init+0x0:jacobi2d+0x1234"), Some(0.987654321));
    }

    #[test]
    fn reads_simgrid_style_files() {
        let text = "\"start-stop\",\"ratio\"\r\n\"a.c:10:a.c:20\",1.5\r\n\r\nb.c:1:b.c:2, 0.25\n";
        let r = SpeedRatios::parse(text, Path::new("x.csv")).unwrap();
        assert_eq!(r.entries(), &[("a.c:10:a.c:20".to_string(), 1.5), ("b.c:1:b.c:2".to_string(), 0.25)]);
    }

    #[test]
    fn keys_with_commas_and_quotes_round_trip() {
        let mut r = SpeedRatios::new();
        r.insert("my,file.c:12:my \"q\".c:30", 1.25).unwrap();
        r.insert("plain.c:1:plain.c:2", 3.0).unwrap();
        let text = r.to_csv();
        assert_eq!(text, format!("{HEADER}\n\"my,file.c:12:my \"\"q\"\".c:30\",1.25\n\"plain.c:1:plain.c:2\",3\n"));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ratios.csv");
        r.save(&p).unwrap();
        let back = SpeedRatios::load(&p).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.get_key("my,file.c:12:my \"q\".c:30"), Some(1.25));
    }

    #[test]
    fn a_malformed_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ratios.csv");
        std::fs::write(&p, format!("{HEADER}\n\"a.c:1:a.c:2\",1\n\nmy,file.c:1:my,file.c:2,2\n")).unwrap();
        let e = SpeedRatios::load(&p).unwrap_err().to_string();
        assert_eq!(e, format!("{}:4: expected 2 fields (\"start-stop\",ratio), found 4", p.display()));
    }

    #[test]
    fn errors_name_file_and_line() {
        let p = Path::new("ratios.csv");
        let e = |t: &str| SpeedRatios::parse(t, p).unwrap_err().to_string();
        assert_eq!(e(""), "ratios.csv: empty file; expected header `\"start-stop\",\"ratio\"`");
        assert!(e("region,ratio\n").starts_with("ratios.csv:1: expected header"));
        assert_eq!(e("\"start-stop\",\"ratio\"\n\"a:b\",x\n"), "ratios.csv:2: ratio `x` is not a number");
        assert_eq!(e("\"start-stop\",\"ratio\"\n\"a:b\",1\n\"a:b\",2\n"), "ratios.csv:3: region `a:b` given twice");
        assert!(e("\"start-stop\",\"ratio\"\n\"a:b\",-1\n").starts_with("ratios.csv:2: region `a:b`: ratio -1"));
        assert!(e("\"start-stop\",\"ratio\"\n\"a:b\n").starts_with("ratios.csv:2: unterminated"));
        assert!(e("\"start-stop\",\"ratio\"\n\"a:b\",1,2\n").starts_with("ratios.csv:2: expected 2 fields"));
        assert!(!e("\"start-stop\",\"ratio\"\n\"a:b\",inf\n").contains('\n'));
        let missing = SpeedRatios::load(Path::new("/nonexistent/r.csv")).unwrap_err();
        assert!(missing.to_string().starts_with("/nonexistent/r.csv: "), "{missing}");
    }
}
