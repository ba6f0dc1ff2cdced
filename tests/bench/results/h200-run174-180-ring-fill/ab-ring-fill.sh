#!/usr/bin/env bash
# A/B of synchronous pageable copies to the device through the co-located ring, on one machine (runs 177-178): the
# code as built (new: streaming-store fill, uploads that fit a slot in pieces) against variants built from the
# same tree with one thing changed (.carry/ab/NAME.tar.gz: client/libvmcuda-client.so, native/libvmcuda-worker.so):
#   plainfill  memcpy fill, pieces as new        nopieces  streaming fill, one block per slot as before
#   min256k    streaming fill, pieces >= 256 KiB  neither   memcpy fill, one block per slot (the code before)
# Each: small_call_loop h2d:BYTES for 1 s (mean us per copy), three rounds in turn, native beside.
set -u
W=/tmp/ab; rm -rf $W; mkdir -p $W
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
NEW=$(ls -d $W/vmcuda-*)
VARIANTS="${VARIANTS:-new plainfill neither}"
for v in $VARIANTS; do [ $v = new ] && continue; cp -a $NEW $W/$v; tar xzf .carry/ab/$v.tar.gz -C $W/$v; done
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
LOOP=$PWD/.carry/bench/small_call_loop
SIZES="${SIZES:-65536 262144 1048576 4194304 16777216 268435456 1073741824}"
for round in 1 2 3; do
  for s in $SIZES; do echo "round $round native h2d:$s $(LD_LIBRARY_PATH=$CUDA_LIB_DIR $LOOP h2d:$s 1 | cut -f2)"; done
  for v in $VARIANTS; do
    B=$([ $v = new ] && echo $NEW || echo $W/$v)
    rm -rf $W/state; mkdir -p $W/state
    setsid $B/bin/vmcudad --listen 127.0.0.1:17300 --admin 127.0.0.1:17301 --state-dir $W/state --worker-lib-dir $B/native > $W/$v.$round.daemon.log 2>&1 &
    d=$!
    for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/17300) 2>/dev/null && break; sleep 0.2; done
    for s in $SIZES; do
      echo "round $round $v h2d:$s $(VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH=$CUDA_LIB_DIR timeout 30 $B/bin/vmcuda run --appliance 127.0.0.1:17300 -- $LOOP h2d:$s 1 | cut -f2)"
    done
    kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
  done
done
