//! An MPI-IO call's schedule as a graph of steps, independent of who times
//! the client–server transfers.
//!
//! The MPI-IO algorithms ([`super::client`], [`super::two_phase_plan`],
//! [`super::ompio`]) build a [`Plan`]: server requests, fixed delays (an
//! exchange between members timed by the network model), synchronisation
//! points, and for each step the steps it waits for. [`Plan::run`] times a
//! plan at once on the servers' first-in first-out links (the online clock,
//! and the replay without link sharing); the replay with link sharing
//! ([`crate::network::FlowSharing`]) runs the same plan step by step, its
//! transfers as flows.

use super::state::{FsState, IoKind};

/// What one step of a [`Plan`] does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// A request of `bytes` at `offset` of `file` to the servers holding
    /// those stripes ([`FsState::request`]).
    Request {
        /// The party (member) issuing it.
        by: u32,
        /// The rank's file id.
        file: u32,
        /// First byte, from the start of the file.
        offset: u64,
        /// Bytes.
        bytes: u64,
        /// Read or write.
        kind: IoKind,
    },
    /// A fixed time, seconds (an exchange between members).
    Delay(f64),
    /// Ends when the steps it waits for end (and not before its start).
    Join,
    /// `MPI_File_sync` ([`FsState::sync`]).
    Sync,
    /// A metadata operation ([`FsState::metadata`]).
    Metadata,
}

impl Step {
    /// The end of this step started at `t` on `fs`, seconds, when it is
    /// not a request (whose end depends on how its transfers are timed).
    pub fn end_at_once(self, fs: &mut FsState, t: f64) -> Option<f64> {
        match self {
            Step::Request { .. } => None,
            Step::Delay(d) => Some(t + d),
            Step::Join => Some(t),
            Step::Sync => Some(fs.sync(t)),
            Step::Metadata => Some(fs.metadata(t)),
        }
    }
}

/// One step: what it does, the earliest time it may start (seconds) and
/// the steps it waits for (indices into [`Plan::steps`], all lower).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// What it does.
    pub step: Step,
    /// Earliest start, seconds.
    pub not_before: f64,
    /// Steps that must end first.
    pub after: Vec<u32>,
}

/// A schedule: steps in an order where each comes after those it waits
/// for, and the step whose end completes each party (the caller's
/// members, in order; one for an independent access).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// The steps.
    pub steps: Vec<Node>,
    /// For each party, the step whose end is its completion.
    pub outputs: Vec<u32>,
}

impl Plan {
    /// Adds `step`, starting no earlier than `not_before` seconds and
    /// after the steps `after`; returns its index.
    pub fn add(&mut self, step: Step, not_before: f64, after: &[u32]) -> u32 {
        debug_assert!(after.iter().all(|&a| (a as usize) < self.steps.len()), "a step waits for earlier steps only");
        self.steps.push(Node { step, not_before, after: after.to_vec() });
        (self.steps.len() - 1) as u32
    }

    /// Adds party `by`'s request of `bytes` at `offset` of `file`;
    /// returns its index.
    pub fn request(&mut self, (not_before, by): (f64, u32), after: &[u32], file: u32, offset: u64, bytes: u64, kind: IoKind) -> u32 {
        self.add(Step::Request { by, file, offset, bytes, kind }, not_before, after)
    }

    /// A plan of one step at `t` whose end completes the one party.
    pub fn single(step: Step, t: f64) -> Plan {
        let mut p = Plan::default();
        let s = p.add(step, t, &[]);
        p.outputs.push(s);
        p
    }

    /// When step `i` may start, given the ends of the earlier steps, seconds.
    pub fn start_of(&self, i: usize, ends: &[f64]) -> f64 {
        let n = &self.steps[i];
        n.after.iter().map(|&a| ends[a as usize]).fold(n.not_before, f64::max)
    }

    /// Times every step in order on `fs`, requests over a network of
    /// `lat` one-way latency (seconds) and the servers' FIFO links;
    /// returns each party's completion, seconds.
    pub fn run(&self, fs: &mut FsState, lat: f64) -> Vec<f64> {
        let mut ends = Vec::with_capacity(self.steps.len());
        for (i, n) in self.steps.iter().enumerate() {
            let t = self.start_of(i, &ends);
            ends.push(match n.step {
                Step::Request { file, offset, bytes, kind, .. } => fs.request(t, lat, file, offset, bytes, kind),
                step => step.end_at_once(fs, t).expect("not a request"),
            });
        }
        self.outputs.iter().map(|&o| ends[o as usize]).collect()
    }
}
