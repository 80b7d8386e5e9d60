#!/usr/bin/env bash
# Defrag's CPU per block (decision 0025), with no clients running.
#
#   bench/defrag-cost.sh LABEL -- SKERRY-COMMAND...
#
# Starts SKERRY-COMMAND (--port/--dir added; give it --threads 1 and a --data-size), pauses
# defrag, overwrites 200,000 keys x 1 KiB seven times (redis-benchmark -n 1400000 -P 16),
# then lifts defrag's rate limit and free-space target, resumes it, and waits until it is
# idle. Prints the server's CPU seconds (utime+stime, all threads) over that time divided
# by the blocks rewritten and by the records moved:
#   LABEL blocks=... records=... cpu_s=... ms_per_block=... us_per_record=...
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[$(basename "$0")] $*" >&2; }
die() { log "${label:-}: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
label=$1; shift 2
dir=$(mktemp -d "$ROOT/bench/tmp/defrag-cost.XXXXXX") # O_DIRECT: not on tmpfs
trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; rm -rf "$dir"' EXIT
start_on_free_port "$dir" "$@"
cli() { redis-cli -p "$PORT" "$@"; }
field() { cli info storage | tr -d '\r' | sed -n "s/^$1://p"; }
cli defrag pause >/dev/null
redis-benchmark -p "$PORT" -t set -n 1400000 -r 200000 -d 1024 -c 50 -P 16 -q >/dev/null 2>&1
sleep 2
b0=$(field storage_defrag_blocks_rewritten); r0=$(field storage_defrag_records_moved)
c0=$(cpu_ticks "$PID")
cli config set storage-defrag-free-target 100 >/dev/null
cli config set storage-defrag-max-mb-per-sec 100000 >/dev/null
cli defrag resume >/dev/null
# Until it has started and then stayed idle for a second.
for ((i = 0; i < 600; i++)); do
    sleep 0.5
    [[ $(field storage_defrag_state) == running ]] && continue
    (($(field storage_defrag_blocks_rewritten) > b0)) || continue
    sleep 1
    [[ $(field storage_defrag_state) == running ]] || break
done
c1=$(cpu_ticks "$PID")
b1=$(field storage_defrag_blocks_rewritten); r1=$(field storage_defrag_records_moved)
python3 - "$label" "$((b1 - b0))" "$((r1 - r0))" "$((c1 - c0))" "$(getconf CLK_TCK)" <<'PY'
import sys
label, blocks, records, ticks, tck = sys.argv[1], *map(int, sys.argv[2:])
cpu = ticks / tck
print(f"{label} blocks={blocks} records={records} cpu_s={cpu:.2f} "
      f"ms_per_block={cpu * 1e3 / max(blocks, 1):.2f} us_per_record={cpu * 1e6 / max(records, 1):.2f}")
PY
