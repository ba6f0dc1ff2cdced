#!/usr/bin/env bash
# On the GPU machine (natively, the real driver): how CUDA 13 runtimes, the math libraries and the
# frameworks use libcuda.so.1: which cuGetProcAddress keys they ask for, which private export tables,
# which entry points they call. Inputs (environment, defaults for a standalone run):
#   DISC_TOOLS   the tracer libcuda.so.1 and procmap (build.sh)        default .carry/disc/tools
#   DISC_STATIC  programs linked with the static runtime to trace       default .carry/disc/static
#   DISC_LIBS    the library test programs; built here (tests/libs/build-on-device.sh) when empty
# Writes to $OUT: procmap.tsv, traces.tar.gz (one trace per program), summary.txt.
set -uo pipefail
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../.." && pwd)"
TOOLS="${DISC_TOOLS:-$REPO/.carry/disc/tools}"
STATIC="${DISC_STATIC:-$REPO/.carry/disc/static}"
OUT="${OUT:-/tmp/disc-out}"
W=/tmp/disc
LIBS="${DISC_LIBS:-$W/libs}"
mkdir -p "$OUT" "$W/traces" "$LIBS"
S="$OUT/summary.txt"
say() { echo "$*" | tee -a "$S"; }
real="$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
say "real libcuda: $real"
"$TOOLS/procmap" "$real" "$REPO/tests/driver/discovery/pfn-keys.txt" "$REPO/protocol/libcuda-exports.txt" \
    >"$OUT/procmap.tsv" 2>"$W/procmap.err"
say "procmap: $(wc -l <"$OUT/procmap.tsv") lines; $(head -1 "$OUT/procmap.tsv")"
if [ -z "$(ls -A "$LIBS" 2>/dev/null)" ]; then
    t0=$(date +%s)
    bash "$REPO/tests/libs/build-on-device.sh" "$LIBS" >"$W/libs-build.txt" 2>&1
    say "library programs built in $(( $(date +%s) - t0 )) s: $(ls "$LIBS" | tr '\n' ' ')"
    grep -v "^wheel" "$W/libs-build.txt" | head -30 | tee -a "$S"
fi
trace() { # NAME CMD...
    local name="$1"; shift
    VMCUDA_REAL_LIBCUDA="$real" VMCUDA_TRACE_FILE="$W/traces/$name.trace" \
        LD_LIBRARY_PATH="$TOOLS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 "$@" >"$W/traces/$name.out" 2>&1
    local rc=$?
    say "$name: rc=$rc $(tail -1 "$W/traces/$name.out" | cut -c1-100)"
}
for p in "$STATIC"/*; do trace "static_$(basename "$p")" "$p"; done
for p in "$LIBS"/*; do [ -x "$p" ] && [ -f "$p" ] && trace "$(basename "$p")" "$p"; done
export PYTHONUNBUFFERED=1
trace torch_mm python3 -c "
import torch
a = torch.randn(512, 512, device='cuda'); b = a @ a; torch.cuda.synchronize()
print('torch', torch.__version__, torch.cuda.get_device_name(0), round(float(b.abs().sum().item()) > 0))"
trace torch_train python3 -c "
import torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(64, 256, device='cuda'); y = torch.randint(0, 10, (64,), device='cuda')
for i in range(20):
    opt.zero_grad(); loss = nn.functional.cross_entropy(m(x), y); loss.backward(); opt.step()
print('loss', round(loss.item(), 3))"
trace cupy_basic python3 -c "
import cupy as cp
a = cp.arange(1000000, dtype=cp.float32); print('cupy', float((a * 2).sum()))"
trace jax_basic python3 -c "
import jax, jax.numpy as jnp
print('jax', jax.devices(), float(jnp.sum(jnp.arange(1000.0) ** 2)))"
tar -czf "$OUT/traces.tar.gz" -C "$W" traces
say "done"
