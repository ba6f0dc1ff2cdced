#!/usr/bin/env bash
# vmcuda-sandbox is linked with libseccomp (statically: appliances need nothing at run time). Its headers
# and static library come from Debian's libseccomp-dev: when they are missing, this installs that
# package if it can (root with apt-get, as on the build and CI machines), else says what to install.
set -euo pipefail
[ -f /usr/include/seccomp.h ] && ls /usr/lib/*/libseccomp.a /usr/lib/libseccomp.a >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "ensure-libseccomp: installing libseccomp-dev (headers and static library for vmcuda-sandbox)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libseccomp-dev >/dev/null ||
        { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libseccomp-dev >/dev/null; }
    exit 0
fi
echo "ensure-libseccomp: vmcuda-sandbox needs libseccomp's headers and static library: install libseccomp-dev" \
     "(Debian/Ubuntu) or libseccomp-devel + libseccomp-static (Fedora), then build again" >&2
exit 1
