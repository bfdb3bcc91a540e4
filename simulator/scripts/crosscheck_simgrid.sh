#!/usr/bin/env bash
# Peer cross-check: replay SimGrid TI traces of c-tests/jacobi2d
# and c-tests/allreduce_loop in SimGrid (`smpirun -replay`) and in ours, on
# the same cluster XML, and compare makespans (target: within 2 %).
#
# usage: simulator/scripts/crosscheck_simgrid.sh [n=512] [iters=50] [ranks="4 16"] [ar_iters=200] [ar_count=1024]
#
# Matched options:
# - Both sides read the same platform XML (one FLAT <cluster>, one rank per
#   host) with SMPI's default network model and factors.
# - Collectives, four configurations, the same --cfg given to both tools
#   unless said otherwise:
#   default  SMPI's default selector (linear barrier; all-reduce = linear
#            reduce + binomial bcast).
#   rdb      --cfg=smpi/allreduce:rdb --cfg=smpi/barrier:ompi_bruck
#            (recursive doubling; dissemination).
#   sg-ompi  --cfg=smpi/coll-selector:ompi: ours reads it as SimGrid
#            defines it (its port of OpenMPI 4.1's decision tables, with
#            SimGrid's algorithms: `--coll-selector simgrid-ompi`).
#   ompi     SimGrid with --cfg=smpi/coll-selector:ompi; ours with
#            --coll-selector ompi (OpenMPI 4.1's own algorithms).
#   For jacobi2d (8-byte all-reduce), OpenMPI 4.1's table picks the ring
#   (4 ranks) or segmented ring (16), which OpenMPI runs as recursive
#   doubling for count < ranks; SimGrid 3.32 runs its `lr`, whose fallback
#   (its default all-reduce) aborts in replay ("free(): invalid pointer").
#   So the sg-ompi and ompi rows of jacobi2d add --cfg=smpi/allreduce:rdb
#   to SimGrid, which is what OpenMPI itself does there; ours gets it too
#   in sg-ompi and nothing in ompi (its selector picks that by itself).
#   (--cfg=smpi/coll-selector:mpich segfaults in SimGrid 3.32's replay.)
# - SimGrid 3.32's replay aborts on MPI_PROC_NULL peers ("Actor pid=-1 is
#   gone"), which jacobi2d uses at the domain border: for SimGrid only, the
#   send/recv lines with peer -333 are dropped (they are no-ops; waitall
#   waits for every pending request anyway). Ours replays the raw trace.
# - Traces are taken with --cfg=smpi/host-speed:1Gf and replayed on 1 Gf
#   hosts, so compute blocks keep their measured durations.
# Prints one line per configuration and exits 1 if any differs by > 2 %.
set -euo pipefail
N=${1:-512}; ITERS=${2:-50}; RANKS=${3:-"4 16"}; AR_ITERS=${4:-200}; AR_COUNT=${5:-1024}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIM=${SIM:-$ROOT/target/release/simulator}
[ -x "$SIM" ] || (cd "$ROOT" && cargo build --release -p simulator-tools >/dev/null)
command -v smpirun >/dev/null || { echo "skip: smpirun not found (SimGrid)"; exit 0; }
W=$(mktemp -d /tmp/crosscheck.XXXXXX)
trap 'rm -rf "$W"' EXIT
for prog in jacobi2d allreduce_loop; do
  smpicc -O2 -I"$ROOT/c-tests" "$ROOT/c-tests/$prog.c" -o "$W/$prog" -lm 2>/dev/null
done
for i in $(seq 0 15); do echo "node-$i"; done > "$W/hosts"
platform() { # name bw lat
  cat > "$W/$1.xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="$1" prefix="node-" suffix="" radical="0-15" speed="1Gf" core="1" bw="$2" lat="$3"/>
  </zone>
</platform>
XML
}
platform fast 1.25GBps 2us
platform slow 12.5MBps 50us
fail=0
printf "%-14s %-6s %-8s %6s %16s %16s %9s\n" trace platform colls ranks simgrid_s ours_s diff_pct
for prog in jacobi2d allreduce_loop; do
  if [ "$prog" = jacobi2d ]; then args=("$N" "$ITERS"); else args=("$AR_ITERS" "$AR_COUNT"); fi
  for np in $RANKS; do
    t="$W/$prog$np"; mkdir -p "$t" "$t/sg"
    smpirun -np "$np" -platform "$W/fast.xml" -hostfile "$W/hosts" -trace-ti \
      --cfg=tracing/filename:"$t/trace.txt" --cfg=smpi/host-speed:1Gf "$W/$prog" "${args[@]}" >/dev/null 2>&1
    while read -r f; do
      grep -vE '^[0-9]+ (i?send|i?recv) -333 ' "$f" > "$t/sg/$(basename "$f")"
      echo "$t/sg/$(basename "$f")"
    done < "$t/trace.txt" > "$t/sg/list.txt"
    for p in fast slow; do
      for colls in default rdb sg-ompi ompi; do
        sg_opts=(); ours=()
        case $colls in
          rdb) sg_opts=(--cfg=smpi/allreduce:rdb --cfg=smpi/barrier:ompi_bruck) ;;
          sg-ompi | ompi) sg_opts=(--cfg=smpi/coll-selector:ompi)
            [ "$prog" = jacobi2d ] && sg_opts+=(--cfg=smpi/allreduce:rdb) ;;
        esac
        case $colls in
          ompi) ours=(--coll-selector ompi) ;;
          *) for o in "${sg_opts[@]}"; do ours+=(--cfg "${o#--cfg=}"); done ;;
        esac
        sg=$(smpirun -np "$np" -platform "$W/$p.xml" -hostfile "$W/hosts" -replay "$t/sg/list.txt" "${sg_opts[@]}" 2>&1 \
          | sed -n 's/.*Simulation time \([0-9.e+-]*\).*/\1/p')
        [ -n "$sg" ] || { echo "smpirun -replay failed: $prog $p $colls $np" >&2; fail=1; continue; }
        ours_s=$("$SIM" replay --platform "$W/$p.xml" "$t/trace.txt" --json "${ours[@]}" \
          | python3 -c 'import json,sys;print(json.load(sys.stdin)["makespan_s"])')
        d=$(python3 -c "print(f'{100*($ours_s-$sg)/$sg:+.3f}')")
        printf "%-14s %-6s %-8s %6s %16s %16.6f %9s\n" "$prog" "$p" "$colls" "$np" "$sg" "$ours_s" "$d"
        python3 -c "import sys; sys.exit(0 if abs($ours_s-$sg) <= 0.02*$sg else 1)" || fail=1
      done
    done
  done
done
exit $fail
