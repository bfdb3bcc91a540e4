//! The online clock's work queue: what the application did, in its
//! order ([`Ev`]), and the shadow messages that complete it ([`Input`]).
//!
//! The hooks only append to the queue. The pump runs it at the entry of
//! the rank's next MPI call (and at `MPI_Finalize`, and for a virtual
//! `MPI_Wtime`): it applies events in order while each has what it needs
//! and stops at the first that lacks a shadow message, to try again on
//! the next call. It never blocks, so the application never waits for
//! online mode's traffic. Why this cannot deadlock, and where it may
//! still wait, is in `docs/online-protocol.md`.
//!
//! - Events read or move the clock, so they run in program order.
//! - Inputs (a receive's companion, a rendezvous send's acknowledgement,
//!   a nonblocking collective's post times) do not read the clock: each
//!   is applied as soon as its message is in, whatever the queue's head
//!   waits for. A receiver therefore acknowledges a message as soon as
//!   its completion was reported and its companion came, not when its
//!   own queue gets there.

use std::collections::VecDeque;

use simulator::action::Action;
use simulator::network::rma::RmaMove;
use simulator::online::Pending;
use simulator::platform::RmaCallKind;
use simulator::trace::Op as Call;

use super::shadow::{Channel, Op};
use super::Online;

/// A bound on the events waiting in the queue: past it, online mode stops
/// (the rank is that far behind a peer that sends it nothing).
pub const MAX_QUEUE: usize = 1 << 22;

/// One thing the application did that the clock applies in order.
#[derive(Debug)]
pub enum Ev {
    /// A compute block of this many seconds (CPU time × region ratio),
    /// and its region id when named (for a DVFS policy's regions).
    Compute(f64, Option<u64>),
    /// A send posted as request `id`: to world rank `peer`, rank `local`
    /// of shadow `slot`, with `tag`; the companion goes out when it runs.
    Send { id: u64, peer: u32, bytes: u64, slot: u32, local: i32, tag: i32, call: Call },
    /// A receive posted as request `id`; `nonblocking`: by the
    /// application's `MPI_Irecv` (or a start), which costs `[smpi] irecv_s`.
    Recv { id: u64, nonblocking: bool },
    /// Requests `ids` completed (a wait, a successful test, a blocking
    /// call); `user_wait`: in the application's wait or test, which costs
    /// `[smpi] wait_s` per request.
    Wait { ids: Vec<u64>, call: Call, user_wait: bool },
    /// A blocking collective over `members` (world ranks) of shadow
    /// `slot`; `gather` is the exchange of entry times once posted.
    Coll { call: Call, action: Action, members: Vec<u32>, slot: u32, gather: Option<Op> },
    /// A nonblocking collective posted as request `id` (its action and
    /// members are in [`Online::nbcs`]) on shadow `slot`.
    Icoll { id: u64, slot: u32 },
    /// An independent MPI-IO call (a nonblocking one names its request id).
    Io { call: Call, action: Action },
    /// A collective MPI-IO access over `members` (world ranks) of shadow
    /// `slot`; `gather` is the exchange of `[entry time, offset, bytes,
    /// span]` once posted.
    CollIo { call: Call, action: Action, members: Vec<u32>, slot: u32, gather: Option<Op> },
    /// Request `id` was freed by the application (it completes unseen),
    /// or `cancelled` (no message of its will come).
    Forget { id: u64, cancelled: bool },
    /// The application freed the communicator of shadow `slot`.
    CommFree { slot: u32 },
    /// A one-sided data movement of `bytes` to world rank `target`.
    RmaMove { target: u32, kind: RmaMove, bytes: u64 },
    /// A synchronization of `kind` completing the one-sided operations to
    /// `target` (all targets for `None`).
    RmaSettle { target: Option<u32>, kind: RmaCallKind },
    /// A one-sided call whose only cost online is its call cost (a
    /// window's creation, lock, lock_all, post, start, wait).
    RmaCall { kind: RmaCallKind },
    /// A test that completed no request, or an `MPI_Iprobe` ([`Action::Poll`]).
    Poll,
}

/// A shadow message that completes a request, applied out of order.
#[derive(Debug)]
pub enum Input {
    /// The companion `[send post s, bytes, 1 when buffered]` of the message receive `id`
    /// matched, from rank `src` (world `src_world`) of shadow `slot` with `tag`.
    Companion { id: u64, slot: u32, src: i32, src_world: u32, tag: i32, call: Call, op: Op },
    /// The receive post time of rendezvous send `id` to world rank `peer`.
    Ack { id: u64, peer: u32, tag: i32, call: Call, op: Op },
    /// The post times of nonblocking collective `id`'s members.
    Gather { id: u64, call: Call, op: Op },
}

impl Input {
    fn id(&self) -> u64 {
        match self {
            Input::Companion { id, .. } | Input::Ack { id, .. } | Input::Gather { id, .. } => *id,
        }
    }

    fn op(&mut self) -> &mut Op {
        match self {
            Input::Companion { op, .. } | Input::Ack { op, .. } | Input::Gather { op, .. } => op,
        }
    }

    /// What this input waits for, for the stall warning.
    fn describe(&self) -> String {
        match self {
            Input::Companion { src_world, tag, call, .. } => {
                format!("the companion of the message from rank {src_world} (tag {tag}) its {} matched", call.mpi_name())
            }
            Input::Ack { peer, tag, call, .. } => {
                format!("the acknowledgement of its rendezvous {} to rank {peer} (tag {tag})", call.mpi_name())
            }
            Input::Gather { call, .. } => format!("the members' post times of its {}", call.mpi_name()),
        }
    }
}

/// The pump's queues, part of the rank's [`Online`] state.
#[derive(Debug, Default)]
pub struct Work {
    pub queue: VecDeque<Ev>,
    pub inputs: Vec<Input>,
    /// Sends in flight (companions, acknowledgements), dropped once complete.
    pub outgoing: Vec<Op>,
    /// Calls of [`Online::pump`] that applied anything.
    pub progress: u64,
}

impl Work {
    /// Nothing queued, awaited or in flight.
    pub fn idle(&self) -> bool {
        self.queue.is_empty() && self.inputs.is_empty() && self.outgoing.is_empty()
    }

    /// Everything queued is on the clock (inputs for requests not yet
    /// waited and sends in flight may remain).
    pub fn applied(&self) -> bool {
        self.queue.is_empty()
    }
}

impl Online {
    /// Applies what can be applied now; true when anything was.
    pub fn pump(&mut self) -> bool {
        let mut progressed = false;
        self.work.outgoing.retain_mut(|o| !o.test());
        loop {
            progressed |= self.take_inputs();
            let Some(mut ev) = self.work.queue.pop_front() else { break };
            if self.step(&mut ev) {
                progressed = true;
            } else {
                self.work.queue.push_front(ev);
                if !self.take_inputs() {
                    break;
                }
                progressed = true;
            }
        }
        self.work.progress += u64::from(progressed);
        progressed
    }

    /// Applies every input whose message is in; true when any was.
    fn take_inputs(&mut self) -> bool {
        let mut taken = false;
        let mut i = 0;
        while i < self.work.inputs.len() {
            let ready = {
                let input = &mut self.work.inputs[i];
                // A companion waits until its receive's post is applied.
                let posted = match input {
                    Input::Companion { id, .. } => self.clock.pending(*id) == Pending::Recv,
                    _ => true,
                };
                posted && input.op().test()
            };
            if ready {
                let input = self.work.inputs.swap_remove(i);
                self.apply(input);
                taken = true;
            } else {
                i += 1;
            }
        }
        taken
    }

    fn apply(&mut self, input: Input) {
        match input {
            Input::Companion { id, slot, src, src_world, tag, op, .. } => {
                let (send_post, bytes, buffered) = (op.data()[0], op.data()[1] as u64, op.data()[2] != 0.0);
                if let Some((recv_post, false)) = self.clock.recv_matched_with(id, src_world, bytes, send_post, buffered) {
                    self.work.outgoing.extend(Op::isend(slot, Channel::Ack, src, tag, &[recv_post]));
                }
            }
            Input::Ack { id, op, .. } => {
                self.clock.send_matched(id, op.data()[0]);
            }
            Input::Gather { id, op, .. } => {
                if let Some(nbc) = self.nbcs.remove(&id) {
                    let n = nbc.members.len();
                    let width = 1 + simulator::online::member_sizes(&nbc.action, n).len();
                    let (entries, sizes) = split_gathered(&op.data()[..n * width], width);
                    self.icoll_matched(id, &nbc, &entries, &sizes);
                }
            }
        }
    }

    /// Applies `ev` if it has what it needs; false to try again later.
    fn step(&mut self, ev: &mut Ev) -> bool {
        match ev {
            Ev::Compute(s, region) => self.clock.compute_in(*s, *region),
            Ev::Send { id, peer, bytes, slot, local, tag, call } => {
                let buffered = matches!(call, Call::Bsend | Call::Ibsend | Call::BsendInit);
                let s = match buffered {
                    true => self.clock.isend_buffered(*id, *peer, *bytes),
                    false => self.clock.isend(*id, *peer, *bytes),
                };
                let companion = [s.post_s, *bytes as f64, buffered as u8 as f64];
                self.work.outgoing.extend(Op::isend(*slot, Channel::Fwd, *local, *tag, &companion));
                if !s.eager {
                    if let Some(op) = Op::irecv(*slot, Channel::Ack, *local, *tag, 1) {
                        self.work.inputs.push(Input::Ack { id: *id, peer: *peer, tag: *tag, call: *call, op });
                    }
                }
            }
            Ev::Recv { id, nonblocking } => {
                match nonblocking {
                    true => self.clock.irecv(*id),
                    false => self.clock.recv_post(*id),
                };
            }
            Ev::Wait { ids, user_wait, .. } => {
                if self.work.inputs.iter().any(|i| ids.contains(&i.id())) {
                    return false;
                }
                match user_wait {
                    true => self.clock.wait(ids),
                    false => {
                        self.clock.complete(ids);
                    }
                }
            }
            Ev::Coll { call, action, members, slot, gather } => {
                // Each member's entry time, then what its action has that
                // the others' do not (a gather's own size, a scatterv
                // root's or an all-to-all-v member's send sizes).
                let n = members.len();
                let own = simulator::online::member_sizes(action, n);
                let width = 1 + own.len();
                let values = || std::iter::once(self.clock.now()).chain(own.iter().map(|&b| b as f64)).collect();
                let got = match gathered(gather, *slot, n, width, values) {
                    Gathered::Failed => {
                        self.unmodelled.insert(call.mpi_name());
                        return true;
                    }
                    Gathered::Waiting => return false,
                    Gathered::In(values) => values,
                };
                let (entries, sizes) = split_gathered(got, width);
                if let Err(e) = self.clock.collective_sized(action, members, &entries, &sizes) {
                    unmodelled(&mut self.unmodelled, self.rank, *call, &e);
                }
            }
            Ev::Io { call, action } => {
                if let Err(e) = self.clock.io(action) {
                    unmodelled(&mut self.unmodelled, self.rank, *call, &e);
                }
            }
            Ev::CollIo { call, action, members, slot, gather } => {
                // Run as independent accesses (or no file system).
                if gather.is_none() && self.clock.io_part(action, members.len()).is_none() {
                    if let Err(e) = self.clock.io(action) {
                        unmodelled(&mut self.unmodelled, self.rank, *call, &e);
                    }
                    return true;
                }
                let part = || {
                    let (offset, bytes, span) = self.clock.io_part(action, members.len()).unwrap_or_default();
                    vec![self.clock.now(), offset as f64, bytes as f64, span as f64]
                };
                let got = match gathered(gather, *slot, members.len(), 4, part) {
                    Gathered::Failed => {
                        self.unmodelled.insert(call.mpi_name());
                        return true;
                    }
                    Gathered::Waiting => return false,
                    Gathered::In(values) => values,
                };
                let entries: Vec<f64> = got.chunks(4).map(|v| v[0]).collect();
                let parts: Vec<(u64, u64, u64)> = got.chunks(4).map(|v| (v[1] as u64, v[2] as u64, v[3] as u64)).collect();
                if let Err(e) = self.clock.collective_io(action, members, &entries, &parts) {
                    unmodelled(&mut self.unmodelled, self.rank, *call, &e);
                }
            }
            Ev::Icoll { id, slot } => {
                let post = self.clock.icoll(*id);
                let n = self.nbcs.get(id).map_or(0, |c| c.members.len());
                let own = self.nbcs.get(id).map_or_else(Vec::new, |c| simulator::online::member_sizes(&c.action, n));
                let values: Vec<f64> = std::iter::once(post).chain(own.iter().map(|&b| b as f64)).collect();
                match Op::iallgather(*slot, &values, n) {
                    Some(op) => {
                        let call = self.nbcs.get(id).map_or(Call::Ibarrier, |c| c.call);
                        self.work.inputs.push(Input::Gather { id: *id, call, op });
                    }
                    None => {
                        if let Some(nbc) = self.nbcs.remove(id) {
                            self.unmodelled.insert(nbc.call.mpi_name());
                        }
                    }
                }
            }
            Ev::Forget { id, cancelled } => {
                if *cancelled {
                    // A cancelled send's acknowledgement never comes.
                    self.work.inputs.retain(|i| i.id() != *id);
                }
                // A freed send's acknowledgement still comes and is taken;
                // a freed receive or collective is forgotten.
                if *cancelled || matches!(self.clock.pending(*id), Pending::Recv | Pending::Collective) {
                    self.nbcs.remove(id);
                    self.clock.complete(&[*id]);
                }
            }
            Ev::CommFree { slot } => super::shadow::free_shadow(*slot),
            Ev::RmaMove { target, kind, bytes } => self.clock.rma_move(*target, *kind, *bytes),
            Ev::RmaSettle { target, kind } => self.clock.rma_settle(*target, *kind),
            Ev::RmaCall { kind } => self.clock.rma_call(*kind),
            Ev::Poll => self.clock.poll(),
        }
        true
    }

    /// What the queue's head waits for, for the stall warning.
    pub fn stuck_on(&self) -> String {
        let Some(ev) = self.work.queue.front() else { return "its last messages".into() };
        match ev {
            Ev::Wait { ids, call, .. } => {
                let what = self.work.inputs.iter().find(|i| ids.contains(&i.id())).map_or_else(|| "nothing".into(), Input::describe);
                format!("{} waits for {what}", call.mpi_name())
            }
            Ev::Coll { call, members, .. } | Ev::CollIo { call, members, .. } => {
                format!("{} waits for the entry times of its {} members", call.mpi_name(), members.len())
            }
            other => format!("{other:?}"),
        }
    }
}

/// Lists `call` among the calls that cost no virtual time, with one
/// warning (the first time) saying why.
fn unmodelled(set: &mut std::collections::BTreeSet<&'static str>, rank: u32, call: Call, e: &dyn std::fmt::Display) {
    if set.insert(call.mpi_name()) {
        crate::ffi::warn(Some(rank), &format!("online mode: {e}; it costs no virtual time"));
    }
}

/// Where a collective's exchange of its members' values stands.
enum Gathered<'a> {
    /// Every member's values, in rank order.
    In(&'a [f64]),
    /// Not all in yet.
    Waiting,
    /// It could not be posted (no shadow of that size).
    Failed,
}

/// The members' entry (or post) times and [`simulator::online::member_sizes`]
/// from a gather of `width` values per member (sizes empty for a width of 1).
fn split_gathered(got: &[f64], width: usize) -> (Vec<f64>, Vec<Vec<u64>>) {
    let entries = got.chunks(width).map(|v| v[0]).collect();
    let sizes = match width {
        1 => Vec::new(),
        _ => got.chunks(width).map(|v| v[1..].iter().map(|&b| b as u64).collect()).collect(),
    };
    (entries, sizes)
}

/// Posts `gather`, the exchange among the `n` members of shadow `slot` of
/// the `width` values `values` gives each, the first time; then tests it.
fn gathered(gather: &mut Option<Op>, slot: u32, n: usize, width: usize, values: impl FnOnce() -> Vec<f64>) -> Gathered<'_> {
    if gather.is_none() {
        *gather = Op::iallgather(slot, &values(), n);
    }
    let Some(op) = gather.as_mut() else { return Gathered::Failed };
    if !op.test() {
        return Gathered::Waiting;
    }
    Gathered::In(&op.data()[..n * width])
}
