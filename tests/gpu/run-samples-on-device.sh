#!/usr/bin/env bash
# NVIDIA's own cuda-samples on the lent GPU machine: each sample natively, then through vmcuda with the client
# GPU-less (tests/gpu/gpuless.sh) over the ring (co-located, as `transport = auto` picks there) and, with
# MODES="ring tcp", over TCP. The samples are NVIDIA's code, built the way users build them (their CMake
# build, nvcc's default static runtime) on the build machine by tests/samples/build-samples.sh, and those
# that need the math libraries or NVRTC built here against the pip wheels (tests/samples/build-lib-samples.sh).
# They run as cuda-samples' run_tests.py runs them (in their own directory, with test_args.json's arguments).
# A sample passes when vmcuda's run exits as the native one did (0) and its stdout, timing figures masked
# (tests/samples/mask_timings.py), is the native one; where a second native run's output differs from the
# first too (threads racing, device printf from many blocks, figures the mask misses), only the exit code is
# judged ("PASS*"). A sample that fails natively on this machine (no OpenGL, a header NVRTC does not find) is
# reported as SKIP with its reason, not counted. Device tool call:
#     run(command="bash tests/gpu/run-samples-on-device.sh",
#         carry=[".carry/vmcuda-bundle.tar.gz", ".carry/samples.tar.xz"])
# Each sample's session gets every GPU of the machine (VMCUDA_GPUS), as the native run sees them all.
# SAMPLES="a b" runs only those; MODES (default "ring"); VMCUDA_TEST_TIMEOUT per run (default 120 s);
# SAMPLES_TAR=samples-shared.tar.xz runs the `-cudart shared` build (SAMPLES_CUDART=shared build-samples.sh;
# the library samples are then built here the same way); SAMPLES_TAR=libsamples.tar.xz runs NVIDIA's
# CUDALibrarySamples (tests/samples/pack-library-samples.sh), all built here.
# $OUT gets: summary.txt (also on stdout), diffs.txt, daemon.log, worker-logs.tar.gz, outputs.tar.gz.
set -uo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-samples-out}"
WORK=/tmp/vmcuda-samples
PORT=17270
TIMEOUT="${VMCUDA_TEST_TIMEOUT:-120}"
MODES="${MODES:-ring}"
# shellcheck source=common.sh
. "$REPO/tests/gpu/common.sh"
DIFFS="$OUT/diffs.txt"
: >"$DIFFS"
finish_more() {
    [ -d "$WORK/state/sessions" ] && tar -czf "$OUT/worker-logs.tar.gz" -C "$WORK/state" sessions 2>/dev/null
    tar -czf "$OUT/outputs.tar.gz" -C "$WORK" runs 2>/dev/null
    [ -s "$DIFFS" ] || rm -f "$DIFFS"
}

SAMPLES_TAR="${SAMPLES_TAR:-samples.tar.xz}"
say "== NVIDIA cuda-samples through vmcuda $(date -u +%Y-%m-%dT%H:%M:%SZ); modes: $MODES; $SAMPLES_TAR"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | paste -sd';')"
S="$WORK/carried"
tar -xJf "$CARRY/$SAMPLES_TAR" -C "$S" || { fail "cannot extract $CARRY/$SAMPLES_TAR (tests/samples/build-samples.sh)"; exit 1; }
cudart="$(cat "$S/cudart" 2>/dev/null || echo static)"
# what builds the samples that need the math libraries here: named by the pack (CUDALibrarySamples'), else cuda-samples'
builder="$(cat "$S/builder" 2>/dev/null || echo tests/samples/build-lib-samples.sh)"
say "CUDA runtime of the samples: $cudart; built here by $builder"
t0="$(now)"
SAMPLES_CUDART="$cudart" bash "$REPO/$builder" "$S/src" "$S/bin" >"$WORK/lib-build.txt" 2>&1
say "library and NVRTC samples built here in $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s" \
    "($(grep -c '^built ' "$WORK/lib-build.txt") built, $(grep -c '^BUILD FAILED' "$WORK/lib-build.txt") failed)"
grep '^BUILD FAILED' "$WORK/lib-build.txt" | sed 's/^/  /' | tee -a "$SUMMARY"

: >"$WORK/empty.properties"
start_daemon "$OUT/daemon.log" "$PORT" "$WORK/state" "$WORK/empty.properties" ||
    { fail "vmcudad did not start"; tail -5 "$OUT/daemon.log"; exit 1; }
CLIENT="$ROOT/client"
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"

# run_sample MODE NAME LABEL ARGS: in the sample's directory, as run_tests.py does; $WORK/runs/MODE/LABEL.*
run_sample() {
    local mode="$1" name="$2" label="$3" args="$4" dir="$WORK/runs/$1" t0
    mkdir -p "$dir"
    t0="$(now)"
    if [ "$mode" = native ]; then
        (cd "$S/bin/$name" && eval "LD_LIBRARY_PATH=\"$REAL_CUDART_DIR\" timeout $TIMEOUT ./$name $args" \
            >"$dir/$label.out" 2>"$dir/$label.err" </dev/null)
    else
        (cd "$S/bin/$name" && eval "VMCUDA_GPUS=$gpus VMCUDA_APPLIANCE=127.0.0.1:$PORT VMCUDA_TRANSPORT=$([ "$mode" = tcp ] && echo tcp || echo shm) \
            LD_LIBRARY_PATH=\"$REAL_CUDART_DIR\" timeout $TIMEOUT bash \"$REPO/tests/gpu/gpuless.sh\" \"$CLIENT\" ./$name $args" \
            >"$dir/$label.out" 2>"$dir/$label.err" </dev/null)
    fi
    echo $? >"$dir/$label.rc"
    awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }' >"$dir/$label.t"
}

masked_equal() { # A B: the two outputs, timing figures masked, are the same
    python3 "$REPO/tests/samples/mask_timings.py" "$1" >"$WORK/a.masked"
    python3 "$REPO/tests/samples/mask_timings.py" "$2" >"$WORK/b.masked"
    cmp -s "$WORK/a.masked" "$WORK/b.masked"
}

passed=0
skipped=0
while IFS=$'\t' read -r name label args; do
    [ -z "${SAMPLES:-}" ] || [[ " $SAMPLES " == *" $name "* ]] || continue
    if [ "$label" = SKIP ]; then
        printf 'SKIP   %-32s %s\n' "$name" "$args" | tee -a "$SUMMARY"
        skipped=$((skipped + 1))
        continue
    fi
    run_sample native "$name" "$label" "$args"
    n="$WORK/runs/native"
    nrc="$(cat "$n/$label.rc")"
    if [ "$nrc" != 0 ]; then
        printf 'SKIP   %-32s fails natively here (exit %s): %s\n' "$label" "$nrc" \
            "$(grep -v '^\s*$' "$n/$label.err" "$n/$label.out" | tail -1 | cut -d: -f2- | cut -c1-100)" | tee -a "$SUMMARY"
        skipped=$((skipped + 1))
        continue
    fi
    varies=""
    for mode in $MODES; do
        run_sample "$mode" "$name" "$label" "$args"
        d="$WORK/runs/$mode"
        vrc="$(cat "$d/$label.rc")"
        why=""
        [ "$vrc" = 0 ] || why="exit $vrc vs native 0"
        if ! masked_equal "$n/$label.out" "$d/$label.out"; then
            if [ -z "$varies" ]; then # does it differ from itself natively?
                mkdir -p "$WORK/runs/native2"
                run_sample native2 "$name" "$label" "$args"
                masked_equal "$n/$label.out" "$WORK/runs/native2/$label.out" && varies=no || varies=yes
            fi
            [ "$varies" = yes ] || why="${why:+$why; }stdout differs"
        fi
        if [ -z "$why" ]; then
            passed=$((passed + 1))
            printf 'PASS%s  %-32s %-5s native %6ss  vmcuda %6ss%s\n' "$([ "$varies" = yes ] && echo '*' || echo ' ')" "$label" "$mode" \
                "$(cat "$n/$label.t")" "$(cat "$d/$label.t")" "$([ "$varies" = yes ] && echo '  (output varies natively: exit code judged)')" | tee -a "$SUMMARY"
        else
            printf 'FAIL   %-32s %-5s %s\n' "$label" "$mode" "$why" | tee -a "$SUMMARY"
            failures=$((failures + 1))
            masked_equal "$n/$label.out" "$d/$label.out" || true
            {
                echo "===== $mode $label ($args): $why"
                diff -u --label "native/$label" --label "vmcuda/$label" "$WORK/a.masked" "$WORK/b.masked" | head -60
                echo "----- vmcuda stderr (tail)"; tail -25 "$d/$label.err"
            } >>"$DIFFS"
        fi
    done
done < <(python3 "$REPO/tests/samples/plan.py" "$S/bin" "$S/test_args.json" "$gpus")

say ""
say "== $passed passed, $failures failed, $skipped skipped"
say "RESULT: $([ "$failures" = 0 ] && echo PASS || echo FAIL)"
exit $((failures > 0))
