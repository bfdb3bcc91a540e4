//! `simulator platform`: platform files made from others.

use std::path::PathBuf;

use anyhow::Context;

use simulator::platform::cluster::{parse_topology, InterNet};
use simulator::platform::Platform;

/// `simulator platform`.
#[derive(clap::Args)]
pub struct PlatformArgs {
    #[command(subcommand)]
    command: PlatformCommand,
}

#[derive(clap::Subcommand)]
enum PlatformCommand {
    /// A cluster of nodes like a calibrated one: its first host (speed,
    /// pstates, power), intra-node model, [smpi] costs and collectives,
    /// with an inter-node network and topology of your choice.
    Cluster(ClusterArgs),
}

/// `simulator platform cluster`.
#[derive(clap::Args)]
struct ClusterArgs {
    /// Nodes.
    #[arg(long, value_name = "H")]
    hosts: usize,
    /// Cores per node (default: the calibrated host's).
    #[arg(long, value_name = "C")]
    cores: Option<u32>,
    /// The calibrated platform (our TOML or a SimGrid XML) whose first host
    /// is the node.
    #[arg(long, value_name = "FILE")]
    from: PathBuf,
    /// The inter-node network: `latency=<time>,bandwidth=<rate>`, with
    /// SimGrid's units (1.5us, 12.5GBps, 100Gbps; bare numbers are seconds
    /// and bytes/s).
    #[arg(long, value_name = "latency=T,bandwidth=B")]
    inter: String,
    /// crossbar (default), backbone:<ratio>, torus:<d1>,<d2>,... or
    /// fat-tree:<levels>;<down>;<up>;<count> (SimGrid's topo_parameters).
    #[arg(long, value_name = "TOPOLOGY", default_value = "crossbar")]
    topology: String,
    /// The platform to write: `.toml` (ours) or `.xml` (SimGrid's cluster).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// Runs `simulator platform ...`.
pub fn run(args: &PlatformArgs) -> anyhow::Result<()> {
    match &args.command {
        PlatformCommand::Cluster(c) => cluster(c),
    }
}

fn cluster(args: &ClusterArgs) -> anyhow::Result<()> {
    let from = Platform::load(&args.from).context("--from")?;
    let inter = InterNet::parse(&args.inter).map_err(anyhow::Error::msg).context("--inter")?;
    let topology = parse_topology(&args.topology).map_err(anyhow::Error::msg).context("--topology")?;
    let p = Platform::cluster(&from, args.hosts, args.cores, inter, topology).map_err(anyhow::Error::msg)?;
    match args.out.extension().and_then(|e| e.to_str()) {
        Some("toml") => p.save(&args.out).with_context(|| format!("cannot write {}", args.out.display()))?,
        Some("xml") => {
            let xml = simulator::platform::simgrid::to_xml(&p).map_err(anyhow::Error::msg).context("cannot write a SimGrid cluster")?;
            std::fs::write(&args.out, xml).with_context(|| format!("cannot write {}", args.out.display()))?;
        }
        _ => anyhow::bail!("--out {}: give a .toml (ours) or .xml (SimGrid) file name", args.out.display()),
    }
    eprintln!(
        "simulator: wrote {}: {} nodes of {} cores, {:e} s / {:e} B/s between nodes, {}",
        args.out.display(),
        p.hosts.len(),
        p.hosts[0].cores,
        inter.latency_s,
        inter.bandwidth_bytes_per_s,
        args.topology
    );
    Ok(())
}
