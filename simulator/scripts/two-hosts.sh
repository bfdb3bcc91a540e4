#!/usr/bin/env bash
# Two hosts on one machine: two network namespaces joined by a veth pair
# whose rate is limited by tc (tbf; this kernel has no netem), Open MPI
# launched across them over TCP only, `calibrate network` across the link
# (the inter-node model), then `simulator validate` of ring and jacobi2d with
# their ranks on both hosts, with the sensitivity sweep re-measured at half
# and twice the tc rate.
#
# usage (as root, from anywhere; binaries from `cargo build --release` and
# `make -C c-tests`):
#   simulator/scripts/two-hosts.sh [--rate MBIT] [--reps R] [--out DIR] [--quick]
#     --rate   tc rate of the link, Mbit/s (default 400)
#     --reps   plain runs per case and rate (default 5)
#     --out    outputs (default target/two-hosts)
#     --quick  small calibration and cases (a smoke run, ~1 min)
#
# Each namespace is a "host": `ip netns exec` plus `unshare --uts` gives each
# its own host name (<prefix>a, <prefix>b), so Open MPI sees two nodes and the
# interposer records which rank ran where. mpirun runs in the first namespace;
# its plm_rsh_agent is a small script that starts the daemons with
# `ip netns exec`. Only the namespaces this run created (prefix mpvh<pid>) are
# ever touched, and they are removed on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

RATE=400 REPS=5 OUT=target/two-hosts QUICK=0
while [ $# -gt 0 ]; do
  case $1 in
    --rate) RATE=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "two-hosts.sh: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ $RATE =~ ^[0-9]+$ && $RATE -gt 0 ]] || { echo "two-hosts.sh: --rate $RATE: want a whole number of Mbit/s" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "two-hosts.sh: needs root (ip netns, tc)" >&2; exit 2; }
for t in ip tc unshare mpirun cc python3; do
  command -v $t >/dev/null || { echo "two-hosts.sh: $t not found" >&2; exit 2; }
done
BIN=$ROOT/target/release
for f in $BIN/simulator $BIN/calibrate $BIN/libinterposer.so c-tests/build/ring c-tests/build/jacobi2d; do
  [ -e "$f" ] || { echo "two-hosts.sh: $f missing (cargo build --release; make -C c-tests)" >&2; exit 2; }
done

P=mpvh$$                     # our prefix: namespaces ${P}a ${P}b, veths ${P}a0 ${P}b0
NET=10.231.7                 # private to the two namespaces (they have no other link)
A=${P}a B=${P}b
CREATED=()
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/two-hosts.XXXXXX)

cleanup() {
  local ns
  [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null
  for ns in "${CREATED[@]}"; do
    case $ns in "$P"?) ip netns del "$ns" 2>/dev/null || echo "two-hosts.sh: could not remove namespace $ns" >&2 ;; esac
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in $A $B; do
  if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
    echo "two-hosts.sh: namespace $ns exists and is not ours; refusing to touch it" >&2
    exit 2
  fi
done
ip netns add $A && CREATED+=($A)
ip netns add $B && CREATED+=($B)
ip link add ${P}a0 netns $A type veth peer name ${P}b0 netns $B
ip -n $A addr add $NET.1/24 dev ${P}a0
ip -n $B addr add $NET.2/24 dev ${P}b0
for ns in $A $B; do
  ip -n $ns link set lo up
  ip -n $ns link set ${P}${ns: -1}0 up
done

# tbf on each direction. burst: one GSO super-packet (tbf segments larger
# ones); limit: enough queue that TCP never sees a drop.
set_rate() { # <Mbit/s>
  local ns
  for ns in $A $B; do
    ip netns exec $ns tc qdisc replace dev ${P}${ns: -1}0 root tbf rate "${1}mbit" burst 64kb limit 16mb
  done
}
set_rate "$RATE"
cat >"$WORK/set-rate" <<EOF
#!/bin/sh
# sweep hook: set-rate <factor of $RATE Mbit/s>
r=\$(awk -v f="\$1" 'BEGIN { printf "%d", $RATE * f }')
for ns in $A $B; do
  ip netns exec \$ns tc qdisc replace dev \${ns}0 root tbf rate "\${r}mbit" burst 64kb limit 16mb || exit 1
done
EOF
chmod +x "$WORK/set-rate"

# Open MPI's launch agent, called as `agent <host> <command…>`.
cat >"$WORK/agent" <<EOF
#!/bin/sh
host=\$1; shift
case \$host in
  $A|$B) ;;
  *) echo "two-hosts agent: unknown host \$host (only $A, $B)" >&2; exit 1 ;;
esac
exec ip netns exec "\$host" unshare --uts sh -c "hostname \$host && \$*"
EOF
chmod +x "$WORK/agent"
printf '%s slots=2\n%s slots=2\n' $A $B >"$WORK/hosts"
export OMPI_MCA_plm_rsh_agent=$WORK/agent
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=$NET.0/24 OMPI_MCA_oob_tcp_if_include=$NET.0/24
# Each daemon sees a whole 2-core node and would bind its rank to core 0:
# both "hosts" would then share one core.
export OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_orte_tmpdir_base=$WORK
inA() { ip netns exec $A "$@"; }

echo "== two hosts $A ($NET.1) and $B ($NET.2), tbf ${RATE} Mbit/s each way; outputs in $OUT" >&2
inA mpirun -np 2 --hostfile "$WORK/hosts" --map-by node hostname >"$WORK/hostnames"
sort -u "$WORK/hostnames" | tr '\n' ' ' >&2; echo >&2
[ "$(sort -u "$WORK/hostnames" | wc -l)" = 2 ] || { echo "two-hosts.sh: Open MPI did not place the ranks on two hosts" >&2; exit 1; }

echo "== plain TCP ping-pong over the veth (1 byte, C, TCP_NODELAY, busy-polling)" >&2
cc -O2 -o "$WORK/tcp-pingpong" simulator/scripts/tcp-pingpong.c
ip netns exec $B "$WORK/tcp-pingpong" server 7777 &
SERVER=$!
inA "$WORK/tcp-pingpong" client $NET.2 7777 20000 1 >"$OUT/tcp-pingpong.txt"
wait $SERVER
SERVER=
cat "$OUT/tcp-pingpong.txt" >&2

# The same over loopback inside one namespace, and MPI (8-byte ring of two
# ranks: a ping-pong) over TCP on loopback and across the link: MPI's TCP
# transport software is MPI_lo - TCP_lo, the link's own latency is
# MPI_link - MPI_lo by MPI and TCP_link - TCP_lo by plain TCP.
echo "== TCP and MPI-over-TCP latency on loopback (namespace $A) and across the link" >&2
inA "$WORK/tcp-pingpong" server 7778 &
SERVER=$!
sleep 0.2
inA "$WORK/tcp-pingpong" client 127.0.0.1 7778 20000 1 >"$OUT/tcp-pingpong-lo.txt"
wait $SERVER
SERVER=
hop() { awk -F= -v n="$1" '/^wall_s=/ { printf "half_rtt_s=%.9e\n", $2 / (2 * n) }'; }
inA mpirun -np 2 --mca btl tcp,self --mca btl_tcp_if_include 127.0.0.1/8 "$ROOT/c-tests/build/ring" 20000 8 | hop 20000 >"$OUT/mpi-lo.txt"
inA mpirun -np 2 --hostfile "$WORK/hosts" --map-by node "$ROOT/c-tests/build/ring" 20000 8 | hop 20000 >"$OUT/mpi-link.txt"

if [ $QUICK = 1 ]; then
  CAL=(--reps 5 --sizes 24 --max-bytes 1048576 --refine-rounds 1 --loggp-n 0)
  RING_ARGS=(2000 8) RINGBIG_ARGS=(20 262144) JACOBI_ARGS=(512 50)
  QUIET=(--quiet-wait-s 2 --retries 1)   # a smoke run: do not wait long for a busy machine
else
  QUIET=()
  CAL=(--reps 10 --sizes 40 --max-bytes 2097152)
  RING_ARGS=(20000 8) RINGBIG_ARGS=(100 262144) JACOBI_ARGS=(2048 100)
fi
echo "== calibrate network across the two hosts (--hostfile)" >&2
inA $BIN/calibrate network --hostfile "$WORK/hosts" "${CAL[@]}" --out "$OUT/platform.toml" \
  --csv "$OUT/network-samples.csv" --plot "$OUT/network-plots" >"$OUT/calibrate.txt"
cat "$OUT/calibrate.txt" >&2

q() { printf '"%s"' "$1"; }
cat >"$WORK/suite.toml" <<EOF
[[case]]
program = $(q "$ROOT/c-tests/build/ring")
args = ["${RING_ARGS[0]}", "${RING_ARGS[1]}"]
ranks = 2
[[case]]
name = "ring-256k"
program = $(q "$ROOT/c-tests/build/ring")
args = ["${RINGBIG_ARGS[0]}", "${RINGBIG_ARGS[1]}"]
ranks = 2
[[case]]
program = $(q "$ROOT/c-tests/build/jacobi2d")
args = ["${JACOBI_ARGS[0]}", "${JACOBI_ARGS[1]}"]
ranks = 2
EOF
cp "$WORK/suite.toml" "$OUT/suite.toml"
echo "== simulator validate across the two hosts, sweep re-measured at ${RATE}/2 and ${RATE}x2 Mbit/s" >&2
inA $BIN/simulator validate --suite "$WORK/suite.toml" --platform "$OUT/platform.toml" --hostfile "$WORK/hosts" \
  --mpirun-arg=--map-by --mpirun-arg=node -r "$REPS" --out "$OUT/validate" --sweep --sweep-hook "$WORK/set-rate" "${QUIET[@]}" \
  | tee "$OUT/validate.txt"

# The acceptance figures: the inter-node model against the tc rate and the
# plain TCP latency.
python3 - "$OUT/platform.toml" "$OUT/tcp-pingpong.txt" "$RATE" "$OUT/calibrate.txt" "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import re, sys, tomllib
platform, tcp, rate, cal, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
inter = tomllib.load(open(platform, "rb"))["network"]["inter"]
segs = inter["transfer"]
bw = segs[-1]["bandwidth_bytes_per_s"]
tc = rate * 1e6 / 8
good = tc * 1448 / 1514   # TCP payload per Ethernet frame (MSS 1448 with timestamps)
lat = segs[0]["intercept_s"] + 1 / segs[0]["bandwidth_bytes_per_s"]
half = float(dict(l.split("=") for l in open(tcp).read().split())["half_rtt_s"])
print(f"inter-node bandwidth (largest sizes): {bw/1e6:.2f} MB/s; tc rate {tc/1e6:.2f} MB/s: {100*(bw/tc-1):+.1f} %"
      f" (TCP goodput at that rate {good/1e6:.2f} MB/s: {100*(bw/good-1):+.1f} %)")
print(f"inter-node latency (transfer of 1 B): {lat*1e6:.2f} us; plain TCP ping-pong half round trip {half*1e6:.2f} us"
      f" (MPI adds {(lat-half)*1e6:+.2f} us)")
rd = lambda f: float(dict(l.split("=") for l in open(f"{out}/{f}").read().split())["half_rtt_s"])
tcp_lo, mpi_lo, mpi_link = rd("tcp-pingpong-lo.txt"), rd("mpi-lo.txt"), rd("mpi-link.txt")
sw = mpi_lo - tcp_lo
print(f"half round trips, loopback / link: TCP {tcp_lo*1e6:.2f} / {half*1e6:.2f} us, MPI over TCP {mpi_lo*1e6:.2f} / {mpi_link*1e6:.2f} us;"
      f" MPI's TCP transport software {sw*1e6:.2f} us; the link's own latency {(half-tcp_lo)*1e6:.2f} us by TCP, {(mpi_link-mpi_lo)*1e6:.2f} us by MPI")
print(f"calibrated latency without MPI's TCP software: {(lat-sw)*1e6:.2f} us against the plain TCP ping-pong's {half*1e6:.2f} us: {100*((lat-sw)/half-1):+.1f} %")
# LogGP's G of the two-node run (the last LogGP line of calibrate's report).
g = re.findall(r"G = ([0-9.e+-]+) s/B", open(cal).read())
if g:
    gbw = 1 / float(g[-1])
    print(f"inter-node LogGP G: {gbw/1e6:.2f} MB/s; tc rate: {100*(gbw/tc-1):+.1f} %; TCP goodput: {100*(gbw/good-1):+.1f} %")
print(f"eager threshold between the hosts: {inter['eager_threshold_bytes']} B")
EOF
echo "outputs in $OUT (platform.toml, calibrate.txt, network-plots/, validate/, summary.txt)" >&2
