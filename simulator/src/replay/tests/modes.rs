//! Send modes: a buffered send is eager at any size (worked examples on
//! the parent's platform: eager below 1024 bytes, 1 ms latency, 1 GB/s).

use super::*;

fn bsend(dst: u32, bytes: u64) -> Action {
    Action::Buffered(Box::new(send(dst, bytes)))
}

#[test]
fn buffered_sends_of_rendezvous_size_do_not_wait_for_the_receiver() {
    // Both ranks send 1 MB, then receive: standard sends deadlock in the
    // model (rendezvous), buffered ones complete at 1 ms + 1 ms each.
    let p = platform(model(L, 1e9, 0.0, 0.0));
    let big = 1_000_000;
    let standard = run(&p, vec![vec![send(1, big), recv(1)], vec![send(0, big), recv(0)]]);
    assert!(standard.is_err());
    let r = run(&p, vec![vec![bsend(1, big), recv(1)], vec![bsend(0, big), recv(0)]]).unwrap();
    close(r.makespan_s, 2e-3);
    balanced(&r);
    // A buffered Isend's request is complete after its (zero) overhead.
    let ibsend = Action::Buffered(Box::new(Action::Isend { dst: 1, tag: 0, bytes: big, comm: 0, req: 3 }));
    let r = run(&p, vec![vec![ibsend, Action::Wait { req: 3 }, compute(1e-3)], vec![compute(5e-3), recv(0)]]).unwrap();
    close(r.ranks[0].end_s, 1e-3);
    close(r.ranks[1].end_s, 5e-3);
}

#[test]
fn only_a_send_can_be_buffered() {
    let r = run(&simple(), vec![vec![Action::Buffered(Box::new(recv(1)))], vec![]]);
    assert!(r.unwrap_err().to_string().contains("only a send can be buffered"));
}
