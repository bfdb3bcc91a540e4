//! A file's view and the MPI-IO hints given for it (`MPI_File_open`'s
//! info, `MPI_File_set_view`, `MPI_File_set_info`), as the replay applies
//! them to the accesses that follow.

use crate::trace::record::hint;

/// The hints given for a file; `None`: not given (the file system's
/// `[[fs]]` settings and its MPI-IO implementation's defaults apply).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// `cb_nodes`: aggregators of collective accesses.
    pub cb_nodes: Option<u32>,
    /// `cb_buffer_size`, bytes.
    pub cb_buffer_bytes: Option<u64>,
    /// `striping_unit`, bytes (taken when the file is opened).
    pub striping_unit: Option<u64>,
    /// `striping_factor`: servers (taken when the file is opened).
    pub striping_factor: Option<u32>,
    /// `romio_cb_write` (ROMIO only): `Some(false)` makes collective writes independent.
    pub cb_write: Option<bool>,
    /// `romio_cb_read` (ROMIO only): `Some(false)` makes collective reads independent.
    pub cb_read: Option<bool>,
    /// `romio_ds_write` (ROMIO only): `Some(false)` turns data sieving of strided writes off.
    pub ds_write: Option<bool>,
    /// `romio_ds_read` (ROMIO only): `Some(false)` turns data sieving of strided reads off.
    pub ds_read: Option<bool>,
    /// `ind_wr_buffer_size`, bytes.
    pub ind_wr_buffer_bytes: Option<u64>,
    /// `ind_rd_buffer_size`, bytes.
    pub ind_rd_buffer_bytes: Option<u64>,
}

/// ROMIO's default data-sieving buffer of writes (`ind_wr_buffer_size`), bytes.
pub const DEFAULT_IND_WR_BUFFER_BYTES: u64 = 512 * 1024;
/// ROMIO's default data-sieving buffer of reads (`ind_rd_buffer_size`), bytes.
pub const DEFAULT_IND_RD_BUFFER_BYTES: u64 = 4 * 1024 * 1024;

impl Hints {
    /// The hints of a trace record's `(key, value)` pairs ([`hint`]);
    /// unknown keys and zero values are left out.
    pub fn from_pairs(pairs: &[(u32, u64)]) -> Hints {
        let mut h = Hints::default();
        let switch = |v: u64| match v {
            hint::ENABLE => Some(true),
            hint::DISABLE => Some(false),
            _ => None,
        };
        for &(k, v) in pairs.iter().filter(|p| p.1 != 0) {
            match k {
                hint::CB_NODES => h.cb_nodes = u32::try_from(v).ok(),
                hint::CB_BUFFER_SIZE => h.cb_buffer_bytes = Some(v),
                hint::STRIPING_UNIT => h.striping_unit = Some(v),
                hint::STRIPING_FACTOR => h.striping_factor = u32::try_from(v).ok(),
                hint::CB_WRITE => h.cb_write = switch(v),
                hint::CB_READ => h.cb_read = switch(v),
                hint::DS_WRITE => h.ds_write = switch(v),
                hint::DS_READ => h.ds_read = switch(v),
                hint::IND_WR_BUFFER_SIZE => h.ind_wr_buffer_bytes = Some(v),
                hint::IND_RD_BUFFER_SIZE => h.ind_rd_buffer_bytes = Some(v),
                _ => {}
            }
        }
        h
    }

    /// These hints with those `later` gives replacing them.
    pub fn merged(self, later: Hints) -> Hints {
        Hints {
            cb_nodes: later.cb_nodes.or(self.cb_nodes),
            cb_buffer_bytes: later.cb_buffer_bytes.or(self.cb_buffer_bytes),
            striping_unit: later.striping_unit.or(self.striping_unit),
            striping_factor: later.striping_factor.or(self.striping_factor),
            cb_write: later.cb_write.or(self.cb_write),
            cb_read: later.cb_read.or(self.cb_read),
            ds_write: later.ds_write.or(self.ds_write),
            ds_read: later.ds_read.or(self.ds_read),
            ind_wr_buffer_bytes: later.ind_wr_buffer_bytes.or(self.ind_wr_buffer_bytes),
            ind_rd_buffer_bytes: later.ind_rd_buffer_bytes.or(self.ind_rd_buffer_bytes),
        }
    }
}

/// A file view's layout (`MPI_File_set_view`): each instance of the
/// filetype spans `extent_bytes` of the file and holds `data_bytes` of
/// data in contiguous runs of `block_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileView {
    /// Data bytes per filetype instance.
    pub data_bytes: u64,
    /// File bytes per filetype instance.
    pub extent_bytes: u64,
    /// Contiguous run of data, bytes.
    pub block_bytes: u64,
}

impl FileView {
    /// A view of `data_bytes` in `extent_bytes` in runs of `block_bytes`;
    /// `None` when contiguous (no holes) or inconsistent (zeros, data
    /// larger than the extent), which the accesses then treat as contiguous.
    pub fn strided(data_bytes: u64, extent_bytes: u64, block_bytes: u64) -> Option<FileView> {
        let ok = data_bytes > 0 && block_bytes > 0 && data_bytes < extent_bytes && block_bytes <= data_bytes;
        ok.then_some(FileView { data_bytes, extent_bytes, block_bytes })
    }

    /// File bytes that `bytes` of data starting at a block's start cover:
    /// `n − 1` strides and the last block's part, for the `n` blocks
    /// the data fills.
    pub fn span(&self, bytes: u64) -> u64 {
        let n = bytes.div_ceil(self.block_bytes);
        if n == 0 {
            return 0;
        }
        ((n - 1) * self.stride()).saturating_add(bytes - (n - 1) * self.block_bytes)
    }

    /// Distance between the starts of consecutive blocks, bytes (blocks
    /// taken as evenly spread over the extent).
    pub fn stride(&self) -> u64 {
        (self.extent_bytes / (self.data_bytes / self.block_bytes).max(1)).max(self.block_bytes)
    }
}

/// What an [`Action::IoInfo`](super::Action::IoInfo) says about a file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileInfo {
    /// `MPI_File_open` on this communicator of the rank (else `None`).
    pub open_comm: Option<u32>,
    /// The view set (`MPI_File_set_view`; `None` from the others, or a
    /// contiguous view).
    pub view: Option<FileView>,
    /// Whether this record sets a view (a contiguous one clears a strided one).
    pub sets_view: bool,
    /// The hints given.
    pub hints: Hints,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_read_their_keys_and_later_ones_win() {
        let h = Hints::from_pairs(&[(hint::CB_NODES, 4), (hint::CB_WRITE, hint::DISABLE), (hint::DS_WRITE, hint::AUTOMATIC), (99, 7)]);
        assert_eq!((h.cb_nodes, h.cb_write, h.ds_write, h.cb_buffer_bytes), (Some(4), Some(false), None, None));
        let later = Hints::from_pairs(&[(hint::CB_NODES, 2), (hint::CB_BUFFER_SIZE, 1 << 20)]);
        let m = h.merged(later);
        assert_eq!((m.cb_nodes, m.cb_buffer_bytes, m.cb_write), (Some(2), Some(1 << 20), Some(false)));
    }

    #[test]
    fn a_vector_view_spans_its_extents() {
        // 4 blocks of 1 KiB per 16 KiB extent: blocks every 4 KiB.
        let v = FileView::strided(4096, 16384, 1024).unwrap();
        assert_eq!(v.stride(), 4096);
        assert_eq!(v.span(4096), 3 * 4096 + 1024);
        assert_eq!(v.span(8192), 7 * 4096 + 1024);
        // 1.5 blocks: one block, a stride, half a block.
        assert_eq!(v.span(1536), 4096 + 512);
        assert_eq!(v.span(512), 512);
        assert!(FileView::strided(4096, 4096, 1024).is_none(), "contiguous");
        assert!(FileView::strided(0, 4096, 0).is_none());
    }
}
