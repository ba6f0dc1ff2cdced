#!/usr/bin/env bash
# Builds OUT_DIR/vmcuda-client-VERSION-linux-x86_64.tar.gz, the client for glibc Linux machines without dpkg (called by
# the packaging module at `package`, after jdeb built the client .deb): files/ holds exactly what
# vmcuda-client_DEBVERSION_amd64.deb installs (its data archive, less lintian's overrides), and install.sh copies it.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/debian-version.sh"

version="" repo="" outdir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --repo-root) repo="$(cd "$2" && pwd)"; shift 2 ;;
        --out-dir) outdir="$2"; shift 2 ;;
        *) echo "build-client-tarball: unknown argument $1" >&2; exit 2 ;;
    esac
done
for v in version repo outdir; do
    [ -n "${!v}" ] || { echo "build-client-tarball: --${v//_/-} is required" >&2; exit 2; }
done

deb="$outdir/vmcuda-client_$(debian_version "$version")_amd64.deb"
[ -f "$deb" ] || { echo "build-client-tarball: no $deb (jdeb builds it first)" >&2; exit 1; }
tname="vmcuda-client-$version"
stage="$outdir/pkg/client-tar"
rm -rf "$stage"
mkdir -p "$stage/$tname/files"
# a .deb is an ar archive; its data member is data.tar.xz (jdeb's <compression>xz</compression>)
(cd "$stage" && ar x "$deb" data.tar.xz)
tar -xJf "$stage/data.tar.xz" -C "$stage/$tname/files"
rm -rf "$stage/data.tar.xz" "$stage/$tname/files/usr/share/lintian"
install -m 755 "$repo/packaging/client/install.sh" "$stage/$tname/install.sh"
sed -i "s/^VERSION=.*/VERSION=\"$version\"/" "$stage/$tname/install.sh"
cat > "$stage/$tname/README.txt" <<EOF
vmcuda client $version for x86-64 Linux with glibc 2.34 or newer (no Java needed).

  sudo ./install.sh                 installs into /usr/lib/vmcuda, /usr/bin/vmcuda, /etc/vmcuda, /etc/ld.so.conf.d
  ./install.sh --prefix DIR         installs under DIR instead (DIR/usr/..., DIR/etc/...; no ldconfig)
  sudo ./install.sh --uninstall     removes it again (keeps a changed /etc/vmcuda/client.conf; --purge removes it)

Then set 'appliance = HOST:PORT' (and 'token = ...') in /etc/vmcuda/client.conf and run: vmcuda doctor
Documentation: files/usr/share/doc/vmcuda-client/ (quick-start.md, client-install.md, troubleshooting.md).
EOF
# Same timestamps on every build of the same sources (reproducible archives).
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}"
tarball="$outdir/$tname-linux-x86_64.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$stage" -czf "$tarball" "$tname"
echo "build-client-tarball: $tarball ($(du -k "$tarball" | cut -f1) KiB)"
