#!/usr/bin/env bash
# The pool tests (PoolTest) start a real etcd, and `vmcuda cluster` reads it with curl and jq. When one of
# them is missing this installs Debian's packages (etcd-server, jq, curl) if it can (root with apt-get, as
# on the build and CI machines), else says what to install; PoolTest then fails with the same advice.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "ensure-etcd: installing ${missing[*]} (the pool tests' etcd and vmcuda cluster's tools)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
        { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; }
    exit 0
fi
echo "ensure-etcd: the pool tests need ${missing[*]}: install them (Debian/Ubuntu: apt-get install ${missing[*]})" >&2
exit 0 # PoolTest reports what is missing; the rest of the build goes on
