#!/usr/bin/env bash
# A/B of synchronous 2-D copies to the device (cudaMemcpy2D from pageable rows) through the co-located ring, on one
# machine (run 181): this code (new: rows packed into the slot with streaming stores) against `plaingather` (the
# same tree, rows packed with memcpy; .carry/ab/plaingather.tar.gz: client/libvmcuda-client.so). Each mode of
# small_call_loop for 1 s (mean us per copy), three rounds in turn, native beside.
set -u
W=/tmp/abbox; rm -rf $W; mkdir -p $W
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
NEW=$(ls -d $W/vmcuda-*)
VARIANTS="${VARIANTS:-new plaingather}"
for v in $VARIANTS; do [ $v = new ] && continue; cp -a $NEW $W/$v; tar xzf .carry/ab/$v.tar.gz -C $W/$v; done
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
LOOP=$PWD/.carry/bench/small_call_loop
MODES="${MODES:-h2d2d:4096:64 h2d2d:4096:256 h2d2d:4096:1024 h2d2d:1000:1000 h2d2d:64:4096}"
for round in 1 2 3; do
  for m in $MODES; do echo "round $round native $m $(LD_LIBRARY_PATH=$CUDA_LIB_DIR $LOOP $m 1 | cut -f2)"; done
  for v in $VARIANTS; do
    B=$([ $v = new ] && echo $NEW || echo $W/$v)
    rm -rf $W/state; mkdir -p $W/state
    setsid $B/bin/vmcudad --listen 127.0.0.1:17310 --admin 127.0.0.1:17311 --state-dir $W/state --worker-lib-dir $B/native > $W/$v.$round.daemon.log 2>&1 &
    d=$!
    for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/17310) 2>/dev/null && break; sleep 0.2; done
    for m in $MODES; do
      echo "round $round $v $m $(VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH=$CUDA_LIB_DIR timeout 30 $B/bin/vmcuda run --appliance 127.0.0.1:17310 -- $LOOP $m 1 | cut -f2)"
    done
    kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
  done
done
