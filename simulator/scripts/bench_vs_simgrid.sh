#!/usr/bin/env bash
# Speed benchmark: replay one >= 1M-line SimGrid TI trace with
# `smpirun -replay` and with ours, same platform XML and options, and
# report lines/s and peak RSS of each, from one run.
#
# usage: simulator/scripts/bench_vs_simgrid.sh [iters=7000] [ranks=16]
#
# The trace is c-tests/jacobi2d (n=256) under `smpirun -trace-ti`, with the
# MPI_PROC_NULL send/recv lines removed (SimGrid 3.32's replay aborts on
# them; see crosscheck_simgrid.sh) so both replay the same lines.
# Both use SimGrid's default collective selector and network model.
# Peak RSS is GNU time's "Maximum resident set size" of the whole command
# (for smpirun: the smpireplaymain process it execs).
set -euo pipefail
ITERS=${1:-7000}; NP=${2:-16}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIM=${SIM:-$ROOT/target/release/simulator}
[ -x "$SIM" ] || (cd "$ROOT" && cargo build --release -p simulator-tools >/dev/null)
command -v smpirun >/dev/null || { echo "skip: smpirun not found (SimGrid)"; exit 0; }
[ -x /usr/bin/time ] || { echo "skip: GNU time (/usr/bin/time) not found"; exit 0; }
W=$(mktemp -d /tmp/bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
smpicc -O2 -I"$ROOT/c-tests" "$ROOT/c-tests/jacobi2d.c" -o "$W/jacobi2d" -lm 2>/dev/null
for i in $(seq 0 $((NP - 1))); do echo "node-$i"; done > "$W/hosts"
cat > "$W/p.xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="world" routing="Full">
  <cluster id="c" prefix="node-" suffix="" radical="0-$((NP - 1))" speed="1Gf" core="1" bw="1.25GBps" lat="2us"/>
</zone></platform>
XML
mkdir -p "$W/ti" "$W/sg"
smpirun -np "$NP" -platform "$W/p.xml" -hostfile "$W/hosts" -trace-ti --cfg=tracing/filename:"$W/ti/trace.txt" \
  --cfg=smpi/host-speed:1Gf "$W/jacobi2d" 256 "$ITERS" >/dev/null 2>&1
while read -r f; do
  grep -vE '^[0-9]+ (i?send|i?recv) -333 ' "$f" > "$W/sg/$(basename "$f")"
  echo "$W/sg/$(basename "$f")"
done < "$W/ti/trace.txt" > "$W/sg/list.txt"
lines=$(cat $(cat "$W/sg/list.txt") | wc -l)
run() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$W/time" "$@" > "$W/out" 2>&1 || { echo "$label failed:"; tail -3 "$W/out"; exit 1; }
  read -r wall user sys rss < "$W/time"
  echo "$label $wall $(python3 -c "print($user + $sys)") $rss"
}
sg=$(run simgrid smpirun -np "$NP" -platform "$W/p.xml" -hostfile "$W/hosts" -replay "$W/sg/list.txt")
sg_ms=$(sed -n 's/.*Simulation time \([0-9.e+-]*\).*/\1/p' "$W/out")
ours=$(run ours "$SIM" replay --platform "$W/p.xml" "$W/sg/list.txt" --json)
ours_ms=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["makespan_s"])' "$W/out")
echo "trace: jacobi2d n=256 iters=$ITERS ranks=$NP, $lines TI lines"
# lines/s over wall time, and over CPU time (user + sys), which is steadier
# on a shared machine.
printf "%-8s %8s %8s %14s %14s %12s %16s\n" tool wall_s cpu_s lines_per_s lines_per_cpu_s peak_rss_MB makespan_s
for r in "$sg $sg_ms" "$ours $ours_ms"; do
  set -- $r
  python3 -c "import sys; l=$lines; a=sys.argv; w=float(a[2]); c=float(a[3]); print(f'{a[1]:<8} {w:>8.2f} {c:>8.2f} {l/max(w,1e-9):>14.0f} {l/max(c,1e-9):>14.0f} {int(a[4])/1024:>12.1f} {a[5]:>16}')" "$1" "$2" "$3" "$4" "$5"
done
