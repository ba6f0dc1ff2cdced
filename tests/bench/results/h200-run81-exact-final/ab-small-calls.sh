#!/usr/bin/env bash
# A/B of the small-call figures on one machine: this session's client and worker libraries (new) against
# those of 74fb7a7 (old), alternating, the same daemon and bench binary. Run from the repository root on the GPU
# machine (run 81b), with .carry/vmcuda-bundle.tar.gz, .carry/bench and .carry/ab-old.tar.gz (old client/*.so* and
# native/libvmcuda-worker.so).
set -u
W=/tmp/ab; rm -rf $W; mkdir -p $W
tar xzf .carry/vmcuda-bundle.tar.gz -C $W
NEW=$(ls -d $W/vmcuda-*); cp -a $NEW $W/old-bundle; OLD=$W/old-bundle
tar xzf .carry/ab-old.tar.gz -C $OLD
for run in new1 old1 new2 old2 new3 old3; do
  B=$([ "${run%?}" = new ] && echo $NEW || echo $OLD)
  rm -rf $W/state; mkdir -p $W/state
  setsid $B/bin/vmcudad --listen 127.0.0.1:17300 --admin 127.0.0.1:17301 --state-dir $W/state > $W/$run.daemon.log 2>&1 &
  d=$!
  for i in $(seq 50); do curl -sf http://127.0.0.1:17301/readyz >/dev/null 2>&1 && break; sleep 0.2; done
  echo "== $run ($(basename $B))"
  COLUMNS="shm tcp" timeout -k 5 120 bash tests/bench/compare.sh .carry/bench/vmcuda_bench $B/bin/vmcuda 127.0.0.1:17300 262144 2>/dev/null |
    grep -E "^metric|latency|round_trip|launch|pageable_(4|16)KiB"
  kill -TERM -- -$d 2>/dev/null; wait $d 2>/dev/null
done
