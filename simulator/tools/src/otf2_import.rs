//! `simulator replay ARCHIVE`: an OTF2 archive (Score-P's, or one
//! [`crate::otf2_out`] wrote) as replay actions.
//!
//! Ranks are the locations of the MPI `COMM_LOCATIONS` group, in rank
//! order. On each, an outermost MPI region (paradigm MPI) is one call,
//! whose events give its actions:
//! - `MpiSend` → `Send` (`Buffered` in `MPI_Bsend`), `MpiRecv` → `Recv`,
//!   both in `MPI_Sendrecv*` → `Sendrecv`, `MpiIsend` → `Isend`;
//! - `MpiIrecvRequest` → `Irecv` (peer, tag and size from its attributes,
//!   [`otf2::Posted`], else from the `MpiIrecv` that completes the same
//!   request), `MpiRequestCancelled` → `Cancel`;
//! - completions (`MpiIsendComplete`, `MpiIrecv`,
//!   `NonBlockingCollectiveComplete`, a nonblocking I/O operation's
//!   `IoOperationComplete`) → `Wait`/`Waitall`;
//! - `MpiCollectiveEnd` → the collective (sizes as
//!   [`crate::otf2_out::coll_sizes`] writes them),
//!   `NonBlockingCollectiveRequest` → `Icoll`;
//! - I/O handle and operation events → `Io` (at the offset attribute,
//!   else 0; timed by the region when the platform has no file system);
//!   `MPI_File_set_size`, `preallocate` and `delete` regions are
//!   metadata calls.
//!
//! Compute blocks: our compute-block regions when the archive has them,
//! else the time between MPI regions. Communicators other than the world
//! become `CommCreate` actions at the start of each member's stream.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;

use otf2::consts as c;
use otf2::{Archive, Event};
use simulator::action::{Action, IoCall};
use simulator::trace::record::{ANY_SOURCE, ANY_TAG, PROC_NULL};
use simulator::trace::region_key_id;

use crate::otf2_out::COMPUTE_BLOCK;

/// An archive turned into per-rank actions.
#[derive(Debug, Default)]
pub struct Imported {
    /// Each rank's actions, in rank order.
    pub streams: Vec<Vec<Action>>,
    /// Records not replayed, by kind, and their counts.
    pub skipped: BTreeMap<String, u64>,
    /// Compute region ids and their names.
    pub region_names: HashMap<u64, String>,
}

/// True when `path` names an OTF2 archive: a `.otf2` file, or a directory
/// holding one and no interposer `meta.json`.
pub fn is_archive(path: &Path) -> bool {
    if path.is_dir() {
        let has = |p: &Path| p.extension().is_some_and(|x| x == "otf2");
        !path.join("meta.json").exists() && std::fs::read_dir(path).is_ok_and(|rd| rd.flatten().any(|e| has(&e.path())))
    } else {
        path.extension().is_some_and(|x| x == "otf2")
    }
}

/// A communicator: our id and its members (world ranks, `None` for `MPI_COMM_SELF`).
struct CommInfo {
    id: u32,
    members: Option<Vec<u32>>,
}

/// Reads the archive at `path` and converts it ([`Imported`]).
///
/// # Errors
/// One line naming the archive: unreadable, or without MPI locations.
pub fn load(path: &Path) -> anyhow::Result<Imported> {
    let a = otf2::read(path)?;
    let anchor = a.anchor.display().to_string();
    let ranks = rank_locations(&a);
    if ranks.is_empty() {
        anyhow::bail!("{anchor}: no MPI locations (no COMM_LOCATIONS group and no MPI events)");
    }
    let n = ranks.len() as u32;
    let comms = comm_table(&a, n);
    let mut out = Imported { skipped: a.skipped.iter().map(|(k, v)| (k.to_string(), *v)).collect(), ..Imported::default() };
    let ours = a.regions.values().any(|r| r.description == COMPUTE_BLOCK);
    let mut other = 0u64;
    let rank_set: HashSet<u64> = ranks.iter().copied().collect();
    for (&loc, evs) in &a.events {
        if !rank_set.contains(&loc) {
            other += evs.len() as u64;
        }
    }
    if other > 0 {
        out.skipped.insert("events of non-rank locations (threads)".into(), other);
    }
    for (r, loc) in ranks.iter().enumerate() {
        let mut acts = Vec::new();
        let mut refs: Vec<&u32> = comms.keys().collect();
        refs.sort();
        for k in refs {
            let ci = &comms[k];
            match &ci.members {
                Some(m) if ci.id != 0 && m.contains(&(r as u32)) => acts.push(Action::CommCreate { comm: ci.id, members: m.clone() }),
                None => acts.push(Action::CommCreate { comm: ci.id, members: vec![r as u32] }),
                _ => {}
            }
        }
        let empty = Vec::new();
        let evs = a.events.get(loc).unwrap_or(&empty);
        let mut conv = Conv {
            a: &a,
            comms: &comms,
            rank: r as u32,
            self_members: [r as u32],
            ours,
            acts,
            skipped: &mut out.skipped,
            names: &mut out.region_names,
        };
        conv.location(evs);
        out.streams.push(conv.acts);
    }
    Ok(out)
}

/// The locations of the ranks, in rank order.
fn rank_locations(a: &Archive) -> Vec<u64> {
    let mut groups: Vec<(&u32, &otf2::Group)> =
        a.groups.iter().filter(|(_, g)| g.kind == c::GROUP_COMM_LOCATIONS as u8 && g.paradigm == c::PARADIGM_MPI as u8).collect();
    groups.sort_by_key(|(k, _)| **k);
    if let Some((_, g)) = groups.first() {
        return g.members.clone();
    }
    // No MPI location group: the first location of each location group with MPI events.
    let mut by_group: BTreeMap<u32, u64> = BTreeMap::new();
    for (id, l) in &a.locations {
        let mpi = a.events.get(id).is_some_and(|e| {
            e.iter().any(|(_, e)| {
                matches!(
                    e,
                    Event::MpiSend { .. }
                        | Event::MpiRecv { .. }
                        | Event::MpiCollectiveEnd { .. }
                        | Event::MpiIsend { .. }
                        | Event::MpiIrecv { .. }
                )
            })
        });
        if mpi {
            by_group.entry(l.group).or_insert(*id);
        }
    }
    by_group.into_values().collect()
}

/// OTF2 communicator reference → our id and members.
fn comm_table(a: &Archive, n: u32) -> HashMap<u32, CommInfo> {
    let world: Vec<u64> = (0..n as u64).collect();
    let members = |g: u32| a.groups.get(&g);
    let mut refs: Vec<&u32> = a.comms.keys().collect();
    refs.sort();
    let is_world = |r: &u32| members(a.comms[r].group).is_some_and(|g| g.members == world);
    let world_ref =
        refs.iter().find(|r| is_world(r) && a.comms[r].name.contains("WORLD")).or_else(|| refs.iter().find(|r| is_world(r))).copied();
    let mut t = HashMap::new();
    for r in refs {
        let g = members(a.comms[r].group);
        let info = if Some(r) == world_ref {
            CommInfo { id: 0, members: Some((0..n).collect()) }
        } else if g.is_some_and(|g| g.kind == otf2::sys::OTF2_GROUP_TYPE_COMM_SELF as u8) {
            CommInfo { id: r + 1, members: None }
        } else {
            CommInfo { id: r + 1, members: Some(g.map(|g| g.members.iter().map(|&m| m as u32).collect()).unwrap_or_default()) }
        };
        t.insert(*r, info);
    }
    t
}

/// One rank's conversion.
struct Conv<'a> {
    a: &'a Archive,
    comms: &'a HashMap<u32, CommInfo>,
    rank: u32,
    /// The members of `MPI_COMM_SELF` on this rank.
    self_members: [u32; 1],
    ours: bool,
    acts: Vec<Action>,
    skipped: &'a mut BTreeMap<String, u64>,
    names: &'a mut HashMap<u64, String>,
}

/// The events of one MPI call.
struct Call {
    name: String,
    start: u64,
    events: Vec<Event>,
    computes: Vec<Action>,
}

impl Conv<'_> {
    fn skip(&mut self, what: &str) {
        *self.skipped.entry(what.to_string()).or_default() += 1;
    }

    fn secs(&self, ticks: u64) -> f64 {
        ticks as f64 * (1.0 / self.a.resolution as f64)
    }

    /// Our id and member list of OTF2 communicator `comm`.
    fn comm(&self, comm: u32) -> Option<(u32, &[u32])> {
        let ci = self.comms.get(&comm)?;
        Some((ci.id, ci.members.as_deref().unwrap_or(&self.self_members)))
    }

    /// World rank of rank `x` of OTF2 communicator `comm`; `any` for undefined.
    fn world(&self, members: &[u32], x: u32, any: i32) -> i32 {
        if x == c::UNDEFINED_UINT32 {
            any
        } else {
            members.get(x as usize).map_or(PROC_NULL, |&w| w as i32)
        }
    }

    fn location(&mut self, evs: &[(u64, Event)]) {
        // Completions that carry a receive's or a nonblocking collective's parameters, per request, in order.
        let mut irecvs: HashMap<u64, VecDeque<Event>> = HashMap::new();
        for (_, e) in evs {
            if let Event::MpiIrecv { request, .. } | Event::NbcComplete { request, .. } = e {
                irecvs.entry(*request).or_default().push_back(e.clone());
            }
        }
        let mut stack: Vec<(u32, u64)> = Vec::new();
        let mut call: Option<(usize, Call)> = None;
        let mut last = evs.first().map_or(0, |(t, _)| *t);
        let mut nb_io: Vec<u64> = Vec::new();
        for (t, e) in evs {
            match e {
                Event::Enter { region } => {
                    let reg = self.a.regions.get(region);
                    let mpi = reg.is_some_and(|r| r.paradigm == c::PARADIGM_MPI as u8);
                    if mpi && call.is_none() {
                        if !self.ours && *t > last {
                            self.acts.push(Action::Compute { seconds: self.secs(t - last), region: 0 });
                        }
                        let name = reg.map(|r| r.name.clone()).unwrap_or_default();
                        call = Some((stack.len(), Call { name, start: *t, events: Vec::new(), computes: Vec::new() }));
                    }
                    stack.push((*region, *t));
                }
                Event::Leave { .. } => {
                    let Some((region, t0)) = stack.pop() else { continue };
                    let reg = self.a.regions.get(&region);
                    if self.ours && reg.is_some_and(|r| r.description == COMPUTE_BLOCK) {
                        let name = reg.map(|r| r.name.clone()).unwrap_or_default();
                        let id = region_key_id(&name);
                        self.names.entry(id).or_insert(name);
                        let block = Action::Compute { seconds: self.secs(t - t0), region: id };
                        match call.as_mut() {
                            Some((_, c)) => c.computes.push(block),
                            None => self.acts.push(block),
                        }
                    }
                    if call.as_ref().is_some_and(|(depth, _)| *depth == stack.len()) {
                        let (_, c) = call.take().expect("checked");
                        self.call(c, *t, &mut irecvs, &mut nb_io);
                        last = *t;
                    }
                }
                other => match call.as_mut() {
                    Some((_, c)) => c.events.push(other.clone()),
                    None => self.skip("MPI and I/O events outside an MPI region"),
                },
            }
        }
        if let Some((_, c)) = call.take() {
            let end = evs.last().map_or(c.start, |(t, _)| *t);
            self.call(c, end, &mut irecvs, &mut nb_io);
        }
    }

    fn call(&mut self, c: Call, end: u64, irecvs: &mut HashMap<u64, VecDeque<Event>>, nb_io: &mut Vec<u64>) {
        let dur = self.secs(end.saturating_sub(c.start));
        match c.name.as_str() {
            "MPI_Init" | "MPI_Init_thread" => return self.acts.push(Action::Init),
            "MPI_Finalize" => return self.acts.push(Action::Finalize),
            // Metadata calls: OTF2 has no event for them, the region is the call.
            "MPI_File_set_size" | "MPI_File_preallocate" | "MPI_File_delete" => {
                return self.acts.push(Action::Io { call: IoCall::Meta, file: 0, offset: 0, bytes: 0, recorded_s: dur })
            }
            _ => {}
        }
        let buffered = c.name.starts_with("MPI_Bsend") || c.name.starts_with("MPI_Ibsend");
        let wrap = |a: Action| if buffered { Action::Buffered(Box::new(a)) } else { a };
        let sendrecv = c.name.starts_with("MPI_Sendrecv");
        let (mut sr_send, mut sr_recv, mut sr_comm) = (None, None, 0);
        let mut done: Vec<u64> = Vec::new();
        self.acts.extend(c.computes);
        for e in c.events {
            match e {
                Event::MpiSend { receiver, comm, tag, bytes } => {
                    let Some((id, m)) = self.comm(comm) else {
                        self.skip("MpiSend on an undefined communicator");
                        continue;
                    };
                    let dst = self.world(m, receiver, PROC_NULL) as u32;
                    if sendrecv {
                        (sr_send, sr_comm) = (Some((dst, tag as i32, bytes)), id);
                    } else {
                        self.acts.push(wrap(Action::Send { dst, tag: tag as i32, bytes, comm: id }));
                    }
                }
                Event::MpiRecv { sender, comm, tag, bytes } => {
                    let Some((id, m)) = self.comm(comm) else {
                        self.skip("MpiRecv on an undefined communicator");
                        continue;
                    };
                    let src = self.world(m, sender, ANY_SOURCE);
                    if sendrecv {
                        (sr_recv, sr_comm) = (Some((src, tag as i32, bytes)), id);
                    } else {
                        self.acts.push(Action::Recv { src, tag: tag as i32, bytes, comm: id });
                    }
                }
                Event::MpiIsend { receiver, comm, tag, bytes, request } => {
                    let Some((id, m)) = self.comm(comm) else {
                        self.skip("MpiIsend on an undefined communicator");
                        continue;
                    };
                    let dst = self.world(m, receiver, PROC_NULL) as u32;
                    self.acts.push(wrap(Action::Isend { dst, tag: tag as i32, bytes, comm: id, req: request }));
                }
                Event::MpiIrecvRequest { request, posted } => {
                    let at = match posted {
                        Some(p) => Some((p.sender, p.comm, p.tag, p.bytes)),
                        None => match irecvs.get_mut(&request).and_then(|q| q.pop_front()) {
                            Some(Event::MpiIrecv { sender, comm, tag, bytes, .. }) => Some((sender, comm, tag, bytes)),
                            _ => None,
                        },
                    };
                    let (src, tag, bytes, comm) = match at.and_then(|(s, c, t, b)| self.comm(c).map(|(id, m)| (s, id, m, t, b))) {
                        Some((sender, id, m, tag, bytes)) => (self.world(m, sender, ANY_SOURCE), tag as i32, bytes, id),
                        None => (ANY_SOURCE, ANY_TAG, 0, 0),
                    };
                    self.acts.push(Action::Irecv { src, tag, bytes, comm, req: request });
                }
                Event::MpiRequestCancelled { request } => self.acts.push(Action::Cancel { req: request }),
                Event::MpiIsendComplete { request } | Event::MpiIrecv { request, .. } | Event::NbcComplete { request, .. } => {
                    done.push(request)
                }
                Event::IoOperationComplete { matching_id, .. } => {
                    if let Some(i) = nb_io.iter().position(|&m| m == matching_id) {
                        nb_io.swap_remove(i);
                        done.push(matching_id);
                    }
                }
                Event::MpiCollectiveBegin => {}
                Event::MpiCollectiveEnd { op, comm, root, sent, received, counts } => {
                    match self.coll(op, comm, root, sent, received, counts) {
                        Some(a) => self.acts.push(a),
                        None => self.skip(&format!("MpiCollectiveEnd of {}", op_label(op))),
                    }
                }
                Event::NbcRequest { request } => {
                    let coll = match irecvs.get_mut(&request).and_then(|q| q.pop_front()) {
                        Some(Event::NbcComplete { op, comm, root, sent, received, counts, .. }) => {
                            self.coll(op, comm, root, sent, received, counts)
                        }
                        _ => None,
                    };
                    match coll {
                        Some(coll) => self.acts.push(Action::Icoll { req: request, coll: Box::new(coll) }),
                        None => self.skip("NonBlockingCollectiveRequest without a known completion"),
                    }
                }
                Event::IoCreateHandle { handle } => {
                    let comm = self.a.io_handles.get(&handle).and_then(|h| h.comm).and_then(|g| self.comm(g)).map_or(0, |(id, _)| id);
                    self.acts.push(Action::Io { call: IoCall::Open { comm }, file: handle, offset: 0, bytes: 0, recorded_s: dur });
                }
                Event::IoDestroyHandle { handle } => {
                    self.acts.push(Action::Io { call: IoCall::Close, file: handle, offset: 0, bytes: 0, recorded_s: dur })
                }
                Event::IoOperationBegin { handle, mode, flags, bytes, matching_id, offset } => {
                    let nb = flags & c::IO_FLAG_NON_BLOCKING != 0;
                    let coll = flags & c::IO_FLAG_COLLECTIVE != 0;
                    let call = match (mode as u32, nb, coll) {
                        (c::IO_MODE_FLUSH, _, _) => IoCall::Sync,
                        (c::IO_MODE_READ, true, _) => IoCall::Iread { req: matching_id },
                        (c::IO_MODE_WRITE, true, _) => IoCall::Iwrite { req: matching_id },
                        (c::IO_MODE_READ, _, true) => IoCall::ReadAll,
                        (c::IO_MODE_WRITE, _, true) => IoCall::WriteAll,
                        (c::IO_MODE_READ, _, _) => IoCall::Read,
                        (c::IO_MODE_WRITE, _, _) => IoCall::Write,
                        _ => {
                            self.skip("IoOperationBegin of an unknown mode");
                            continue;
                        }
                    };
                    if nb {
                        nb_io.push(matching_id);
                    }
                    self.acts.push(Action::Io { call, file: handle, offset: offset.unwrap_or(0), bytes, recorded_s: dur });
                }
                Event::Enter { .. } | Event::Leave { .. } => {}
            }
        }
        if sendrecv && (sr_send.is_some() || sr_recv.is_some()) {
            let (dst, send_tag, send_bytes) = sr_send.unwrap_or((PROC_NULL as u32, 0, 0));
            let (src, recv_tag, recv_bytes) = sr_recv.unwrap_or((PROC_NULL, 0, 0));
            self.acts.push(Action::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm: sr_comm });
        }
        match done.len() {
            0 => {}
            1 => self.acts.push(Action::Wait { req: done[0] }),
            _ => self.acts.push(Action::Waitall { reqs: done }),
        }
    }

    /// The collective action of an `MpiCollectiveEnd` (sizes inverted from
    /// [`crate::otf2_out::coll_sizes`]; a v-collective's per-member
    /// `counts` when the archive has them, else its total spread evenly).
    fn coll(&self, op: u8, comm: u32, root: u32, sent: u64, received: u64, counts: Vec<u64>) -> Option<Action> {
        let (id, m) = self.comm(comm)?;
        let n = m.len().max(1) as u64;
        let root = || self.world(m, root, 0).max(0) as u32;
        let have = !counts.is_empty();
        let each = |total: u64| if have { counts.clone() } else { vec![total / n; n as usize] };
        Some(match op as u32 {
            c::BARRIER => Action::Barrier { comm: id },
            c::BCAST => Action::Bcast { root: root(), bytes: received, comm: id },
            c::REDUCE => Action::Reduce { root: root(), bytes: sent, comm: id },
            c::GATHER | c::GATHERV => Action::Gather { root: root(), bytes: sent, comm: id },
            c::SCATTER => Action::Scatter { root: root(), bytes: received, comm: id },
            c::SCATTERV => {
                let r = root();
                Action::Scatterv { root: r, send_bytes: if have || r == self.rank { each(sent) } else { Vec::new() }, comm: id }
            }
            c::ALLREDUCE => Action::Allreduce { bytes: sent / n, comm: id },
            c::ALLTOALL => Action::Alltoall { bytes: sent / n, comm: id },
            c::ALLGATHER => Action::Allgather { bytes: received / n, comm: id },
            c::ALLTOALLV | c::ALLTOALLW => Action::Alltoallv { send_bytes: each(sent), comm: id },
            c::ALLGATHERV => Action::Allgatherv { recv_bytes: each(received), comm: id },
            c::REDUCE_SCATTER | c::REDUCE_SCATTER_BLOCK => Action::ReduceScatter { recv_bytes: each(sent), comm: id },
            c::SCAN => Action::Scan { bytes: (sent + received) / (n + 1), exclusive: false, comm: id },
            c::EXSCAN => Action::Scan { bytes: (sent + received) / (n - 1).max(1), exclusive: true, comm: id },
            _ => return None,
        })
    }
}

/// A collective op's name for the skip report.
fn op_label(op: u8) -> String {
    match op as u32 {
        c::CREATE_HANDLE => "CREATE_HANDLE".into(),
        c::DESTROY_HANDLE => "DESTROY_HANDLE".into(),
        _ => otf2::coll_op_name(op).map_or_else(|| format!("op {op}"), str::to_string),
    }
}
