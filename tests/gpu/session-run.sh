#!/usr/bin/env bash
# One device call of a development session (not part of any suite): the driver front end's programs and
# frameworks (SECTIONS_DRV), the runtime front end's run, and the GPT step's calls per step (VMCUDA_STATS,
# the step counts in STEPS) over the ring. Output under $OUT.
cd "$(dirname "$0")/../.." || exit 1
O="$OUT"
SECTIONS="${SECTIONS_DRV:-programs libs frameworks}" bash tests/gpu/run-driver-on-device.sh >"$O/drv.txt" 2>&1
cp "$O/diffs.txt" "$O/drv-diffs.txt" 2>/dev/null
mkdir -p /tmp/rt && OUT=/tmp/rt bash tests/gpu/run-on-device.sh >"$O/rt.txt" 2>&1
cp /tmp/rt/diffs.txt "$O/rt-diffs.txt" 2>/dev/null
for n in ${STEPS:-10 30}; do
    mkdir -p "/tmp/st$n"
    OUT="/tmp/st$n" VMCUDA_STATS=1 PROBE_GPT_STEPS=$n SECTIONS=probes PROBE_FRAMEWORKS=torch PROBE_ONLY=gpt \
        bash tests/gpu/run-driver-on-device.sh >"/tmp/st$n/run.txt" 2>&1
    { echo "== $n steps"; grep -h "time \|vmcuda stats" "/tmp/st$n/run.txt" "/tmp/st$n/probe_torch-vmcuda.err"; } >>"$O/stats.txt"
done
grep -E "^(FAIL|SKIP)|thread_order|framework_torch|RESULT" "$O/drv.txt" "$O/rt.txt"
cat "$O/stats.txt"
