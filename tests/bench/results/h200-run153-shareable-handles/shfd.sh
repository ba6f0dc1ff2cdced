#!/bin/bash
# Runs shfd.cu natively: exporter and importer as different uids, each in its own PID (and mount) namespace.
set -u
cd "$(dirname "$0")"
nvcc -O2 -o /tmp/shfd shfd.cu -lcuda || exit 1
for mode in ${MODES:-vmm pool}; do
  for variant in ${VARIANTS:-same-uid cross-uid}; do
    sock=/dev/shm/shfd-$mode-$variant.sock
    iu=1001; [ $variant = cross-uid ] && iu=1002
    echo "== $mode $variant"
    unshare -p -f -m --mount-proc setpriv --reuid=1001 --regid=1001 --clear-groups /tmp/shfd export $mode $sock > /tmp/e.txt 2>&1 &
    ep=$!
    sleep 1
    timeout 30 unshare -p -f -m --mount-proc setpriv --reuid=$iu --regid=$iu --clear-groups /tmp/shfd import $mode $sock; echo "importer rc=$?"
    wait $ep; echo "exporter rc=$?"; cat /tmp/e.txt
  done
done
