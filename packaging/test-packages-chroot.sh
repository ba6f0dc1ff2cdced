#!/usr/bin/env bash
# The packages' life on a clean Debian 12 (issue 18 item 1), as apt runs it there, non-interactively: install both
# .debs with their dependencies, the appliance's first start (vmcudad-prestart: tenant, operator token, TLS
# certificate, all in a drop-in), operator edits of both conffiles and a removed /etc/ld.so.conf.d/vmcuda.conf,
# an upgrade to a newer version of each (no conffile prompt may stop it: stdin is /dev/null), a downgrade back, then a purge that
# leaves nothing of vmcuda behind. Run by the packaging module at `verify` (skipped by -DskipTests).
# Needs root, debootstrap (installed when missing, as the build installs its packages) and the Debian mirror;
# the bootstrapped root is kept as a tarball in OUT_DIR (chroot-base.tar) for the next run.
# Usage: test-packages-chroot.sh --version V --repo-root DIR --out-dir DIR
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/debian-version.sh"

version="" repo="" outdir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --repo-root) repo="$(cd "$2" && pwd)"; shift 2 ;;
        --out-dir) outdir="$(cd "$2" && pwd)"; shift 2 ;;
        *) echo "test-packages-chroot: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ]; then
    echo "test-packages-chroot: skipped: a chroot needs root (CI runs it as root)"
    exit 0
fi
debversion="$(debian_version "$version")"
root="$outdir/chroot"
base="$outdir/chroot-base.tar"
checks=0
ok() { checks=$((checks + 1)); }
fail() {
    echo "test-packages-chroot: FAIL: $*" >&2
    exit 1
}
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@" </dev/null; }
cleanup() {
    umount -R "$root/proc" 2>/dev/null || true
    # never into a file system mounted below (a /proc left by a killed run would be the host's)
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
cleanup # what a killed run left

# ---- a clean Debian 12 ----
if [ ! -s "$base" ]; then
    "$repo/client-shim/src/build/ensure-package.sh" debootstrap "debootstrap (Fedora)" "the packages' chroot test" /usr/sbin/debootstrap
    rm -rf "$root"
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$outdir/debootstrap.log" 2>&1 ||
        fail "debootstrap failed (see $outdir/debootstrap.log)"
    tar --numeric-owner -C "$root" -cf "$base.tmp" . && mv "$base.tmp" "$base" # whole, or not at all
    cleanup
fi
mkdir -p "$root"
tar --numeric-owner -C "$root" -xf "$base"
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root apt-get update -q >"$outdir/chroot-apt.log" 2>&1 || fail "apt-get update in the chroot (see $outdir/chroot-apt.log)"

# ---- the packages, and a newer version of each (the same contents, version +upgrade1) ----
mkdir -p "$root/tmp/pkgs"
for p in client appliance; do
    cp "$outdir/vmcuda-${p}_${debversion}_amd64.deb" "$root/tmp/pkgs/$p-1.deb"
    rm -rf "$outdir/repack"
    dpkg-deb -R "$outdir/vmcuda-${p}_${debversion}_amd64.deb" "$outdir/repack"
    sed -i "s/^Version: .*/Version: ${debversion}+upgrade1/" "$outdir/repack/DEBIAN/control"
    # the newer version changes a shipped conffile the operator will have edited too: dpkg's conffile question
    conf="$outdir/repack/etc/vmcuda/$([ $p = client ] && echo client.conf || echo vmcudad.properties)"
    echo "# changed in ${debversion}+upgrade1" >>"$conf"
    (cd "$outdir/repack" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum >DEBIAN/md5sums)
    dpkg-deb --root-owner-group -b "$outdir/repack" "$root/tmp/pkgs/$p-2.deb" >/dev/null
    rm -rf "$outdir/repack"
done
installed() { in_root dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true; }

# ---- 1. install ----
in_root apt-get install -y -q --no-install-recommends /tmp/pkgs/appliance-1.deb /tmp/pkgs/client-1.deb \
    >>"$outdir/chroot-apt.log" 2>&1 || fail "installing both packages (see $outdir/chroot-apt.log)"
[ "$(installed vmcuda-appliance)" = "install ok installed $debversion" ] || fail "appliance: $(installed vmcuda-appliance)"; ok
[ "$(installed vmcuda-client)" = "install ok installed $debversion" ] || fail "client: $(installed vmcuda-client)"; ok
in_root getent passwd vmcuda-worker >/dev/null || fail "no vmcuda-worker user"; ok
[ "$(in_root stat -c '%a %U %G' /etc/vmcuda/client.conf)" = "640 root vmcuda" ] || fail "client.conf is $(in_root stat -c '%a %U %G' /etc/vmcuda/client.conf)"; ok
in_root ldconfig -p | grep -q '/usr/lib/vmcuda/libcudart.so.13' || fail "the loader does not know /usr/lib/vmcuda"; ok

# ---- 2. the appliance's first start, then the operator's edits ----
in_root /opt/vmcuda/libexec/vmcudad-prestart /etc/vmcuda/vmcudad.properties >>"$outdir/chroot-apt.log" 2>&1 ||
    fail "vmcudad-prestart in the chroot"
for f in vmcudad.d/50-generated.properties tenant-default.token admin.token tls/vmcudad.pem tls/vmcudad.key; do
    [ -s "$root/etc/vmcuda/$f" ] || fail "the first start made no /etc/vmcuda/$f"; ok
done
modes="$(stat -c %a "$root/etc/vmcuda/tls" "$root/etc/vmcuda/tls/vmcudad.pem" "$root/etc/vmcuda/tls/vmcudad.key" | paste -sd' ')"
[ "$modes" = "755 644 600" ] || fail "TLS directory, certificate and key have modes $modes, not 755 644 600"; ok
in_root dpkg --verify vmcuda-appliance | grep -q vmcudad.properties && fail "the first start changed the conffile"; ok
echo "log.level = debug" >>"$root/etc/vmcuda/vmcudad.properties"
echo "appliance = 10.0.0.1:7070" >>"$root/etc/vmcuda/client.conf"
rm "$root/etc/ld.so.conf.d/vmcuda.conf" # as the docs advise on a machine with NVIDIA's own runtime

# ---- 3. upgrade, with nothing to answer ----
# non-interactively, as README "Install" says: the operator's edited conffiles stay, the new ones land beside them
keep_edits=(-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
in_root apt-get install -y -q "${keep_edits[@]}" --no-install-recommends /tmp/pkgs/appliance-2.deb /tmp/pkgs/client-2.deb \
    >>"$outdir/chroot-apt.log" 2>&1 || fail "upgrading both packages (see $outdir/chroot-apt.log)"
[ "$(installed vmcuda-appliance)" = "install ok installed ${debversion}+upgrade1" ] || fail "appliance after the upgrade: $(installed vmcuda-appliance)"; ok
[ "$(installed vmcuda-client)" = "install ok installed ${debversion}+upgrade1" ] || fail "client after the upgrade: $(installed vmcuda-client)"; ok
grep -qx "log.level = debug" "$root/etc/vmcuda/vmcudad.properties" || fail "the upgrade lost the operator's edit of vmcudad.properties"; ok
grep -qx "appliance = 10.0.0.1:7070" "$root/etc/vmcuda/client.conf" || fail "the upgrade lost the edit of client.conf"; ok
for f in vmcudad.properties client.conf; do
    grep -q "changed in ${debversion}+upgrade1" "$root/etc/vmcuda/$f.dpkg-dist" 2>/dev/null ||
        fail "the upgrade's new $f is not beside the operator's as $f.dpkg-dist"; ok
done
[ ! -e "$root/etc/ld.so.conf.d/vmcuda.conf" ] || fail "the upgrade brought back the removed /etc/ld.so.conf.d/vmcuda.conf"; ok
[ -s "$root/etc/vmcuda/tls/vmcudad.pem" ] && [ -s "$root/etc/vmcuda/vmcudad.d/50-generated.properties" ] ||
    fail "the upgrade lost what the first start generated"; ok
[ "$(in_root stat -c '%a %U %G' /etc/vmcuda/client.conf)" = "640 root vmcuda" ] || fail "client.conf after the upgrade is $(in_root stat -c '%a %U %G' /etc/vmcuda/client.conf)"; ok

# ---- 4. downgrade back to the first version, with nothing to answer; the operator's edits stay ----
in_root apt-get install -y -q "${keep_edits[@]}" --allow-downgrades --no-install-recommends /tmp/pkgs/appliance-1.deb /tmp/pkgs/client-1.deb \
    >>"$outdir/chroot-apt.log" 2>&1 || fail "downgrading both packages (see $outdir/chroot-apt.log)"
[ "$(installed vmcuda-appliance)" = "install ok installed $debversion" ] || fail "appliance after the downgrade: $(installed vmcuda-appliance)"; ok
[ "$(installed vmcuda-client)" = "install ok installed $debversion" ] || fail "client after the downgrade: $(installed vmcuda-client)"; ok
grep -qx "log.level = debug" "$root/etc/vmcuda/vmcudad.properties" || fail "the downgrade lost the operator's edit of vmcudad.properties"; ok
grep -qx "appliance = 10.0.0.1:7070" "$root/etc/vmcuda/client.conf" || fail "the downgrade lost the edit of client.conf"; ok
[ -s "$root/etc/vmcuda/tls/vmcudad.pem" ] || fail "the downgrade lost what the first start generated"; ok
[ "$(in_root stat -c '%a %U %G' /etc/vmcuda/client.conf)" = "640 root vmcuda" ] || fail "client.conf after the downgrade is $(in_root stat -c '%a %U %G' /etc/vmcuda/client.conf)"; ok
[ ! -e "$root/etc/ld.so.conf.d/vmcuda.conf" ] || fail "the downgrade brought back the removed /etc/ld.so.conf.d/vmcuda.conf"; ok

# ---- 5. purge: nothing of vmcuda stays ----
in_root apt-get purge -y -q vmcuda-appliance vmcuda-client >>"$outdir/chroot-apt.log" 2>&1 || fail "purging (see $outdir/chroot-apt.log)"
[ -z "$(installed vmcuda-appliance)" ] || [ "$(installed vmcuda-appliance | cut -d' ' -f1-3)" = "unknown ok not-installed" ] ||
    fail "appliance after the purge: $(installed vmcuda-appliance)"; ok
for d in etc/vmcuda opt/vmcuda var/lib/vmcuda usr/lib/vmcuda; do
    [ ! -e "$root/$d" ] || fail "/$d is left after the purge: $(find "$root/$d" | head -5 | paste -sd' ')"; ok
done
in_root ldconfig -p | grep -q /usr/lib/vmcuda && fail "the loader still lists /usr/lib/vmcuda"; ok
echo "test-packages-chroot: all $checks checks passed (install, first start, upgrade and downgrade with operator edits, purge on Debian 12)"
