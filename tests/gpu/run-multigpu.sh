#!/usr/bin/env bash
# Multi-GPU sessions on a machine with two or more GPUs (device kind nvidia-h200-x2): the daemon binds
# VMCUDA_GPUS=k GPUs to one session, and tests/cuda/multigpu (every device computes, peer access is
# queried/enabled, cudaMemcpyPeer(Async) between devices) must print exactly what it prints natively.
# Builds nothing; uses .carry/ from tests/gpu/prepare-carry.sh. Run: bash tests/gpu/run-multigpu.sh
set -uo pipefail
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-out}"
WORK=/tmp/vmcuda-multigpu
PORT=17370 ADMIN=17371
mkdir -p "$OUT" && rm -rf "$WORK" && mkdir -p "$WORK"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
tar -xzf "$CARRY/vmcuda-bundle.tar.gz" -C "$WORK" && ROOT="$(ls -d "$WORK"/vmcuda-*/ | head -1)" && ROOT="${ROOT%/}"
setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --state-dir "$WORK/state" \
    >"$OUT/multigpu-daemon.log" 2>&1 </dev/null &
DPID=$!
trap 'kill $DPID 2>/dev/null; sleep 1; kill -9 $DPID 2>/dev/null' EXIT
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$ADMIN") 2>/dev/null && break; sleep 0.2; done
prog="$CARRY/cuda/multigpu"
LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 120 "$prog" >"$WORK/native.out" 2>"$WORK/native.err"
echo "native: exit $? ($GPUS GPUs visible)"
rc_all=0
for k in $(seq 1 "$GPUS"); do
    VMCUDA_GPUS=$k timeout 120 "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" -- "$prog" \
        >"$WORK/vmcuda-$k.out" 2>"$WORK/vmcuda-$k.err"
    rc=$?
    if cmp -s "$WORK/native.out" "$WORK/vmcuda-$k.out"; then same=identical; else same=DIFFERENT; rc_all=1; fi
    echo "vmcuda VMCUDA_GPUS=$k: exit $rc, stdout $same to native"
    [ "$same" = identical ] || diff "$WORK/native.out" "$WORK/vmcuda-$k.out" | head -20
done
# What the appliance bound: the GPUs of each session, and what the program saw there.
grep -h "ready:" "$OUT/multigpu-daemon.log" | sed 's/.*session [0-9]* ready: /  session: /'
grep -h "peer\|devices" "$WORK"/state/sessions/*/worker.log 2>/dev/null | head -5
cat "$WORK/native.out"
[ $rc_all = 0 ] && echo "RESULT: PASS" || echo "RESULT: FAIL"
exit $rc_all
