#!/usr/bin/env bash
# The driver front end (libcuda.so.1) on the lent GPU machine, with the client GPU-less as in a client VM
# (tests/gpu/gpuless.sh: /dev/nvidia* are /dev/null, NVIDIA's libcuda.so.1 is vmcuda's) and the appliance
# daemon outside with the real driver. Builds nothing of vmcuda: tests/gpu/prepare-carry.sh --driver put
# the bundle and the prebuilt programs in .carry/. Device tool call:
#     run(command="bash tests/gpu/run-driver-on-device.sh",
#         carry=[".carry/vmcuda-bundle.tar.gz", ".carry/driver.tar.xz"])
#
# Sections (SECTIONS="..." picks some; default all, in this order, about 8 minutes on an H100):
#   namespace   the GPU-less namespace hides the GPU (a native run inside must fail)
#   discovery   natively, under the tracer: which procs and private tables CUDA 13 programs, the math
#               libraries and the frameworks ask the real driver for (tests/driver/discovery); builds
#               the library test programs with this machine's nvcc and pip wheels (tests/libs)
#   programs    every tests/cuda program built with nvcc's default static runtime, drv_api and
#               rt_static: native vs vmcuda over the ring and over TCP, stdout and exit code must match
#   libs        the library programs (static and -cudart shared variants): native vs vmcuda
#   frameworks  tests/gpu/framework_smoke.py with PyTorch and CuPy (and PyTorch's CUDA tensors shared between
#               processes, CUDA IPC): native vs vmcuda
#   probes      tests/gpu/framework_probe.py (PyTorch, CuPy, JAX, NVML; issue 16), probe by probe, with the
#               timing of a GPT-style step: a survey, not counted in RESULT (only when named in SECTIONS)
#   (PROGRAMS="NAME..." runs only those programs of the sections chosen; VMCUDA_TRACE=all traces every
#   driver call of the vmcuda runs on their stderr, in diffs.txt for failures; the default is "errors")
#   bench       bench_cublas (SGEMM 4096, 10,000 small SGEMMs, start-up) native vs vmcuda (ring, TCP),
#               and the start-up of a static-runtime sample, cold (first session) and warm
#   framebench  issue 16's framework figures in one run (only when named in SECTIONS, bench-frameworks.txt):
#               the GPT-style step native vs ring vs TCP with round trips per step (VMCUDA_STATS), PyTorch's
#               start-up (`torch.ones(1).cuda()`) against an empty module cache and again, and a training
#               process SIGKILLed mid-step: how long until its GPU memory is back
#
# $OUT gets: summary.txt (also on stdout), diffs.txt, daemon.log, worker-logs.tar.gz, bench-driver.txt,
# procmap.tsv, traces.tar.gz. Exit code 0 when every correctness check passed.
set -uo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
CARRY="${CARRY:-$REPO/.carry}"
OUT="${OUT:-/tmp/vmcuda-driver-out}"
WORK=/tmp/vmcuda-driver
STATE="$WORK/state"
PORT=17170
ADMIN=17171
TIMEOUT="${VMCUDA_TEST_TIMEOUT:-120}"
SECTIONS="${SECTIONS:-namespace discovery programs libs frameworks bench}"
SUMMARY="$OUT/summary.txt"
DIFFS="$OUT/diffs.txt"
LIBS="$WORK/libs"

mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK"/{native,ring,tcp} "$STATE" "$LIBS"
: >"$SUMMARY"
: >"$DIFFS"
failures=0

say() { echo "$*" | tee -a "$SUMMARY"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

DPID=""
finish() {
    if [ -n "$DPID" ]; then
        kill -TERM -- "-$DPID" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.2; done
        kill -KILL -- "-$DPID" 2>/dev/null
    fi
    [ -d "$STATE/sessions" ] && tar -czf "$OUT/worker-logs.tar.gz" -C "$STATE" sessions 2>/dev/null
    [ -s "$DIFFS" ] || rm -f "$DIFFS"
}
trap finish EXIT

say "== vmcuda driver front end on a GPU $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | paste -sd';')"
tar -xzf "$CARRY/vmcuda-bundle.tar.gz" -C "$WORK" || { fail "cannot extract $CARRY/vmcuda-bundle.tar.gz"; exit 1; }
ROOT="$(ls -d "$WORK"/vmcuda-*/ 2>/dev/null | head -1)"
ROOT="${ROOT%/}"
CLIENT="$ROOT/client"
[ -f "$CLIENT/libcuda.so.1" ] || { fail "the bundle has no client/libcuda.so.1"; exit 1; }
D="$WORK/carried"
mkdir -p "$D"
tar -xJf "$CARRY/driver.tar.xz" -C "$D" || { fail "cannot extract $CARRY/driver.tar.xz (prepare-carry.sh --driver)"; exit 1; }
REAL_CUDART_DIR="$(dirname "$(readlink -f "$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')" 2>/dev/null)" 2>/dev/null)"
[ -d "$REAL_CUDART_DIR" ] || REAL_CUDART_DIR=/usr/local/cuda/lib64
say "bundle: $(basename "$ROOT"); real libcudart in $REAL_CUDART_DIR; sections: $SECTIONS"

setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --state-dir "$STATE" \
    --worker-lib-dir "$ROOT/native" >"$OUT/daemon.log" 2>&1 </dev/null &
DPID=$!
for _ in $(seq 1 300); do grep -q "listening on" "$OUT/daemon.log" 2>/dev/null && break; sleep 0.2; done
grep -q "listening on" "$OUT/daemon.log" || { fail "vmcudad did not start"; tail -5 "$OUT/daemon.log"; exit 1; }
say "daemon: $(grep -o '[0-9]* GPU(s)' "$OUT/daemon.log" | head -1)"

# run_prog MODE DIR NAME COMMAND...   MODE: native | ring | tcp. Output DIR/NAME.{out,err,rc,t}.
run_prog() {
    local mode="$1" dir="$2" name="$3" t0
    shift 3
    t0="$(now)"
    if [ "$mode" = native ]; then
        (cd "$WORK" && LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" "$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
    elif [ "$mode" = tls ]; then # TCP inside TLS, to the frameworks section's TLS daemon
        (cd "$WORK" && VMCUDA_TRACE="${VMCUDA_TRACE:-errors}" VMCUDA_APPLIANCE="127.0.0.1:$TLS_PORT" VMCUDA_TRANSPORT=tcp \
            VMCUDA_TLS_CA="$TLS_CERT" LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" bash "$REPO/tests/gpu/gpuless.sh" \
            "$CLIENT" "$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
    else
        (cd "$WORK" && VMCUDA_TRACE="${VMCUDA_TRACE:-errors}" VMCUDA_APPLIANCE="127.0.0.1:$PORT" VMCUDA_TRANSPORT="$([ "$mode" = tcp ] && echo tcp || echo shm)" \
            LD_LIBRARY_PATH="$REAL_CUDART_DIR" timeout "$TIMEOUT" bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" "$@" \
            >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
    fi
    echo $? >"$dir/$name.rc"
    secs "$t0" "$(now)" >"$dir/$name.t"
}

# judge LABEL NAME VMCUDA_DIR: stdout and exit code of the vmcuda run against the native run.
judge() {
    local label="$1" name="$2" vd="$3" nrc vrc why=""
    nrc="$(cat "$WORK/native/$name.rc")"
    vrc="$(cat "$vd/$name.rc")"
    [ "$nrc" = 0 ] || why="native exit $nrc"
    [ "$vrc" = "$nrc" ] || why="${why:+$why; }exit $vrc vs native $nrc"
    cmp -s "$WORK/native/$name.out" "$vd/$name.out" || why="${why:+$why; }stdout differs"
    if [ -z "$why" ]; then
        printf 'PASS   %-26s %-5s native %6ss  vmcuda %6ss\n' "$name" "$label" "$(cat "$WORK/native/$name.t")" "$(cat "$vd/$name.t")" | tee -a "$SUMMARY"
    else
        printf 'FAIL   %-26s %-5s %s\n' "$name" "$label" "$why" | tee -a "$SUMMARY"
        failures=$((failures + 1))
        {
            echo "===== $label $name: $why"
            diff -u --label "native/$name" --label "vmcuda/$name" "$WORK/native/$name.out" "$vd/$name.out" | head -80
            echo "----- vmcuda stderr (tail)"; tail -25 "$vd/$name.err"
            echo "----- native stderr (tail)"; tail -5 "$WORK/native/$name.err"
            [ "$nrc" = 0 ] || { echo "----- native stdout (lines other than ok)"; grep -v ': ok$' "$WORK/native/$name.out" | tail -15; }
        } >>"$DIFFS"
    fi
}

compare() { # NAME COMMAND...: native, ring, tcp
    local name="$1"
    shift
    # PROGRAMS="a b" limits the run to those names (for a quick look at a few)
    [ -z "${PROGRAMS:-}" ] || [[ " $PROGRAMS " == *" $name "* ]] || return 0
    run_prog native "$WORK/native" "$name" "$@"
    run_prog ring "$WORK/ring" "$name" "$@"
    judge ring "$name" "$WORK/ring"
    case "$name" in
    zero_copy | drv_hostmap | managed | graph_host) # mapped and managed memory, and graphs that copy this process's
        # memory, exist on the co-located path only (over TCP: refused)
        printf 'SKIP   %-26s %-5s mapped host memory needs the co-located path\n' "$name" tcp | tee -a "$SUMMARY"
        return 0 ;;
    esac
    run_prog tcp "$WORK/tcp" "$name" "$@"
    judge tcp "$name" "$WORK/tcp"
}

if want namespace; then
    say ""
    say "== the client namespace"
    bash "$REPO/tests/gpu/gpuless.sh" --check "$CLIENT" 2>&1 | tee -a "$SUMMARY" | grep -q "sees no GPU" ||
        fail "the GPU-less namespace still reaches a GPU"
    # the real driver, loaded by absolute path inside the namespace, must find no device either
    real="$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')"
    [ -n "$real" ] || fail "no NVIDIA libcuda.so.1 in the ldconfig cache of this machine"
    [ -n "$real" ] && inside="$(bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" python3 -c "
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
print('cuInit inside the namespace through', sys.argv[1], '->', lib.cuInit(0))" "$real" 2>&1 | tail -1)"
    [ -n "$real" ] && say "$inside (that file is vmcuda's libcuda.so.1 there; with no appliance set it returns an error)"
fi

if want discovery; then
    say ""
    say "== discovery (natively, real driver, under the tracer)"
    DISC_TOOLS="$D/disc-tools" DISC_STATIC="$D/cuda-static" DISC_LIBS="$LIBS" OUT="$WORK/disc-out" \
        timeout 300 bash "$REPO/tests/driver/discovery/run-discovery.sh" >/dev/null 2>&1
    sed 's/^/  /' "$WORK/disc-out/summary.txt" 2>/dev/null | head -60 | tee -a "$SUMMARY"
    cp "$WORK/disc-out/procmap.tsv" "$WORK/disc-out/traces.tar.gz" "$OUT/" 2>/dev/null
fi
if [ -z "$(ls -A "$LIBS" 2>/dev/null)" ] && { want libs || want bench; }; then
    t0="$(now)"
    bash "$REPO/tests/libs/build-on-device.sh" "$LIBS" >"$WORK/libs-build.txt" 2>&1 || fail "building tests/libs (see below)"
    say "library programs built in $(secs "$t0" "$(now)") s"
    grep -v "^wheel" "$WORK/libs-build.txt" | head -20 | sed 's/^/  /' | tee -a "$SUMMARY"
fi

if want programs; then
    say ""
    say "== static-runtime samples and driver-API programs: native vs vmcuda (ring, tcp)"
    for p in "$D"/cuda-static/* "$D"/driver/drv_api "$D"/driver/rt_static "$D"/driver/graph_topology "$D"/driver/graph_host "$D"/driver/drv_hostmap "$D"/driver/drv_threads "$D"/driver/drv_fork "$D"/driver/drv_capture_query; do
        [ -f "$p" ] && [ -x "$p" ] || continue
        compare "$(basename "$p")" "$p"
    done
    # NVML: the same program against NVIDIA's NVML and vmcuda's, without and with a CUDA context
    if [ -x "$D/driver/nvml_probe" ]; then
        # without a context of its own, nvml_probe lists the GPU's other compute processes: natively any process
        # still there (the worker of a session that is ending) would be counted, through vmcuda never (a session's
        # NVML lists only its own): wait until the GPU has none (run 62 saw one linger)
        for _ in $(seq 1 100); do
            [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ] && break
            sleep 0.1
        done
        compare nvml_probe "$D/driver/nvml_probe"
        compare nvml_probe_context "$D/driver/nvml_probe" --context
        real_nvml="$(ldconfig -p | awk '/libnvidia-ml\.so\.1 /{print $NF; exit}')"
        if [ -n "$real_nvml" ]; then
            nm -D --defined-only "$real_nvml" | awk '{print $3}' | sed 's/@.*//' | grep '^nvml' | sort -u >"$WORK/nvml-real.txt"
            nm -D --defined-only "$CLIENT/libnvidia-ml.so.1" | awk '{print $3}' | sort -u >"$WORK/nvml-vmcuda.txt"
            cp "$WORK/nvml-real.txt" "$OUT/nvml-exports-real.txt"
            say "NVML exports: NVIDIA's $(wc -l <"$WORK/nvml-real.txt") nvml* names ($real_nvml), vmcuda's $(wc -l <"$WORK/nvml-vmcuda.txt");" \
                "only NVIDIA's: $(comm -23 "$WORK/nvml-real.txt" "$WORK/nvml-vmcuda.txt" | wc -l)" \
                "($(comm -23 "$WORK/nvml-real.txt" "$WORK/nvml-vmcuda.txt" | head -12 | tr '\n' ' '))," \
                "only vmcuda's: $(comm -13 "$WORK/nvml-real.txt" "$WORK/nvml-vmcuda.txt" | wc -l)" \
                "($(comm -13 "$WORK/nvml-real.txt" "$WORK/nvml-vmcuda.txt" | head -12 | tr '\n' ' '))"
        fi
    fi
fi

if want libs; then
    say ""
    say "== math libraries: native vs vmcuda (ring, tcp)"
    for p in "$LIBS"/*; do
        [ -f "$p" ] && [ -x "$p" ] || continue
        case "$(basename "$p")" in bench_*) continue ;; esac
        compare "$(basename "$p")" "$p"
    done
fi

if want frameworks; then
    say ""
    say "== frameworks: native vs vmcuda (ring, tcp)"
    for fw in torch cupy torch_ipc; do
        compare "framework_$fw" python3 "$REPO/tests/gpu/framework_smoke.py" "$fw"
    done
    # the same over TCP inside TLS (PROTOCOL.md "Encryption"), against a daemon with a certificate made here
    TLS_PORT=17195
    # shellcheck source=tls-daemon.sh
    . "$REPO/tests/gpu/tls-daemon.sh"
    if start_tls_daemon "$TLS_PORT" 17196; then
        mkdir -p "$WORK/tls-run"
        for fw in torch cupy; do
            run_prog tls "$WORK/tls-run" "framework_$fw" python3 "$REPO/tests/gpu/framework_smoke.py" "$fw"
            judge tls "framework_$fw" "$WORK/tls-run"
        done
        kill -TERM -- "-$TLS_PID" 2>/dev/null; sleep 1; kill -KILL -- "-$TLS_PID" 2>/dev/null
    else
        fail "tls: $TLS_PROBLEM"
    fi
fi

if want probes; then
    say ""
    say "== framework probes (tests/gpu/framework_probe.py, issue 16; not counted in RESULT): native vs vmcuda over ${PROBE_MODE:-ring} (PROBE_MODE=ring|tcp)"
    pm="${PROBE_MODE:-ring}"
    for fw in ${PROBE_FRAMEWORKS:-torch cupy jax nvml}; do
        run_prog native "$WORK/native" "probe_$fw" python3 -X faulthandler "$REPO/tests/gpu/framework_probe.py" "$fw"
        run_prog "$pm" "$WORK/$pm" "probe_$fw" python3 -X faulthandler "$REPO/tests/gpu/framework_probe.py" "$fw"
        cp "$WORK/$pm/probe_$fw.err" "$OUT/probe_$fw-vmcuda.err" 2>/dev/null
        say "  $fw: native exit $(cat "$WORK/native/probe_$fw.rc") in $(cat "$WORK/native/probe_$fw.t") s, vmcuda exit $(cat "$WORK/$pm/probe_$fw.rc") in $(cat "$WORK/$pm/probe_$fw.t") s"
        # one line per probe of the native run: the same line through vmcuda, or what vmcuda printed instead
        awk -F': ' 'NR == FNR { v[$1] = $0; next } { k = $1; if (!(k in v)) print "    DIFF  " $0 "  <>  vmcuda: (nothing)"; else if (v[k] == $0) print "    same  " $0; else print "    DIFF  " $0 "  <>  vmcuda: " v[k] }' \
            "$WORK/$pm/probe_$fw.out" "$WORK/native/probe_$fw.out" | cut -c1-400 | tee -a "$SUMMARY"
        for key in $(grep -h '^time ' "$WORK/native/probe_$fw.err" | awk '{print $2}'); do
            n="$(grep -h "^time $key " "$WORK/native/probe_$fw.err" | awk '{print $3}')"
            v="$(grep -h "^time $key " "$WORK/$pm/probe_$fw.err" | awk '{print $3}')"
            say "    time $key: native $n, vmcuda ${v:-(none)}$( [ -n "$v" ] && awk -v a="$n" -v b="$v" 'BEGIN { printf ", ratio %.2f", b / a }')"
        done
        grep -h "^vmcuda: " "$WORK/$pm/probe_$fw.err" | sort | uniq | head -15 | sed 's/^/    vmcuda said: /' | tee -a "$SUMMARY"
    done
fi

if want bench; then
    say ""
    say "== benchmarks (bench-driver.txt): ratio = vmcuda / native"
    B="$OUT/bench-driver.txt"
    {
        echo "# tests/gpu/run-driver-on-device.sh bench, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
    } >"$B"
    if [ -x "$LIBS/bench_cublas" ]; then
        for mode in native ring tcp; do
            run_prog "$mode" "$WORK/$mode" bench_cublas "$LIBS/bench_cublas" 4096 20 10000
            { echo "## bench_cublas $mode (rc $(cat "$WORK/$mode/bench_cublas.rc"))"; cat "$WORK/$mode/bench_cublas.out";
              grep checksum "$WORK/$mode/bench_cublas.err"; } >>"$B"
        done
        for mode in ring tcp; do
            cmp -s <(grep checksum "$WORK/native/bench_cublas.err") <(grep checksum "$WORK/$mode/bench_cublas.err") ||
                fail "bench_cublas over $mode: checksum differs from native"
            paste <(cat "$WORK/native/bench_cublas.out") <(cat "$WORK/$mode/bench_cublas.out") |
                awk -v m="$mode" '{printf "  %-22s %-5s native %10s %-9s vmcuda %10s  ratio %.2f\n", $1, m, $2, $3, $5, ($2 > 0 ? $5 / $2 : 0)}' |
                tee -a "$SUMMARY" >>"$B"
        done
    else
        fail "bench: no bench_cublas (building tests/libs failed?)"
    fi
    # start-up of a cuBLAS program against a second daemon with an empty module cache and an empty client
    # hash cache: the first session hashes and sends cuBLAS's module images (cold), the second finds their
    # hashes in the client's cache and the images in the appliance's (warm); bytes from worker.log
    if [ -x "$LIBS/bench_cublas" ]; then
        CSTATE="$WORK/cold-state"
        mkdir -p "$CSTATE"
        setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:17180" --admin "127.0.0.1:17181" --state-dir "$CSTATE" \
            --worker-lib-dir "$ROOT/native" >"$WORK/cold-daemon.log" 2>&1 </dev/null &
        CPID=$!
        for _ in $(seq 1 300); do grep -q "listening on" "$WORK/cold-daemon.log" 2>/dev/null && break; sleep 0.2; done
        run_prog native "$WORK/native" cublas-startup "$LIBS/bench_cublas" 256 1 10
        rm -rf "$WORK/client-cache" # the client's module hash cache starts empty too (drv_image_hash.c)
        for round in cold warm; do
            (cd "$WORK" && XDG_CACHE_HOME="$WORK/client-cache" VMCUDA_APPLIANCE="127.0.0.1:17180" VMCUDA_TRANSPORT=shm LD_LIBRARY_PATH="$REAL_CUDART_DIR" \
                timeout "$TIMEOUT" bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" "$LIBS/bench_cublas" 256 1 10 \
                >"$WORK/ring/cublas-$round.out" 2>&1 </dev/null)
            sleep 1 # the session's images are admitted to the cache when it ends
            log="$(ls -dtr "$CSTATE"/sessions/*/ 2>/dev/null | tail -1)worker.log"
            sent="$(awk '/received from the client/ {gsub(/[(]/, "", $0); for (i = 1; i <= NF; i++) if ($i == "bytes)") s += $(i - 1)} END {print s + 0}' "$log" 2>/dev/null)"
            cached="$(grep -c "from the appliance's cache" "$log" 2>/dev/null)"
            line="cublas start-up $round: $(grep init_and_first "$WORK/ring/cublas-$round.out" | awk '{print $2}') s to the first SGEMM (native $(grep init_and_first "$WORK/native/cublas-startup.out" | awk '{print $2}') s); module bytes sent $sent, images from the cache $cached"
            say "  $line"
            echo "$line" >>"$B"
        done
        kill -TERM -- "-$CPID" 2>/dev/null; sleep 1; kill -KILL -- "-$CPID" 2>/dev/null
    fi
    # start-up of a static-runtime program: the first session (cold: module upload) and a second one
    s="$D/cuda-static/vector_add"
    [ -x "$s" ] || s="$(ls "$D"/cuda-static/* 2>/dev/null | head -1)"
    if [ -x "$s" ]; then
        run_prog native "$WORK/native" startup "$s"
        run_prog ring "$WORK/ring" startup-cold "$s"
        run_prog ring "$WORK/ring" startup-warm "$s"
        line="startup $(basename "$s"): native $(cat "$WORK/native/startup.t") s, vmcuda first $(cat "$WORK/ring/startup-cold.t") s, again $(cat "$WORK/ring/startup-warm.t") s"
        say "  $line"
        echo "$line" >>"$B"
    fi
fi

if want framebench; then
    say ""
    say "== frameworks in one run (bench-frameworks.txt): native vs vmcuda over the ring and over TCP"
    FB="$OUT/bench-frameworks.txt"
    echo "# tests/gpu/run-driver-on-device.sh framebench, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)" >"$FB"
    steps="${PROBE_GPT_STEPS:-20}"
    parts="${FRAMEBENCH_PARTS:-gpt startup kill}"
    part() { [[ " $parts " == *" $1 "* ]]; }
    part gpt && for mode in native ring tcp; do
        PROBE_ONLY=gpt PROBE_GPT_STEPS="$steps" VMCUDA_STATS=1 run_prog "$mode" "$WORK/$mode" gpt python3 "$REPO/tests/gpu/framework_probe.py" torch
    done
    part gpt && for key in gpt_train_step_ms gpt_infer_batch1_ms; do
        n="$(grep -h "^time $key " "$WORK/native/gpt.err" | awk '{print $3}')"
        row="$key native $n"
        for mode in ring tcp; do
            v="$(grep -h "^time $key " "$WORK/$mode/gpt.err" | awk '{print $3}')"
            row="$row $mode ${v:-none}$( [ -n "$v" ] && [ -n "$n" ] && awk -v a="$n" -v b="$v" 'BEGIN { printf " (%.2fx)", b / a }')"
        done
        say "  $row"; echo "$row" >>"$FB"
    done
    part gpt && for mode in ring tcp; do
        line="gpt $mode calls for $steps training steps + inference + set-up: $(grep -h 'vmcuda stats: .* synchronous calls' "$WORK/$mode/gpt.err" | sed 's/^vmcuda stats: //')"
        say "  $line"; echo "$line" >>"$FB"
        grep -h "^vmcuda stats: " "$WORK/$mode/gpt.err" | head -12 | sed "s/^/  [$mode] /" >>"$FB"
    done
    # PyTorch's start-up against a second daemon whose module cache is empty, then again (client hash cache
    # emptied first too): time to a first matrix product on the GPU (torch.ones(1).cuda() alone launches no
    # kernel, so loads no module), and the module bytes the client sent
    STARTUP='import time; t = time.perf_counter(); import torch; a = torch.ones(256, 256).cuda(); (a @ a).sum().item(); print("startup_s %.3f" % (time.perf_counter() - t))'
    if part startup; then
    CSTATE="$WORK/torch-cold-state"; rm -rf "$CSTATE"; mkdir -p "$CSTATE"
    setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:17180" --admin "127.0.0.1:17181" --state-dir "$CSTATE" \
        --worker-lib-dir "$ROOT/native" >"$WORK/torch-cold-daemon.log" 2>&1 </dev/null &
    CPID=$!
    for _ in $(seq 1 300); do grep -q "listening on" "$WORK/torch-cold-daemon.log" 2>/dev/null && break; sleep 0.2; done
    (cd "$WORK" && timeout "$TIMEOUT" python3 -c "$STARTUP" >"$WORK/native/torch-startup.out" 2>&1 </dev/null)
    rm -rf "$WORK/client-cache"
    for round in cold warm; do
        for mode in ring tcp; do
            [ "$round" = cold ] && [ "$mode" = tcp ] && continue # cold once: the ring run fills both caches
            (cd "$WORK" && XDG_CACHE_HOME="$WORK/client-cache" VMCUDA_APPLIANCE="127.0.0.1:17180" \
                VMCUDA_TRANSPORT="$([ "$mode" = tcp ] && echo tcp || echo shm)" LD_LIBRARY_PATH="$REAL_CUDART_DIR" \
                timeout "$TIMEOUT" bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" python3 -c "$STARTUP" \
                >"$WORK/$mode/torch-startup-$round.out" 2>&1 </dev/null)
            sleep 1 # the session's images are admitted to the cache when it ends
            log="$(ls -dtr "$CSTATE"/sessions/*/ 2>/dev/null | tail -1)worker.log"
            sent="$(awk '/received from the client/ {gsub(/[(]/, "", $0); for (i = 1; i <= NF; i++) if ($i == "bytes)") s += $(i - 1)} END {print s + 0}' "$log" 2>/dev/null)"
            cached="$(grep -c "from the appliance's cache" "$log" 2>/dev/null)"
            line="torch start-up $round $mode: $(awk '/^startup_s/ {print $2}' "$WORK/$mode/torch-startup-$round.out") s (native $(awk '/^startup_s/ {print $2}' "$WORK/native/torch-startup.out") s); module bytes sent $sent, images from the appliance's cache $cached"
            say "  $line"; echo "$line" >>"$FB"
        done
    done
    kill -TERM -- "-$CPID" 2>/dev/null; sleep 1; kill -KILL -- "-$CPID" 2>/dev/null
    fi
    # a training process SIGKILLed mid-step: its worker ends and the GPU memory comes back (the issue: within 1 s)
    used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1 | tr -d ' '; }
    if part kill; then
    base="$(used)"
    TRAIN='import torch, sys
m = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096)).cuda()
o = torch.optim.AdamW(m.parameters())
x = torch.randn(4096, 4096, device="cuda")
for i in range(100000):
    o.zero_grad(); m(x).square().mean().backward(); o.step()
    if i % 10 == 0: torch.cuda.synchronize(); print("step", i, flush=True)'
    (cd "$WORK" && VMCUDA_APPLIANCE="127.0.0.1:$PORT" VMCUDA_TRANSPORT=tcp LD_LIBRARY_PATH="$REAL_CUDART_DIR" \
        timeout 120 bash "$REPO/tests/gpu/gpuless.sh" "$CLIENT" python3 -c "$TRAIN" >"$WORK/tcp/train-kill.out" 2>&1 </dev/null) &
    trainer=$!
    for _ in $(seq 1 600); do grep -q "^step 20" "$WORK/tcp/train-kill.out" 2>/dev/null && break; sleep 0.1; done
    during="$(used)"
    pkill -KILL -f "^python3 -c import torch, sys" 2>/dev/null
    t0="$(now)"; back=""
    for _ in $(seq 1 100); do
        [ "$(used)" -le $((base + 64)) ] && { back="$(secs "$t0" "$(now)")"; break; }
        sleep 0.05
    done
    wait "$trainer" # (not a bare wait: the daemons are this shell's children too)
    line="training process SIGKILLed at $(grep -c '^step' "$WORK/tcp/train-kill.out") progress lines: GPU memory ${base} MiB before, ${during} MiB while training, back to ≤ base + 64 MiB after ${back:-more than 5} s"
    say "  $line"; echo "$line" >>"$FB"
    [ -n "$back" ] || fail "framebench: the killed training process's GPU memory was not back within 5 s"
    fi
fi

# Every program above ran to its end (framebench's deliberate kill aside): the daemon must not record one of
# them as aborted (it did for stream_ptds while its callback thread waited in the callback channel at exit).
if [ -f "$STATE/sessions.jsonl" ] && ! want framebench; then
    say ""
    aborted="$(grep -c '"state":"aborted"' "$STATE/sessions.jsonl")"
    say "== session records: $(wc -l <"$STATE/sessions.jsonl") written, $aborted aborted"
    grep '"state":"aborted"' "$STATE/sessions.jsonl" |
        sed -E 's/.*"program":"([^"]*)".*"reason":"([^"]*)".*/  aborted: \1 (\2)/' | tee -a "$SUMMARY"
    [ "$aborted" -eq 0 ] || fail "sessions of programs that ran to their end recorded as aborted"
fi

say ""
if [ "$failures" -eq 0 ]; then say "RESULT: PASS"; else say "RESULT: FAIL ($failures failed checks; diffs.txt)"; fi
exit $((failures == 0 ? 0 : 1))
