#!/usr/bin/env bash
# Writes exports.S: one exported stub per name of libcuda-exports.txt (except those libcuda_trace.c
# defines itself) that sets %r11 to its index and enters trace_common.
set -euo pipefail
in="$1"; out="$2"
{
  echo "    .text"
  i=0
  while read -r name; do
    [ -z "$name" ] && continue
    case "$name" in cuGetProcAddress|cuGetProcAddress_v2|cuGetExportTable) i=$((i+1)); continue ;; esac
    echo "    .globl $name"
    echo "    .type $name, @function"
    echo "$name:"
    echo "    mov \$$i, %r11"
    echo "    jmp trace_common"
    i=$((i+1))
  done < "$in"
  echo '    .section .note.GNU-stack,"",@progbits'
} > "$out"
