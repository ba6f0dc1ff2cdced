#!/usr/bin/env bash
# Bulk copies over UCX on the lent GPU machine (issue 19; docs/ucx.md). That machine has no RDMA device and
# no UCX: tests/gpu/prepare-carry.sh packs this machine's UCX libraries (Debian libucx0) and drv_bulk into
# .carry/ucx.tar.xz. Two appliances from the bundle on the one GPU:
#   main   sandboxed workers (root), UCX offered: clients reach its agents over UCX's tcp transport, as a
#          client on another host would (its agents run as the session's uid, in IPC and PID namespaces of
#          their own: out of reach of UCX's shared-memory transports);
#   sm     unsandboxed workers (worker.sandbox = false, the client's own uid), UCX_TLS=sm: UCX over shared
#          memory.
# Checks (client GPU-less, tests/gpu/gpuless.sh): drv_bulk natively and through vmcuda over tcp, shm, ucx-tcp
# and ucx-sm, stdout as expected, and the worker logs show the UCX rings. Then tests/bench/compare.sh with the
# vmcuda_bench copies in one table: native | tcp | shm | ucx-tcp | ucx-sm. Device tool call:
#     run(command="bash tests/gpu/run-ucx-on-device.sh",
#         carry=[".carry/vmcuda-bundle.tar.gz", ".carry/bench", ".carry/ucx.tar.xz"])
# $OUT gets summary.txt (also on stdout), bench-ucx.txt, main.log, sm.log, worker-logs.tar.gz. Exit 0 when
# every check passed.
set -uo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-ucx-out}"
WORK=/tmp/vmcuda-ucx
TIMEOUT="${VMCUDA_TEST_TIMEOUT:-120}"
# shellcheck source=common.sh
. "$REPO/tests/gpu/common.sh"
mkdir -p "$WORK/runs"
finish_more() { tar -czf "$OUT/worker-logs.tar.gz" -C "$WORK" state-main/sessions state-sm/sessions 2>/dev/null; }

say "== vmcuda over UCX on the GPU machine $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | paste -sd';')"
say "rdma devices: $(ls /sys/class/infiniband 2>/dev/null | paste -sd' ' || true)$( [ -d /sys/class/infiniband ] || echo none)"
tar -xJf "$CARRY/ucx.tar.xz" -C "$WORK/carried" || { fail "cannot extract $CARRY/ucx.tar.xz (prepare-carry.sh)"; exit 1; }
C="$WORK/carried"
UCX_LIB="$C/lib"
say "ucx: $(LD_LIBRARY_PATH=$UCX_LIB strings "$UCX_LIB/libucp.so.0" | grep -m1 -E '^1\.[0-9]+\.[0-9]+$' || echo '?') (carried)"

# start NAME PORT UCX_TLS CONFIG-LINES: one daemon, its agents finding the carried UCX through the workers'
# library path (worker.cuda_lib_dirs)
declare -A PORT
start() {
    local name=$1 port=$2 tls=$3
    shift 3
    PORT[$name]=$port
    printf 'worker.cuda_lib_dirs = %s:%s\nworker.ucx = true\n' "$REAL_CUDART_DIR" "$UCX_LIB" >"$WORK/$name.properties"
    printf '%s\n' "$@" >>"$WORK/$name.properties"
    start_daemon "$OUT/$name.log" "$port" "$WORK/state-$name" "$WORK/$name.properties" ${tls:+UCX_TLS=$tls} ||
        { fail "daemon $name did not start"; tail -5 "$OUT/$name.log"; exit 1; }
    say "daemon $name: $(grep -o 'bulk copies over UCX [a-z ]*' "$OUT/$name.log" | head -1); $(grep -o 'workers sandboxed[^(]*\|workers run unsandboxed[^;]*' "$OUT/$name.log" | head -1)"
}
start main 17370 ""
start sm 17380 sm "worker.sandbox = false"

# one drv_bulk run through vmcuda: LABEL DAEMON TRANSPORT [UCX_TLS]
run_bulk() {
    local label=$1 daemon=$2 transport=$3 tls=${4:-}
    (cd "$WORK" && env LD_LIBRARY_PATH="$REAL_CUDART_DIR:$UCX_LIB" VMCUDA_TRANSPORT="$transport" ${tls:+UCX_TLS=$tls} \
        timeout "$TIMEOUT" bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" "$ROOT/bin/vmcuda" run \
        --appliance "127.0.0.1:${PORT[$daemon]}" -- "$C/drv_bulk" >"$WORK/runs/$label.out" 2>"$WORK/runs/$label.err" </dev/null)
    local rc=$?
    if [ $rc = 0 ] && cmp -s "$WORK/runs/$label.out" "$C/drv_bulk.expected" && ! grep -q "transport ucx not used" "$WORK/runs/$label.err"; then
        say "PASS drv_bulk over $label"
    else
        fail "drv_bulk over $label (exit $rc): $(head -c 600 "$WORK/runs/$label.out" "$WORK/runs/$label.err" | tr '\n' ' ')"
    fi
}

(cd "$WORK" && LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" "$C/drv_bulk" >"$WORK/runs/native.out" 2>&1)
cmp -s "$WORK/runs/native.out" "$C/drv_bulk.expected" && say "PASS drv_bulk natively" ||
    fail "drv_bulk natively: $(head -c 300 "$WORK/runs/native.out")"
run_bulk tcp main tcp
run_bulk shm main shm
run_bulk ucx-tcp main ucx tcp
run_bulk ucx-sm sm ucx sm
rings_main=$(cat "$WORK"/state-main/sessions/*/worker.log 2>/dev/null | grep -c "UCX ring attached")
rings_sm=$(cat "$WORK"/state-sm/sessions/*/worker.log 2>/dev/null | grep -c "UCX ring attached")
say "UCX rings attached: main $rings_main, sm $rings_sm; e.g. $(cat "$WORK"/state-main/sessions/*/worker.log | grep -m1 'UCX ring attached' | cut -c1-160)"
[ "$rings_main" -ge 1 ] && [ "$rings_sm" -ge 1 ] || fail "a UCX run attached no ring"
grep -q "registered with the runtime" <(cat "$WORK"/state-main/sessions/*/worker.log | grep "UCX ring attached") ||
    fail "the UCX ring was not registered with the CUDA runtime (copies would be pageable)"

# ---- benchmark: one table, native and every transport side by side ---------------------------------
if [ -x "$CARRY/bench/vmcuda_bench" ]; then
    say ""
    # ucx-tcp-1: the same as ucx-tcp on one connection (tcp_streams 1: no striping), what one UCX stream moves
    say "== tests/bench/compare.sh vmcuda_bench: native | tcp | shm | ucx-tcp | ucx-tcp-1 | ucx-sm (GB/s rows: ratio > 1 = vmcuda faster)"
    ucx_env="VMCUDA_TRANSPORT=ucx,LD_LIBRARY_PATH=$REAL_CUDART_DIR:$UCX_LIB"
    columns="tcp shm ucx-tcp:$ucx_env,UCX_TLS=tcp ucx-tcp-1:$ucx_env,UCX_TLS=tcp,VMCUDA_TCP_STREAMS=1 ucx-sm:$ucx_env,UCX_TLS=sm@127.0.0.1:${PORT[sm]}"
    # MORE_STREAMS=N (by hand): the striped transports again with N connections a copy instead of the default 4
    bench_limit=300
    if [ -n "${MORE_STREAMS:-}" ]; then
        n=$MORE_STREAMS bench_limit=450
        columns="$columns tcp-$n:VMCUDA_TRANSPORT=tcp,VMCUDA_TCP_STREAMS=$n ucx-tcp-$n:$ucx_env,UCX_TLS=tcp,VMCUDA_TCP_STREAMS=$n"
        columns="$columns ucx-sm-$n:$ucx_env,UCX_TLS=sm,VMCUDA_TCP_STREAMS=$n@127.0.0.1:${PORT[sm]}"
    fi
    COLUMNS="$columns" \
        LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout -k 5 "$bench_limit" bash "$REPO/tests/bench/compare.sh" "$CARRY/bench/vmcuda_bench" \
        "$ROOT/bin/vmcuda" "127.0.0.1:${PORT[main]}" >"$OUT/bench-ucx.txt" 2>&1 || fail "compare.sh failed (see bench-ucx.txt)"
    cat "$OUT/bench-ucx.txt"
else
    say "benchmark: not carried (.carry/bench/vmcuda_bench missing)"
fi

say ""
[ $failures = 0 ] && say "UCX RESULT: PASS" || say "UCX RESULT: FAIL ($failures)"
exit $((failures > 0))
