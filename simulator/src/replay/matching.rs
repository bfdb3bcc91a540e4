//! Point-to-point matching state: per-rank request slots and per
//! (receiver, context) queues of unmatched sends and posted receives,
//! with MPI's matching rule (Message Passing Interface Forum, MPI 4.0
//! §3.5: source or `MPI_ANY_SOURCE`, tag or `MPI_ANY_TAG`, first posted
//! first matched, no overtaking between a pair on one communicator).
//! The queues are FIFO lists threaded through two node pools shared by
//! every mailbox ([`Mail`]), so per-rank state stays a few words for
//! ranks that have nothing in flight. A mailbox holding many posted
//! receives keeps those from one source in a list per source, each
//! receive numbered in post order, so a send meets the first receive of
//! its source and the first from any source and takes the earlier. A
//! mailbox holding many unexpected sends likewise keeps them in a list
//! per source, each numbered in arrival order, so a receive from one
//! source finds its send without walking past the other sources' sends.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::trace::record::{ANY_SOURCE, ANY_TAG};

mod inline;
use inline::InlineVec;

/// Slot index meaning "no request" (eager blocking sends need none).
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Multiplicative hasher for opaque 64-bit request handles. The high half
/// of the product is folded down because handles may be aligned pointers
/// (OpenMPI), whose low bits would otherwise stay constant.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        let h = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
/// State of a request slot.
pub(crate) enum SlotState {
    /// On the free list.
    #[default]
    Free,
    /// Posted; its completion time is not known yet.
    Pending,
    /// Completion time and the model's own duration `d` (the accounting
    /// rule of `engine::Block`), seconds.
    Done { at: f64, d: f64 },
    /// A matched receive whose transfer takes its turn in the receiver's
    /// copy lane at the call that completes it (`engine::lanes`).
    Queued,
}

/// One request of a rank, 24 bytes: its [`SlotState`] is kept as a
/// phase byte beside the completion's two times, so that a rank's
/// inline slots take three cache lines.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    /// Completion time when done, seconds.
    at: f64,
    /// The model's own duration when done, seconds.
    d: f64,
    /// 0 free, 1 pending, 2 done, 3 queued.
    phase: u8,
    /// A wait of the owner counts on this slot.
    pub(crate) waited: bool,
    /// No one can wait on this slot any more (handle reused or null).
    pub(crate) orphan: bool,
    /// A step of a nonblocking collective's schedule (`engine::nbc`).
    pub(crate) nbc: bool,
    /// The next free slot while this one is free ([`NO_SLOT`]: none).
    next_free: u32,
}

/// User handle → slot of one rank: a short list searched in order while
/// it holds at most [`UserMap::SMALL`] handles (no table per rank, the
/// first [`INLINE_HANDLES`] inside the rank), a hash map beyond.
#[derive(Debug)]
enum UserMap {
    /// Few handles: `(handle, slot)` pairs.
    Small(InlineVec<(u64, u32), INLINE_HANDLES>),
    /// Many handles.
    Large(HashMap<u64, u32, BuildHasherDefault<IdHasher>>),
}

impl Default for UserMap {
    fn default() -> Self {
        UserMap::Small(InlineVec::default())
    }
}

impl Slot {
    /// Where it is in its life.
    pub(crate) fn state(&self) -> SlotState {
        match self.phase {
            0 => SlotState::Free,
            1 => SlotState::Pending,
            3 => SlotState::Queued,
            _ => SlotState::Done { at: self.at, d: self.d },
        }
    }

    /// Moves it to `state`.
    pub(crate) fn set_state(&mut self, state: SlotState) {
        self.phase = match state {
            SlotState::Free => 0,
            SlotState::Pending => 1,
            SlotState::Queued => 3,
            SlotState::Done { at, d } => {
                (self.at, self.d) = (at, d);
                2
            }
        };
    }
}

impl UserMap {
    /// Handles a rank holds before its map becomes a hash map.
    const SMALL: usize = 16;

    /// Maps `id` to `slot`; the slot it mapped to before, if any.
    fn insert(&mut self, id: u64, slot: u32) -> Option<u32> {
        match self {
            UserMap::Small(v) => {
                if let Some(e) = v.iter_mut().find(|e| e.0 == id) {
                    return Some(std::mem::replace(&mut e.1, slot));
                }
                if v.len() < Self::SMALL {
                    v.push((id, slot));
                    return None;
                }
                let mut m: HashMap<u64, u32, BuildHasherDefault<IdHasher>> = v.take_all().collect();
                m.insert(id, slot);
                *self = UserMap::Large(m);
                None
            }
            UserMap::Large(m) => m.insert(id, slot),
        }
    }

    /// Forgets `id`; its slot, if it had one.
    fn remove(&mut self, id: u64) -> Option<u32> {
        match self {
            UserMap::Small(v) => {
                let i = v.iter().position(|e| e.0 == id)?;
                Some(v.swap_remove(i).1)
            }
            UserMap::Large(m) => m.remove(&id),
        }
    }

    /// The slot of `id`, if any.
    fn get(&self, id: u64) -> Option<u32> {
        match self {
            UserMap::Small(v) => v.iter().find(|e| e.0 == id).map(|e| e.1),
            UserMap::Large(m) => m.get(&id).copied(),
        }
    }
}

/// Request slots a rank holds inside its own state before its slab
/// spills to the heap (a halo exchange's requests and a collective round's).
const INLINE_SLOTS: usize = 8;

/// User handles a rank maps inside its own state ([`UserMap`]).
const INLINE_HANDLES: usize = 8;

/// A rank's requests: a slab of slots plus the user handle → slot map.
pub(crate) struct Requests {
    pub(crate) slots: InlineVec<Slot, INLINE_SLOTS>,
    /// The last slot released (a stack through [`Slot`]'s `next_free`).
    free: u32,
    user: UserMap,
}

impl Default for Requests {
    fn default() -> Self {
        Requests { slots: InlineVec::default(), free: NO_SLOT, user: UserMap::default() }
    }
}

impl Requests {
    pub(crate) fn alloc(&mut self) -> u32 {
        let fresh = Slot { at: 0.0, d: 0.0, phase: 1, waited: false, orphan: false, nbc: false, next_free: NO_SLOT };
        match self.free {
            NO_SLOT => {
                self.slots.push(fresh);
                (self.slots.len() - 1) as u32
            }
            s => {
                self.free = self.slots[s as usize].next_free;
                self.slots[s as usize] = fresh;
                s
            }
        }
    }

    /// A slot for user handle `id`; a still-live slot under the same
    /// handle is orphaned (MPI lets a completed handle be reused).
    pub(crate) fn alloc_user(&mut self, id: u64) -> u32 {
        let s = self.alloc();
        if id == 0 {
            self.slots[s as usize].orphan = true;
        } else if let Some(old) = self.user.insert(id, s) {
            match self.slots[old as usize].state() {
                SlotState::Pending => self.slots[old as usize].orphan = true,
                _ => self.release(old),
            }
        }
        s
    }

    /// The slot of user handle `id`, forgetting the handle (a wait
    /// consumes it); `None` for null or unknown handles.
    pub(crate) fn take_user(&mut self, id: u64) -> Option<u32> {
        self.user.remove(id)
    }

    /// The slot of user handle `id`, keeping the handle.
    pub(crate) fn user_slot(&self, id: u64) -> Option<u32> {
        self.user.get(id)
    }

    pub(crate) fn release(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        slot.set_state(SlotState::Free);
        slot.next_free = self.free;
        self.free = s;
    }
}

/// A message posted to a receiver and not yet matched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendMsg {
    pub(crate) src: u32,
    pub(crate) tag: i32,
    pub(crate) bytes: u64,
    pub(crate) post: f64,
    pub(crate) eager: bool,
    /// Sender's slot for rendezvous; [`NO_SLOT`] for eager.
    pub(crate) slot: u32,
    /// Arrival order among the unexpected sends ([`Mail::push_send`] sets it).
    pub(crate) seq: u64,
}

/// A receive posted and not yet matched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvPost {
    pub(crate) src: i32,
    pub(crate) tag: i32,
    pub(crate) post: f64,
    pub(crate) slot: u32,
    /// Post order among the replay's receives (set by [`Mail::post_recv`]).
    pub(crate) seq: u64,
}

/// A FIFO list of a [`Pool`]: first and last node ([`NIL`] when empty).
#[derive(Debug, Clone, Copy)]
pub(crate) struct List {
    head: u32,
    tail: u32,
}

/// No node.
const NIL: u32 = u32::MAX;

impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL }
    }
}

/// Nodes of many FIFO [`List`]s in one slab with a free list: the
/// unmatched sends (or receives) of every mailbox of a replay, so a
/// mailbox holds two words per list instead of a buffer of its own.
#[derive(Debug)]
pub(crate) struct Pool<T> {
    /// Each node's value and the next node of its list (or of the free list).
    nodes: Vec<(T, u32)>,
    free: u32,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool { nodes: Vec::new(), free: NIL }
    }
}

impl<T: Copy> Pool<T> {
    /// Appends `v` to `list`.
    pub(crate) fn push_back(&mut self, list: &mut List, v: T) {
        let i = match self.free {
            NIL => {
                self.nodes.push((v, NIL));
                (self.nodes.len() - 1) as u32
            }
            i => {
                self.free = self.nodes[i as usize].1;
                self.nodes[i as usize] = (v, NIL);
                i
            }
        };
        match list.tail {
            NIL => list.head = i,
            t => self.nodes[t as usize].1 = i,
        }
        list.tail = i;
    }

    /// Removes and returns the first value of `list` that `pred` accepts.
    pub(crate) fn remove_first(&mut self, list: &mut List, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        let (mut prev, mut i) = (NIL, list.head);
        while i != NIL {
            let (v, next) = self.nodes[i as usize];
            if pred(&v) {
                match prev {
                    NIL => list.head = next,
                    p => self.nodes[p as usize].1 = next,
                }
                if list.tail == i {
                    list.tail = prev;
                }
                self.nodes[i as usize].1 = self.free;
                self.free = i;
                return Some(v);
            }
            (prev, i) = (i, next);
        }
        None
    }

    /// The first value of `list` that `pred` accepts.
    fn find_first(&self, list: List, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        self.iter(list).find(|v| pred(v)).copied()
    }

    /// The values of `list`, first first.
    pub(crate) fn iter(&self, list: List) -> impl Iterator<Item = &T> + '_ {
        let mut i = list.head;
        std::iter::from_fn(move || {
            let (v, next) = self.nodes.get(i as usize)?;
            i = *next;
            Some(v)
        })
    }
}

/// Unmatched sends and receives of one (receiver, context), as lists of
/// the replay's [`Mail`] pools.
#[derive(Debug)]
pub(crate) struct Mailbox {
    pub(crate) ctx: u64,
    /// Unexpected sends in arrival order: all of them while `sends_split`
    /// is not set, else none ([`Mail`]'s `sends_by_src` holds them).
    unexpected: List,
    /// Unexpected sends not matched yet.
    unexpected_len: u32,
    sends_split: bool,
    /// Posted receives in post order: all of them while the mailbox is
    /// not split, else those from any source ([`Mail`]'s `by_src` holds
    /// the others).
    posted: List,
    /// Posted receives not matched yet.
    posted_len: u32,
    split: bool,
}

impl Mailbox {
    fn new(ctx: u64) -> Mailbox {
        Mailbox {
            ctx,
            unexpected: List::default(),
            unexpected_len: 0,
            sends_split: false,
            posted: List::default(),
            posted_len: 0,
            split: false,
        }
    }
}

/// Posted receives a mailbox holds before those from one source move to
/// per-source lists, where a send finds its receive without walking
/// past the receives from other sources (a linear gather's root posts
/// one per rank).
const SPLIT: u32 = 32;

/// Unexpected sends a mailbox holds before they move to per-source
/// lists, where a receive from one source finds its send without walking
/// past the sends of other sources (a linear gather's root that posts
/// its receives after the other ranks sent).
const SENDS_SPLIT: u32 = 32;

/// The node pools of every mailbox's lists.
#[derive(Debug, Default)]
pub(crate) struct Mail {
    /// Sends not matched yet.
    pub(crate) sends: Pool<SendMsg>,
    /// Receives not matched yet.
    pub(crate) recvs: Pool<RecvPost>,
    /// Of split mailboxes: the posted receives from one source, by
    /// (context, receiver, source), in post order (no empty list).
    by_src: rustc_hash::FxHashMap<(u64, u32, u32), List>,
    /// Receives posted so far.
    seq: u64,
    /// Of mailboxes whose sends are split: the unexpected sends from one
    /// source, by (context, receiver, source), in arrival order (no empty
    /// list).
    sends_by_src: rustc_hash::FxHashMap<(u64, u32, u32), List>,
    /// Unexpected sends so far.
    send_seq: u64,
}

impl Mail {
    /// Queues `msg` (its `seq` set here) as unexpected in rank `dst`'s mailbox `mb`.
    pub(crate) fn push_send(&mut self, dst: u32, mb: &mut Mailbox, mut msg: SendMsg) {
        msg.seq = self.send_seq;
        self.send_seq += 1;
        mb.unexpected_len += 1;
        if !mb.sends_split && mb.unexpected_len > SENDS_SPLIT {
            // The sends from one source move to their own lists.
            mb.sends_split = true;
            let mut all = std::mem::take(&mut mb.unexpected);
            while let Some(m) = self.sends.remove_first(&mut all, |_| true) {
                let list = self.sends_by_src.entry((mb.ctx, dst, m.src)).or_default();
                self.sends.push_back(list, m);
            }
        }
        if mb.sends_split {
            let list = self.sends_by_src.entry((mb.ctx, dst, msg.src)).or_default();
            self.sends.push_back(list, msg);
        } else {
            self.sends.push_back(&mut mb.unexpected, msg);
        }
    }

    /// Removes and returns the first-arrived unexpected send of rank
    /// `dst`'s mailbox `mb` that a receive from `src` (or `ANY_SOURCE`)
    /// with `tag` (or `ANY_TAG`) matches.
    pub(crate) fn take_send(&mut self, dst: u32, mb: &mut Mailbox, src: i32, tag: i32) -> Option<SendMsg> {
        let ok = |m: &SendMsg| matches(src, tag, m.src, m.tag);
        let got = if !mb.sends_split {
            self.sends.remove_first(&mut mb.unexpected, ok)
        } else if src != ANY_SOURCE {
            let key = (mb.ctx, dst, src as u32);
            let list = self.sends_by_src.get_mut(&key)?;
            let got = self.sends.remove_first(list, ok);
            if list.head == NIL {
                self.sends_by_src.remove(&key);
            }
            got
        } else {
            // The earliest match over the sources' lists.
            let (ctx, sends) = (mb.ctx, &self.sends);
            let first = self
                .sends_by_src
                .iter()
                .filter(|(k, _)| k.0 == ctx && k.1 == dst)
                .filter_map(|(k, &l)| sends.find_first(l, ok).map(|m| (m.seq, *k)))
                .min();
            let (seq, key) = first?;
            let list = self.sends_by_src.get_mut(&key).expect("a source's list");
            let got = self.sends.remove_first(list, |m| m.seq == seq);
            if list.head == NIL {
                self.sends_by_src.remove(&key);
            }
            got
        };
        if got.is_some() {
            mb.unexpected_len -= 1;
            if mb.unexpected_len == 0 {
                mb.sends_split = false;
            }
        }
        got
    }

    /// Rank `dst`'s unexpected sends in mailbox `mb`, in arrival order.
    pub(crate) fn unexpected(&self, dst: u32, mb: &Mailbox) -> Vec<SendMsg> {
        let mut all: Vec<SendMsg> = self.sends.iter(mb.unexpected).copied().collect();
        if mb.sends_split {
            for (_, &l) in self.sends_by_src.iter().filter(|(k, _)| k.0 == mb.ctx && k.1 == dst) {
                all.extend(self.sends.iter(l).copied());
            }
            all.sort_by_key(|m| m.seq);
        }
        all
    }

    /// Posts `recv` (its `seq` set here) in rank `dst`'s mailbox `mb`.
    pub(crate) fn post_recv(&mut self, dst: u32, mb: &mut Mailbox, mut recv: RecvPost) {
        recv.seq = self.seq;
        self.seq += 1;
        mb.posted_len += 1;
        if !mb.split && mb.posted_len > SPLIT {
            // The receives from one source move to their own lists.
            mb.split = true;
            let mut all = std::mem::take(&mut mb.posted);
            while let Some(p) = self.recvs.remove_first(&mut all, |_| true) {
                self.file(dst, mb, p);
            }
        }
        if mb.split {
            self.file(dst, mb, recv);
        } else {
            self.recvs.push_back(&mut mb.posted, recv);
        }
    }

    /// Appends `recv` to its list of split mailbox `mb` of rank `dst`.
    fn file(&mut self, dst: u32, mb: &mut Mailbox, recv: RecvPost) {
        if recv.src == ANY_SOURCE {
            self.recvs.push_back(&mut mb.posted, recv);
        } else {
            let list = self.by_src.entry((mb.ctx, dst, recv.src as u32)).or_default();
            self.recvs.push_back(list, recv);
        }
    }

    /// Removes and returns the first-posted receive of rank `dst`'s
    /// mailbox `mb` that a send from `src` with `tag` matches.
    pub(crate) fn match_send(&mut self, dst: u32, mb: &mut Mailbox, src: u32, tag: i32) -> Option<RecvPost> {
        let ok = |p: &RecvPost| matches(p.src, p.tag, src, tag);
        if !mb.split {
            let got = self.recvs.remove_first(&mut mb.posted, ok);
            mb.posted_len -= u32::from(got.is_some());
            return got;
        }
        let key = (mb.ctx, dst, src);
        let one = self.by_src.get(&key).and_then(|&l| self.recvs.find_first(l, ok));
        let any = self.recvs.find_first(mb.posted, ok);
        let got = match (one, any) {
            (Some(a), Some(b)) if b.seq < a.seq => self.recvs.remove_first(&mut mb.posted, |p| p.seq == b.seq),
            (Some(a), _) => self.remove_from_source(key, |p| p.seq == a.seq),
            (None, Some(b)) => self.recvs.remove_first(&mut mb.posted, |p| p.seq == b.seq),
            (None, None) => None,
        };
        self.taken(mb, got.is_some());
        got
    }

    /// Removes and returns the first receive of the per-source list `key`
    /// that `pred` accepts; a list left empty goes.
    fn remove_from_source(&mut self, key: (u64, u32, u32), pred: impl FnMut(&RecvPost) -> bool) -> Option<RecvPost> {
        let list = self.by_src.get_mut(&key)?;
        let got = self.recvs.remove_first(list, pred);
        if list.head == NIL {
            self.by_src.remove(&key);
        }
        got
    }

    /// Counts a receive taken from `mb` (when `took`); a split mailbox
    /// left without receives is whole again.
    fn taken(&mut self, mb: &mut Mailbox, took: bool) {
        mb.posted_len -= u32::from(took);
        if mb.posted_len == 0 {
            mb.split = false;
        }
    }

    /// Removes and returns rank `dst`'s posted receive of slot `slot`
    /// from mailbox `mb`, if it is there.
    pub(crate) fn withdraw(&mut self, dst: u32, mb: &mut Mailbox, slot: u32) -> Option<RecvPost> {
        let mut got = self.recvs.remove_first(&mut mb.posted, |p| p.slot == slot);
        if got.is_none() && mb.split {
            let keys: Vec<_> = self.by_src.keys().filter(|k| k.0 == mb.ctx && k.1 == dst).copied().collect();
            got = keys.into_iter().find_map(|key| self.remove_from_source(key, |p| p.slot == slot));
        }
        self.taken(mb, got.is_some());
        got
    }

    /// Rank `dst`'s posted receives in mailbox `mb`, in post order.
    pub(crate) fn posted(&self, dst: u32, mb: &Mailbox) -> Vec<RecvPost> {
        let mut all: Vec<RecvPost> = self.recvs.iter(mb.posted).copied().collect();
        if mb.split {
            for (_, &l) in self.by_src.iter().filter(|(k, _)| k.0 == mb.ctx && k.1 == dst) {
                all.extend(self.recvs.iter(l).copied());
            }
            all.sort_by_key(|p| p.seq);
        }
        all
    }
}

/// Matching context of collective-internal traffic on global communicator
/// `comm`, disjoint from every user context (user contexts are global
/// communicator ids, or `2 << 32 | id` for ids never created).
pub(crate) fn coll_ctx(comm: u32) -> u64 {
    1 << 32 | comm as u64
}

pub(crate) fn ctx_name(ctx: u64) -> String {
    match ctx >> 32 {
        0 => format!("comm {ctx}"),
        1 => format!("collectives of comm {}", ctx & 0xffff_ffff),
        _ => format!("uncreated comm {}", ctx & 0xffff_ffff),
    }
}

pub(crate) fn matches(want_src: i32, want_tag: i32, src: u32, tag: i32) -> bool {
    (want_src == ANY_SOURCE || want_src == src as i32) && (want_tag == ANY_TAG || want_tag == tag)
}

/// The mailboxes of one rank, one per context it receives on, in order of
/// first use: the first two inline (a rank's world and collective
/// contexts, without an allocation), the others in a vector.
#[derive(Debug)]
pub(crate) struct MailSet {
    inline: [Mailbox; 2],
    more: Vec<Mailbox>,
}

/// Context of an unused inline mailbox (contexts are below 2^34).
const NO_CTX: u64 = u64::MAX;

impl Default for MailSet {
    fn default() -> Self {
        MailSet { inline: [Mailbox::new(NO_CTX), Mailbox::new(NO_CTX)], more: Vec::new() }
    }
}

impl MailSet {
    /// The mailbox of context `ctx`, made empty on first use.
    pub(crate) fn get(&mut self, ctx: u64) -> &mut Mailbox {
        let fresh = Mailbox::new(ctx);
        for i in 0..2 {
            if self.inline[i].ctx == ctx {
                return &mut self.inline[i];
            }
            if self.inline[i].ctx == NO_CTX {
                self.inline[i] = fresh;
                return &mut self.inline[i];
            }
        }
        match self.more.iter().position(|m| m.ctx == ctx) {
            Some(i) => &mut self.more[i],
            None => {
                self.more.push(fresh);
                self.more.last_mut().expect("just pushed")
            }
        }
    }

    /// The mailboxes in use, in order of first use.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Mailbox> {
        self.inline.iter().filter(|m| m.ctx != NO_CTX).chain(&self.more)
    }

    /// [`MailSet::iter`], mutable.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Mailbox> {
        self.inline.iter_mut().filter(|m| m.ctx != NO_CTX).chain(&mut self.more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_sets_keep_contexts_in_order_of_first_use() {
        let mut m = MailSet::default();
        for ctx in [5, 1 << 32, 5, 7, 9, 7] {
            assert_eq!(m.get(ctx).ctx, ctx);
        }
        assert_eq!(m.iter().map(|b| b.ctx).collect::<Vec<_>>(), [5, 1 << 32, 7, 9]);
        assert_eq!(m.iter_mut().count(), 4);
        assert_eq!(MailSet::default().iter().count(), 0);
    }

    #[test]
    fn a_slot_takes_24_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 24);
        let mut s = Slot::default();
        assert_eq!(s.state(), SlotState::Free);
        s.set_state(SlotState::Done { at: 2.5, d: 0.5 });
        assert_eq!(s.state(), SlotState::Done { at: 2.5, d: 0.5 });
        s.set_state(SlotState::Pending);
        assert_eq!(s.state(), SlotState::Pending);
    }

    #[test]
    fn released_slots_are_reused_last_first() {
        let mut q = Requests::default();
        let (a, b, c) = (q.alloc(), q.alloc(), q.alloc());
        q.release(a);
        q.release(c);
        assert_eq!((q.alloc(), q.alloc(), q.alloc()), (c, a, 3));
        assert_eq!(q.slots[b as usize].state(), SlotState::Pending);
    }

    #[test]
    fn pool_lists_are_fifo_and_share_freed_nodes() {
        let mut pool: Pool<u32> = Pool::default();
        let (mut a, mut b) = (List::default(), List::default());
        for v in 0..5 {
            pool.push_back(&mut a, v);
            pool.push_back(&mut b, 10 + v);
        }
        assert_eq!(pool.remove_first(&mut a, |&v| v % 2 == 1), Some(1));
        assert_eq!(pool.remove_first(&mut a, |&v| v == 4), Some(4));
        assert_eq!(pool.remove_first(&mut a, |&v| v == 9), None);
        pool.push_back(&mut a, 7);
        assert_eq!(pool.iter(a).copied().collect::<Vec<_>>(), [0, 2, 3, 7]);
        assert_eq!(pool.iter(b).copied().collect::<Vec<_>>(), [10, 11, 12, 13, 14]);
        assert_eq!(pool.nodes.len(), 10, "the freed nodes were reused");
        while pool.remove_first(&mut a, |_| true).is_some() {}
        assert_eq!((a.head, a.tail), (NIL, NIL));
        pool.push_back(&mut a, 8);
        assert_eq!(pool.iter(a).copied().collect::<Vec<_>>(), [8]);
        assert_eq!(pool.remove_first(&mut b, |&v| v == 14), Some(14));
        pool.push_back(&mut b, 15);
        assert_eq!(pool.iter(b).copied().collect::<Vec<_>>(), [10, 11, 12, 13, 15]);
    }

    #[test]
    fn user_map_grows_into_a_hash_map_and_keeps_every_handle() {
        let mut m = UserMap::default();
        for id in 1..=40u64 {
            assert_eq!(m.insert(id, id as u32 * 2), None);
            assert_eq!(m.insert(id, id as u32), Some(id as u32 * 2));
            if id == UserMap::SMALL as u64 {
                assert!(matches!(m, UserMap::Small(_)));
            }
        }
        assert!(matches!(m, UserMap::Large(_)));
        for id in 1..=40u64 {
            assert_eq!(m.get(id), Some(id as u32));
        }
        assert_eq!((m.remove(7), m.remove(7), m.get(7), m.get(41)), (Some(7), None, None, None));
        let mut s = UserMap::default();
        s.insert(1, 1);
        s.insert(2, 2);
        assert_eq!((s.remove(1), s.get(2), s.get(1)), (Some(1), Some(2), None));
    }

    #[test]
    fn reused_handles_orphan_the_old_slot() {
        let mut q = Requests::default();
        let a = q.alloc_user(5);
        let b = q.alloc_user(5);
        assert_ne!(a, b);
        assert!(q.slots[a as usize].orphan);
        assert_eq!(q.user.get(5), Some(b));
        let z = q.alloc_user(0);
        assert!(q.slots[z as usize].orphan);
        q.slots[b as usize].set_state(SlotState::Done { at: 1.0, d: 0.0 });
        let c = q.alloc_user(5);
        assert_eq!(q.slots[b as usize].state(), SlotState::Free);
        assert_eq!(q.user.get(5), Some(c));
    }

    /// Random receives (some from any source or with any tag) and sends
    /// on one mailbox, many receives at once so that it splits: each
    /// send takes the receive MPI's rule gives (the first posted that
    /// matches), as a plain list searched in order does; withdrawn
    /// receives and the deadlock listing agree with it too.
    #[test]
    fn split_mailboxes_match_in_post_order() {
        let mut rng = crate::rng::Rng::new(5);
        let (mut mail, mut set) = (Mail::default(), MailSet::default());
        let mut want: Vec<RecvPost> = Vec::new();
        let mut split = 0;
        for step in 0..20_000 {
            let mb = set.get(3);
            split += usize::from(mb.split);
            let k = rng.below(10);
            if k < 5 || want.len() < 2 {
                let src = if rng.below(8) == 0 { ANY_SOURCE } else { rng.below(6) as i32 };
                let tag = if rng.below(8) == 0 { ANY_TAG } else { rng.below(3) as i32 };
                let r = RecvPost { src, tag, post: 0.0, slot: step, seq: 0 };
                mail.post_recv(9, mb, r);
                want.push(r);
            } else if k < 9 {
                let (src, tag) = (rng.below(6) as u32, rng.below(3) as i32);
                let got = mail.match_send(9, mb, src, tag).map(|r| r.slot);
                let at = want.iter().position(|r| matches(r.src, r.tag, src, tag));
                assert_eq!(got, at.map(|i| want.remove(i).slot), "step {step}");
            } else {
                let slot = want[rng.below(want.len())].slot;
                assert_eq!(mail.withdraw(9, mb, slot).map(|r| r.slot), Some(slot));
                want.retain(|r| r.slot != slot);
            }
            if step % 97 == 0 {
                let listed: Vec<u32> = mail.posted(9, set.get(3)).iter().map(|r| r.slot).collect();
                assert_eq!(listed, want.iter().map(|r| r.slot).collect::<Vec<_>>(), "step {step}");
            }
        }
        assert!(split > 1000, "the mailbox was split at {split} steps");
    }
    #[test]
    fn split_unexpected_sends_match_in_arrival_order() {
        let mut rng = crate::rng::Rng::new(6);
        let (mut mail, mut set) = (Mail::default(), MailSet::default());
        let mut want: Vec<SendMsg> = Vec::new();
        let mut split = 0;
        for step in 0..20_000u32 {
            let mb = set.get(3);
            split += usize::from(mb.sends_split);
            if rng.below(2) == 0 || want.len() < 2 {
                let (src, tag) = (rng.below(40) as u32, rng.below(3) as i32);
                let m = SendMsg { src, tag, bytes: 0, post: 0.0, eager: true, slot: step, seq: 0 };
                mail.push_send(9, mb, m);
                want.push(m);
            } else {
                let src = if rng.below(8) == 0 { ANY_SOURCE } else { rng.below(40) as i32 };
                let tag = if rng.below(8) == 0 { ANY_TAG } else { rng.below(3) as i32 };
                let got = mail.take_send(9, mb, src, tag).map(|m| m.slot);
                let at = want.iter().position(|m| matches(src, tag, m.src, m.tag));
                assert_eq!(got, at.map(|i| want.remove(i).slot), "step {step}");
            }
            if step % 97 == 0 {
                let listed: Vec<u32> = mail.unexpected(9, set.get(3)).iter().map(|m| m.slot).collect();
                assert_eq!(listed, want.iter().map(|m| m.slot).collect::<Vec<_>>(), "step {step}");
            }
        }
        assert!(split > 1000, "the sends were split at {split} steps");
    }
}
