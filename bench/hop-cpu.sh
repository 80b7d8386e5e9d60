#!/usr/bin/env bash
# Hop cost (decision 0017): operations per server CPU-second of SET then GET with
# redis-benchmark, for one server command line.
#
#   bench/hop-cpu.sh LABEL PIPELINE -- SERVER-COMMAND...
#
# Starts SERVER-COMMAND (--port/--dir added), runs
#   redis-benchmark -t set -n 400000 -c 50 -P PIPELINE -d 1024 -r 200000   (fills the keys)
#   redis-benchmark -t get -n 400000 -c 50 -P PIPELINE -d 1024 -r 200000
# and reads the server's utime+stime (/proc/PID/stat) around each; prints
#   LABEL P=... set_rps=... set_ops_per_cpu_s=... get_rps=... get_ops_per_cpu_s=...
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[$(basename "$0")] $*" >&2; }
die() { log "${label:-}: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
label=$1; pl=$2; shift 3
n=${N:-400000}
dir=$(mktemp -d /tmp/bench.XXXXXX)
start_on_free_port "$dir" "$@"
port=$PORT pid=$PID
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' /proc/$pid/stat; }
line="$label P=$pl"
for t in set get; do
    c0=$(cpu)
    rps=$(redis-benchmark -p "$port" -t $t -n "$n" -c 50 -P "$pl" -d 1024 -r 200000 -q 2>/dev/null |
        tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
    c1=$(cpu)
    per=$(echo "$n / ($c1 - $c0)" | bc)
    line="$line ${t}_rps=$rps ${t}_cpu_s=$(echo "$c1 - $c0" | bc) ${t}_ops_per_cpu_s=$per"
done
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid"
wait "$pid" 2>/dev/null || true
rm -rf "$dir"
echo "$line"
