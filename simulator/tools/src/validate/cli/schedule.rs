//! The order of a case's runs: the plain runs interleaved with the
//! traced runs, then with the online runs, so that on a machine whose
//! state drifts over minutes each kind meets the same states (rather
//! than every traced run meeting one and the plain runs another).

/// One run of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// A plain run.
    Plain,
    /// Slot `k` of the traced runs (from 1; `traced::traced_slots`).
    Traced(u32),
    /// Online run `k` (from 1).
    Online(u32),
}

/// `plain` plain runs, `traced` traced slots and `online` online runs:
/// every traced run before any online run (the online runs model the
/// platform the traced runs' replay chose), the plain runs shared between
/// the two parts in proportion, and each part spread evenly (the run
/// whose kind is furthest behind its share goes next; a tie goes to the
/// traced or online run).
pub(super) fn schedule(plain: usize, traced: u32, online: u32) -> Vec<Run> {
    let (t, o) = (traced as usize, online as usize);
    let first = (plain * t).checked_div(t + o).unwrap_or(plain);
    let mut out = interleave(first, t, Run::Traced);
    out.extend(interleave(plain - first, o, Run::Online));
    out
}

/// `plain` plain runs and `n` others (`other(k)`, k from 1), spread evenly.
fn interleave(plain: usize, n: usize, other: fn(u32) -> Run) -> Vec<Run> {
    let (mut p, mut k) = (0, 0);
    let mut out = Vec::with_capacity(plain + n);
    while p < plain || k < n {
        // Compare (done + ½) / count of each kind, without division.
        let other_next = k < n && (p == plain || (2 * k + 1) * plain <= (2 * p + 1) * n);
        if other_next {
            k += 1;
            out.push(other(k as u32));
        } else {
            p += 1;
            out.push(Run::Plain);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use Run::{Online as O, Plain as P, Traced as T};

    #[test]
    fn every_run_once_traced_before_online_and_spread() {
        assert_eq!(schedule(5, 1, 1), [P, T(1), P, P, O(1), P, P]);
        assert_eq!(schedule(5, 3, 3), [T(1), P, T(2), P, T(3), O(1), P, O(2), P, O(3), P]);
        assert_eq!(schedule(7, 3, 2), [P, T(1), P, T(2), P, T(3), P, P, O(1), P, O(2), P]);
        assert_eq!(schedule(0, 2, 1), [T(1), T(2), O(1)]);
        for (p, t, o) in [(5, 1, 1), (7, 3, 2), (1, 5, 5), (11, 5, 3), (4, 0, 2)] {
            let s = schedule(p, t, o);
            assert_eq!(s.iter().filter(|r| **r == P).count(), p);
            let traced: Vec<u32> = s.iter().filter_map(|r| if let T(k) = r { Some(*k) } else { None }).collect();
            let online: Vec<u32> = s.iter().filter_map(|r| if let O(k) = r { Some(*k) } else { None }).collect();
            assert_eq!((traced, online), ((1..=t).collect::<Vec<_>>(), (1..=o).collect::<Vec<_>>()));
            let last_traced = s.iter().rposition(|r| matches!(r, T(_)));
            let first_online = s.iter().position(|r| matches!(r, O(_)));
            assert!(last_traced.zip(first_online).is_none_or(|(a, b)| a < b), "{s:?}");
        }
    }
}
