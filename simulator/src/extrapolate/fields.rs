//! The fields of a call record's parameters that extrapolation reads and
//! rewrites: peers, sizes, tags and the communicator.

use crate::trace::record::Params;

/// The fields of a record's parameters the model rewrites.
pub(super) struct Fields {
    pub peers: [Option<i32>; 2],
    pub sizes: [Option<u64>; 2],
    pub tags: [Option<i32>; 2],
    pub comm: Option<u32>,
}

impl Fields {
    pub fn of(p: &Params) -> Fields {
        let none = Fields { peers: [None, None], sizes: [None, None], tags: [None, None], comm: None };
        match *p {
            Params::P2p { peer, tag, bytes, comm, .. } | Params::Probe { peer, tag, bytes, comm, .. } => {
                Fields { peers: [Some(peer), None], sizes: [Some(bytes), None], tags: [Some(tag), None], comm: Some(comm) }
            }
            Params::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm } => Fields {
                peers: [Some(dst), Some(src)],
                sizes: [Some(send_bytes), Some(recv_bytes)],
                tags: [Some(send_tag), Some(recv_tag)],
                comm: Some(comm),
            },
            Params::Wait { source, .. } => Fields { peers: [Some(source), None], ..none },
            Params::Coll { root, bytes, comm } | Params::Icoll { root, bytes, comm, .. } => {
                Fields { peers: [Some(root), None], sizes: [Some(bytes), None], comm: Some(comm), ..none }
            }
            Params::Vcoll { root, comm, .. } => Fields { peers: [Some(root), None], comm: Some(comm), ..none },
            Params::Mrecv { bytes, .. } | Params::Io { bytes, .. } => Fields { sizes: [Some(bytes), None], ..none },
            _ => none,
        }
    }
}

/// Rewrites `p`'s peers and sizes (those [`Fields::of`] names).
pub(super) fn set_fields(p: &mut Params, peers: [Option<i32>; 2], sizes: [Option<u64>; 2]) {
    let (p0, p1, s0, s1) = (peers[0], peers[1], sizes[0], sizes[1]);
    match p {
        Params::P2p { peer, bytes, .. } | Params::Probe { peer, bytes, .. } => {
            *peer = p0.unwrap_or(*peer);
            *bytes = s0.unwrap_or(*bytes);
        }
        Params::Sendrecv { dst, send_bytes, src, recv_bytes, .. } => {
            *dst = p0.unwrap_or(*dst);
            *src = p1.unwrap_or(*src);
            *send_bytes = s0.unwrap_or(*send_bytes);
            *recv_bytes = s1.unwrap_or(*recv_bytes);
        }
        Params::Wait { source, .. } => *source = p0.unwrap_or(*source),
        Params::Coll { root, bytes, .. } | Params::Icoll { root, bytes, .. } => {
            *root = p0.unwrap_or(*root);
            *bytes = s0.unwrap_or(*bytes);
        }
        Params::Vcoll { root, .. } => *root = p0.unwrap_or(*root),
        Params::Mrecv { bytes, .. } | Params::Io { bytes, .. } => *bytes = s0.unwrap_or(*bytes),
        _ => {}
    }
}
