//! Communicators of a replay: each rank's own communicator ids mapped to
//! global communicators with their members (world ranks).
//!
//! The interposer numbers communicators per rank, so rank 0's comm 1 need
//! not be rank 1's comm 1. A communicator is identified across ranks by
//! its member list and by how many communicators with that list the rank
//! created before (creation is collective over a parent that contains all
//! members, so every member sees the same order).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;

use crate::trace::record::COMM_WORLD;

/// Global communicator id of `MPI_COMM_WORLD`.
pub(crate) const WORLD: u32 = 0;

/// A rank's collective counts (20 bytes; what only ranks that create
/// communicators need is in [`Comms`]' tables keyed by rank).
#[derive(Default)]
struct PerRank {
    /// Collectives started so far on the world: gives each its own tag.
    world_seq: u32,
    /// The same per global id of the other communicators: the first two
    /// here (global id, count; id `WORLD` for a free place), so that a
    /// rank's usual communicators need no lookup, the others in
    /// [`Comms`]' `seq`.
    seq_near: [(u32, u32); 2],
}

pub(crate) struct Comms {
    world_size: u32,
    /// Members of global communicator `g` at index `g − 1`.
    members: Vec<Vec<u32>>,
    by_key: HashMap<(Vec<u32>, u32), u32>,
    ranks: Vec<PerRank>,
    /// (rank, its comm id) → global id.
    local: FxHashMap<(u32, u32), u32>,
    /// (rank, hash of a member list) → communicators it created with that list so far.
    created: FxHashMap<(u32, u64), u32>,
    /// (rank, global id) → collectives started there, beyond `seq_near`.
    seq: FxHashMap<(u32, u32), u32>,
}

impl Comms {
    pub(crate) fn new(world_size: usize) -> Comms {
        Comms {
            world_size: world_size as u32,
            members: Vec::new(),
            by_key: HashMap::new(),
            ranks: (0..world_size).map(|_| PerRank::default()).collect(),
            local: FxHashMap::default(),
            created: FxHashMap::default(),
            seq: FxHashMap::default(),
        }
    }

    /// Rank `r` created its communicator `local` with `members`.
    pub(crate) fn create(&mut self, r: usize, local: u32, members: &[u32]) {
        let mut h = DefaultHasher::new();
        members.hash(&mut h);
        let nth = self.created.entry((r as u32, h.finish())).or_insert(0);
        let key = (members.to_vec(), *nth);
        *nth += 1;
        let next = self.members.len() as u32 + 1;
        let g = *self.by_key.entry(key).or_insert(next);
        if g == next {
            self.members.push(members.to_vec());
        }
        self.local.insert((r as u32, local), g);
    }

    /// Global id of rank `r`'s communicator `local`, if known.
    pub(crate) fn global(&self, r: usize, local: u32) -> Option<u32> {
        if local == COMM_WORLD {
            return Some(WORLD);
        }
        self.local.get(&(r as u32, local)).copied()
    }

    /// Matching context of rank `r`'s user point-to-point traffic on its
    /// communicator `local`: the global communicator's, or, for an id with
    /// no `CommCreate` seen, one of its own (ranks then match by raw id).
    pub(crate) fn user_ctx(&self, r: usize, local: u32) -> u64 {
        match self.global(r, local) {
            Some(g) => g as u64,
            None => 2 << 32 | local as u64,
        }
    }

    /// Number of ranks of global communicator `g`.
    pub(crate) fn size(&self, g: u32) -> u32 {
        match g {
            WORLD => self.world_size,
            g => self.members[g as usize - 1].len() as u32,
        }
    }

    /// World rank of rank `i` of global communicator `g`.
    pub(crate) fn world_rank(&self, g: u32, i: u32) -> u32 {
        match g {
            WORLD => i,
            g => self.members[g as usize - 1][i as usize],
        }
    }

    /// Rank of world rank `w` in global communicator `g`, if a member.
    pub(crate) fn comm_rank(&self, g: u32, w: u32) -> Option<u32> {
        match g {
            WORLD => (w < self.world_size).then_some(w),
            g => self.members[g as usize - 1].iter().position(|&m| m == w).map(|i| i as u32),
        }
    }

    /// The tag of rank `r`'s next collective on `g`.
    pub(crate) fn next_tag(&mut self, r: usize, g: u32) -> i32 {
        let rk = &mut self.ranks[r];
        let s = match g {
            WORLD => &mut rk.world_seq,
            g => match rk.seq_near.iter().position(|&(h, _)| h == g || h == WORLD) {
                Some(i) => {
                    rk.seq_near[i].0 = g;
                    &mut rk.seq_near[i].1
                }
                None => self.seq.entry((r as u32, g)).or_insert(0),
            },
        };
        let tag = (*s & 0x7fff_ffff) as i32;
        *s = s.wrapping_add(1);
        tag
    }
}
