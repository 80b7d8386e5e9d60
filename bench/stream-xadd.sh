#!/usr/bin/env bash
# bench/stream-xadd.sh - XADD into a small stream vs a big (grouped) stream (issue 27 item 1).
#
# A fresh Skerry (--threads 1) holds two streams, filled with SMALL and BIG entries
# (pipelined XADD key * f <16 bytes>). Then N single XADDs (CONNS connections, no
# pipelining) to each, one after the other, REPEATS times alternated. Reports ops/s and
# XADDs per server CPU-second (utime+stime from /proc/PID/stat, steadier than ops/s on a
# loaded machine) per run, the device bytes written per XADD (INFO storage
# `device_written_bytes` deltas), and the BIG/SMALL ratios of the medians. Targets (issue 27): ratio >= 0.8, <= 2 KiB per
# XADD at BIG=10000000.
#
# Environment (defaults): SKERRY_BIN=target/release/skerry SMALL=1000 BIG=10000000 N=50000
# CONNS=50 REPEATS=3 FILL_PIPELINE=64 APPENDFSYNC=everysec DATA_DIR=bench/tmp/stream-xadd
# (removed at exit).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SMALL=${SMALL:-1000}
BIG=${BIG:-10000000}
N=${N:-50000}
CONNS=${CONNS:-50}
REPEATS=${REPEATS:-3}
FILL_PIPELINE=${FILL_PIPELINE:-64}
APPENDFSYNC=${APPENDFSYNC:-everysec}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/stream-xadd}
PORT=${PORT:-6399}

rm -rf "$DATA_DIR"
mkdir -p "$DATA_DIR"
"$SKERRY_BIN" --port "$PORT" --dir "$DATA_DIR" --threads 1 --appendfsync "$APPENDFSYNC" \
    >"$DATA_DIR/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DATA_DIR"' EXIT
for _ in $(seq 100); do
    redis-cli -p "$PORT" PING >/dev/null 2>&1 && break
    sleep 0.1
done

written() {
    redis-cli -p "$PORT" INFO storage | tr -d '\r' | awk -F: '$1=="storage_device_written_bytes"{print $2}'
}

fill() { # key entries
    redis-benchmark -p "$PORT" -c 1 -P "$FILL_PIPELINE" -n "$2" -q \
        XADD "$1" '*' f 0123456789abcdef >/dev/null
    echo "filled $1: $(redis-cli -p "$PORT" XLEN "$1") entries"
}

ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
CLK_TCK=$(getconf CLK_TCK)

run() { # key -> prints ops/s, bytes per XADD and XADDs per server CPU-second
    local before after rate c0 c1
    before=$(written)
    c0=$(ticks)
    rate=$(redis-benchmark -p "$PORT" -c "$CONNS" -n "$N" -q XADD "$1" '*' f 0123456789abcdef |
        tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}')
    c1=$(ticks)
    after=$(written)
    echo "$rate $(((after - before) / N)) $(awk -v n="$N" -v t="$((c1 - c0))" -v k="$CLK_TCK" 'BEGIN { printf "%.0f", (t > 0) ? n * k / t : 0 }')"
}

fill small "$SMALL"
fill big "$BIG"
small_rates=()
big_rates=()
small_cpu=()
big_cpu=()
for r in $(seq "$REPEATS"); do
    read -r rs bs cs < <(run small)
    read -r rb bb cb < <(run big)
    echo "run $r: small $rs ops/s, $cs XADDs/CPU-s ($bs device bytes/XADD); big $rb ops/s, $cb XADDs/CPU-s ($bb device bytes/XADD)"
    small_rates+=("$rs")
    big_rates+=("$rb")
    small_cpu+=("$cs")
    big_cpu+=("$cb")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms=$(median "${small_rates[@]}")
mb=$(median "${big_rates[@]}")
echo "median: small ($SMALL entries) $ms ops/s, big ($BIG entries) $mb ops/s, ratio $(awk -v a="$mb" -v b="$ms" 'BEGIN{printf "%.2f", a/b}')"
mcs=$(median "${small_cpu[@]}")
mcb=$(median "${big_cpu[@]}")
echo "median XADDs per server CPU-second: small $mcs, big $mcb, ratio $(awk -v a="$mcb" -v b="$mcs" 'BEGIN{printf "%.2f", a/b}')"
echo "group records: $(redis-cli -p "$PORT" INFO storage | tr -d '\r' | awk -F: '$1=="storage_collection_group_records"{print $2}')"
