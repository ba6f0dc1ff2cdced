#!/usr/bin/env bash
# A pool of two appliances on the lent GPU machine (issue 17): a real etcd and two vmcudad daemons from the
# bundle, both on the machine's one GPU, each registered in etcd; clients GPU-less as in a client VM
# (tests/gpu/gpuless.sh) name only the pool (VMCUDA_CLUSTER) and are placed by it. Checks: both appliances
# registered with the GPU; four clients held at once spread two and two; the project's programs, two at a
# time so that placement uses both appliances, with native-identical stdout and exit code (shared- and
# static-runtime builds); one daemon SIGKILLed with its workers leaves etcd within its lease and later
# programs all run on the other. Builds nothing: tests/gpu/prepare-carry.sh --pool put the bundle and
# .carry/pool.tar.xz (etcd, hold_session, the programs) in .carry/. Device tool call:
#     run(command="bash tests/gpu/run-pool-on-device.sh", carry=[".carry/vmcuda-bundle.tar.gz", ".carry/pool.tar.xz"])
# $OUT gets summary.txt (also on stdout), diffs.txt, pool-1.log, pool-2.log, etcd.log. Exit 0 when all passed.
set -uo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-pool-out}"
WORK=/tmp/vmcuda-pool
TIMEOUT="${VMCUDA_TEST_TIMEOUT:-120}"
ETCD_PORT=23790
TTL=8 # cluster.ttl_s' default
# shellcheck source=common.sh
. "$REPO/tests/gpu/common.sh"
DIFFS="$OUT/diffs.txt"
: >"$DIFFS"
mkdir -p "$WORK"/{native,pool}
finish_more() { [ -s "$DIFFS" ] || rm -f "$DIFFS"; }

say "== vmcuda pool of two appliances on one GPU $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | paste -sd';')"
tar -xJf "$CARRY/pool.tar.xz" -C "$WORK/carried" || { fail "cannot extract $CARRY/pool.tar.xz (prepare-carry.sh --pool)"; exit 1; }
CLIENT="$ROOT/client"
C="$WORK/carried"
ETCD_URL="http://127.0.0.1:$ETCD_PORT"

setsid "$C/etcd" --name pool --data-dir "$WORK/etcd-data" --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster pool=http://127.0.0.1:23800 >"$OUT/etcd.log" 2>&1 </dev/null &
PIDS+=($!)
for _ in $(seq 1 100); do curl -s "$ETCD_URL/health" 2>/dev/null | grep -q true && break; sleep 0.2; done
curl -s "$ETCD_URL/health" | grep -q true || { fail "etcd did not start"; tail -5 "$OUT/etcd.log"; exit 1; }
say "etcd: $("$C/etcd" --version | head -1)"

declare -A DPID PORT
for n in 1 2; do
    PORT[$n]=$((17270 + 10 * n))
    printf 'cluster.etcd = %s\ncluster.name = pool-%s\n' "$ETCD_URL" "$n" >"$WORK/pool-$n.properties"
    start_daemon "$OUT/pool-$n.log" "${PORT[$n]}" "$WORK/state-$n" "$WORK/pool-$n.properties"
    DPID[$n]=$DAEMON_PID
done

# the pool's registrations as "NAME GPUS SESSIONS" lines (etcd's JSON gateway; python3 decodes)
registrations() {
    curl -s -X POST "$ETCD_URL/v3/kv/range" -d "{\"key\":\"$(printf /vmcuda/appliances/ | base64 -w0)\",\"range_end\":\"$(printf /vmcuda/appliances0 | base64 -w0)\"}" |
        python3 -c 'import sys, json, base64
for kv in json.load(sys.stdin).get("kvs", []):
    r = json.loads(base64.b64decode(kv["value"]))
    print(r["name"], len(r["gpus"]), r["sessions"], ",".join(g["name"] for g in r["gpus"]))'
}
for _ in $(seq 1 150); do [ "$(registrations | awk '$2 >= 1' | wc -l)" = 2 ] && break; sleep 0.2; done
registrations | sed 's/^/registered: /' | tee -a "$SUMMARY"
[ "$(registrations | awk '$2 >= 1' | wc -l)" = 2 ] || { fail "the two appliances did not both register with a GPU"; for f in "$OUT"/pool-*.log; do tail -n 3 "$f"; done; exit 1; }

# run_prog MODE NAME COMMAND...  native: the real driver; pool: GPU-less, placed by the pool
run_prog() {
    local mode="$1" name="$2" t0
    shift 2
    t0="$(now)"
    if [ "$mode" = native ]; then
        (cd "$WORK" && LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" "$@" >"$WORK/native/$name.out" 2>"$WORK/native/$name.err" </dev/null)
    else
        (cd "$WORK" && VMCUDA_CLUSTER="$ETCD_URL" VMCUDA_VERBOSE=1 LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" \
            bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" "$@" >"$WORK/pool/$name.out" 2>"$WORK/pool/$name.err" </dev/null)
    fi
    echo $? >"$WORK/$mode/$name.rc"
}
placed_on() { grep -o 'session [0-9]* on 127.0.0.1:[0-9]*' "$1" | head -1 | sed 's/.*://' | sed "s/^${PORT[1]}\$/pool-1/;s/^${PORT[2]}\$/pool-2/"; }
judge() {
    local name="$1" why=""
    [ "$(cat "$WORK/native/$name.rc")" = 0 ] || why="native exit $(cat "$WORK/native/$name.rc")"
    [ "$(cat "$WORK/pool/$name.rc")" = "$(cat "$WORK/native/$name.rc")" ] || why="${why:+$why; }exit $(cat "$WORK/pool/$name.rc") vs native"
    cmp -s "$WORK/native/$name.out" "$WORK/pool/$name.out" || why="${why:+$why; }stdout differs"
    local on
    on="$(placed_on "$WORK/pool/$name.err")"
    [ -n "$on" ] || why="${why:+$why; }no session line"
    if [ -z "$why" ]; then
        printf 'PASS   %-28s on %s\n' "$name" "$on" | tee -a "$SUMMARY"
        echo "$on" >>"$WORK/placements"
    else
        printf 'FAIL   %-28s %s\n' "$name" "$why" | tee -a "$SUMMARY"
        failures=$((failures + 1))
        { echo "== $name: $why"; diff "$WORK/native/$name.out" "$WORK/pool/$name.out" | head -20; tail -5 "$WORK/pool/$name.err"; } >>"$DIFFS"
    fi
}

# 1. four clients held at once: least loaded spreads them two and two
# each holder's stdin is a loop that ends when $WORK/release exists: its program then reads EOF and exits
holders=()
for i in 1 2 3 4; do
    prog="$C/hold_session"; [ $((i % 2)) = 0 ] && prog="$C/hold_session_static"
    ( (while [ ! -e "$WORK/release" ]; do sleep 0.2; done) |
        VMCUDA_CLUSTER="$ETCD_URL" VMCUDA_VERBOSE=1 LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" \
        bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" "$prog" >"$WORK/hold-$i.out" 2>"$WORK/hold-$i.err") &
    holders+=($!)
    for _ in $(seq 1 150); do grep -q "first call" "$WORK/hold-$i.out" 2>/dev/null && break; sleep 0.1; done
done
spread="$(for i in 1 2 3 4; do placed_on "$WORK/hold-$i.err"; done | sort | uniq -c | awk '{print $2 "=" $1}' | paste -sd' ')"
ok_calls="$(grep -l 'first call: cudaSuccess, 1 device' "$WORK"/hold-*.out | wc -l)"
say "held sessions: $spread; $ok_calls of 4 saw the GPU (cudaSuccess, 1 device)"
[ "$spread" = "pool-1=2 pool-2=2" ] && [ "$ok_calls" = 4 ] || fail "four held clients were not spread 2/2 with the GPU: $spread"
touch "$WORK/release"
wait "${holders[@]}" 2>/dev/null

# 2. the programs, two at a time, natively and placed by the pool
mapfile -t PROGS < <(find "$C/cuda" "$C/cuda-static" -maxdepth 1 -type f -perm -u+x | sort)
: >"$WORK/placements"
for ((i = 0; i < ${#PROGS[@]}; i += 2)); do
    for p in "${PROGS[$i]}" "${PROGS[$((i + 1))]:-}"; do
        [ -n "$p" ] || continue
        run_prog native "$(basename "$(dirname "$p")")-$(basename "$p")" "$p"
    done
    pair=()
    for p in "${PROGS[$i]}" "${PROGS[$((i + 1))]:-}"; do
        [ -n "$p" ] || continue
        run_prog pool "$(basename "$(dirname "$p")")-$(basename "$p")" "$p" &
        pair+=($!)
    done
    wait "${pair[@]}" # not a bare wait: etcd and the daemons are this shell's children too
    for p in "${PROGS[$i]}" "${PROGS[$((i + 1))]:-}"; do
        [ -n "$p" ] && judge "$(basename "$(dirname "$p")")-$(basename "$p")"
    done
done
say "programs placed: $(sort "$WORK/placements" | uniq -c | awk '{print $2 "=" $1}' | paste -sd' ')"
[ "$(sort -u "$WORK/placements" | wc -l)" = 2 ] || fail "the programs did not use both appliances"

# 3. pool-2 dies (its daemon and workers SIGKILLed): gone from etcd within its lease, later programs on pool-1
t0="$(now)"
kill -KILL -- "-${DPID[2]}" 2>/dev/null
for _ in $(seq 1 $((TTL * 10 + 50))); do registrations | grep -q '^pool-2 ' || break; sleep 0.1; done
gone="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
if registrations | grep -q '^pool-2 '; then fail "pool-2 still registered $gone s after it died"; else say "pool-2 gone from the pool ${gone} s after SIGKILL (lease ${TTL} s)"; fi
awk -v g="$gone" 'BEGIN { exit !(g <= 10) }' || fail "pool-2 left the pool after $gone s, more than 10 s"

: >"$WORK/placements"
for p in "${PROGS[@]:0:6}"; do
    name="after-$(basename "$(dirname "$p")")-$(basename "$p")"
    run_prog native "$name" "$p"
    run_prog pool "$name" "$p"
    judge "$name"
done
[ "$(sort -u "$WORK/placements")" = pool-1 ] || fail "programs after pool-2's death did not all run on pool-1: $(sort "$WORK/placements" | uniq -c | paste -sd' ')"

passes="$(grep -c '^PASS' "$SUMMARY")"
if [ "$failures" = 0 ]; then say "POOL RESULT: PASS ($passes programs native-identical through the pool)"; else say "POOL RESULT: FAIL ($failures failures, $passes passes)"; fi
exit $((failures > 0))
