#!/usr/bin/env bash
# A/B: full-scan restart at 10M of a preallocated data file (A) vs a grown one (B).
set -euo pipefail
BIN=/work/main/target/release/skerry; BENCH=/work/main/target/release/skerry-bench
N=10000000
base=/work/main/bench/tmp/abr; rm -rf $base; mkdir -p $base/A $base/B
fallocate -l 13744M $base/A/skerry.data
start() { taskset -c 0 $BIN --threads 1 --port $2 --dir $1 --data-size 14gb > $1/server.log 2>&1 & echo $! > $1/pid; until redis-cli -p $2 ping >/dev/null 2>&1; do sleep 0.005; done; }
for v in A:7401 B:7402; do d=$base/${v%%:*}; p=${v##*:}
  start $d $p
  taskset -c 1 $BENCH --host 127.0.0.1 -p $p -q -n $N -d 1024 -c 64 --key-pattern sequential --ratio 1:0 --requests $N -P 16 > $d/fill.txt 2>&1
  echo "$v dbsize $(redis-cli -p $p dbsize) file $(stat -c %s $d/skerry.data) extents $(filefrag $d/skerry.data | awk '{print $2}')"
  redis-cli -p $p shutdown > /dev/null 2>&1 || true; sleep 1; rm -f $d/skerry-index-*.ckpt
done
for r in 1 2; do for v in A:7401 B:7402; do d=$base/${v%%:*}; p=${v##*:}
  t0=$(date +%s.%N); start $d $p; until [ "$(redis-cli -p $p dbsize)" = "$N" ]; do sleep 0.005; done; t1=$(date +%s.%N)
  echo "$v r$r full-scan restart $(echo "$t1 - $t0" | bc) s $(redis-cli -p $p info storage | tr -d '\r' | grep -E 'recovery_(source|time_ms)' | tr '\n' ' ')"
  kill -9 $(cat $d/pid); sleep 1; rm -f $d/skerry-index-*.ckpt
done; done
