//! `calibrate io`: measures MPI-IO in a directory and writes the fitted
//! `[[fs]]` table into a platform.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use calibrate::bench::Launcher;
use calibrate::plot;
use clap::Args;

use crate::sibling_txt;

#[derive(Args)]
pub(crate) struct IoArgs {
    /// Scratch directory on the file system to model (files are created
    /// and deleted there). Not needed with --from-csv.
    #[arg(long, required_unless_present = "from_csv")]
    dir: Option<PathBuf>,
    /// Platform TOML to update (it must exist).
    #[arg(long)]
    out: PathBuf,
    /// Write an SVG of measured and modelled times (<DIR>/io.svg).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Ranks of the benchmark (on this host).
    #[arg(long, default_value_t = 2)]
    ranks: u32,
    /// Repetitions of every case and size (the fit takes each one's median:
    /// of 5, a page cache's slow moments must be 3 to move it).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Smallest size per rank, bytes (then ×4 up to --max-bytes).
    #[arg(long, default_value_t = 4096)]
    min_bytes: u64,
    /// Largest size per rank, bytes.
    #[arg(long, default_value_t = 64 << 20)]
    max_bytes: u64,
    /// Seed of the measurement order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Name of the file system in the platform (default: the directory's name).
    #[arg(long)]
    name: Option<String>,
    /// Extra launcher argument, before the program (repeatable).
    #[arg(long = "mpirun-arg", allow_hyphen_values = true, value_name = "ARG")]
    mpirun_args: Vec<String>,
    /// Kill the benchmark after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// The MPI-IO implementation written as the file system's `mpi_io`
    /// (whose collective algorithm the simulator follows): romio or
    /// ompio. Default: detected from the library the benchmark ran (Open
    /// MPI from 2.0 on runs ompio unless `--mca io` leaves it out; other
    /// libraries run romio).
    #[arg(long, value_name = "romio|ompio")]
    mpi_io: Option<simulator::io::MpiIo>,
    /// Keep the samples: write them to this CSV (`case,size_bytes,seconds`),
    /// and the MPI library that ran to <stem>.library.txt beside it.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Measure nothing: refit the samples of an earlier --csv file (its
    /// <stem>.library.txt, if any, gives the MPI library; the kernel's
    /// dirty-page limits and available memory are this host's; give
    /// the --ranks it was measured on).
    #[arg(long, value_name = "FILE", conflicts_with = "dir")]
    from_csv: Option<PathBuf>,
}

/// `calibrate io`.
pub(crate) fn run(a: IoArgs) -> anyhow::Result<()> {
    use calibrate::io::{self, fit};
    let started = Instant::now();
    if let Some(dir) = a.dir.as_ref().filter(|d| !d.is_dir()) {
        anyhow::bail!("--dir {}: not a directory", dir.display());
    }
    if !a.out.exists() {
        anyhow::bail!("--out {}: no such platform; run `calibrate network --out {}` first", a.out.display(), a.out.display());
    }
    let mut platform = simulator::platform::Platform::load(&a.out).map_err(|e| anyhow::anyhow!("--out {e}"))?;
    // Refuse an unwritable platform before measuring.
    std::fs::OpenOptions::new().append(true).open(&a.out).map_err(|e| anyhow::anyhow!("--out {}: not writable ({e})", a.out.display()))?;
    let run = match (&a.from_csv, &a.dir) {
        (Some(csv), _) => {
            let library = std::fs::read_to_string(sibling_txt(csv, "library")).unwrap_or_default().trim().to_string();
            let mpi_io = io::detect_mpi_io(&library, "");
            io::IoRun { samples: io::read_csv(csv).map_err(|e| anyhow::anyhow!("--from-csv {e}"))?, library, mpi_io }
        }
        (None, Some(dir)) => {
            let options = io::IoOptions { ranks: a.ranks, reps: a.reps, min_bytes: a.min_bytes, max_bytes: a.max_bytes, seed: a.seed };
            options.sizes()?;
            let launcher = Launcher { mpirun_args: a.mpirun_args, timeout: Duration::from_secs(a.timeout_s), ..Launcher::from_env() };
            if let Some(block) = io::free_page_reporting_bytes() {
                eprintln!(
                    "calibrate io: warning: this machine hands the memory it frees back to its host in blocks of {} KiB (free page reporting): page-cache writes into such memory run many times slower while its first touches fault in the host, at random and for whole runs at a time; the fit follows the medians of the samples",
                    block >> 10
                );
            }
            io::measure(&launcher, dir, &options).map_err(|e| anyhow::anyhow!("calibrate io: {e}"))?
        }
        (None, None) => anyhow::bail!("--dir or --from-csv is required"),
    };
    if let Some(csv) = &a.csv {
        io::write_csv(csv, &run.samples)?;
        let lib = sibling_txt(csv, "library");
        std::fs::write(&lib, format!("{}\n", run.library)).with_context(|| format!("{}", lib.display()))?;
    }
    let samples = run.samples;
    let mpi_io = a.mpi_io.unwrap_or(run.mpi_io);
    eprintln!(
        "calibrate io: MPI library `{}`: collective I/O modelled as {} ({})",
        run.library,
        mpi_io.name(),
        if a.mpi_io.is_some() { "--mpi-io" } else { "detected" }
    );
    let name = a.name.unwrap_or_else(|| {
        a.dir
            .as_ref()
            .and_then(|d| d.canonicalize().ok())
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "fs".into())
    });
    let block = a.dir.as_deref().map_or(4096, io::block_size);
    let intra = platform.network.intra.clone();
    let exchange = |b: u64| intra.transfer.eval(b);
    let mut f = fit::fit_io(&samples, a.ranks, &name, block, mpi_io, &exchange).map_err(|e| anyhow::anyhow!("calibrate io: {e}"))?;
    if let Some(w) = &f.cache_warning {
        // The page cache holds what was written (clean once written back)
        // as far as the host's available memory goes, and takes writes
        // until the kernel's dirty limit.
        f.fs.disk.read_cache_bytes = io::mem_available_bytes();
        let dirty = io::dirty_limit_bytes().filter(|&d| d > f.fs.disk.cache_bytes);
        if let Some(d) = dirty {
            f.fs.disk.cache_bytes = d;
        }
        // Below the background threshold the kernel leaves written data
        // in the cache until a sync.
        f.fs.disk.drain_after_bytes = io::dirty_background_bytes().unwrap_or(0).min(f.fs.disk.cache_bytes);
        let held =
            f.fs.disk
                .read_cache_bytes
                .map_or(String::new(), |b| format!("; reads of the last {b} bytes written skip the disk (MemAvailable)"));
        let dirty = dirty.map_or(String::new(), |d| {
            format!(
                "; the write-back cache is the kernel's dirty limit, {d} bytes, written back from {} bytes or at a sync",
                f.fs.disk.drain_after_bytes
            )
        });
        eprintln!("calibrate io: warning: {w}{held}{dirty}");
        // The residuals of the file system as written.
        f.update_residuals(&exchange);
    }
    platform.fs.retain(|fs| fs.name != name);
    platform.fs.insert(0, f.fs.clone());
    platform.validate().map_err(|e| anyhow::anyhow!("{}: {}", a.out.display(), e.0))?;
    platform.save(&a.out)?;
    if let Some(dir) = &a.plot {
        let svg = plot::io_svg(dir, &samples, &f, &exchange)?;
        eprintln!("wrote {}", svg.display());
    }
    print!("{}", f.summary());
    eprintln!("wrote {} ({} samples) in {:.1} s", a.out.display(), samples.len(), started.elapsed().as_secs_f64());
    Ok(())
}
