#!/usr/bin/env bash
# The GPU benchmarks beyond vmcuda_bench, each natively, through vmcuda over TCP and through vmcuda's
# shared-memory ring, in this one run (called by tests/gpu/run-on-device.sh; see BENCHMARKS.md):
#   A. block-size sweep: VMCUDA_BLOCK_SIZE 128K..128M x transfers 32M, 128M, 624M, H2D and D2H pageable
#      (bench_transfer; one appliance daemon per block size, since the worker's block size is the
#      daemon's worker.block_size and the shm slot size is the client's VMCUDA_BLOCK_SIZE: both are set)
#   B. workloads shaped like the vmCUDA paper's Table 1, end to end (wall clock of the whole process):
#      blackscholes (1.90 GB moved) and matmul (4096 x 4096, 201 MB moved); stdout must match native
#   C. 1, 4 and 16 concurrent clients on one GPU: aggregate GB/s and mean per-client seconds
#      (bench_transfer --barrier: every client is set up before any starts copying)
# Tables use compare.sh's format (metric native tcp shm tcp/nat shm/nat unit; n/a = not measured);
# tests/bench/plot.py reads them.
#
#   gpu-suite.sh BENCH_DIR VMCUDA_ROOT CUDA_LIB_DIR WORK_DIR [BUDGET_SECONDS]
#     BENCH_DIR     bench_transfer, blackscholes, matmul (tests/target/bench, carried as .carry/bench)
#     VMCUDA_ROOT   the extracted bundle (bin/vmcudad, bin/vmcuda, native/)
#     CUDA_LIB_DIR  the directory of the real libcudart.so.13 (native runs)
#     WORK_DIR      scratch (daemon state, outputs); the daemons' PIDs go to WORK_DIR/daemons.pids
#     BUDGET        seconds for everything (default 150): a step that would start after it is skipped,
#                   and each step runs under `timeout` of at most what is left
# Environment: SWEEP_REPS (3), SWEEP_BLOCKS (128K 512K 1M 4M 16M 64M 128M), SWEEP_SIZES (32M 128M 624M),
# CONC_CLIENTS (1 4 16), CONC_BYTES (256M), CONC_REPS (3), WORKLOAD_RUNS (2), BASE_PORT (17100).
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: gpu-suite.sh BENCH_DIR VMCUDA_ROOT CUDA_LIB_DIR WORK_DIR [BUDGET_SECONDS]" >&2; exit 2; }
BENCH="$1" ROOT="$2" CUDA_LIB_DIR="$3" W="$4" BUDGET="${5:-150}"
SWEEP_REPS="${SWEEP_REPS:-3}"
SWEEP_BLOCKS="${SWEEP_BLOCKS:-128K 512K 1M 4M 16M 64M 128M}"
SWEEP_SIZES="${SWEEP_SIZES:-32M 128M 624M}"
CONC_CLIENTS="${CONC_CLIENTS:-1 4 16}"
CONC_BYTES="${CONC_BYTES:-256M}"
CONC_REPS="${CONC_REPS:-3}"
WORKLOAD_RUNS="${WORKLOAD_RUNS:-2}"
BASE_PORT="${BASE_PORT:-17100}"
DEFAULT_BLOCK=4M # workloads and concurrent clients run against the daemon of this block size

start_s=$(date +%s)
deadline=$((start_s + BUDGET))
rm -rf "$W"
mkdir -p "$W"/{sweep,work,conc}
: >"$W/daemons.pids"

left() { echo $((deadline - $(date +%s))); }
limit() { # STEP_MAX: seconds for the next step (0 = none left)
    local l; l=$(left)
    [ "$l" -lt "$1" ] && echo $((l > 0 ? l : 0)) || echo "$1"
}
now() { date +%s.%N; }
bytes_of() { # 4M -> 4194304
    local v="${1%[KMGkmg]}"
    case "$1" in *[Kk]) echo $((v << 10)) ;; *[Mm]) echo $((v << 20)) ;; *[Gg]) echo $((v << 30)) ;; *) echo "$v" ;; esac
}
name_of() { # bytes -> 4MiB / 128KiB (as the programs name sizes)
    if [ $(($1 % 1048576)) = 0 ]; then echo "$(($1 >> 20))MiB"; else echo "$(($1 >> 10))KiB"; fi
}

# native: the real runtime; via: vmcuda. Both with the same libraries path as run-on-device.sh.
native() { # SECONDS CMD...
    local t="$1"; shift
    env -u VMCUDA_APPLIANCE -u VMCUDA_TRANSPORT -u VMCUDA_BLOCK_SIZE \
        LD_LIBRARY_PATH="$CUDA_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout -k 5 "$t" "$@"
}
via() { # TRANSPORT BLOCK_BYTES PORT SECONDS CMD...
    local tr="$1" blk="$2" port="$3" t="$4"; shift 4
    VMCUDA_TRANSPORT="$tr" VMCUDA_BLOCK_SIZE="$blk" LD_LIBRARY_PATH="$CUDA_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        timeout -k 5 "$t" "$ROOT/bin/vmcuda" run --appliance "127.0.0.1:$port" -- "$@"
}
run_mode() { # MODE(native|tcp|shm) PORT BLOCK_BYTES SECONDS CMD...
    local m="$1" port="$2" blk="$3" t="$4"; shift 4
    if [ "$m" = native ]; then native "$t" "$@"; else via "$m" "$blk" "$port" "$t" "$@"; fi
}

# Prints a compare.sh-style table. NATIVE gives the rows and their order; TCP/SHM are looked up
# (missing = n/a). Each file: metric<TAB>value<TAB>unit.
table() { # NATIVE TCP SHM
    printf '%-40s %10s %10s %10s %8s %8s  %s\n' metric native tcp shm tcp/nat shm/nat unit
    awk -F'\t' '
        FILENAME == ARGV[1] { tcp[$1] = $2; next }
        FILENAME == ARGV[2] { shm[$1] = $2; next }
        {
            n = $2; t = ($1 in tcp) ? tcp[$1] : "n/a"; s = ($1 in shm) ? shm[$1] : "n/a"
            rt = (t != "n/a" && n + 0 > 0) ? sprintf("%.3f", t / n) : "n/a"
            rs = (s != "n/a" && n + 0 > 0) ? sprintf("%.3f", s / n) : "n/a"
            f = function_fmt(n); ft = function_fmt(t); fs = function_fmt(s)
            printf "%-40s %10s %10s %10s %8s %8s  %s\n", $1, f, ft, fs, rt, rs, $3
        }
        function function_fmt(v) { return v == "n/a" ? v : sprintf("%.3f", v) }
    ' "$2" "$3" "$1"
}

metric_lines() { grep -E $'^[A-Za-z0-9_]+\t[-0-9.eE+]+\t' "$@" 2>/dev/null; }

# ---- appliance daemons, one per block size, started together -------------------------------------
declare -A PORT_OF
stop_daemons() {
    local p
    while read -r p; do
        [ -n "$p" ] && kill -TERM -- "-$p" 2>/dev/null
    done <"$W/daemons.pids"
    sleep 1
    while read -r p; do
        [ -n "$p" ] && kill -KILL -- "-$p" 2>/dev/null
    done <"$W/daemons.pids"
    : >"$W/daemons.pids"
}
trap stop_daemons EXIT

shm_avail=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
echo "# gpu-suite: budget ${BUDGET} s; /dev/shm available: $((${shm_avail:-0} >> 20)) MiB (the ring is 4 slots of VMCUDA_BLOCK_SIZE per connection)"
i=0
for b in $SWEEP_BLOCKS; do
    blk=$(bytes_of "$b")
    port=$((BASE_PORT + i)) admin=$((BASE_PORT + 100 + i))
    d="$W/daemon-$b"
    mkdir -p "$d/state"
    printf 'worker.block_size = %s\nscheduler.max_sessions_per_gpu = 64\n' "$blk" >"$d/vmcudad.conf"
    setsid "$ROOT/bin/vmcudad" --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --state-dir "$d/state" \
        --config "$d/vmcudad.conf" --worker-lib-dir "$ROOT/native" >"$d/daemon.log" 2>&1 </dev/null &
    echo $! >>"$W/daemons.pids"
    PORT_OF[$b]=$port
    i=$((i + 1))
done
for _ in $(seq 1 300); do # up to 60 s for all JVMs
    up=0
    for b in $SWEEP_BLOCKS; do grep -q "listening on" "$W/daemon-$b/daemon.log" 2>/dev/null && up=$((up + 1)); done
    [ "$up" -ge "$(echo $SWEEP_BLOCKS | wc -w)" ] && break
    sleep 0.2
done
for b in $SWEEP_BLOCKS; do
    if ! grep -q "listening on" "$W/daemon-$b/daemon.log" 2>/dev/null; then
        echo "# daemon for block $b did not come up (skipped); last lines:"
        tail -3 "$W/daemon-$b/daemon.log" | sed 's/^/#   /'
        unset "PORT_OF[$b]"
    fi
done
echo "# daemons up after $(($(date +%s) - start_s)) s: ${!PORT_OF[*]}"

rings() { # BLOCK: shm rings attached so far by that daemon's workers
    cat "$W/daemon-$1"/state/sessions/*/worker.log 2>/dev/null | grep -c "shared-memory ring attached"
}
shm_fits() { # BLOCK_BYTES CONNECTIONS
    [ -z "$shm_avail" ] || [ $((4 * $1 * $2 + (64 << 20))) -le "$shm_avail" ]
}

# ---- A. block-size sweep -------------------------------------------------------------------------
echo
echo "== block-size sweep: bench_transfer --reps $SWEEP_REPS $SWEEP_SIZES (pageable; GB/s; best of $SWEEP_REPS)"
S="$W/sweep"
t=$(limit 60)
if [ "$t" -gt 0 ]; then
    native "$t" "$BENCH/bench_transfer" --reps "$SWEEP_REPS" $SWEEP_SIZES >"$S/native.raw" 2>"$S/native.err" ||
        echo "# native bench_transfer failed: $(tail -1 "$S/native.err")"
fi
notes=()
for b in $SWEEP_BLOCKS; do
    blk=$(bytes_of "$b")
    port="${PORT_OF[$b]:-}"
    [ -n "$port" ] || continue
    for tr in tcp shm; do
        if [ "$tr" = shm ] && ! shm_fits "$blk" 1; then
            notes+=("shm at block $b skipped: a 4 x $b ring does not fit in /dev/shm"); continue
        fi
        t=$(limit 40)
        if [ "$t" -le 0 ]; then notes+=("$tr at block $b skipped: time budget"); continue; fi
        r0=$(rings "$b")
        via "$tr" "$blk" "$port" "$t" "$BENCH/bench_transfer" --reps "$SWEEP_REPS" $SWEEP_SIZES \
            >"$S/$tr.$b.raw" 2>"$S/$tr.$b.err" || notes+=("$tr at block $b failed (rc $?): $(tail -1 "$S/$tr.$b.err")")
        if [ "$tr" = shm ] && [ "$(rings "$b")" -le "$r0" ]; then
            notes+=("shm at block $b: no ring attached (the copies fell back to TCP)")
        fi
    done
done
# rows: direction, transfer size, block size
: >"$S/native" ; : >"$S/tcp" ; : >"$S/shm"
for dir in h2d d2h; do
    for s in $SWEEP_SIZES; do
        sn=$(name_of "$(bytes_of "$s")")
        src="${dir}_pageable_$sn"
        for b in $SWEEP_BLOCKS; do
            bn=$(name_of "$(bytes_of "$b")")
            row="sweep_${dir}_pageable_blk${bn}_$sn"
            v=$(awk -F'\t' -v m="$src" '$1 == m {print $2}' "$S/native.raw" 2>/dev/null)
            printf '%s\t%s\tGB/s\n' "$row" "${v:-0}" >>"$S/native"
            for tr in tcp shm; do
                v=$(awk -F'\t' -v m="$src" '$1 == m {print $2}' "$S/$tr.$b.raw" 2>/dev/null)
                [ -n "$v" ] && printf '%s\t%s\tGB/s\n' "$row" "$v" >>"$S/$tr"
            done
        done
    done
done
table "$S/native" "$S/tcp" "$S/shm"
for n in "${notes[@]}"; do echo "# $n"; done
# the non-default daemons are no longer needed
i=0
for b in $SWEEP_BLOCKS; do
    i=$((i + 1))
    [ "$b" = "$DEFAULT_BLOCK" ] && continue
    p=$(sed -n "${i}p" "$W/daemons.pids")
    [ -n "$p" ] && kill -TERM -- "-$p" 2>/dev/null
done
PORT="${PORT_OF[$DEFAULT_BLOCK]:-}"
DBLK=$(bytes_of "$DEFAULT_BLOCK")

# ---- B. workloads, end to end --------------------------------------------------------------------
echo
echo "== workloads end to end (wall clock of the whole process, best of $WORKLOAD_RUNS; s rows: ratio > 1 = vmcuda slower)"
K="$W/work"
: >"$K/native"; : >"$K/tcp"; : >"$K/shm"
if [ -z "$PORT" ]; then
    echo "# no daemon with block $DEFAULT_BLOCK: workloads skipped"
else
    for prog in blackscholes matmul; do
        [ -x "$BENCH/$prog" ] || { echo "# $prog not carried"; continue; }
        for run in $(seq 1 "$WORKLOAD_RUNS"); do
            for m in native tcp shm; do
                t=$(limit 60)
                if [ "$t" -le 0 ]; then echo "# $prog $m run $run skipped: time budget"; continue; fi
                t0=$(now)
                (cd "$K" && run_mode "$m" "$PORT" "$DBLK" "$t" "$BENCH/$prog" >"$K/$prog.$m.$run.out" 2>"$K/$prog.$m.$run.err" </dev/null)
                echo "$? $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')" >"$K/$prog.$m.$run.rc"
            done
        done
        for m in native tcp shm; do
            # the best successful run: its wall time and its own timing lines
            best="" bt=""
            for run in $(seq 1 "$WORKLOAD_RUNS"); do
                [ -f "$K/$prog.$m.$run.rc" ] || continue
                read -r rc wt <"$K/$prog.$m.$run.rc"
                [ "$rc" = 0 ] || { echo "# $prog $m run $run: exit $rc: $(tail -1 "$K/$prog.$m.$run.err")"; continue; }
                if [ -z "$bt" ] || awk -v a="$wt" -v b="$bt" 'BEGIN { exit !(a < b) }'; then best=$run bt=$wt; fi
            done
            [ -n "$best" ] || continue
            printf '%s_end_to_end_s\t%s\ts\n' "$prog" "$bt" >>"$K/$m"
            metric_lines "$K/$prog.$m.$best.err" | sed "s/^/${prog}_/" >>"$K/$m"
            if [ "$m" != native ] && [ -f "$K/$prog.native.1.out" ]; then
                same=0 runs=0
                for run in $(seq 1 "$WORKLOAD_RUNS"); do
                    [ -f "$K/$prog.$m.$run.out" ] || continue
                    runs=$((runs + 1))
                    cmp -s "$K/$prog.native.1.out" "$K/$prog.$m.$run.out" && same=$((same + 1))
                done
                echo "# $prog via $m: stdout identical to native in $same of $runs runs"
            fi
        done
        [ -f "$K/$prog.native.1.out" ] && sed "s/^/# $prog native stdout: /" "$K/$prog.native.1.out" | head -12
    done
    table "$K/native" "$K/tcp" "$K/shm"
fi

# ---- C. concurrent clients -------------------------------------------------------------------------
echo
echo "== concurrent clients on one GPU: each bench_transfer --reps $CONC_REPS $CONC_BYTES H2D+D2H pageable, all started together (barrier)"
C="$W/conc"
: >"$C/native"; : >"$C/tcp"; : >"$C/shm"
cnotes=()
if [ -n "$PORT" ]; then
    for n in $CONC_CLIENTS; do
        for m in native tcp shm; do
            if [ "$m" = shm ] && ! shm_fits "$DBLK" "$n"; then
                cnotes+=("$n clients shm: $n rings of 4 x $DEFAULT_BLOCK may not fit in /dev/shm (some may fall back to TCP)")
            fi
            t=$(limit 90)
            if [ "$t" -le 10 ]; then cnotes+=("$n clients $m skipped: time budget"); continue; fi
            dir="$C/$n.$m"
            mkdir -p "$dir/barrier"
            r0=$(rings "$DEFAULT_BLOCK")
            pids=()
            t0=$(now)
            for c in $(seq 1 "$n"); do
                (cd "$dir" && run_mode "$m" "$PORT" "$DBLK" "$t" "$BENCH/bench_transfer" --reps "$CONC_REPS" \
                    --barrier "$dir/barrier" "$CONC_BYTES" >"$dir/c$c.out" 2>"$dir/c$c.err" </dev/null) &
                pids+=($!)
            done
            # go when every client is set up (or 60 s passed, or a client died)
            for _ in $(seq 1 1200); do
                ready=$(ls "$dir/barrier" | grep -c '^ready\.')
                alive=0
                for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
                [ "$ready" -ge "$n" ] || [ "$ready" -ge "$alive" ] && break
                sleep 0.05
            done
            ready=$(ls "$dir/barrier" | grep -c '^ready\.')
            touch "$dir/barrier/go"
            fails=0
            for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
            wall=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
            [ "$fails" = 0 ] || cnotes+=("$n clients $m: $fails of $n failed: $(cat "$dir"/c*.err | grep -v '^$' | tail -1)")
            [ "$ready" -ge "$n" ] || cnotes+=("$n clients $m: only $ready were ready at the barrier")
            if [ "$m" = shm ]; then
                r=$(($(rings "$DEFAULT_BLOCK") - r0))
                [ "$r" -ge "$n" ] || cnotes+=("$n clients shm: only $r of $n attached a ring (the others used TCP)")
            fi
            cat "$dir"/c*.out 2>/dev/null | awk -F'\t' -v n="$n" -v wall="$wall" '
                $1 == "copy_seconds" { sum += $2; k++; if ($2 > worst) worst = $2 }
                $1 == "copy_start" { if (s == "" || $2 < s) s = $2 }
                $1 == "copy_end" { if ($2 > e) e = $2 }
                $1 == "bytes_moved" { bytes += $2 }
                END {
                    if (k == 0) exit
                    printf "conc_%02d_clients_aggregate\t%.3f\tGB/s\n", n, bytes / (e - s) / 1e9
                    printf "conc_%02d_clients_per_client_mean_s\t%.3f\ts\n", n, sum / k
                    printf "conc_%02d_clients_per_client_max_s\t%.3f\ts\n", n, worst
                    printf "conc_%02d_clients_wall_with_setup_s\t%.3f\ts\n", n, wall
                    printf "conc_%02d_clients_completed\t%d\tclients\n", n, k
                }' >>"$C/$m"
        done
    done
    table "$C/native" "$C/tcp" "$C/shm"
else
    echo "# no daemon with block $DEFAULT_BLOCK: concurrent clients skipped"
fi
for n in "${cnotes[@]}"; do echo "# $n"; done
echo "# gpu-suite: done in $(($(date +%s) - start_s)) s"
