#!/usr/bin/env bash
# Builds the discovery tools into OUTDIR: libcuda.so.1 (the tracer) and procmap.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; outdir="$1"; mkdir -p "$outdir"
"$here/gen_exports.sh" "$here/../../../protocol/libcuda-exports.txt" "$outdir/exports.S"
{ echo "static const char *export_names[] = {"; sed 's/.*/  "&",/' "$here/../../../protocol/libcuda-exports.txt"; echo "};";
  echo "#define N_EXPORTS ((int)(sizeof export_names / sizeof export_names[0]))"; } > "$outdir/export_names.h"
gcc -O1 -g -fPIC -shared -Wall -I"$outdir" -o "$outdir/libcuda.so.1" -Wl,-soname,libcuda.so.1 \
    "$here/libcuda_trace.c" "$here/trace_common.S" "$outdir/exports.S" -ldl -lpthread
gcc -O1 -Wall -o "$outdir/procmap" "$here/procmap.c" -ldl
