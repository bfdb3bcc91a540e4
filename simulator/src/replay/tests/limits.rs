//! Results that would be wrong without a word: sends never received,
//! times that overflow, collectives whose sizes overflow.

use super::*;

#[test]
fn an_eager_send_never_received_is_an_error_naming_it() {
    let e = run(&simple(), vec![vec![send(1, 8)], vec![]]).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e.kind, ReplayErrorKind::Unmatched { count: 1, .. }), "{msg}");
    assert!(msg.contains("eager send of 8 B from 0 to 1 tag 0"), "{msg}");
    // Salvage mode replays to the end and says what was left.
    let p = simple();
    let streams: Vec<ActionStream<'_, std::convert::Infallible>> =
        vec![Box::new(vec![send(1, 8)].into_iter().map(Ok)), Box::new(std::iter::empty())];
    let r = Replay::new(&p).salvage().run(streams).unwrap();
    assert!(r.salvaged.as_deref().is_some_and(|s| s.contains("1 sends never received")), "{:?}", r.salvaged);
}

#[test]
fn a_makespan_that_overflows_is_an_error_not_infinity() {
    let e = run(&simple(), vec![vec![compute(1e308), compute(1e308)], vec![]]).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e.kind, ReplayErrorKind::NotFinite(_)), "{msg}");
    assert!(msg.starts_with("rank 0: end time is inf"), "{msg}");
}

#[test]
fn collective_sizes_over_2_pow_53_per_rank_are_refused() {
    let big = crate::limits::MAX_BYTES;
    let a = Action::Alltoall { bytes: big, comm: 0 };
    let e = run(&simple(), vec![vec![a.clone()], vec![a]]).unwrap_err().to_string();
    assert!(e.contains("exceed the limit of 2^53 bytes"), "{e}");
    let v = Action::Alltoallv { send_bytes: vec![u64::MAX, 1], comm: 0 };
    let e = run(&simple(), vec![vec![v.clone()], vec![v]]).unwrap_err().to_string();
    assert!(e.contains("exceed the limit of 2^53 bytes"), "{e}");
}
