#!/usr/bin/env bash
# Checks what the packaging module built: the jdeb plugin's two .debs, build-client-tarball.sh's tarball (run at
# `verify`; skipped by -DskipTests):
#   1. vmcuda-client .deb: control fields, conffiles, maintainer scripts, file list (dpkg-deb -f / -c / -I)
#   2. vmcuda-appliance .deb: the same, the systemd unit, every daemon key in vmcudad.properties
#   3. the client tarball: install.sh --prefix into a temporary directory; a tiny C program linked against
#      the installed shim gets cudaErrorNoDevice (100) and prints "no appliance configured"; vmcuda --help
#      and vmcuda doctor without an appliance; install.sh --uninstall
#   4. vmcuda doctor (installed by install.sh) against a GPU-less appliance started from the bundle (as
#      bin/vmcuda-demo starts one): reachable, session opened, 0 GPUs with the reason, exit status 1 with
#      advice; then a wrong token and a closed port.
#   5. lintian on both .debs: nothing but the overrides they ship (each with its reason)
# Usage: test-packages.sh --version V --repo-root DIR --out-dir DIR [--cuda-home DIR]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/debian-version.sh"

version="" repo="" outdir="" cuda_home=/usr/local/cuda
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --repo-root) repo="$(cd "$2" && pwd)"; shift 2 ;;
        --out-dir) outdir="$(cd "$2" && pwd)"; shift 2 ;;
        --cuda-home) cuda_home="$2"; shift 2 ;;
        *) echo "test-packages: unknown argument $1" >&2; exit 2 ;;
    esac
done
debversion="$(debian_version "$version")"
cdeb="$outdir/vmcuda-client_${debversion}_amd64.deb"
adeb="$outdir/vmcuda-appliance_${debversion}_amd64.deb"
ctar="$outdir/vmcuda-client-$version-linux-x86_64.tar.gz"
bundle="$outdir/bundle/vmcuda-$version"
work="$outdir/test-packages"
rm -rf "$work"
mkdir -p "$work"

checks=0
fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }
ok() { checks=$((checks + 1)); }
expect_eq() { [ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"; ok; }
expect_grep() { # WHAT PATTERN FILE
    grep -Eq -- "$2" "$3" || { echo "---- $3:" >&2; cat "$3" >&2; fail "$1: no line matches /$2/"; }
    ok
}
expect_no_grep() {
    ! grep -Eq -- "$2" "$3" || { echo "---- $3:" >&2; cat "$3" >&2; fail "$1: a line matches /$2/"; }
    ok
}
for f in "$cdeb" "$adeb" "$ctar"; do [ -f "$f" ] || fail "$f was not built"; done

# ---- 1. client .deb -------------------------------------------------------------------------
expect_eq "client Package" "$(dpkg-deb -f "$cdeb" Package)" vmcuda-client
expect_eq "client Version" "$(dpkg-deb -f "$cdeb" Version)" "$debversion"
expect_eq "client Architecture" "$(dpkg-deb -f "$cdeb" Architecture)" amd64
dpkg-deb -f "$cdeb" Depends > "$work/client.depends"
expect_grep "client Depends" '^libc6 \(>= 2\.3[0-9]\), libssl3$' "$work/client.depends"
dpkg-deb -c "$cdeb" | awk '{ o = $2; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print o " " $0 }' > "$work/client.list"
for p in './usr/lib/vmcuda/libcudart.so.13' './usr/lib/vmcuda/libcudart.so -> libcudart.so.13' \
         './usr/lib/vmcuda/libcuda.so.1' './usr/lib/vmcuda/libcuda.so -> libcuda.so.1' './usr/lib/vmcuda/libvmcuda-client.so' \
         './usr/lib/vmcuda/libnvidia-ml.so.1' './usr/lib/vmcuda/libnvidia-ml.so -> libnvidia-ml.so.1' \
         './usr/lib/vmcuda/vmcuda-doctor' './usr/lib/vmcuda/vmcuda-ucx-check' './etc/ld.so.conf.d/vmcuda.conf' './etc/vmcuda/client.conf' './etc/cdi/vmcuda.yaml' \
         './usr/bin/vmcuda' './usr/share/man/man1/vmcuda.1.gz' './usr/share/doc/vmcuda-client/copyright'; do
    grep -Fqx "root/root $p" "$work/client.list" || fail "client file list lacks $p"
    ok
done
expect_no_grep "client package has no Java" '\.jar$|/java$|libjvm' "$work/client.list"
expect_no_grep "client package files owned by root" '^[^r]|^root/[^r]' "$work/client.list"
dpkg-deb -I "$cdeb" conffiles > "$work/client.conffiles"
expect_grep "client conffiles" '^/etc/vmcuda/client\.conf$' "$work/client.conffiles"
# a user who removed the loader entry (a machine with NVIDIA's own runtime) must not get it back on upgrade
expect_grep "client conffiles" '^/etc/ld\.so\.conf\.d/vmcuda\.conf$' "$work/client.conffiles"
expect_grep "client conffiles" '^/etc/cdi/vmcuda\.yaml$' "$work/client.conffiles"
dpkg-deb -I "$cdeb" triggers > "$work/client.triggers"
expect_grep "client rebuilds the loader's cache by trigger" '^activate-noawait ldconfig$' "$work/client.triggers"
dpkg-deb -I "$cdeb" postinst > "$work/client.postinst"
dpkg-deb -I "$cdeb" postrm > "$work/client.postrm"
expect_no_grep "client postinst leaves ldconfig to the trigger" '^ *ldconfig$' "$work/client.postinst"
expect_grep "client postinst keeps the token to group vmcuda" '^ *chmod 0640 /etc/vmcuda/client\.conf$' "$work/client.postinst"
expect_grep "client postinst makes group vmcuda" 'groupadd --system vmcuda' "$work/client.postinst"
expect_no_grep "client postrm leaves ldconfig to the trigger" '^[^#]*ldconfig' "$work/client.postrm"
mkdir -p "$work/client-deb"
dpkg-deb -x "$cdeb" "$work/client-deb"
conf="$work/client-deb/etc/vmcuda/client.conf"
for k in '#appliance = ' '#token =' 'block_size = 4194304' 'gpus = 1'; do
    expect_grep "client.conf key" "^$k" "$conf"
done
expect_grep "ld.so.conf entry" '^/usr/lib/vmcuda$' "$work/client-deb/etc/ld.so.conf.d/vmcuda.conf"
expect_grep "CDI spec binds the driver front end" 'hostPath: "/usr/lib/vmcuda/libcuda\.so\.1", containerPath: "/usr/lib/x86_64-linux-gnu/libcuda\.so\.1"' "$work/client-deb/etc/cdi/vmcuda.yaml"
expect_grep "CDI spec kind" '^kind: vmcuda\.io/client$' "$work/client-deb/etc/cdi/vmcuda.yaml"
expect_grep "CDI spec binds the UCX checker" 'hostPath: "/usr/lib/vmcuda/vmcuda-ucx-check", containerPath: "/usr/lib/x86_64-linux-gnu/vmcuda-ucx-check"' "$work/client-deb/etc/cdi/vmcuda.yaml"
zcat "$work/client-deb/usr/share/man/man1/vmcuda.1.gz" > "$work/vmcuda.1"
expect_grep "man page names doctor" '^\.B vmcuda doctor' "$work/vmcuda.1"
expect_eq "shim soname" "$(readelf -d "$work/client-deb/usr/lib/vmcuda/libcudart.so.13" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" libcudart.so.13
expect_eq "driver front end soname" "$(readelf -d "$work/client-deb/usr/lib/vmcuda/libcuda.so.1" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" libcuda.so.1
readelf -d "$work/client-deb/usr/lib/vmcuda/vmcuda-doctor" > "$work/doctor.dynamic"
expect_grep "doctor links the shim" 'NEEDED.*\[libcudart\.so\.13\]' "$work/doctor.dynamic"
expect_grep "doctor finds the shim next to it" 'RUNPATH.*\[\$ORIGIN' "$work/doctor.dynamic"
echo "test-packages: client .deb: fields, conffiles, scripts and $(wc -l < "$work/client.list") entries ok"

# ---- 2. appliance .deb ----------------------------------------------------------------------
expect_eq "appliance Package" "$(dpkg-deb -f "$adeb" Package)" vmcuda-appliance
expect_eq "appliance Version" "$(dpkg-deb -f "$adeb" Version)" "$debversion"
expect_eq "appliance Architecture" "$(dpkg-deb -f "$adeb" Architecture)" amd64
dpkg-deb -c "$adeb" | awk '{ o = $2; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print o " " $0 }' > "$work/appliance.list"
for p in ./opt/vmcuda/bin/vmcudad ./opt/vmcuda/jre/bin/java ./opt/vmcuda/native/libvmcuda-worker.so \
         ./opt/vmcuda/native/vmcuda-worker ./opt/vmcuda/client/libcudart.so.13 ./opt/vmcuda/client/libcuda.so.1 \
         ./opt/vmcuda/client/libvmcuda-client.so ./opt/vmcuda/client/vmcuda-doctor ./opt/vmcuda/client/vmcuda-ucx-check \
         ./opt/vmcuda/libexec/vmcuda-gpu-check ./opt/vmcuda/libexec/vmcudad-prestart \
         ./lib/systemd/system/vmcudad.service ./lib/systemd/system/vmcuda-gpu-check.service \
         ./etc/vmcuda/vmcudad.properties ./var/lib/vmcuda/ './usr/sbin/vmcudad -> /opt/vmcuda/bin/vmcudad' \
         ./usr/share/doc/vmcuda-appliance/CONFIG.md; do
    grep -Fqx "root/root $p" "$work/appliance.list" || fail "appliance file list lacks $p"
    ok
done
grep -Eq 'lib/vmcuda-appliance-[^/]*\.jar$' "$work/appliance.list" || fail "appliance package has no daemon jar"
if [ -f "$repo/appliance/target/native/vmcuda-sandbox" ]; then
    grep -Fqx "root/root ./opt/vmcuda/native/vmcuda-sandbox" "$work/appliance.list" || fail "appliance package lacks the sandbox launcher"
fi
if [ -f "$repo/appliance/target/native/vmcuda-ucx-agent" ]; then
    grep -Fqx "root/root ./opt/vmcuda/native/vmcuda-ucx-agent" "$work/appliance.list" || fail "appliance package lacks the UCX agent"
fi
dpkg-deb -I "$adeb" conffiles > "$work/appliance.conffiles"
expect_grep "appliance conffiles" '^/etc/vmcuda/vmcudad\.properties$' "$work/appliance.conffiles"
dpkg-deb -I "$adeb" postinst > "$work/appliance.postinst"
expect_grep "postinst creates vmcuda-worker" "useradd --system" "$work/appliance.postinst"
expect_grep "postinst creates vmcuda-worker" "--comment .* vmcuda-worker\$" "$work/appliance.postinst"
expect_grep "postinst enables the units" 'systemctl enable vmcudad\.service vmcuda-gpu-check\.service' "$work/appliance.postinst"
mkdir -p "$work/appliance-deb"
dpkg-deb -x "$adeb" "$work/appliance-deb"
unit="$work/appliance-deb/lib/systemd/system/vmcudad.service"
expect_grep "unit ExecStart" '^ExecStart=/opt/vmcuda/bin/vmcudad --listen \$\{VMCUDAD_LISTEN\} --admin \$\{VMCUDAD_ADMIN\} --state-dir /var/lib/vmcuda --config /etc/vmcuda/vmcudad\.properties$' "$unit"
expect_grep "unit default ports" '^Environment=VMCUDAD_LISTEN=0\.0\.0\.0:7070 VMCUDAD_ADMIN=127\.0\.0\.1:7071$' "$unit"
expect_grep "unit ports from /etc/default/vmcudad" '^EnvironmentFile=-/etc/default/vmcudad$' "$unit"
expect_grep "unit Restart" '^Restart=on-failure$' "$unit"
expect_grep "unit KillMode" '^KillMode=mixed$' "$unit"
expect_grep "unit readiness" '^Type=notify$' "$unit"
expect_grep "unit reload" '^ExecReload=/bin/kill -HUP \$MAINPID$' "$unit"
# the first start's generated tenant and operator token go to a drop-in: the conffile stays byte for byte the
# package's (or the operator's), so an upgrade with apt-get -y finds no changed conffile to ask about
pre="$work/prestart/etc/vmcuda"
mkdir -p "$pre"
"$repo/client-shim/src/build/ensure-package.sh" openssl "openssl (Fedora)" "vmcudad-prestart's TLS certificate" /usr/bin/openssl
cp "$work/appliance-deb/etc/vmcuda/vmcudad.properties" "$pre/"
sh "$work/appliance-deb/opt/vmcuda/libexec/vmcudad-prestart" "$pre/vmcudad.properties" >/dev/null
sh "$work/appliance-deb/opt/vmcuda/libexec/vmcudad-prestart" "$pre/vmcudad.properties" >/dev/null # a restart: no change
cmp -s "$pre/vmcudad.properties" "$work/appliance-deb/etc/vmcuda/vmcudad.properties" || fail "vmcudad-prestart changed the conffile"
ok
expect_eq "one generated tenant" "$(grep -c '^tenant\.default\.token_sha256 = [0-9a-f]\{64\}$' "$pre/vmcudad.d/50-generated.properties")" 1
expect_eq "one generated operator token" "$(grep -c '^admin\.token_sha256 = [0-9a-f]\{64\}$' "$pre/vmcudad.d/50-generated.properties")" 1
expect_eq "the tenant token is root's alone" "$(stat -c %a "$pre/tenant-default.token")" 600
expect_eq "the token matches its hash" "$(printf %s "$(head -n 1 "$pre/tenant-default.token")" | sha256sum | cut -d' ' -f1)" \
    "$(sed -n 's/^tenant\.default\.token_sha256 = //p' "$pre/vmcudad.d/50-generated.properties")"
# TLS on by default: one certificate for this host (made once), its key root's alone, named in the drop-in
expect_eq "one generated TLS certificate line" "$(grep -c "^control\.tls_certificate = $pre/tls/vmcudad\.pem$" "$pre/vmcudad.d/50-generated.properties")" 1
expect_eq "the TLS key is root's alone" "$(stat -c %a "$pre/tls/vmcudad.key")" 600
openssl x509 -in "$pre/tls/vmcudad.pem" -noout -ext subjectAltName > "$work/tls-names" 2>&1 || fail "the generated certificate does not parse"
expect_grep "the certificate names loopback" 'IP Address:127\.0\.0\.1' "$work/tls-names"
expect_grep "unit WantedBy" '^WantedBy=multi-user\.target$' "$unit"
# the daemon unit's hardening: systemd's own score (issue 14 asks for an exposure below 5)
if command -v systemd-analyze >/dev/null && systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    exposure="$(systemd-analyze security --offline=true "$unit" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')"
    [ -n "$exposure" ] || fail "systemd-analyze security gave no exposure level for vmcudad.service"
    awk -v e="$exposure" 'BEGIN { exit !(e < 5) }' || fail "vmcudad.service exposure $exposure is not below 5"
    ok
    echo "test-packages: vmcudad.service exposure $exposure (systemd-analyze security --offline)"
else
    echo "test-packages: systemd-analyze security --offline not available here: unit hardening not scored"
fi
props="$work/appliance-deb/etc/vmcuda/vmcudad.properties"
defaults="$repo/appliance/src/main/resources/io/vmcuda/appliance/vmcudad-defaults.properties"
while IFS= read -r l; do
    case "$l" in ''|'#'*) continue ;; esac
    k="${l%%=*}"; v="${l#*=}"
    grep -Fqx "#$k = $v" "$props" || fail "vmcudad.properties lacks the commented default '#$k = $v'"
    ok
done < "$defaults"
bash -n "$work/appliance-deb/opt/vmcuda/libexec/vmcuda-gpu-check" && ok
echo "test-packages: appliance .deb: fields, unit, conffile with every daemon key, $(wc -l < "$work/appliance.list") entries ok"

# ---- 3. client tarball, install.sh into a temporary prefix ---------------------------------
tar -xzf "$ctar" -C "$work"
inst="$work/vmcuda-client-$version"
prefix="$work/prefix"
"$inst/install.sh" --prefix "$prefix" > "$work/install.out"
for f in usr/lib/vmcuda/libcudart.so.13 usr/lib/vmcuda/libcudart.so usr/lib/vmcuda/vmcuda-doctor usr/lib/vmcuda/vmcuda-ucx-check usr/bin/vmcuda \
         etc/vmcuda/client.conf etc/ld.so.conf.d/vmcuda.conf usr/share/man/man1/vmcuda.1.gz; do
    [ -e "$prefix/$f" ] || fail "install.sh --prefix did not install $f"
    ok
done
expect_grep "prefixed ld.so.conf entry" "^$prefix/usr/lib/vmcuda\$" "$prefix/etc/ld.so.conf.d/vmcuda.conf"
cat > "$work/count.c" <<'EOF'
#include <stdio.h>
#include <cuda_runtime_api.h>
int main(void) {
    int n = -1;
    cudaError_t e = cudaGetDeviceCount(&n);
    printf("cudaGetDeviceCount -> %d (%s), count %d\n", (int)e, cudaGetErrorName(e), n);
    return (int)e;
}
EOF
gcc -I"$cuda_home/include" -o "$work/count" "$work/count.c" -L"$prefix/usr/lib/vmcuda" -lcudart
set +e
env -u VMCUDA_APPLIANCE VMCUDA_CONFIG=/nonexistent LD_LIBRARY_PATH="$prefix/usr/lib/vmcuda" "$work/count" \
    > "$work/count.out" 2> "$work/count.err"
rc=$?
set -e
expect_eq "cudaGetDeviceCount without an appliance (exit status = cudaError_t)" "$rc" 100
expect_grep "shim explains" '^vmcuda: no appliance configured' "$work/count.err"
"$prefix/usr/bin/vmcuda" --help > "$work/help.out"
expect_grep "vmcuda --help lists doctor" 'vmcuda doctor' "$work/help.out"
set +e
env -u VMCUDA_APPLIANCE -u VMCUDA_CONFIG -u VMCUDA_TOKEN "$prefix/usr/bin/vmcuda" doctor > "$work/doctor-noconf.out" 2>&1
rc=$?
set -e
expect_eq "doctor without an appliance: exit status" "$rc" 1
expect_grep "doctor reads the prefix's config" "config file: $prefix/etc/vmcuda/client.conf" "$work/doctor-noconf.out"
expect_grep "doctor explains" '^RESULT: NOT WORKING\. no appliance configured' "$work/doctor-noconf.out"
# A changed conffile survives a reinstall and an uninstall; --purge removes it.
echo "appliance = 192.0.2.1:7070" >> "$prefix/etc/vmcuda/client.conf"
"$inst/install.sh" --prefix "$prefix" > "$work/reinstall.out"
expect_grep "reinstall keeps the config" '^appliance = 192\.0\.2\.1:7070$' "$prefix/etc/vmcuda/client.conf"
"$inst/install.sh" --prefix "$prefix" --uninstall > "$work/uninstall.out"
[ ! -e "$prefix/usr/lib/vmcuda/libcudart.so.13" ] && [ ! -e "$prefix/usr/bin/vmcuda" ] || fail "--uninstall left files"
[ -f "$prefix/etc/vmcuda/client.conf" ] || fail "--uninstall removed the changed client.conf"
ok
"$inst/install.sh" --prefix "$prefix" > /dev/null
"$inst/install.sh" --prefix "$prefix" --uninstall --purge > /dev/null
[ ! -e "$prefix/etc/vmcuda/client.conf" ] || fail "--uninstall --purge kept client.conf"
ok
"$inst/install.sh" --prefix "$prefix" > /dev/null
echo "test-packages: install.sh --prefix, the shim without an appliance, vmcuda doctor, --uninstall ok"

# ---- 4. vmcuda doctor against a GPU-less appliance ------------------------------------------
free_port() {
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
PORT=$(free_port $((20000 + RANDOM % 20000)))
ADMIN=$(free_port $((PORT + 1)))
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# The appliance package's own configuration file, with a tenant and a worker user that exists here.
sed 's/^worker\.user = .*/worker.user = nobody/' "$props" > "$work/vmcudad.properties"
printf 'tenant.test.token_sha256 = %s\n' "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" >> "$work/vmcudad.properties"
daemon_bin="$bundle/bin/vmcudad"
[ -x "$daemon_bin" ] || daemon_bin="$repo/bin/vmcudad"
"$daemon_bin" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --state-dir "$work/state" \
    --config "$work/vmcudad.properties" > "$work/daemon.log" 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$ADMIN") 2>/dev/null && break
    kill -0 $DAEMON 2>/dev/null || { cat "$work/daemon.log" >&2; fail "the daemon ($daemon_bin) did not start"; }
    sleep 0.1
done
set +e
VMCUDA_APPLIANCE="127.0.0.1:$PORT" VMCUDA_TOKEN="$TOKEN" timeout 120 "$prefix/usr/bin/vmcuda" doctor > "$work/doctor.out" 2>&1
rc=$?
set -e
sed 's/^/   doctor| /' "$work/doctor.out"
expect_eq "doctor against a GPU-less appliance: exit status" "$rc" 1
expect_grep "doctor: config source" "^  appliance  = 127\.0\.0\.1:$PORT +\(environment VMCUDA_APPLIANCE\)" "$work/doctor.out"
expect_grep "doctor: reachable" "TCP connect to 127\.0\.0\.1 port $PORT: ok" "$work/doctor.out"
expect_grep "doctor: session opened (token and protocol version accepted)" '^  session: opened .*protocol version [0-9]+ accepted, token accepted' "$work/doctor.out"
expect_grep "doctor: zero GPUs with the reason" '^  GPUs: 0' "$work/doctor.out"
expect_grep "doctor: round trip measured" '^  round trip: 200 x ' "$work/doctor.out"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    expect_grep "doctor: the appliance's reason" 'shim says: vmcuda: 127\.0\.0\.1:[0-9]+: appliance has no usable GPU: ' "$work/doctor.out"
    expect_grep "doctor: plain advice" '^RESULT: NOT WORKING\. the appliance has no working NVIDIA driver' "$work/doctor.out"
fi
set +e
VMCUDA_APPLIANCE="127.0.0.1:$PORT" VMCUDA_TOKEN=wrong "$prefix/usr/bin/vmcuda" doctor > "$work/doctor-token.out" 2>&1
rc_token=$?
kill $DAEMON; wait $DAEMON 2>/dev/null
VMCUDA_APPLIANCE="127.0.0.1:$PORT" VMCUDA_TOKEN="$TOKEN" "$prefix/usr/bin/vmcuda" doctor > "$work/doctor-down.out" 2>&1
rc_down=$?
set -e
trap - EXIT
expect_eq "doctor with a wrong token: exit status" "$rc_token" 1
expect_grep "doctor: wrong token" '^RESULT: NOT WORKING\. the appliance refused the token \(bad token\)' "$work/doctor-token.out"
expect_eq "doctor with the appliance down: exit status" "$rc_down" 1
expect_grep "doctor: appliance down" "^RESULT: NOT WORKING\. nothing accepts connections on 127\.0\.0\.1:$PORT" "$work/doctor-down.out"
echo "test-packages: vmcuda doctor against a GPU-less appliance, a wrong token and a stopped appliance ok"
# ---- 5. lintian: no error or warning but the overrides each package ships with its reasons --------
"$repo/client-shim/src/build/ensure-package.sh" lintian "lintian (Fedora: none; run on Debian)" "the packages' lintian check" /usr/bin/lintian
for deb in "$cdeb" "$adeb"; do
    lintian --fail-on error,warning --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1 ||
        { grep -v 'running with root' "$work/lintian.txt" >&2; fail "lintian: $(basename "$deb")"; }
    ok
done

echo "test-packages: all $checks checks passed"
