#!/usr/bin/env bash
# Does an appliance that offers UCX (worker.ucx = true, as run-ucx-on-device.sh's main daemon) serve co-located (shm)
# sessions slower than one that does not (run-on-device.sh's daemon)? Runs 187 and 190 showed shm 5-15 % slower in
# the UCX script's table. Three daemons from the one bundle, sandboxed workers (root) as in both scripts:
#   plain   no config (run-on-device.sh's)
#   libdirs worker.cuda_lib_dirs = the real cudart dir:UCX libs (the UCX script's, without UCX)
#   ucx     that and worker.ucx = true (the UCX script's main daemon)
# Each small_call_loop mode runs 1 s (mean us a call); rounds in turn, native beside.
set -u
W=/tmp/abu; rm -rf $W; mkdir -p $W/ucx
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
B=$(ls -d $W/vmcuda-*)
tar -xJf .carry/ucx.tar.xz -C $W/ucx
UCX_LIB=$W/ucx/lib
real_cudart="$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')"
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
LOOP=$PWD/.carry/bench/small_call_loop
MODES="${MODES:-sync async d2h4 d2h:4096 pinned-d2h:1048576 pinned-h2d:1048576}"
: > $W/plain.properties
printf 'worker.cuda_lib_dirs = %s:%s\n' "$CUDA_LIB_DIR" "$UCX_LIB" > $W/libdirs.properties
printf 'worker.cuda_lib_dirs = %s:%s\nworker.ucx = true\n' "$CUDA_LIB_DIR" "$UCX_LIB" > $W/ucx.properties
for round in 1 2 3; do
  for m in $MODES; do echo "round $round native $m $(LD_LIBRARY_PATH=$CUDA_LIB_DIR $LOOP $m 1 | cut -f2)"; done
  for v in plain libdirs ucx; do
    rm -rf $W/state-$v; mkdir -p $W/state-$v
    setsid $B/bin/vmcudad --listen 127.0.0.1:17300 --admin 127.0.0.1:17301 --state-dir $W/state-$v --config $W/$v.properties \
      --worker-lib-dir $B/native > $W/$v.$round.daemon.log 2>&1 < /dev/null &
    d=$!
    for i in $(seq 300); do grep -q "listening on" $W/$v.$round.daemon.log 2>/dev/null && break; sleep 0.2; done
    for m in $MODES; do
      echo "round $round $v $m $(VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH=$CUDA_LIB_DIR timeout 30 $B/bin/vmcuda run --appliance 127.0.0.1:17300 -- $LOOP $m 1 2>>$W/$v.err | cut -f2)"
    done
    kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
    sleep 1
  done
done
for v in plain libdirs ucx; do [ -s $W/$v.err ] && { echo "== $v stderr"; sort $W/$v.err | uniq -c | head -5; }; done
for v in plain libdirs ucx; do echo "== $v: $(grep -ho 'workers sandboxed[^(]*\|workers run unsandboxed[^;]*\|bulk copies over UCX [a-z ]*' $W/$v.1.daemon.log | paste -sd';')"; done
for v in plain libdirs ucx; do echo "== $v worker: $(cat $W/state-$v/sessions/*/worker.log 2>/dev/null | grep -i 'cudart\|runtime\|library' | head -3 | paste -sd'|')"; done
