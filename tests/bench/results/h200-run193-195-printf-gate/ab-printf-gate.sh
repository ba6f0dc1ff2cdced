#!/usr/bin/env bash
# A/B of the device-printf gate: the code as built (new: launches of kernels that cannot print leave the completion
# word in use) against HEAD 3b68a64's worker (before-gate: every launch kept it unused until a device-wide synchronize),
# carried in .carry/ab/before-gate.tar.gz (native/libvmcuda-worker.so), natively beside. Each mode of
# small_call_loop runs 1 s (mean us per call); rounds in turn. Then completion_quiet and completion through each, for
# the worker's count of copies answered on the word.
set -u
W=/tmp/ab; rm -rf $W; mkdir -p $W
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
NEW=$(ls -d $W/vmcuda-*)
VARIANTS="${VARIANTS:-before-gate new}"
for v in $VARIANTS; do [ $v = new ] && continue; cp -a $NEW $W/$v; tar xzf .carry/ab/$v.tar.gz -C $W/$v; done
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
LOOP=$PWD/.carry/bench/small_call_loop
MODES="${MODES:-after-kernel-d2h4 after-kernel-d2h:4096 after-kernel-d2h:65536 after-kernel-pinned-d2h:4096 after-kernel-pinned-d2h:1048576 after-kernel-pinned-h2d:1048576 d2h4 sync}"
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
# the test programs: stdout against native, and what each session's worker says of the word
for prog in completion_quiet completion; do
  LD_LIBRARY_PATH=$CUDA_LIB_DIR .carry/cuda/$prog > $W/native.$prog.out 2>&1
  for v in $VARIANTS; do
    B=$([ $v = new ] && echo $NEW || echo $W/$v)
    rm -rf $W/state; mkdir -p $W/state
    setsid $B/bin/vmcudad --listen 127.0.0.1:17300 --admin 127.0.0.1:17301 --state-dir $W/state --worker-lib-dir $B/native > $W/$v.$prog.daemon.log 2>&1 &
    d=$!
    for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/17300) 2>/dev/null && break; sleep 0.2; done
    VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH=$CUDA_LIB_DIR timeout 60 $B/bin/vmcuda run --appliance 127.0.0.1:17300 -- .carry/cuda/$prog > $W/$v.$prog.out 2>&1
    echo "$prog $v: exit $?, stdout $(cmp -s $W/native.$prog.out $W/$v.$prog.out && echo 'as native' || echo DIFFERS), $(tail -1 $W/$v.$prog.out)"
    cmp -s $W/native.$prog.out $W/$v.$prog.out || diff $W/native.$prog.out $W/$v.$prog.out | head -10
    grep -h "completion word\|device printf" $W/state/sessions/*/worker.log | sed 's/^[0-9:.]* vmcuda-worker\[[0-9]*\]: //' | sort | uniq -c | sort -rn | head -4
    kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
  done
done
