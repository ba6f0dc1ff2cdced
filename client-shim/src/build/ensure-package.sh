#!/usr/bin/env bash
# Usage: ensure-package.sh DEBIAN_PACKAGE OTHER_DISTROS PURPOSE FILE...
# The build or the tests need FILE... (headers, static libraries, programs; each may be a glob) from
# DEBIAN_PACKAGE. When one is missing this installs the package if it can (root with apt-get, as on the build and
# CI machines), else says what to install (OTHER_DISTROS: the names elsewhere, e.g. "ucx-devel (Fedora)") and fails.
set -euo pipefail
package=$1 others=$2 purpose=$3
shift 3
missing=0
for f in "$@"; do
    compgen -G "$f" >/dev/null || missing=1
done
[ "$missing" = 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "ensure-package: installing $package ($purpose)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >/dev/null ||
        { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >/dev/null; }
    exit 0
fi
echo "ensure-package: $purpose needs $package (Debian/Ubuntu) or $others: install it, then build again" >&2
exit 1
