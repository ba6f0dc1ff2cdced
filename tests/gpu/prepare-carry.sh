#!/usr/bin/env bash
# Copies the current build outputs into .carry/ for tests/gpu/run-on-device.sh, which runs on
# the lent GPU machine (no Java, no network, builds nothing). Builds nothing itself either:
# run `mvn -B install` (or at least `mvn -B package`) first.
#
#   .carry/vmcuda-bundle.tar.gz   packaging/target/vmcuda-VERSION-linux-x86_64.tar.gz
#   .carry/cuda/*                 tests/target/cuda/* (the prebuilt CUDA test programs)
#
# Then call the device tool with carry [".carry/vmcuda-bundle.tar.gz", ".carry/cuda"] and command
# "bash tests/gpu/run-on-device.sh" (name the two paths: others may keep their own files in .carry/).
set -euo pipefail

repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
carry="$repo/.carry"
allow_incomplete=false
[ "${1:-}" = "--allow-incomplete" ] && allow_incomplete=true

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
cp -p "$repo"/tests/target/bench/* "$carry/bench/" 2>/dev/null || echo "prepare-carry: no benchmarks in tests/target/bench" >&2
cp -p "$repo"/tests/target/isolation/* "$carry/isolation/" 2>/dev/null || echo "prepare-carry: no isolation programs in tests/target/isolation" >&2

echo "prepare-carry: $(basename "${bundles[0]}") -> .carry/vmcuda-bundle.tar.gz"
echo "prepare-carry: ${#programs[@]} test programs -> .carry/cuda/: $(cd "$carry/cuda" && ls | tr '\n' ' ')"
echo "prepare-carry: benchmarks -> .carry/bench/: $(cd "$carry/bench" && ls | tr '\n' ' ')"
size_mib=$(du -smc "$carry/vmcuda-bundle.tar.gz" "$carry/cuda" "$carry/bench" | tail -1 | cut -f1)
echo "prepare-carry: carried size ${size_mib} MiB; device tool carry: [\".carry/vmcuda-bundle.tar.gz\", \".carry/cuda\", \".carry/bench\"]"
# The device tool carries at most 64 MiB in all (working tree included).
if [ "$size_mib" -ge 60 ]; then
    echo "prepare-carry: WARNING: close to or over the 64 MiB the device tool carries" >&2
fi
