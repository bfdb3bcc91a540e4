//! Writes runs as OTF2 archives: per rank, compute blocks and MPI calls
//! as regions, and each call's replay [`Action`]s as OTF2 MPI, collective
//! and I/O events. Both the recorded run (`simulator trace export-otf2`,
//! [`crate::otf2_export`]) and the simulated one (`simulator replay
//! --otf2`) go through [`ArchiveOut`], so the two open side by side.
//!
//! Mapping (what [`crate::otf2_import`] reads back):
//! - one location per rank (id = rank; other threads `thread << 32 | rank`),
//!   one location group per rank, a `COMM_LOCATIONS` group of the ranks'
//!   locations and one `COMM_GROUP` per communicator (world ranks);
//! - a compute block is a region named by its call-site region (role
//!   `CODE`, paradigm `USER`, description [`COMPUTE_BLOCK`]);
//! - an MPI call is a region named after the MPI function; in it
//!   `MpiSend`/`MpiIsend` at entry, `MpiRecv` at exit, `MpiIrecvRequest` at
//!   entry (with the source, communicator, tag and size as attributes,
//!   [`otf2::Posted`]) and `MpiIrecv` where a wait completes it,
//!   `MpiIsendComplete` there too, `MpiRequestCancelled` in `MPI_Cancel`, `MpiCollectiveBegin`/`End` around a collective,
//!   `NonBlockingCollectiveRequest`/`Complete` for nonblocking ones, and
//!   `IoCreateHandle`/`IoDestroyHandle`/`IoOperationBegin`/`Complete` for
//!   MPI-IO. Ranks in events are communicator ranks, as in OTF2.
//! - Collective sizes are what this rank sends and receives at the MPI
//!   level, every member (itself included) counted: [`coll_sizes`]; a
//!   v-collective's per-member counts ride along as an attribute
//!   ([`otf2::COUNTS_ATTRIBUTE`]).

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use otf2::consts as c;
use otf2::{Comm, Event, Group, IoHandle, Posted, Writer};
use simulator::action::{Action, IoCall};
use simulator::trace::record::{ANY_SOURCE, PROC_NULL};

/// Description of our compute-block regions, by which the reader knows them.
pub const COMPUTE_BLOCK: &str = "compute block between two MPI calls (call-site region)";

/// `MPI_PROC_NULL` as an [`Action`] destination.
const NULL_DST: u32 = PROC_NULL as u32;

/// Communicators across ranks: each rank's own ids mapped to one global
/// reference per communicator (known by its members and by how many
/// communicators with those members the rank created before), as the
/// replay identifies them.
#[derive(Default)]
pub struct CommTable {
    /// Members (world ranks) of each global communicator; 0 is the world.
    pub members: Vec<Vec<u32>>,
    by_key: HashMap<(Vec<u32>, u32), u32>,
    per_rank: Vec<RankComms>,
}

/// One rank's communicator ids → global references, and how many
/// communicators it created per member list.
type RankComms = (HashMap<u32, u32>, HashMap<Vec<u32>, u32>);

impl CommTable {
    /// The table of a world of `ranks`.
    pub fn new(ranks: u32) -> CommTable {
        let per_rank = (0..ranks).map(|_| Default::default()).collect();
        CommTable { members: vec![(0..ranks).collect()], by_key: HashMap::new(), per_rank }
    }

    /// Rank `r` created its communicator `local` with `members`.
    pub fn create(&mut self, r: usize, local: u32, members: &[u32]) {
        let Some((map, nth)) = self.per_rank.get_mut(r) else { return };
        let n = nth.entry(members.to_vec()).or_insert(0);
        let key = (members.to_vec(), *n);
        *n += 1;
        let next = self.members.len() as u32;
        let g = *self.by_key.entry(key).or_insert(next);
        if g == next {
            self.members.push(members.to_vec());
        }
        map.insert(local, g);
    }

    /// The global reference of rank `r`'s communicator `local` (0, the world, for 0).
    pub fn global(&self, r: usize, local: u32) -> Option<u32> {
        if local == 0 {
            return Some(0);
        }
        self.per_rank.get(r)?.0.get(&local).copied()
    }

    /// Rank of world rank `w` in global communicator `g`.
    fn rank_in(&self, g: u32, w: i64) -> u32 {
        if g == 0 {
            // The world: its ranks are world ranks.
            return if (0..self.members[0].len() as i64).contains(&w) { w as u32 } else { c::UNDEFINED_UINT32 };
        }
        self.members[g as usize].iter().position(|&m| m as i64 == w).map_or(c::UNDEFINED_UINT32, |i| i as u32)
    }
}

/// A request waiting for its completion event.
enum Pending {
    Isend,
    Irecv { sender: u32, comm: u32, tag: u32, bytes: u64 },
    Nbc { op: u8, comm: u32, root: u32, sent: u64, received: u64, counts: Vec<u64> },
    Io { handle: u32, bytes: u64 },
}

/// `(OTF2 collective op, root world rank, bytes sent, bytes received)` of
/// a blocking collective action of world rank `me`, rank `i` of a
/// communicator of `n` members; `None` for actions that are not
/// collectives OTF2 names. The counts Score-P writes (its MPI adapter's
/// byte counts without `MPI_IN_PLACE`), with `b` the per-rank payload:
///
/// | action | sent | received |
/// |---|---|---|
/// | `Barrier` | 0 | 0 |
/// | `Bcast`, `Scatter` | root: n·b, else 0 | b |
/// | `Reduce`, `Gather` | b | root: n·b, else 0 |
/// | `Allreduce`, `Alltoall`, `Allgather` | n·b | n·b |
/// | `Scan` | (n − i)·b | (i + 1)·b |
/// | `Exscan` | (n − i − 1)·b | i·b |
/// | v-collectives, `ReduceScatter` | sum of the counts | sum of the counts |
pub fn coll_sizes(a: &Action, n: u64, me: u32, i: u64) -> Option<(u8, Option<u32>, u64, u64)> {
    let root = |r: u32, yes: u64| if r == me { yes } else { 0 };
    let v = |x: &Vec<u64>| x.iter().sum::<u64>();
    Some(match *a {
        Action::Barrier { .. } => (c::BARRIER as u8, None, 0, 0),
        Action::Bcast { root: r, bytes, .. } => (c::BCAST as u8, Some(r), root(r, n * bytes), bytes),
        Action::Reduce { root: r, bytes, .. } => (c::REDUCE as u8, Some(r), bytes, root(r, n * bytes)),
        Action::Gather { root: r, bytes, .. } => (c::GATHER as u8, Some(r), bytes, root(r, n * bytes)),
        Action::Scatter { root: r, bytes, .. } => (c::SCATTER as u8, Some(r), root(r, n * bytes), bytes),
        Action::Allreduce { bytes, .. } => (c::ALLREDUCE as u8, None, n * bytes, n * bytes),
        Action::Alltoall { bytes, .. } => (c::ALLTOALL as u8, None, n * bytes, n * bytes),
        Action::Allgather { bytes, .. } => (c::ALLGATHER as u8, None, n * bytes, n * bytes),
        Action::Scan { bytes, exclusive: false, .. } => (c::SCAN as u8, None, (n - i) * bytes, (i + 1) * bytes),
        Action::Scan { bytes, exclusive: true, .. } => (c::EXSCAN as u8, None, (n - i).saturating_sub(1) * bytes, i * bytes),
        Action::Alltoallv { ref send_bytes, .. } => (c::ALLTOALLV as u8, None, v(send_bytes), v(send_bytes)),
        Action::Allgatherv { ref recv_bytes, .. } => (c::ALLGATHERV as u8, None, v(recv_bytes), v(recv_bytes)),
        Action::Scatterv { root: r, ref send_bytes, .. } => (c::SCATTERV as u8, Some(r), v(send_bytes), v(send_bytes)),
        Action::ReduceScatter { ref recv_bytes, .. } => (c::REDUCE_SCATTER as u8, None, v(recv_bytes), v(recv_bytes)),
        _ => return None,
    })
}

/// The communicator id of a collective action.
fn coll_comm(a: &Action) -> Option<u32> {
    Some(match *a {
        Action::Barrier { comm }
        | Action::Bcast { comm, .. }
        | Action::Reduce { comm, .. }
        | Action::Allreduce { comm, .. }
        | Action::Alltoall { comm, .. }
        | Action::Alltoallv { comm, .. }
        | Action::Allgather { comm, .. }
        | Action::Allgatherv { comm, .. }
        | Action::Gather { comm, .. }
        | Action::Scatter { comm, .. }
        | Action::Scatterv { comm, .. }
        | Action::ReduceScatter { comm, .. }
        | Action::Neighbor { comm, .. }
        | Action::Scan { comm, .. } => comm,
        _ => return None,
    })
}

/// The OTF2 region role of an MPI function.
fn role_of(name: &str) -> u8 {
    let n = name.trim_start_matches("MPI_").to_ascii_lowercase();
    let p2p = ["send", "recv", "wait", "test", "start", "probe", "cancel", "request"];
    (if n.starts_with("file") {
        c::ROLE_FILE_IO
    } else if ["bcast", "scatter"].iter().any(|k| n.contains(k)) {
        c::ROLE_COLL_ONE2ALL
    } else if ["reduce", "gather"].iter().any(|k| n.contains(k)) && !n.contains("all") {
        c::ROLE_COLL_ALL2ONE
    } else if ["all", "barrier", "scan"].iter().any(|k| n.contains(k)) {
        c::ROLE_COLL_ALL2ALL
    } else if p2p.iter().any(|k| n.contains(k)) {
        c::ROLE_POINT2POINT
    } else {
        c::ROLE_FUNCTION
    }) as u8
}

/// An archive being written from actions and their spans (nanoseconds).
pub struct ArchiveOut {
    w: Writer,
    ranks: u32,
    comms: CommTable,
    pending: Vec<HashMap<u64, VecDeque<Pending>>>,
    /// I/O handle of each file id (ids name the same file on every rank).
    files: HashMap<u32, u32>,
    io_seq: u64,
    locations: Vec<(u64, u32)>,
    /// MPI calls written, by MPI name.
    pub calls: HashMap<String, u64>,
}

impl ArchiveOut {
    /// Creates `<dir>/traces.otf2` for `ranks` ranks; timestamps in nanoseconds.
    ///
    /// # Errors
    /// The archive exists already or cannot be created (naming it).
    pub fn create(dir: &Path, ranks: u32) -> Result<ArchiveOut, otf2::Error> {
        let mut w = Writer::create(dir, "traces", 1_000_000_000)?;
        for r in 0..ranks {
            let g = w.location_group(&format!("MPI Rank {r}"));
            w.location(r as u64, &format!("rank {r}"), g);
        }
        let locations = (0..ranks).map(|r| (r as u64, r)).collect();
        Ok(ArchiveOut {
            w,
            ranks,
            comms: CommTable::new(ranks),
            pending: (0..ranks).map(|_| HashMap::new()).collect(),
            files: HashMap::new(),
            io_seq: 0,
            locations,
            calls: HashMap::new(),
        })
    }

    /// The location of `rank`'s thread stream `stream` (0: the one that
    /// called `MPI_Init`), defined on first use.
    pub fn location(&mut self, rank: u32, stream: u16) -> u64 {
        if stream == 0 {
            return rank as u64;
        }
        let id = (stream as u64) << 32 | rank as u64;
        if !self.locations.iter().any(|&(l, _)| l == id) {
            self.w.location(id, &format!("rank {rank} thread {stream}"), rank);
            self.locations.push((id, rank));
        }
        id
    }

    /// Writes a compute block of call-site region `name` on `loc` over `[start, end]` ns.
    ///
    /// # Errors
    /// The library refuses an event.
    pub fn compute(&mut self, loc: u64, name: &str, start: u64, end: u64) -> Result<(), otf2::Error> {
        let region = self.w.region_described(name, c::ROLE_CODE as u8, c::PARADIGM_USER as u8, COMPUTE_BLOCK);
        self.w.event(loc, start, &Event::Enter { region })?;
        self.w.event(loc, end, &Event::Leave { region })
    }

    /// Writes MPI call `mpi_name` of `rank` on `loc` over `[start, end]`
    /// ns, with the events of its `actions`.
    ///
    /// # Errors
    /// The library refuses an event.
    pub fn call(&mut self, rank: u32, loc: u64, mpi_name: &str, start: u64, end: u64, actions: &[Action]) -> Result<(), otf2::Error> {
        let end = end.max(start);
        *self.calls.entry(mpi_name.to_string()).or_default() += 1;
        let region = self.w.region(mpi_name, role_of(mpi_name), c::PARADIGM_MPI as u8);
        self.w.event(loc, start, &Event::Enter { region })?;
        for a in actions {
            self.action(rank, loc, a, start, end)?;
        }
        self.w.event(loc, end, &Event::Leave { region })
    }

    fn comm(&self, r: u32, local: u32) -> Option<u32> {
        self.comms.global(r as usize, local)
    }

    fn complete(&mut self, r: u32, loc: u64, req: u64, t: u64) -> Result<(), otf2::Error> {
        let Some(p) = self.pending[r as usize].get_mut(&req).and_then(|q| q.pop_front()) else { return Ok(()) };
        let e = match p {
            Pending::Isend => Event::MpiIsendComplete { request: req },
            Pending::Irecv { sender, comm, tag, bytes } => Event::MpiIrecv { sender, comm, tag, bytes, request: req },
            Pending::Nbc { op, comm, root, sent, received, counts } => {
                Event::NbcComplete { op, comm, root, sent, received, counts, request: req }
            }
            Pending::Io { handle, bytes } => Event::IoOperationComplete { handle, bytes, matching_id: req },
        };
        self.w.event(loc, t, &e)
    }

    fn pend(&mut self, r: u32, req: u64, p: Pending) {
        self.pending[r as usize].entry(req).or_default().push_back(p);
    }

    fn handle(&mut self, file: u32, comm: Option<u32>) -> u32 {
        if let Some(&h) = self.files.get(&file) {
            return h;
        }
        let h = self.w.io_handle(IoHandle { name: format!("MPI file {file}"), file: format!("file {file}"), comm });
        self.files.insert(file, h);
        h
    }

    /// The collective end event of `a` on rank `r`, if OTF2 names it.
    fn coll_end(&self, r: u32, a: &Action) -> Option<Event> {
        let g = self.comm(r, coll_comm(a)?)?;
        let n = self.comms.members[g as usize].len() as u64;
        let i = self.comms.rank_in(g, r as i64) as u64;
        let (op, root, sent, received) = coll_sizes(a, n, r, i.min(n))?;
        let root = root.map_or(c::UNDEFINED_UINT32, |w| self.comms.rank_in(g, w as i64));
        let counts = match a {
            Action::Alltoallv { send_bytes: v, .. }
            | Action::Scatterv { send_bytes: v, .. }
            | Action::Allgatherv { recv_bytes: v, .. }
            | Action::ReduceScatter { recv_bytes: v, .. } => v.clone(),
            _ => Vec::new(),
        };
        Some(Event::MpiCollectiveEnd { op, comm: g, root, sent, received, counts })
    }

    fn action(&mut self, r: u32, loc: u64, a: &Action, start: u64, end: u64) -> Result<(), otf2::Error> {
        let tag = |t: i32| t as u32;
        match *a {
            Action::Buffered(ref inner) => return self.action(r, loc, inner, start, end),
            Action::Send { dst, tag: t, bytes, comm } if dst != NULL_DST => {
                if let Some(g) = self.comm(r, comm) {
                    let e = Event::MpiSend { receiver: self.comms.rank_in(g, dst as i64), comm: g, tag: tag(t), bytes };
                    self.w.event(loc, start, &e)?;
                }
            }
            Action::Isend { dst, tag: t, bytes, comm, req } if dst != NULL_DST => {
                if let Some(g) = self.comm(r, comm) {
                    let e = Event::MpiIsend { receiver: self.comms.rank_in(g, dst as i64), comm: g, tag: tag(t), bytes, request: req };
                    self.w.event(loc, start, &e)?;
                    self.pend(r, req, Pending::Isend);
                }
            }
            Action::Recv { src, tag: t, bytes, comm } if src != PROC_NULL => {
                if let Some(g) = self.comm(r, comm) {
                    let e = Event::MpiRecv { sender: self.sender(g, src), comm: g, tag: tag(t), bytes };
                    self.w.event(loc, end, &e)?;
                }
            }
            Action::Irecv { src, tag: t, bytes, comm, req } if src != PROC_NULL => {
                if let Some(g) = self.comm(r, comm) {
                    let (sender, tag) = (self.sender(g, src), tag(t));
                    let posted = Some(Posted { sender, comm: g, tag, bytes });
                    self.w.event(loc, start, &Event::MpiIrecvRequest { request: req, posted })?;
                    self.pend(r, req, Pending::Irecv { sender, comm: g, tag, bytes });
                }
            }
            Action::Wait { req } => self.complete(r, loc, req, end)?,
            Action::Waitall { ref reqs } => {
                for &q in reqs {
                    self.complete(r, loc, q, end)?;
                }
            }
            Action::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm } => {
                if let Some(g) = self.comm(r, comm) {
                    if dst != NULL_DST {
                        let e =
                            Event::MpiSend { receiver: self.comms.rank_in(g, dst as i64), comm: g, tag: tag(send_tag), bytes: send_bytes };
                        self.w.event(loc, start, &e)?;
                    }
                    if src != PROC_NULL {
                        let e = Event::MpiRecv { sender: self.sender(g, src), comm: g, tag: tag(recv_tag), bytes: recv_bytes };
                        self.w.event(loc, end, &e)?;
                    }
                }
            }
            Action::Icoll { req, ref coll } => {
                if let Some(Event::MpiCollectiveEnd { op, comm, root, sent, received, counts }) = self.coll_end(r, coll) {
                    self.w.event(loc, start, &Event::NbcRequest { request: req })?;
                    self.pend(r, req, Pending::Nbc { op, comm, root, sent, received, counts });
                }
            }
            Action::CommCreate { comm, ref members } => self.comms.create(r as usize, comm, members),
            // The request still completes in a wait (or the cancel fails there).
            Action::Cancel { req } => self.w.event(loc, start, &Event::MpiRequestCancelled { request: req })?,
            Action::RequestFree { req } => {
                self.pending[r as usize].remove(&req);
            }
            Action::Compute { seconds, .. } => {
                let region =
                    self.w.region_described(simulator::trace::IO_REGION, c::ROLE_CODE as u8, c::PARADIGM_USER as u8, COMPUTE_BLOCK);
                let stop = (start + (seconds * 1e9).round() as u64).min(end);
                self.w.event(loc, start, &Event::Enter { region })?;
                self.w.event(loc, stop, &Event::Leave { region })?;
            }
            Action::Io { call, file, offset, bytes, .. } => self.io(r, loc, call, file, (offset, bytes), start, end)?,
            Action::IoInfo { file, ref info, .. } => {
                if let Some(comm) = info.open_comm {
                    self.io(r, loc, IoCall::Open { comm }, file, (0, 0), start, end)?;
                }
            }
            _ => {
                if let Some(e) = self.coll_end(r, a) {
                    self.w.event(loc, start, &Event::MpiCollectiveBegin)?;
                    self.w.event(loc, end, &e)?;
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn io(
        &mut self,
        r: u32,
        loc: u64,
        call: IoCall,
        file: u32,
        (offset, bytes): (u64, u64),
        start: u64,
        end: u64,
    ) -> Result<(), otf2::Error> {
        let (mode, flags) = match call {
            IoCall::Open { comm } => {
                let g = self.comm(r, comm);
                let handle = self.handle(file, g);
                return self.w.event(loc, end, &Event::IoCreateHandle { handle });
            }
            IoCall::Close => {
                let handle = self.handle(file, None);
                return self.w.event(loc, start, &Event::IoDestroyHandle { handle });
            }
            IoCall::Meta => return Ok(()),
            IoCall::Sync => (c::IO_MODE_FLUSH, c::IO_FLAG_NONE),
            IoCall::Read => (c::IO_MODE_READ, c::IO_FLAG_NONE),
            IoCall::Write => (c::IO_MODE_WRITE, c::IO_FLAG_NONE),
            IoCall::ReadAll => (c::IO_MODE_READ, c::IO_FLAG_COLLECTIVE),
            IoCall::WriteAll => (c::IO_MODE_WRITE, c::IO_FLAG_COLLECTIVE),
            IoCall::Iread { .. } => (c::IO_MODE_READ, c::IO_FLAG_NON_BLOCKING),
            IoCall::Iwrite { .. } => (c::IO_MODE_WRITE, c::IO_FLAG_NON_BLOCKING),
        };
        let handle = self.handle(file, None);
        let matching_id = match call {
            IoCall::Iread { req } | IoCall::Iwrite { req } => req,
            _ => {
                self.io_seq += 1;
                self.io_seq
            }
        };
        let begin = Event::IoOperationBegin { handle, mode: mode as u8, flags, bytes, matching_id, offset: Some(offset) };
        self.w.event(loc, start, &begin)?;
        match call {
            IoCall::Iread { req } | IoCall::Iwrite { req } => self.pend(r, req, Pending::Io { handle, bytes }),
            _ => self.w.event(loc, end, &Event::IoOperationComplete { handle, bytes, matching_id })?,
        }
        Ok(())
    }

    fn sender(&self, g: u32, src: i32) -> u32 {
        if src == ANY_SOURCE {
            c::UNDEFINED_UINT32
        } else {
            self.comms.rank_in(g, src as i64)
        }
    }

    /// Writes the communicator definitions and closes the archive.
    ///
    /// # Errors
    /// The library fails.
    pub fn finish(mut self) -> Result<(), otf2::Error> {
        let mpi = c::PARADIGM_MPI as u8;
        let locs = (0..self.ranks as u64).collect();
        self.w.group(Group { name: "MPI_COMM_WORLD locations".into(), kind: c::GROUP_COMM_LOCATIONS as u8, paradigm: mpi, members: locs });
        for (g, members) in self.comms.members.iter().enumerate() {
            let name = if g == 0 { "MPI_COMM_WORLD".to_string() } else { format!("comm {g}") };
            let members = members.iter().map(|&m| m as u64).collect();
            let group = self.w.group(Group { name: format!("{name} group"), kind: c::GROUP_COMM_GROUP as u8, paradigm: mpi, members });
            self.w.comm(Comm { name, group, parent: (g > 0).then_some(0) });
        }
        self.w.finish()
    }
}
