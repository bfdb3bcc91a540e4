use super::*;

/// Inputs per target in a test run: a few seconds in all in a debug build.
const INPUTS: u64 = 3_000;

#[test]
fn every_seed_is_accepted_by_its_reader() {
    for t in targets() {
        for (i, s) in t.seeds.iter().enumerate() {
            assert!((t.run)(s), "{}: seed {i} refused:\n{}", t.name, String::from_utf8_lossy(s));
        }
    }
}

#[test]
fn mutated_inputs_never_panic_a_reader() {
    for t in targets() {
        let stats = run(&t, 0x5eed, INPUTS, &mut |_| {}).unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(stats.inputs, INPUTS, "{}", t.name);
        // Some inputs are refused (the mutations reach the checks) and
        // some accepted (the seeds, at least).
        assert!(stats.accepted > 0 && stats.accepted < INPUTS, "{}: {stats:?}", t.name);
    }
}

#[test]
fn the_same_seed_gives_the_same_inputs() {
    let t = &targets()[2];
    let mut a = Vec::new();
    let mut b = Vec::new();
    run(t, 7, 50, &mut |x| a.push(x.to_vec())).unwrap();
    run(t, 7, 50, &mut |x| b.push(x.to_vec())).unwrap();
    assert_eq!(a, b);
    let mut c = Vec::new();
    run(t, 8, 50, &mut |x| c.push(x.to_vec())).unwrap();
    assert_ne!(a, c);
}

#[test]
fn a_panicking_reader_is_reported_with_its_input() {
    let t = Target {
        name: "boom",
        seeds: vec![b"ok".to_vec()],
        tokens: &[b"X"],
        run: |d| if d.contains(&b'X') { panic!("saw X") } else { true },
    };
    let f = run(&t, 1, 10_000, &mut |_| {}).unwrap_err();
    assert!(f.input.contains(&b'X') && f.message == "saw X", "{f}");
}
