//! The call records of one target rank, generated call by call from its
//! class's slots.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::fields::{set_fields, Fields};
use super::loops::Step;
use super::rules::{Iter, PeerRule};
use super::Class;
use crate::trace::record::{CallRecord, Params};

/// The records of one target rank ([`super::Model::records`]).
#[derive(Debug)]
pub struct RankRecords<'m> {
    pub(super) class: &'m Class,
    pub(super) rank: u32,
    pub(super) n: u32,
    pub(super) next: usize,
    /// The rank's communicators so far (id → world ranks).
    pub(super) comms: FxHashMap<u32, Vec<u32>>,
    /// What the class's ranks share at `n`.
    pub(super) at_n: Arc<AtN>,
}

/// What every rank of one class shares at a rank count.
#[derive(Debug)]
pub(super) struct AtN {
    /// Compute scale of each of the class's region laws.
    pub(super) factors: Box<[f64]>,
    /// Each slot's message sizes, bytes (its size laws evaluated).
    pub(super) sizes: Box<[[Option<u64>; 2]]>,
    /// The seed of the blocks' draws; `None`: the template members'
    /// blocks copied.
    pub(super) draw: Option<u64>,
    /// With loops whose trip counts change with N, the slot of each call
    /// and its iteration ([`super::loops::Loops::plan`]); `None`: call i
    /// is slot i.
    pub(super) plan: Option<Box<[Step]>>,
}

impl RankRecords<'_> {
    /// The next call's step: its slot, its iteration and its copy past
    /// the template's last.
    fn step(&self) -> Option<Step> {
        match &self.at_n.plan {
            Some(plan) => plan.get(self.next).copied(),
            None => (self.next < self.class.slots.len()).then_some(Step { slot: self.next as u32, it: Iter::ONCE, rep: 0 }),
        }
    }

    /// The next record and its call-site region id.
    pub fn next_with_region(&mut self) -> Option<(CallRecord, u64)> {
        let slot = &self.class.slots[self.step()?.slot as usize];
        let mut rec = slot.rec.clone();
        let region = self.next_into(&mut rec)?;
        Some((rec, region))
    }

    /// [`RankRecords::next_with_region`] written over `rec`: its fields are
    /// the next record's (the parameters' buffers reused where they fit)
    /// and the call-site region id is returned, so that a stream reads
    /// record after record through one buffer.
    pub fn next_into(&mut self, rec: &mut CallRecord) -> Option<u64> {
        let step = self.step()?;
        let i = step.slot as usize;
        let slot = &self.class.slots[i];
        self.next += 1;
        // Every field named, so that a new one is not left stale; the
        // block's times are set below.
        let CallRecord { op, failed, caller, compute_cpu_ns: _, compute_wall_ns: _, counters, t_start_ns, t_end_ns, params } = &slot.rec;
        (rec.op, rec.failed, rec.caller, rec.counters, rec.t_start_ns, rec.t_end_ns) =
            (*op, *failed, *caller, *counters, *t_start_ns, *t_end_ns);
        rec.params.clone_from(params);
        let f = self.at_n.factors[slot.law];
        let (cpu, wall) = self.class.blocks.block(self.rank, i, step.rep, self.at_n.draw);
        rec.compute_cpu_ns = (cpu * f).round() as u64;
        rec.compute_wall_ns = (wall * f).round() as u64;
        if let (Some(rule), Params::CommCreate { comm, members, .. }) = (slot.members, &mut rec.params) {
            *members = rule.eval(self.rank, self.n);
            self.comms.insert(*comm, members.clone());
        }
        let comm = Fields::of(&rec.params).comm;
        let world: Vec<u32>;
        let members = match comm.and_then(|c| self.comms.get(&c)) {
            Some(m) => m.as_slice(),
            None if slot.peers.iter().any(|p| matches!(p, Some(PeerRule::Member(_)))) => {
                world = (0..self.n).collect();
                &world
            }
            None => &[],
        };
        let peers = slot.peers.map(|p| p.map(|rule| rule.eval_at(self.rank, self.n, members, step.it)));
        set_fields(&mut rec.params, peers, self.at_n.sizes[i]);
        if let (Some(sr), Some(rr), Params::Vcoll { root, send, recv, .. }) = (slot.vecs[0], slot.vecs[1], &mut rec.params) {
            let (size, at) = match comm.and_then(|c| self.comms.get(&c)) {
                Some(m) => (m.len() as u32, m.iter().position(|&x| x == self.rank).unwrap_or(0) as u32),
                None => (self.n, self.rank),
            };
            let is_root = *root >= 0 && *root as u32 == self.rank;
            *send = sr.eval(size, at, is_root);
            *recv = rr.eval(size, at, is_root);
        }
        Some(slot.region)
    }
}

impl Iterator for RankRecords<'_> {
    type Item = CallRecord;

    fn next(&mut self) -> Option<CallRecord> {
        self.next_with_region().map(|(r, _)| r)
    }
}
