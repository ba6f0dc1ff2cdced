#!/bin/sh
# vmcuda client installer for Linux clients without dpkg (the tarball vmcuda-client-VERSION-linux-x86_64.tar.gz).
#
#   ./install.sh [--prefix DIR] [--no-ldconfig]     install
#   ./install.sh [--prefix DIR] --uninstall [--purge]
#
# Installs what the vmcuda-client .deb installs:
#   /usr/lib/vmcuda/libcudart.so.13 (+ libcudart.so)  the runtime front end
#   /usr/lib/vmcuda/libcuda.so.1 (+ libcuda.so)        the driver front end (static cudart, CUDA libraries)
#   /usr/lib/vmcuda/libnvidia-ml.so.1 (+ .so)          the NVML front end (nvidia-ml-py, frameworks)
#   /usr/lib/vmcuda/libvmcuda-client.so                their core
#   /usr/lib/vmcuda/vmcuda-doctor                     the program behind `vmcuda doctor`
#   /usr/lib/vmcuda/vmcuda-ucx-check                  UCX reads an appliance's UCX address in it first
#   /usr/bin/vmcuda                                   the launcher (run, doctor, status)
#   /etc/vmcuda/client.conf                           the configuration (never overwritten: an existing one
#                                                     is kept and the new default goes to client.conf.dist)
#   /etc/ld.so.conf.d/vmcuda.conf                     makes the shim the CUDA runtime of every program
#   /usr/share/man/man1/vmcuda.1.gz, /usr/share/doc/vmcuda-client/
# --prefix DIR puts all of it under DIR (DIR/usr/lib/vmcuda, DIR/etc/vmcuda, ...) and runs no ldconfig:
# use `DIR/usr/bin/vmcuda run` or LD_LIBRARY_PATH=DIR/usr/lib/vmcuda there.
# The list of installed files is kept in usr/lib/vmcuda/.installed-files for --uninstall.
set -eu

VERSION="unknown"
prefix="/"
mode=install
purge=false
run_ldconfig=true
here="$(cd "$(dirname "$0")" && pwd)"

usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
}
die() { echo "install.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --uninstall) mode=uninstall; shift ;;
        --purge) purge=true; shift ;;
        --no-ldconfig) run_ldconfig=false; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
prefix="${prefix%/}"
dest="$prefix"            # "" for the system root
libdir="$dest/usr/lib/vmcuda"
manifest="$libdir/.installed-files"
system=false
[ -z "$dest" ] && system=true

if $system && [ "$(id -u)" != 0 ]; then
    die "installing into / needs root (sudo $0), or use --prefix DIR"
fi

ldconfig_now() {
    if $system && $run_ldconfig; then
        ldconfig || echo "install.sh: WARNING: ldconfig failed; run it by hand" >&2
    fi
}

if [ "$mode" = uninstall ]; then
    [ -f "$manifest" ] || die "nothing installed under ${dest:-/} (no $manifest)"
    conf="$dest/etc/vmcuda/client.conf"
    while IFS= read -r f; do
        p="$dest/$f"
        if [ "$f" = etc/vmcuda/client.conf ] && ! $purge; then
            continue
        fi
        rm -f "$p"
    done < "$manifest"
    if ! $purge && [ -f "$conf" ]; then
        echo "install.sh: kept $conf (--purge removes it)"
    fi
    rm -f "$manifest" "$dest/etc/vmcuda/client.conf.dist"
    for d in "$libdir" "$dest/usr/share/doc/vmcuda-client" "$dest/etc/vmcuda"; do
        rmdir "$d" 2>/dev/null || true
    done
    ldconfig_now
    echo "install.sh: vmcuda client removed from ${dest:-/}"
    exit 0
fi

# ---- install ----
[ "$(uname -s)" = Linux ] && [ "$(uname -m)" = x86_64 ] || die "this is the x86-64 Linux client; this machine is $(uname -sm)"
[ -d "$here/files" ] || die "$here/files is missing: run install.sh from the unpacked tarball"
if command -v ldd >/dev/null 2>&1; then
    glibc="$(ldd --version 2>/dev/null | head -n 1 | grep -o '[0-9]\+\.[0-9]\+$' || true)"
    case "$glibc" in
        2.[0-9]|2.[12][0-9]|2.3[0-3]) die "glibc $glibc is too old; the shim needs glibc 2.34 or newer" ;;
    esac
fi
mkdir -p "$libdir"
: > "$manifest.new"
(cd "$here/files" && find . -type f -o -type l) | sed 's|^\./||' | LC_ALL=C sort | while IFS= read -r f; do
    src="$here/files/$f"
    dst="$dest/$f"
    mkdir -p "$(dirname "$dst")"
    if [ "$f" = etc/vmcuda/client.conf ] && [ -f "$dst" ]; then
        if ! cmp -s "$src" "$dst"; then
            cp "$src" "$dst.dist"
            echo "install.sh: kept your $dst; the new default is in $dst.dist"
        fi
    elif [ "$f" = etc/ld.so.conf.d/vmcuda.conf ] && ! $system; then
        # Under a prefix the entry names where the shim really is (not active: it is not /etc).
        sed "s|^/usr/lib/vmcuda\$|$libdir|" "$src" > "$dst"
    elif [ -L "$src" ]; then
        rm -f "$dst"
        ln -s "$(readlink "$src")" "$dst"
    else
        rm -f "$dst"
        cp -p "$src" "$dst"
    fi
    echo "$f" >> "$manifest.new"
done
mv "$manifest.new" "$manifest"
ldconfig_now
# client.conf holds the tenant token: on a system install, root and group vmcuda only (as the .deb does)
if $system && [ "$(id -u)" = 0 ]; then
    getent group vmcuda >/dev/null || groupadd --system vmcuda
    chown root:vmcuda "$dest/etc/vmcuda/client.conf"
    chmod 0640 "$dest/etc/vmcuda/client.conf"
    echo "install.sh: $dest/etc/vmcuda/client.conf is for root and group vmcuda: add CUDA users with usermod -aG vmcuda NAME"
fi

echo "install.sh: vmcuda client $VERSION installed into ${dest:-/}"
echo "  libraries: $libdir/libcudart.so.13, libcuda.so.1, libnvidia-ml.so.1, libvmcuda-client.so"
echo "  launcher: $dest/usr/bin/vmcuda (vmcuda run | doctor | status)"
echo "  config:   $dest/etc/vmcuda/client.conf"
if $system; then
    echo "  every program now loads the shim (/etc/ld.so.conf.d/vmcuda.conf): meant for VMs without a GPU"
    for lib in libcudart.so.13 libcuda.so.1 libnvidia-ml.so.1; do
        if ldconfig -p 2>/dev/null | grep "$lib " | grep -vq '/usr/lib/vmcuda/'; then
            echo "  NOTE: another $lib is installed on this machine; /usr/lib/vmcuda shadows it"
        fi
    done
    $run_ldconfig || echo "  --no-ldconfig: run ldconfig before programs can find the shim"
else
    echo "  not system-wide (--prefix): run programs with $dest/usr/bin/vmcuda run, or LD_LIBRARY_PATH=$libdir"
fi
echo "Next: set 'appliance = HOST:PORT' (and 'token = ...') in $dest/etc/vmcuda/client.conf, then: $dest/usr/bin/vmcuda doctor"
