#!/usr/bin/env bash
# Builds, on the GPU machine, the CUDALibrarySamples examples that tests/samples/pack-library-samples.sh packed,
# as their Makefiles build them (nvcc, the library's flags; nvcc's default static runtime, or -cudart shared with
# SAMPLES_CUDART=shared), against the pip wheels of that machine's python3, each into OUTDIR/NAME/NAME. A directory
# with a main.cpp or main.cu is one program of all its sources (cuBLASLt's, with their Common/ helpers); elsewhere
# each source file is an example of its own. Prints "built NAME" or "BUILD FAILED NAME: ...".
#   build-library-samples.sh SRC OUTDIR
set -uo pipefail
SRC="$1"
out="$2"
cudart="${SAMPLES_CUDART:-static}"
mkdir -p "$out"
# shellcheck source=../libs/wheel-links.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../libs/wheel-links.sh"
wheel_links "$out" || exit 1
declare -A LIBS=(
    [cuBLAS]="-lcublas -lcublasLt"
    [cuBLASLt]="-lcublasLt"
    [cuFFT]="-lcufft"
    [cuRAND]="-lcurand"
    [cuSOLVER]="-lcusolver -lcublas -lcublasLt -lcusparse -lnvJitLink"
    [cuSPARSE]="-lcusparse -lcublas -lcublasLt -lnvrtc -lcuda -lnvJitLink" # cg, bicgstab, spmm_csr_op, compression
)
build() { # LIBRARY NAME SOURCES...
    local lib="$1" name="$2" dir
    shift 2
    dir="$(dirname "$1")"
    local xcu=""
    [ "$lib" = cuFFT ] && xcu="-x cu" # as its Makefiles compile their .cpp files
    mkdir -p "$out/$name"
    find "$dir" -maxdepth 1 \( -name '*.mtx' -o -name '*.bin' -o -name '*.txt' \) -exec cp {} "$out/$name/" \;
    # shellcheck disable=SC2086 # word lists
    if nvcc -cudart "$cudart" -O2 -std=c++17 -arch=sm_90 $xcu -I"$dir" -I"$SRC/$lib/utils" -I"$SRC/$lib/Common" \
        -I"$nv/include" -o "$out/$name/$name" "$@" -L"$links" ${LIBS[$lib]} -Xlinker -rpath="$nv/lib" \
        >"$out/$name.build.log" 2>&1; then
        echo "built $name"
    else
        echo "BUILD FAILED $name: $(grep -m2 error "$out/$name.build.log" | tr '\n' ' ' | cut -c1-200)"
    fi
    rm -f "$out/$name.build.log"
}
running=0
start() {
    build "$@" &
    running=$((running + 1))
    if [ "$running" -ge 16 ]; then wait -n; running=$((running - 1)); fi
}
declare -A seen=() # a name taken twice (cuBLAS has two cublas_GemmEx_example) gets its directory's name before it
unique() { # NAME DIR: the name in $name (not echoed: seen must be this shell's)
    name="$1"
    [ -n "${seen[$name]:-}" ] && name="$(basename "$2")_$1"
    seen[$name]=1
}
for lib in $(printf '%s\n' "${!LIBS[@]}" | sort); do
    [ -d "$SRC/$lib" ] || continue
    while IFS= read -r dir; do
        case "$dir" in */Common | */utils | */cmake) continue ;; esac
        mapfile -t files < <(find "$dir" -maxdepth 1 -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.cu' \) | sort)
        [ ${#files[@]} -gt 0 ] || continue
        if [ -f "$dir/main.cpp" ] || [ -f "$dir/main.cu" ]; then
            mapfile -t common < <(find "$SRC/$lib/Common" -maxdepth 1 -name '*.cpp' 2>/dev/null)
            unique "$(basename "$dir")" "$(dirname "$dir")"
            start "$lib" "$name" "${files[@]}" "${common[@]}"
        else
            for f in "${files[@]}"; do
                unique "$(basename "${f%.*}")" "$dir"
                start "$lib" "$name" "$f"
            done
        fi
    done < <(find "$SRC/$lib" -type d | sort)
done
wait
