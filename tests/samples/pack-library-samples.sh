#!/usr/bin/env bash
# Packs NVIDIA's CUDALibrarySamples (https://github.com/NVIDIA/CUDALibrarySamples, a checkout given here; this
# repository does not carry them) for tests/gpu/run-samples-on-device.sh: the examples of cuBLAS, cuBLASLt, cuFFT,
# cuRAND (host API), cuSOLVER (single GPU) and cuSPARSE, as sources, which tests/samples/build-library-samples.sh
# builds on the GPU machine against its pip wheels (this machine has no math libraries). Writes
# .carry/libsamples.tar.xz (.carry/libsamples-shared.tar.xz with SAMPLES_CUDART=shared).
#   [SAMPLES_CUDART=static|shared] pack-library-samples.sh CUDALIBRARYSAMPLES_CHECKOUT
set -euo pipefail
repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
src="$(readlink -f "$1")"
cudart="${SAMPLES_CUDART:-static}"
case "$cudart" in
    static) tarball=libsamples.tar.xz ;;
    shared) tarball=libsamples-shared.tar.xz ;;
    *) echo "pack-library-samples: SAMPLES_CUDART is static or shared, not '$cudart'" >&2; exit 2 ;;
esac
[ -d "$src/cuBLAS" ] && [ -d "$src/cuSPARSE" ] || { echo "pack-library-samples: $src is not a CUDALibrarySamples checkout" >&2; exit 1; }
work=/tmp/vmcuda-libsamples-pack
rm -rf "$work"
mkdir -p "$work/src" "$work/bin"
for lib in cuBLAS cuBLASLt cuFFT cuRAND cuSOLVER cuSPARSE; do
    # sources, headers and the data files some examples read; no documents or images
    (cd "$src" && find "$lib" -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.hpp' \
        -o -name '*.hxx' -o -name '*.cuh' -o -name '*.mtx' -o -name '*.bin' -o -name '*.txt' \) ! -name CMakeLists.txt \
        ! -path 'cuRAND/Device/*' ! -path 'cuSOLVER/Mg*' -print0 | xargs -0 tar -cf -) | tar -xf - -C "$work/src"
done
echo '{}' >"$work/test_args.json"
echo "$cudart" >"$work/cudart"
echo tests/samples/build-library-samples.sh >"$work/builder"
mkdir -p "$repo/.carry"
tar -cJf "$repo/.carry/$tarball" -C "$work" .
echo "pack-library-samples: $(find "$work/src" -name '*.c' -o -name '*.cpp' -o -name '*.cu' | wc -l) source files," \
    ".carry/$tarball $(du -h "$repo/.carry/$tarball" | cut -f1)"
