//! The [`Target`]s: each reader with its seeds and tokens.

use std::cell::RefCell;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

use super::Target;
use simulator::action::Action;
use simulator::trace::chunk::{self, ChunkKind, CHUNK_HEADER_BYTES};
use simulator::trace::codec::{Decoder, Version};
use simulator::trace::record::ANY_SOURCE;
use simulator::trace::{fields, CallRecord, Module, Op, Params, RankHeader, RankWriter, TimingSource};

/// Tokens of the text formats: values at the edges of their ranges, and
/// separators.
const TEXT_TOKENS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1e308",
    b"-1e308",
    b"1e-320",
    b"nan",
    b"inf",
    b"-inf",
    b"18446744073709551615",
    b"18446744073709551616",
    b"9007199254740993",
    b"4294967296",
    b"2147483648",
    b"-2147483649",
    b"65536",
    b"0x10",
    b"1.5",
    b" ",
    b"\n",
    b"\r\n",
    b"\t",
    b",",
    b"\"",
    b"=",
    b"#",
    b"\xff\xfe",
];

/// Tokens of the platform formats.
const PLATFORM_TOKENS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1e308",
    b"1e-308",
    b"1e-320",
    b"nan",
    b"inf",
    b"18446744073709551615",
    b"4294967296",
    b"9007199254740993",
    b"0-99",
    b"0-99999999999",
    b"0-4095",
    b"[[hosts]]\nname = \"x\"\ncores = 1\n",
    b"<zone id=\"z\" routing=\"Full\">",
    b"</zone>",
    b"<cluster",
    b"/>",
    b"\"",
    b"=",
    b"\n",
    b"Gf",
    b"GBps",
    b"us",
    b"f",
    b"FAT_TREE",
    b"TORUS",
    b"2;2,2;1,2;1,1",
    b"4,4",
    b"<prop id=\"pstate\" value=\"9\"/>",
    b"<!--",
    b"-->",
    b"&amp;",
    b"&#0;",
];

/// Tokens of the binary trace: varints at the edges of their ranges.
const BINARY_TOKENS: &[&[u8]] = &[
    b"\x00",
    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02",
    b"\xff\xff\xff\xff\x0f",
    b"\x7f",
    b"\x80\x01",
    b"CHNK\x02\x00\x00\x00",
    b"CHNK\x01\x00\x00\x00",
    b"CHNK\x04\x00\x00\x00",
    b"\xfe",
    b"\x81\x80\x80\x80\x10",
];

/// Every reader under test, with its seeds.
pub fn targets() -> Vec<Target> {
    vec![
        Target { name: "trace-decoder", seeds: vec![record_payload()], tokens: BINARY_TOKENS, run: run_decoder },
        Target { name: "trace-file", seeds: vec![rank_file()], tokens: BINARY_TOKENS, run: run_trace_file },
        Target { name: "ti", seeds: ti_seeds(), tokens: TEXT_TOKENS, run: run_ti },
        Target { name: "platform-toml", seeds: toml_seeds(), tokens: PLATFORM_TOKENS, run: run_toml },
        Target { name: "simgrid-xml", seeds: xml_seeds(), tokens: PLATFORM_TOKENS, run: run_xml },
        Target { name: "jitter-trace", seeds: vec![JITTER.as_bytes().to_vec()], tokens: TEXT_TOKENS, run: run_jitter },
        Target { name: "speed-csv", seeds: vec![SPEED_CSV.as_bytes().to_vec()], tokens: TEXT_TOKENS, run: run_speed_csv },
        Target {
            name: "csv-text",
            seeds: vec![SPEED_CSV.as_bytes().to_vec(), b"a,\"b\"\"c\",d\n1,2\n".to_vec()],
            tokens: TEXT_TOKENS,
            run: run_csv,
        },
    ]
}

/// Most records one input may yield (repeat markers can ask for 2^64).
const MAX_RECORDS: usize = 1 << 16;

/// A `Write` whose bytes stay readable after the writer that owns it.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn records() -> Vec<CallRecord> {
    let rec = |i: u64, op: Op, params: Params| CallRecord {
        op,
        failed: i % 5 == 4,
        caller: 0x4000 + (i % 3) * 16,
        compute_cpu_ns: 900 + i,
        compute_wall_ns: 1000 + i,
        counters: None,
        t_start_ns: 5000 * i,
        t_end_ns: 5000 * i + 70,
        params,
    };
    let p2p = |peer: i32, request: u64| Params::P2p { peer, tag: 3, bytes: 4096, comm: 0, request };
    vec![
        rec(0, Op::Init, Params::None),
        rec(1, Op::Send, p2p(1, 0)),
        rec(2, Op::Irecv, p2p(ANY_SOURCE, 0x77)),
        rec(3, Op::Wait, Params::Wait { request: 0x77, source: 1 }),
        rec(4, Op::Waitall, Params::Waitall { requests: vec![1, 2, 0x77] }),
        rec(5, Op::Allreduce, Params::Coll { root: -1, bytes: 8, comm: 0 }),
        rec(6, Op::CommSplit, Params::CommCreate { parent: 0, comm: 3, members: vec![0, 2] }),
        rec(7, Op::Gatherv, Params::Vcoll { root: 0, comm: 3, request: 0, send: vec![8], recv: vec![8, 16] }),
        rec(8, Op::FileRead, Params::Io { file: 1, offset: 4096, bytes: 512, comm: 0, request: 0 }),
        rec(9, Op::Finalize, Params::None),
    ]
}

/// A whole format-4 rank file: magic, header chunk, record chunks (one
/// with a repeat marker), end chunk.
fn rank_file() -> Vec<u8> {
    let out = Shared::default();
    let header = RankHeader {
        rank: 0,
        ranks: 2,
        host: "node0".into(),
        pid: 7,
        timing_source: TimingSource::ClockGettime,
        tsc_hz: None,
        epoch_unix_s: 1.5,
    };
    let mut w = RankWriter::create(out.clone(), &header).expect("writes to memory");
    let recs = records();
    for r in &recs[..5] {
        w.push(r).expect("writes to memory");
    }
    w.push_repeated(&recs[5..7], 3).expect("writes to memory");
    for r in &recs[7..] {
        w.push(r).expect("writes to memory");
    }
    w.finish(&[Module { path: "/bin/app".into(), start: 0x1000, end: 0x9000, file_offset: 0 }]).expect("writes to memory");
    let bytes = out.0.borrow().clone();
    bytes
}

/// The payload of the first record chunk of [`rank_file`].
fn record_payload() -> Vec<u8> {
    let file = rank_file();
    let mut at = chunk::MAGIC.len();
    while at + CHUNK_HEADER_BYTES <= file.len() {
        let h = chunk::parse_chunk_header(file[at..at + CHUNK_HEADER_BYTES].try_into().expect("16 bytes")).expect("a valid chunk");
        let start = at + CHUNK_HEADER_BYTES;
        if h.kind == ChunkKind::Records {
            return file[start..start + h.len].to_vec();
        }
        at = start + h.len;
    }
    Vec::new()
}

/// Decodes every item of `buf` (and the copies of repeats), at most
/// [`MAX_RECORDS`]; `true` when all decode.
fn decode_all(version: Version, buf: &[u8]) -> bool {
    let mut d = Decoder::new(version);
    let (mut pos, mut n) = (0, 0);
    while n < MAX_RECORDS {
        if d.next_copy().is_some() {
            n += 1;
            continue;
        }
        if pos >= buf.len() {
            return true;
        }
        match d.decode_item(&buf[pos..]) {
            Ok((_, len)) => {
                pos += len;
                n += 1;
            }
            Err(_) => return false,
        }
    }
    true
}

fn run_decoder(data: &[u8]) -> bool {
    let v4 = decode_all(Version::V4, data);
    let v3 = decode_all(Version::V3, data);
    let v2 = decode_all(Version::V2, data);
    v4 || v3 || v2
}

/// The chunk walk of a rank file in memory, checksums not checked (so
/// that the parsers behind them see the mutations): the magic, every
/// chunk header, the header and end payloads, and the records.
fn run_trace_file(data: &[u8]) -> bool {
    let Some(version) = data.get(..8).and_then(|m| chunk::version_of(m.try_into().ok()?)) else { return false };
    let mut at = 8;
    let mut ok = true;
    while at < data.len() {
        let Some(h) = data.get(at..at + CHUNK_HEADER_BYTES).and_then(|h| chunk::parse_chunk_header(h.try_into().ok()?).ok()) else {
            return false;
        };
        let start = at + CHUNK_HEADER_BYTES;
        let Some(payload) = data.get(start..start.saturating_add(h.len)) else { return false };
        ok &= match (h.kind, version) {
            (ChunkKind::Header, Version::V4) => fields::parse_header(payload).is_ok(),
            (ChunkKind::End, Version::V4) => fields::parse_end(payload).is_ok(),
            (ChunkKind::Header, _) => serde_json::from_slice::<RankHeader>(payload).is_ok(),
            (ChunkKind::Records, v) => decode_all(v, payload),
            _ => true,
        };
        at = start + h.len;
    }
    ok
}

const TI: &str = "0 init
0 compute 3.5e6
0 send 1 8 3 0
0 isend 1 99 1 1
0 wait 0 1 99
0 sendRecv 2 1 2 1 1 1
0 bcast 4 1 1
0 reduce 4 0 1 0
0 allreduce 5 7 1
0 alltoall 2 2 1 1
0 gatherv 1 1 2 0 1 1
0 allgatherv 1 1 2 1 1
0 scatterv 1 2 1 0 1 1
0 alltoallv 2 1 1 2 1 1 1 1
0 reducescatter 1 1 0 1
0 irecv 1 4 2
0 waitall
0 sleep 0.25
0 finalize
";

fn ti_seeds() -> Vec<Vec<u8>> {
    vec![TI.as_bytes().to_vec(), b"0 init 1\n0 recv -333 3 128 0\n0 barrier\n0 scan 2 0 1\n".to_vec()]
}

fn run_ti(data: &[u8]) -> bool {
    let mut p = simulator::ti::RankParser::new(0, 2, false);
    let mut out: Vec<Action> = Vec::new();
    let mut ok = true;
    for line in data.split(|&b| b == b'\n') {
        ok &= p.line(line, &mut out).is_ok();
        out.clear();
    }
    ok
}

const TOML: &str = r#"name = "fuzz"
mapping = { kind = "round-robin" }
[[hosts]]
name = "n0"
cores = 4
speed_flops = 1e9
[[hosts]]
name = "n1"
cores = 4
speed_ratio = 0.5
[network.intra]
eager_threshold_bytes = 65536
transfer = [ { max_bytes = 1024, intercept_s = 1e-6, bandwidth_bytes_per_s = 5e9 }, { intercept_s = 2e-6, bandwidth_bytes_per_s = 1e10 } ]
send_overhead = [ { intercept_s = 1e-7, bandwidth_bytes_per_s = inf } ]
[network.inter.loggp]
L = 2e-6
o_s = 5e-7
o_r = 6e-7
g = 1e-7
G = 1e-10
S = 65536
[links]
bw_bytes_per_s = 1.25e9
crosstraffic = 0.05
"#;

fn toml_seeds() -> Vec<Vec<u8>> {
    let pstates = "[[hosts]]\nname = \"a\"\ncores = 2\npstate = 1\npstates = [ { speed_flops = 2e9, watts = \"90:100:150\" }, { speed_flops = 1e9 } ]\n\
                   [network.intra]\neager_threshold_bytes = 0\ntransfer = [ { intercept_s = 0, bandwidth_bytes_per_s = 1e9 } ]\n";
    vec![TOML.as_bytes().to_vec(), pstates.as_bytes().to_vec()]
}

fn run_toml(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    match toml::from_str::<simulator::platform::Platform>(&text) {
        Ok(p) => p.validate().is_ok() && p.hosts.len() <= 4096 && p.used_by(3).is_none_or(|q| q.validate().is_ok()),
        Err(_) => false,
    }
}

fn xml_seeds() -> Vec<Vec<u8>> {
    let doc = |cluster: &str, config: &str| {
        format!(
            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n\
             {config}<zone id=\"w\" routing=\"Full\">\n{cluster}\n</zone>\n</platform>\n"
        )
        .into_bytes()
    };
    vec![
        doc(
            r#"<cluster id="c" prefix="n" radical="0-7" speed="1Gf,500Mf" core="4" bw="10GBps" lat="1us"><prop id="wattage_per_state" value="90:100:150,80:90:120"/><prop id="pstate" value="1"/></cluster>"#,
            "",
        ),
        doc(
            r#"<cluster id="c" prefix="n" suffix=".x" radical="0-15" speed="2Gf" bw="125MBps" lat="50us" topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2"/>"#,
            "",
        ),
        doc(
            r#"<cluster id="c" prefix="n" radical="0-3,8" speed="1Gf" bw="1GBps" lat="2us" bb_bw="10GBps" bb_lat="1us"/>"#,
            "<config><prop id=\"smpi/os\" value=\"0:1e-6:1e-10;1024:2e-6:1e-10\"/><prop id=\"network/model\" value=\"SMPI\"/></config>\n",
        ),
    ]
}

fn run_xml(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    simulator::platform::simgrid::parse_limited(&text, Path::new("fuzz.xml"), &[], 4096).is_ok()
}

const JITTER: &str = "jitter-trace 1
host node0
cpu 3
tsc_hz 2000000000
t_min_cycles 20
threshold_cycles 180
timer_read rdtsc
start_unix_ns 1700000000000000000
requested_duration_s 0.5
kernel 6.1
cosched_window_cycles 100000
cosched_origin_cycles 10
records
2000\t98000
50000\t50000
2000\t98000
end events=3 lead_cycles=1000 duration_cycles=301000 dropped_events=0
";

fn run_jitter(data: &[u8]) -> bool {
    match simulator::jitter_trace::JitterTrace::from_reader(Path::new("fuzz.jitter"), data) {
        Ok(t) => simulator::jitter::Track::new("fuzz", &t, t.header.tsc_hz, None).is_ok(),
        Err(_) => false,
    }
}

const SPEED_CSV: &str = "start-stop,ratio\n\"app+0x10-app+0x20\",0.5\n\"a,b-c\",2\nlibm.so+0xff-app+0x1,1e-3\n";

fn run_speed_csv(data: &[u8]) -> bool {
    simulator::speed::SpeedRatios::parse(&String::from_utf8_lossy(data), Path::new("fuzz.csv")).is_ok()
}

fn run_csv(data: &[u8]) -> bool {
    simulator::csv_text::records(&String::from_utf8_lossy(data)).all(|r| r.is_ok())
}
