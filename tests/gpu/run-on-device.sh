#!/usr/bin/env bash
# The one script run on the lent GPU machine (Ubuntu 24.04, H200, CUDA 13.0 runtime in the image,
# no Java, no network, root). It builds nothing: tests/gpu/prepare-carry.sh put the bundle and the
# prebuilt test programs in .carry/ here. Device tool call:
#     run(command="bash tests/gpu/run-on-device.sh", carry=[".carry/vmcuda-bundle.tar.gz", ".carry/cuda"])
#
# What it does:
#   1. prints the GPU(s), extracts the bundle (with its own jlink'd Java) to /tmp
#   2. starts vmcudad on loopback (setsid; log -> $OUT/daemon.log)
#   3. every test program natively and through `vmcuda run`: exit codes, stdout diff, PASS/FAIL
#   4. 8 runs at once through vmcuda (all must pass)
#   5. one program again: the rewritten binary must come from the cache
#   6. /status, /metrics and the session records (per-session setup times) to $OUT
#   (a benchmark hook is marked below)
#
# $OUT gets at most 8 files back: summary.txt daemon.log status.txt metrics.txt sessions.jsonl
# diffs.txt worker-logs.tar.gz (+ one left for the benchmark). Stdout = the summary, kept short.
# Exit code: 0 when every correctness check passed.
set -uo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-out}"
WORK=/tmp/vmcuda-gpu
STATE="$WORK/state"
PORT=17070
ADMIN=17071
PER_PROGRAM_TIMEOUT="${VMCUDA_TEST_TIMEOUT:-120}" # seconds; a hang must not eat the whole device lease
SUMMARY="$OUT/summary.txt"
DIFFS="$OUT/diffs.txt"

mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK"/{native,vmcuda,concurrent,rerun,progs} "$STATE"
: >"$SUMMARY"
: >"$DIFFS"
failures=0

say() { echo "$*" | tee -a "$SUMMARY"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# GET http://127.0.0.1:$ADMIN$1 (curl when present, else bash /dev/tcp with HTTP/1.0).
http_get() {
    if command -v curl >/dev/null 2>&1; then
        curl -fsS --max-time 10 "http://127.0.0.1:$ADMIN$1"
        return
    fi
    exec 3<>"/dev/tcp/127.0.0.1/$ADMIN" || return 1
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3
    local line first=1 ok=0
    while IFS= read -r line <&3; do
        line="${line%$'\r'}"
        if [ $first = 1 ]; then first=0; [[ "$line" == HTTP/*" 200"* ]] && ok=1; continue; fi
        [ -z "$line" ] && break
    done
    cat <&3
    exec 3<&-
    [ $ok = 1 ]
}

DPID=""
stop_daemon() {
    [ -n "$DPID" ] || return 0
    # setsid made the daemon a process-group leader: TERM the group (daemon + workers), then KILL.
    kill -TERM -- "-$DPID" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$DPID" 2>/dev/null
    DPID=""
}
finish() {
    stop_daemon
    [ -n "${TLS_PID:-}" ] && { kill -TERM -- "-$TLS_PID" 2>/dev/null; sleep 1; kill -KILL -- "-$TLS_PID" 2>/dev/null; }
    # keep what comes back under the tool's 16 MiB per file
    if [ -f "$OUT/daemon.log" ] && [ "$(stat -c %s "$OUT/daemon.log")" -gt 15000000 ]; then
        { head -c 5000000 "$OUT/daemon.log"; echo; echo "... [truncated] ..."; tail -c 5000000 "$OUT/daemon.log"; } \
            >"$WORK/daemon.log.cut" && mv "$WORK/daemon.log.cut" "$OUT/daemon.log"
    fi
    [ -d "$STATE/sessions" ] && tar -czf "$OUT/worker-logs.tar.gz" -C "$STATE" sessions 2>/dev/null
}
trap finish EXIT

# ---- 1. machine and bundle ---------------------------------------------------------------------
say "== vmcuda GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu: $(nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | paste -sd';')"
say "host: $(nproc) cores, kernel $(uname -r)"

# The native runs need the real libcudart.so.13 of the image.
CUDA_LIB_DIR=""
real_cudart="$(ldconfig -p 2>/dev/null | awk '/libcudart\.so\.13 /{print $NF; exit}')"
[ -z "$real_cudart" ] && real_cudart="$(ls /usr/local/cuda/lib64/libcudart.so.13 /usr/local/cuda*/lib*/libcudart.so.13 2>/dev/null | head -1)"
if [ -z "$real_cudart" ]; then
    fail "no real libcudart.so.13 on this machine (needed for the native runs)"
    exit 1
fi
CUDA_LIB_DIR="$(dirname "$(readlink -f "$real_cudart")")"
say "real libcudart: $CUDA_LIB_DIR"

if [ ! -f "$CARRY/vmcuda-bundle.tar.gz" ]; then
    fail "no $CARRY/vmcuda-bundle.tar.gz: run tests/gpu/prepare-carry.sh here first and carry .carry"
    exit 1
fi
tar -xzf "$CARRY/vmcuda-bundle.tar.gz" -C "$WORK" || { fail "cannot extract the bundle"; exit 1; }
ROOT="$(ls -d "$WORK"/vmcuda-*/ 2>/dev/null | head -1)"
ROOT="${ROOT%/}"
[ -n "$ROOT" ] || { fail "the bundle has no vmcuda-*/ directory"; exit 1; }
if [ -f "$ROOT/INCOMPLETE" ]; then
    fail "the bundle is incomplete, missing: $(paste -sd' ' "$ROOT/INCOMPLETE")"
fi
say "bundle: $(basename "$ROOT"); java: $("$ROOT/jre/bin/java" -version 2>&1 | head -1)"
say "vmcudad --version: $("$ROOT/bin/vmcudad" --version 2>&1 | head -1)"

cp -pr "$CARRY"/cuda/* "$WORK/progs/" 2>/dev/null # with client_libs.d/
chmod +x "$WORK"/progs/* 2>/dev/null
mapfile -t PROGRAMS < <(find "$WORK/progs" -maxdepth 1 -type f -perm -u+x | sort)
[ ${#PROGRAMS[@]} -gt 0 ] || { fail "no test programs in $CARRY/cuda"; exit 1; }

# ---- 2. daemon ---------------------------------------------------------------------------------
setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --state-dir "$STATE" \
    --worker-lib-dir "$ROOT/native" >"$OUT/daemon.log" 2>&1 </dev/null &
DPID=$!
up=0
for _ in $(seq 1 300); do # up to 60 s for the JVM to come up
    kill -0 "$DPID" 2>/dev/null || break
    if http_get /status >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
done
if [ $up != 1 ]; then
    fail "vmcudad did not answer /status (see daemon.log); last lines:"
    tail -5 "$OUT/daemon.log" | tee -a "$SUMMARY"
    exit 1
fi
say "daemon: up on 127.0.0.1:$PORT (admin $ADMIN)"
# the inventory must come from the driver API (CudaDriverQuery through JNA), with nvidia-smi's UUIDs
inventory="$(grep -o '[0-9]* GPU(s) from .*' "$OUT/daemon.log" | head -1)"
say "inventory: $inventory"
case "$inventory" in
    *"GPU(s) from driver API via "*) ;;
    *) fail "the daemon's GPU inventory did not come from the CUDA driver API" ;;
esac
smi_uuid="$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 2>/dev/null | tr -d ' ')"
[ -n "$smi_uuid" ] && { echo "$inventory" | grep -q "$smi_uuid" || fail "GPU 0's UUID $smi_uuid (nvidia-smi) is not in the inventory"; }
http_get "/status?format=table" 2>&1 | head -20 | sed 's/^/  /' | tee -a "$SUMMARY"
say "vmcuda smi (the client port's view, no admin token):"
"$ROOT/bin/vmcuda" smi --appliance "127.0.0.1:$PORT" 2>&1 | head -12 | sed 's/^/  /' | tee -a "$SUMMARY"

# Runs one program natively (real libcudart) or through vmcuda; output to DIR/NAME.{out,err,rc,t}.
run_one() { # MODE DIR PROGRAM
    local mode="$1" dir="$2" prog="$3" name t0 rc
    name="$(basename "$prog")"
    t0="$(now)"
    if [ "$mode" = native ]; then
        (cd "$WORK" && env -u VMCUDA_APPLIANCE LD_LIBRARY_PATH="$CUDA_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            timeout "$PER_PROGRAM_TIMEOUT" "$prog" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
    elif [ "$mode" = vmcuda-tls ]; then # TCP to the TLS daemon of section 3d
        (cd "$WORK" && LD_LIBRARY_PATH="$CUDA_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VMCUDA_TRANSPORT=tcp \
            VMCUDA_TLS_CA="$TLS_CERT" timeout "$PER_PROGRAM_TIMEOUT" "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$TLS_PORT" \
            -- "$prog" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
    else # vmcuda (the transport the client picks: shared memory here) or vmcuda-tcp
        (cd "$WORK" && LD_LIBRARY_PATH="$CUDA_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            VMCUDA_TRANSPORT="$([ "$mode" = vmcuda-tcp ] && echo tcp || echo "${VMCUDA_TRANSPORT:-auto}")" \
            timeout "$PER_PROGRAM_TIMEOUT" "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" -- "$prog" \
            >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
    fi
    rc=$?
    echo "$rc" >"$dir/$name.rc"
    secs "$t0" "$(now)" >"$dir/$name.t"
}

# Compares a vmcuda run against the native one; prints one table row; records diffs.
judge() { # LABEL NATIVE_DIR VMCUDA_DIR NAME
    local label="$1" nd="$2" vd="$3" name="$4" nrc vrc verdict why=""
    nrc="$(cat "$nd/$name.rc")"
    vrc="$(cat "$vd/$name.rc")"
    if [ "$nrc" != 0 ]; then why="native exit $nrc"; fi
    if [ "$vrc" = 124 ]; then why="${why:+$why; }vmcuda timed out"
    elif [ "$vrc" != "$nrc" ]; then why="${why:+$why; }exit codes differ"; fi
    if ! cmp -s "$nd/$name.out" "$vd/$name.out"; then why="${why:+$why; }stdout differs"; fi
    if [ -z "$why" ]; then verdict=PASS; else verdict=FAIL; failures=$((failures + 1)); fi
    printf '%-6s %-16s %-15s native rc=%-3s %6ss  vmcuda rc=%-3s %6ss  %s\n' "$verdict" "$name" "$label" \
        "$nrc" "$(cat "$nd/$name.t")" "$vrc" "$(cat "$vd/$name.t")" "$why" | tee -a "$SUMMARY"
    if [ "$verdict" = FAIL ]; then
        {
            echo "===== $label $name: $why"
            if cmp -s "$nd/$name.out" "$vd/$name.out"; then
                echo "----- stdout (identical, tail)"; tail -5 "$nd/$name.out"
            else
                diff -u --label "native/$name" --label "vmcuda/$name" "$nd/$name.out" "$vd/$name.out" | head -200
            fi
            echo "----- native stderr (tail)"; tail -20 "$nd/$name.err"
            echo "----- vmcuda stderr (tail)"; tail -20 "$vd/$name.err"
        } >>"$DIFFS"
    fi
}

# ---- 3. each program: native vs vmcuda ---------------------------------------------------------
say ""
say "== native vs vmcuda, one at a time"
for p in "${PROGRAMS[@]}"; do
    run_one native "$WORK/native" "$p"
    run_one vmcuda "$WORK/vmcuda" "$p"
    judge sequential "$WORK/native" "$WORK/vmcuda" "$(basename "$p")"
done

# ---- 3b. the copy-heavy programs over TCP too (the loopback client would otherwise use the ring) ----
say ""
say "== native vs vmcuda over TCP (large copies striped over VMCUDA_TCP_STREAMS connections)"
mkdir -p "$WORK/tcp"
for p in "${PROGRAMS[@]}"; do
    case "$(basename "$p")" in
    big_copies | big_copies_ptds | bulk_paths | memory | threads | stream_ptds)
        run_one vmcuda-tcp "$WORK/tcp" "$p"
        judge tcp "$WORK/native" "$WORK/tcp" "$(basename "$p")" ;;
    esac
done

# ---- 3c. the shared-region ring (ivshmem's mechanism; here the region is a file, as on the KVM host) ----
say ""
say "== native vs vmcuda through a lane of a shared region (shm.regions / VMCUDA_SHM_REGION)"
REGION=/dev/shm/vmcuda-region-test
# "lane=nonce" for every held lane of the region (vmc_region.h: owner words from byte 40)
region_lanes_held() {
    od -A n -t u8 -j 40 -N 2048 -v -w8 "$REGION" | awk '$1 != 0 {printf "%d=%s ", NR - 1, $1; n++} END {print n + 0 " held"}'
}
rm -f "$REGION" && truncate -s 256M "$REGION"
mkdir -p "$WORK/region" "$WORK/rstate"
printf 'shm.regions = %s\n' "$REGION" >"$WORK/region.conf"
setsid "$ROOT/bin/vmcudad" --listen 127.0.0.1:17090 --admin 127.0.0.1:17091 --state-dir "$WORK/rstate" \
    --config "$WORK/region.conf" --worker-lib-dir "$ROOT/native" >"$WORK/region-daemon.log" 2>&1 </dev/null &
RPID=$!
for _ in $(seq 1 300); do grep -q "listening on" "$WORK/region-daemon.log" 2>/dev/null && break; sleep 0.2; done
for p in "${PROGRAMS[@]}"; do
    case "$(basename "$p")" in
    big_copies | big_copies_ptds | bulk_paths | lanes_at_exit | memory | threads)
        (cd "$WORK" && LD_LIBRARY_PATH="$CUDA_LIB_DIR" VMCUDA_TRANSPORT=shm VMCUDA_SHM_REGION="$REGION" \
            timeout "$PER_PROGRAM_TIMEOUT" "$ROOT/bin/vmcuda" run --appliance 127.0.0.1:17090 -- "$p" \
            >"$WORK/region/$(basename "$p").out" 2>"$WORK/region/$(basename "$p").err" </dev/null)
        echo $? >"$WORK/region/$(basename "$p").rc"; echo 0 >"$WORK/region/$(basename "$p").t"
        judge region "$WORK/native" "$WORK/region" "$(basename "$p")"
        sleep 0.5
        say "  lanes held after $(basename "$p"): $(region_lanes_held)" ;;
    esac
done
if [ -x "$CARRY/bench/bench_transfer" ]; then
    say "1 GiB through the region: $(LD_LIBRARY_PATH="$CUDA_LIB_DIR" VMCUDA_TRANSPORT=shm VMCUDA_SHM_REGION="$REGION" \
        timeout 120 "$ROOT/bin/vmcuda" run --appliance 127.0.0.1:17090 -- "$CARRY/bench/bench_transfer" --reps 5 1G |
        paste -sd' ')"
fi
sleep 1
attached=$(cat "$WORK"/rstate/sessions/*/worker.log 2>/dev/null | grep -c "ring attached: lane")
say "region: $attached ring attachments logged; $(grep -h "ring attached: lane" "$WORK"/rstate/sessions/*/worker.log | head -1 | cut -c1-160)"
[ "$attached" -gt 0 ] || fail "region: no worker attached a lane of the shared region"
held=$(region_lanes_held | awk '{print $(NF - 1)}')
say "region: lanes still held after every program ended: $(region_lanes_held)"
if [ "$held" != 0 ]; then
    fail "region: $held lanes still held"
    grep -h "lane" "$WORK"/rstate/sessions/*/worker.log | cut -c1-120 | tail -40 | sed 's/^/  /' | tee -a "$SUMMARY"
fi
kill -TERM -- "-$RPID" 2>/dev/null; sleep 1; kill -KILL -- "-$RPID" 2>/dev/null
rm -f "$REGION"

# ---- 3d. TLS (protocol/PROTOCOL.md "Encryption"): a daemon with a certificate made here, the copy-heavy
# programs over TCP inside TLS; it stays up for the benchmarks' tls column --------------------------------
say ""
say "== native vs vmcuda over TCP with TLS (control.tls_certificate; client tls_ca)"
TLS_PORT=17095 TLS_PID=""
mkdir -p "$WORK/tlsrun"
# shellcheck source=tls-daemon.sh
. "$REPO/tests/gpu/tls-daemon.sh"
if ! start_tls_daemon "$TLS_PORT" 17096; then
    fail "tls: $TLS_PROBLEM"
else
    say "tls: $(grep -o 'client connections use TLS.*' "$WORK/tls-daemon.log" | head -1)"
    for p in "${PROGRAMS[@]}"; do
        case "$(basename "$p")" in
        big_copies | big_copies_ptds | bulk_paths | memory | threads | stream_ptds)
            run_one vmcuda-tls "$WORK/tlsrun" "$p"
            judge tls "$WORK/native" "$WORK/tlsrun" "$(basename "$p")" ;;
        esac
    done
    # the same client without tls_ca: refused with what to set, not hung
    refusal="$(cd "$WORK" && LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run --appliance \
        "127.0.0.1:$TLS_PORT" -- "$WORK/progs/memory" 2>&1 >/dev/null | grep -m1 'vmcuda:')"
    say "tls: a client without tls_ca: $refusal"
    case "$refusal" in *"set tls_ca"*) ;; *) fail "tls: a client without tls_ca was not told to set it" ;; esac
fi

# ---- 4. eight at once through vmcuda -----------------------------------------------------------
say ""
say "== 8 vmcuda runs at once"
pids=()
names=()
for i in $(seq 0 7); do
    p="${PROGRAMS[$((i % ${#PROGRAMS[@]}))]}"
    d="$WORK/concurrent/$i"
    mkdir -p "$d"
    run_one vmcuda "$d" "$p" &
    pids+=($!)
    names+=("$(basename "$p")")
done
for i in $(seq 0 7); do
    wait "${pids[$i]}"
    judge "concurrent#$i" "$WORK/native" "$WORK/concurrent/$i" "${names[$i]}"
done

# ---- 5. same binary again: the daemon must serve the rewrite from its cache ---------------------
say ""
say "== cache hit"
cache_evidence() { # cache-hit counts: daemon.log lines, session records, /metrics, /status
    local n j m s
    n=$(grep -ciE 'cache[ _-]?hit' "$OUT/daemon.log")
    j=$(grep -cE '"cache_hit"[[:space:]]*:[[:space:]]*true' "$STATE/sessions.jsonl" 2>/dev/null)
    m=$(http_get /metrics 2>/dev/null | grep -iE '^vmcuda_[a-z_]*cache_hit[a-z_]*(\{[^}]*\})? ' | awk '{s += $NF} END {print s + 0}')
    s=$(http_get /status 2>/dev/null | grep -oiE '"[a-z_]*cache_hits"[[:space:]]*:[[:space:]]*[0-9]+' | grep -oE '[0-9]+$' | awk '{s += $1} END {print s + 0}')
    echo "${n:-0} ${j:-0} $m $s"
}
read -r log0 rec0 met0 st0 < <(cache_evidence)
first="${PROGRAMS[0]}"
run_one vmcuda "$WORK/rerun" "$first"
judge rerun "$WORK/native" "$WORK/rerun" "$(basename "$first")"
sleep 1 # the session record is written when the session ends, just after the client exits
read -r log1 rec1 met1 st1 < <(cache_evidence)
say "cache-hit evidence for the rerun: daemon.log lines $log0 -> $log1, session records $rec0 -> $rec1, /metrics $met0 -> $met1, /status $st0 -> $st1"
if [ "$log1" -gt "$log0" ] || [ "$rec1" -gt "$rec0" ] || [ "$met1" -gt "$met0" ] || [ "$st1" -gt "$st0" ]; then
    say "cache hit: shown"
    grep -iE 'cache[ _-]?hit' "$OUT/daemon.log" | tail -2 | cut -c1-200 | sed 's/^/  log: /' | tee -a "$SUMMARY"
else
    say "cache hit: NOT SHOWN (no new cache-hit log line or counter; see daemon.log)"
fi

# ---- benchmarks: native and vmcuda side by side in this same run (tests/bench) ------------------
# Files back: $OUT/bench.txt (every table) and $OUT/bandwidth.png (tests/bench/plot.py); diffs.txt is
# removed when empty, so with all checks passing that is 8 files (with diffs, the plot stays in $WORK).
# Budget: BENCH_BUDGET seconds for the whole section (default 240); each step runs under `timeout`.
#   1. tcp_ceiling + compare.sh vmcuda_bench: H2D/D2H pageable+pinned 4 KiB..1 GiB (best of 20; and the mean of a
#      loop of 1000 for 4-256 KiB pageable), small-call latency, launches
#   2. tests/bench/gpu-suite.sh: block-size sweep, Table-1 workloads end to end, 1/4/16 concurrent clients
#   3. tests/bench/plot.py: bandwidth vs transfer size and vs block size
[ -s "$DIFFS" ] || rm -f "$DIFFS" # sections 3-5 wrote their diffs by now; nothing below writes any
if [ -x "$CARRY/bench/vmcuda_bench" ]; then
    say ""
    say "== benchmarks (tests/bench/compare.sh; GB/s rows: ratio > 1 = vmcuda faster; us rows: ratio > 1 = vmcuda slower)"
    bench_t0="$(date +%s)"
    bench_budget="${BENCH_BUDGET:-240}"
    {
        echo "# this host's loopback TCP ceiling (tests/bench/tcp_ceiling.c): one connection, and 4 at once"
        echo "# (large vmcuda copies over TCP are striped over tcp_streams = 4 connections by default)"
        [ -x "$CARRY/bench/tcp_ceiling" ] && timeout -k 5 60 "$CARRY/bench/tcp_ceiling" --shapes &&
            timeout -k 5 60 "$CARRY/bench/tcp_ceiling" --shapes --streams 4
        echo "# vmcuda_bench: native, vmcuda over TCP, vmcuda over the shared-memory ring; block size ${VMCUDA_BLOCK_SIZE:-4194304 (default)}"
        timeout -k 5 120 bash "$REPO/tests/bench/compare.sh" "$CARRY/bench/vmcuda_bench" "$ROOT/bin/vmcuda" "127.0.0.1:$PORT"
        echo "# the same with calls_in_region off (calls over the socket, bulk data still in the ring): what the"
        echo "# call pipe changes is the shm column of the table above against this one's (tcp is not co-located)"
        VMCUDA_CALLS_IN_REGION=0 timeout -k 5 120 bash "$REPO/tests/bench/compare.sh" "$CARRY/bench/vmcuda_bench" \
            "$ROOT/bin/vmcuda" "127.0.0.1:$PORT" | sed 's/^/nopipe_/'
        if [ -n "$TLS_PID" ]; then
            echo "# TLS: vmcuda over TCP to the plain daemon, and over TCP inside TLS to section 3d's daemon (tls/nat"
            echo "# against tcp/nat is what encryption costs; tls8: the same with tcp_streams = 8; tlsshm against shm: the co-located"
            echo "# ring and call pipe, TLS only on the socket)"
            COLUMNS="tcp tls:VMCUDA_TRANSPORT=tcp,VMCUDA_TLS_CA=$TLS_CERT@127.0.0.1:$TLS_PORT tls8:VMCUDA_TRANSPORT=tcp,VMCUDA_TCP_STREAMS=8,VMCUDA_TLS_CA=$TLS_CERT@127.0.0.1:$TLS_PORT shm tlsshm:VMCUDA_TRANSPORT=auto,VMCUDA_TLS_CA=$TLS_CERT@127.0.0.1:$TLS_PORT" timeout -k 5 200 \
                bash "$REPO/tests/bench/compare.sh" "$CARRY/bench/vmcuda_bench" "$ROOT/bin/vmcuda" "127.0.0.1:$PORT" |
                sed 's/^/tls_/'
        fi
    } >"$OUT/bench.txt" 2>&1 || say "benchmark run failed (see bench.txt)"
    cat "$OUT/bench.txt"
    if [ -x "$CARRY/bench/bench_transfer" ]; then
        # what is left of the budget, less 20 s for the plot and the clean-up
        suite_budget=$((bench_budget - ($(date +%s) - bench_t0) - 20))
        [ "$suite_budget" -lt 60 ] && suite_budget=60
        say "== gpu-suite (tests/bench/gpu-suite.sh, budget ${suite_budget} s): block-size sweep, workloads, concurrent clients"
        timeout -k 10 $((suite_budget + 30)) bash "$REPO/tests/bench/gpu-suite.sh" "$CARRY/bench" "$ROOT" \
            "$CUDA_LIB_DIR" "$WORK/bench-suite" "$suite_budget" >"$WORK/bench-suite.txt" 2>&1 ||
            say "gpu-suite failed or ran out of time (see bench.txt)"
        # its daemons (own process groups), in case the suite itself was killed
        [ -f "$WORK/bench-suite/daemons.pids" ] &&
            while read -r p; do [ -n "$p" ] && kill -KILL -- "-$p" 2>/dev/null; done <"$WORK/bench-suite/daemons.pids"
        { echo; cat "$WORK/bench-suite.txt"; } >>"$OUT/bench.txt"
        # the digest on stdout; every row is in bench.txt
        grep -E '^(#|==|metric |blackscholes_end_to_end|matmul_end_to_end|conc_.*_(aggregate|per_client_mean_s)|sweep_.*_(blk128KiB|blk4MiB|blk128MiB)_624MiB)' \
            "$WORK/bench-suite.txt" | grep -vE '^# (blackscholes|matmul) native stdout'
    else
        say "gpu-suite: not carried (.carry/bench/bench_transfer missing)"
    fi
    if ! command -v python3 >/dev/null; then
        say "plot: no python3 here"
    elif [ -e "$DIFFS" ]; then # keep to 8 files back: diffs.txt matters more than the plot
        timeout -k 5 60 python3 "$REPO/tests/bench/plot.py" "$OUT/bench.txt" "$WORK/bandwidth.png" >/dev/null 2>&1
        say "plot: $WORK/bandwidth.png (not returned: diffs.txt takes its place)"
    elif timeout -k 5 60 python3 "$REPO/tests/bench/plot.py" "$OUT/bench.txt" "$OUT/bandwidth.png" >"$WORK/plot.log" 2>&1; then
        say "plot: bandwidth.png"
    else
        say "plot: failed: $(tail -1 "$WORK/plot.log")"
    fi
    say "benchmarks: $(($(date +%s) - bench_t0)) s"
else
    say "benchmarks: not carried (.carry/bench/vmcuda_bench missing)"
fi

# ==== isolation and fault tolerance (tests/isolation; owned by the isolation issue) ================
# Needs the isolation programs carried in $CARRY/isolation (tests/target/isolation after the build).
# Results go to the summary (no extra file: the device tool returns at most 8). Checks:
#   client SIGKILLed mid 1 GiB H2D and mid D2H: worker gone within 1 s, GPU memory back to its baseline;
#   a kernel with an illegal address beside a healthy session; a worker SIGKILLed beside another session;
#   the sandbox on the GPU (kernels still run, no network); the memory quota on a real GPU.
if [ -x "$CARRY/isolation/long_runner" ]; then
    say ""
    say "== isolation and fault tolerance"
    ISO="$WORK/iso"
    mkdir -p "$ISO"
    cp -p "$CARRY"/isolation/* "$ISO/" 2>/dev/null
    chmod +x "$ISO"/* 2>/dev/null
    vm() { # LOGPREFIX PROGRAM ARGS... (background-able)
        local p="$1"; shift
        LD_LIBRARY_PATH="$CUDA_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "$PER_PROGRAM_TIMEOUT" \
            "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$PORT" -- "$@" >"$p.out" 2>"$p.err" </dev/null
    }
    gpu_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | tr -d ' '; }
    # the daemon's processes but itself and its XID watcher (vmcuda-xid-watch lives as long as the daemon)
    daemon_children() { ps -e -o pid=,sid=,args= | awk -v s="$DPID" '$2 == s && $1 != s && $3 !~ /vmcuda-xid-watch$/ {print $1}'; }
    wait_for() { # SECONDS FILE TEXT
        local i
        for i in $(seq 1 $(($1 * 20))); do grep -q "$3" "$2" 2>/dev/null && return 0; sleep 0.05; done
        return 1
    }
    await_gone() { # PIDS: prints 1 once none of them is alive (within 2 s), else 0
        local k alive
        for _ in $(seq 1 100); do
            alive=0
            for k in $1; do kill -0 "$k" 2>/dev/null && alive=1; done
            [ $alive = 0 ] && { echo 1; return; }
            sleep 0.02
        done
        echo 0
    }
    # Once a client is dead: waits for its session's processes (KIDS) to go, reports how long that took (also in
    # GONE_S) and the GPU memory used against BASE, and fails if they stayed or the memory did not come back.
    # HOW says how the client was SIGKILLed.
    report_worker_gone() { # KIDS BASE HOW
        local kids="$1" base="$2" how="$3" t0 t1 gone after
        t0="$(now)"
        gone="$(await_gone "$kids")"
        t1="$(now)"
        GONE_S="$(secs "$t0" "$t1")"
        sleep 2
        after="$(gpu_used)"
        say "client SIGKILLed $how: worker gone after $GONE_S s; GPU memory used ${base} MiB before, ${after} MiB after"
        [ "$gone" = 1 ] || fail "isolation: worker still alive after its client was SIGKILLed $how"
        if [ -n "$base" ] && [ -n "$after" ] && [ "$after" -gt $((base + 64)) ]; then
            fail "isolation: GPU memory not back to baseline after its client was SIGKILLed $how"
        fi
    }
    iso_kill_mid_copy() { # MODE (h2d|d2h)
        local mode="$1" base pid
        base="$(gpu_used)"
        vm "$ISO/copy-$mode" "$ISO/big_copy" -1 "$mode" &
        pid=$!
        if ! wait_for 60 "$ISO/copy-$mode.err" "round 0 $(echo "$mode" | tr a-z A-Z)"; then
            fail "isolation: big_copy $mode never completed a round"; kill -9 "$pid" 2>/dev/null; return
        fi
        sleep 0.3 # inside the second 1 GiB copy
        local kids; kids="$(daemon_children)"
        # the client is big_copy itself (bin/vmcuda execs it, under timeout); the worker's argv[0] is
        # just "big_copy", so the full path names the client only
        pkill -9 -f "^$ISO/big_copy" 2>/dev/null
        wait "$pid" 2>/dev/null
        report_worker_gone "$kids" "$base" "mid-$mode"
        awk -v a="$GONE_S" 'BEGIN { exit !(a <= 1.0) }' || fail "isolation: worker took more than 1 s to exit ($mode)"
        # the newest big_copy record is this session's (h2d and d2h run the same program, one after the other)
        grep '"program":"big_copy"' "$STATE/sessions.jsonl" | tail -1 | grep -q '"state":"aborted"' ||
            fail "isolation: the killed session was not recorded aborted ($mode)"
    }
    iso_kill_mid_copy h2d
    iso_kill_mid_copy d2h

    # a client that dies inside a host callback: the worker's stream waits on a callback nobody will finish
    iso_die_in_callback() {
        local base pid kids prev
        # a baseline that has settled: memory of the sessions killed just before may still be on its way back
        base="$(gpu_used)"
        for _ in $(seq 1 10); do
            sleep 0.5; prev="$base"; base="$(gpu_used)"
            [ "$base" = "$prev" ] && break
        done
        vm "$ISO/cb-die" "$ISO/die_in_callback" &
        pid=$!
        if ! wait_for 60 "$ISO/cb-die.err" "in the callback"; then
            fail "isolation: die_in_callback never reached its callback: $(head -c 300 "$ISO/cb-die.err")"; kill -9 "$pid" 2>/dev/null; return
        fi
        kids="$(daemon_children)"
        wait "$pid" 2>/dev/null # it SIGKILLs itself a second after entering the callback
        [ -n "$kids" ] || fail "isolation: no worker seen while die_in_callback was in its callback"
        report_worker_gone "$kids" "$base" "inside a host callback"
    }
    iso_die_in_callback

    # a kernel with an illegal address beside a healthy session on the same GPU
    vm "$ISO/healthy" "$ISO/long_runner" 30 100 &
    hp=$!
    vm "$ISO/illegal" "$ISO/illegal_address"
    (cd "$WORK" && LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ISO/illegal_address" >"$ISO/illegal-native.out" 2>&1)
    wait "$hp"
    say "illegal address: vmcuda '$(head -1 "$ISO/illegal.out")' / native '$(head -1 "$ISO/illegal-native.out")'; beside it: $(grep -c cudaSuccess "$ISO/healthy.out")/30 calls ok"
    cmp -s "$ISO/illegal.out" "$ISO/illegal-native.out" || fail "isolation: illegal_address output differs from native"
    [ "$(grep -c cudaSuccess "$ISO/healthy.out")" = 30 ] || fail "isolation: the session beside the faulting kernel was disturbed"

    # another session's device memory through its address: a session holds 64 MiB of 0xA5 and prints where; a second
    # session reads that address with cudaMemcpy and with a kernel: both must fail, as between two native processes
    vm "$ISO/holder" "$ISO/stale_pointer" hold 20 &
    holder=$!
    wait_for 30 "$ISO/holder.out" "held at"
    addr="$(sed -n 's/^held at \(0x[0-9a-f]*\): cudaSuccess/\1/p' "$ISO/holder.out")"
    vm "$ISO/reader" "$ISO/stale_pointer" read "${addr:-0x0}"
    reader_rc=$?
    (cd "$WORK" && LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ISO/stale_pointer" read "${addr:-0x0}" >"$ISO/reader-native.out" 2>&1)
    holder_alive=0; kill -0 "$holder" 2>/dev/null && holder_alive=1 # still holding when both reads were done
    wait "$holder"
    holder_rc=$?
    say "another session's memory at ${addr:-?} (holder alive during the reads: $holder_alive, exit $holder_rc): vmcuda: $(tr '\n' ';' <"$ISO/reader.out") native process: $(tr '\n' ';' <"$ISO/reader-native.out")"
    [ -n "$addr" ] && [ "$holder_alive" = 1 ] && [ "$holder_rc" = 0 ] && [ "$reader_rc" = 0 ] && ! grep -q LEAKED "$ISO/reader.out" &&
        grep -q "cudaMemcpy from" "$ISO/reader.out" ||
        fail "isolation: a session read another session's device memory (or the check did not run)"

    # a worker SIGKILLed beside another session
    vm "$ISO/victim" "$ISO/long_runner" 40 100 &
    vp=$!
    vm "$ISO/survivor" "$ISO/long_runner" 40 100 &
    sp=$!
    wait_for 60 "$ISO/victim.out" "call 2" && wait_for 60 "$ISO/survivor.out" "call 2"
    leaf=""
    for k in $(daemon_children); do [ -z "$(ps -o pid= --ppid "$k")" ] && leaf="$k"; done
    [ -n "$leaf" ] && kill -9 "$leaf"
    wait "$vp" "$sp"
    ok_v=$(grep -c cudaSuccess "$ISO/victim.out"); ok_s=$(grep -c cudaSuccess "$ISO/survivor.out")
    say "worker SIGKILL beside another session: successful calls $ok_v and $ok_s of 40 (one must be 40, the other less)"
    { [ "$ok_v" = 40 ] || [ "$ok_s" = 40 ]; } && [ "$ok_v" != "$ok_s" ] || fail "isolation: worker kill hurt the other session (or nothing was killed)"

    # the sandbox with a real GPU: kernels run, no network (its worker.log says why)
    vm "$ISO/probe" "$ISO/sandbox_probe"
    say "sandbox_probe through vmcuda: $(tr '\n' ';' <"$ISO/probe.out")"
    grep -q "kernel result: 1 (cudaSuccess)" "$ISO/probe.out" || fail "isolation: sandboxed worker could not run a kernel"
    grep -h "probe:" "$STATE"/sessions/*/worker.log 2>/dev/null | sort -u | head -6 | sed 's/^/  worker: /' | tee -a "$SUMMARY"

    # the memory quota on a real GPU: a second daemon with a 256 MiB tenant cap
    QSTATE="$WORK/qstate"; mkdir -p "$QSTATE"
    QTOKEN="quota-$(date +%s%N)"
    printf 'tenant.q.token_sha256 = %s\ntenant.q.max_memory_bytes = 268435456\nworker.memory_max = 1g\nworker.disk_max = 256m\n' \
        "$(printf %s "$QTOKEN" | sha256sum | cut -d' ' -f1)" >"$WORK/quota.conf"
    setsid "$ROOT/bin/vmcudad" --listen 127.0.0.1:17080 --admin 127.0.0.1:17081 --state-dir "$QSTATE" \
        --config "$WORK/quota.conf" --worker-lib-dir "$ROOT/native" >"$WORK/quota-daemon.log" 2>&1 </dev/null &
    QPID=$!
    wait_for 60 "$WORK/quota-daemon.log" "listening on"
    (cd "$WORK" && VMCUDA_TOKEN="$QTOKEN" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run \
        --appliance 127.0.0.1:17080 -- "$ISO/quota_probe" 1024 64 >"$ISO/quota.out" 2>"$ISO/quota.err")
    # past the quota behind the worker library's back (the driver, straight from the program's constructor):
    # the daemon's check outside the worker kills the session
    (cd "$WORK" && VMCUDA_TOKEN="$QTOKEN" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run \
        --appliance 127.0.0.1:17080 -- "$ISO/quota_bypass" 20 >"$ISO/bypass.out" 2>"$ISO/bypass.err")
    # host memory held by the kernel per session (worker.memory_max 1g, room for a CUDA context; the session's cgroup):
    # anonymous memory and a /dev/shm file, each stopped at the limit; a GPU session after them is not disturbed
    for bomb in memory_bomb memory_bomb_shm; do
        (cd "$WORK" && VMCUDA_TOKEN="$QTOKEN" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run \
            --appliance 127.0.0.1:17080 -- "$ISO/$bomb" 2 >"$ISO/$bomb.out" 2>"$ISO/$bomb.err")
    done
    # the disk: a tenant that fills its session's directory (worker.disk_max 256m, a tmpfs of its own)
    (cd "$WORK" && VMCUDA_TOKEN="$QTOKEN" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run \
        --appliance 127.0.0.1:17080 -- "$ISO/disk_fill" 2 >"$ISO/disk_fill.out" 2>"$ISO/disk_fill.err")
    (cd "$WORK" && VMCUDA_TOKEN="$QTOKEN" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run \
        --appliance 127.0.0.1:17080 -- "$ISO/quota_probe" 64 64 >"$ISO/after-bombs.out" 2>"$ISO/after-bombs.err")
    (cd "$WORK" && VMCUDA_TOKEN="wrong" LD_LIBRARY_PATH="$CUDA_LIB_DIR" timeout 60 "$ROOT/bin/vmcuda" run \
        --appliance 127.0.0.1:17080 -- "$ISO/quota_probe" 64 64 >"$ISO/badtoken.out" 2>"$ISO/badtoken.err")
    kill -TERM -- "-$QPID" 2>/dev/null; sleep 1; kill -KILL -- "-$QPID" 2>/dev/null
    cp "$WORK/quota-daemon.log" "$OUT/" 2>/dev/null
    say "quota 256 MiB: $(tr '\n' ';' <"$ISO/quota.out")"
    grep -q "allocated 256 MiB, then: cudaErrorMemoryAllocation" "$ISO/quota.out" || fail "isolation: quota not enforced on the GPU"
    grep -q "after freeing: cudaSuccess" "$ISO/quota.out" || fail "isolation: freeing did not give the quota back"
    say "quota bypassed in the worker: $(tr '\n' ';' <"$ISO/bypass.out") daemon: $(grep -o 'its worker used [0-9]* MiB of GPU memory, past the tenant.s quota of [0-9]* MiB' "$WORK/quota-daemon.log" | head -1)"
    grep -h "quota_bypass:" "$QSTATE"/sessions/*/worker.log 2>/dev/null | head -1 | sed 's/^/  worker: /' | tee -a "$SUMMARY"
    grep -q "cudaErrorDevicesUnavailable" "$ISO/bypass.out" && grep -q "past the tenant's quota" "$WORK/quota-daemon.log" ||
        fail "isolation: a worker past its quota (allocated straight from the driver) was not killed"
    say "$(grep -o 'session cgroups (v[12]) below .*' "$WORK/quota-daemon.log" | head -1)"
    for bomb in memory_bomb memory_bomb_shm; do
        say "$bomb: $(grep -h 'vmcuda:' "$ISO/$bomb.err" | head -1); worker: $(grep -h 'bomb:' "$QSTATE"/sessions/*/worker.log | grep -c .) progress lines"
        grep -q "the session's memory limit of 1024 MiB (worker.memory_max)" "$ISO/$bomb.err" ||
            fail "isolation: $bomb was not stopped at its session's memory limit"
    done
    grep -h "nothing stopped it" "$QSTATE"/sessions/*/worker.log && fail "isolation: a memory bomb reached 4 GiB"
    say "disk_fill: $(grep -h 'fill:' "$QSTATE"/sessions/*/worker.log | head -1); client: $(tail -1 "$ISO/disk_fill.out"); fill files left on the state disk: $(find "$QSTATE/sessions" -name 'fill.*' | wc -l)"
    grep -qh "fill: stopped after [0-9]* MiB: No space left on device" "$QSTATE"/sessions/*/worker.log && grep -qx done "$ISO/disk_fill.out" &&
        [ "$(find "$QSTATE/sessions" -name 'fill.*' | wc -l)" = 0 ] || fail "isolation: a session's disk was not bounded by worker.disk_max"
    say "a GPU session after the bombs: $(tr '\n' ';' <"$ISO/after-bombs.out")"
    grep -q "after freeing: cudaSuccess" "$ISO/after-bombs.out" || fail "isolation: the session after the memory bombs failed"
    say "  worker: $(grep -h 'probe: lift' "$STATE"/sessions/*/worker.log | head -1)"
    grep -q "probe: lift the session's memory limit: Read-only file system" "$STATE"/sessions/*/worker.log ||
        fail "isolation: the sandboxed worker could write its session's memory limit"
    say "wrong token: $(head -1 "$ISO/badtoken.err")"
    grep -q "appliance refused: bad token" "$ISO/badtoken.err" || fail "isolation: a wrong token was not refused"
else
    say "isolation checks: not carried ($CARRY/isolation/long_runner missing)"
fi
# ==== end of the isolation section ================================================================

# ---- 6. what the daemon recorded ---------------------------------------------------------------
say ""
say "== daemon state"
{
    echo "### GET /status?format=table"; http_get "/status?format=table"
    echo; echo "### GET /status"; http_get /status
} >"$OUT/status.txt" 2>&1
http_get /metrics >"$OUT/metrics.txt" 2>&1
say "GPU health in /metrics: $(grep -E '^vmcuda_gpu_(temperature_celsius|power_watts|sm_clock_hertz|ecc_uncorrected_errors)' "$OUT/metrics.txt" | sed 's/{.*}//' | paste -sd';' | tr -s ' ')"
# XID errors: the daemon's watcher on NVML's events (none expected during a run; that it watches is what counts)
say "XID watcher: $(grep -oE 'GPU XID errors (watched on [0-9]+ GPU\(s\)|not watched: .*)' "$OUT/daemon.log" | head -1); $(grep -E '^vmcuda_gpu_xid_(watched_gpus|errors_total)' "$OUT/metrics.txt" | sed 's/{.*}//' | paste -sd';')"
total="$(grep -oE '"sessions_total"[[:space:]]*:[[:space:]]*[0-9]+' "$OUT/status.txt" | grep -oE '[0-9]+$')"
expected=$((${#PROGRAMS[@]} + 8 + 1))
say "sessions_total: ${total:-absent} (vmcuda runs made: $expected)"
if [ -z "$total" ] || [ "$total" -lt "$expected" ]; then fail "/status sessions_total ${total:-absent} < $expected"; fi

if [ -f "$STATE/sessions.jsonl" ]; then
    cp "$STATE/sessions.jsonl" "$OUT/sessions.jsonl"
    say "session records: $(grep -c . "$STATE/sessions.jsonl"); worker logs: $(ls "$STATE"/sessions/*/worker.log 2>/dev/null | wc -l)"
    say "per-session setup times (from sessions.jsonl; fields named *setup*, *_ms, *_us):"
    if command -v python3 >/dev/null; then
        python3 - "$STATE/sessions.jsonl" <<'PY' | head -40 | tee -a "$SUMMARY"
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    try:
        r = json.loads(line)
    except ValueError:
        print("  (unparsable record) " + line[:120]); continue
    def flat(d, pre=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from flat(v, pre + k + ".")
            else:
                yield pre + k, v
    f = dict(flat(r))
    times = {k: v for k, v in f.items() if "setup" in k.lower() or k.endswith(("_ms", "_us", "Ms", "Micros"))}
    ident = " ".join(str(f[k]) for k in ("id", "session_id", "program", "name") if k in f)
    if "cache_hit" in f:
        ident += " cache_hit=" + str(f["cache_hit"]).lower()
    print("  " + ident + "  " + " ".join(f"{k}={v}" for k, v in sorted(times.items())))
PY
    else
        grep -oE '"(name|[a-z_]*setup[a-z_]*|[a-z_]*_ms)"[[:space:]]*:[[:space:]]*("[^"]*"|[0-9.]+)' "$STATE/sessions.jsonl" \
            | paste -sd' ' | fold -w 160 | head -40 | sed 's/^/  /' | tee -a "$SUMMARY"
    fi
else
    fail "no $STATE/sessions.jsonl"
fi

stop_daemon
say ""
if [ "$failures" -eq 0 ]; then say "RESULT: PASS (all checks)"; else say "RESULT: FAIL ($failures failed checks; see diffs.txt)"; fi
exit $((failures == 0 ? 0 : 1))
