#!/usr/bin/env bash
# bench/instructions.sh - user-space instructions per command, Skerry vs Debian's redis-server,
# counted by valgrind's callgrind (decision 0030).
#
# On these shared, noisy machines a CPU-time A/B of a few percent is lost in the noise; the
# instructions a server executes per command are not (they repeat to within 1% run to run).
# Each server runs under callgrind (Skerry with --threads 1); an unmeasured SETUP command
# runs first, the counters are zeroed, redis-benchmark sends N requests of the command with
# pipeline P from 50 connections, and the counters are dumped: instructions / N.
# Kernel work (the network stack, io_uring) is not counted: compare CPU time for that
# (bench/hll.sh, bench/net.sh). Cost: about a minute per point (callgrind runs ~50x slower).
#
# Usage: bench/instructions.sh [--servers "skerry redis"] [--n N] [--pipeline P]
#            [--setup "redis-benchmark args..."] [--keep DIR] -- COMMAND ARGS...
# Example: bench/instructions.sh --pipeline 16 -- GET key:__rand_int__
# SKERRY_BIN (target/release/skerry), REDIS_BIN (redis-server) choose the binaries; --keep DIR
# keeps the callgrind files (callgrind_annotate, or per-function sums).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SERVERS="skerry redis"
N=100000
P=16
SETUP=""
KEEP=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --servers) SERVERS=${2:?}; shift 2 ;;
        --n) N=${2:?}; shift 2 ;;
        --pipeline) P=${2:?}; shift 2 ;;
        --setup) SETUP=${2:?}; shift 2 ;;
        --keep) KEEP=${2:?}; shift 2 ;;
        --) shift; break ;;
        -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ $# -gt 0 ]] || { echo "no command given (see --help)" >&2; exit 2; }

log() { printf '[instructions] %s\n' "$*" >&2; }
die() { printf '[instructions] ERROR: %s\n' "$*" >&2; exit 2; }
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd valgrind valgrind
need_cmd redis-benchmark redis-tools
[[ $N =~ ^[0-9]+$ && $N -gt 0 ]] || die "--n must be a positive integer"

SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
REDIS_BIN=${REDIS_BIN:-redis-server}
if [[ " $SERVERS " == *" skerry "* && ! -x $SKERRY_BIN ]]; then
    log "building skerry (cargo build --release)"
    (cd "$ROOT" && cargo build --release --bin skerry >&2) || die "cargo build --release failed"
fi
[[ " $SERVERS " != *" redis "* ]] || need_cmd "$REDIS_BIN" redis-server
[[ -n $KEEP ]] && mkdir -p "$KEEP"

WORK=$(mktemp -d)
trap '[[ -n ${VPID:-} ]] && kill "$VPID" 2>/dev/null; rm -rf "$WORK"' EXIT

for s in $SERVERS; do
    dir=$WORK/$s
    mkdir -p "$dir"
    case $s in
        skerry) cmd=("$SKERRY_BIN" --threads 1 --data-size 1gb) ;;
        redis) cmd=("$REDIS_BIN" --save "" --appendonly no) ;;
        *) die "unknown server '$s' (skerry|redis)" ;;
    esac
    PORT=$(free_port)
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg" "${cmd[@]}" --port "$PORT" \
        --dir "$dir" >"$dir/server.log" 2>&1 &
    VPID=$!
    for ((i = 0; i < 600; i++)); do
        resp_ping "$PORT" && break
        kill -0 "$VPID" 2>/dev/null || { cat "$dir/server.log" >&2; die "$s exited"; }
        sleep 0.2
    done
    if [[ -n $SETUP ]]; then
        # Split on spaces without globbing: a setup such as "XADD s * f v" keeps its '*'.
        read -ra setup_args <<<"$SETUP"
        redis-benchmark -p "$PORT" -c 50 -r 100000000 -q "${setup_args[@]}" >/dev/null 2>&1 ||
            die "setup failed"
    fi
    callgrind_control -z "$VPID" >/dev/null 2>&1 || die "callgrind_control -z failed"
    redis-benchmark -p "$PORT" -c 50 -n "$N" -r 100000000 -P "$P" -q "$@" >/dev/null 2>&1 ||
        die "redis-benchmark failed against $s"
    callgrind_control -d "$VPID" >/dev/null 2>&1 || die "callgrind_control -d failed"
    sleep 1
    kill "$VPID"; wait "$VPID" 2>/dev/null || true
    VPID=
    ir=$(awk '/^summary:/ {s += $2} END {printf "%.0f", s}' "$dir"/cg.1)
    [[ -n $KEEP ]] && cp "$dir/cg.1" "$KEEP/$s.callgrind"
    printf '%s\t%s\tP%s\t%s instructions/op\n' "$s" "$*" "$P" $((ir / N))
done
