//! Classes of flows in their bandwidth phase: flows that cross the same
//! shared links with the same weights and have the same bound. Max-min
//! fairness gives such flows the same rate (the max-min fair allocation
//! is unique, so it treats interchangeable flows alike), so the solver
//! sees one entry per class, whose weight on each link is the class's
//! flow count times a flow's, and a class's flows take their bytes from
//! one counter: the bytes served to each of them since the class was
//! formed. A flow ends when that counter reaches its target, so a class
//! needs one completion date, its first flow's, and a change of the
//! class's rate or count costs the same whatever its size. SimGrid's LMM
//! keeps one variable per action instead (`src/kernel/lmm/System.cpp`);
//! the classes are what lets a link shared by many flows at one rate,
//! such as a linear reduce's root, cost O(log n) per arrival.
//!
//! A link that one flow alone crosses, and that fits that flow at its
//! bound, cannot limit it: such a link is left out of the flow's shared
//! links (it is "lone"), until a second flow comes, which makes it
//! shared for both; the first flow then leaves its class for the class
//! of its new shared links.

use rustc_hash::FxHashMap;

use super::Entry;

pub(super) const NONE: u32 = u32::MAX;

/// One class: its bound, the bytes its flows have been served, and
/// its flows' targets.
#[derive(Debug)]
pub(super) struct Class {
    /// A flow's rate bound, in the sharing's units.
    pub(super) bound: f64,
    /// A flow's rate, in the sharing's units per second.
    pub(super) rate: f64,
    /// Bytes served to each flow of the class up to `t_last` (seconds),
    /// since the class was formed, in the sharing's units.
    pub(super) served: f64,
    pub(super) t_last: f64,
    /// Of a class outside the index, which no other flow can join: its
    /// flow (id [`NONE`]: none).
    single: Entry,
    /// Of a class in the index: its key and its flows.
    crowd: Option<Box<Crowd>>,
    /// Flows in the class.
    pub(super) count: u32,
    /// It has shared links (and so an entry in the solver).
    solved: bool,
}

/// The part of a class that other flows can join.
#[derive(Debug, Default)]
struct Crowd {
    /// Where the class is in [`Classes`]' index.
    hash: u64,
    /// The (directed link, weight) pairs of one flow, in its route's order.
    links: Vec<(u32, f64)>,
    /// The flows' targets (`served` at which each ends), start orders and
    /// ids, earliest first; entries of flows that left for another class
    /// stay until they come to the top or are half the heap
    /// ([`Class::drop_left`]).
    members: std::collections::BinaryHeap<Entry>,
}

/// An empty single entry.
const NO_ENTRY: Entry = Entry(0.0, 0, NONE);

/// Heap entries a given-back crowd keeps for its next class.
const KEPT_ENTRIES: usize = 64;

impl Default for Class {
    fn default() -> Self {
        Class { bound: 0.0, rate: 0.0, served: 0.0, t_last: 0.0, single: NO_ENTRY, crowd: None, count: 0, solved: false }
    }
}

impl Class {
    /// Bytes served to each flow of the class up to `now` (≥ `t_last`), seconds.
    pub(super) fn served_at(&self, now: f64) -> f64 {
        if now > self.t_last {
            self.served + self.rate * (now - self.t_last)
        } else {
            self.served
        }
    }

    /// Whether the class has shared links (and so an entry in the solver).
    pub(super) fn solved(&self) -> bool {
        self.solved
    }

    /// Adds flow entry `e` (target, start order, id).
    pub(super) fn push(&mut self, e: Entry) {
        match self.crowd.as_mut() {
            Some(c) => c.members.push(e),
            None => self.single = e,
        }
    }

    /// The earliest entry, and whether every entry is of a flow in the
    /// class (no flow left for another class since it was added).
    pub(super) fn first(&self) -> Option<(Entry, bool)> {
        match self.crowd.as_ref() {
            Some(c) => c.members.peek().map(|&e| (e, c.members.len() == self.count as usize)),
            None => (self.single.2 != NONE).then_some((self.single, true)),
        }
    }

    /// Drops the earliest entry.
    pub(super) fn pop(&mut self) {
        match self.crowd.as_mut() {
            Some(c) => {
                c.members.pop();
            }
            None => self.single = NO_ENTRY,
        }
    }

    /// Drops the entries of flows that left (those for which `in_class`
    /// is false) once they are as many as the flows in the class, so the
    /// heap holds at most twice its flows.
    pub(super) fn drop_left(&mut self, in_class: impl Fn(&Entry) -> bool) {
        if let Some(c) = self.crowd.as_mut() {
            if c.members.len() > 2 * self.count as usize {
                c.members.retain(in_class);
            }
        }
    }
}

/// The classes by id, the free ids, and an index from a key's hash to
/// the class of that key.
#[derive(Debug, Default)]
pub(super) struct Classes {
    pub(super) list: Vec<Class>,
    free: Vec<u32>,
    index: FxHashMap<u64, u32>,
    /// Crowds given back, for the next classes in the index (boxed as
    /// the classes hold them, so none is allocated again).
    #[allow(clippy::vec_box, reason = "the boxes move to and from `Class::crowd`")]
    spare: Vec<Box<Crowd>>,
}

impl Classes {
    /// The class of the flows crossing shared links `links` with bound
    /// `bound`, when there is one (`indexed`: the key may be shared),
    /// else a fresh class of those links, formed at `now` (in the index
    /// when `indexed` and no other class holds its key's hash), and
    /// whether it is fresh.
    pub(super) fn find_or_take(&mut self, links: &[(u32, f64)], bound: f64, indexed: bool, now: f64) -> (u32, bool) {
        let hash = if indexed { key_hash(links, bound) } else { 0 };
        if hash != 0 {
            if let Some(&c) = self.index.get(&hash) {
                let cl = &self.list[c as usize];
                if cl.bound.to_bits() == bound.to_bits() && cl.crowd.as_ref().is_some_and(|x| x.links == links) {
                    return (c, false);
                }
            }
        }
        let c = self.free.pop().unwrap_or_else(|| {
            self.list.push(Class::default());
            (self.list.len() - 1) as u32
        });
        let mut crowd = None;
        if hash != 0 {
            // A key whose hash another class holds keeps its flows alone.
            if let std::collections::hash_map::Entry::Vacant(v) = self.index.entry(hash) {
                v.insert(c);
                let mut x = self.spare.pop().unwrap_or_default();
                x.hash = hash;
                x.links.extend_from_slice(links);
                crowd = Some(x);
            }
        }
        self.list[c as usize] =
            Class { bound, rate: 0.0, served: 0.0, t_last: now, single: NO_ENTRY, crowd, count: 0, solved: !links.is_empty() };
        (c, true)
    }

    /// Gives class `c`, left without flows, back.
    pub(super) fn free(&mut self, c: u32) {
        let cl = &mut self.list[c as usize];
        if let Some(mut x) = cl.crowd.take() {
            self.index.remove(&x.hash);
            x.links.clear();
            x.members.clear();
            if x.members.capacity() > KEPT_ENTRIES {
                x.members = Default::default();
            }
            self.spare.push(x);
        }
        cl.single = NO_ENTRY;
        self.free.push(c);
    }
}

/// A nonzero hash of a class's key: its links, their weights and its bound.
fn key_hash(links: &[(u32, f64)], bound: f64) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    bound.to_bits().hash(&mut h);
    for &(l, w) in links {
        l.hash(&mut h);
        w.to_bits().hash(&mut h);
    }
    h.finish().max(1)
}
