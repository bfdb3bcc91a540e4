//! Schedules generated one round at a time, for the algorithms whose
//! rounds are cheap to compute from the round's index (recursive-doubling
//! all-reduce, dissemination and recursive-doubling barriers): a rank then holds
//! a few words of state in a collective instead of its whole list of
//! [`Step`]s (at a million ranks a recursive-doubling all-reduce is 20
//! rounds per rank, all ranks inside it at once).

use super::alg::{Alg, Coll};
use super::exchange::{fold, unfold};
use super::schedule::{elem_size, CollCall};
use super::select::CollAlgs;
use super::Step;

/// A rank's part of a collective, generated round by round: the same
/// steps, in the same rounds, as [`super::schedule`] appends for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lazy {
    alg: LazyAlg,
    /// Index of the next round.
    next: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LazyAlg {
    /// [`super::allreduce`]: rank `me` of `n`, `bytes` per rank.
    RdbAllreduce { me: u32, n: u32, bytes: u64 },
    /// [`super::barrier`] (dissemination): rank `me` of `n`.
    Dissemination { me: u32, n: u32 },
    /// [`super::recursive_doubling_barrier`]: rank `me` of `n`.
    RdBarrier { me: u32, n: u32 },
}

impl Lazy {
    /// The round-by-round form of rank `me`'s part of `call` on `n` ranks,
    /// when `algs` picks an algorithm that has one (recursive-doubling
    /// all-reduce, including the fallbacks of ring and Rabenseifner to
    /// it; the dissemination and recursive-doubling barriers); `None` otherwise
    /// ([`super::schedule`] then expands it whole).
    pub fn plan(algs: &CollAlgs, call: &CollCall, me: u32, n: u32) -> Option<Lazy> {
        if call.coll == Coll::Barrier {
            let alg = match algs.pick(call.coll, n, call.size_measure(n), 0) {
                Alg::Linear | Alg::Tree => return None,
                Alg::RecursiveDoubling => LazyAlg::RdBarrier { me, n },
                _ => LazyAlg::Dissemination { me, n },
            };
            return Some(Lazy { alg, next: 0 });
        }
        if call.coll != Coll::Allreduce {
            return None;
        }
        let bytes = call.bytes;
        let count = bytes / elem_size(bytes);
        let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 } as u64;
        let rdb = match algs.pick(call.coll, n, call.size_measure(n), count) {
            Alg::RecursiveDoubling => true,
            Alg::Ring => count < n as u64,
            Alg::Rabenseifner => count < pof2,
            _ => false,
        };
        rdb.then_some(Lazy { alg: LazyAlg::RdbAllreduce { me, n, bytes }, next: 0 })
    }

    /// Appends the steps of the next round to `out` (the last one marked
    /// [`Step::end_round`]); false, appending nothing, when none is left.
    pub fn next_round(&mut self, out: &mut Vec<Step>) -> bool {
        let k = self.next;
        let more = match self.alg {
            LazyAlg::RdbAllreduce { me, n, bytes } => rdb_allreduce_round(me, n, bytes, k, out),
            LazyAlg::Dissemination { me, n } => dissemination_round(me, n, k, out),
            LazyAlg::RdBarrier { me, n } => rd_barrier_round(me, n, k, out),
        };
        self.next += u32::from(more);
        more
    }
}

/// A lazy schedule whose rounds line up: in round k each of its round
/// members sends one message to one round member and receives one from
/// one (the dissemination barrier; recursive doubling among the p =
/// 2^⌊log₂ n⌋ "new" ranks of MPICH's fold), so all members' rounds can be
/// evaluated together, round by round. With a fold, the first `2 · rem`
/// ranks pair up around the rounds: the even one of each pair sends its
/// buffer to the odd one before them (the odd one reduces it) and gets the
/// result back after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aligned {
    /// Communicator size.
    pub n: u32,
    /// Rounds (each round member sends and receives once per round).
    pub rounds: u32,
    /// Pairs folded around the rounds (0: none).
    pub rem: u32,
    /// Bytes of every message.
    pub bytes: u64,
    /// Bytes each received message of the rounds and of a pair's first
    /// message adds to the reduction (0: none).
    pub reduce_bytes: u64,
    dissemination: bool,
}

impl Aligned {
    /// How many members take part in the rounds (`n − rem`).
    pub fn round_members(&self) -> u32 {
        self.n - self.rem
    }

    /// The communicator rank of round member `nu`.
    pub fn member(&self, nu: u32) -> u32 {
        unfold(nu, self.rem)
    }

    /// Round `k`'s peers of round member `nu`, as round members: (the one
    /// it sends to, the one it receives from).
    pub fn peers(&self, nu: u32, k: u32) -> (u32, u32) {
        if self.dissemination {
            let (me, n, dist) = (nu as u64, self.n as u64, 1u64 << k);
            (((me + dist) % n) as u32, ((me + n - dist) % n) as u32)
        } else {
            let p = nu ^ (1 << k);
            (p, p)
        }
    }
}

impl Lazy {
    /// The aligned form of this schedule, if it has one (the
    /// recursive-doubling barrier's ranks beyond the largest power of two
    /// take no part in its rounds: none).
    pub fn aligned(&self) -> Option<Aligned> {
        match self.alg {
            LazyAlg::RdbAllreduce { n, bytes, .. } => {
                let (p, rem, _) = fold(0, n);
                Some(Aligned { n, rounds: p.trailing_zeros(), rem, bytes, reduce_bytes: bytes, dissemination: false })
            }
            LazyAlg::Dissemination { n, .. } => {
                let rounds = (0..32).take_while(|&k| (1u64 << k) < n as u64).count() as u32;
                Some(Aligned { n, rounds, rem: 0, bytes: 0, reduce_bytes: 0, dissemination: true })
            }
            LazyAlg::RdBarrier { .. } => None,
        }
    }
}

fn step(peer: u32, send: bool, bytes: u64, end_round: bool, reduce_bytes: u64) -> Step {
    Step { peer, bytes: if send { bytes } else { 0 }, send, end_round, reduce_bytes }
}

/// Round `k` of [`super::barrier`] for rank `me` of `n`: send to the rank
/// 2^k ahead, receive from the one 2^k behind (modulo `n`).
fn dissemination_round(me: u32, n: u32, k: u32, out: &mut Vec<Step>) -> bool {
    let dist = 1u64.checked_shl(k).unwrap_or(u64::MAX);
    if dist >= n as u64 {
        return false;
    }
    let (me, n64) = (me as u64, n as u64);
    out.push(step(((me + dist) % n64) as u32, true, 0, false, 0));
    out.push(step(((me + n64 - dist) % n64) as u32, false, 0, true, 0));
    true
}

/// Round `k` of [`super::recursive_doubling_barrier`] for rank `me` of
/// `n`, p = 2^⌊log₂ n⌋: a rank from p on exchanges with the one p
/// before it and is done; below p, the rank p after it (when there is
/// one) is received from first and sent to last, around the exchanges
/// with `me ^ 2^j`, j < log₂ p.
fn rd_barrier_round(me: u32, n: u32, k: u32, out: &mut Vec<Step>) -> bool {
    let p = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    if me >= p {
        if k > 0 {
            return false;
        }
        out.push(step(me - p, true, 0, false, 0));
        out.push(step(me - p, false, 0, true, 0));
        return true;
    }
    let pre = u32::from(me < n - p);
    let rounds = p.trailing_zeros();
    if k < pre {
        out.push(step(me + p, false, 0, true, 0));
    } else if k < pre + rounds {
        let partner = me ^ (1 << (k - pre));
        out.push(step(partner, true, 0, false, 0));
        out.push(step(partner, false, 0, true, 0));
    } else if k < 2 * pre + rounds {
        out.push(step(me + p, true, 0, true, 0));
    } else {
        return false;
    }
    true
}

/// Round `k` of [`super::allreduce`] for rank `me` of `n`.
fn rdb_allreduce_round(me: u32, n: u32, bytes: u64, k: u32, out: &mut Vec<Step>) -> bool {
    let (p, rem, new) = fold(me, n);
    let Some(new) = new else {
        // Folded out: hand the buffer to the odd neighbour, get the result back.
        match k {
            0 => out.push(step(me + 1, true, bytes, true, 0)),
            1 => out.push(step(me + 1, false, bytes, true, 0)),
            _ => return false,
        }
        return true;
    };
    let pre = u32::from(me < 2 * rem);
    let rounds = p.trailing_zeros();
    if k < pre {
        out.push(step(me - 1, false, bytes, true, bytes));
    } else if k < pre + rounds {
        let partner = unfold(new ^ (1 << (k - pre)), rem);
        out.push(step(partner, true, bytes, false, 0));
        out.push(step(partner, false, bytes, true, bytes));
    } else if k < 2 * pre + rounds {
        out.push(step(me - 1, true, bytes, true, 0));
    } else {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::{alg_names, allreduce, barrier, schedule};
    use super::*;

    fn rounds(mut l: Lazy) -> Vec<Step> {
        let mut out = Vec::new();
        while l.next_round(&mut out) {}
        assert!(!l.next_round(&mut out), "stays finished");
        out
    }

    #[test]
    fn rdb_rounds_are_the_whole_schedule() {
        for n in (1..70).chain([1000, 1 << 16, (1 << 20) + 3]) {
            let ranks: Vec<u32> = if n < 100 { (0..n).collect() } else { vec![0, 1, 2, 5, 6, n / 2, n - 2, n - 1] };
            for me in ranks {
                let mut want = Vec::new();
                allreduce(me, n, 8, &mut want);
                let l = Lazy { alg: LazyAlg::RdbAllreduce { me, n, bytes: 8 }, next: 0 };
                assert_eq!(rounds(l), want, "rank {me} of {n}");
            }
        }
    }

    /// A member's steps from its aligned form: the fold's first message,
    /// the rounds, the fold's last message.
    fn aligned_steps(a: &Aligned, me: u32) -> Vec<Step> {
        let mut want = Vec::new();
        if me < 2 * a.rem && me.is_multiple_of(2) {
            want.push(step(me + 1, true, a.bytes, true, 0));
            want.push(step(me + 1, false, a.bytes, true, 0));
            return want;
        }
        let nu = (0..a.round_members()).find(|&nu| a.member(nu) == me).expect("a round member");
        let paired = me < 2 * a.rem;
        if paired {
            want.push(step(me - 1, false, a.bytes, true, a.reduce_bytes));
        }
        for k in 0..a.rounds {
            let (to, from) = a.peers(nu, k);
            want.push(step(a.member(to), true, a.bytes, false, 0));
            want.push(step(a.member(from), false, a.bytes, true, a.reduce_bytes));
        }
        if paired {
            want.push(step(me - 1, true, a.bytes, true, 0));
        }
        want
    }

    #[test]
    fn aligned_rounds_are_the_lazy_rounds() {
        for n in (1..70).chain([1000, 1 << 16, (1 << 16) + 5]) {
            for me in (0..n).filter(|&m| n < 100 || m < 12 || m > n - 4 || m == n / 2) {
                for l in [
                    Lazy { alg: LazyAlg::RdbAllreduce { me, n, bytes: 24 }, next: 0 },
                    Lazy { alg: LazyAlg::Dissemination { me, n }, next: 0 },
                ] {
                    let a = l.aligned().expect("aligned");
                    assert_eq!(rounds(l), aligned_steps(&a, me), "{l:?}");
                }
            }
        }
    }

    #[test]
    fn dissemination_rounds_are_the_whole_barrier() {
        for n in (1..70).chain([1000, (1 << 20) + 3]) {
            let ranks: Vec<u32> = if n < 100 { (0..n).collect() } else { vec![0, 1, n / 2, n - 1] };
            for me in ranks {
                let mut want = Vec::new();
                barrier(me, n, &mut want);
                assert_eq!(rounds(Lazy { alg: LazyAlg::Dissemination { me, n }, next: 0 }), want, "rank {me} of {n}");
            }
        }
    }

    #[test]
    fn recursive_doubling_barrier_rounds_are_the_whole_barrier() {
        for n in (1..70).chain([1000, 1 << 20, (1 << 20) + 3]) {
            let ranks: Vec<u32> = if n < 100 { (0..n).collect() } else { vec![0, 1, 2, n / 2, n - 4, n - 1] };
            for me in ranks {
                let mut want = Vec::new();
                super::super::recursive_doubling_barrier(me, n, &mut want);
                assert_eq!(rounds(Lazy { alg: LazyAlg::RdBarrier { me, n }, next: 0 }), want, "rank {me} of {n}");
            }
        }
    }

    #[test]
    fn plans_agree_with_schedule_for_every_selector_and_algorithm() {
        let mut all: Vec<CollAlgs> = ["mpich", "smpi", "ompi", "simgrid-ompi"].iter().map(|s| CollAlgs::preset(s).unwrap()).collect();
        for coll in [Coll::Allreduce, Coll::Barrier] {
            for (name, _) in alg_names(coll) {
                let mut a = CollAlgs::mpich();
                a.set(coll.name(), name).unwrap();
                all.push(a);
            }
        }
        let mut lazy = 0;
        for algs in &all {
            for (coll, bytes) in [0, 8, 24, 4096, 1 << 20].map(|b| (Coll::Allreduce, b)).into_iter().chain([(Coll::Barrier, 0)]) {
                for n in [1, 2, 3, 7, 8, 13, 64, 100] {
                    let call = CollCall { coll, root: 0, bytes, sizes: &[], vector: false };
                    for me in 0..n {
                        let Some(l) = Lazy::plan(algs, &call, me, n) else { continue };
                        lazy += 1;
                        let mut want = Vec::new();
                        schedule(algs, &call, me, n, &mut want);
                        assert_eq!(rounds(l), want, "{algs:?} {bytes} B rank {me} of {n}");
                    }
                }
            }
        }
        assert!(lazy > 1000, "{lazy}");
        let call = CollCall { coll: Coll::Allreduce, root: 0, bytes: 8, sizes: &[], vector: false };
        assert!(Lazy::plan(&CollAlgs::mpich(), &call, 0, 4).is_some(), "MPICH's small all-reduce is recursive doubling");
    }
}
