#!/usr/bin/env bash
# bench/scripts.sh - EVALSHA throughput and server CPU per call, Skerry beside Debian's
# redis-server in one run (ratios of operations per server CPU-second).
#
#   bench/scripts.sh                 # Skerry defaults and --threads 1, Redis
#   N=400000 CONNS=50 ROUNDS=3 bench/scripts.sh
#
# The script reads and writes one declared key (a rate-limiter-like INCR + EXPIRE + GET).
# Each server is pinned to CPU 0 and redis-benchmark to CPU 1 (as bench/net.sh does).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${N:-300000}
CONNS=${CONNS:-50}
ROUNDS=${ROUNDS:-3}
KEYS_N=${KEYS_N:-100000}
BIN=${BIN:-$PWD/target/release/skerry}
SCRIPT="local n = redis.call('incr', KEYS[1]) if n == 1 then redis.call('expire', KEYS[1], 60) end return n"
tmp=$(mktemp -d "$PWD/bench/tmp.scripts.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() { # label port pid
    local label=$1 port=$2 pid=$3
    local sha
    sha=$(redis-cli -p "$port" script load "$SCRIPT")
    for _ in $(seq "$ROUNDS"); do
        redis-cli -p "$port" flushall >/dev/null
        local t0 c0 t1 c1
        c0=$(cpu_ticks "$pid")
        t0=$(date +%s.%N)
        taskset -c 1 redis-benchmark -p "$port" -c "$CONNS" -n "$N" -r "$KEYS_N" -q \
            evalsha "$sha" 1 "rl:__rand_int__" >/dev/null
        t1=$(date +%s.%N)
        c1=$(cpu_ticks "$pid")
        awk -v l="$label" -v n="$N" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" \
            -v hz="$(getconf CLK_TCK)" 'BEGIN {
                secs = t1 - t0; cpu = (c1 - c0) / hz;
                printf "%-16s ops/s %9.0f  server-cpu-s %6.2f  ops/cpu-s %9.0f\n", l, n / secs, cpu, n / cpu }'
    done
}

start_skerry() { # label port extra...
    local label=$1 port=$2; shift 2
    mkdir -p "$tmp/$label"
    (cd "$tmp/$label" && exec taskset -c 0 "$BIN" --port "$port" "$@" >"$tmp/$label.log" 2>&1) &
    local pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    run_one "$label" "$port" "$pid"
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

start_redis() {
    taskset -c 0 redis-server --port 7391 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do redis-cli -p 7391 ping >/dev/null 2>&1 && break; sleep 0.1; done
    run_one redis 7391 "$pid"
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

start_redis
start_skerry skerry-t1 7392 --threads 1
start_skerry skerry-default 7393
