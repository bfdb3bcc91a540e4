//! Several traced runs of one rank count, merged into one sample: the
//! same calls, each compute block at the median of its runs (as
//! [`crate::replay::runs`] merges runs for the replay). A block's duration
//! varies from run to run with what else the machine does; the median of
//! three or more runs drops the run a detour hit, so the laws fitted
//! against N see the program's scaling, not one run's noise.

use super::{ExtrapolateError, Sample};

/// Groups `samples` by rank count (increasing) and merges each group's
/// runs into one sample.
///
/// # Errors
/// [`ExtrapolateError::Samples`] naming the two trace directories and the
/// rank when runs of one count do not make the same calls from the same
/// call sites.
pub(super) fn merge_runs(mut samples: Vec<Sample>) -> Result<Vec<Sample>, ExtrapolateError> {
    samples.sort_by_key(Sample::n);
    let mut out: Vec<Sample> = Vec::new();
    let mut group: Vec<Sample> = Vec::new();
    for s in samples {
        if group.first().is_some_and(|g| g.n() != s.n()) {
            out.push(merge(std::mem::take(&mut group))?);
        }
        group.push(s);
    }
    if !group.is_empty() {
        out.push(merge(group)?);
    }
    Ok(out)
}

/// One sample of `runs` (one rank count, at least one run): the first
/// run's records with every block's CPU and wall time at the median over
/// the runs (the mean of the middle two for an even count).
fn merge(mut runs: Vec<Sample>) -> Result<Sample, ExtrapolateError> {
    let mut first = runs.remove(0);
    if runs.is_empty() {
        return Ok(first);
    }
    for other in &runs {
        for (r, (a, b)) in first.ranks.iter().zip(&other.ranks).enumerate() {
            let same = a.2.len() == b.2.len() && a.2.iter().zip(&b.2).all(|(x, y)| x.0.op == y.0.op && x.1 == y.1);
            if !same {
                return Err(ExtrapolateError::Samples(format!(
                    "{} and {}: runs at {} ranks call differently at rank {r}; runs of one count must be the same program and input",
                    first.dir.display(),
                    other.dir.display(),
                    first.n()
                )));
            }
        }
    }
    let mut cpu = Vec::with_capacity(runs.len() + 1);
    let mut wall = Vec::with_capacity(runs.len() + 1);
    for (r, rank) in first.ranks.iter_mut().enumerate() {
        for (i, (rec, _)) in rank.2.iter_mut().enumerate() {
            cpu.clear();
            wall.clear();
            cpu.push(rec.compute_cpu_ns);
            wall.push(rec.compute_wall_ns);
            for other in &runs {
                let o = &other.ranks[r].2[i].0;
                cpu.push(o.compute_cpu_ns);
                wall.push(o.compute_wall_ns);
            }
            rec.compute_cpu_ns = median(&mut cpu);
            rec.compute_wall_ns = median(&mut wall);
        }
    }
    Ok(first)
}

/// The median of `v` (not empty), rounded to whole nanoseconds.
fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]).div_ceil(2)
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_takes_the_middle_run_and_ignores_the_outlier() {
        assert_eq!(median(&mut [5, 900, 7]), 7);
        assert_eq!(median(&mut [4, 6]), 5);
        assert_eq!(median(&mut [3]), 3);
    }
}
