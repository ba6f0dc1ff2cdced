#!/usr/bin/env bash
# Where a small call's time goes, natively and through vmcuda over the co-located path (issue 15's small-call
# rows: async launch, launch + synchronize, a 4-byte copy from the device, a 256 KiB pageable copy to it: h2d:262144), on
# the lent GPU machine. Builds nothing; uses .carry/ from `tests/gpu/prepare-carry.sh --with-perf` (the build
# machine's perf with its libraries: the GPU machine has none).
#
#   bash tests/gpu/profile-small-calls.sh     -> $OUT/profile-small-calls.txt (also on stdout)
#
# Each mode of tests/bench/small_call_loop.cu runs SECONDS (default 3) natively, then through vmcuda
# (VMCUDA_TRANSPORT=shm), each while `perf record -a -e cpu-clock` samples every CPU (flat profile). Per run:
# the mean time per call, CPU seconds per thread, and the top symbols by thread and library. A profiling run
# only: the client is not GPU-less here, and timings under perf are not the benchmark's (tests/bench).
set -uo pipefail
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-out}"
WORK=/tmp/vmcuda-profile-small
PORT=17480 ADMIN=17481
FREQ=4999
SECONDS_EACH="${SECONDS_EACH:-3}"
MODES="${MODES:-async sync d2h4 h2d:262144}"
mkdir -p "$OUT" && rm -rf "$WORK" && mkdir -p "$WORK"
REPORT="$OUT/profile-small-calls.txt"
: >"$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }

say "== small-call profile $(date -u +%Y-%m-%dT%H:%M:%SZ): $(nproc) cores, kernel $(uname -r)"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
tar -xzf "$CARRY/vmcuda-bundle.tar.gz" -C "$WORK" && ROOT="$(ls -d "$WORK"/vmcuda-*/ | head -1)" && ROOT="${ROOT%/}"
[ -n "${ROOT:-}" ] || { say "FAIL: no bundle in $CARRY"; exit 1; }
LOOP="$CARRY/bench/small_call_loop"
[ -x "$LOOP" ] || { say "FAIL: no $LOOP (tests/bench, prepare-carry.sh)"; exit 1; }

PROFILE_SORT=pid,dso,sym PROFILE_LIMIT=0.4 PROFILE_ROWS=60
source "$REPO/tests/gpu/perf-profile.sh"
start_daemon

native=(env LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60)
vmcuda_shm=(env VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" --)

for mode in $MODES; do
    profile "native_${mode/:/_}" "${native[@]}" "$LOOP" "$mode" "$SECONDS_EACH"
    profile "shm_${mode/:/_}" "${vmcuda_shm[@]}" "$LOOP" "$mode" "$SECONDS_EACH"
done
say ""
say "== daemon log (last lines)"
tail -5 "$WORK/daemon.log" | tee -a "$REPORT"
