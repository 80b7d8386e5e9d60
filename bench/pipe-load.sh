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
file=$1; label=$2; shift 3
dir=$(mktemp -d /tmp/bench.XXXXXX)
# A free port: another server on this machine may hold the one picked first.
for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    "$@" --port "$port" --dir "$dir" >"$dir/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do
        kill -0 "$pid" 2>/dev/null || break
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.05
    done
    kill -0 "$pid" 2>/dev/null && break
done
kill -0 "$pid" 2>/dev/null || { echo "$label: the server did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
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
