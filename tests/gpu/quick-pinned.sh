#!/usr/bin/env bash
# A short check of page-locked memory shared with the worker (co-located path, client setting
# pinned_in_region, on by default; VMCUDA_PINNED_IN_REGION=0 to compare without): the programs that
# use page-locked and mapped memory, built both ways, native vs vmcuda over the ring (client GPU-less for the
# static builds), and pinned copy bandwidth native vs vmcuda (bench_transfer --pinned). For a device call
# with little time left; the full suites are run-on-device.sh and run-driver-on-device.sh.
#   carry: .carry/vmcuda-bundle.tar.gz .carry/driver.tar.xz .carry/cuda .carry/bench
set -u
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-/tmp/quick-pinned}"
W=/tmp/qp && rm -rf "$W" && mkdir -p "$W/d" "$OUT"
tar -xzf "$REPO/.carry/vmcuda-bundle.tar.gz" -C "$W" && tar -xJf "$REPO/.carry/driver.tar.xz" -C "$W/d"
ROOT="$(ls -d "$W"/vmcuda-*/ | head -1)"; ROOT="${ROOT%/}"
CUDART="$(dirname "$(readlink -f "$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')")")"
setsid "$ROOT/bin/vmcudad" --listen 127.0.0.1:17170 --admin 127.0.0.1:17171 --state-dir "$W/state" \
    --worker-lib-dir "$ROOT/native" >"$OUT/daemon.log" 2>&1 </dev/null &
DPID=$! # the leader of the daemon's process group (setsid)
for _ in $(seq 1 100); do grep -q "listening on" "$OUT/daemon.log" && break; sleep 0.2; done
fail=0
# QUICK_PROGRAMS="a b" checks only those
for name in ${QUICK_PROGRAMS:-hostmem zero_copy managed streams_events big_copies callbacks memory stream_ptds threads thread_order errors fork_pinned drv_hostmap}; do
    for build in shared static; do # with VMCUDA_PINNED_IN_REGION=1 exported by the caller, or not
        if [ $build = shared ]; then p="$REPO/.carry/cuda/$name"; else p="$W/d/cuda-static/$name"; fi
        [ "$name" = drv_hostmap ] && { [ $build = static ] || continue; p="$W/d/driver/drv_hostmap"; }
        [ -x "$p" ] || continue
        LD_LIBRARY_PATH="$CUDART" timeout 60 "$p" >"$W/n.out" 2>/dev/null; nrc=$?
        if [ $build = shared ]; then
            LD_LIBRARY_PATH="$CUDART" VMCUDA_TRANSPORT=shm timeout 60 "$ROOT/bin/vmcuda" run --appliance 127.0.0.1:17170 -- "$p" \
                >"$W/v.out" 2>"$W/v.err"; vrc=$?
        else
            VMCUDA_APPLIANCE=127.0.0.1:17170 VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH="$CUDART" timeout 60 \
                bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" "$p" >"$W/v.out" 2>"$W/v.err"; vrc=$?
        fi
        if [ $nrc = $vrc ] && cmp -s "$W/n.out" "$W/v.out" && [ $nrc = 0 ]; then
            echo "PASS $name $build"
        else
            echo "FAIL $name $build (native $nrc, vmcuda $vrc)"; fail=1
            diff "$W/n.out" "$W/v.out" | head -8; tail -4 "$W/v.err"
            # the whole of both runs, for what the lines above leave out
            cp "$W/n.out" "$OUT/$name-$build.native.out"; cp "$W/v.out" "$OUT/$name-$build.vmcuda.out"
            cp "$W/v.err" "$OUT/$name-$build.vmcuda.err"
        fi
    done
done
echo "mapped attachments logged: $(cat "$W"/state/sessions/*/worker.log 2>/dev/null | grep -c 'mapped host memory')"
grep -h "mapped host memory" "$W"/state/sessions/*/worker.log 2>/dev/null | head -2
B="$REPO/.carry/bench/bench_transfer"
if [ -x "$B" ]; then
    echo "== bench_transfer --pinned (GB/s, best of 5): native | vmcuda ring"
    LD_LIBRARY_PATH="$CUDART" timeout 60 "$B" --reps 5 --pinned 4K 1M 64M 256M >"$W/bn" 2>&1
    LD_LIBRARY_PATH="$CUDART" VMCUDA_TRANSPORT=shm timeout 60 "$ROOT/bin/vmcuda" run --appliance 127.0.0.1:17170 -- \
        "$B" --reps 5 --pinned 4K 1M 64M 256M >"$W/bv" 2>"$W/bv.err"
    paste "$W/bn" "$W/bv" | awk -F'\t' '{ r = ($2 > 0) ? $5 / $2 : 0; printf "%-22s native %8s  vmcuda %8s  ratio %.2f\n", $1, $2, $5, r }'
    tail -2 "$W/bv.err"
fi
# the daemon's whole group, and wait until it is gone: its shutdown removes the state directory's socket,
# and its port must be free for whatever runs next on this machine
kill -- -"$DPID" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
pkill -KILL -g "$DPID" 2>/dev/null
echo "RESULT: $([ $fail = 0 ] && echo PASS || echo FAIL)"
