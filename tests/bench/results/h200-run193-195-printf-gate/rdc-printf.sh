#!/usr/bin/env bash
# completion.cu built with relocatable device code for a virtual architecture only (-rdc=true -arch=compute_90,
# -cudart shared): its registered fat binary is empty and its kernels, the printing one included, are in the
# prelinked list (review of 2026-11-27). Through vmcuda (shm) its stdout must be native's: kernel printf before the
# host lines after each copy. Also completion_quiet built the same way, whose copies after kernels may use the word.
set -u
W=/tmp/rdc; rm -rf $W; mkdir -p $W
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
B=$(ls -d $W/vmcuda-*)
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
for p in completion completion_quiet; do
  nvcc -cudart shared -rdc=true -arch=compute_90 -Itests/cuda -o $W/$p-rdc tests/cuda/$p.cu 2>&1 | grep -v -i warning
done
setsid $B/bin/vmcudad --listen 127.0.0.1:17320 --admin 127.0.0.1:17321 --state-dir $W/state --worker-lib-dir $B/native > $W/daemon.log 2>&1 < /dev/null &
d=$!
for i in $(seq 150); do grep -q "listening on" $W/daemon.log 2>/dev/null && break; sleep 0.2; done
for p in completion-rdc completion_quiet-rdc; do
  LD_LIBRARY_PATH=$CUDA_LIB_DIR $W/$p > $W/$p.native 2>&1
  VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH=$CUDA_LIB_DIR timeout 60 $B/bin/vmcuda run --appliance 127.0.0.1:17320 -- $W/$p > $W/$p.vmcuda 2>&1
  rc=$?
  echo "$p: exit $rc, stdout $(cmp -s $W/$p.native $W/$p.vmcuda && echo 'as native' || echo DIFFERS), last line: $(tail -1 $W/$p.vmcuda)"
  cmp -s $W/$p.native $W/$p.vmcuda || diff $W/$p.native $W/$p.vmcuda | head -10
  s=$(ls -t $W/state/sessions | head -1)
  grep -h "device printf\|completion word" $W/state/sessions/$s/worker.log | sed 's/^[0-9:.]* vmcuda-worker\[[0-9]*\]: //' | head -6
done
grep -h "kernel line\|host line" $W/completion-rdc.vmcuda | head -6
kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
exit 0
