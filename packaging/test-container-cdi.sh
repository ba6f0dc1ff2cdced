#!/usr/bin/env bash
# The container route, end to end on this machine: a stock Debian 12 container (plus OpenSSL 3) becomes a vmcuda
# client through the CDI spec `vmcuda cdi` writes, and runs an unmodified driver-API program (tests/driver/drv_api,
# linked with -lcuda) against a real vmcudad whose worker uses the test double of the NVIDIA driver
# (libfakecuda.so: this machine has no GPU). Checks:
#   1. without the CDI device the program cannot start (no libcuda.so.1 in the image): the injection is what works;
#   2. with it, its output is tests/driver/drv_api.expected, byte for byte, and the daemon recorded the session;
#   3. with a wrong token in the container's client configuration it fails and says the token was refused.
# Not part of `mvn verify`: it needs root, podman (Debian: apt-get install podman runc) and the tests module's
# build (mvn -B -DskipTests install; tests/target/driver). The Debian base is packaging/target/chroot-base.tar,
# which test-packages-chroot.sh (mvn verify as root) leaves; --base TAR names another root file system tarball.
#
#   packaging/test-container-cdi.sh [--base TAR] [--runtime crun|runc] [--keep]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
base="$here/target/chroot-base.tar" runtime="" keep=false
while [ $# -gt 0 ]; do
    case "$1" in
        --base) base="$2"; shift 2 ;;
        --runtime) runtime="$2"; shift 2 ;;
        --keep) keep=true; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "test-container-cdi: unknown argument $1" >&2; exit 2 ;;
    esac
done
fail() { echo "test-container-cdi: FAIL: $*" >&2; keep=true; exit 1; }
say() { echo "test-container-cdi: $*"; }
[ "$(id -u)" = 0 ] || { echo "test-container-cdi: needs root (rootful podman, /var/run/cdi)" >&2; exit 2; }
command -v podman >/dev/null || { echo "test-container-cdi: podman is missing (Debian: apt-get install podman runc)" >&2; exit 2; }
[ -f "$base" ] || { echo "test-container-cdi: no base $base (run packaging/test-packages-chroot.sh, or --base TAR)" >&2; exit 2; }
driver="$repo/tests/target/driver"
[ -x "$driver/drv_api" ] && [ -f "$driver/libfakecuda.so" ] ||
    { echo "test-container-cdi: $driver/drv_api not built (mvn -B -DskipTests install)" >&2; exit 2; }

work="$(mktemp -d /tmp/vmcuda-cdi.XXXXXX)"
spec=/var/run/cdi/vmcuda-test-$$.yaml
device="test-$$"
daemon=""
finish() {
    # (a failing last command of an && list would end this trap under set -e before the clean-up below)
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true; fi
    rm -f "$spec"
    if $keep; then echo "test-container-cdi: work files kept in $work"; else rm -rf "$work"; fi
}
trap finish EXIT

# Podman's defaults ask for more than some hosts allow (raised rlimits, cgroup v2 for crun): ask for little.
run_opts=(--rm --network host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
podman_cmd=(podman)
[ -n "$runtime" ] && podman_cmd+=(--runtime "$runtime")

# ---- the image: the Debian base plus libssl3 (the client library's one dependency beyond libc)
image=localhost/vmcuda-cdi-test:debian12
if ! podman image exists "$image"; then
    say "building $image from $(basename "$base") and libssl3"
    podman import -q "$base" localhost/vmcuda-cdi-test:base >/dev/null
    mkdir -p "$work/debs"
    (cd "$work/debs" && apt-get download libssl3 >/dev/null 2>&1) || fail "apt-get download libssl3 failed"
    "${podman_cmd[@]}" run --name "vmcuda-cdi-build-$$" --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
        -v "$work/debs:/debs:ro" localhost/vmcuda-cdi-test:base sh -c 'dpkg -i /debs/*.deb' > "$work/image.log" 2>&1 ||
        { cat "$work/image.log" >&2; podman rm -f "vmcuda-cdi-build-$$" >/dev/null 2>&1; fail "installing libssl3 into the image"; }
    podman commit -q "vmcuda-cdi-build-$$" "$image" >/dev/null
    podman rm "vmcuda-cdi-build-$$" >/dev/null
fi

# ---- the appliance: vmcudad with one tenant and the driver's test double in its workers
token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
free_port() { local p=$((20000 + RANDOM % 20000)); while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done; echo "$p"; }
port=$(free_port)
admin=$((port + 1))
cat > "$work/vmcudad.properties" <<EOF
tenant.containers.token_sha256 = $(printf %s "$token" | sha256sum | cut -d' ' -f1)
worker.extra_env = VMCUDA_WORKER_LIBCUDA=$driver/libfakecuda.so
worker.cuda_lib_dirs = /usr/local/cuda/lib64:$driver
EOF
"$repo/bin/vmcudad" --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --state-dir "$work/state" \
    --config "$work/vmcudad.properties" > "$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$daemon" 2>/dev/null || { cat "$work/daemon.log" >&2; fail "vmcudad did not start"; }
    sleep 0.1
done

# ---- the client side: this host's client configuration and the CDI spec made from it
mkdir -p "$work/etc-vmcuda"
printf 'appliance = 127.0.0.1:%s\ntoken = %s\ntransport = tcp\n' "$port" "$token" > "$work/etc-vmcuda/client.conf"
mkdir -p "$(dirname "$spec")"
"$repo/bin/vmcuda" cdi --name "$device" --config-dir "$work/etc-vmcuda" --output "$spec"
say "CDI spec $spec (vmcuda.io/client=$device):"
sed 's/^/    /' "$spec"

# drv_api in a container of the image: in_container NAME [PODMAN OPTIONS...], output in $work/NAME.out and .err,
# its exit status in $rc
in_container() {
    local name="$1"; shift
    rc=0
    "${podman_cmd[@]}" run "${run_opts[@]}" "$@" -v "$driver:/t:ro" -w /t "$image" /t/drv_api \
        > "$work/$name.out" 2> "$work/$name.err" || rc=$?
}
# expect_failure NAME PATTERN WHAT: the run NAME failed and its stderr says PATTERN
expect_failure() {
    [ "$rc" != 0 ] && grep -qi "$2" "$work/$1.err" || fail "$3 (exit $rc): $(head -c 300 "$work/$1.err")"
}

in_container bare
expect_failure bare 'libcuda.so.1' "without the CDI device drv_api did not fail for want of libcuda.so.1"
say "1. without --device: exit $rc, $(grep -o 'libcuda.so.1[^:]*: [^:]*' "$work/bare.err" | head -n 1)"

in_container cdi --device "vmcuda.io/client=$device"
[ "$rc" = 0 ] || { cat "$work/cdi.err" >&2; fail "drv_api in the container exited $rc"; }
diff "$repo/tests/driver/drv_api.expected" "$work/cdi.out" > "$work/cdi.diff" ||
    { cat "$work/cdi.diff" >&2; fail "drv_api's output in the container differs from tests/driver/drv_api.expected"; }
for _ in $(seq 1 50); do grep -q '"program":"drv_api"' "$work/state/sessions.jsonl" 2>/dev/null && break; sleep 0.2; done
record="$(grep '"program":"drv_api"' "$work/state/sessions.jsonl" | head -n 1)" || fail "the daemon recorded no drv_api session"
say "2. with --device vmcuda.io/client=$device: exit 0, $(wc -l < "$work/cdi.out") lines identical to drv_api.expected; session $(grep -o '"state":"[a-z]*"' <<<"$record"), tenant $(grep -o '"tenant":"[a-z]*"' <<<"$record"), $(grep -o '"calls":[0-9]*' <<<"$record")"

sed -i "s/^token = .*/token = wrong/" "$work/etc-vmcuda/client.conf"
in_container wrong --device "vmcuda.io/client=$device"
expect_failure wrong 'token' "a wrong token in the container was not refused clearly"
say "3. wrong token: exit $rc, $(grep -i -m1 'token' "$work/wrong.err")"
say "PASS"
