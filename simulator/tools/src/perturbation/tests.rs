use super::*;

/// A run of `ranks` ranks in which region `key` has `count` blocks of
/// `mean_s` each (CPU and wall), per rank `means[rank]`.
fn run(regions: &[(&str, u64, &[f64])]) -> RunRegions {
    let ranks = regions.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let mut out = RunRegions { ranks: vec![BTreeMap::new(); ranks], polls: BTreeSet::new() };
    for (key, count, means) in regions {
        for (rank, mean) in means.iter().enumerate() {
            let s = out.ranks[rank].entry(key.to_string()).or_default();
            for _ in 0..*count {
                s.add(*mean, *mean);
            }
        }
    }
    out
}

fn get<'a>(p: &'a Perturbation, key: &str) -> &'a RegionPerturbation {
    p.regions.iter().find(|r| r.region == key).unwrap()
}

#[test]
fn a_slower_region_on_every_rank_and_run_is_systematic_and_corrected() {
    // Region a: traced 10 % slower on both ranks, beyond the spread of
    // three runs each. Region b: traced and untraced interleave.
    let traced: Vec<RunRegions> =
        [1.10, 1.11, 1.12].iter().map(|&f| run(&[("a", 100, &[f * 1e-6, f * 2e-6]), ("b", 10, &[f * 1e-5, 1e-5])])).collect();
    let untraced: Vec<RunRegions> =
        [1.0, 1.01, 0.99].iter().map(|&f| run(&[("a", 100, &[f * 1e-6, f * 2e-6]), ("b", 10, &[1.11 * 1e-5, 1e-5 * f])])).collect();
    let p = compare(&traced, &untraced, ComputeTime::Cpu, &Rule::default());
    let a = get(&p, "a");
    assert!(a.systematic, "{a:?}");
    assert!((a.ratio - 1.11).abs() < 1e-9, "{}", a.ratio);
    assert_eq!((a.ranks, a.traced_blocks, a.untraced_blocks), (2, 200, 200));
    // Per run: 100 blocks of 1 µs and 100 of 2 µs, 11 % more when traced.
    assert!((a.untraced_s - 300e-6).abs() < 1e-12 && (a.delta_s - 33e-6).abs() < 1e-12, "{a:?}");
    let b = get(&p, "b");
    assert!(!b.systematic && b.why_not.as_deref() == Some("within the run-to-run spread on some rank"), "{b:?}");
    let c = p.corrections();
    assert_eq!(c.len(), 1);
    assert!((c.get_key("a").unwrap() - 1.0 / 1.11).abs() < 1e-12);
    // Weights: a 300 µs, b 211 µs per run; a's ratio is the weighted median.
    assert!((p.weighted_median_ratio - a.ratio).abs() < 1e-12, "{}", p.weighted_median_ratio);
    assert!((p.matched_share - 1.0).abs() < 1e-12, "{}", p.matched_share);
    assert!(format_table(&p).contains("1 systematic"), "{}", format_table(&p));
}

#[test]
fn one_run_of_a_kind_or_ranks_disagreeing_is_not_systematic() {
    let t = |f: f64| run(&[("a", 10, &[f * 1e-6, 1e-6 / f])]);
    let u = |f: f64| run(&[("a", 10, &[f * 1e-6, f * 1e-6])]);
    let one = compare(&[t(1.2)], &[u(1.0), u(1.01)], ComputeTime::Cpu, &Rule::default());
    assert_eq!(one.regions[0].why_not.as_deref(), Some("fewer than 2 runs of each kind"));
    // Rank 0 slower traced, rank 1 faster, both beyond the spread.
    let split = compare(&[t(1.2), t(1.21)], &[u(1.0), u(1.01)], ComputeTime::Cpu, &Rule::default());
    assert_eq!(split.regions[0].why_not.as_deref(), Some("ranks differ in direction"));
    // Consistent but only 1 % apart: below the rule's effect.
    let tiny = compare(&[u(1.011), u(1.012)], &[u(1.0), u(1.001)], ComputeTime::Cpu, &Rule::default());
    assert_eq!(tiny.regions[0].why_not.as_deref(), Some("smaller than 2 %"));
    assert!(tiny.corrections().is_empty());
    // A region bordering a polling loop is never systematic.
    let mut polled = t(1.2);
    polled.polls.insert("a".into());
    let p = compare(&[polled, t(1.21)], &[t(1.0), t(1.01)], ComputeTime::Cpu, &Rule::default());
    assert_eq!(p.regions[0].why_not.as_deref(), Some("next to a polling call (stored as runs of mean blocks)"));
    let strict = Rule { min_runs: 3, ..Rule::default() };
    let few = compare(&[t(1.2), t(1.21)], &[u(1.0), u(1.01)], ComputeTime::Cpu, &strict);
    assert_eq!(few.regions[0].why_not.as_deref(), Some("fewer than 3 runs of each kind"));
}

#[test]
fn unmatched_regions_lower_the_matched_share() {
    let traced = [run(&[("a", 1, &[1.0])])];
    let untraced = [run(&[("a", 1, &[1.0]), ("only-untraced", 1, &[3.0])])];
    let p = compare(&traced, &untraced, ComputeTime::Wall, &Rule::default());
    assert_eq!(p.regions.len(), 1);
    assert!((p.matched_share - 0.25).abs() < 1e-12);
    assert_eq!((p.total_ratio, p.weighted_median_ratio), (1.0, 1.0));
}

#[test]
fn the_weighted_median_takes_the_value_at_half_the_weight() {
    assert_eq!(weighted_median(&[(1.0, 1.0), (2.0, 1.0), (3.0, 5.0)]), 3.0);
    assert_eq!(weighted_median(&[(1.0, 4.0), (2.0, 1.0), (3.0, 1.0)]), 1.0);
    assert_eq!(weighted_median(&[(1.0, 1.0), (2.0, 1.0)]), 1.0);
    assert_eq!(weighted_median(&[]), 1.0);
    assert_eq!(weighted_median(&[(f64::NAN, 3.0), (2.0, 1.0)]), 2.0);
}
