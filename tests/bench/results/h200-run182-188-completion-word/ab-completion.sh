#!/usr/bin/env bash
# A/B of the completion word (protocol 7) on one machine: the code as built (new) against the code before it
# (before: libvmcuda-client.so and libvmcuda-worker.so built from 9514337 with PROTO_VERSION 7, carried in
# .carry/ab/before.tar.gz), natively beside. Each mode of small_call_loop runs 1 s (mean us per call); rounds in turn.
set -u
W=/tmp/ab; rm -rf $W; mkdir -p $W
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
NEW=$(ls -d $W/vmcuda-*)
VARIANTS="${VARIANTS:-before new}"
for v in $VARIANTS; do [ $v = new ] && continue; cp -a $NEW $W/$v; tar xzf .carry/ab/$v.tar.gz -C $W/$v; done
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
LOOP=$PWD/.carry/bench/small_call_loop
MODES="${MODES:-d2h4 d2h:4096 d2h:65536 pinned-d2h:4096 pinned-h2d:4096 pinned-d2h:1048576 pinned-h2d:1048576 pinned-d2h:4194304 sync}"
for round in 1 2; do
  for m in $MODES; do echo "round $round native $m $(LD_LIBRARY_PATH=$CUDA_LIB_DIR $LOOP $m 1 | cut -f2)"; done
  for v in $VARIANTS; do
    B=$([ $v = new ] && echo $NEW || echo $W/$v)
    rm -rf $W/state; mkdir -p $W/state
    setsid $B/bin/vmcudad --listen 127.0.0.1:17300 --admin 127.0.0.1:17301 --state-dir $W/state --worker-lib-dir $B/native > $W/$v.$round.daemon.log 2>&1 &
    d=$!
    for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/17300) 2>/dev/null && break; sleep 0.2; done
    for m in $MODES; do
      echo "round $round $v $m $(VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH=$CUDA_LIB_DIR timeout 30 $B/bin/vmcuda run --appliance 127.0.0.1:17300 -- $LOOP $m 1 2>>$W/$v.err | cut -f2)"
    done
    kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
  done
done
for v in $VARIANTS; do [ -s $W/$v.err ] && { echo "== $v stderr"; sort $W/$v.err | uniq -c | head -5; }; done
grep -h "completion\|call pipe" $W/state/sessions/*/worker.log 2>/dev/null | sort | uniq -c | head
