#!/usr/bin/env bash
# bench/geo.sh - GEOSEARCH operations per server CPU-second, Skerry beside Debian's
# redis-server in one run (as bench/scripts.sh does for EVALSHA).
#
#   bench/geo.sh                              # release Skerry (--threads 1) and Redis
#   N=200000 ROUNDS=5 POINTS=2000 bench/geo.sh
#
# KEYS_N sorted sets geo:000000000000.. (the names redis-benchmark's __rand_int__ gives with
# -r KEYS_N) hold POINTS random points each around (13.36, 38.11) (+-0.5 degrees, the same
# seeded points on both servers, loaded with redis-cli --pipe). Two queries on a random key:
#   radius: GEOSEARCH k FROMLONLAT 13.36 38.11 BYRADIUS 10 km WITHDIST COUNT 20 ASC
#   box:    GEOSEARCH k FROMLONLAT 13.36 38.11 BYBOX 20 20 km WITHCOORD
# Each server is pinned to SERVER_CPU and redis-benchmark to CLIENT_CPU; for each query and
# round we read the server's utime+stime around the run and report ops/s, server CPU
# seconds and operations per server CPU-second, then the medians and Skerry/Redis ratios.
#
# Environment (defaults): N=100000 requests per point, CONNS=50, ROUNDS=3, KEYS_N=100,
# POINTS=1000, SERVER_CPU=0, CLIENT_CPU=1, BIN=target/release/skerry, REDIS_BIN=redis-server,
# SKERRY_THREADS=1 ("default": no --threads, one worker per CPU, every thread then moved onto
# SERVER_CPU).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${N:-100000}
CONNS=${CONNS:-50}
ROUNDS=${ROUNDS:-3}
KEYS_N=${KEYS_N:-100}
POINTS=${POINTS:-1000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BIN=${BIN:-$PWD/target/release/skerry}
REDIS_BIN=${REDIS_BIN:-redis-server}
SKERRY_THREADS=${SKERRY_THREADS:-1}
tmp=$(mktemp -d "$PWD/bench/tmp.geo.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

[[ -x $BIN ]] || { echo "no Skerry binary at $BIN (cargo build --release)" >&2; exit 1; }

# The points, as RESP GEOADD commands (100 points per command).
python3 - "$KEYS_N" "$POINTS" >"$tmp/load.resp" <<'EOF'
import random, sys
keys, points = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(42)
out = sys.stdout.buffer
def cmd(args):
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        a = a.encode()
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
for k in range(keys):
    key = "geo:%012d" % k
    for start in range(0, points, 100):
        args = ["GEOADD", key]
        for i in range(start, min(points, start + 100)):
            args += ["%.6f" % (13.36 + rng.uniform(-0.5, 0.5)),
                     "%.6f" % (38.11 + rng.uniform(-0.5, 0.5)), "p%d" % i]
        cmd(args)
EOF

QUERIES=(
    "radius|GEOSEARCH geo:__rand_int__ FROMLONLAT 13.36 38.11 BYRADIUS 10 km WITHDIST COUNT 20 ASC"
    "box|GEOSEARCH geo:__rand_int__ FROMLONLAT 13.36 38.11 BYBOX 20 20 km WITHCOORD"
)

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 2; }
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source bench/lib.sh # cpu_ticks, pin_all_threads

run_one() { # label port pid
    local label=$1 port=$2 pid=$3 q name query
    redis-cli -p "$port" --pipe <"$tmp/load.resp" >/dev/null
    for q in "${QUERIES[@]}"; do
        name=${q%%|*}
        query=${q#*|}
        # One reply checked by hand: the query finds points.
        local sample=${query//__rand_int__/000000000000}
        # shellcheck disable=SC2086
        [[ $(redis-cli -p "$port" $sample | wc -l) -gt 10 ]] || { echo "$label: $name finds nothing" >&2; exit 1; }
        for _ in $(seq "$ROUNDS"); do
            local t0 c0 t1 c1
            c0=$(cpu_ticks "$pid")
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -c "$CONNS" -n "$N" -r "$KEYS_N" -q \
                $query >/dev/null
            t1=$(date +%s.%N)
            c1=$(cpu_ticks "$pid")
            awk -v l="$label" -v q="$name" -v n="$N" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" \
                -v hz="$(getconf CLK_TCK)" 'BEGIN {
                    secs = t1 - t0; cpu = (c1 - c0) / hz;
                    printf "%-8s %-7s ops/s %9.0f  server-cpu-s %6.2f  ops/cpu-s %9.0f\n", l, q, n / secs, cpu, n / cpu }' |
                tee -a "$tmp/results.txt"
        done
    done
}

start_and_run() { # label port cmd...
    local label=$1 port=$2
    shift 2
    mkdir -p "$tmp/$label"
    if [[ $label == skerry && $SKERRY_THREADS == default ]]; then
        # The default configuration: started unpinned (one worker per CPU), then every
        # thread is moved onto SERVER_CPU.
        (cd "$tmp/$label" && exec "$@" --port "$port" >"$tmp/$label.log" 2>&1) &
    else
        (cd "$tmp/$label" && exec taskset -c "$SERVER_CPU" "$@" --port "$port" >"$tmp/$label.log" 2>&1) &
    fi
    local pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    if [[ $label == skerry && $SKERRY_THREADS == default ]]; then
        redis-cli -p "$port" INFO >/dev/null # answers once every worker runs
        pin_all_threads "$pid" "$SERVER_CPU"
    fi
    run_one "$label" "$port" "$pid"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

echo "N=$N CONNS=$CONNS ROUNDS=$ROUNDS KEYS_N=$KEYS_N POINTS=$POINTS SKERRY_THREADS=$SKERRY_THREADS; redis: $("$REDIS_BIN" --version | cut -d' ' -f3)"
start_and_run redis 7394 "$REDIS_BIN" --save '' --appendonly no
if [[ $SKERRY_THREADS == default ]]; then
    start_and_run skerry 7395 "$BIN" --dir "$tmp/skerry"
else
    start_and_run skerry 7395 "$BIN" --threads "$SKERRY_THREADS" --dir "$tmp/skerry"
fi

# Medians and ratios.
python3 - "$tmp/results.txt" <<'EOF2'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    f = line.split()
    v.setdefault((f[0], f[1]), []).append(float(f[7]))
for q in sorted({q for _, q in v}):
    s, r = statistics.median(v[("skerry", q)]), statistics.median(v[("redis", q)])
    print(f"{q:7} median ops/cpu-s: skerry {s:9.0f}  redis {r:9.0f}  ratio {s / r:.2f}")
EOF2
