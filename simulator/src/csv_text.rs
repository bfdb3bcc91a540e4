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
    rdr.into_records().filter_map(move |r| match r {
        Err(e) => {
            let line = e.position().map(|p| line_at(text, p.byte()));
            let what = match e.kind() {
                csv::ErrorKind::Utf8 { err, .. } => format!("field {} is not UTF-8", err.field() + 1),
                _ => e.to_string(),
            };
            Some(Err((line, what)))
        }
        Ok(r) => {
            let line = r.position().map_or(1, |p| line_at(text, p.byte()));
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

/// The 1-based line of the first non-blank character at or after byte
/// `byte` of `text`: the reader's record position may point at the blank
/// lines it skipped before the record, and so may its line count.
fn line_at(text: &str, byte: u64) -> u64 {
    let start = (byte as usize).min(text.len());
    let rest = &text.as_bytes()[start..];
    let skipped = rest.iter().take_while(|&&b| b == b'\n' || b == b'\r').filter(|&&b| b == b'\n').count();
    1 + (text.as_bytes()[..start].iter().filter(|&&b| b == b'\n').count() + skipped) as u64
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
}
