#!/usr/bin/env bash
# Builds what operators install (called by the packaging module at `package`, after build-bundle.sh):
#
#   OUT_DIR/vmcuda-client_DEBVERSION_amd64.deb           client VMs (Debian, Ubuntu)
#   OUT_DIR/vmcuda-client-VERSION-linux-x86_64.tar.gz    client VMs (any glibc Linux): install.sh inside
#   OUT_DIR/vmcuda-appliance_DEBVERSION_amd64.deb        the appliance: the bundle under /opt/vmcuda,
#                                                        systemd units, /etc/vmcuda/vmcudad.properties
#
# DEBVERSION is the Maven version in a form Debian orders correctly: 0.1.0-SNAPSHOT -> 0.1.0~SNAPSHOT
# (a pre-release sorts before the release). Packages are built without root (dpkg-deb --root-owner-group).
# Package contents and control fields are checked by packaging/test-packages.sh at `verify`.
set -euo pipefail

version="" repo="" bundle="" outdir="" cuda_home="/usr/local/cuda"
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --repo-root) repo="$(cd "$2" && pwd)"; shift 2 ;;
        --bundle-dir) bundle="$2"; shift 2 ;;
        --out-dir) outdir="$2"; shift 2 ;;
        --cuda-home) cuda_home="$2"; shift 2 ;;
        *) echo "build-packages: unknown argument $1" >&2; exit 2 ;;
    esac
done
for v in version repo bundle outdir; do
    [ -n "${!v}" ] || { echo "build-packages: --${v//_/-} is required" >&2; exit 2; }
done
command -v dpkg-deb >/dev/null || { echo "build-packages: dpkg-deb is needed (Debian package dpkg)" >&2; exit 1; }

here="$repo/packaging"
debversion="$(printf '%s' "$version" | sed 's/-/~/g')"
# no public mailing list yet: lintian's bogus-mail-host is overridden for this address
maintainer="vmcuda maintainers <vmcuda@localhost>"
stage_root="$outdir/pkg"
rm -rf "$stage_root"
mkdir -p "$stage_root"
# Same timestamps on every build of the same sources (reproducible archives).
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}"

need() { [ -e "$1" ] || { echo "build-packages: missing $1 (build the whole project: mvn -B package)" >&2; exit 1; }; }

# Docs shipped in both packages: the operator documentation (docs/) as it is in this tree, the machine-readable
# copyright (DEP-5) and a changelog (a native package: one entry per build, naming its commit).
copy_docs() { # DEST
    mkdir -p "$1"
    if compgen -G "$repo/docs/*.md" >/dev/null; then cp -p "$repo"/docs/*.md "$1/"; fi
    cat > "$1/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vmcuda
Source: https://github.com/vmcuda/vmcuda

Files: *
Copyright: 2026 vmcuda maintainers
License: vmcuda-undecided
 The project has not chosen its licence yet: no LICENSE file in its repository grants rights beyond what the
 law gives. This applies to vmcuda's own files, its jars in /opt/vmcuda/lib (vmcuda-*.jar) included.

Files: opt/vmcuda/jre/*
Copyright: Oracle and/or its affiliates, and the OpenJDK contributors
License: GPL-2 with Classpath exception
 A Java runtime made with jlink from OpenJDK; its licences are in /opt/vmcuda/jre/legal.

Files: opt/vmcuda/lib/*
Copyright: the authors of each library
License: Apache-2.0 and MIT and BSD-3-Clause and EPL-2.0 and CDDL-1.1 or GPL-2 with Classpath exception
 Each third-party jar carries its own licence in its META-INF (picocli's names it in its Maven POM only):
 Apache-2.0 (Netty, Caffeine, Guava, gRPC, jetcd, Jackson, the Prometheus client, picocli, perfmark, failsafe,
 jspecify, error_prone_annotations), MIT (JCuda, jelf, SLF4J), BSD-3-Clause (protobuf-java), EPL-2.0 or
 Apache-2.0 (Vert.x), CDDL-1.1 or GPL-2 with the Classpath exception (javax.annotation-api); JNA is offered under
 LGPL-2.1+ or Apache-2.0 and used under Apache-2.0. On Debian systems the Apache and GPL texts are in
 /usr/share/common-licenses.

Files: opt/vmcuda/cuda/*
Copyright: NVIDIA Corporation
License: NVIDIA CUDA Toolkit EULA
 libcudart.so.13, redistributed under the NVIDIA CUDA Toolkit EULA (/opt/vmcuda/cuda/LICENSE).
EOF
    printf 'vmcuda (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- %s  %s\n' "$debversion" \
        "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "an unversioned tree")" "$maintainer" \
        "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" | gzip -9n > "$1/changelog.gz"
    chmod 644 "$1/changelog.gz"
}

# lintian's overrides for what a package does on purpose, each with its reason (lintian-overrides(5))
write_overrides() { # STAGE PACKAGE, the overrides on stdin
    mkdir -p "$1/usr/share/lintian/overrides"
    cat > "$1/usr/share/lintian/overrides/$2"
    chmod 644 "$1/usr/share/lintian/overrides/$2"
}

# Strips every ELF file of a staged tree but NVIDIA's (redistributed as NVIDIA ships it), and gives shared
# libraries and read-only files Debian's mode (0644).
strip_and_fix_modes() { # STAGE
    if command -v strip >/dev/null; then
        find "$1" -type f ! -path '*/cuda/*' -print0 | while IFS= read -r -d '' f; do
            if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
                strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
            fi
        done
    fi
    find "$1" -type f -name '*.so*' -exec chmod 644 {} +
    find "$1" -type f -perm 444 -exec chmod 644 {} +
}

# Fixes modes, writes md5sums and Installed-Size, builds the .deb.
build_deb() { # STAGE OUT
    local stage="$1" out="$2"
    find "$stage" -type d -exec chmod 755 {} +
    (cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
        xargs -r -d '\n' md5sum) > "$stage/DEBIAN/md5sums"
    chmod 644 "$stage/DEBIAN/md5sums" "$stage/DEBIAN/control"
    [ -f "$stage/DEBIAN/conffiles" ] && chmod 644 "$stage/DEBIAN/conffiles"
    [ -f "$stage/DEBIAN/triggers" ] && chmod 644 "$stage/DEBIAN/triggers"
    local size
    size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
    sed -i "s/@INSTALLED_SIZE@/$size/" "$stage/DEBIAN/control"
    find "$stage" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} + 2>/dev/null || true
    dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
    echo "build-packages: $out ($(du -k "$out" | cut -f1) KiB)"
}

# ============================================================================================
# Client: one staged tree for the .deb and the tarball
# ============================================================================================
client_libs="$repo/client-shim/target/lib"
doctor="$repo/client-shim/target/bin/vmcuda-doctor"
for lib in libvmcuda-client.so libcudart.so.13 libcuda.so.1 libnvidia-ml.so.1; do need "$client_libs/$lib"; done
need "$doctor"
need "$repo/bin/vmcuda"

cfiles="$stage_root/client-files"
mkdir -p "$cfiles/usr/lib/vmcuda" "$cfiles/usr/bin" "$cfiles/etc/vmcuda" "$cfiles/etc/ld.so.conf.d" \
         "$cfiles/usr/share/man/man1"
# the core and the front ends (runtime: libcudart.so.13; driver: libcuda.so.1, and libcuda.so for the
# tools that look that name up, as Triton does; NVML: libnvidia-ml.so.1)
for lib in libvmcuda-client.so libcudart.so.13 libcuda.so.1 libnvidia-ml.so.1; do
    install -m 644 "$client_libs/$lib" "$cfiles/usr/lib/vmcuda/$lib"
done
ln -s libcudart.so.13 "$cfiles/usr/lib/vmcuda/libcudart.so"
ln -s libcuda.so.1 "$cfiles/usr/lib/vmcuda/libcuda.so"
ln -s libnvidia-ml.so.1 "$cfiles/usr/lib/vmcuda/libnvidia-ml.so"
install -m 755 "$doctor" "$cfiles/usr/lib/vmcuda/vmcuda-doctor"
strip_and_fix_modes "$cfiles"
sed "s/^VERSION=.*/VERSION=\"$version\"/" "$repo/bin/vmcuda" > "$cfiles/usr/bin/vmcuda"
chmod 755 "$cfiles/usr/bin/vmcuda"
install -m 644 "$here/client/client.conf" "$cfiles/etc/vmcuda/client.conf"
install -m 644 "$here/client/ld.so.conf" "$cfiles/etc/ld.so.conf.d/vmcuda.conf"
# containers as clients: podman run --device vmcuda.io/client=all (CDI, read by podman, containerd and CRI-O)
mkdir -p "$cfiles/etc/cdi"
"$repo/bin/vmcuda" cdi --lib-dir /usr/lib/vmcuda --config-dir /etc/vmcuda --output "$cfiles/etc/cdi/vmcuda.yaml"
chmod 644 "$cfiles/etc/cdi/vmcuda.yaml"
sed "s/@VERSION@/$version/" "$here/client/vmcuda.1" | gzip -9n > "$cfiles/usr/share/man/man1/vmcuda.1.gz"
chmod 644 "$cfiles/usr/share/man/man1/vmcuda.1.gz"
copy_docs "$cfiles/usr/share/doc/vmcuda-client"

# ---- client .deb ----
cdeb="$stage_root/client-deb"
cp -a "$cfiles" "$cdeb"
mkdir -p "$cdeb/DEBIAN"
cat > "$cdeb/DEBIAN/control" <<EOF
Package: vmcuda-client
Version: $debversion
Architecture: amd64
Maintainer: $maintainer
Installed-Size: @INSTALLED_SIZE@
Depends: libc6 (>= 2.34), libssl3
Suggests: curl, jq, libucx0
Section: libs
Priority: optional
Homepage: https://github.com/vmcuda/vmcuda
Description: run CUDA programs of a GPU-less VM on a vmcuda appliance's GPUs
 Installs vmcuda's client libraries in /usr/lib/vmcuda (libcudart.so.13, the
 CUDA runtime front end; libcuda.so.1, the driver front end; libnvidia-ml.so.1,
 the NVML front end; libvmcuda-client.so, their core) and makes them the
 system's (/etc/ld.so.conf.d/vmcuda.conf): unmodified CUDA programs, built with
 the shared or the static CUDA runtime, using the CUDA libraries or the driver
 API, then run their CUDA calls on the GPUs of a vmcuda appliance (set it in
 /etc/vmcuda/client.conf). Also installs the vmcuda launcher (vmcuda run,
 vmcuda doctor, vmcuda status). No Java needed.
 .
 Intended for VMs without a GPU: on a machine with NVIDIA's CUDA runtime
 installed system-wide the ld.so.conf.d entry shadows it.
EOF
printf '%s\n' /etc/vmcuda/client.conf /etc/ld.so.conf.d/vmcuda.conf /etc/cdi/vmcuda.yaml > "$cdeb/DEBIAN/conffiles"
write_overrides "$cdeb" vmcuda-client <<'EOF'
# the package's purpose: its libraries in /usr/lib/vmcuda become the system's CUDA runtime, driver and NVML
vmcuda-client: package-modifies-ld.so-search-path [etc/ld.so.conf.d/vmcuda.conf]
# the ldconfig trigger rebuilds the loader's cache for /usr/lib/vmcuda, which ld.so.conf.d adds (lintian knows only
# the default directories); the postinst only reads the cache (ldconfig -p) to warn of a runtime it shadows
vmcuda-client: package-has-unnecessary-activation-of-ldconfig-trigger
vmcuda-client: maintscript-calls-ldconfig [postinst]
# no public mailing list yet
vmcuda-client: bogus-mail-host Maintainer vmcuda@localhost
vmcuda-client: bogus-mail-host-in-debian-changelog vmcuda@localhost *
EOF
# the loader's cache is rebuilt by libc-bin's ldconfig trigger once dpkg is done (not from the scripts)
echo "activate-noawait ldconfig" > "$cdeb/DEBIAN/triggers"
cat > "$cdeb/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    # client.conf holds the tenant token: readable by root and group vmcuda only. Users who may run CUDA
    # programs on the appliance join the group (usermod -aG vmcuda NAME); others get a line saying so.
    getent group vmcuda >/dev/null || groupadd --system vmcuda
    chown root:vmcuda /etc/vmcuda/client.conf
    chmod 0640 /etc/vmcuda/client.conf
    # The libraries are meant for GPU-less VMs: say so when NVIDIA's own are installed system-wide.
    for lib in libcudart.so.13 libcuda.so.1 libnvidia-ml.so.1; do
        if ldconfig -p 2>/dev/null | grep "$lib " | grep -vq '/usr/lib/vmcuda/'; then
            echo "vmcuda-client: NOTE: another $lib is installed; /usr/lib/vmcuda now shadows it for every program." >&2
        fi
    done
    if ! grep -Eq '^[[:space:]]*appliance[[:space:]]*=' /etc/vmcuda/client.conf 2>/dev/null; then
        echo "vmcuda-client: set 'appliance = HOST:PORT' (and 'token') in /etc/vmcuda/client.conf, then run: vmcuda doctor"
    fi
    echo "vmcuda-client: /etc/vmcuda/client.conf is for root and group vmcuda (0640): add CUDA users with usermod -aG vmcuda NAME"
fi
exit 0
EOF
cat > "$cdeb/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
# (the loader's cache follows through the ldconfig trigger, DEBIAN/triggers)
if [ "$1" = purge ]; then
    rmdir /etc/vmcuda 2>/dev/null || true
fi
exit 0
EOF
chmod 755 "$cdeb/DEBIAN/postinst" "$cdeb/DEBIAN/postrm"
build_deb "$cdeb" "$outdir/vmcuda-client_${debversion}_amd64.deb"

# ---- client tarball with install.sh ----
tname="vmcuda-client-$version"
tstage="$stage_root/client-tar/$tname"
mkdir -p "$tstage"
cp -a "$cfiles" "$tstage/files"
install -m 755 "$here/client/install.sh" "$tstage/install.sh"
sed -i "s/^VERSION=.*/VERSION=\"$version\"/" "$tstage/install.sh"
cat > "$tstage/README.txt" <<EOF
vmcuda client $version for x86-64 Linux with glibc 2.34 or newer (no Java needed).

  sudo ./install.sh                 installs into /usr/lib/vmcuda, /usr/bin/vmcuda, /etc/vmcuda, /etc/ld.so.conf.d
  ./install.sh --prefix DIR         installs under DIR instead (DIR/usr/..., DIR/etc/...; no ldconfig)
  sudo ./install.sh --uninstall     removes it again (keeps a changed /etc/vmcuda/client.conf; --purge removes it)

Then set 'appliance = HOST:PORT' (and 'token = ...') in /etc/vmcuda/client.conf and run: vmcuda doctor
Documentation: files/usr/share/doc/vmcuda-client/ (quick-start.md, client-install.md, troubleshooting.md).
EOF
tarball="$outdir/$tname-linux-x86_64.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$stage_root/client-tar" -czf "$tarball" "$tname"
echo "build-packages: $tarball ($(du -k "$tarball" | cut -f1) KiB)"

# ============================================================================================
# Appliance .deb: the bundle under /opt/vmcuda
# ============================================================================================
need "$bundle/bin/vmcudad"
need "$bundle/jre/bin/java"
[ ! -e "$bundle/INCOMPLETE" ] || { echo "build-packages: the bundle is incomplete ($bundle/INCOMPLETE); not packaging it" >&2; exit 1; }
adeb="$stage_root/appliance-deb"
mkdir -p "$adeb/opt" "$adeb/etc/vmcuda" "$adeb/lib/systemd/system" "$adeb/usr/sbin" "$adeb/var/lib/vmcuda" \
         "$adeb/opt/vmcuda/libexec" "$adeb/DEBIAN"
cp -a "$bundle" "$adeb/opt/vmcuda.tmp"
cp -a "$adeb/opt/vmcuda.tmp/." "$adeb/opt/vmcuda/"
rm -rf "$adeb/opt/vmcuda.tmp"
# NVIDIA's CUDA runtime for the workers (a worker is the client's program, which links libcudart.so.13).
# Redistributable under the CUDA EULA; a toolkit installed on the appliance in /usr/local/cuda comes first.
cudart="$(readlink -f "$cuda_home/lib64/libcudart.so.13" 2>/dev/null || true)"
if [ -f "$cudart" ]; then
    mkdir -p "$adeb/opt/vmcuda/cuda/lib64"
    install -m 644 "$cudart" "$adeb/opt/vmcuda/cuda/lib64/libcudart.so.13"
    lic="$(ls "$cuda_home"/dist-info/nvidia_cuda_runtime-*/licenses/License.txt "$cuda_home"/EULA.txt 2>/dev/null | head -n 1 || true)"
    if [ -n "$lic" ]; then install -m 644 "$lic" "$adeb/opt/vmcuda/cuda/LICENSE"; fi
else
    echo "build-packages: WARNING: no $cuda_home/lib64/libcudart.so.13: the appliance package will need a CUDA runtime on the appliance" >&2
fi
install -m 755 "$here/appliance/vmcuda-gpu-check" "$adeb/opt/vmcuda/libexec/vmcuda-gpu-check"
install -m 755 "$here/appliance/vmcudad-prestart" "$adeb/opt/vmcuda/libexec/vmcudad-prestart"
install -m 644 "$here/appliance/vmcudad.service" "$adeb/lib/systemd/system/vmcudad.service"
install -m 644 "$here/appliance/vmcuda-gpu-check.service" "$adeb/lib/systemd/system/vmcuda-gpu-check.service"
ln -s /opt/vmcuda/bin/vmcudad "$adeb/usr/sbin/vmcudad"
copy_docs "$adeb/usr/share/doc/vmcuda-appliance"
# the daemon's reference (every key, the sandbox, tenants), which vmcudad --help and configuration.md point to
install -m 644 "$repo/appliance/CONFIG.md" "$adeb/usr/share/doc/vmcuda-appliance/CONFIG.md"
strip_and_fix_modes "$adeb/opt/vmcuda"
# the Grafana dashboard for the appliance's /metrics (import it in Grafana; docs: appliance/CONFIG.md "Admin port")
install -D -m 0644 "$repo/packaging/grafana/vmcuda-dashboard.json" "$adeb/usr/share/doc/vmcuda-appliance/grafana/vmcuda-dashboard.json"

# /etc/vmcuda/vmcudad.properties: every key of the daemon, commented, with its built-in default and the
# meaning from appliance/CONFIG.md; then the few settings this package changes.
defaults="$repo/appliance/src/main/resources/io/vmcuda/appliance/vmcudad-defaults.properties"
need "$defaults"
props="$adeb/etc/vmcuda/vmcudad.properties"
{
    cat <<'EOF'
# vmcudad configuration (/etc/vmcuda/vmcudad.properties), read at start by vmcudad.service:
#   vmcudad --listen 0.0.0.0:7070 --admin 127.0.0.1:7071 --state-dir /var/lib/vmcuda --config THIS_FILE
# (the two addresses: VMCUDAD_LISTEN and VMCUDAD_ADMIN in /etc/default/vmcudad, when that file exists)
# Java properties syntax: KEY = VALUE. An unknown key or a bad value stops the daemon at start-up with a
# message naming the key (journalctl -u vmcudad). After a change of tenants (tenant.*) or log.level:
# systemctl reload vmcudad (running sessions go on); of anything else: systemctl restart vmcudad (running
# sessions may finish for session.drain_s, then end). Reference: /usr/share/doc/vmcuda-appliance/configuration.md.
#
# Every key is listed below, commented out, with its built-in default.

EOF
    while IFS= read -r l; do
        case "$l" in ''|'#'*) continue ;; esac
        k="${l%%=*}"; k="${k%"${k##*[![:space:]]}"}"
        val="${l#*=}"; val="${val#"${val%%[![:space:]]*}"}"
        meaning="$(awk -F'|' -v key="\`$k\`" '{ gsub(/^ +| +$/, "", $2) } $2 == key { m = $4; gsub(/^ +| +$/, "", m); print m; exit }' "$repo/appliance/CONFIG.md")"
        if [ -n "$meaning" ]; then
            printf '%s\n' "$meaning" | fold -s -w 104 | sed 's/ *$//; s/^/# /'
        fi
        printf '#%s = %s\n\n' "$k" "$val"
    done < "$defaults"
    cat <<'EOF'
# ---- Tenants: who may use the appliance (appliance/CONFIG.md "Tenants and tokens") ----
# Clients send a token (client.conf 'token =' or VMCUDA_TOKEN); this file holds only its SHA-256:
#   /opt/vmcuda/bin/vmcudad --new-token       prints a new token and its line for this file
#tenant.NAME.token_sha256 = <64 hex digits>
#tenant.NAME.max_sessions = 0
#tenant.NAME.max_gpus = 0
#tenant.NAME.max_memory_bytes = 0
#tenant.NAME.max_connections = (control.tenant_max_connections; 0 = no limit)
# The daemon refuses to listen on 0.0.0.0 without a tenant. When this file declares none, vmcudad.service
# creates tenant 'default' at its first start (/opt/vmcuda/libexec/vmcudad-prestart): its token_sha256 line
# goes to the drop-in /etc/vmcuda/vmcudad.d/50-generated.properties (this file stays yours) and the token to
# /etc/vmcuda/tenant-default.token (root only). Files in /etc/vmcuda/vmcudad.d/*.properties are read before this
# one, in name order, a later key replacing an earlier one: a key set here replaces theirs.
# With tenants, the admin port (/status, /metrics) needs the operator token: unless admin.token_sha256 is
# set here, the same first start creates one in /etc/vmcuda/admin.token (root only; vmcuda status reads it).

# ---- Settings of the vmcuda-appliance package (differ from the built-in defaults) ----
# Sandboxed workers run as this unprivileged user, created by the package.
worker.user = vmcuda-worker
# NVIDIA's CUDA runtime for the workers: a CUDA toolkit installed on the appliance first, then the copy
# shipped in /opt/vmcuda/cuda/lib64.
worker.cuda_lib_dirs = /usr/local/cuda/lib64:/usr/local/cuda/lib:/opt/vmcuda/cuda/lib64
EOF
} > "$props"
chmod 640 "$props"
grep -q '^worker.user=\|^worker.user ' "$defaults" ||
    { echo "build-packages: WARNING: the daemon has no worker.user key; drop it from vmcudad.properties" >&2; }

cat > "$adeb/DEBIAN/control" <<EOF
Package: vmcuda-appliance
Version: $debversion
Architecture: amd64
Maintainer: $maintainer
Installed-Size: @INSTALLED_SIZE@
Depends: libc6 (>= 2.34), zlib1g, libstdc++6, libgcc-s1, passwd, libssl3, openssl
Recommends: systemd, libucx0
Section: misc
Priority: optional
Homepage: https://github.com/vmcuda/vmcuda
Description: vmcuda appliance: CUDA programs of GPU-less VMs on this host's GPUs
 The appliance daemon vmcudad (with its own Java runtime, under /opt/vmcuda),
 the worker library and sandbox launcher, NVIDIA's CUDA runtime library for
 the workers, and the systemd units vmcudad.service (client port 0.0.0.0:7070,
 admin HTTP 127.0.0.1:7071, state in /var/lib/vmcuda) and
 vmcuda-gpu-check.service (explains at boot what is missing for the GPUs).
 .
 The NVIDIA driver is not included: install the one that matches the GPUs
 (R580 or newer for CUDA 13). Until then the daemon runs and reports no GPU.
EOF
echo "/etc/vmcuda/vmcudad.properties" > "$adeb/DEBIAN/conffiles"
write_overrides "$adeb" vmcuda-appliance <<'EOF'
# a self-contained appliance: the daemon with its own jlink'd Java runtime and private jars, under /opt/vmcuda
vmcuda-appliance: dir-or-file-in-opt
vmcuda-appliance: jar-not-in-usr-share
# dependency jars that carry only metadata (gRPC's context API, Guava's empty listenablefuture, JCuda's natives)
vmcuda-appliance: codeless-jar
# the units are enabled and (re)started as the package installs, guarded for images without systemd
vmcuda-appliance: maintainer-script-calls-systemctl
# it holds the tenants' and the operator's token hashes: root and the daemon only
vmcuda-appliance: non-standard-file-perm 0640 != 0644 [etc/vmcuda/vmcudad.properties]
# vmcudad --help and appliance/CONFIG.md (in /usr/share/doc/vmcuda-appliance) document it
vmcuda-appliance: no-manual-page [usr/sbin/vmcudad]
# no public mailing list yet
vmcuda-appliance: bogus-mail-host Maintainer vmcuda@localhost
vmcuda-appliance: bogus-mail-host-in-debian-changelog vmcuda@localhost *
EOF
cat > "$adeb/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    # Workers run as this user (worker.user in /etc/vmcuda/vmcudad.properties); the daemon stays root
    # to build each worker's sandbox.
    if ! getent passwd vmcuda-worker >/dev/null; then
        useradd --system --user-group --home-dir /nonexistent --no-create-home \
                --shell /usr/sbin/nologin --comment "vmcuda GPU workers" vmcuda-worker
    fi
    # The state dir must be searchable by the worker user (its session directory lies below it).
    mkdir -p /var/lib/vmcuda
    chown root:root /var/lib/vmcuda
    chmod 0755 /var/lib/vmcuda
    chown root:root /etc/vmcuda/vmcudad.properties
    chmod 0640 /etc/vmcuda/vmcudad.properties
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload || true
    fi
    if command -v systemctl >/dev/null 2>&1; then
        systemctl enable vmcudad.service vmcuda-gpu-check.service >/dev/null 2>&1 || true
    fi
    if [ -d /run/systemd/system ]; then
        systemctl start vmcuda-gpu-check.service || true
        systemctl restart vmcudad.service || echo "vmcuda-appliance: vmcudad did not start: journalctl -u vmcudad" >&2
    fi
fi
exit 0
EOF
cat > "$adeb/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl stop vmcudad.service vmcuda-gpu-check.service || true
fi
exit 0
EOF
cat > "$adeb/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
case "$1" in
    remove)
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable vmcudad.service vmcuda-gpu-check.service >/dev/null 2>&1 || true
        fi
        ;;
    purge)
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable vmcudad.service vmcuda-gpu-check.service >/dev/null 2>&1 || true
        fi
        # The binary cache, session logs and sessions.jsonl; what the first start generated (tokens, certificate).
        rm -rf /var/lib/vmcuda
        rm -f /etc/vmcuda/tenant-default.token /etc/vmcuda/admin.token /etc/vmcuda/vmcudad.d/50-generated.properties
        rm -f /etc/vmcuda/tls/vmcudad.pem /etc/vmcuda/tls/vmcudad.key
        rmdir /etc/vmcuda/vmcudad.d /etc/vmcuda/tls 2>/dev/null || true
        rmdir /etc/vmcuda 2>/dev/null || true
        # The vmcuda-worker user stays (files it owned may remain elsewhere); userdel vmcuda-worker removes it.
        ;;
esac
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
EOF
chmod 755 "$adeb/DEBIAN/postinst" "$adeb/DEBIAN/prerm" "$adeb/DEBIAN/postrm"
build_deb "$adeb" "$outdir/vmcuda-appliance_${debversion}_amd64.deb"
