//! Point-to-point matching state: per-rank request slots and per
//! (receiver, context) queues of unmatched sends and posted receives,
//! with MPI's matching rule (Message Passing Interface Forum, MPI 4.0
//! §3.5: source or `MPI_ANY_SOURCE`, tag or `MPI_ANY_TAG`, first posted
//! first matched, no overtaking between a pair on one communicator).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::trace::record::{ANY_SOURCE, ANY_TAG};

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

#[derive(Debug, Clone, Copy, PartialEq)]
/// State of a request slot.
pub(crate) enum SlotState {
    /// On the free list.
    Free,
    /// Posted; its completion time is not known yet.
    Pending,
    /// Completion time and the model's own duration `d` (the accounting
    /// rule of `engine::Block`), seconds.
    Done { at: f64, d: f64 },
}

/// One request of a rank.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// Where it is in its life.
    pub(crate) state: SlotState,
    /// A wait of the owner counts on this slot.
    pub(crate) waited: bool,
    /// No one can wait on this slot any more (handle reused or null).
    pub(crate) orphan: bool,
    /// A step of a nonblocking collective's schedule (`engine::nbc`).
    pub(crate) nbc: bool,
}

/// A rank's requests: a slab of slots plus the user handle → slot map.
#[derive(Default)]
pub(crate) struct Requests {
    pub(crate) slots: Vec<Slot>,
    free: Vec<u32>,
    user: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
}

impl Requests {
    pub(crate) fn alloc(&mut self) -> u32 {
        let fresh = Slot { state: SlotState::Pending, waited: false, orphan: false, nbc: false };
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = fresh;
                s
            }
            None => {
                self.slots.push(fresh);
                (self.slots.len() - 1) as u32
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
            match self.slots[old as usize].state {
                SlotState::Pending => self.slots[old as usize].orphan = true,
                _ => self.release(old),
            }
        }
        s
    }

    /// The slot of user handle `id`, forgetting the handle (a wait
    /// consumes it); `None` for null or unknown handles.
    pub(crate) fn take_user(&mut self, id: u64) -> Option<u32> {
        self.user.remove(&id)
    }

    /// The slot of user handle `id`, keeping the handle.
    pub(crate) fn user_slot(&self, id: u64) -> Option<u32> {
        self.user.get(&id).copied()
    }

    pub(crate) fn release(&mut self, s: u32) {
        self.slots[s as usize].state = SlotState::Free;
        self.free.push(s);
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
}

/// A receive posted and not yet matched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvPost {
    pub(crate) src: i32,
    pub(crate) tag: i32,
    pub(crate) post: f64,
    pub(crate) slot: u32,
}

/// Unmatched sends and receives of one (receiver, context).
#[derive(Debug)]
pub(crate) struct Mailbox {
    pub(crate) ctx: u64,
    pub(crate) unexpected: VecDeque<SendMsg>,
    pub(crate) posted: VecDeque<RecvPost>,
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

pub(crate) fn mailbox(mail: &mut Vec<Mailbox>, ctx: u64) -> &mut Mailbox {
    match mail.iter().position(|m| m.ctx == ctx) {
        Some(i) => &mut mail[i],
        None => {
            mail.push(Mailbox { ctx, unexpected: VecDeque::new(), posted: VecDeque::new() });
            mail.last_mut().expect("just pushed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_handles_orphan_the_old_slot() {
        let mut q = Requests::default();
        let a = q.alloc_user(5);
        let b = q.alloc_user(5);
        assert_ne!(a, b);
        assert!(q.slots[a as usize].orphan);
        assert_eq!(q.user[&5], b);
        let z = q.alloc_user(0);
        assert!(q.slots[z as usize].orphan);
        q.slots[b as usize].state = SlotState::Done { at: 1.0, d: 0.0 };
        let c = q.alloc_user(5);
        assert_eq!(q.slots[b as usize].state, SlotState::Free);
        assert_eq!(q.user[&5], c);
    }
}
