//! MPICH's intra-node shared-memory collectives in the engine
//! ([`crate::collectives::shm`]): the members of a communicator on one
//! host meet in the collective, and when the last one has entered, every
//! member's exit follows from all entry times.

use std::collections::HashMap;

use super::*;
use crate::collectives::{shm, Coll as C, ShmColl, ShmCounter};

/// Per communicator that lies on one host: MPICH's call counts and the
/// release-gather collective in progress.
#[derive(Debug)]
pub(super) struct ShmComm {
    /// Every member on one host (else MPICH runs no release-gather
    /// collective on it, and the vectors below are empty).
    single_host: bool,
    /// Per member (communicator rank), MPICH's count of its calls.
    counters: Vec<ShmCounter>,
    /// Per member, its entry time and the request slot it waits on, in
    /// the collective in progress.
    entered: Vec<Option<(f64, u32)>>,
    /// Members entered so far.
    count: u32,
}

/// The release-gather state of every communicator met so far, by global
/// communicator id; `seed` starts the counts of the world communicator
/// ([`crate::replay::Replay::shm_counter`]).
#[derive(Debug, Default)]
pub(crate) struct ShmState {
    comms: HashMap<u32, ShmComm>,
    pub(crate) seed: ShmCounter,
    /// Scratch of the collective being completed: exit times, entry times, request slots.
    exits: Vec<f64>,
    entries: Vec<f64>,
    slots: Vec<u32>,
}

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Counts rank `r`'s blocking call of `coll` (`bytes` of payload) on
    /// global communicator `g` of `n` members, of which it is `me`, and
    /// returns the release-gather collective MPICH runs for it, if the
    /// platform models them ([`crate::collectives::Collectives::shm_model`]).
    pub(super) fn shm_note(&mut self, g: u32, me: u32, n: u32, coll: C, bytes: u64) -> Option<ShmColl> {
        self.platform.collectives.shm_model()?;
        if n < 2 || !matches!(coll, C::Allreduce | C::Barrier | C::Bcast | C::Reduce) {
            return None;
        }
        if !self.shm.comms.contains_key(&g) {
            let host = |i: u32| self.hosts[self.comms.world_rank(g, i) as usize];
            let single_host = (1..n).all(|i| host(i) == host(0));
            let seed = if g == comms::WORLD { self.shm.seed } else { ShmCounter::default() };
            // Only a communicator on one host needs per-member state.
            let members = if single_host { n as usize } else { 0 };
            let st = ShmComm { single_host, counters: vec![seed; members], entered: vec![None; members], count: 0 };
            self.shm.comms.insert(g, st);
        }
        let st = self.shm.comms.get_mut(&g).expect("inserted above");
        if !st.single_host {
            return None;
        }
        st.counters[me as usize].note(coll, bytes)
    }

    /// Rank `r` (member `me` of global communicator `g`) enters the
    /// release-gather collective `coll` with `bytes` of payload: it waits
    /// until its exit, which is known once every member has entered.
    pub(super) fn shm_enter(&mut self, r: usize, g: u32, me: u32, coll: ShmColl, bytes: u64) -> Result<Flow, ReplayError> {
        let cost = *self.platform.collectives.shm_model().expect("shm_note checked the model");
        let rk = &mut self.ranks[r];
        let slot = rk.reqs.alloc();
        let name = match coll {
            ShmColl::Allreduce => "MPI_Allreduce",
            ShmColl::Barrier => "MPI_Barrier",
        };
        rk.doing = Doing::Coll { name, round: 1 };
        let entry = rk.clock;
        let st = self.shm.comms.get_mut(&g).expect("shm_note made it");
        st.entered[me as usize] = Some((entry, slot));
        st.count += 1;
        if st.count as usize == st.entered.len() {
            st.count = 0;
            let mut entries = std::mem::take(&mut self.shm.entries);
            let mut exits = std::mem::take(&mut self.shm.exits);
            entries.clear();
            entries.extend(st.entered.iter().map(|e| e.expect("every member entered").0));
            shm::exits(coll, bytes, collectives::elem_size(bytes), &entries, &cost, &mut exits);
            let last = entries.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut slots = std::mem::take(&mut self.shm.slots);
            slots.clear();
            slots.extend(st.entered.iter_mut().map(|e| e.take().expect("every member entered").1));
            let mut done = Ok(());
            for (i, (&at, &slot)) in exits.iter().zip(&slots).enumerate() {
                let w = self.comms.world_rank(g, i as u32) as usize;
                done = done.and_then(|_| self.complete(w, slot, at, at - last));
            }
            self.shm.entries = entries;
            self.shm.exits = exits;
            self.shm.slots = slots;
            done?;
        }
        self.wait_begin(r);
        self.wait_add(r, slot);
        Ok(self.wait_end(r))
    }
}
