#!/usr/bin/env bash
# Where the time goes when vmcuda moves a 1 GiB copy over loopback TCP, next to the host's own TCP
# ceiling, on the lent GPU machine (issue 5: "TCP >= 90 % of the loopback ceiling; if missed, profile
# it"). Builds nothing; uses .carry/ from `tests/gpu/prepare-carry.sh --with-perf` (perf.tar.gz is
# the build machine's perf with its libraries: the GPU machine has none and no network).
#
#   bash tests/gpu/profile-tcp.sh            -> $OUT/profile.txt (also on stdout)
#
# Measured, each while `perf record -a -e cpu-clock` samples every CPU (flat profile, no call graphs):
#   1. tcp_ceiling --shapes: the hot 4 MiB stream and the two shapes of a real 1 GiB copy
#   2. block_stream loopback: vmcuda's framing and blocking without a GPU, 4 MiB blocks, 1 GiB
#   3. vmcuda over TCP, one connection (VMCUDA_TCP_STREAMS=1): bench_transfer --dir h2d 1G, then
#      --dir d2h 1G (5 copies each, best reported); then H2D striped over 4 connections
# then, without perf, twice in turn for K = 1, 2, 4: tcp_ceiling --streams K --shapes and vmcuda over
# TCP with VMCUDA_TCP_STREAMS=K (bench_transfer 1G both ways);
# native bench_transfer 1G; tcp_ceiling twice each with 8 MiB (vmcuda's),
# autotuned and 32 MiB socket buffers (run-to-run spread).
# and last conn_mux loopback (one connection per thread vs one multiplexed connection).
# Per profile: CPU-seconds per thread (samples / frequency; "swapper" = idle) and the top symbols.
set -uo pipefail
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-out}"
WORK=/tmp/vmcuda-profile
PORT=17470 ADMIN=17471
FREQ=499
mkdir -p "$OUT" && rm -rf "$WORK" && mkdir -p "$WORK"
REPORT="$OUT/profile.txt"
: >"$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }

say "== vmcuda TCP profile $(date -u +%Y-%m-%dT%H:%M:%SZ): $(nproc) cores, kernel $(uname -r)"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
tar -xzf "$CARRY/vmcuda-bundle.tar.gz" -C "$WORK" && ROOT="$(ls -d "$WORK"/vmcuda-*/ | head -1)" && ROOT="${ROOT%/}"
[ -n "${ROOT:-}" ] || { say "FAIL: no bundle in $CARRY"; exit 1; }
BENCH="$CARRY/bench"

source "$REPO/tests/gpu/perf-profile.sh"
start_daemon

# Commands, not functions: perf executes them.
native=(env LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 120)
vmcuda_tcp=(env VMCUDA_TRANSPORT=tcp LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 120 "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" --)

profile ceiling "$BENCH/tcp_ceiling" --shapes
profile stream_only "$BENCH/block_stream" loopback --blocks 4M --sizes 1G --reps 3
profile vmcuda_h2d env VMCUDA_TCP_STREAMS=1 "${vmcuda_tcp[@]}" "$BENCH/bench_transfer" --reps 5 --dir h2d 1G
profile vmcuda_d2h env VMCUDA_TCP_STREAMS=1 "${vmcuda_tcp[@]}" "$BENCH/bench_transfer" --reps 5 --dir d2h 1G
profile vmcuda_h2d_4_streams env VMCUDA_TCP_STREAMS=4 "${vmcuda_tcp[@]}" "$BENCH/bench_transfer" --reps 5 --dir h2d 1G
say ""
say "== native bench_transfer --reps 5 1G"
"${native[@]}" "$BENCH/bench_transfer" --reps 5 1G | tee -a "$REPORT"
say ""
say "== striping: vmcuda over TCP with VMCUDA_TCP_STREAMS=K next to the K-connection ceiling (tcp_ceiling --streams K)"
for round in 1 2; do
    for k in 1 2 4; do
        say "-- K=$k (round $round)"
        timeout 60 "$BENCH/tcp_ceiling" --streams $k --shapes | grep -v round_trip | tee -a "$REPORT"
        env VMCUDA_TCP_STREAMS=$k "${vmcuda_tcp[@]}" "$BENCH/bench_transfer" --reps 5 1G | tee -a "$REPORT"
    done
done
say ""
say "== socket buffer sizes (tcp_ceiling --shapes; vmcuda sets 8 MiB)"
for b in 8388608 auto 33554432; do
    for rep in 1 2; do
        say "-- --sockbuf $b (#$rep)"
        timeout 60 "$BENCH/tcp_ceiling" --sockbuf "$b" --shapes | grep -v round_trip | tee -a "$REPORT"
    done
done
say ""
say "== one connection per thread or one multiplexed connection (tests/bench/conn_mux.c)"
[ -x "$BENCH/conn_mux" ] && timeout 120 "$BENCH/conn_mux" loopback 2>&1 | tee -a "$REPORT"
