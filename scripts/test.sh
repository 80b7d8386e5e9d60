#!/usr/bin/env bash
# The project's whole test suite, from a fresh Debian machine: installs what it needs
# (Debian packages through apt-get, crates through cargo), checks formatting and lints,
# runs unit and end-to-end tests (also against a reference redis-server 8.0.2 built from
# Debian trixie's source), then the Redis 8.0.2 Tcl suite units that already pass
# (tests/compat/baseline.txt), so a compatibility regression fails. Prints the time each
# part took at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# part NAME: start timing a part (the previous one ends); `part` alone ends the last one.
PARTS=()
PART_NAME=""
PART_T0=$SECONDS
T_START=$SECONDS
part() {
    [[ -n $PART_NAME ]] && PARTS+=("$(printf '%5ds  %s' $((SECONDS - PART_T0)) "$PART_NAME")")
    PART_NAME=${1:-}
    PART_T0=$SECONDS
    [[ -n $PART_NAME ]] && echo "== $PART_NAME"
    return 0
}
REDIS_PID=""
report_times() {
    # A failure before the background redis-server build was waited for: stop it (its own
    # process group, see below).
    if [[ -n $REDIS_PID ]]; then kill -- -"$REDIS_PID" 2>/dev/null || true; fi
    part
    echo "== time per part"
    printf '%s\n' "${PARTS[@]}"
    printf '%5ds  total\n' $((SECONDS - T_START))
}
trap report_times EXIT

need_pkgs=()
command -v redis-server >/dev/null || need_pkgs+=(redis-server)
command -v redis-cli >/dev/null || need_pkgs+=(redis-tools)
command -v tclsh >/dev/null || need_pkgs+=(tcl)
command -v dpkg-source >/dev/null || need_pkgs+=(dpkg-dev)
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need_pkgs+=(python3-matplotlib) # bench/report.py
if ((${#need_pkgs[@]})); then
    part "installing ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
# Debian's redis-server package starts a service on 6379; the tests never use that port.

# The reference redis-server 8.0.2: Debian trixie's source package, fetched and built once
# into .compat/ (only redis-server; 50-60 CPU-seconds), also the source of the Tcl suite
# below. It runs in the background (in its own process group, setsid) while fmt and clippy
# run, and is waited for before the tests. tests/common's redis_server_bin() reads
# SKERRY_REDIS_SERVER: the differential tests in `cargo test` and the second end-to-end
# pass below run this binary. A SKERRY_REDIS_SERVER already set (e.g. /usr/bin/redis-server,
# Debian's 7.0.15) is used as it is and nothing is built.
redis_out=$(mktemp)
redis_log=$(mktemp)
if [[ -n ${SKERRY_REDIS_SERVER:-} ]]; then
    echo "== reference redis-server: SKERRY_REDIS_SERVER=$SKERRY_REDIS_SERVER (preset; not building 8.0.2)"
    echo "$SKERRY_REDIS_SERVER" >"$redis_out"
    true &
else
    echo "== reference redis-server 8.0.2: scripts/compat.sh --print-redis-bin, in the background"
    setsid scripts/compat.sh --print-redis-bin >"$redis_out" 2>"$redis_log" &
fi
REDIS_PID=$!
part "cargo fmt --check"
cargo fmt --all -- --check
part "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
part "waiting for the reference redis-server 8.0.2 (fetch + build, in the background since the start)"
rc=0
wait "$REDIS_PID" || rc=$?
REDIS_PID=""
grep '^\[compat\]' "$redis_log" || true
if [[ $rc != 0 ]]; then
    cat "$redis_log"
    echo "scripts/compat.sh --print-redis-bin failed (exit status $rc)"
    exit 1
fi
SKERRY_REDIS_SERVER=$(cat "$redis_out")
rm -f "$redis_out" "$redis_log"
export SKERRY_REDIS_SERVER
"$SKERRY_REDIS_SERVER" --version
part "cargo test (unit + end-to-end)"
cargo test --workspace --locked
# The end-to-end tests (the root package's tests/, which start a server through
# tests/common) again against the reference redis-server 8.0.2, so that what they assert
# stays Redis's behaviour; Skerry-only tests skip themselves (skip_if_redis!).
part "end-to-end tests against redis-server 8.0.2 (SKERRY_TEST_SERVER=redis)"
SKERRY_TEST_SERVER=redis cargo test -p skerry --locked --test '*'
part "cargo build --release"
cargo build --release --locked
# Two units at a time (each on its own fresh server and ports): shard 2 in the background,
# its output shown after shard 1's.
part "Redis 8.0.2 Tcl suite: units that must keep passing (scripts/compat.sh --ci, two shards side by side)"
shard_log=$(mktemp)
scripts/compat.sh --ci --no-build --shard 2/2 >"$shard_log" 2>&1 &
shard_pid=$!
rc1=0
scripts/compat.sh --ci --no-build --shard 1/2 || rc1=$?
rc2=0
wait "$shard_pid" || rc2=$?
echo "== (shard 2/2)"
cat "$shard_log"
rm -f "$shard_log"
if [[ $rc1 != 0 || $rc2 != 0 ]]; then
    echo "scripts/compat.sh --ci failed (shard 1/2: exit status $rc1, shard 2/2: $rc2)"
    exit 1
fi
part "bench/report.py tests, and a bench/suite.sh smoke run (checks only, no figures)"
/usr/bin/python3 -m unittest discover -s bench -p 'test_*.py'
mkdir -p bench/tmp && smoke=$(mktemp -d "$PWD/bench/tmp/smoke.XXXXXX") # the data files need O_DIRECT: not on tmpfs
OUT=$smoke/results DATA_DIR=$smoke/data DATASETS=20000 DURATION=1 REPEATS=1 CONNS_LIST="16 80" PIPELINES="1 4" \
    FSYNC_N=20000 FSYNC_POLICIES="always no" HASH_KEYS=20000 WARMUP=1 SKIP_FIO=1 bench/suite.sh 2>"$smoke/log" ||
    { tail -n 30 "$smoke/log"; exit 1; }
rm -rf "$smoke"
part
echo "== all tests passed"
