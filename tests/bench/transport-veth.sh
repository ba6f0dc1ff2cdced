#!/usr/bin/env bash
# Throughput of vmcuda's bulk-data stream itself, without a GPU: over loopback, and over a veth pair
# between two network namespaces at MTU 1500 and at MTU 9000 (tests/bench/block_stream.c: the same
# 16-byte frames, raw-byte streams, block-size pieces and socket options as the shim and the worker).
# Needs root (ip netns) and iproute2; builds block_stream with cc when BLOCK_STREAM is not given.
# Not part of `mvn verify`; see BENCHMARKS.md "Transport without a GPU".
#
#   sudo tests/bench/transport-veth.sh [--quick] [block_stream client options...]
#     --quick   blocks 1M,4M,16M, size 128M, best of 2 (seconds instead of about a minute per link)
#     options   passed to every block_stream client: --blocks B,.. --sizes S,.. --reps N
#   VETH_OFFLOAD=off  also turn TSO/GSO/GRO off on the veth pair (needs ethtool): with them on (the
#                     default) the kernel moves up to 64 KiB per packet whatever the MTU
#
# Uses only the namespaces it creates (vmcb-tx-PID, vmcb-rx-PID; addresses 192.168.250.1/.2 inside
# them) and 127.0.0.1; removes both namespaces (and so the veth pair) on exit, also on errors and ^C.
# Output: the raw "metric<TAB>value<TAB>unit" lines of each link, then one table:
#   metric  loopback  veth@1500  veth@9000  9000/1500  unit
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
opts=()
if [ "${1:-}" = "--quick" ]; then
    shift
    opts=(--blocks 1M,4M,16M --sizes 128M --reps 2)
fi
opts+=("$@")
STEP_TIMEOUT="${STEP_TIMEOUT:-300}" # seconds per link

[ "$(id -u)" = 0 ] || { echo "transport-veth: needs root (network namespaces)" >&2; exit 1; }
command -v ip >/dev/null || { echo "transport-veth: needs iproute2 (ip)" >&2; exit 1; }

tmp="$(mktemp -d)"
ns_tx="vmcb-tx-$$" ns_rx="vmcb-rx-$$" if_tx="vmcb$$t" if_rx="vmcb$$r"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    ip netns del "$ns_tx" 2>/dev/null || true
    ip netns del "$ns_rx" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin="${BLOCK_STREAM:-}"
if [ -z "$bin" ]; then
    bin="$tmp/block_stream"
    "${CC:-cc}" -O2 -o "$bin" "$here/block_stream.c" -lpthread
fi

echo "# host: $(nproc) cores, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "# block_stream options: ${opts[*]:-(defaults: blocks 128K..128M, sizes 32M,128M,624M, best of 3)}"

echo "# loopback (127.0.0.1, this namespace)"
timeout "$STEP_TIMEOUT" "$bin" loopback --label loopback "${opts[@]}" | tee "$tmp/loopback"

ip netns add "$ns_tx"
ip netns add "$ns_rx"
ip link add "$if_tx" type veth peer name "$if_rx"
ip link set "$if_tx" netns "$ns_tx"
ip link set "$if_rx" netns "$ns_rx"
ip -n "$ns_tx" addr add 192.168.250.1/30 dev "$if_tx"
ip -n "$ns_rx" addr add 192.168.250.2/30 dev "$if_rx"
for ns in "$ns_tx" "$ns_rx"; do ip -n "$ns" link set lo up; done
ip -n "$ns_tx" link set "$if_tx" up
ip -n "$ns_rx" link set "$if_rx" up

if [ "${VETH_OFFLOAD:-on}" = off ]; then # segmentation/receive offloads off: every packet is one MTU
    command -v ethtool >/dev/null || { echo "transport-veth: VETH_OFFLOAD=off needs ethtool" >&2; exit 1; }
    ip netns exec "$ns_tx" ethtool -K "$if_tx" tso off gso off gro off >/dev/null 2>&1
    ip netns exec "$ns_rx" ethtool -K "$if_rx" tso off gso off gro off >/dev/null 2>&1
fi
if command -v ethtool >/dev/null; then
    echo "# veth offloads (VETH_OFFLOAD=${VETH_OFFLOAD:-on}): $(ip netns exec "$ns_tx" ethtool -k "$if_tx" 2>/dev/null |
        grep -E '^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload):' | tr -s ' ' | paste -sd' ')"
fi
for mtu in 1500 9000; do
    ip -n "$ns_tx" link set "$if_tx" mtu "$mtu"
    ip -n "$ns_rx" link set "$if_rx" mtu "$mtu"
    echo "# veth pair, MTU $mtu ($(ip -n "$ns_tx" -o link show "$if_tx" | grep -o 'mtu [0-9]*'); server in $ns_rx, client in $ns_tx)"
    ip netns exec "$ns_rx" timeout "$STEP_TIMEOUT" "$bin" server 192.168.250.2 7399 2>/dev/null &
    server=$!
    timeout "$STEP_TIMEOUT" ip netns exec "$ns_tx" "$bin" client 192.168.250.2 7399 --label "veth$mtu" "${opts[@]}" |
        tee "$tmp/veth$mtu"
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null || true
    server=""
done

# one table: the link name taken off each metric, the three links side by side, in measurement order
strip() { sed -E 's/^[a-z0-9]+_//' "$1"; }
echo
printf '%-32s %10s %10s %10s %10s  %s\n' metric loopback veth@1500 veth@9000 9000/1500 unit
awk -F'\t' '
    FILENAME == ARGV[1] { v1500[$1] = $2; next }
    FILENAME == ARGV[2] { v9000[$1] = $2; next }
    {
        a = ($1 in v1500) ? v1500[$1] : "n/a"; b = ($1 in v9000) ? v9000[$1] : "n/a"
        r = (a != "n/a" && b != "n/a" && a + 0 > 0) ? sprintf("%.3f", b / a) : "n/a"
        printf "%-32s %10.3f %10s %10s %10s  %s\n", $1, $2, a, b, r, $3
    }' <(strip "$tmp/veth1500") <(strip "$tmp/veth9000") <(strip "$tmp/loopback")
