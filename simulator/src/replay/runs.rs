//! Several traced runs of one program on the same ranks, replayed as one:
//! each compute block at the median of its recorded durations.
//!
//! One traced run carries the machine's state at that moment (a run in a
//! slow phase slows every block). Blocks are matched by rank and by
//! position in the rank's action stream, which for runs of the same
//! program with the same call sequence is the same region and occurrence.
//! Every other action must be the same in every run: a run whose calls
//! differ (data- or timing-dependent control flow) is refused, naming the
//! rank and action. Polls ([`Action::Poll`]) may differ: a polling loop
//! runs until its message comes, as many times as the run's timing gives.

use std::collections::HashMap;

use super::ActionStream;
use crate::action::Action;

/// Request handles of one run's rank, renamed to a count of the requests
/// created so far, so that runs whose MPI library handed out other handles
/// compare equal: each `Isend`, `Irecv` or `Icoll` gives its handle the
/// next number, and later references (`Wait`, `Waitall`, `Cancel`,
/// `RequestFree`) take the number of the handle's latest creation.
#[derive(Debug, Default)]
struct Renamer {
    latest: HashMap<u64, u64>,
    created: u64,
}

impl Renamer {
    fn rename(&mut self, a: &Action) -> Action {
        let mut a = a.clone();
        let mut new = |h: &mut u64| {
            self.created += 1;
            self.latest.insert(*h, self.created);
            *h = self.created;
        };
        match &mut a {
            Action::Isend { req, .. } | Action::Irecv { req, .. } | Action::Icoll { req, .. } => new(req),
            Action::Buffered(inner) => {
                if let Action::Isend { req, .. } = inner.as_mut() {
                    new(req);
                }
            }
            Action::Wait { req } | Action::Cancel { req } | Action::RequestFree { req } => *req = self.seen(*req),
            Action::Waitall { reqs } => reqs.iter_mut().for_each(|r| *r = self.seen(*r)),
            _ => {}
        }
        a
    }

    /// The number of `h`'s latest creation; every handle never created (a
    /// null request, whose value differs between runs) is the same mark.
    fn seen(&self, h: u64) -> u64 {
        self.latest.get(&h).copied().unwrap_or(u64::MAX)
    }
}

/// Why runs cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum RunsError<E: std::error::Error + 'static> {
    /// One run's stream failed.
    #[error("run {run}: {source}")]
    Stream {
        /// Index of the run (in the order given).
        run: usize,
        /// Its error.
        source: E,
    },
    /// The runs do not make the same calls.
    #[error(
        "rank {rank}, action {index}: run {run} has {theirs} where run 0 has {ours}; the runs differ (data- or timing-dependent calls)"
    )]
    Differ {
        /// World rank.
        rank: usize,
        /// Position in the rank's action stream (0-based; a block with
        /// the polls after it counts once).
        index: u64,
        /// The run that differs from run 0.
        run: usize,
        /// Run 0's action.
        ours: String,
        /// That run's action (or "the end").
        theirs: String,
    },
}

/// Median of `v` (mean of the two middle values for an even count).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A rank's stream as the merge compares it.
#[derive(Debug)]
enum Item {
    /// A compute block of `region` and, when polls follow it, the polls
    /// and the blocks between them up to the next other action, `seconds`
    /// summed: a polling loop runs a timing-dependent number of times, so
    /// runs agree on where it is, not on its length.
    Gap { seconds: f64, region: u64, polls: u64 },
    /// Any other action.
    Other(Action),
}

impl Item {
    fn show(item: Option<&Item>) -> String {
        match item {
            None => "the end".to_string(),
            Some(Item::Gap { region, polls: 0, .. }) => format!("Compute {{ region: {region} }}"),
            Some(Item::Gap { region, polls, .. }) => format!("Compute {{ region: {region} }} and {polls} polls"),
            Some(Item::Other(a)) => format!("{a:?}"),
        }
    }
}

/// The [`Item`]s of one stream.
struct Items<'a, E> {
    s: std::iter::Peekable<ActionStream<'a, E>>,
}

impl<E> Iterator for Items<'_, E> {
    type Item = Result<Item, E>;

    fn next(&mut self) -> Option<Self::Item> {
        let (mut seconds, region, mut polls) = match self.s.next()? {
            Err(e) => return Some(Err(e)),
            Ok(Action::Compute { seconds, region }) => (seconds, region, 0),
            Ok(Action::Poll) => (0.0, 0, 1),
            Ok(other) => return Some(Ok(Item::Other(other))),
        };
        while let Some(Ok(Action::Poll)) = self.s.peek() {
            self.s.next();
            polls += 1;
            if let Some(Ok(Action::Compute { seconds: s, .. })) = self.s.peek() {
                seconds += *s;
                self.s.next();
            }
        }
        Some(Ok(Item::Gap { seconds, region, polls }))
    }
}

/// The streams of one replay from `runs` (each the rank-ordered streams of
/// one traced run, every run with the same ranks): each `Compute` at the
/// median of its durations across runs, every other action as run 0 has it
/// once all runs agree. A block followed by polls ([`Action::Poll`]) is
/// matched with its polls and the blocks between them as one: their
/// summed time at its median, then the median number of polls.
///
/// # Panics
/// When `runs` is empty or the runs have different rank counts (the
/// caller checks both).
pub fn median_of_runs<'a, E>(runs: Vec<Vec<ActionStream<'a, E>>>) -> Vec<ActionStream<'a, RunsError<E>>>
where
    E: std::error::Error + 'static,
{
    let ranks = runs.first().map(Vec::len).expect("at least one run");
    assert!(runs.iter().all(|r| r.len() == ranks), "runs of different rank counts");
    let mut by_rank: Vec<Vec<Items<'a, E>>> = (0..ranks).map(|_| Vec::with_capacity(runs.len())).collect();
    for run in runs {
        for (r, s) in run.into_iter().enumerate() {
            by_rank[r].push(Items { s: s.peekable() });
        }
    }
    by_rank
        .into_iter()
        .enumerate()
        .map(|(rank, mut streams)| {
            let mut index = 0u64;
            let mut names: Vec<Renamer> = (0..streams.len()).map(|_| Renamer::default()).collect();
            let (mut seconds, mut polls) = (Vec::with_capacity(streams.len()), Vec::with_capacity(streams.len()));
            let mut queued = std::collections::VecDeque::new();
            let mut failed = false;
            Box::new(std::iter::from_fn(move || {
                if let Some(a) = queued.pop_front() {
                    return Some(Ok(a));
                }
                if failed {
                    return None;
                }
                let mut next: Vec<Option<Item>> = Vec::with_capacity(streams.len());
                for (run, s) in streams.iter_mut().enumerate() {
                    match s.next() {
                        Some(Err(source)) => {
                            failed = true;
                            return Some(Err(RunsError::Stream { run, source }));
                        }
                        Some(Ok(a)) => next.push(Some(a)),
                        None => next.push(None),
                    }
                }
                let differ = |run: usize, ours: &Option<Item>, theirs: &Option<Item>| RunsError::Differ {
                    rank,
                    index,
                    run,
                    ours: Item::show(ours.as_ref()),
                    theirs: Item::show(theirs.as_ref()),
                };
                let out = match &next[0] {
                    None => match next.iter().position(Option::is_some) {
                        None => return None,
                        Some(run) => Err(differ(run, &next[0], &next[run])),
                    },
                    Some(Item::Gap { region, .. }) => {
                        seconds.clear();
                        polls.clear();
                        let mut bad = None;
                        for (run, a) in next.iter().enumerate() {
                            match a {
                                Some(Item::Gap { seconds: s, region: g, polls: p }) if g == region => {
                                    seconds.push(*s);
                                    polls.push(*p as f64);
                                }
                                _ => {
                                    bad = Some(run);
                                    break;
                                }
                            }
                        }
                        match bad {
                            Some(run) => Err(differ(run, &next[0], &next[run])),
                            None => {
                                queued.extend(std::iter::repeat_n(Action::Poll, median(&mut polls).round() as usize));
                                Ok(Action::Compute { seconds: median(&mut seconds), region: *region })
                            }
                        }
                    }
                    Some(Item::Other(a)) => {
                        let ours = names[0].rename(a);
                        let other = (1..next.len()).find(|&run| match &next[run] {
                            Some(Item::Other(b)) => names[run].rename(b) != ours,
                            _ => true,
                        });
                        match other {
                            Some(run) => Err(differ(run, &next[0], &next[run])),
                            None => Ok(a.clone()),
                        }
                    }
                };
                index += 1;
                failed = out.is_err();
                Some(out)
            })) as ActionStream<'a, RunsError<E>>
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn run(ranks: Vec<Vec<Action>>) -> Vec<ActionStream<'static, Infallible>> {
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect()
    }

    fn c(seconds: f64) -> Action {
        Action::Compute { seconds, region: 7 }
    }

    #[test]
    fn blocks_take_the_median_of_the_runs() {
        let send = Action::Send { dst: 1, tag: 0, bytes: 8, comm: 0 };
        let runs = vec![
            run(vec![vec![c(1.0), send.clone(), c(5.0)]]),
            run(vec![vec![c(3.0), send.clone(), c(1.0)]]),
            run(vec![vec![c(2.0), send.clone(), c(9.0)]]),
        ];
        let out: Vec<Action> = median_of_runs(runs).remove(0).map(Result::unwrap).collect();
        assert_eq!(out, [c(2.0), send, c(5.0)]);
        let even = vec![run(vec![vec![c(1.0)]]), run(vec![vec![c(4.0)]])];
        assert_eq!(median_of_runs(even).remove(0).map(Result::unwrap).collect::<Vec<_>>(), [c(2.5)]);
    }

    #[test]
    fn polling_loops_of_other_lengths_merge_at_the_median() {
        let wait = Action::Wait { req: 1 };
        let polled = |blocks: &[f64]| {
            let mut a = vec![c(blocks[0])];
            for &b in &blocks[1..] {
                a.extend([Action::Poll, c(b)]);
            }
            a.push(wait.clone());
            run(vec![a])
        };
        // No poll (1 s), 2 polls (1 + 1 + 2 = 4 s), 4 polls (8 s): the
        // median of 4 s and 2 polls.
        let runs = vec![polled(&[1.0]), polled(&[1.0, 1.0, 2.0]), polled(&[2.0, 1.5, 1.5, 1.5, 1.5])];
        let out: Vec<Action> = median_of_runs(runs).remove(0).map(Result::unwrap).collect();
        assert_eq!(out, [c(4.0), Action::Poll, Action::Poll, wait.clone()]);
        // Polls where another run has a call are still a difference.
        let runs = vec![polled(&[1.0, 1.0]), run(vec![vec![c(1.0), Action::Send { dst: 0, tag: 0, bytes: 8, comm: 0 }, c(1.0), wait]])];
        let e = median_of_runs(runs).remove(0).find_map(Result::err).unwrap().to_string();
        assert!(e.contains("action 1: run 1 has Send"), "{e}");
    }

    #[test]
    fn request_handles_may_differ_between_runs() {
        let irecv = |req| Action::Irecv { src: 1, tag: 0, bytes: 8, comm: 0, req };
        let runs = vec![
            run(vec![vec![irecv(5), Action::Wait { req: 5 }, irecv(5), Action::Waitall { reqs: vec![5, 0] }]]),
            run(vec![vec![irecv(9), Action::Wait { req: 9 }, irecv(11), Action::Waitall { reqs: vec![11, 0] }]]),
        ];
        let out: Vec<Action> = median_of_runs(runs).remove(0).map(Result::unwrap).collect();
        assert_eq!(out[2], irecv(5));
        let crossed = vec![
            run(vec![vec![irecv(5), irecv(6), Action::Wait { req: 5 }]]),
            run(vec![vec![irecv(5), irecv(6), Action::Wait { req: 6 }]]),
        ];
        assert!(median_of_runs(crossed).remove(0).any(|a| a.is_err()));
    }

    #[test]
    fn runs_that_differ_are_refused_naming_rank_and_action() {
        let runs = vec![
            run(vec![vec![c(1.0)], vec![c(1.0), Action::Send { dst: 0, tag: 0, bytes: 8, comm: 0 }]]),
            run(vec![vec![c(1.0)], vec![c(1.0), Action::Send { dst: 0, tag: 0, bytes: 16, comm: 0 }]]),
        ];
        let mut streams = median_of_runs(runs);
        assert!(streams[0].all(|a| a.is_ok()));
        let e = streams[1].find_map(Result::err).unwrap().to_string();
        assert!(e.contains("rank 1, action 1: run 1 has Send") && e.contains("bytes: 16") && e.contains("differ"), "{e}");
        let short = vec![run(vec![vec![c(1.0), c(2.0)]]), run(vec![vec![c(1.0)]])];
        let e = median_of_runs(short).remove(0).find_map(Result::err).unwrap().to_string();
        assert!(e.contains("run 1 has the end"), "{e}");
    }
}
