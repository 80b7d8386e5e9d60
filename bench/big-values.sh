#!/usr/bin/env bash
# SET and GET of one big value with redis-cli, Skerry (default flags) against Debian's
# redis-server (`--save ""`, appendonly no) in the same run (decision 0019).
#
#   bench/big-values.sh            # 100 MiB, 3 rounds
#   MIB=20 ROUNDS=5 bench/big-values.sh
#
# Per round and server: `redis-cli -x SET big < value` (the client reads the file, sends it,
# waits for +OK), `redis-cli --raw GET big > out` (the whole reply written to a file, checked
# with cmp), with new random bytes every round. Skerry also gets a GET after a restart
# (chunks read from the data file, not the value cache). Prints one line per timing and the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "[big-values] $*" >&2; }
die() { log "error: $*"; exit 1; }
APT_UPDATED=0
source bench/lib.sh

MIB=${MIB:-100}
ROUNDS=${ROUNDS:-3}
SKERRY_BIN=${SKERRY_BIN:-target/release/skerry}
REDIS_BIN=${REDIS_BIN:-redis-server}
WORK=${WORK:-$(mktemp -d /tmp/skerry-big-values.XXXXXX)}
mkdir -p "$WORK"
need_cmd redis-cli redis-tools
[[ -x $SKERRY_BIN ]] || die "$SKERRY_BIN missing: cargo build --release"

head -c $((MIB << 20)) /dev/urandom >"$WORK/value"
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

run_server() { # NAME CMD...
    local name=$1 t0 t1
    shift
    mkdir -p "$WORK/$name"
    start_on_free_port "$WORK/$name" "$@"
    for ((r = 1; r <= ROUNDS; r++)); do
        # Fresh bytes every round: an equal chunk is not written again (decision 0019).
        head -c $((MIB << 20)) /dev/urandom >"$WORK/value"
        t0=$(now)
        redis-cli -p "$PORT" -x SET big <"$WORK/value" >/dev/null
        t1=$(now)
        echo "$name set $(ms "$t0" "$t1")"
        t0=$(now)
        redis-cli -p "$PORT" --raw GET big >"$WORK/out"
        t1=$(now)
        echo "$name get $(ms "$t0" "$t1")"
        # --raw adds a newline after the value.
        cmp -n $((MIB << 20)) "$WORK/out" "$WORK/value" || die "$name: GET returned other bytes"
    done
    if [[ $name == skerry ]]; then
        redis-cli -p "$PORT" shutdown >/dev/null 2>&1 || true
        wait "$PID" 2>/dev/null || true
        start_on_free_port "$WORK/$name" "$@"
        t0=$(now)
        redis-cli -p "$PORT" --raw GET big >"$WORK/out"
        t1=$(now)
        echo "$name get-after-restart $(ms "$t0" "$t1")"
        cmp -n $((MIB << 20)) "$WORK/out" "$WORK/value" || die "$name: GET after restart returned other bytes"
        echo "$name rss-kib $(awk '/VmRSS/ { print $2 }' "/proc/$PID/status")"
    fi
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    wait "$PID" 2>/dev/null || true
}

{
    run_server skerry "$SKERRY_BIN"
    run_server redis "$REDIS_BIN" --save ""
} | tee "$WORK/times.txt"
for s in skerry redis; do
    for op in set get; do
        echo "median $s $op ms: $(awk -v s=$s -v o=$op '$1 == s && $2 == o { print $3 }' "$WORK/times.txt" | median)"
    done
done
rm -f "$WORK/value" "$WORK/out"
log "work directory: $WORK"
