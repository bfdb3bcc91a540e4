//! One-sided communication (MPI RMA) in the engine: windows, the
//! transfers of `Put`/`Get`/`Accumulate` and the epoch synchronizations.
//!
//! The model, after SimGrid's SMPI (`smpi_win.cpp`, `smpi_rma.cpp`), with
//! costs from the platform's network model ([`P2pModel`]):
//!
//! * A put or accumulate of `b` bytes issued at `t` reaches the target at
//!   `t + d(b)`, with no action of the target (its clock is not touched);
//!   a get brings the data back at `t + d(b)`. `d` is the platform's
//!   measured one-sided cost when it has one (`rma` in the network model:
//!   put, get, accumulate; a get-accumulate, fetch-and-op or
//!   compare-and-swap takes the accumulate's), else SMPI's derivation from
//!   point-to-point transfers: `transfer(b)` for a put or accumulate,
//!   `transfer(0) + transfer(b)` for a get, `2·transfer(b)` for a
//!   get-accumulate ([`RmaMove::cost`]). Between hosts the origin is busy
//!   `send_overhead(b)`; within a host it copies the data itself and is
//!   busy until then; to itself a movement costs nothing. A request-based
//!   call (`MPI_Rput`, …) completes its request at that time. Transfers do
//!   not share links.
//! * Every call first costs the rank its CPU time: its own measured cost
//!   for a window's creation and free, lock, unlock, post and complete
//!   (`[smpi.rma_calls]`), else `[smpi] rma_call_s` (a creation: 0), both
//!   measured by `calibrate network`; 0 by default.
//! * Completion: an origin's operations complete at the synchronization
//!   that ends them (fence, unlock, flush, complete, free): its clock
//!   moves to the latest completion time of its operations to the targets
//!   concerned. The local flushes wait as the remote ones.
//! * Fence (active target): the above, then a barrier on the window's
//!   communicator (SMPI also ends a fence with a barrier), so no rank
//!   leaves a fence before every operation of the epoch reached its target.
//!   Creation and `MPI_Win_free` are barriers too.
//! * PSCW (active target, generalized): `post` sends a notice to each
//!   origin (`transfer(0)` later there) and does not block; `start` waits
//!   for the notice of every target; `complete` ends the origin's
//!   operations, then sends a notice to each target; `wait` waits for the
//!   notice of every origin of the exposure epoch.
//! * Passive target: `lock` is granted when compatible (shared with
//!   shared), else the rank waits, first come first served, until the
//!   holder's `unlock`; `unlock` ends the origin's operations to that
//!   target, then releases the lock. Requests are served in the order of
//!   their simulated times. As in SMPI, taking a lock costs no
//!   message. `lock_all` takes no lock (it never waits: shared locks only
//!   conflict with exclusive ones, which programs rarely mix with it).

use std::collections::{HashMap, VecDeque};

use super::wait::resolve;
use super::*;
use crate::action::RmaCall;
use crate::network::rma::{RmaMove, RmaPeer};
use crate::platform::RmaCallKind;

/// A window as all its ranks see it.
#[derive(Debug, Default)]
struct Win {
    /// Per (origin, target) world ranks: when the origin's operations
    /// issued since its last synchronization complete, seconds.
    pending: HashMap<(u32, u32), f64>,
    /// Passive-target lock of each target.
    locks: HashMap<u32, Lock>,
    /// PSCW: per (target, origin), when each post's notice reaches the
    /// origin, oldest first.
    posts: HashMap<(u32, u32), VecDeque<f64>>,
    /// PSCW: per (origin, target), when each complete's notice reaches the target.
    dones: HashMap<(u32, u32), VecDeque<f64>>,
    /// Targets of each rank's access epoch (its last `start`).
    access: HashMap<u32, Vec<u32>>,
    /// Origins of each rank's exposure epoch (its last `post`).
    exposure: HashMap<u32, Vec<u32>>,
}

/// A target's lock: how many hold it, whether exclusively, and who waits.
/// A holder's unlock may run ahead of the ranks asking later (its clock
/// moved past theirs while it waited for its operations): the release
/// times say when the lock really became free.
#[derive(Debug, Default)]
struct Lock {
    holders: u32,
    exclusive: bool,
    /// When every hold so far was released, seconds: an exclusive request
    /// is granted no earlier.
    free_at: f64,
    /// When every exclusive hold so far was released, seconds: a shared
    /// request is granted no earlier.
    shared_at: f64,
    /// Ranks waiting for it and whether they asked for it exclusively.
    waiters: VecDeque<(u32, bool)>,
}

/// What a rank blocked in an RMA synchronization waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocked {
    /// A lock (granted by the holder's unlock).
    Lock,
    /// The post notices of window `win`'s access epoch.
    Start { win: usize },
    /// The complete notices of window `win`'s exposure epoch.
    Wait { win: usize },
}

/// The windows of a replay. A window is identified across ranks by its
/// communicator and how many windows the rank created on it before
/// (creation is collective, so all members see the same order), as
/// communicators are ([`super::comms`]).
#[derive(Debug)]
pub(super) struct RmaState {
    /// (rank, its window id) → (global window, its communicator id).
    local: HashMap<(u32, u32), (usize, u32)>,
    /// (rank, global communicator) → windows the rank created on it so far.
    created: HashMap<(u32, u32), u32>,
    /// (global communicator, index of creation on it) → global window.
    by_key: HashMap<(u32, u32), usize>,
    wins: Vec<Win>,
    /// What each rank blocked in an RMA synchronization waits for, by rank
    /// (ranks that make no one-sided call cost nothing here).
    blocked: HashMap<u32, Blocked>,
}

impl RmaState {
    pub(super) fn new() -> RmaState {
        RmaState { local: HashMap::new(), created: HashMap::new(), by_key: HashMap::new(), wins: Vec::new(), blocked: HashMap::new() }
    }
}

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Runs rank `r`'s [`Action::Rma`].
    pub(super) fn rma(&mut self, r: usize, action: &Action) -> Result<Flow, ReplayError> {
        let Action::Rma { win, ref call } = *action else { unreachable!("called on Rma actions") };
        if let RmaCall::Create { comm } = *call {
            let Some(g) = self.comms.global(r, comm) else {
                let why = format!("communicator {comm} of rank {r} was never created in its trace");
                return Err(self.err(r, action, why, true));
            };
            let st = &mut self.rma;
            let nth = st.created.entry((r as u32, g)).or_insert(0);
            let key = (g, *nth);
            *nth += 1;
            let next = st.wins.len();
            let w = *st.by_key.entry(key).or_insert(next);
            if w == next {
                st.wins.push(Win::default());
            }
            st.local.insert((r as u32, win), (w, comm));
            self.rma_call_cost(r, RmaCallKind::Create);
            return self.start_coll(r, &Action::Barrier { comm });
        }
        let Some(&(w, comm)) = self.rma.local.get(&(r as u32, win)) else {
            let why = format!("window {win} of rank {r} was never created in its trace");
            return Err(self.err(r, action, why, false));
        };
        let me = r as u32;
        self.rma_call_cost(r, call.cost_kind());
        if let Some((kind, target, bytes, req)) = call.movement() {
            self.rma_move(r, action, w, target, bytes, req, kind)?;
            return Ok(Flow::Continue);
        }
        match *call {
            RmaCall::Create { .. } => unreachable!("handled above"),
            RmaCall::Free => {
                self.rma_settle(r, w, None);
                self.rma.local.remove(&(r as u32, win));
                return self.start_coll(r, &Action::Barrier { comm });
            }
            RmaCall::Put { .. } | RmaCall::Accumulate { .. } | RmaCall::Get { .. } | RmaCall::GetAccumulate { .. } => {
                unreachable!("data movements handled above")
            }
            RmaCall::Fence => {
                self.rma_settle(r, w, None);
                return self.start_coll(r, &Action::Barrier { comm });
            }
            RmaCall::Lock { target, exclusive } => {
                self.dst(r, action, target)?;
                let lock = self.rma.wins[w].locks.entry(target).or_default();
                let free = lock.holders == 0 || (!exclusive && !lock.exclusive);
                if free && lock.waiters.is_empty() {
                    lock.holders += 1;
                    lock.exclusive = exclusive;
                    let at = if exclusive { lock.free_at } else { lock.shared_at };
                    self.rma_until(r, at, false);
                } else {
                    lock.waiters.push_back((me, exclusive));
                    return Ok(self.rma_block(r, Blocked::Lock, "MPI_Win_lock", win));
                }
            }
            RmaCall::Unlock { target } => {
                self.rma_settle(r, w, Some(target));
                let at = self.ranks[r].clock;
                self.rma_unlock(w, target, at)?;
            }
            RmaCall::LockAll => {}
            RmaCall::UnlockAll => self.rma_settle(r, w, None),
            RmaCall::Flush { target } => self.rma_settle(r, w, target),
            RmaCall::Post { ref origins } => {
                let now = self.ranks[r].clock;
                for &o in origins {
                    let at = now + self.model(r, self.dst(r, action, o)?).transfer.eval(0);
                    self.rma.wins[w].posts.entry((me, o)).or_default().push_back(at);
                }
                self.rma.wins[w].exposure.insert(me, origins.clone());
                for &o in origins {
                    if self.rma.blocked.get(&o) == Some(&Blocked::Start { win: w }) {
                        self.rma_retry(o as usize, Blocked::Start { win: w })?;
                    }
                }
            }
            RmaCall::Start { ref targets } => {
                for &t in targets {
                    self.dst(r, action, t)?;
                }
                self.rma.wins[w].access.insert(me, targets.clone());
                match self.rma_ready(r, Blocked::Start { win: w }) {
                    Some(at) => self.rma_until(r, at, false),
                    None => return Ok(self.rma_block(r, Blocked::Start { win: w }, "MPI_Win_start", win)),
                }
            }
            RmaCall::Complete => {
                let targets = self.rma.wins[w].access.remove(&me).unwrap_or_default();
                for &t in &targets {
                    self.rma_settle(r, w, Some(t));
                }
                let now = self.ranks[r].clock;
                for &t in &targets {
                    let at = now + self.model(r, t as usize).transfer.eval(0);
                    self.rma.wins[w].dones.entry((me, t)).or_default().push_back(at);
                    if self.rma.blocked.get(&t) == Some(&Blocked::Wait { win: w }) {
                        self.rma_retry(t as usize, Blocked::Wait { win: w })?;
                    }
                }
            }
            RmaCall::Wait => match self.rma_ready(r, Blocked::Wait { win: w }) {
                Some(at) => self.rma_until(r, at, false),
                None => return Ok(self.rma_block(r, Blocked::Wait { win: w }, "MPI_Win_wait", win)),
            },
        }
        Ok(Flow::Continue)
    }

    /// Issues a put, get or get-accumulate of `bytes` from `r` to `target`
    /// on window `w` (model in the module doc).
    #[allow(clippy::too_many_arguments)]
    fn rma_move(
        &mut self,
        r: usize,
        action: &Action,
        w: usize,
        target: u32,
        bytes: u64,
        req: u64,
        kind: RmaMove,
    ) -> Result<(), ReplayError> {
        let t = self.dst(r, action, target)?;
        let peer = RmaPeer::of(r as u32, target, self.hosts[r] == self.hosts[t]);
        let cost = kind.cost(self.model(r, t), bytes, peer);
        let start = self.ranks[r].clock;
        let rk = &mut self.ranks[r];
        rk.clock += cost.busy_s;
        rk.stats.comm_s += cost.busy_s;
        if peer != RmaPeer::Itself {
            rk.stats.messages += 1;
            rk.stats.bytes_sent += kind.bytes_sent(bytes);
        }
        let done = start + cost.done_after_s;
        let p = self.rma.wins[w].pending.entry((r as u32, target)).or_insert(done);
        *p = p.max(done);
        if req != 0 {
            let slot = self.ranks[r].reqs.alloc_user(req);
            self.complete(r, slot, done, cost.done_after_s)?;
        }
        Ok(())
    }

    /// Rank `r` is busy the CPU time of one-sided call `kind` ([`Smpi::rma_call_cost`](crate::platform::Smpi::rma_call_cost)).
    fn rma_call_cost(&mut self, r: usize, kind: RmaCallKind) {
        self.busy_in_call(r, self.platform.smpi.rma_call_cost(kind));
    }

    /// Rank `r` waits for its operations on window `w` to `target` (all
    /// targets for `None`) to complete; the time is communication.
    fn rma_settle(&mut self, r: usize, w: usize, target: Option<u32>) {
        let me = r as u32;
        let pending = &mut self.rma.wins[w].pending;
        let until = match target {
            Some(t) => pending.remove(&(me, t)).unwrap_or(0.0),
            None => {
                let mine: Vec<(u32, u32)> = pending.keys().filter(|k| k.0 == me).copied().collect();
                mine.iter().filter_map(|k| pending.remove(k)).fold(0.0, f64::max)
            }
        };
        self.rma_until(r, until, true);
    }

    /// Moves `r`'s clock to `at` if later: communication time when `comm`,
    /// else waiting time.
    fn rma_until(&mut self, r: usize, at: f64, comm: bool) {
        let rk = &mut self.ranks[r];
        if at > rk.clock {
            let since = rk.clock;
            rk.block = Block { wait: Wait { since, resume: at, d: if comm { at - since } else { 0.0 } }, pending: 0, adds: 0, extra: 0.0 };
            resolve(rk);
            if let Some(tl) = self.timeline.as_mut() {
                tl.span(r, "MPI RMA synchronization", since, at);
            }
        }
    }

    /// Blocks `r` on `b` in MPI call `name` on its window `win`.
    fn rma_block(&mut self, r: usize, b: Blocked, name: &'static str, win: u32) -> Flow {
        let rk = &mut self.ranks[r];
        rk.block = Block { wait: Wait::at(rk.clock), pending: 0, adds: 0, extra: 0.0 };
        rk.status = Status::Blocked;
        rk.doing = Doing::Rma { name, win };
        self.rma.blocked.insert(r as u32, b);
        Flow::Blocked
    }

    /// When the notices `r` waits for in `b` arrived: consumes them and
    /// returns the time the last reached `r`; `None` while one is missing.
    fn rma_ready(&mut self, r: usize, b: Blocked) -> Option<f64> {
        let me = r as u32;
        let (w, peers, start) = match b {
            Blocked::Start { win } => (win, self.rma.wins[win].access.get(&me)?.clone(), true),
            Blocked::Wait { win } => (win, self.rma.wins[win].exposure.get(&me)?.clone(), false),
            Blocked::Lock => return None,
        };
        // Posts are keyed (target, origin), completes (origin, target):
        // either way (peer, me).
        let win = &mut self.rma.wins[w];
        let book = if start { &mut win.posts } else { &mut win.dones };
        if !peers.iter().all(|&p| book.get(&(p, me)).is_some_and(|q| !q.is_empty())) {
            return None;
        }
        Some(peers.iter().filter_map(|&p| book.get_mut(&(p, me)).and_then(VecDeque::pop_front)).fold(0.0, f64::max))
    }

    /// Wakes `r`, blocked on `b`, if what it waits for arrived.
    fn rma_retry(&mut self, r: usize, b: Blocked) -> Result<(), ReplayError> {
        match self.rma_ready(r, b) {
            Some(at) => self.rma_wake(r, at),
            None => Ok(()),
        }
    }

    /// Ends `r`'s RMA block at `at` (or its block's start, if later).
    fn rma_wake(&mut self, r: usize, at: f64) -> Result<(), ReplayError> {
        self.rma.blocked.remove(&(r as u32));
        let rk = &mut self.ranks[r];
        rk.block.wait.resume = rk.block.wait.since.max(at);
        resolve(rk);
        self.queue.schedule(rk.clock, Kind::Rank(r as u32))
    }

    /// Releases one hold of `target`'s lock on window `w` at `at` and
    /// grants it to the first waiters it can: one exclusive, or every
    /// shared one up to the next exclusive.
    fn rma_unlock(&mut self, w: usize, target: u32, at: f64) -> Result<(), ReplayError> {
        let Some(lock) = self.rma.wins[w].locks.get_mut(&target) else { return Ok(()) };
        lock.holders = lock.holders.saturating_sub(1);
        lock.free_at = lock.free_at.max(at);
        if lock.exclusive {
            lock.shared_at = lock.shared_at.max(at);
        }
        let mut granted = Vec::new();
        while let Some(&(o, exclusive)) = lock.waiters.front() {
            let free = lock.holders == 0 || (!exclusive && !lock.exclusive);
            if !free {
                break;
            }
            lock.waiters.pop_front();
            lock.holders += 1;
            lock.exclusive = exclusive;
            granted.push(o);
            if exclusive {
                break;
            }
        }
        for o in granted {
            self.rma_wake(o as usize, at)?;
        }
        Ok(())
    }
}
