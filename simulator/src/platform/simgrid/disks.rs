//! SimGrid's disks (`<host>` elements holding `<disk id read_bw write_bw>`,
//! SimGrid ≥ 3.27's storage model) imported as one file system: each such
//! host a dedicated server ([`FileSystem`]).

use roxmltree::Node;

use super::{with_unit, BW};
use crate::platform::fs::{Disk, FileSystem, MpiIo};

/// The file system of `hosts` (the `<host>` elements with disks), named
/// after the first disk's `mount` property (else `disks`): one server per
/// host, its disk's read and write bandwidths, no latency, 1 MiB stripes
/// over every server. `line` gives an element's line for messages.
///
/// # Errors
/// A disk without `read_bw`/`write_bw` or with a bad one, or disks of
/// different speeds (the model has one disk per file system), naming the
/// line.
pub(super) fn file_system(hosts: &[Node], line: &dyn Fn(Node) -> u32) -> Result<Option<FileSystem>, String> {
    let mut disk: Option<(f64, f64, u32)> = None;
    let mut name = None;
    for d in hosts.iter().flat_map(|h| h.children().filter(|c| c.has_tag_name("disk"))) {
        let bw = |k: &str| {
            let v = d.attribute(k).ok_or_else(|| format!("line {}: <disk> needs {k}", line(d)))?;
            with_unit(v, BW).filter(|x| x.is_finite() && *x > 0.0).ok_or_else(|| format!("line {}: <disk>: bad {k} `{v}`", line(d)))
        };
        let (read, write) = (bw("read_bw")?, bw("write_bw")?);
        match disk {
            None => disk = Some((read, write, line(d))),
            Some((r, w, first)) if (r, w) != (read, write) => {
                return Err(format!(
                    "line {}: <disk> speeds differ from the disk at line {first}; one file system has one kind of disk",
                    line(d)
                ));
            }
            Some(_) => {}
        }
        if name.is_none() {
            name = d.children().find(|p| p.has_tag_name("prop") && p.attribute("id") == Some("mount")).and_then(|p| p.attribute("value"));
        }
    }
    let Some((read_bytes_per_s, write_bytes_per_s, _)) = disk else { return Ok(None) };
    Ok(Some(FileSystem {
        name: name.unwrap_or("disks").to_string(),
        servers: hosts.len() as u32,
        server_hosts: Vec::new(),
        stripe_size_bytes: 1 << 20,
        stripe_count: None,
        metadata_latency_s: 0.0,
        sync_latency_s: None,
        link_bytes_per_s: None,
        disk: Disk::new(0.0, read_bytes_per_s, write_bytes_per_s),
        cb_buffer_bytes: None,
        cb_nodes: None,
        mpi_io: MpiIo::Romio,
    }))
}
