#!/usr/bin/env bash
# Runs one benchmark binary natively and through vmcuda over several transports, back to back in one run,
# and prints a table with the vmcuda/native ratios.
# Usage: compare.sh BENCH_BINARY VMCUDA_LAUNCHER APPLIANCE [ARGS...]
# COLUMNS (default "tcp shm") names the vmcuda runs, each LABEL[:VAR=VALUE,VAR=VALUE...][@HOST:PORT]: the
# run gets VMCUDA_TRANSPORT=LABEL unless the settings name it, then the settings (e.g. UCX_TLS=tcp), and goes
# to APPLIANCE unless @HOST:PORT names another. Example:
#   COLUMNS="tcp shm ucx-tcp:VMCUDA_TRANSPORT=ucx,UCX_TLS=tcp" compare.sh ...
# GB/s rows: ratio > 1 means vmcuda is faster; us rows: ratio > 1 means vmcuda is slower. With the default
# columns the table is `metric native tcp shm tcp/nat shm/nat unit` (tests/bench/plot.py reads that form).
set -uo pipefail
bin=$1 launcher=$2 appliance=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "$@" > "$tmp/native" || { echo "native run failed" >&2; exit 1; }
labels=()
for column in ${COLUMNS:-tcp shm}; do
  spec=${column%%@*} target=$appliance
  [ "$spec" != "$column" ] && target=${column#*@}
  label=${spec%%:*} settings=()
  [ "$label" != "$spec" ] && IFS=, read -r -a settings <<< "${spec#*:}"
  env VMCUDA_TRANSPORT="$label" "${settings[@]}" "$launcher" run --appliance "$target" -- "$bin" "$@" > "$tmp/$label" ||
    { echo "vmcuda ($column) run failed" >&2; exit 1; }
  labels+=("$label")
done
# one row per metric of the native run, in version order: native, each column, each column's ratio, unit
{
  printf 'metric\tnative'; printf '\t%s' "${labels[@]}"; printf '\t%s/nat' "${labels[@]}"; printf '\tunit\n'
  awk -F'\t' -v n=${#labels[@]} '
    FNR == 1 { file++ }
    file == 1 { value[$1, 0] = $2; unit[$1] = $3; order[++rows] = $1; next }
    { value[$1, file - 1] = $2 }
    END {
      for (r = 1; r <= rows; r++) {
        k = order[r]; line = sprintf("%s\t%.3f", k, value[k, 0])
        for (c = 1; c <= n; c++) line = line sprintf("\t%.3f", value[k, c])
        for (c = 1; c <= n; c++) line = line sprintf("\t%.3f", value[k, 0] > 0 ? value[k, c] / value[k, 0] : 0)
        print line "\t" unit[k]
      }
    }' "$tmp/native" $(printf "$tmp/%s " "${labels[@]}") | sort -V
} | awk -F'\t' '{ printf "%-34s", $1; for (i = 2; i < NF; i++) printf " %10s", $i; printf "  %s\n", $NF }'
