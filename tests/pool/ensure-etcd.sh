#!/usr/bin/env bash
# The pool tests (PoolTest) start a real etcd, and `vmcuda cluster` reads it with curl and jq. What is missing is
# installed from Debian (etcd-server, jq, curl) by client-shim/src/build/ensure-package.sh when it can be (root
# with apt-get, as on the build and CI machines); otherwise it says what to install, PoolTest then fails with the
# same advice, and the rest of the build goes on.
set -uo pipefail
ensure="$(cd "$(dirname "$0")/../../client-shim/src/build" && pwd)/ensure-package.sh"
"$ensure" etcd-server "etcd's release binaries" "the pool tests' etcd" "$(command -v etcd || echo /usr/bin/etcd)" || true
"$ensure" jq jq "vmcuda cluster" "$(command -v jq || echo /usr/bin/jq)" || true
"$ensure" curl curl "vmcuda cluster" "$(command -v curl || echo /usr/bin/curl)" || true
exit 0
