//! Long fuzzing runs of `calibrate`'s CSV readers ([`calibrate::csv_fuzz`]):
//!
//! ```text
//! cargo run --release -p calibrate --example fuzz_csv -- [COUNT] [SEED]
//! ```
//! Feeds COUNT (default 10^7) mutated inputs to each reader and prints
//! one line per reader; a panic prints the input and exits with status 1.

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<f64>().expect("COUNT and SEED are numbers") as u64);
    let count = args.next().unwrap_or(10_000_000);
    let seed = args.next().unwrap_or(1);
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = false;
    for t in calibrate::csv_fuzz::targets() {
        match simulator_fuzz::run(&t, seed, count, &mut |_| {}) {
            Ok(st) => println!(
                "{:<14} {:>11} inputs  {:>10} accepted  slowest {:>9.6} s  {:>9.0} inputs/s  {:>7.1} s",
                t.name,
                st.inputs,
                st.accepted,
                st.slowest_s,
                st.inputs as f64 / st.elapsed_s.max(1e-9),
                st.elapsed_s
            ),
            Err(f) => {
                eprintln!("FINDING {f}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
