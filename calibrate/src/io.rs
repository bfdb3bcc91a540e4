//! The MPI-IO benchmark: our C program `bench/iobench.c`, compiled at run
//! time with the MPI compiler wrapper and launched on `ranks` ranks in a
//! directory of the file system to model; its samples; the fit of the
//! simulator's file-system model ([`simulator::io::FileSystem`]) to them
//! is in [`fit`].
//!
//! Every case runs at every size `reps` times, all in one random (seeded)
//! order, each sample on a file of its own.

pub mod fit;

use std::ffi::OsString;
use std::fmt;
use std::path::Path;

pub use simulator::io::MpiIo;

use crate::bench::{Launcher, SplitMix64};
use crate::error::{Error, ErrorKind};

/// Source of the benchmark, embedded in the binary.
pub const IOBENCH_C: &str = include_str!("../bench/iobench.c");

/// A measured case (semantics in `bench/iobench.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Case {
    /// `MPI_File_write_at` of each rank's block.
    Write,
    /// `MPI_File_write_at` then `MPI_File_sync`.
    WriteSync,
    /// `MPI_File_read_at` of data dropped from the page cache.
    Read,
    /// `MPI_File_write_at_all`.
    WriteAll,
    /// `MPI_File_write_at_all` then `MPI_File_sync`.
    WriteAllSync,
    /// `MPI_File_read_at_all` of data dropped from the page cache.
    ReadAll,
    /// `MPI_File_read_at` of data just written (still in the page cache).
    ReadCached,
    /// 16 writes of a sixteenth of `Write`'s block, timed in a running stream (after 16 untimed ones).
    Write16,
    /// 16 reads of a sixteenth of `Write`'s block from the page cache into one buffer, timed in a
    /// running stream (after 16 untimed ones), of data written before and since out of the CPU's
    /// private caches.
    Read16,
    /// `MPI_File_open` (create) and `MPI_File_close` (size 0).
    OpenClose,
    /// `MPI_File_sync` of an empty file (size 0).
    Sync0,
}

impl Case {
    /// The cases measured at every size (the others at size 0).
    pub const DATA: [Case; 9] = [
        Case::Write,
        Case::WriteSync,
        Case::Read,
        Case::WriteAll,
        Case::WriteAllSync,
        Case::ReadAll,
        Case::ReadCached,
        Case::Write16,
        Case::Read16,
    ];

    /// All cases, in report order: [`Case::DATA`], then those at size 0.
    pub const ALL: [Case; 11] = {
        let mut all = [Case::Sync0; 11];
        let mut i = 0;
        while i < Case::DATA.len() {
            all[i] = Case::DATA[i];
            i += 1;
        }
        all[Case::DATA.len()] = Case::OpenClose;
        all
    };

    /// The name used by the benchmark and in its CSV.
    pub fn name(self) -> &'static str {
        match self {
            Case::Write => "write",
            Case::WriteSync => "write_sync",
            Case::Read => "read",
            Case::WriteAll => "write_all",
            Case::WriteAllSync => "write_all_sync",
            Case::ReadAll => "read_all",
            Case::ReadCached => "read_cached",
            Case::Write16 => "write16",
            Case::Read16 => "read16",
            Case::OpenClose => "openclose",
            Case::Sync0 => "sync0",
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One sample: the longest time any rank spent in the case's calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoSample {
    /// What was measured.
    pub case: Case,
    /// Bytes per rank.
    pub size_bytes: u64,
    /// Duration, seconds.
    pub seconds: f64,
}

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoOptions {
    /// Ranks of the benchmark; default 2.
    pub ranks: u32,
    /// Repetitions of every case and size; default 5.
    pub reps: usize,
    /// Smallest size per rank, bytes; default 4 KiB.
    pub min_bytes: u64,
    /// Largest size per rank, bytes; default 64 MiB.
    pub max_bytes: u64,
    /// Seed of the measurement order; default 1.
    pub seed: u64,
}

impl Default for IoOptions {
    fn default() -> IoOptions {
        IoOptions { ranks: 2, reps: 5, min_bytes: 4096, max_bytes: 64 << 20, seed: 1 }
    }
}

/// Largest size per rank the benchmark accepts, bytes (1 GiB).
pub const MAX_SIZE_BYTES: u64 = 1 << 30;

impl IoOptions {
    /// The sizes: `min_bytes × 4^k` up to `max_bytes`, bytes.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the option unless
    /// `1 <= min_bytes <= max_bytes <= 1 GiB`, `ranks >= 1` and `reps >= 1`.
    pub fn sizes(&self) -> Result<Vec<u64>, Error> {
        let bad = |what: String| Err(Error::new(ErrorKind::InvalidArgument, what));
        if self.min_bytes == 0 || self.min_bytes > self.max_bytes || self.max_bytes > MAX_SIZE_BYTES {
            return bad(format!(
                "--min-bytes {} / --max-bytes {}: need 1 <= min <= max <= {MAX_SIZE_BYTES}",
                self.min_bytes, self.max_bytes
            ));
        }
        if self.ranks == 0 || self.reps == 0 {
            return bad(format!("--ranks {} / --reps {}: both must be >= 1", self.ranks, self.reps));
        }
        Ok(std::iter::successors(Some(self.min_bytes), |&s| Some(s * 4)).take_while(|&s| s <= self.max_bytes).collect())
    }

    /// The measurement order: every data case at every size and the two
    /// metadata cases at size 0, each `reps` times, shuffled (Fisher–Yates
    /// with a SplitMix64 seeded by `seed`).
    ///
    /// # Errors
    /// As [`IoOptions::sizes`].
    pub fn plan(&self) -> Result<Vec<(Case, u64)>, Error> {
        let sizes = self.sizes()?;
        let mut plan: Vec<(Case, u64)> = Case::DATA.iter().flat_map(|&c| sizes.iter().map(move |&s| (c, s))).collect();
        plan.extend([(Case::OpenClose, 0), (Case::Sync0, 0)]);
        let mut plan: Vec<(Case, u64)> = plan.iter().flat_map(|&e| std::iter::repeat_n(e, self.reps)).collect();
        let mut rng = SplitMix64(self.seed ^ 0x0010_BE4C);
        for i in (1..plan.len()).rev() {
            let j = (rng.next_f64() * (i + 1) as f64) as usize;
            plan.swap(i, j.min(i));
        }
        Ok(plan)
    }
}

/// Untimed entries run before the plan (first-use costs of MPI-IO).
const WARMUP: [(Case, u64); 2] = [(Case::OpenClose, 0), (Case::Write, 4096)];

/// What a run of the benchmark measured.
#[derive(Debug, Clone, PartialEq)]
pub struct IoRun {
    /// The samples, in plan order.
    pub samples: Vec<IoSample>,
    /// The first line of the MPI library's `MPI_Get_library_version`.
    pub library: String,
    /// The MPI-IO implementation that ran ([`detect_mpi_io`]).
    pub mpi_io: MpiIo,
}

/// The MPI-IO implementation behind an MPI library: Open MPI from 2.0 on
/// opens files with OMPIO (its `io` component of highest priority),
/// unless `OMPI_MCA_io` (what `mpirun --mca io ...` sets) leaves `ompio`
/// out (`romio321`, `^ompio`);
/// every other library (MPICH, Intel MPI, MVAPICH, Open MPI 1.x) with
/// ROMIO. `library` is `MPI_Get_library_version`'s text, `ompi_mca_io`
/// the variable's value (empty when unset).
pub fn detect_mpi_io(library: &str, ompi_mca_io: &str) -> MpiIo {
    let Some(rest) = library.split("Open MPI v").nth(1) else { return MpiIo::Romio };
    let major: u32 = rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0);
    // An MCA list names the components allowed, or with a leading `^` those excluded.
    let list = ompi_mca_io.trim();
    let names_ompio = list.split(',').any(|c| c.trim().trim_start_matches('^') == "ompio");
    let ompio_allowed = match list.strip_prefix('^') {
        _ if list.is_empty() => true,
        Some(_) => !names_ompio,
        None => names_ompio,
    };
    if major >= 2 && ompio_allowed {
        MpiIo::Ompio
    } else {
        MpiIo::Romio
    }
}

/// Compiles [`IOBENCH_C`] and runs it with `launcher` on `options.ranks`
/// ranks over [`IoOptions::plan`], its files in `dir`; returns the samples
/// and the MPI library that ran.
///
/// # Errors
/// [`ErrorKind::Io`] naming `dir` when it is not a directory;
/// [`ErrorKind::InvalidArgument`] for bad options; the errors of
/// [`Launcher::compile_source`] and [`Launcher::launch`] (an MPI-IO error
/// quotes the benchmark's line naming the case and file);
/// [`ErrorKind::Csv`] for a malformed output.
pub fn measure(launcher: &Launcher, dir: &Path, options: &IoOptions) -> Result<IoRun, Error> {
    if !dir.is_dir() {
        return Err(Error::new(ErrorKind::Io, format!("--dir {}: not a directory", dir.display())));
    }
    let plan = options.plan()?;
    let work = tempfile::tempdir().map_err(|e| Error::io(&std::env::temp_dir(), e))?;
    let exe = launcher.compile_source(work.path(), "iobench", IOBENCH_C)?;
    let (plan_path, csv_path) = (work.path().join("plan.txt"), work.path().join("samples.csv"));
    let lib_path = work.path().join("library.txt");
    let text: String = WARMUP.iter().chain(&plan).map(|(c, s)| format!("{c} {s}\n")).collect();
    std::fs::write(&plan_path, text).map_err(|e| Error::io(&plan_path, e))?;
    let args: Vec<OsString> =
        vec![dir.into(), plan_path.into(), csv_path.clone().into(), WARMUP.len().to_string().into(), lib_path.clone().into()];
    launcher.launch(options.ranks, &exe, &args, &work.path().join("mpirun.log"), "iobench")?;
    let lib = std::fs::read_to_string(&lib_path).map_err(|e| Error::io(&lib_path, e))?;
    let field = |key: &str| lib.lines().find_map(|l| l.strip_prefix(key)).unwrap_or("").trim().to_string();
    let library = field("library=");
    let mpi_io = detect_mpi_io(&library, &field("ompi_mca_io="));
    Ok(IoRun { samples: read_csv(&csv_path)?, library, mpi_io })
}

/// Header line of the benchmark's CSV.
pub const CSV_HEADER: &str = "case,size_bytes,seconds";

/// Parses the benchmark's CSV (header [`CSV_HEADER`]).
///
/// # Errors
/// [`ErrorKind::Io`] when `path` cannot be read; [`ErrorKind::Csv`] naming
/// `path` and the line of a bad header or row.
pub fn read_csv(path: &Path) -> Result<Vec<IoSample>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_csv(&text, path)
}

/// Writes `samples` as the benchmark's CSV (header [`CSV_HEADER`]), so
/// that `calibrate io --from-csv` refits them without measuring.
///
/// # Errors
/// [`ErrorKind::Io`] naming `path` when it cannot be written.
pub fn write_csv(path: &Path, samples: &[IoSample]) -> Result<(), Error> {
    let mut text = format!("{CSV_HEADER}\n");
    for s in samples {
        text += &format!("{},{},{:e}\n", s.case.name(), s.size_bytes, s.seconds);
    }
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// [`read_csv`] of the CSV `text` read from `path`: sizes at most 2^53
/// bytes, times finite and `>= 0`.
///
/// # Errors
/// As [`read_csv`].
pub fn parse_csv(text: &str, path: &Path) -> Result<Vec<IoSample>, Error> {
    crate::bench::parse_rows(text, path, CSV_HEADER, |f, bad| {
        let case = Case::ALL.into_iter().find(|c| c.name() == f[0]).ok_or_else(|| bad(&format!("unknown case `{}`", f[0])))?;
        let size_bytes = crate::bench::size_field(f[1], bad)?;
        let seconds: f64 = f[2].parse().map_err(|_| bad(&format!("bad seconds `{}`", f[2])))?;
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(bad(&format!("seconds `{}` is not a finite number >= 0", f[2])));
        }
        Ok(IoSample { case, size_bytes, seconds })
    })
}

/// The stripe unit for a file system holding `dir`: its preferred I/O
/// block size (`st_blksize` of `dir`, which Linux file systems set to
/// `statvfs`'s `f_bsize`), else 1 MiB; bytes.
pub fn block_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| m.blksize()).filter(|&b| b > 0).unwrap_or(1 << 20)
}

/// The kernel's limit of dirty page-cache data before writers must write
/// back themselves, bytes: `vm.dirty_bytes`, else `vm.dirty_ratio` percent
/// of the available memory; `None` when unreadable.
pub fn dirty_limit_bytes() -> Option<u64> {
    dirty_threshold("dirty_bytes", "dirty_ratio")
}

/// The kernel's amount of dirty page-cache data above which it starts
/// writing back in the background, bytes: `vm.dirty_background_bytes`,
/// else `vm.dirty_background_ratio` percent of the available memory;
/// `None` when unreadable. Below it, written data waits for a sync (or
/// the `vm.dirty_expire_centisecs` age, tens of seconds).
pub fn dirty_background_bytes() -> Option<u64> {
    dirty_threshold("dirty_background_bytes", "dirty_background_ratio")
}

fn dirty_threshold(bytes: &str, ratio: &str) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(format!("/proc/sys/vm/{name}")).ok()?.trim().parse::<u64>().ok();
    match read(bytes) {
        Some(b) if b > 0 => Some(b),
        _ => Some(mem_available_bytes()? / 100 * read(ratio)?),
    }
}

/// The host's available memory (`MemAvailable` of `/proc/meminfo`), bytes:
/// how much written data its page cache can keep for reads; `None` when
/// unreadable.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The blocks a virtual machine hands back to its host when they are
/// free (Linux's free page reporting, `/sys/module/page_reporting`), bytes:
/// `Some` when the kernel says it has reported memory (`reported_kib`, a
/// parameter some hypervisors' guest kernels add), `None` on other
/// machines or when unreadable. Memory reported to the host is taken back
/// by it, and touching it again faults in the host: page-cache writes of
/// a few MiB, whose large folios may come from such blocks, then run many
/// times slower, at random.
pub fn free_page_reporting_bytes() -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(format!("/sys/module/page_reporting/parameters/{name}")).ok();
    page_reporting_block(&read("page_reporting_order")?, &read("reported_kib")?)
}

/// The block of 2^`order` pages of 4 KiB, bytes, when `reported_kib` is
/// above 0 (the two parameters' text as sysfs gives it).
fn page_reporting_block(order: &str, reported_kib: &str) -> Option<u64> {
    let order: u32 = order.trim().parse().ok()?;
    let kib: u64 = reported_kib.trim().parse().ok()?;
    (kib > 0 && order < 32).then(|| 4096u64 << order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_every_case_and_size_reps_times_shuffled() {
        let o = IoOptions { max_bytes: 65536, reps: 2, ..IoOptions::default() };
        assert_eq!(o.sizes().unwrap(), vec![4096, 16384, 65536]);
        let p = o.plan().unwrap();
        assert_eq!(p.len(), (Case::DATA.len() * 3 + 2) * 2);
        assert_eq!(p.iter().filter(|e| **e == (Case::ReadAll, 16384)).count(), 2);
        assert_ne!(
            p,
            o.plan()
                .map(|mut q| {
                    q.sort();
                    q
                })
                .unwrap()
        );
        assert_eq!(p, o.plan().unwrap());
        let e = IoOptions { min_bytes: 8, max_bytes: 4, ..IoOptions::default() }.sizes().unwrap_err();
        assert!(e.to_string().starts_with("--min-bytes 8 / --max-bytes 4"), "{e}");
        assert_eq!(IoOptions { reps: 0, ..IoOptions::default() }.plan().unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn written_samples_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("io.csv");
        let s = vec![
            IoSample { case: Case::Write16, size_bytes: 65536, seconds: 1.234_567_890_123e-5 },
            IoSample { case: Case::OpenClose, size_bytes: 0, seconds: 0.25 },
        ];
        write_csv(&f, &s).unwrap();
        assert_eq!(read_csv(&f).unwrap(), s);
    }

    #[test]
    fn csv_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.csv");
        std::fs::write(&f, format!("{CSV_HEADER}\nwrite,4096,1.5e-5\nread_all,65536,2e-3\n")).unwrap();
        let s = read_csv(&f).unwrap();
        assert_eq!(s[1], IoSample { case: Case::ReadAll, size_bytes: 65536, seconds: 2e-3 });
        std::fs::write(&f, format!("{CSV_HEADER}\nwrite,4096,1.5e-5\nappend,1,1\n")).unwrap();
        assert!(read_csv(&f).unwrap_err().to_string().ends_with("s.csv:3: unknown case `append`"));
        std::fs::write(&f, format!("{CSV_HEADER}\nwrite,4096,-1\n")).unwrap();
        assert!(read_csv(&f).unwrap_err().to_string().contains("s.csv:2: seconds `-1`"));
    }

    #[test]
    fn open_mpi_from_2_0_runs_ompio_unless_romio_is_chosen() {
        let ompi = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
        assert_eq!(detect_mpi_io(ompi, ""), MpiIo::Ompio);
        assert_eq!(detect_mpi_io(ompi, "romio321"), MpiIo::Romio);
        assert_eq!(detect_mpi_io(ompi, "^ompio"), MpiIo::Romio);
        assert_eq!(detect_mpi_io(ompi, "ompio,romio321"), MpiIo::Ompio);
        assert_eq!(detect_mpi_io(ompi, "^romio321"), MpiIo::Ompio);
        assert_eq!(detect_mpi_io("Open MPI v1.10.7, package: Open MPI", ""), MpiIo::Romio);
        assert_eq!(detect_mpi_io("MPICH Version:      4.0", ""), MpiIo::Romio);
        assert_eq!(detect_mpi_io("", ""), MpiIo::Romio);
    }

    #[test]
    fn a_missing_directory_is_refused_before_compiling() {
        let e = measure(&Launcher::from_env(), Path::new("/nonexistent/scratch"), &IoOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "--dir /nonexistent/scratch: not a directory");
    }

    #[test]
    fn free_page_reporting_is_its_block_size_once_memory_was_reported() {
        assert_eq!(page_reporting_block("9\n", "98110344\n"), Some(2 << 20));
        assert_eq!(page_reporting_block("11", "1"), Some(8 << 20));
        assert_eq!(page_reporting_block("9", "0"), None);
        assert_eq!(page_reporting_block("nine", "5"), None);
        assert_eq!(page_reporting_block("9", ""), None);
    }
}
