//! The hosts of a calibration: a hostfile's names, and the platform the
//! fitted models go into.

use std::path::Path;

use simulator::network::P2pModel;
use simulator::platform::{Host, Platform};

use crate::error::{Error, ErrorKind};

/// Host names of an Open MPI / MPICH hostfile: the first word of every
/// line that is not blank or a `#` comment, in order, without repeats.
///
/// # Errors
/// [`ErrorKind::Io`] naming `path` when unreadable; [`ErrorKind::InvalidArgument`]
/// naming `path` when it lists no host.
pub fn hostfile_hosts(path: &Path) -> Result<Vec<String>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut hosts: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        if let Some(h) = line.split_whitespace().next() {
            if !hosts.iter().any(|x| x == h) {
                hosts.push(h.to_string());
            }
        }
    }
    if hosts.is_empty() {
        return Err(Error::new(ErrorKind::InvalidArgument, format!("{}: no host listed", path.display())));
    }
    Ok(hosts)
}

/// A one-host platform with `model` as its intra-node network: host
/// `host_name` with `cores` cores, block mapping, no inter-node model.
pub fn host_platform(host_name: &str, cores: u32, model: P2pModel) -> Platform {
    Platform::new(format!("calibrated-{host_name}"), vec![Host::new(host_name, cores)], model)
}

/// A cluster platform: `hosts` (e.g. from [`hostfile_hosts`]) of `cores`
/// cores each, block mapping, `intra` within a host and `inter` between.
pub fn cluster_platform(hosts: &[String], cores: u32, intra: P2pModel, inter: P2pModel) -> Platform {
    let name = format!("calibrated-{}", hosts.first().map_or("cluster", String::as_str));
    let mut p = Platform::new(name, hosts.iter().map(|h| Host::new(h.clone(), cores)).collect(), intra);
    p.network.inter = Some(inter);
    p
}
