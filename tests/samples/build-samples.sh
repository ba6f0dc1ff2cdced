#!/usr/bin/env bash
# Builds NVIDIA's cuda-samples (https://github.com/NVIDIA/cuda-samples, a checkout given here; this repository
# does not carry them) the way their users build them: their own CMake build, nvcc's default static CUDA
# runtime, for sm_90 (the lent GPU machine's H100/H200) only. Categories 0-3 and 6 are built here; the samples
# that need the math libraries or NVRTC (build-lib-samples.sh --list), which this machine lacks, travel as
# sources and are built on the GPU machine. Programs link against vmcuda's client libcuda.so.1 (the same ABI as
# NVIDIA's: this machine has no NVIDIA driver); at run time they get whichever libcuda.so.1 is first.
# Writes .carry/samples.tar.xz (bin/NAME/{NAME, data...}, src/, test_args.json) for run-samples-on-device.sh.
# SAMPLES_CUDART=shared builds them as `-cudart shared` does (CMake's CUDA_RUNTIME_LIBRARY=Shared: at run time
# they take whichever libcudart.so.13 is first, through vmcuda its runtime front end) into
# .carry/samples-shared.tar.xz; the library samples built on the GPU machine follow the same setting.
# SAMPLES_CATEGORIES="5_Domain_Specific" SAMPLES_TAG=domain builds other categories into .carry/samples-domain.tar.xz
# (-shared appended for the shared runtime); SAMPLES_NO_GRAPHICS=1 leaves out the samples that need OpenGL, Vulkan
# or Direct3D (the GPU machine has none of them; they would only be SKIPped there). SAMPLES_SOURCES_ONLY="4_CUDA_Libraries"
# names categories of which only the samples built on the GPU machine go into the pack (4_CUDA_Libraries' others need
# NPP or nvJPEG, which CMake does not find here), e.g. with SAMPLES_CATEGORIES="5_Domain_Specific" SAMPLES_TAG=mgpu.
#   [SAMPLES_CUDART=static|shared] build-samples.sh CUDA_SAMPLES_CHECKOUT
set -euo pipefail
repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
src="$(readlink -f "$1")"
cudart="${SAMPLES_CUDART:-static}"
categories="${SAMPLES_CATEGORIES:-0_Introduction 1_Utilities 2_Concepts_and_Techniques 3_CUDA_Features 6_Performance}"
name="samples${SAMPLES_TAG:+-$SAMPLES_TAG}"
case "$cudart" in
    static) tarball=$name.tar.xz cmake_runtime=Static ;;
    shared) tarball=$name-shared.tar.xz cmake_runtime=Shared ;;
    *) echo "build-samples: SAMPLES_CUDART is static or shared, not '$cudart'" >&2; exit 2 ;;
esac
work=/tmp/vmcuda-$name-build-$cudart
client_lib="$repo/client-shim/target/lib"
[ -f "$client_lib/libcuda.so.1" ] || { echo "build-samples: no $client_lib/libcuda.so.1; run: mvn -B install" >&2; exit 1; }
[ -f "$src/test_args.json" ] && [ -d "$src/Common" ] || { echo "build-samples: $src is not a cuda-samples checkout" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/tree/Samples" "$work/stub" "$work/pack/bin" "$work/pack/src/Samples"
cp -r "$src/Common" "$src/CMakeLists.txt" "$src/test_args.json" "$work/tree/"
sources_only="${SAMPLES_SOURCES_ONLY:-}"
for c in $categories; do
    cp -r "$src/Samples/$c" "$work/tree/Samples/"
done
# shellcheck disable=SC2086 # a word list
printf 'add_subdirectory(%s)\n' $categories >"$work/tree/Samples/CMakeLists.txt"
if [ "${SAMPLES_NO_GRAPHICS:-0}" = 1 ]; then
    for f in $(grep -l -E 'OpenGL|GLUT|Vulkan|D3D|EGL' "$work"/tree/Samples/*/*/CMakeLists.txt); do
        d="$(dirname "$f")"
        sed -i "s|^add_subdirectory($(basename "$d"))|# needs graphics: &|" "$(dirname "$d")/CMakeLists.txt"
    done
fi
# sm_90 only (their list has nine architectures: hours on a build machine of two cores)
find "$work/tree" -name CMakeLists.txt -exec sed -i 's/^\(\s*\)set(CMAKE_CUDA_ARCHITECTURES .*)/\1set(CMAKE_CUDA_ARCHITECTURES 90)/' {} +
# the ones built on the GPU machine leave the CMake build
# shellcheck disable=SC2086 # a word list
for d in $(bash "$repo/tests/samples/build-lib-samples.sh" --list $categories $sources_only); do
    sed -i "s|^add_subdirectory(${d#*/})|# built on the GPU machine: &|" "$work/tree/Samples/${d%%/*}/CMakeLists.txt" 2>/dev/null || true
    mkdir -p "$work/pack/src/Samples/${d%%/*}"
    cp -r "$src/Samples/$d" "$work/pack/src/Samples/$d"
done
cp -r "$src/Common" "$work/pack/src/"
cp "$src/test_args.json" "$work/pack/"
echo "$cudart" >"$work/pack/cudart"
ln -s "$client_lib/libcuda.so.1" "$work/stub/libcuda.so"
(cd "$work" && mkdir build && cd build &&
    cmake ../tree -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
        -DCMAKE_CUDA_RUNTIME_LIBRARY="$cmake_runtime" \
        -DCUDA_cuda_driver_LIBRARY="$work/stub/libcuda.so" -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$client_lib" \
        >"$work/cmake.log" 2>&1 || { tail -20 "$work/cmake.log"; exit 1; }
    make -k -j"$(nproc)" >"$work/make.log" 2>&1 || true)
# each sample's build directory holds what it reads at run time (CMake copied its data there)
built=0
for exe in $(find "$work/build/Samples" -mindepth 3 -maxdepth 3 -type f -executable ! -path '*CMakeFiles*'); do
    name="$(basename "$exe")"
    [ "$name" = "$(basename "$(dirname "$exe")")" ] || continue
    mkdir -p "$work/pack/bin/$name"
    (cd "$(dirname "$exe")" && tar -cf - --exclude=CMakeFiles --exclude=Makefile --exclude=cmake_install.cmake .) |
        tar -xf - -C "$work/pack/bin/$name"
    strip "$work/pack/bin/$name/$name"
    built=$((built + 1))
done
mkdir -p "$repo/.carry"
tar -cJf "$repo/.carry/$tarball" -C "$work/pack" .
echo "build-samples: $built samples built here ($cudart runtime) ($(grep -c 'Error [0-9]' "$work/make.log" || true) make errors, $work/make.log)," \
    "$(bash "$repo/tests/samples/build-lib-samples.sh" --list $categories $sources_only | wc -l) to build on the GPU machine;" \
    ".carry/$tarball $(du -h "$repo/.carry/$tarball" | cut -f1)"
