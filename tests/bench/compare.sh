#!/usr/bin/env bash
# Runs one benchmark binary natively, through vmcuda over TCP, and through vmcuda's shared-memory
# ring, back to back in one run, and prints a table with the vmcuda/native ratios.
# Usage: compare.sh BENCH_BINARY VMCUDA_LAUNCHER APPLIANCE [ARGS...]
# GB/s rows: ratio > 1 means vmcuda is faster; us rows: ratio > 1 means vmcuda is slower.
set -uo pipefail
bin=$1 launcher=$2 appliance=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "$@" > "$tmp/native" || { echo "native run failed" >&2; exit 1; }
for t in tcp shm; do
  VMCUDA_TRANSPORT=$t "$launcher" run --appliance "$appliance" -- "$bin" "$@" > "$tmp/$t" ||
    { echo "vmcuda ($t) run failed" >&2; exit 1; }
done
printf '%-34s %10s %10s %10s %8s %8s  %s\n' metric native tcp shm tcp/nat shm/nat unit
join -t $'\t' <(sort "$tmp/native") <(sort "$tmp/tcp") | join -t $'\t' - <(sort "$tmp/shm") | sort -V |
  awk -F'\t' '{ r1 = ($2 > 0) ? $4 / $2 : 0; r2 = ($2 > 0) ? $6 / $2 : 0;
                printf "%-34s %10.3f %10.3f %10.3f %8.3f %8.3f  %s\n", $1, $2, $4, $6, r1, r2, $3 }'
