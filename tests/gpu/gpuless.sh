#!/usr/bin/env bash
# Runs a command as it would run in a client VM without a GPU, on the GPU machine itself (root):
# in a private mount namespace where every /dev/nvidia* node is /dev/null (directories such as
# /dev/nvidia-caps become an empty tmpfs), NVIDIA's libcuda.so.1 files are replaced by vmcuda's
# (so that a program that opens the driver by absolute path or through the ldconfig cache gets ours, as
# with the client package installed), and vmcuda's client libraries come first on LD_LIBRARY_PATH.
# The appliance daemon runs outside, with the real driver.
#   gpuless.sh CLIENT_LIB_DIR COMMAND ARGS...
#   gpuless.sh --check CLIENT_LIB_DIR     prints what the namespace hides, and fails if a GPU is reachable
set -euo pipefail

check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
[ $# -ge 1 ] || { echo "usage: gpuless.sh [--check] CLIENT_LIB_DIR [COMMAND ARGS...]" >&2; exit 2; }
client="$(readlink -f "$1")"
shift
[ -f "$client/libcuda.so.1" ] || { echo "gpuless.sh: no libcuda.so.1 in $client" >&2; exit 2; }
$check || [ $# -ge 1 ] || { echo "gpuless.sh: no COMMAND" >&2; exit 2; }

# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --propagation private -- bash -c '
set -euo pipefail
client="$1"; check="$2"; shift 2
hidden=0
for node in /dev/nvidia*; do
    [ -e "$node" ] || continue
    if [ -d "$node" ]; then mount -t tmpfs -o size=4k,mode=0755 none "$node"; else mount --bind /dev/null "$node"; fi
    hidden=$((hidden + 1))
done
replaced=0
for lib in $(ldconfig -p | awk "/libcuda\\.so(\\.1)? /{print \$NF}" | xargs -r readlink -f | sort -u); do
    case "$lib" in "$client"/*) continue ;; esac
    mount --bind "$client/libcuda.so.1" "$lib"
    replaced=$((replaced + 1))
done
export LD_LIBRARY_PATH="$client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$check" = true ]; then
    echo "gpuless: $hidden /dev/nvidia* nodes hidden, $replaced libcuda files replaced by $client/libcuda.so.1"
    if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
        echo "gpuless: FAIL: nvidia-smi still sees a GPU"; exit 1
    fi
    echo "gpuless: nvidia-smi sees no GPU"
    exit 0
fi
exec "$@"
' gpuless "$client" "$check" "$@"
