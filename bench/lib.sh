# Helpers shared by the benchmark scripts (sourced by bench/net.sh, bench/storage.sh,
# bench/hop-cpu.sh and bench/pipe-load.sh).
# The sourcing script defines log, die and APT_UPDATED=0 first.

need_cmd() { # COMMAND DEBIAN_PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    [[ $EUID -eq 0 ]] || die "'$1' not found; install Debian package '$2'"
    if [[ $APT_UPDATED == 0 ]]; then apt-get update -qq >&2 || die "apt-get update failed"; APT_UPDATED=1; fi
    log "installing $2"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2 || die "apt-get install $2 failed"
}
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((17000 + RANDOM % 4000))
        port_in_use "$p" || { echo "$p"; return 0; }
    done
    die "no free TCP port found"
}
resp_ping() {
    (
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf '*1\r\n$4\r\nPING\r\n' >&3
        IFS= read -r -t 2 reply <&3 || exit 1
        [[ $reply == +PONG* ]]
    ) 2>/dev/null
}
# await_server NAME PID PORT LOG [TIMEOUT_S]: waits until the server answers PING on PORT;
# dies, with the last lines of LOG, when process PID exits first or TIMEOUT_S (default 30)
# pass. Every script's server start ends with it.
await_server() {
    local name=$1 pid=$2 port=$3 log=$4 timeout_s=${5:-30} t0=$SECONDS
    until resp_ping "$port"; do
        kill -0 "$pid" 2>/dev/null || { tail -n 5 "$log" >&2; die "$name exited during startup (log: $log)"; }
        ((SECONDS - t0 < timeout_s)) || { tail -n 5 "$log" >&2; die "$name did not answer PING within ${timeout_s}s (log: $log)"; }
        sleep 0.01
    done
}
# start_on_free_port DIR CMD...: starts `CMD --port P --dir DIR` (output in DIR/server.log) on a
# free port, trying another one if the server exits at once; sets PORT and PID, or dies with
# the server's log.
start_on_free_port() {
    local dir=$1 i j
    shift
    for ((i = 0; i < 5; i++)); do
        PORT=$(free_port)
        "$@" --port "$PORT" --dir "$dir" >"$dir/server.log" 2>&1 &
        PID=$!
        for ((j = 0; j < 200; j++)); do
            kill -0 "$PID" 2>/dev/null || break
            resp_ping "$PORT" && return 0
            sleep 0.05
        done
        kill -0 "$PID" 2>/dev/null && return 0
    done
    cat "$dir/server.log" >&2
    die "the server did not start: $*"
}
now() { date +%s.%N; }
# cpu_ticks PID: utime+stime of the process (all threads), in clock ticks.
cpu_ticks() {
    local line rest f
    read -r line <"/proc/$1/stat" || return 1
    rest=${line##*) }       # the comm field may contain spaces: skip past its last ')'
    read -r -a f <<<"$rest" # f[0] is field 3 (state); utime = field 14, stime = field 15
    echo $((f[11] + f[12]))
}
# pin_all_threads PID CPU: moves every thread of PID onto CPU, twice (a thread that set its
# own affinity in between is caught the second time); for a server started unpinned in its
# default configuration (one worker per CPU) and measured on one CPU.
pin_all_threads() {
    local _
    for _ in 1 2; do taskset -a -p -c "$2" "$1" >/dev/null; sleep 0.2; done
}
calc() { awk "BEGIN { printf \"%s\", $1 }"; }
# cpu_sample CPU: "busy total steal" jiffies of one CPU from /proc/stat.
cpu_sample() { awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t, $9; exit }' /proc/stat; }
cpu_busy_pct() { # CPU SECONDS
    local b0 t0 b1 t1
    read -r b0 t0 _ <<<"$(cpu_sample "$1")"
    sleep "$2"
    read -r b1 t1 _ <<<"$(cpu_sample "$1")"
    calc "($t1 > $t0) ? 100 * ($b1 - $b0) / ($t1 - $t0) : 0"
}
rss_bytes() { awk '/^VmRSS:/ { print $2 * 1024; exit }' "/proc/$1/status" 2>/dev/null || echo 0; }
# median_of: the median of the numbers on stdin, one per line (every line counts); "nan"
# when there are none.
median_of() {
    awk '{ v[++n] = $1 }
        END {
            if (n == 0) { print "nan"; exit }
            for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
            print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }'
}
# run_median SERVER TEST PIPE COLUMN: the median of COLUMN over the rows of the tab-separated
# "$RUNS" file (a header line, then server, test, pipeline, ... per run) of one point.
run_median() {
    awk -F'\t' -v s="$1" -v t="$2" -v p="$3" -v c="$4" 'NR > 1 && $1 == s && $2 == t && $3 == p { print $c }' "$RUNS" | median_of
}
# point_median SERVER TEST COLUMN: the median of COLUMN over the rows of the tab-separated
# "$RUNS" file (a header line, then server, test, ... per run) of one point.
point_median() {
    awk -F'\t' -v s="$1" -v t="$2" -v c="$3" 'NR > 1 && $1 == s && $2 == t { print $c }' "$RUNS" | median_of
}
# record_run FIELD...: appends one tab-separated row to "$RUNS".
record_run() { (IFS=$'\t'; printf '%s\n' "$*") >>"$RUNS"; }
# kill_server PID: kills a server started in the background (SIGKILL) and reaps it.
kill_server() { kill -9 "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# ratio A B: A / B to two decimals, "-" when either is "nan" or B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "-"; else printf "%.2f", a / b }'; }
# benchmark_rps FILE: the last "requests per second" figure of a redis-benchmark -q output.
benchmark_rps() { tr '\r' '\n' <"$1" | awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($i == "requests") r = $(i - 1) } END { print r }'; }
# fio_iops JSON: the read IOPS (rounded) of a fio --output-format=json file; empty when
# there is none.
fio_iops() { awk '/"read" : \{/ { r = 1 } r && /"iops" :/ { gsub(/[ ,]/, ""); split($0, a, ":"); printf "%.0f", a[2]; exit }' "$1"; }
# json_num FILE KEY: a number (or null) field of skerry-bench's one-line JSON.
json_num() { grep -o "\"$2\":[-0-9.enul]*" "$1" | head -n 1 | cut -d: -f2; }
# new_results_dir NAME: a results directory for today's run of NAME that does not exist yet
# (bench/results/<date>-NAME, then -2, -3, ...), printed; the caller creates it.
new_results_dir() {
    local base out i=2
    base=$ROOT/bench/results/$(date +%Y-%m-%d)-$1
    out=$base
    while [[ -e $out ]]; do out=$base-$i; i=$((i + 1)); done
    printf '%s\n' "$out"
}
