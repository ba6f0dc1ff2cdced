#!/usr/bin/env bash
# Builds, on the GPU machine, the NVIDIA cuda-samples that need the math libraries or NVRTC: that machine's
# python3 has them, with their headers, in pip wheels (the build machine has neither). Each sample is built as
# its CMakeLists.txt builds it (nvcc's default static runtime, separable compilation, the sources and
# libraries named there) for sm_90, into OUTDIR/NAME/NAME beside the files it reads at run time (its data,
# and the kernel sources NVRTC compiles). Prints "built NAME" or "BUILD FAILED NAME: ..." per sample.
# SAMPLES_CUDART=shared links them with `-cudart shared` instead.
#   build-lib-samples.sh SAMPLES_SRC OUTDIR     (SAMPLES_SRC: Common/ and Samples/ of cuda-samples)
#   build-lib-samples.sh --list [CATEGORY...]   (the samples' directories, for build-samples.sh; only those of
#                                               the categories named, when some are)
set -uo pipefail
SOLVER="-lcusolver -lcublas -lcublasLt -lcusparse -lnvJitLink"
# DIRECTORY | SOURCES | LIBRARIES (and any nvcc option the sample's CMakeLists.txt adds)
SAMPLES="
4_CUDA_Libraries/MersenneTwisterGP11213|MersenneTwister.cpp|-lcurand
4_CUDA_Libraries/batchCUBLAS|batchCUBLAS.cpp|-lcublas
4_CUDA_Libraries/conjugateGradient|main.cpp|-lcublas -lcusparse
4_CUDA_Libraries/conjugateGradientCudaGraphs|conjugateGradientCudaGraphs.cu|-lcublas -lcusparse
4_CUDA_Libraries/conjugateGradientMultiBlockCG|conjugateGradientMultiBlockCG.cu|-lcublas -lcusparse
4_CUDA_Libraries/conjugateGradientPrecond|main.cpp|-lcublas -lcusparse
4_CUDA_Libraries/conjugateGradientUM|main.cpp|-lcublas -lcusparse
4_CUDA_Libraries/cuSolverDn_LinearSolver|cuSolverDn_LinearSolver.cpp mmio.c mmio_wrapper.cpp|$SOLVER
4_CUDA_Libraries/cuSolverRf|cuSolverRf.cpp mmio.c mmio_wrapper.cpp|$SOLVER
4_CUDA_Libraries/cuSolverSp_LinearSolver|cuSolverSp_LinearSolver.cpp mmio.c mmio_wrapper.cpp|$SOLVER
4_CUDA_Libraries/cuSolverSp_LowlevelCholesky|cuSolverSp_LowlevelCholesky.cpp mmio.c mmio_wrapper.cpp|$SOLVER
4_CUDA_Libraries/cuSolverSp_LowlevelQR|cuSolverSp_LowlevelQR.cpp mmio.c mmio_wrapper.cpp|$SOLVER
4_CUDA_Libraries/jitLto|jitLto.cpp|-lcuda -lnvrtc -lnvJitLink
4_CUDA_Libraries/lineOfSight|lineOfSight.cu|
4_CUDA_Libraries/matrixMulCUBLAS|matrixMulCUBLAS.cpp|-lcublas
4_CUDA_Libraries/simpleCUBLAS|simpleCUBLAS.cpp|-lcublas
4_CUDA_Libraries/simpleCUBLASXT|simpleCUBLASXT.cpp|-lcublas
4_CUDA_Libraries/simpleCUBLAS_LU|simpleCUBLAS_LU.cpp|-lcublas
4_CUDA_Libraries/simpleCUFFT|simpleCUFFT.cu|-lcufft
4_CUDA_Libraries/simpleCUFFT_MGPU|simpleCUFFT_MGPU.cu|--extended-lambda -lcufft
4_CUDA_Libraries/simpleCUFFT_2d_MGPU|simpleCUFFT_2d_MGPU.cu|--extended-lambda -lcufft
4_CUDA_Libraries/conjugateGradientMultiDeviceCG|conjugateGradientMultiDeviceCG.cu|--extended-lambda -lcublas -lcusparse
0_Introduction/UnifiedMemoryStreams|UnifiedMemoryStreams.cu|-lcublas
0_Introduction/clock_nvrtc|clock.cpp|-lnvrtc -lcuda
0_Introduction/matrixMul_nvrtc|matrixMul.cpp|-lnvrtc -lcuda
0_Introduction/simpleAssert_nvrtc|simpleAssert.cpp|-lnvrtc -lcuda
0_Introduction/simpleAtomicIntrinsics_nvrtc|simpleAtomicIntrinsics_cpu.cpp simpleAtomicIntrinsics.cpp|-lnvrtc -lcuda
0_Introduction/vectorAdd_nvrtc|vectorAdd.cpp|-lnvrtc -lcuda
2_Concepts_and_Techniques/inlinePTX_nvrtc|inlinePTX.cpp|-lnvrtc -lcuda
2_Concepts_and_Techniques/MC_EstimatePiInlineQ|src/main.cpp src/piestimator.cu src/test.cpp|-lcurand
2_Concepts_and_Techniques/MC_EstimatePiInlineP|src/main.cpp src/piestimator.cu src/test.cpp|-lcurand
2_Concepts_and_Techniques/MC_EstimatePiP|src/main.cpp src/piestimator.cu src/test.cpp|-lcurand
2_Concepts_and_Techniques/MC_EstimatePiQ|src/main.cpp src/piestimator.cu src/test.cpp|-lcurand
2_Concepts_and_Techniques/MC_SingleAsianOptionP|src/main.cpp src/pricingengine.cu src/test.cpp|-lcurand
5_Domain_Specific/BlackScholes_nvrtc|BlackScholes.cpp BlackScholes_gold.cpp|-lnvrtc -lcuda
5_Domain_Specific/binomialOptions_nvrtc|binomialOptions.cpp binomialOptions_gold.cpp binomialOptions_gpu.cpp|-lnvrtc -lcuda
5_Domain_Specific/quasirandomGenerator_nvrtc|quasirandomGenerator.cpp quasirandomGenerator_gold.cpp|-lnvrtc -lcuda
5_Domain_Specific/convolutionFFT2D|convolutionFFT2D.cu convolutionFFT2D_gold.cpp main.cpp|-lcufft
5_Domain_Specific/MonteCarloMultiGPU|MonteCarlo_gold.cpp MonteCarlo_kernel.cu multithreading.cpp MonteCarloMultiGPU.cpp|--extended-lambda -lcurand
"
if [ "${1:-}" = --list ]; then
    shift
    echo "$SAMPLES" | awk -F'|' 'NF { print $1 }' | while read -r d; do
        if [ $# -eq 0 ] || [[ " $* " == *" ${d%%/*} "* ]]; then echo "$d"; fi
    done
    exit 0
fi
CS="$1"
out="$2"
cudart="${SAMPLES_CUDART:-static}"
mkdir -p "$out"
# shellcheck source=../libs/wheel-links.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../libs/wheel-links.sh"
wheel_links "$out" || exit 1

build() { # DIRECTORY SOURCES LIBRARIES
    local d="$CS/Samples/$1" n="${1#*/}" srcs="" s
    for s in $2; do srcs="$srcs $d/$s"; done
    mkdir -p "$out/$n"
    find "$d" -maxdepth 2 \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.mtx' \) -exec cp {} "$out/$n/" \;
    if [ -d "$d/data" ]; then cp -r "$d/data" "$out/$n/" && cp "$d"/data/* "$out/$n/" 2>/dev/null; fi
    # shellcheck disable=SC2086 # word lists
    if nvcc -cudart "$cudart" -O2 -std=c++17 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -rdc=true -Xcompiler -fopenmp \
        -I"$CS/Common" -I"$d" -I"$d/inc" -I"$nv/include" -o "$out/$n/$n" $srcs -L"$links" $3 -lgomp \
        -Xlinker -rpath="$nv/lib" >"$out/$n.build.log" 2>&1; then
        echo "built $n"
    else
        echo "BUILD FAILED $n: $(grep -m3 error "$out/$n.build.log" | tr '\n' ' ')"
    fi
    rm -f "$out/$n.build.log"
}
# eight at a time
running=0
while IFS='|' read -r dir srcs libs; do
    [ -n "$dir" ] && [ -d "$CS/Samples/$dir" ] || continue # only those whose sources came in the pack
    build "$dir" "$srcs" "$libs" &
    running=$((running + 1))
    if [ "$running" -ge 8 ]; then wait -n; running=$((running - 1)); fi
done <<<"$SAMPLES"
wait
