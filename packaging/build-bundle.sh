#!/usr/bin/env bash
# Assembles the vmcuda appliance bundle (called by the packaging module at `prepare-package`):
#
#   vmcuda-VERSION/
#     bin/      vmcudad, vmcuda, vmcuda-rewrite (the launchers from the repo's bin/)
#     lib/      the daemon jar and all its runtime dependency jars
#     native/   libvmcuda-worker.so (the worker library, preloaded into rewritten binaries), vmcuda-worker
#               (the plain worker, for sessions that ship no executable), vmcuda-sandbox (the worker
#               sandbox launcher), vmcuda-ucx-agent (a worker's UCX end point; needs the host's libucx0) and
#               vmcuda-xid-watch (the GPUs' XID errors, from the driver's NVML),
#               next to the library where the daemon looks
#     client/   the client libraries (for client VMs and `vmcuda run`): libvmcuda-client.so (the core),
#               libcudart.so.13 (the runtime front end), libcuda.so.1 (the driver front end, + the
#               libcuda.so link), vmcuda-doctor (the program behind `vmcuda doctor`) and vmcuda-ucx-check (UCX reads an
#               appliance's UCX address in it first: client-shim/src/core/ucx_blob_check.c)
#     jre/      a jlink'd runtime: the GPU machines run Ubuntu 24.04 without any Java
#
# and packs it into OUT_DIR/vmcuda-VERSION-linux-x86_64.tar.gz.
set -euo pipefail

version="" repo="" libdir="" java_home="" outdir="" allow_incomplete=false
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --repo-root) repo="$(cd "$2" && pwd)"; shift 2 ;;
        --lib-dir) libdir="$2"; shift 2 ;;
        --java-home) java_home="$2"; shift 2 ;;
        --out-dir) outdir="$2"; shift 2 ;;
        --allow-incomplete) allow_incomplete="$2"; shift 2 ;;
        *) echo "build-bundle: unknown argument $1" >&2; exit 2 ;;
    esac
done
for v in version repo libdir java_home outdir; do
    [ -n "${!v}" ] || { echo "build-bundle: --${v//_/-} is required" >&2; exit 2; }
done

name="vmcuda-$version"
stage="$outdir/bundle"
top="$stage/$name"
tarball="$outdir/$name-linux-x86_64.tar.gz"
rm -rf "$stage" "$tarball"
mkdir -p "$top/bin" "$top/lib" "$top/native" "$top/client"

missing=()
copy_required() { # SRC DEST_DIR: a part the bundle is useless without
    if [ -f "$1" ]; then cp -p "$1" "$2/"; else missing+=("$1"); fi
}

for launcher in vmcudad vmcuda vmcuda-rewrite; do
    copy_required "$repo/bin/$launcher" "$top/bin"
done
chmod 755 "$top"/bin/* 2>/dev/null || true
copy_required "$repo/appliance/target/native/libvmcuda-worker.so" "$top/native"
copy_required "$repo/appliance/target/native/vmcuda-worker" "$top/native"
copy_required "$repo/appliance/target/native/vmcuda-sandbox" "$top/native"
copy_required "$repo/appliance/target/native/vmcuda-ucx-agent" "$top/native"
copy_required "$repo/appliance/target/native/vmcuda-xid-watch" "$top/native"
copy_required "$repo/client-shim/target/lib/libvmcuda-client.so" "$top/client"
copy_required "$repo/client-shim/target/lib/libcudart.so.13" "$top/client"
copy_required "$repo/client-shim/target/lib/libcuda.so.1" "$top/client"
[ -f "$top/client/libcuda.so.1" ] && ln -sf libcuda.so.1 "$top/client/libcuda.so"
copy_required "$repo/client-shim/target/lib/libnvidia-ml.so.1" "$top/client"
[ -f "$top/client/libnvidia-ml.so.1" ] && ln -sf libnvidia-ml.so.1 "$top/client/libnvidia-ml.so"
copy_required "$repo/client-shim/target/bin/vmcuda-doctor" "$top/client"
copy_required "$repo/client-shim/target/bin/vmcuda-ucx-check" "$top/client"

shopt -s nullglob
jars=("$libdir"/*.jar)
[ ${#jars[@]} -gt 0 ] || missing+=("$libdir/*.jar (runtime jars of vmcuda-appliance)")
cp -p "${jars[@]}" "$top/lib/"

if [ ${#missing[@]} -gt 0 ]; then
    printf 'build-bundle: missing: %s\n' "${missing[@]}" >&2
    if [ "$allow_incomplete" != "true" ]; then
        echo "build-bundle: refusing to build an incomplete bundle; build the whole project (mvn -B install)," \
             "or pass -Dvmcuda.bundle.allowIncomplete=true to try the packaging alone" >&2
        exit 1
    fi
    echo "build-bundle: WARNING: building an INCOMPLETE bundle (allowIncomplete=true)" >&2
    printf '%s\n' "${missing[@]}" > "$top/INCOMPLETE"
fi

# --- Java runtime --------------------------------------------------------------------------
# Base modules: logging, Unsafe for Netty (jdk.unsupported), EC crypto for TLS (loaded as a
# provider, which jdeps cannot see). jdeps adds whatever the classes really reference (java.naming
# for gRPC's DNS look-ups among them), so a new dependency cannot silently break the bundle. jdeps is run on the extracted classes, not the jars: several jars are
# named modules that `require` optional modules we do not ship (jdeps would refuse them).
jlink="$java_home/bin/jlink"
jdeps="$java_home/bin/jdeps"
[ -x "$jlink" ] || { echo "build-bundle: no jlink at $jlink (Maven must run on a full JDK)" >&2; exit 1; }
modules="java.base,java.logging,jdk.unsupported,jdk.crypto.ec"
if [ ${#jars[@]} -gt 0 ] && [ -x "$jdeps" ] && command -v unzip >/dev/null; then
    classes="$outdir/jdeps-classes"
    rm -rf "$classes" && mkdir -p "$classes"
    for j in "${jars[@]}"; do
        unzip -qo "$j" '*.class' -x 'module-info.class' 'META-INF/*' -d "$classes" 2>/dev/null || true
    done
    if found="$("$jdeps" --ignore-missing-deps --print-module-deps "$classes" 2>"$outdir/jdeps.err")"; then
        [ -n "$found" ] && modules="$modules,$found"
    else
        echo "build-bundle: WARNING: jdeps failed (see $outdir/jdeps.err); using base modules only" >&2
    fi
    rm -rf "$classes"
else
    echo "build-bundle: WARNING: jdeps or unzip unavailable; using base modules only" >&2
fi
# Modules that jdeps finds referenced only by code the daemon never runs, left out (together ~13 MB of JRE):
# java.desktop (JNA's helpers for AWT windows, which the daemon never calls) and
# java.compiler (Vert.x compiling Java verticles from source; jetcd uses Vert.x only as a gRPC client).
# The GPU pool run (tests/gpu/run-pool-on-device.sh) runs the bundle, pool included, on this JRE.
optional_only="java.desktop java.compiler"
modules="$(tr ',' '\n' <<<"$modules" | sed '/^$/d' | grep -vxF -f <(tr ' ' '\n' <<<"$optional_only") | sort -u | paste -sd, -)"

feature="$("$jlink" --version | cut -d. -f1)"
if [ "$feature" -ge 21 ]; then compress="--compress=zip-6"; else compress="--compress=2"; fi
"$jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages $compress \
    --output "$top/jre"
# The JDK's native libraries keep their symbol tables (libjvm.so alone ~4 MB of them): drop them.
if command -v strip >/dev/null; then
    find "$top/jre" -name '*.so' -exec strip --strip-unneeded {} +
fi
echo "build-bundle: jre modules: $modules"

# Reproducible, root-owned archive with one top directory.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -C "$stage" -czf "$tarball" "$name"
size=$(du -m "$tarball" | cut -f1)
echo "build-bundle: $tarball (${size} MiB)"
if [ "$size" -ge 40 ]; then
    echo "build-bundle: WARNING: bundle is ${size} MiB, over the 40 MiB target" >&2
fi
