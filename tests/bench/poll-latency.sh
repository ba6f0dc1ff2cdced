#!/usr/bin/env bash
# Small-call latency with and without the readers' short poll before blocking (VMCUDA_POLL_US,
# protocol/src/main/c/vmc_io.c), next to this host's loopback round trip, in turns, on the GPU machine.
#   poll-latency.sh BENCH_DIR BUNDLE_ROOT CUDA_LIB_DIR [ROUNDS]
# Two daemons: one whose workers never poll (VMCUDA_POLL_US=0), one with the default (50 us); the client
# gets the same setting as its daemon. Each round: tcp_ceiling (its 64-byte round trip), vmcuda_bench 4096
# natively, over TCP without polling, over TCP with polling. Prints the latency rows, one line per round.
set -uo pipefail
bench=$1 root=$2 cudalib=$3 rounds=${4:-3}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done; sleep 1; for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done; rm -rf "$work"' EXIT
start() { # PORT POLL_US
    mkdir -p "$work/s$1"
    VMCUDA_POLL_US=$2 setsid "$root/bin/vmcudad" --listen "127.0.0.1:$1" --admin "127.0.0.1:$(($1 + 1))" \
        --state-dir "$work/s$1" --worker-lib-dir "$root/native" >"$work/d$1.log" 2>&1 </dev/null &
    pids+=($!)
}
start 17600 0
start 17610 50
for p in 17600 17610; do
    for _ in $(seq 1 300); do grep -q "listening on" "$work/d$p.log" 2>/dev/null && break; sleep 0.2; done
done
rows='device_get_attribute_latency|get_device_properties_latency|memcpy_4B_d2h_latency|memcpy_4B_h2d_latency|launch_plus_sync_latency|launch_async_per_kernel'
pick() { grep -E "^($rows)	" | sort | awk -F'\t' '{printf "%s=%s ", $1, $2}'; }
for r in $(seq 1 "$rounds"); do
    echo "round $r: loopback $(timeout 60 "$bench/tcp_ceiling" | grep round_trip | cut -f2) us"
    echo "  native:       $(LD_LIBRARY_PATH=$cudalib timeout 60 "$bench/vmcuda_bench" 4096 | pick)"
    echo "  tcp, poll 0:  $(VMCUDA_POLL_US=0 VMCUDA_TRANSPORT=tcp LD_LIBRARY_PATH=$cudalib timeout 60 "$root/bin/vmcuda" run \
        --appliance 127.0.0.1:17600 -- "$bench/vmcuda_bench" 4096 | pick)"
    echo "  tcp, poll 50: $(VMCUDA_POLL_US=50 VMCUDA_TRANSPORT=tcp LD_LIBRARY_PATH=$cudalib timeout 60 "$root/bin/vmcuda" run \
        --appliance 127.0.0.1:17610 -- "$bench/vmcuda_bench" 4096 | pick)"
done
