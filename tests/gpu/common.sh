# What the GPU-machine scripts that run appliances of their own share (run-pool-on-device.sh,
# run-ucx-on-device.sh); sourced after they set REPO, CARRY, OUT and WORK. It makes $WORK afresh, the summary
# ($SUMMARY, also on stdout), say/fail, the process groups to stop on exit (PIDS), the bundle ($ROOT), the
# image's real CUDA runtime ($REAL_CUDART_DIR), and start_daemon.
mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK/carried"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
failures=0
say() { echo "$*" | tee -a "$SUMMARY"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
now() { date +%s.%N; }

# process groups started with setsid (daemons, etcd): TERM, then KILL, when the script ends; a script adds its
# own clean-up by defining finish_more
PIDS=()
finish() {
    for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
    if declare -F finish_more >/dev/null; then finish_more; fi
}
trap finish EXIT

# the bundle carried from the build machine (prepare-carry.sh), with its own Java
tar -xzf "$CARRY/vmcuda-bundle.tar.gz" -C "$WORK" || { fail "cannot extract the bundle"; exit 1; }
ROOT="$(ls -d "$WORK"/vmcuda-*/ | head -1)"
ROOT="${ROOT%/}"
REAL_CUDART_DIR="$(dirname "$(readlink -f "$(ldconfig -p | awk '/libcudart\.so\.13 /{print $NF; exit}')" 2>/dev/null)" 2>/dev/null)"
[ -d "$REAL_CUDART_DIR" ] || REAL_CUDART_DIR=/usr/local/cuda/lib64

# start_daemon LOG PORT STATE_DIR CONFIG [VAR=VALUE...]: vmcudad from the bundle on 127.0.0.1:PORT (admin PORT+1)
# in a process group of its own (its pid in DAEMON_PID), with VAR=VALUE in its environment, waited for until it
# listens (0) or up to 60 s (1). One after the other (JCuda, which the daemon used before, unpacked its native
# library into /tmp under a fixed name, and two JVMs doing it at once crashed in the dynamic loader; JNA unpacks
# into a file of its own per JVM).
start_daemon() {
    local log=$1 port=$2 state=$3 config=$4
    shift 4
    env "$@" setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$port" --admin "127.0.0.1:$((port + 1))" \
        --state-dir "$state" --config "$config" --worker-lib-dir "$ROOT/native" >"$log" 2>&1 </dev/null &
    DAEMON_PID=$!
    PIDS+=($!)
    for _ in $(seq 1 300); do grep -q "listening on" "$log" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}
