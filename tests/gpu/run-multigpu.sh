#!/usr/bin/env bash
# Multi-GPU sessions on a machine with two or more GPUs (device kind nvidia-h200-x2): the daemon binds
# VMCUDA_GPUS=k GPUs to one session, and tests/cuda/multigpu (every device computes, peer access is
# queried/enabled, cudaMemcpyPeer(Async) between devices) must print exactly what it prints natively.
# The static build of it (driver front end) and tests/gpu/multigpu_frameworks.py (PyTorch, NVML) run with the
# client GPU-less (tests/gpu/gpuless.sh). Builds nothing; uses .carry/ from tests/gpu/prepare-carry.sh --driver.
# Run: bash tests/gpu/run-multigpu.sh   carry: .carry/vmcuda-bundle.tar.gz .carry/cuda .carry/driver.tar.xz
set -uo pipefail
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-out}"
WORK=/tmp/vmcuda-multigpu
PORT=17370 ADMIN=17371
mkdir -p "$OUT" && rm -rf "$WORK" && mkdir -p "$WORK"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}" # what NCCL gives up on, in the stderr kept for a failed run
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
# Over TCP (the pool and virtual-memory rounds of the program copy 12 MiB to and from one device after the other;
# VMCUDA_GPUS=1 stripes them over several connections).
for k in 1 "$GPUS"; do
    VMCUDA_GPUS=$k VMCUDA_TRANSPORT=tcp timeout 120 "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" -- "$prog" \
        >"$WORK/vmcuda-tcp.out" 2>"$WORK/vmcuda-tcp.err"
    rc=$?
    if cmp -s "$WORK/native.out" "$WORK/vmcuda-tcp.out"; then same=identical; else same=DIFFERENT; rc_all=1; fi
    echo "vmcuda VMCUDA_GPUS=$k over TCP: exit $rc, stdout $same to native"
    [ "$same" = identical ] || { diff "$WORK/native.out" "$WORK/vmcuda-tcp.out" | head -20; tail -5 "$WORK/vmcuda-tcp.err"; }
done
# The same program built with nvcc's default static runtime (driver front end), the client GPU-less.
static="$WORK/d/cuda-static/multigpu"
if [ -f "$CARRY/driver.tar.xz" ] && mkdir -p "$WORK/d" && tar -xJf "$CARRY/driver.tar.xz" -C "$WORK/d" && [ -x "$static" ]; then
    LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 120 "$static" >"$WORK/native-static.out" 2>&1
    VMCUDA_GPUS=$GPUS VMCUDA_APPLIANCE="127.0.0.1:$PORT" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 120 \
        bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" "$static" >"$WORK/vmcuda-static.out" 2>"$WORK/vmcuda-static.err"
    rc=$?
    if cmp -s "$WORK/native-static.out" "$WORK/vmcuda-static.out"; then same=identical; else same=DIFFERENT; rc_all=1; fi
    echo "static build, client GPU-less, VMCUDA_GPUS=$GPUS: exit $rc, stdout $same to native"
    [ "$same" = identical ] || { diff "$WORK/native-static.out" "$WORK/vmcuda-static.out" | head -20; tail -5 "$WORK/vmcuda-static.err"; }
    VMCUDA_GPUS=$GPUS VMCUDA_TRANSPORT=tcp VMCUDA_APPLIANCE="127.0.0.1:$PORT" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 120 \
        bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" "$static" >"$WORK/vmcuda-static-tcp.out" 2>"$WORK/vmcuda-static-tcp.err"
    rc=$?
    if cmp -s "$WORK/native-static.out" "$WORK/vmcuda-static-tcp.out"; then same=identical; else same=DIFFERENT; rc_all=1; fi
    echo "static build over TCP, client GPU-less, VMCUDA_GPUS=$GPUS: exit $rc, stdout $same to native"
    [ "$same" = identical ] || { diff "$WORK/native-static.out" "$WORK/vmcuda-static-tcp.out" | head -20; tail -5 "$WORK/vmcuda-static-tcp.err"; }
else
    echo "static build: not carried (.carry/driver.tar.xz)"
fi
# PyTorch and NVML over all the GPUs (tests/gpu/multigpu_frameworks.py), the client GPU-less.
if python3 -c "import torch" 2>/dev/null; then
    timeout 300 python3 "$REPO/tests/gpu/multigpu_frameworks.py" >"$WORK/torch-native.out" 2>"$WORK/torch-native.err"
    echo "torch native: exit $?"
    VMCUDA_GPUS=$GPUS VMCUDA_APPLIANCE="127.0.0.1:$PORT" timeout 300 bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" \
        python3 "$REPO/tests/gpu/multigpu_frameworks.py" >"$WORK/torch-vmcuda.out" 2>"$WORK/torch-vmcuda.err"
    rc=$?
    if cmp -s "$WORK/torch-native.out" "$WORK/torch-vmcuda.out"; then same=identical; else same=DIFFERENT; rc_all=1; fi
    echo "torch + NVML, client GPU-less, VMCUDA_GPUS=$GPUS: exit $rc, stdout $same to native"
    [ "$same" = identical ] || { diff "$WORK/torch-native.out" "$WORK/torch-vmcuda.out" | head -20; tail -8 "$WORK/torch-vmcuda.err"; }
    cat "$WORK/torch-native.out"
fi
# The client's CUDA_VISIBLE_DEVICES selects among the session's GPUs as natively among the machine's: the last
# GPU alone, then the GPUs in reverse order (runtime build, static build, PyTorch; NVML is left out, see README).
if [ "$GPUS" -ge 2 ]; then
    last=$((GPUS - 1))
    for cvd in "$last" "$(seq -s, "$last" -1 0)"; do
        for variant in shared static torch; do
            case $variant in
            shared) cmd=("$prog") ;;
            static) [ -x "$static" ] || continue; cmd=("$static") ;;
            torch) python3 -c "import torch" 2>/dev/null || continue; cmd=(python3 "$REPO/tests/gpu/multigpu_frameworks.py") ;;
            esac
            CUDA_VISIBLE_DEVICES="$cvd" MULTIGPU_NVML=0 LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 300 "${cmd[@]}" \
                >"$WORK/cvd-native.out" 2>"$WORK/cvd-native.err"
            nrc=$?
            if [ $variant = shared ]; then
                CUDA_VISIBLE_DEVICES="$cvd" VMCUDA_GPUS=$GPUS timeout 300 "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" \
                    -- "${cmd[@]}" >"$WORK/cvd-vmcuda.out" 2>"$WORK/cvd-vmcuda.err"
            else
                CUDA_VISIBLE_DEVICES="$cvd" MULTIGPU_NVML=0 VMCUDA_GPUS=$GPUS VMCUDA_APPLIANCE="127.0.0.1:$PORT" \
                    LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 300 bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" "${cmd[@]}" \
                    >"$WORK/cvd-vmcuda.out" 2>"$WORK/cvd-vmcuda.err"
            fi
            vrc=$?
            if [ $nrc = $vrc ] && cmp -s "$WORK/cvd-native.out" "$WORK/cvd-vmcuda.out"; then same=identical; else same=DIFFERENT; rc_all=1; fi
            echo "CUDA_VISIBLE_DEVICES=$cvd $variant: native exit $nrc, vmcuda exit $vrc, stdout $same"
            [ "$same" = identical ] || { diff "$WORK/cvd-native.out" "$WORK/cvd-vmcuda.out" | head -10; tail -4 "$WORK/cvd-vmcuda.err"; }
            [ $variant = torch ] && grep -E "devices|->" "$WORK/cvd-vmcuda.out" | head -4
        done
    done
fi
# PyTorch DistributedDataParallel over NCCL, one process per GPU (tests/gpu/ddp_smoke.py), the client GPU-less: NCCL
# shares device memory between the processes as POSIX file descriptors (shareable handles) and finds the NVLinks
# through NVML. Each process has a session of its own, bound to every GPU. With NCCL_CUMEM_ENABLE=0 NCCL shares
# memory through CUDA IPC handles instead (served where worker.cuda_ipc allows it; H200 run 167). Where NCCL takes its
# SHM transport (GPUs without peer access, NCCL_P2P_DISABLE=1) it registers pages of a /dev/shm file of the client's,
# which vmcuda does not serve (between VMs the appliance cannot reach a client's files; H200 run 159).
if [ "$GPUS" -ge 2 ] && python3 -c "import torch" 2>/dev/null; then
    for cumem in 1 0; do
        NCCL_CUMEM_ENABLE=$cumem DDP_PORT=29511 timeout 300 python3 "$REPO/tests/gpu/ddp_smoke.py" \
            >"$WORK/ddp-native.out" 2>"$WORK/ddp-native.err"
        nrc=$?
        NCCL_CUMEM_ENABLE=$cumem DDP_PORT=29512 VMCUDA_GPUS=$GPUS VMCUDA_APPLIANCE="127.0.0.1:$PORT" timeout 300 \
            bash "$REPO/tests/gpu/gpuless.sh" "$ROOT/client" python3 "$REPO/tests/gpu/ddp_smoke.py" \
            >"$WORK/ddp-vmcuda.out" 2>"$WORK/ddp-vmcuda.err"
        vrc=$?
        if [ $nrc = 0 ] && [ $vrc = 0 ] && cmp -s "$WORK/ddp-native.out" "$WORK/ddp-vmcuda.out"; then same=identical; else same=DIFFERENT; fi
        [ $same != identical ] && rc_all=1
        echo "DDP over NCCL, NCCL_CUMEM_ENABLE=$cumem, client GPU-less: native exit $nrc, vmcuda exit $vrc, stdout $same"
        [ "$same" = identical ] || { diff "$WORK/ddp-native.out" "$WORK/ddp-vmcuda.out" | head -10; grep -v "^\s*$" "$WORK/ddp-vmcuda.err" | tail -25; }
        cp "$WORK/ddp-vmcuda.err" "$OUT/ddp-cumem$cumem-vmcuda.err"
        [ $cumem = 1 ] && echo "  DDP step time (tests/gpu/ddp_smoke.py timed_steps): native $(grep -h 'ddp timed' "$WORK/ddp-native.err" | cut -d' ' -f3) ms, vmcuda $(grep -h 'ddp timed' "$WORK/ddp-vmcuda.err" | cut -d' ' -f3) ms"
    done
    cat "$WORK/ddp-native.out"
fi
# What the appliance bound: the GPUs of each session, and what the program saw there.
grep -h "ready:" "$OUT/multigpu-daemon.log" | sed 's/.*session [0-9]* ready: /  session: /'
grep -h "peer\|devices" "$WORK"/state/sessions/*/worker.log 2>/dev/null | head -5
cat "$WORK/native.out"
[ $rc_all = 0 ] && echo "RESULT: PASS" || echo "RESULT: FAIL"
exit $rc_all
