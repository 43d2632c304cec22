#!/usr/bin/env bash
# MPI farm throughput (issue 14): one fixed Newman–Ziff study (site, 4-connected torus) on 1, 2
# and 4 ranks of one thread each, timed end to end (mpirun start, MPI init, every batch's gather,
# the final study file), and a markdown table of samples/s and efficiency = rate_n / (n · rate_1).
# Each run's file is checked equal to the 1-rank file (`percolation report --json`).
#
#   bash benches/mpi_farm.sh                     # builds the release binary with --features mpi
#   SIZE=256 SAMPLES=4000 RANKS="1 2 4 8 16" bash benches/mpi_farm.sh
#   BIN=/path/to/clusterlab bash benches/mpi_farm.sh   # a binary built elsewhere
#
# Ranks beyond the cores are oversubscribed (--oversubscribe): their efficiency is bounded by
# cores / ranks, so on a 2-core machine 4 ranks can reach at most 50 %.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-128}
SAMPLES=${SAMPLES:-2000}
RANKS=${RANKS:-1 2 4}
REPEAT=${REPEAT:-3}
if [ -z "${BIN:-}" ]; then
  source scripts/setup.sh
  source scripts/setup-mpi.sh
  cargo build --release --locked --features mpi --bin clusterlab >&2
  BIN=target/release/clusterlab
fi
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Arithmetic without bc (not everywhere): awk.
calc() { awk "BEGIN { print $1 }"; }

# The best of REPEAT runs (the least disturbed by other work on the machine): "wall cpu", in
# seconds, cpu = user + sys of mpirun and every rank (or of the one process).
time_run() {
  local np=$1 threads=$2 best="" bestcpu="" r u sy cmd
  if [ "$np" = 0 ]; then
    cmd=("$BIN")  # one process, no launcher: the threads baseline
  else
    cmd=(mpirun --oversubscribe --bind-to none -np "$np" "$BIN")
  fi
  for _ in $(seq "$REPEAT"); do
    read -r r u sy < <({ TIMEFORMAT="%R %U %S"; time "${cmd[@]}" percolation run --model site \
      --sizes "$SIZE" --samples "$SAMPLES" --seed 1 -j "$threads" --checkpoint-every 30 \
      --output "$dir/np$np.h5" --force >/dev/null 2>&1; } 2>&1)
    if [ -z "$best" ] || [ "$(calc "$r < $best")" = 1 ]; then
      best=$r
      bestcpu=$(calc "$u + $sy")
    fi
  done
  echo "$best $bestcpu"
}

cores=$(nproc)
echo "MPI farm: Newman–Ziff site 4-conn torus L = $SIZE, $SAMPLES samples, 1 thread per rank," \
  "$cores cores ($(lscpu | sed -n 's/^Model name: *//p' | head -n1)), best of $REPEAT," \
  "load before $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
echo
echo "| ranks | wall (s) | samples/s | speed-up | efficiency | CPU s (all ranks) | one process, -j ranks: samples/s |"
echo "|---|---|---|---|---|---|---|"
rate1=""
first=$(echo "$RANKS" | awk '{print $1}')
for np in $RANKS; do
  read -r t cpu < <(time_run "$np" 1)
  rate=$(calc "$SAMPLES / $t")
  [ -n "$rate1" ] || rate1=$rate
  speedup=$(calc "$rate / $rate1")
  eff=$(calc "100 * $rate / ($np * $rate1)")
  note=""
  [ "$np" -gt "$cores" ] && note=" (oversubscribed: ≤ $((100 * cores / np)) %)"
  # The same cores as threads of one process, for comparison (no MPI).
  read -r tt _ < <(time_run 0 "$np")
  printf '| %d | %.2f | %.1f | %.2f× | %.1f %%%s | %.2f | %.1f |\n' "$np" "$t" "$rate" "$speedup" \
    "$eff" "$note" "$cpu" "$(calc "$SAMPLES / $tt")"
  if [ "$np" != "$first" ]; then
    cmp <("$BIN" percolation report --json "$dir/np$first.h5") \
      <("$BIN" percolation report --json "$dir/np$np.h5") >/dev/null ||
      { echo "error: the $np-rank study differs from the $first-rank one" >&2; exit 1; }
  fi
done
cmp <("$BIN" percolation report --json "$dir/np$first.h5") \
  <("$BIN" percolation report --json "$dir/np0.h5") >/dev/null ||
  { echo "error: the farm's study differs from the one-process study" >&2; exit 1; }
echo
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
