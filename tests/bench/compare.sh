#!/usr/bin/env bash
# Runs one benchmark binary natively and through vmcuda, back to back, and prints a table with the
# vmcuda/native ratio. Usage: compare.sh BENCH_BINARY VMCUDA_LAUNCHER APPLIANCE [ARGS...]
# (GB/s rows: ratio > 1 means vmcuda is faster; us rows: ratio > 1 means vmcuda is slower.)
set -uo pipefail
bin=$1 launcher=$2 appliance=$3
shift 3
tmp=$(mktemp -d)
"$bin" "$@" > "$tmp/native" || { echo "native run failed" >&2; exit 1; }
"$launcher" run --appliance "$appliance" -- "$bin" "$@" > "$tmp/vmcuda" || { echo "vmcuda run failed" >&2; exit 1; }
printf '%-34s %12s %12s %8s  %s\n' metric native vmcuda ratio unit
join -t $'\t' <(sort "$tmp/native") <(sort "$tmp/vmcuda") | sort -V |
  awk -F'\t' '{ r = ($2 > 0) ? $4 / $2 : 0; printf "%-34s %12.3f %12.3f %8.3f  %s\n", $1, $2, $4, r, $3 }'
rm -rf "$tmp"
