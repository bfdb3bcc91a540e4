//! The action log ([`Replay::action_log`]): every action once, with its
//! simulated span (worked example on the parent's platform: eager below
//! 1024 bytes, 1 ms latency, zero overheads).

use std::cell::RefCell;
use std::rc::Rc;

use super::*;

/// `(rank, action, start_s, end_s)`.
type Logged = (usize, Action, f64, f64);

#[test]
fn every_action_is_logged_once_with_its_span() {
    // Rank 0 computes 2 ms then sends 8 bytes; rank 1 receives at once:
    // the message arrives at 2 + 1 ms, which ends rank 1's receive.
    let p = simple();
    let ranks = vec![vec![Action::Compute { seconds: 2e-3, region: 7 }, send(1, 8), Action::Finalize], vec![recv(0), Action::Finalize]];
    let log: Rc<RefCell<Vec<Logged>>> = Rc::default();
    let sink = log.clone();
    let streams: Vec<ActionStream<'static, Infallible>> =
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let r = Replay::new(&p)
        .action_log(Box::new(move |rank, a, t0, t1| sink.borrow_mut().push((rank, a.clone(), t0, t1))))
        .run(streams)
        .unwrap();
    let log = log.borrow();
    assert_eq!(log.len(), 5, "{log:?}");
    let of = |rank: usize| log.iter().filter(|e| e.0 == rank).map(|e| (e.1.clone(), e.2, e.3)).collect::<Vec<_>>();
    let (r0, r1) = (of(0), of(1));
    assert_eq!(r0[0].0, Action::Compute { seconds: 2e-3, region: 7 });
    close(r0[0].2, 2e-3);
    assert_eq!((r0[1].0.clone(), r0[1].1), (send(1, 8), r0[0].2));
    close(r1[0].2, 3e-3);
    // Spans follow each other; the last ends where the rank ends.
    for (rank, spans) in [r0, r1].iter().enumerate() {
        assert!(spans.windows(2).all(|w| w[0].2 == w[1].1), "{spans:?}");
        assert_eq!((spans[0].1, spans.last().unwrap().2), (0.0, r.ranks[rank].end_s));
    }
}
