#!/usr/bin/env bash
# Builds the library test programs on the GPU machine, whose python3 has the CUDA 13 math libraries
# with their headers in pip wheels (this build machine has neither). Each program is built twice:
# with nvcc's default static cudart (NAME) and with -cudart shared (NAME_shared).
#   build-on-device.sh OUTDIR      (prints the wheel directory it used)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
mkdir -p "$out"
# shellcheck source=wheel-links.sh
. "$here/wheel-links.sh"
wheel_links "$out" || exit 1
echo "wheel libraries: $nv/lib"
declare -A LIBS=(
    [cublas_basic]="-lcublas -lcublasLt"
    [cublaslt_matmul]="-lcublasLt"
    [cufft_basic]="-lcufft"
    [curand_host]="-lcurand"
    [cusolver_dense]="-lcusolver -lcublas -lcublasLt -lcusparse -lnvJitLink"
    [cusparse_spmv]="-lcusparse -lcublas -lcublasLt -lnvJitLink"
    [mixed_cublas]="-lcublas -lcublasLt"
    [bench_cublas]="-lcublas -lcublasLt"
)
pids=()
for prog in "${!LIBS[@]}"; do
    for variant in static shared; do
        name="$prog"; [ "$variant" = shared ] && name="${prog}_shared"
        nvcc -O2 -arch=sm_90 -cudart "$variant" -I"$nv/include" -I"$here" -o "$out/$name" "$here/$prog.cu" \
            -L"$links" ${LIBS[$prog]} -Xlinker -rpath="$nv/lib" >"$out/$name.build.log" 2>&1 &
        pids+=($!)
    done
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
for log in "$out"/*.build.log; do [ -s "$log" ] && { echo "== $log"; cat "$log"; }; done
rm -f "$out"/*.build.log
ls "$out"
exit $fail
