//! The servers of one file system as time passes: each server's link and
//! disk are first-in first-out resources, its cache a list of writes still
//! draining (semantics in [`crate::io`]).

use std::collections::{HashMap, VecDeque};

use super::FileSystem;

/// Direction of an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoKind {
    /// Data moves from the servers to the client.
    Read,
    /// Data moves from the client to the servers.
    Write,
}

#[derive(Debug, Clone, Default)]
struct Server {
    /// When the link to the clients is next free, seconds.
    link_free_s: f64,
    /// When the disk is next free (cache drains included), seconds.
    disk_free_s: f64,
    /// Cached writes draining to the disk: (end of their drain, bytes).
    dirty: VecDeque<(f64, u64)>,
    /// Cached bytes not yet on the disk, draining or waiting.
    dirty_bytes: u64,
    /// Cached bytes waiting for the write-back to start.
    waiting: u64,
    stats: ServerStats,
}

/// What one server did during a simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ServerStats {
    /// Bytes its disk read.
    pub bytes_read: u64,
    /// Bytes written to it (into its cache or onto its disk).
    pub bytes_written: u64,
    /// Requests (pieces of client requests) it served.
    pub requests: u64,
    /// Time its disk was busy (cache drains included), seconds.
    pub disk_busy_s: f64,
    /// Time its link carried data, seconds.
    pub link_busy_s: f64,
}

impl Server {
    /// Forgets cached writes whose drain ended by `t`.
    fn drained(&mut self, t: f64) {
        while let Some(&(end, b)) = self.dirty.front() {
            if end > t {
                break;
            }
            self.dirty.pop_front();
            self.dirty_bytes -= b;
        }
    }
}

/// A time span of one server's link or disk, for a timeline lane per server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerSpan {
    /// Server index.
    pub server: usize,
    /// `link`, `disk read`, `disk write`, `cache write` or `cache drain`.
    pub what: &'static str,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

/// One file system's servers during a simulation.
#[derive(Debug, Clone)]
pub struct FsState {
    fs: FileSystem,
    servers: Vec<Server>,
    /// Spans kept for a timeline, when asked for ([`FsState::keep_spans`]).
    spans: Option<Vec<ServerSpan>>,
    /// Files striped otherwise than the file system's default (hints at
    /// open): stripe size, bytes, and count, by file id.
    striping: HashMap<u32, (u64, u32)>,
    /// The data the servers' caches still hold, for reads.
    recent: super::recent::Recent,
}

impl FsState {
    /// Idle servers of `fs`.
    pub fn new(fs: FileSystem) -> FsState {
        let servers = vec![Server::default(); fs.server_count().max(1) as usize];
        let held = fs.disk.read_cache_bytes.unwrap_or(fs.disk.cache_bytes);
        let recent = super::recent::Recent::new(held.saturating_mul(servers.len() as u64));
        FsState { fs, servers, spans: None, striping: HashMap::new(), recent }
    }

    /// Stripes `file` in units of `unit` bytes over `factor` servers (the
    /// `striping_unit` and `striping_factor` hints of its open; `None`
    /// keeps the file system's, and the count is at most its servers).
    pub fn set_striping(&mut self, file: u32, unit: Option<u64>, factor: Option<u32>) {
        if unit.is_none() && factor.is_none() {
            return;
        }
        let size = unit.unwrap_or(self.fs.stripe_size_bytes).max(1);
        let count = factor.unwrap_or(self.fs.stripes_over()).clamp(1, self.servers.len() as u32);
        self.striping.insert(file, (size, count));
    }

    /// Keeps (or stops keeping) the servers' busy spans for
    /// [`FsState::take_spans`].
    pub fn keep_spans(&mut self, keep: bool) {
        if keep != self.spans.is_some() {
            self.spans = keep.then(Vec::new);
        }
    }

    /// The busy spans kept since the last call, in the order they were timed.
    pub fn take_spans(&mut self) -> Vec<ServerSpan> {
        self.spans.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn span(&mut self, server: usize, what: &'static str, start_s: f64, end_s: f64) {
        if let Some(v) = self.spans.as_mut() {
            v.push(ServerSpan { server, what, start_s, end_s });
        }
    }

    /// The file system modelled.
    pub fn fs(&self) -> &FileSystem {
        &self.fs
    }

    /// Each server's bytes and busy times so far, in server order.
    pub fn server_stats(&self) -> Vec<ServerStats> {
        self.servers.iter().map(|s| s.stats).collect()
    }

    /// Bytes of `[offset, offset + bytes)` of file `file` on each server
    /// it touches, `(server index, bytes)` in order of first touch: stripe
    /// k of the file lives on server `(k + file) mod stripe_count`.
    pub fn pieces(&self, file: u32, offset: u64, bytes: u64) -> Vec<(usize, u64)> {
        if bytes == 0 {
            return Vec::new();
        }
        let (size, count) =
            self.striping.get(&file).map_or((self.fs.stripe_size_bytes.max(1), self.fs.stripes_over() as u64), |&(s, c)| (s, c as u64));
        let server = |k: u64| ((k % count + file as u64 % count) % count) as usize;
        let end = offset.saturating_add(bytes);
        let (first, last) = (offset / size, (end - 1) / size);
        let mut per = vec![0u64; count as usize];
        if first == last {
            per[server(first)] += bytes;
        } else {
            per[server(first)] += (first + 1) * size - offset;
            per[server(last)] += end - last * size;
            // Whole stripes first + 1 .. last: n of them, cycling from server(first + 1).
            let n = last - first - 1;
            let start = server(first + 1) as u64;
            for (j, b) in per.iter_mut().enumerate() {
                let ahead = (j as u64 + count - start) % count;
                *b += (n / count + u64::from(ahead < n % count)) * size;
            }
        }
        (first..=last.min(first + count - 1)).map(server).map(|s| (s, per[s])).filter(|&(_, b)| b > 0).collect()
    }

    /// A client's access of `bytes` at `offset` of `file`, issued at `t`
    /// seconds over a network of `net_latency_s` one-way latency; returns
    /// when it completes, seconds. Each piece crosses its server's
    /// link (first in, first out): a write's before the server takes it
    /// ([`FsState::write_arrived`]), a read's after the server serves it
    /// ([`FsState::read_served`]).
    pub fn request(&mut self, t: f64, net_latency_s: f64, file: u32, offset: u64, bytes: u64, kind: IoKind) -> f64 {
        if bytes == 0 {
            return t;
        }
        let hit = self.begin(file, offset, bytes, kind);
        let lat = net_latency_s;
        let mut done = t;
        for (s, b) in self.pieces(file, offset, bytes) {
            done = done.max(match kind {
                IoKind::Write => {
                    let arrive = self.over_link(s, t + lat, b);
                    self.write_arrived(s, arrive, b)
                }
                IoKind::Read => {
                    let served = self.read_served(s, t + lat, b, hit);
                    self.over_link(s, served, b) + lat
                }
            });
        }
        done
    }

    /// Starts a client's access of `bytes` at `offset` of `file`: whether
    /// a read finds its data in the servers' caches; a write's range is
    /// remembered for later reads. Its pieces are [`FsState::pieces`].
    pub fn begin(&mut self, file: u32, offset: u64, bytes: u64, kind: IoKind) -> bool {
        let end = offset.saturating_add(bytes);
        if kind == IoKind::Write {
            self.recent.remember(file, offset, end);
            return false;
        }
        self.recent.covers(file, offset, end)
    }

    /// A piece of `b` bytes ready at `t` crosses server `s`'s link (first
    /// in, first out, at `link_bytes_per_s`); returns when it has crossed,
    /// seconds.
    fn over_link(&mut self, s: usize, t: f64, b: u64) -> f64 {
        let on_link = self.fs.link_bytes_per_s.map_or(0.0, |bw| b as f64 / bw);
        let srv = &mut self.servers[s];
        srv.stats.link_busy_s += on_link;
        let end = t.max(srv.link_free_s) + on_link;
        srv.link_free_s = end;
        self.span(s, "link", end - on_link, end);
        end
    }

    /// Server `s`'s traffic with the clients carried elsewhere (a flow of
    /// the platform's network): `b` bytes, counted in its link's busy time
    /// at `link_bytes_per_s` (none without), and a `link` span from
    /// `start_s` to `end_s` (the flow's transfer).
    pub fn link_used(&mut self, s: usize, b: u64, (start_s, end_s): (f64, f64)) {
        self.servers[s].stats.link_busy_s += self.fs.link_bytes_per_s.map_or(0.0, |bw| b as f64 / bw);
        self.span(s, "link", start_s, end_s);
    }

    /// A write piece of `b` bytes that reached server `s` at `arrive`:
    /// into the cache while it has room, else onto the disk after what
    /// the disk already has to do; returns when the server holds it,
    /// seconds.
    pub fn write_arrived(&mut self, s: usize, arrive: f64, b: u64) -> f64 {
        let d = &self.fs.disk;
        let (latency_s, write_bw) = (d.latency_s, d.write_bytes_per_s);
        let (cache_bytes, drain_after_bytes) = (d.cache_bytes, d.drain_after_bytes);
        let srv = &mut self.servers[s];
        srv.stats.requests += 1;
        srv.drained(arrive);
        let cached = cache_bytes > 0 && srv.dirty_bytes + b <= cache_bytes;
        let on_disk = b as f64 / write_bw;
        srv.stats.bytes_written += b;
        if !cached {
            self.servers[s].stats.disk_busy_s += latency_s + on_disk;
            // A full cache writes back what waits before taking more.
            self.drain(s, arrive);
        }
        let disk_from = self.servers[s].disk_free_s;
        let srv = &mut self.servers[s];
        if cached {
            let done = arrive + self.fs.disk.cache_write_s(b);
            srv.dirty_bytes += b;
            srv.waiting += b;
            self.span(s, "cache write", arrive, done);
            if self.servers[s].waiting > drain_after_bytes {
                self.drain(s, done);
            }
            done
        } else {
            let done = arrive.max(disk_from) + latency_s + on_disk;
            srv.disk_free_s = done;
            self.span(s, "disk write", done - latency_s - on_disk, done);
            done
        }
    }

    /// A read piece of `b` bytes whose request reached server `s` at `at`:
    /// from the cache when `cached` ([`FsState::begin`]), else from the
    /// disk after what it already has to do; returns when the data leaves
    /// the server, seconds.
    pub fn read_served(&mut self, s: usize, at: f64, b: u64, cached: bool) -> f64 {
        let d = &self.fs.disk;
        let (from_cache, on_disk) = (d.cached_read_s(b), d.latency_s + b as f64 / d.read_bytes_per_s);
        let srv = &mut self.servers[s];
        srv.stats.requests += 1;
        srv.stats.bytes_read += b;
        if cached {
            self.span(s, "cache read", at, at + from_cache);
            return at + from_cache;
        }
        srv.stats.disk_busy_s += on_disk;
        let read = at.max(srv.disk_free_s) + on_disk;
        srv.disk_free_s = read;
        self.span(s, "disk read", read - on_disk, read);
        read
    }

    /// Starts writing back server `s`'s waiting cached bytes at `t` (after
    /// what its disk already has to do).
    fn drain(&mut self, s: usize, t: f64) {
        let srv = &mut self.servers[s];
        if srv.waiting == 0 {
            return;
        }
        let on_disk = srv.waiting as f64 / self.fs.disk.write_bytes_per_s;
        srv.disk_free_s = srv.disk_free_s.max(t) + on_disk;
        srv.dirty.push_back((srv.disk_free_s, srv.waiting));
        srv.stats.disk_busy_s += on_disk;
        srv.waiting = 0;
        let end = srv.disk_free_s;
        self.span(s, "cache drain", end - on_disk, end);
    }

    /// `MPI_File_sync` issued at `t`: starts the write-back of what waits
    /// in the caches and completes once every server's cache has drained,
    /// plus the sync latency, seconds.
    pub fn sync(&mut self, t: f64) -> f64 {
        for s in 0..self.servers.len() {
            self.drain(s, t);
        }
        let drained = self.servers.iter().filter_map(|s| s.dirty.back().map(|d| d.0)).fold(t, f64::max);
        drained + self.fs.sync_latency_s.unwrap_or(self.fs.metadata_latency_s)
    }

    /// `MPI_File_sync` of a rank at `t` that knows only its own writes,
    /// while the other members of the file's communicator hold
    /// `others_bytes` more in the same caches and the first of them synced
    /// at `first_s`: the others' bytes join the caches (spread over the
    /// servers) and the write-back starts at `first_s`, as the first
    /// member's sync starts it for everyone; completes as [`FsState::sync`].
    pub fn sync_shared(&mut self, t: f64, first_s: f64, others_bytes: u64) -> f64 {
        let n = self.servers.len() as u64;
        for (i, srv) in self.servers.iter_mut().enumerate() {
            let share = others_bytes / n + u64::from((i as u64) < others_bytes % n);
            srv.waiting += share;
            srv.dirty_bytes += share;
        }
        for s in 0..self.servers.len() {
            self.drain(s, first_s.min(t));
        }
        self.sync(t)
    }

    /// A metadata operation (open, close, set_size, preallocate, delete)
    /// issued at `t`: completes after the metadata latency, seconds.
    pub fn metadata(&self, t: f64) -> f64 {
        t + self.fs.metadata_latency_s
    }
}
