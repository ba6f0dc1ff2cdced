#!/bin/bash
# DDP through vmcuda and natively with NCCL's INFO log: which transport NCCL picks between the two GPUs.
REPO=$(pwd); W=/tmp/ddpi; rm -rf $W; mkdir -p $W "$OUT"
tar -xzf .carry/vmcuda-bundle.tar.gz -C $W && ROOT=$(ls -d $W/vmcuda-*/ | head -1) && ROOT=${ROOT%/}
setsid $ROOT/bin/vmcudad --listen 127.0.0.1:17470 --admin 127.0.0.1:17471 --state-dir $W/state > $OUT/daemon.log 2>&1 < /dev/null &
for _ in $(seq 1 100); do grep -q "listening on" $OUT/daemon.log && break; sleep 0.2; done
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,TUNING
DDP_PORT=29521 timeout 200 python3 tests/gpu/ddp_smoke.py > $OUT/native.out 2> $OUT/native.err
VMCUDA_GPUS=2 VMCUDA_APPLIANCE=127.0.0.1:17470 DDP_PORT=29522 timeout 200 bash tests/gpu/gpuless.sh $ROOT/client python3 tests/gpu/ddp_smoke.py > $OUT/vmcuda.out 2> $OUT/vmcuda.err
for f in native vmcuda; do echo "== $f"; grep -h "via\|ddp timed\|NVLink\|nvlink\|NVL\|Pattern\|Trees\|P2P\|SHM\|topo\|Topo" $OUT/$f.err | sort | uniq -c | sort -rn | head -25; done
