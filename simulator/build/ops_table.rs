//! The reader of `ops.tbl`, the table of the trace format's MPI operations.
//! Shared by the simulator's and the interposer's build scripts (included
//! with `#[path]`), so both read the table the same way.

/// One line of `ops.tbl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpEntry {
    /// On-disk op code.
    pub code: u8,
    /// The Rust variant name, e.g. `CommSplit`.
    pub name: String,
    /// The MPI function, e.g. `MPI_Comm_split`.
    pub mpi: String,
    /// The record shape, a `Shape` variant name.
    pub shape: String,
    /// The call usually waits for another rank.
    pub waits: bool,
    /// Read in old traces only.
    pub legacy: bool,
    /// What the record holds, when the table says more than the MPI name.
    pub doc: Option<String>,
}

/// Parses `ops.tbl`: one op per line, `#` comments and blank lines skipped.
///
/// # Errors
/// A message naming the line when a field is missing or malformed, or a
/// code, name or current MPI name is there twice.
pub fn parse(text: &str) -> Result<Vec<OpEntry>, String> {
    let mut out: Vec<OpEntry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = |why: &str| format!("line {}: {why}", i + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (fields, doc) = match line.split_once(" -- ") {
            Some((f, d)) => (f, Some(d.trim().to_string())),
            None => (line, None),
        };
        let mut w = fields.split_whitespace();
        let (Some(code), Some(name), Some(mpi), Some(shape)) = (w.next(), w.next(), w.next(), w.next()) else {
            return Err(at("expected `<code> <name> <MPI name> <shape> [waits] [legacy]`"));
        };
        let code = code.parse().map_err(|_| at("op code is not a number in 0..=255"))?;
        let (mut waits, mut legacy) = (false, false);
        for flag in w {
            match flag {
                "waits" => waits = true,
                "legacy" => legacy = true,
                other => return Err(at(&format!("unknown flag `{other}`"))),
            }
        }
        let e = OpEntry { code, name: name.into(), mpi: mpi.into(), shape: shape.into(), waits, legacy, doc };
        if let Some(d) = out.iter().find(|o| o.code == e.code || o.name == e.name || (o.mpi == e.mpi && !o.legacy && !e.legacy)) {
            return Err(at(&format!("{} ({}) repeats the code, name or MPI name of {} ({})", e.name, e.code, d.name, d.code)));
        }
        out.push(e);
    }
    Ok(out)
}
