#!/usr/bin/env bash
# bench/lifecycle.sh - issue 4's storage-lifecycle figures, one script after the other:
#   1. defrag   bench/lifecycle-defrag.sh   100,000 x 1 KiB overwritten 40x on a 4x device:
#                                           no error, throughput >= 0.80 x no defrag
#   2. ttl      bench/lifecycle-ttl.sh      1,000,000 keys with a 10 s TTL under load:
#                                           DBSIZE back within 15 s, space reclaimed
#   3. restart  bench/lifecycle-restart.sh  restart after a clean shutdown at N = 10,000,000:
#                                           <= 3 s (with the index checkpoint)
#   4. cache    bench/lifecycle-cache.sh    zipf(0.99) GET over 10,000,000 keys in memcap 2048
#                                           with a 1024 MB value cache: >= 2x the cache off
# Each part writes its own summary under OUT/<part>/; this script prints them and exits
# non-zero if any part failed. PARTS selects parts (default "defrag ttl restart cache");
# QUICK=1 runs every part at a tenth of its size (minutes, not the issue's figures).
#
# Environment: PARTS, QUICK, OUT (default bench/results/<date>-lifecycle); every variable
# of the part scripts passes through (e.g. SKERRY_BIN).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTS=${PARTS:-defrag ttl restart cache}
QUICK=${QUICK:-0}
OUT=${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-lifecycle}
mkdir -p "$OUT"
log() { printf '[lifecycle] %s\n' "$*" >&2; }

if [[ $QUICK == 1 ]]; then
    DEFRAG_ENV=(N=10000 WRITES_X=20 REPEATS=1)
    TTL_ENV=(N=100000)
    RESTART_ENV=(N=1000000)
    CACHE_ENV=(N=1000000 CACHE_MB=100 DURATION=10 WARMUP=10 REPEATS=1)
else
    DEFRAG_ENV=()
    TTL_ENV=(N=1000000 TTL=10)
    RESTART_ENV=(N=10000000)
    CACHE_ENV=(N=10000000 MEMCAP_MIB=2048 CACHE_MB=1024)
fi

declare -A STATUS
for part in $PARTS; do
    case $part in
    defrag) script=lifecycle-defrag.sh env_=("${DEFRAG_ENV[@]}") ;;
    ttl) script=lifecycle-ttl.sh env_=("${TTL_ENV[@]}") ;;
    restart) script=lifecycle-restart.sh env_=("${RESTART_ENV[@]}") ;;
    cache) script=lifecycle-cache.sh env_=("${CACHE_ENV[@]}") ;;
    *) log "unknown part '$part'"; exit 2 ;;
    esac
    log "== $part: ${env_[*]} bench/$script"
    env "${env_[@]}" OUT="$OUT/$part" "$ROOT/bench/$script" 2>&1 | tee "$OUT/$part.log"
    STATUS[$part]=${PIPESTATUS[0]}
    log "== $part: exit ${STATUS[$part]}"
done

fail=0
{
    echo "# Storage lifecycle figures"
    echo
    echo "\`bench/lifecycle.sh\` — $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), QUICK=$QUICK."
    echo
    echo "| part | exit | summary |"
    echo "|---|---:|---|"
    for part in $PARTS; do
        echo "| $part | ${STATUS[$part]} | \`$part/\` |"
    done
} >"$OUT/summary.md"
for part in $PARTS; do
    [[ ${STATUS[$part]} == 0 ]] || fail=1
done
cat "$OUT/summary.md"
exit $fail
