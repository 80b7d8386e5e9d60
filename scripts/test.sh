#!/usr/bin/env bash
# The project's whole test suite, from a fresh Debian machine: installs what it needs
# (Debian packages through apt-get, crates through cargo), checks formatting and lints,
# runs unit and end-to-end tests, then the Redis Tcl suite units that already pass
# (tests/compat/baseline.txt), so a compatibility regression fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

need_pkgs=()
command -v redis-server >/dev/null || need_pkgs+=(redis-server)
command -v redis-cli >/dev/null || need_pkgs+=(redis-tools)
command -v tclsh >/dev/null || need_pkgs+=(tcl)
command -v dpkg-source >/dev/null || need_pkgs+=(dpkg-dev)
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need_pkgs+=(python3-matplotlib) # bench/report.py
if ((${#need_pkgs[@]})); then
    echo "== installing ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
# Debian's redis-server package starts a service on 6379; the tests never use that port.

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test (unit + end-to-end)"
cargo test --workspace --locked
# The end-to-end tests (the root package's tests/, which start a server through
# tests/common) again against Debian's redis-server 7.0, so that what they assert stays
# Redis's behaviour; Skerry-only tests skip themselves (skip_if_redis!). About 40 s.
echo "== end-to-end tests against redis-server (SKERRY_TEST_SERVER=redis)"
SKERRY_TEST_SERVER=redis cargo test -p skerry --locked --test '*'
echo "== Redis Tcl suite: units that must keep passing"
cargo build --release --locked
scripts/compat.sh --ci
echo "== bench/report.py tests, and a bench/suite.sh smoke run (checks only, no figures)"
/usr/bin/python3 -m unittest discover -s bench -p 'test_*.py'
mkdir -p bench/tmp && smoke=$(mktemp -d "$PWD/bench/tmp/smoke.XXXXXX") # the data files need O_DIRECT: not on tmpfs
OUT=$smoke/results DATA_DIR=$smoke/data DATASETS=20000 DURATION=1 REPEATS=1 CONNS_LIST="16 80" PIPELINES="1 4" \
    FSYNC_N=20000 FSYNC_POLICIES="always no" HASH_KEYS=20000 WARMUP=1 SKIP_FIO=1 bench/suite.sh 2>"$smoke/log" ||
    { tail -n 30 "$smoke/log"; exit 1; }
rm -rf "$smoke"
echo "== all tests passed"
