//! CSV reading shared by the workspace's file readers: the records of an
//! in-memory text, each with the 1-based line it starts on, for errors
//! that name `file:line`.

/// A record of [`records`]: the 1-based line it starts on and its fields.
pub type Line = (u64, csv::StringRecord);

/// An error of [`records`]: the 1-based line when known, and what is
/// wrong, one line.
pub type LineError = (Option<u64>, String);

/// The CSV records of `text` (RFC 4180 quoting, `,` separated, rows of any
/// length, the first row included), skipping blank and whitespace-only
/// lines.
///
/// # Errors
/// Per record: a field that is not UTF-8, or a quoted field spanning
/// lines (an unterminated quote: none of the workspace's files holds a
/// line break inside a field).
pub fn records(text: &str) -> impl Iterator<Item = Result<Line, LineError>> + '_ {
    let rdr = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    // Record positions only grow: the newlines before each are counted
    // from the previous one, so the whole text is scanned once.
    let mut lines = LineCounter::default();
    rdr.into_records().filter_map(move |r| match r {
        Err(e) => {
            let line = e.position().map(|p| lines.line_at(text, p.byte()));
            let what = match e.kind() {
                csv::ErrorKind::Utf8 { err, .. } => format!("field {} is not UTF-8", err.field() + 1),
                _ => e.to_string(),
            };
            Some(Err((line, what)))
        }
        Ok(r) => {
            let line = r.position().map_or(1, |p| lines.line_at(text, p.byte()));
            if r.iter().any(|f| f.contains(['\n', '\r'])) {
                Some(Err((Some(line), "unterminated quoted field (a field spans lines)".into())))
            } else if r.iter().all(|f| f.trim().is_empty()) && r.len() == 1 {
                None
            } else {
                Some(Ok((line, r)))
            }
        }
    })
}

/// Newlines counted up to a byte offset, moved forward as the offsets
/// asked for grow (counted from the start again should one go back).
#[derive(Default)]
struct LineCounter {
    /// Byte offset counted up to.
    at: usize,
    /// Newlines in `text[..at]`.
    newlines: usize,
}

impl LineCounter {
    /// The 1-based line of the first non-blank character at or after byte
    /// `byte` of `text`: the reader's record position may point at the
    /// blank lines it skipped before the record, and so may its line count.
    fn line_at(&mut self, text: &str, byte: u64) -> u64 {
        let start = (byte as usize).min(text.len());
        if start < self.at {
            *self = LineCounter::default();
        }
        let b = text.as_bytes();
        self.newlines += b[self.at..start].iter().filter(|&&c| c == b'\n').count();
        self.at = start;
        let skipped = b[start..].iter().take_while(|&&c| c == b'\n' || c == b'\r').filter(|&&c| c == b'\n').count();
        1 + (self.newlines + skipped) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(u64, Vec<String>)> {
        records(text).map(|r| r.map(|(n, f)| (n, f.iter().map(String::from).collect())).unwrap()).collect()
    }

    #[test]
    fn records_know_their_line_across_blank_lines() {
        let v = lines("h,x\r\n\r\n\"a,\"\"b\",1\n  \n\nc,2\n");
        assert_eq!(v, [(1, vec!["h".into(), "x".into()]), (3, vec!["a,\"b".into(), "1".into()]), (6, vec!["c".into(), "2".into()])]);
        assert_eq!(lines("\n\nh\n").first().map(|l| l.0), Some(3));
    }

    #[test]
    fn an_unterminated_quote_names_its_line() {
        let e: Vec<_> = records("h\n\"a,1\nb,2\n").collect();
        assert_eq!(e[1], Err((Some(2), "unterminated quoted field (a field spans lines)".into())));
    }

    #[test]
    fn lines_are_counted_once_across_many_records() {
        let text: String = (0..100_000).map(|i| if i % 7 == 3 { "\n".to_string() } else { format!("{i},x\n") }).collect();
        let v: Vec<u64> = records(&text).map(|r| r.unwrap().0).collect();
        let want: Vec<u64> = (0..100_000u64).filter(|i| i % 7 != 3).map(|i| i + 1).collect();
        assert_eq!(v, want);
    }
}
