//! The CSV readers of `calibrate` as [`simulator_fuzz`] targets: the
//! benchmark samples, the MPI-IO samples and the wattmeter samples.

use std::path::Path;

use simulator_fuzz::Target;

const TOKENS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1e308",
    b"-1e308",
    b"nan",
    b"inf",
    b"18446744073709551615",
    b"9007199254740993",
    b"4294967296",
    b"1.5",
    b",",
    b"\"",
    b"\n",
    b"\r\n",
    b" ",
    b"\xff",
];

const BENCH: &str = "op,size_bytes,start_s,duration_s\npingpong,8,0.001,2.5e-6\nsend,65536,0.002,1e-5\n\"allreduce\",1024,0.5,3e-6\n";
const IO: &str = "case,size_bytes,seconds\nwrite,4096,1e-4\nread_all,1048576,0.002\nopenclose,0,5e-5\n";
const POWER: &str =
    "timestamp_s,host,pstate_or_frequency_hz,active_cores,watts\n0,node0,0,0,95.5\n1.5,node0,0,4,180\n3,node0,2.4e9,2,140\n";

/// The three readers, each with a valid seed.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "bench-csv",
            seeds: vec![BENCH.as_bytes().to_vec()],
            tokens: TOKENS,
            run: |d| crate::bench::parse_csv(&String::from_utf8_lossy(d), Path::new("fuzz.csv")).is_ok(),
        },
        Target {
            name: "io-csv",
            seeds: vec![IO.as_bytes().to_vec()],
            tokens: TOKENS,
            run: |d| crate::io::parse_csv(&String::from_utf8_lossy(d), Path::new("fuzz.csv")).is_ok(),
        },
        Target {
            name: "power-csv",
            seeds: vec![POWER.as_bytes().to_vec()],
            tokens: TOKENS,
            run: |d| crate::power::parse_csv(&String::from_utf8_lossy(d), Path::new("fuzz.csv")).is_ok(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_readers_accept_their_seeds_and_never_panic() {
        for t in targets() {
            assert!((t.run)(&t.seeds[0]), "{}", t.name);
            let st = simulator_fuzz::run(&t, 0x5eed, 5_000, &mut |_| {}).unwrap_or_else(|f| panic!("{f}"));
            assert!(st.accepted > 0 && st.accepted < st.inputs, "{}: {st:?}", t.name);
        }
    }

    #[test]
    fn out_of_range_values_name_their_column_and_line() {
        let p = Path::new("s.csv");
        let e = crate::power::parse_csv(&POWER.replace("95.5", "-3"), p).unwrap_err().to_string();
        assert!(e.contains("s.csv:2: watts `-3` must be > 0"), "{e}");
        let e = crate::power::parse_csv(&POWER.replace("180", "1e308"), p).unwrap_err().to_string();
        assert!(e.contains("s.csv:3: watts `1e308`"), "{e}");
        let e = crate::bench::parse_csv(&BENCH.replace("65536", "18446744073709551615"), p).unwrap_err().to_string();
        assert!(e.contains("s.csv:3: bad size_bytes `18446744073709551615` (an integer up to 2^53)"), "{e}");
        let e = crate::bench::parse_csv(&BENCH.replace("2.5e-6", "inf"), p).unwrap_err().to_string();
        assert!(e.contains("s.csv:2: bad duration_s `inf`"), "{e}");
        let e = crate::io::parse_csv(&IO.replace("1048576", "9007199254740993"), p).unwrap_err().to_string();
        assert!(e.contains("s.csv:3: bad size_bytes"), "{e}");
    }
}
