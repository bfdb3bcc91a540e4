use super::*;
use crate::trace::record::PROC_NULL;

/// Rank 0 of a 2-rank `smpirun -trace-ti` run (SimGrid 3.32) of a program
/// calling each verb once, with MPI_INT (code 1) unless noted.
const RANK0: &str = "0 init
0 compute 3.5
0 send 1 8 3 0
0 isend 1 99 1 1
0 wait 0 1 99
0 sendRecv 2 1 2 1 1 1
0 bcast 4 1 1
0 reduce 4 0 1 0
0 allreduce 5 7 1
0 alltoall 2 2 1 1
0 allgather 2 2 1 1
0 gather 2 2 0 1 1
0 scatter 2 2 1 1 1
0 gatherv 1 1 2 0 1 1
0 allgatherv 1 1 2 1 1
0 scatterv 1 2 1 0 1 1
0 alltoallv 2 1 1 2 1 1 1 1
0 reducescatter 1 1 0 1
0 scan 2 0 1
0 exscan 2 0 1
0 barrier
0 isend -333 3 128 0
0 irecv 1 4 2
0 test 0 1 7
0 waitall 2
0 location foo.c 12
0 finalize
";

fn actions(text: &str, rank: u32, ranks: u32) -> (tempfile::TempDir, Vec<Result<Action, TiError>>) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.txt");
    std::fs::write(&f, text).unwrap();
    let a = TiActions::open(&f, rank, ranks).unwrap().collect();
    (dir, a)
}

#[test]
fn every_verb_smpirun_writes_maps_to_an_action() {
    let (_d, got) = actions(RANK0, 0, 2);
    let got: Vec<Action> = got.into_iter().map(Result::unwrap).collect();
    let want = vec![
        Action::Init,
        Action::Flops { flops: 3.5 },
        Action::Send { dst: 1, tag: 8, bytes: 24, comm: 0 },
        Action::Isend { dst: 1, tag: 99, bytes: 4, comm: 0, req: 1 },
        Action::Wait { req: 1 },
        Action::Sendrecv { dst: 1, send_tag: 0, send_bytes: 8, src: 1, recv_tag: 0, recv_bytes: 8, comm: 0 },
        Action::Bcast { root: 1, bytes: 16, comm: 0 },
        Action::Reduce { root: 1, bytes: 32, comm: 0 },
        Action::Allreduce { bytes: 20, comm: 0 },
        Action::Flops { flops: 7.0 },
        Action::Alltoall { bytes: 8, comm: 0 },
        Action::Allgather { bytes: 8, comm: 0 },
        Action::Gather { root: 0, bytes: 8, comm: 0 },
        Action::Scatter { root: 1, bytes: 8, comm: 0 },
        Action::Gather { root: 0, bytes: 4, comm: 0 },
        Action::Allgatherv { recv_bytes: vec![4, 8], comm: 0 },
        Action::Scatterv { root: 0, send_bytes: vec![4, 8], comm: 0 },
        Action::Alltoallv { send_bytes: vec![4, 4], comm: 0 },
        Action::ReduceScatter { recv_bytes: vec![4, 4], comm: 0 },
        Action::Scan { bytes: 8, exclusive: false, comm: 0 },
        Action::Scan { bytes: 8, exclusive: true, comm: 0 },
        Action::Barrier { comm: 0 },
        Action::Isend { dst: PROC_NULL as u32, tag: 3, bytes: 1024, comm: 0, req: 2 },
        // No datatype after `init` without argument: MPI_BYTE.
        Action::Irecv { src: 1, tag: 4, bytes: 2, comm: 0, req: 3 },
        Action::Waitall { reqs: vec![2, 3] },
        Action::Finalize,
    ];
    assert_eq!(got, want);
}

#[test]
fn init_with_an_argument_makes_double_the_default_datatype() {
    let (_d, got) = actions("1 init 1\n1 recv 0 0 4\n", 1, 2);
    assert_eq!(got[1].as_ref().unwrap(), &Action::Recv { src: 0, tag: 0, bytes: 32, comm: 0 });
}

#[test]
fn bad_lines_are_one_line_errors_naming_file_and_line() {
    for (text, needle) in [
        ("0 init\n0 frobnicate 3\n", ":2: unknown action `frobnicate`"),
        ("0 init\n0 compute 1\n0 send 1 0\n", ":3: `send` needs at least 3 fields, found 2"),
        ("0 send 1 0 8 99\n", ":1: `send`: unknown datatype code `99`"),
        ("1 init\n", ":1: expected rank 0 in the first column, found `1`"),
        ("0 send 5 0 8\n", ":1: `send`: peer 5 is not among the 2 ranks"),
        ("0 bcast 8 7\n", ":1: `bcast`: root 7 is not among the 2 ranks"),
        ("0 compute -1\n", ":1: `compute`: field 1 `-1` is not a count >= 0"),
    ] {
        let (d, got) = actions(text, 0, 2);
        let e = got.into_iter().find_map(Result::err).expect(text).to_string();
        assert!(e.starts_with(d.path().join("r.txt").to_str().unwrap()), "{e}");
        assert!(e.ends_with(needle), "{e} !~ {needle}");
        assert_eq!(e.lines().count(), 1);
    }
}

#[test]
fn trace_list_resolves_relative_paths_and_names_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "0 init\n").unwrap();
    let list = dir.path().join("list.txt");
    std::fs::write(&list, "a.txt\n\n").unwrap();
    assert_eq!(read_trace_list(&list).unwrap(), vec![dir.path().join("a.txt")]);
    std::fs::write(&list, "a.txt\nb.txt\n").unwrap();
    let e = read_trace_list(&list).unwrap_err().to_string();
    assert_eq!(e, format!("{}:2: rank 1 trace file b.txt does not exist", list.display()));
    std::fs::write(&list, "\n").unwrap();
    assert!(read_trace_list(&list).unwrap_err().to_string().ends_with("the trace list names no file"));
}

#[test]
fn a_single_file_of_every_rank_replays_as_its_trace_list() {
    let dir = tempfile::tempdir().unwrap();
    let rank0 = "0 init\n0 compute 1000\n0 send 1 7 64\n0 recv 1 8 64\n0 allreduce 8 0\n0 finalize\n";
    let rank1 = "1 init\n1 recv 0 7 64\n1 compute 500\n1 send 0 8 64\n1 allreduce 8 0\n1 finalize\n";
    std::fs::write(dir.path().join("r0.txt"), rank0).unwrap();
    std::fs::write(dir.path().join("r1.txt"), rank1).unwrap();
    let list = dir.path().join("list.txt");
    std::fs::write(&list, "r0.txt\nr1.txt\n").unwrap();
    // Interleaved, as one file: every line names its rank.
    let single = dir.path().join("all.txt");
    let mut text = String::new();
    for (a, b) in rank0.lines().zip(rank1.lines()) {
        text += &format!("{a}\n{b}\n");
    }
    std::fs::write(&single, text).unwrap();
    let collect = |p: &Path| -> Vec<Vec<Action>> { open_list(p).unwrap().into_iter().map(|s| s.map(Result::unwrap).collect()).collect() };
    let (by_list, by_file) = (collect(&list), collect(&single));
    assert_eq!(by_file.len(), 2);
    assert_eq!(by_file, by_list);
}

#[test]
fn a_bad_line_of_a_single_file_is_named_by_its_line_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("all.txt");
    let errors = |p: &Path| -> Vec<String> {
        open_list(p).unwrap().into_iter().filter_map(|s| s.filter_map(Result::err).next().map(|e| e.to_string())).collect()
    };
    std::fs::write(&single, "0 init\n1 init\n0 compute 10\n1 send 0 x 8\n0 finalize\n1 finalize\n").unwrap();
    let e = errors(&single);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("all.txt:4: "), "{e:?}");
    // A line that names no rank goes to rank 0, whose parser names it.
    std::fs::write(&single, "0 init\n1 init\nfoo compute 10\n0 finalize\n1 finalize\n").unwrap();
    let e = errors(&single);
    assert!(e.len() == 1 && e[0].contains("all.txt:3: expected rank 0"), "{e:?}");
}

#[test]
fn datatype_codes_match_smpi_3_32() {
    // Codes seen in traces of MPI_Send(…, 3, type, …) under SimGrid 3.32.
    for (code, size) in [("0", 8), ("1", 4), ("2", 1), ("3", 2), ("4", 8), ("5", 4), ("6", 1), ("7", 8), ("9", 1)] {
        assert_eq!(datatype_size(code), Some(size), "code {code}");
    }
    for (code, size) in [("11", 4), ("14", 16), ("20", 8), ("21", 1), ("26", 16), ("32", 16), ("34", 8), ("57", 1)] {
        assert_eq!(datatype_size(code), Some(size), "code {code}");
    }
    assert_eq!(datatype_size("x"), None);
    assert_eq!(datatype_size("999"), None);
}

#[test]
fn many_ranks_hold_no_file_open_between_reads() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r0.txt");
    // > 8 KiB so that the small buffer refills several times, and more
    // actions than the batches a parser thread reads ahead, so that the
    // kept file is still being read.
    let text: String = (0..40000).map(|i| format!("0 compute {i}\n")).collect();
    std::fs::write(&f, text).unwrap();
    let open = |p: &Path| std::fs::read_dir("/proc/self/fd").unwrap().flatten().any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == p));
    let few: Vec<String> = TiActions::open(&f, 0, 2).unwrap().map(|a| format!("{:?}", a.unwrap())).collect();
    let mut many = TiActions::open(&f, 0, REOPEN_ABOVE as u32 + 1).unwrap();
    let first = many.next().unwrap().unwrap();
    // The first reader's parser thread may take a moment to let go of it.
    let closed = (0..200).any(|_| {
        let c = !open(&f);
        if !c {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        c
    });
    assert!(closed, "{} stays open", f.display());
    let mut kept = TiActions::open(&f, 0, 2).unwrap();
    kept.next();
    // With the parser on its own thread, the file may open a moment later.
    let seen = (0..200).any(|_| {
        let o = open(&f);
        if !o {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        o
    });
    assert!(seen, "the fd check sees nothing");
    let rest: Vec<String> = std::iter::once(first).chain(many.map(Result::unwrap)).map(|a| format!("{a:?}")).collect();
    assert_eq!(few.len(), 39999); // `compute 0` is dropped
    assert_eq!(rest, few);
}

#[test]
fn fields_split_on_ascii_whitespace_like_str() {
    for line in ["0 send 1 2 3", "  0\tsend  1 2 3 \r", "0 allreduce 1 0 0 ", "", " \t\r", "0 init\r"] {
        let want: Vec<&str> = line.split_ascii_whitespace().collect();
        let got: Vec<&[u8]> = parse::Fields::new(line.as_bytes()).collect();
        assert_eq!(got, want.iter().map(|w| w.as_bytes()).collect::<Vec<_>>(), "{line:?}");
    }
}

#[test]
fn numbers_parse_as_the_standard_parsers_do() {
    let texts = [
        "0",
        "7",
        "007",
        "123456789012345",
        "1234567890123456",
        "12345678901234567890123",
        "3.5",
        "0.1",
        "1e3",
        "2.5E-1",
        "1e308",
        "1e309",
        "+5",
        "-1",
        "-0",
        "1e",
        ".",
        "",
        "inf",
        "NaN",
        "infinity",
        "0x10",
        "1_0",
        "-333",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "4294967295",
        "4294967296",
        "999999999",
        "1000000000",
        "-",
        "+",
        "1.0",
        " 1",
    ];
    for t in texts {
        let b = t.as_bytes();
        let want_count = t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        assert_eq!(parse::count(b).map(f64::to_bits), want_count.map(f64::to_bits), "count {t:?}");
        assert_eq!(parse::int(b), t.parse::<i32>().ok(), "int {t:?}");
        assert_eq!(parse::uint(b), t.parse::<u32>().ok(), "uint {t:?}");
    }
    assert_eq!(parse::count(b"2.5e2"), Some(250.0));
    assert_eq!(parse::count(b"\xff1"), None);
}

#[test]
fn crlf_trailing_blanks_and_empty_lines_parse_as_plain_lines() {
    let plain = "0 init\n0 compute 1e3\n0 send 1 8 3 0\n0 allreduce 1 0 0\n0 finalize\n";
    let dressed = "0 init\r\n\r\n  0 compute 1e3  \r\n\n0\tsend 1 8 3 0\t\r\n0 allreduce 1 0 0 \r\n0 finalize";
    let (_d, want) = actions(plain, 0, 2);
    let (_e, got) = actions(dressed, 0, 2);
    let (want, got): (Vec<Action>, Vec<Action>) =
        (want.into_iter().map(Result::unwrap).collect(), got.into_iter().map(Result::unwrap).collect());
    assert_eq!(got, want);
    assert_eq!(got[1], Action::Flops { flops: 1000.0 });
}

#[test]
fn bad_numbers_and_bytes_name_file_and_line() {
    for (text, needle) in [
        ("0 init\n\n0 compute 1e\n", ":3: `compute`: field 1 `1e` is not a count >= 0"),
        ("0 init\r\n0 send 1 x 8\r\n", ":2: `send`: field 2 `x` is not an integer"),
        ("0 sleep NaN\n", ":1: `sleep`: field 1 `NaN` is not a count >= 0"),
        ("0 recv 1 2147483648 8\n", ":1: `recv`: field 2 `2147483648` is not an integer"),
        ("0 init\n0 compute \u{e9}\n", ":2: `compute`: field 1 `\u{e9}` is not a count >= 0"),
        ("# a comment\n", ":1: expected rank 0 in the first column, found `#`"),
        ("0\n", ":1: missing action after the rank"),
    ] {
        let (d, got) = actions(text, 0, 2);
        let e = got.into_iter().find_map(Result::err).expect(text).to_string();
        assert!(e.starts_with(d.path().join("r.txt").to_str().unwrap()), "{e}");
        assert!(e.ends_with(needle), "{e} !~ {needle}");
    }
    // Bytes that are not UTF-8 are an error, not a panic.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.txt");
    std::fs::write(&f, b"0 init\n0 compute 1\xff\n").unwrap();
    let e = TiActions::open(&f, 0, 2).unwrap().find_map(Result::err).unwrap().to_string();
    assert!(e.ends_with(":2: `compute`: field 1 `1\u{fffd}` is not a count >= 0"), "{e}");
}

#[test]
fn an_error_after_many_batches_comes_after_every_earlier_action() {
    let mut text: String = (1..=5000).map(|i| format!("0 compute {i}\n")).collect();
    text += "0 compute oops\n0 compute 1\n";
    let (_d, got) = actions(&text, 0, 2);
    assert_eq!(got.len(), 5001);
    assert!(got[..5000].iter().enumerate().all(|(i, a)| a.as_ref().unwrap() == &Action::Flops { flops: (i + 1) as f64 }));
    assert!(got[5000].as_ref().unwrap_err().to_string().ends_with(":5001: `compute`: field 1 `oops` is not a count >= 0"));
}

#[test]
fn lines_longer_than_the_buffer_and_a_last_line_without_newline() {
    let long = format!("0 {}", "x".repeat(100));
    let text = format!("a\n\n{long}\r\nlast");
    let mut lines = read::Lines::new(std::io::Cursor::new(text.into_bytes()), 16);
    let mut got = Vec::new();
    while let Some(l) = lines.next_line().unwrap() {
        got.push(String::from_utf8(l.to_vec()).unwrap());
    }
    assert_eq!(got, ["a", "", &format!("{long}\r"), "last"]);
    assert_eq!(lines.line, 4);
}

#[test]
fn byte_counts_round_as_f64_round() {
    let xs = [
        0.0,
        0.4,
        0.49999999999999994,
        0.5,
        1.5,
        2.5,
        3.4999,
        1e15 + 0.5,
        4503599627370495.5,
        9007199254740993.0,
        1.8e19,
        1.9e19,
        1e300,
        f64::INFINITY,
    ];
    for x in xs {
        assert_eq!(parse::round_bytes(x), x.round() as u64, "{x}");
    }
}

#[test]
fn sizes_over_2_pow_53_bytes_are_refused_with_file_and_line() {
    for (line, what) in [
        ("0 send 1 0 18446744073709551615", "`send`: 1.8446744073709552e19 × 1 B exceeds the limit of 2^53 bytes"),
        ("0 allreduce 1e308 0", "`allreduce`: 1e308 × 1 B exceeds"),
        ("0 bcast 1125899906842624 0 14", "`bcast`: 1.125899906842624e15 × 16 B exceeds"),
    ] {
        let (_d, a) = actions(&format!("0 init\n{line}\n"), 0, 2);
        let e = a.into_iter().find_map(Result::err).unwrap_or_else(|| panic!("{line} accepted")).to_string();
        assert!(e.contains("r.txt:2:") && e.contains(what), "{e}");
    }
    let (_d, a) = actions("0 send 1 0 9007199254740992\n", 0, 2);
    assert!(matches!(a[..], [Ok(Action::Send { bytes: 9_007_199_254_740_992, .. })]), "{a:?}");
}

#[test]
fn gatherv_receive_counts_are_parsed() {
    let (_d, a) = actions("0 gatherv 8 8 x 0\n", 0, 2);
    let e = a[0].as_ref().unwrap_err().to_string();
    assert!(e.contains("`gatherv`: field 3 `x` is not a count"), "{e}");
    let (_d, a) = actions("0 gatherv 8 8 8 0\n", 0, 2);
    assert!(a[0].is_ok(), "{a:?}");
}
