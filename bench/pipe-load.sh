#!/usr/bin/env bash
# Bulk load through `redis-cli --pipe` (decision 0017): elapsed time and fdatasyncs.
#
#   bench/pipe-load.sh FILE.resp LABEL -- SERVER-COMMAND...
#
# Starts SERVER-COMMAND (its --port/--dir are added: skerry or redis-server), waits for it,
# times `redis-cli --pipe < FILE.resp`, prints one line:
#   LABEL elapsed_s=... errors=... fdatasyncs=... dbsize=...
# then shuts the server down and removes its directory.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[$(basename "$0")] $*" >&2; }
die() { log "${label:-}: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
file=$1; label=$2; shift 3
dir=$(mktemp -d /tmp/bench.XXXXXX)
start_on_free_port "$dir" "$@"
port=$PORT pid=$PID
start=$(date +%s.%N)
out=$(redis-cli -p "$port" --pipe <"$file" 2>&1)
end=$(date +%s.%N)
errors=$(echo "$out" | sed -n 's/.*errors: \([0-9]*\), replies.*/\1/p')
syncs=$(redis-cli -p "$port" info storage | tr -d '\r' | sed -n 's/^storage_fdatasyncs://p')
if [ -z "$syncs" ]; then
    syncs=$(redis-cli -p "$port" info persistence | tr -d '\r' | sed -n 's/^aof_fsync_count://p')
fi
dbsize=$(redis-cli -p "$port" dbsize)
cpu=$(awk '{print ($14+$15)/100}' /proc/$pid/stat)
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid"
wait "$pid" 2>/dev/null || true
rm -rf "$dir"
printf '%s elapsed_s=%.2f errors=%s fdatasyncs=%s dbsize=%s server_cpu_s=%s\n' \
    "$label" "$(echo "$end - $start" | bc)" "${errors:-?}" "${syncs:-?}" "$dbsize" "$cpu"
