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
#[derive(Debug, Default)]
pub(super) struct Class {
    /// Of a class in the index: the (directed link, weight) pairs of one
    /// flow, in its route's order (empty otherwise).
    pub(super) links: Vec<(u32, f64)>,
    /// It has shared links (and so an entry in the solver).
    solved: bool,
    /// A flow's rate bound, in the sharing's units.
    pub(super) bound: f64,
    /// Flows in the class.
    pub(super) count: u32,
    /// A flow's rate, in the sharing's units per second.
    pub(super) rate: f64,
    /// Bytes served to each flow of the class up to `t_last` (seconds),
    /// since the class was formed, in the sharing's units.
    pub(super) served: f64,
    pub(super) t_last: f64,
    /// Of a class in the index: the flows' targets (`served` at which
    /// each ends), start orders and ids, earliest first; entries of flows
    /// that left for another class stay until they come to the top.
    members: std::collections::BinaryHeap<Entry>,
    /// Of a class outside the index, which no other flow can join: its flow.
    single: Option<Entry>,
    /// Where the class is in [`Classes`]' index (0: not there).
    hash: u64,
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
        if self.hash == 0 {
            self.single = Some(e);
        } else {
            self.members.push(e);
        }
    }

    /// The earliest entry, and whether every entry is of a flow in the
    /// class (no flow left for another class since it was added).
    pub(super) fn first(&self) -> Option<(Entry, bool)> {
        match self.single {
            Some(e) => Some((e, true)),
            None => self.members.peek().map(|&e| (e, self.members.len() == self.count as usize)),
        }
    }

    /// Drops the earliest entry.
    pub(super) fn pop(&mut self) {
        if self.single.take().is_none() {
            self.members.pop();
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
                if cl.bound.to_bits() == bound.to_bits() && cl.links == links {
                    return (c, false);
                }
            }
        }
        let c = self.free.pop().unwrap_or_else(|| {
            self.list.push(Class::default());
            (self.list.len() - 1) as u32
        });
        let cl = &mut self.list[c as usize];
        cl.links.clear();
        cl.members.clear();
        (cl.solved, cl.single) = (!links.is_empty(), None);
        (cl.bound, cl.count, cl.rate, cl.served, cl.t_last, cl.hash) = (bound, 0, 0.0, 0.0, now, 0);
        if hash != 0 {
            // A key whose hash another class holds keeps its flows alone.
            if let std::collections::hash_map::Entry::Vacant(v) = self.index.entry(hash) {
                v.insert(c);
                cl.hash = hash;
                cl.links.extend_from_slice(links);
            }
        }
        (c, true)
    }

    /// Gives class `c`, left without flows, back.
    pub(super) fn free(&mut self, c: u32) {
        let cl = &mut self.list[c as usize];
        if cl.hash != 0 {
            self.index.remove(&cl.hash);
            cl.hash = 0;
        }
        cl.members.clear();
        cl.single = None;
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
