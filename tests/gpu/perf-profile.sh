# What the profiling scripts share (sourced by profile-tcp.sh and profile-small-calls.sh, which set WORK, CARRY,
# REPORT, FREQ, PORT, ADMIN and ROOT, and define say()): the carried perf, a daemon on loopback, and profile().
#   PROFILE_SORT    perf's sort keys for the top-symbol list (default pid,sym)
#   PROFILE_LIMIT   its percent limit (default 1.5)
#   PROFILE_ROWS    how many of its rows (default 30)

perf_ok=0
if [ -f "$CARRY/perf.tar.gz" ]; then
    mkdir -p "$WORK/perf" && tar -xzf "$CARRY/perf.tar.gz" -C "$WORK/perf"
    perf_() { LD_LIBRARY_PATH="$WORK/perf/lib" "$WORK/perf/perf" "$@"; }
    if perf_ --version >/dev/null 2>&1; then perf_ok=1; say "perf: $(perf_ --version)"; else say "perf: carried but does not run: $(perf_ --version 2>&1 | head -1)"; fi
else
    say "perf: not carried (tests/gpu/prepare-carry.sh --with-perf): timings only"
fi

# The appliance daemon of the bundle at $ROOT on 127.0.0.1:$PORT, stopped when the script exits.
start_daemon() {
    setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --state-dir "$WORK/state" \
        --worker-lib-dir "$ROOT/native" >"$WORK/daemon.log" 2>&1 </dev/null &
    DPID=$!
    trap 'kill -TERM -- -$DPID 2>/dev/null; sleep 1; kill -KILL -- -$DPID 2>/dev/null' EXIT
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
}

# Runs a command (a command, not a function: perf executes it) under perf when perf runs here; its stdout, minus
# comment lines, goes to the report, then CPU seconds by thread and the top symbols.
profile() { # NAME COMMAND...
    local name="$1"; shift
    say ""
    say "== $name: $*"
    if [ $perf_ok = 1 ]; then
        perf_ record -q -a -e cpu-clock -F $FREQ -o "$WORK/$name.data" -- "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    else
        "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    fi
    say "exit $?"
    grep -v '^#' "$WORK/$name.out" | tee -a "$REPORT"
    grep -iE 'error|fail' "$WORK/$name.err" | head -3 | tee -a "$REPORT"
    [ $perf_ok = 1 ] || return 0
    say "-- CPU seconds by thread (samples/$FREQ; threads with >= 1 % of the samples)"
    perf_ report -i "$WORK/$name.data" --no-children --sort pid -n --stdio --percent-limit 1 2>/dev/null |
        awk -v f=$FREQ '!/^#/ && NF >= 3 { printf "  %8.2f s  %s\n", $2 / f, substr($0, index($0, $3)) }' | tee -a "$REPORT"
    say "-- top symbols by ${PROFILE_SORT:-pid,sym} (>= ${PROFILE_LIMIT:-1.5} % of all samples, idle excluded)"
    perf_ report -i "$WORK/$name.data" --no-children --sort "${PROFILE_SORT:-pid,sym}" -n --stdio \
        --percent-limit "${PROFILE_LIMIT:-1.5}" 2>/dev/null |
        grep -v '^#' | grep -v '^$' | grep -v ':swapper' | head -"${PROFILE_ROWS:-30}" | tee -a "$REPORT"
}
