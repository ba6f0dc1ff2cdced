#!/usr/bin/env bash
# Prepares the parts of the two .deb packages that are not files of this repository as they stand (called by the
# packaging module at `prepare-package`, after build-bundle.sh). The jdeb plugin builds the packages from them at
# `package`: packaging/pom.xml's data sets give every path, mode, owner, link and conffile; the control files are
# packaging/client/DEBIAN and packaging/appliance/DEBIAN. Everything lands in OUT_DIR/pkg:
#
#   client/lib/       libvmcuda-client.so, libcudart.so.13, libcuda.so.1, libnvidia-ml.so.1, vmcuda-doctor and vmcuda-ucx-check, stripped
#   client/vmcuda     the launcher (bin/vmcuda) with this version
#   client/vmcuda.1.gz, client/vmcuda.yaml   the man page; the CDI spec for containers (vmcuda cdi)
#   appliance/opt.tar /opt/vmcuda as installed: the bundle with its ELF files stripped and NVIDIA's libcudart.so.13 for
#                     the workers (cuda/). A tar archive because it is a tree of mixed modes with symbolic links (the
#                     jlink'd runtime's bin/ and legal/), which jdeb reads entry by entry (its directory data sets would
#                     follow the links and give every file one mode)
#   appliance/vmcudad.properties   every daemon key, commented, with its default and meaning, then the package's settings
#   doc/              what both packages install in /usr/share/doc/PACKAGE: docs/*.md, the machine-readable copyright
#                     (packaging/copyright) and the changelog (a native package: one entry per build, naming its commit)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/debian-version.sh"

version="" repo="" bundle="" outdir="" cuda_home="/usr/local/cuda"
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --repo-root) repo="$(cd "$2" && pwd)"; shift 2 ;;
        --bundle-dir) bundle="$2"; shift 2 ;;
        --out-dir) outdir="$2"; shift 2 ;;
        --cuda-home) cuda_home="$2"; shift 2 ;;
        *) echo "prepare-packages: unknown argument $1" >&2; exit 2 ;;
    esac
done
for v in version repo bundle outdir; do
    [ -n "${!v}" ] || { echo "prepare-packages: --${v//_/-} is required" >&2; exit 2; }
done

here="$repo/packaging"
pkg="$outdir/pkg"
rm -rf "$pkg"
mkdir -p "$pkg/client/lib" "$pkg/appliance/opt/vmcuda" "$pkg/doc"
need() { [ -e "$1" ] || { echo "prepare-packages: missing $1 (build the whole project: mvn -B package)" >&2; exit 1; }; }
# jdeb (same environment as this script) puts these in the control files instead of client/DEBIAN/control's
if [ -n "${DEBFULLNAME+x}" ] && [ -n "${DEBEMAIL+x}" ]; then
    echo "prepare-packages: WARNING: DEBFULLNAME and DEBEMAIL are set: jdeb makes them the packages' Maintainer" >&2
fi
if [ -n "${DEBVERSION+x}" ]; then echo "prepare-packages: WARNING: DEBVERSION is set: jdeb makes it the packages' Version" >&2; fi

# Strips every ELF file of a tree but NVIDIA's (redistributed as NVIDIA ships it).
strip_elf() { # DIR
    command -v strip >/dev/null || { echo "prepare-packages: WARNING: no strip (binutils): ELF files stay unstripped" >&2; return; }
    find "$1" -type f ! -path '*/cuda/*' -print0 | while IFS= read -r -d '' f; do
        if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
            strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
        fi
    done
}

# ---- both packages: /usr/share/doc/PACKAGE ----
if compgen -G "$repo/docs/*.md" >/dev/null; then cp "$repo"/docs/*.md "$pkg/doc/"; fi
cp "$here/copyright" "$pkg/doc/copyright"
# the changelog's date: the commit's (or SOURCE_DATE_EPOCH), so that a rebuild of the same sources is the same file
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}"
maintainer="$(sed -n 's/^Maintainer: //p' "$here/client/DEBIAN/control")"
printf 'vmcuda (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- %s  %s\n' "$(debian_version "$version")" \
    "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "an unversioned tree")" "$maintainer" \
    "$(date -u -R -d "@$epoch")" | gzip -9n > "$pkg/doc/changelog.gz"

# ---- client ----
client_libs="$repo/client-shim/target/lib"
for f in "$client_libs"/libvmcuda-client.so "$client_libs"/libcudart.so.13 "$client_libs"/libcuda.so.1 \
         "$client_libs"/libnvidia-ml.so.1 "$repo/client-shim/target/bin/vmcuda-doctor" \
         "$repo/client-shim/target/bin/vmcuda-ucx-check" "$repo/bin/vmcuda"; do
    need "$f"
done
cp "$client_libs"/libvmcuda-client.so "$client_libs"/libcudart.so.13 "$client_libs"/libcuda.so.1 \
   "$client_libs"/libnvidia-ml.so.1 "$repo/client-shim/target/bin/vmcuda-doctor" "$repo/client-shim/target/bin/vmcuda-ucx-check" \
   "$pkg/client/lib/"
strip_elf "$pkg/client/lib"
sed "s/^VERSION=.*/VERSION=\"$version\"/" "$repo/bin/vmcuda" > "$pkg/client/vmcuda"
sed "s/@VERSION@/$version/" "$here/client/vmcuda.1" | gzip -9n > "$pkg/client/vmcuda.1.gz"
# containers as clients: podman run --device vmcuda.io/client=all (CDI, read by podman, containerd and CRI-O)
"$repo/bin/vmcuda" cdi --lib-dir /usr/lib/vmcuda --config-dir /etc/vmcuda --output "$pkg/client/vmcuda.yaml"

# ---- appliance: /opt/vmcuda ----
need "$bundle/bin/vmcudad"
need "$bundle/jre/bin/java"
[ ! -e "$bundle/INCOMPLETE" ] || { echo "prepare-packages: the bundle is incomplete ($bundle/INCOMPLETE); not packaging it" >&2; exit 1; }
opt="$pkg/appliance/opt/vmcuda"
cp -a "$bundle/." "$opt/"
# NVIDIA's CUDA runtime for the workers (a worker is the client's program, which links libcudart.so.13).
# Redistributable under the CUDA EULA; a toolkit installed on the appliance in /usr/local/cuda comes first.
cudart="$(readlink -f "$cuda_home/lib64/libcudart.so.13" 2>/dev/null || true)"
if [ -f "$cudart" ]; then
    install -D -m 644 "$cudart" "$opt/cuda/lib64/libcudart.so.13"
    lic="$(ls "$cuda_home"/dist-info/nvidia_cuda_runtime-*/licenses/License.txt "$cuda_home"/EULA.txt 2>/dev/null | head -n 1 || true)"
    if [ -n "$lic" ]; then install -m 644 "$lic" "$opt/cuda/LICENSE"; fi
else
    echo "prepare-packages: WARNING: no $cuda_home/lib64/libcudart.so.13: the appliance package will need a CUDA runtime on the appliance" >&2
fi
strip_elf "$opt"
# Debian's modes: shared libraries and read-only files 0644, directories 0755
find "$opt" -type f \( -name '*.so*' -o -perm 444 \) -exec chmod 644 {} +
find "$opt" -type d -exec chmod 755 {} +
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$pkg/appliance" -cf "$pkg/appliance/opt.tar" opt
rm -rf "$pkg/appliance/opt"

# ---- appliance: /etc/vmcuda/vmcudad.properties ----
# every key of the daemon, commented, with its built-in default and the meaning from appliance/CONFIG.md; then the few
# settings this package changes
defaults="$repo/appliance/src/main/resources/io/vmcuda/appliance/vmcudad-defaults.properties"
need "$defaults"
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
} > "$pkg/appliance/vmcudad.properties"
grep -q '^worker.user=\|^worker.user ' "$defaults" ||
    { echo "prepare-packages: WARNING: the daemon has no worker.user key; drop it from vmcudad.properties" >&2; }
echo "prepare-packages: $pkg ready for jdeb"
