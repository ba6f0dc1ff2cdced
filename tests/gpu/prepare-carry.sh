#!/usr/bin/env bash
# Copies the current build outputs into .carry/ for tests/gpu/run-on-device.sh, which runs on
# the lent GPU machine (no Java, no network, builds nothing). Builds nothing itself either:
# run `mvn -B install` (or at least `mvn -B package`) first.
#
#   .carry/vmcuda-bundle.tar.gz   packaging/target/vmcuda-VERSION-linux-x86_64.tar.gz
#   .carry/cuda/*                 tests/target/cuda/* (the prebuilt CUDA test programs)
#   .carry/bench/*, .carry/isolation/*   tests/target/{bench,isolation}/*
#   .carry/driver.tar.xz          with --driver, for tests/gpu/run-driver-on-device.sh: cuda-static/
#                                 (tests/target/cuda-static), driver/ (drv_api, rt_static), disc-tools/
#                                 (the discovery tracer and procmap, tests/driver/discovery/build.sh);
#                                 compressed with xz, as the static-runtime programs are ~1 MiB each
#   .carry/pool.tar.xz            with --pool, for tests/gpu/run-pool-on-device.sh: this machine's etcd
#                                 (Debian's etcd-server), tests/target/pool/*, cuda/ and a few cuda-static/
#                                 programs
#   .carry/ucx.tar.xz             for the UCX transport's section of run-on-device.sh: this machine's UCX
#                                 libraries (Debian libucx0: lib/, lib/ucx/ with the cma module; the GPU
#                                 machine has no UCX) and tests/target/driver/drv_bulk
#   .carry/perf.tar.gz            with --with-perf: this machine's perf and its libraries, for
#                                 tests/gpu/profile-tcp.sh (the GPU machine has no perf)
#
# Then call the device tool with carry [".carry/vmcuda-bundle.tar.gz", ".carry/cuda"] and command
# "bash tests/gpu/run-on-device.sh" (name the two paths: others may keep their own files in .carry/).
set -euo pipefail

repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
carry="$repo/.carry"
allow_incomplete=false
with_perf=false
with_driver=false
with_pool=false
for arg in "$@"; do
    case "$arg" in
    --allow-incomplete) allow_incomplete=true ;;
    --with-perf) with_perf=true ;; # .carry/perf.tar.gz for tests/gpu/profile-tcp.sh
    --driver) with_driver=true ;;  # .carry/driver for tests/gpu/run-driver-on-device.sh
    --pool) with_pool=true ;;      # .carry/pool.tar.xz for tests/gpu/run-pool-on-device.sh
    *) echo "usage: prepare-carry.sh [--allow-incomplete] [--with-perf] [--driver] [--pool]" >&2; exit 2 ;;
    esac
done

shopt -s nullglob
bundles=("$repo"/packaging/target/vmcuda-[0-9]*-linux-x86_64.tar.gz) # the appliance bundle, not vmcuda-client-*
if [ ${#bundles[@]} -ne 1 ]; then
    echo "prepare-carry: expected exactly one bundle in packaging/target, found ${#bundles[@]}; run: mvn -B install" >&2
    exit 1
fi
if tar -tzf "${bundles[0]}" | grep -q '^[^/]*/INCOMPLETE$'; then
    echo "prepare-carry: ${bundles[0]} is INCOMPLETE (built with -Dvmcuda.bundle.allowIncomplete=true):" >&2
    tar -xzOf "${bundles[0]}" --wildcards '*/INCOMPLETE' | sed 's/^/  missing: /' >&2
    [ "$allow_incomplete" = true ] || { echo "prepare-carry: pass --allow-incomplete to carry it anyway" >&2; exit 1; }
fi

programs=()
for p in "$repo"/tests/target/cuda/*; do
    [ -f "$p" ] && [ -x "$p" ] && programs+=("$p")
done
if [ ${#programs[@]} -eq 0 ]; then
    echo "prepare-carry: no test programs in tests/target/cuda (needs nvcc); run: mvn -B install" >&2
    exit 1
fi

rm -rf "$carry/cuda" "$carry/bench" "$carry/isolation" "$carry/vmcuda-bundle.tar.gz"
mkdir -p "$carry/cuda" "$carry/bench" "$carry/isolation"
cp -p "${bundles[0]}" "$carry/vmcuda-bundle.tar.gz"
cp -p "${programs[@]}" "$carry/cuda/"
# libraries some programs bring along (client_libs.d/: found through the program's $ORIGIN run path)
for d in "$repo"/tests/target/cuda/*.d; do [ -d "$d" ] && cp -pr "$d" "$carry/cuda/"; done
cp -p "$repo"/tests/target/bench/* "$carry/bench/" 2>/dev/null || echo "prepare-carry: no benchmarks in tests/target/bench" >&2
cp -p "$repo"/tests/target/isolation/* "$carry/isolation/" 2>/dev/null || echo "prepare-carry: no isolation programs in tests/target/isolation" >&2

# seal NAME LABEL WHAT: $pack becomes .carry/NAME.tar.xz (xz: the static-runtime programs share most of their
# bytes, and etcd alone is 21 MiB), then goes
seal() {
    tar -cJf "$carry/$1.tar.xz" -C "$pack" .
    rm -rf "$pack"
    echo "prepare-carry: $2 -> .carry/$1.tar.xz ($(du -h "$carry/$1.tar.xz" | cut -f1)): $3"
}

rm -f "$carry/driver.tar.xz"
if [ "$with_driver" = true ]; then
    pack="$(mktemp -d)"
    mkdir -p "$pack/cuda-static" "$pack/driver"
    cp -pr "$repo"/tests/target/cuda-static/* "$pack/cuda-static/" 2>/dev/null ||
        { echo "prepare-carry: --driver: no programs in tests/target/cuda-static; run: mvn -B install" >&2; exit 1; }
    cp -p "$repo"/tests/target/driver/drv_api "$repo"/tests/target/driver/drv_kernels.* "$repo"/tests/target/driver/rt_static "$repo"/tests/target/driver/graph_topology "$repo"/tests/target/driver/graph_host "$repo"/tests/target/driver/drv_hostmap "$repo"/tests/target/driver/drv_threads "$repo"/tests/target/driver/drv_fork "$repo"/tests/target/driver/drv_capture_query "$repo"/tests/target/driver/nvml_probe "$pack/driver/" ||
        { echo "prepare-carry: --driver: no tests/target/driver/{drv_api,rt_static}; run: mvn -B install" >&2; exit 1; }
    bash "$repo/tests/driver/discovery/build.sh" "$pack/disc-tools" >/dev/null
    seal driver "driver front end" "static-runtime programs, drv_api, rt_static, discovery tools"
fi

rm -f "$carry/pool.tar.xz"
if [ "$with_pool" = true ]; then
    etcd_bin="$(command -v etcd || true)"
    [ -n "$etcd_bin" ] || { echo "prepare-carry: --pool: no etcd here (apt-get install etcd-server)" >&2; exit 1; }
    pack="$(mktemp -d)"
    mkdir -p "$pack/cuda" "$pack/cuda-static"
    cp -p "$etcd_bin" "$pack/etcd"
    cp -p "$repo"/tests/target/pool/hold_session "$repo"/tests/target/pool/hold_session_static "$pack/" ||
        { echo "prepare-carry: --pool: no tests/target/pool programs; run: mvn -B install" >&2; exit 1; }
    cp -p "${programs[@]}" "$pack/cuda/"
    for d in "$repo"/tests/target/cuda/*.d; do [ -d "$d" ] && cp -pr "$d" "$pack/cuda/"; done
    # the static-runtime builds are ~1 MiB each: a few, for the plain sessions
    for p in device memory launch streams_events threads; do
        cp -p "$repo/tests/target/cuda-static/$p" "$pack/cuda-static/" 2>/dev/null || true
    done
    seal pool pool "etcd, hold_session, programs"
fi

# UCX for the client and the agents on the GPU machine: the libraries keep UCX's layout (modules in ucx/ next
# to libuct), without the verbs modules (no RDMA device there, and they would need rdma-core)
rm -f "$carry/ucx.tar.xz"
if [ -f /usr/lib/x86_64-linux-gnu/libucp.so.0 ] && [ -x "$repo/tests/target/driver/drv_bulk" ]; then
    pack="$(mktemp -d)"
    mkdir -p "$pack/lib/ucx"
    cp -L /usr/lib/x86_64-linux-gnu/libuc{p,t,s,m}.so.0 /usr/lib/x86_64-linux-gnu/libnuma.so.1 "$pack/lib/"
    cp -L /usr/lib/x86_64-linux-gnu/ucx/libuct_cma.so.0 "$pack/lib/ucx/"
    cp -p "$repo/tests/target/driver/drv_bulk" "$repo/tests/driver/drv_bulk.expected" "$pack/"
    seal ucx UCX "libucp and what it needs, drv_bulk"
else
    echo "prepare-carry: no UCX here (apt-get install libucx0) or no tests/target/driver/drv_bulk: the GPU run skips UCX" >&2
fi

# perf and the libraries it links, except the C/C++ runtime the GPU machine's newer Ubuntu has itself.
rm -f "$carry/perf.tar.gz"
if [ "$with_perf" = true ]; then
    perf_bin="$(command -v perf || true)"
    [ -n "$perf_bin" ] || { echo "prepare-carry: --with-perf: no perf here (apt-get install linux-perf)" >&2; exit 1; }
    pack="$(mktemp -d)"
    mkdir -p "$pack/lib"
    cp -L "$perf_bin" "$pack/perf"
    ldd "$perf_bin" | awk '$3 ~ /^\// {print $3}' |
        grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so' | xargs -r cp -L -t "$pack/lib"
    tar -czf "$carry/perf.tar.gz" -C "$pack" .
    rm -rf "$pack"
    echo "prepare-carry: perf -> .carry/perf.tar.gz ($(du -h "$carry/perf.tar.gz" | cut -f1))"
fi

echo "prepare-carry: $(basename "${bundles[0]}") -> .carry/vmcuda-bundle.tar.gz"
echo "prepare-carry: ${#programs[@]} test programs -> .carry/cuda/: $(cd "$carry/cuda" && ls | tr '\n' ' ')"
echo "prepare-carry: benchmarks -> .carry/bench/: $(cd "$carry/bench" && ls | tr '\n' ' ')"
size_mib=$(du -smc "$carry" | tail -1 | cut -f1)
echo "prepare-carry: carried size ${size_mib} MiB; device tool carry: [\".carry/vmcuda-bundle.tar.gz\", \".carry/cuda\", \".carry/bench\", \".carry/isolation\", \".carry/ucx.tar.xz\"]"
# The device tool carries at most 64 MiB in all (working tree included).
if [ "$size_mib" -ge 60 ]; then
    echo "prepare-carry: WARNING: close to or over the 64 MiB the device tool carries" >&2
fi
