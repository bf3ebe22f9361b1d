#!/bin/bash
# make bench: ssp's benchmarks.  Each workload is a function bench_NAME that
# writes its report, headed by a description of the machine, to
# test/bench/results/NAME.txt and to the terminal; main runs the workloads
# named as arguments, or all of them.  Workloads:
#   json_parsers   Postgres's jsonapi against cJSON (test/bench/json_parsers.c)
#   windows        what a hopping window costs against a tumbling one
#   joins          a join of two streams against an aggregate of one
# Settings: SSP_BENCH_MESSAGES (default 1000000), SSP_BENCH_RUNS (default 5).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(dirname "$0")/../lib.sh"

BENCH_WORKLOADS=(json_parsers windows joins)
BENCH_DIR=test/bench  # main runs in $SSP_SRC
BENCH_RESULTS=$BENCH_DIR/results
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}

# bench_need_packages PKG...: install missing Debian packages as root;
# otherwise fail, saying what to run.
bench_need_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] ||
        ssp_die "missing packages: ${missing[*]}; run as root: apt-get install -y ${missing[*]}"
    ssp_log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# bench_machine: what the numbers were measured on.
bench_machine() {
    local cpu
    cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*:[[:space:]]*//p;q}' /proc/cpuinfo)
    echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "uname:    $(uname -a)"
    echo "nproc:    $(nproc)"
    echo "cpu:      ${cpu:-unknown}"
    echo "compiler: $(cc --version | head -n 1)"
}

# bench_report NAME CMD...: run CMD, its output after bench_machine's, into
# results/NAME.txt and the terminal; a failed run keeps the previous report.
bench_report() {
    local out=$BENCH_RESULTS/$1.txt
    shift
    mkdir -p "$BENCH_RESULTS"
    { bench_machine; echo; "$@"; } 2>&1 | tee "$out.tmp"
    mv "$out.tmp" "$out"
    ssp_log "report: $out"
}

# bench_json_parsers: decoding JSON order messages, Postgres's jsonapi
# (as src/decode.c uses it) against cJSON.
bench_json_parsers() {
    local bin=$BENCH_DIR/json_parsers
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    local -a build
    bench_need_packages libcjson-dev "postgresql-server-dev-$SSP_PG_VERSION" gcc
    build=(cc -O2 -Wall -Wextra -Werror -I"$("$PG_CONFIG" --includedir-server)"
        -o "$bin" "$bin.c" -L"$("$PG_CONFIG" --pkglibdir)" -lpgcommon -lpgport -lcjson)
    ssp_log "json_parsers: building"
    "${build[@]}"
    ssp_log "json_parsers: $n messages, $r rounds"
    bench_report json_parsers bench_json_parsers_run "${build[*]}" "$bin" "$n" "$r"
}

# bench_json_parsers_run BUILD CMD...: the report's body.
bench_json_parsers_run() {
    echo "build:    $1"
    shift
    echo "run:      $*"
    echo
    "$@"
}

# bench_start_postgres: a throwaway Postgres with ssp, and the test broker
# with topic "events" of 16 partitions; sets PGHOST, PGPORT, SSP_BROKERS.
bench_start_postgres() {
    [ -n "${BENCH_PG:-}" ] && return 0
    ssp_build
    ssp_start_broker "$SSP_WORK/bench-broker" --topic events:16 \
        --topic bench_orders:16 --topic bench_payments:16
    BENCH_PG=$SSP_WORK/bench-pg
    initdb -D "$BENCH_PG" -A trust >/dev/null
    cat >>"$BENCH_PG/postgresql.conf" <<CONF
shared_preload_libraries = 'ssp'
max_worker_processes = 32
port = ${SSP_BENCH_PORT:-54331}
unix_socket_directories = '$SSP_WORK'
listen_addresses = ''
CONF
    pg_ctl -D "$BENCH_PG" -l "$SSP_WORK/bench-pg.log" -w start >/dev/null
    export PGHOST=$SSP_WORK PGPORT=${SSP_BENCH_PORT:-54331} PGDATABASE=postgres
    trap 'pg_ctl -D "$BENCH_PG" -m immediate stop >/dev/null 2>&1; ssp_cleanup' EXIT
    psql -q -v ON_ERROR_STOP=1 -v brokers="$SSP_BROKERS" <<'SQL'
CREATE EXTENSION ssp;
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE events (id bigint, region text, amount numeric, ts timestamptz)
  SERVER kafka OPTIONS (topic 'events', timestamp 'ts');
CREATE FOREIGN TABLE bench_orders (id bigint, region text, amount numeric, ts timestamptz)
  SERVER kafka OPTIONS (topic 'bench_orders', timestamp 'ts');
CREATE FOREIGN TABLE bench_payments (id bigint, region text, amount numeric, ts timestamptz)
  SERVER kafka OPTIONS (topic 'bench_payments', timestamp 'ts');
SQL
}

# bench_view_seconds NAME DEFINITION [OPTIONS]: seconds for a new view to
# catch up; OPTIONS are view options after ssp.continuous (default: a grace
# of a day).
bench_view_seconds() {
    psql -X -q -At -v ON_ERROR_STOP=1 <<SQL
CREATE VIEW $1 WITH (ssp.continuous${3-, ssp.grace = '1 day'}) AS $2;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT ssp.wait('$1', '600 s') \g /dev/null
SELECT round((extract(epoch FROM clock_timestamp()) - :t0)::numeric, 3);
DROP VIEW $1;
SQL
}

# bench_windows: catch-up time of the same aggregate over 100,000 events as
# a tumbling one-hour window and as one-hour windows every minute (each
# event in 60 windows), in the same run.
bench_windows() {
    local n=${SSP_BENCH_EVENTS:-100000} r=${SSP_BENCH_RUNS:-5}
    bench_start_postgres
    ssp_log "windows: producing $n events"
    psql -X -q -c "INSERT INTO events SELECT g, 'r' || g % 5, g % 100, timestamptz '2024-01-01' + g * interval '1 s' FROM generate_series(1, $n) g"
    bench_report windows bench_windows_run "$n" "$r"
}

bench_windows_run() {
    local n=$1 r=$2 i t h
    local -a tumble=() hop=()
    echo "workload: $n events (one a second), 5 regions, 16 partitions; catch-up from the earliest offset"
    echo "tumbling: SELECT region, ssp.tumble(ts, '1 hour') AS w, count(*), sum(amount) ... GROUP BY region, w"
    echo "hopping:  SELECT region, ssp.hop(ts, '1 hour', '1 minute') AS w, count(*), sum(amount) ... GROUP BY region, w"
    echo
    for i in $(seq "$r"); do
        t=$(bench_view_seconds bench_tumble "SELECT region, ssp.tumble(ts, '1 hour') AS w, count(*), sum(amount) FROM events GROUP BY region, w")
        h=$(bench_view_seconds bench_hop "SELECT region, ssp.hop(ts, '1 hour', '1 minute') AS w, count(*), sum(amount) FROM events GROUP BY region, w")
        echo "  run $i: tumbling ${t} s, hopping ${h} s"
        tumble+=("$t")
        hop+=("$h")
    done
    t=$(printf '%s\n' "${tumble[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    h=$(printf '%s\n' "${hop[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo
    echo "median tumbling: $t s ($(awk -v n="$n" -v t="$t" 'BEGIN {printf "%d", n / t}') events/s)"
    echo "median hopping:  $h s ($(awk -v n="$n" -v t="$h" 'BEGIN {printf "%d", n / t}') events/s)"
    echo "hopping / tumbling time: $(awk -v a="$h" -v b="$t" 'BEGIN {printf "%.2f", a / b}') (each event is in 60 hopping windows)"
    echo "RESULT windows tumbling_s=$t hopping_s=$h"
}

# bench_median: the median of the numbers on stdin.
bench_median() {
    sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# bench_joins: catch-up time of a join of two streams (orders with their
# payments within the hour: average delay by region) against an aggregate
# of the orders alone, in the same run.
bench_joins() {
    local n=${SSP_BENCH_EVENTS:-100000} r=${SSP_BENCH_RUNS:-5}
    bench_start_postgres
    ssp_log "joins: producing $n orders and their payments"
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO bench_orders SELECT g, 'r' || g % 100, g % 1000, timestamptz '2024-01-01' + g * interval '100 ms'
  FROM generate_series(1, $n) g;
INSERT INTO bench_payments SELECT id, region, amount, ts FROM (
  SELECT g AS id, 'r' || g % 100 AS region, g % 1000 AS amount,
         timestamptz '2024-01-01' + g * interval '100 ms' + (g % 600) * interval '1 s' AS ts
  FROM generate_series(1, $n) g WHERE g % 10 <> 0) p ORDER BY ts;
SQL
    bench_report joins bench_joins_run "$n" "$r"
}

bench_joins_run() {
    local n=$1 r=$2 i a j payments
    local -a agg=() join=()
    payments=$(psql -X -q -At -c "SELECT count(*) FROM generate_series(1, $n) g WHERE g % 10 <> 0")
    echo "workload: $n orders (ten a second) and $payments payments (up to 10 minutes later), 16 partitions each; catch-up from the earliest offsets"
    echo "aggregate: SELECT region, count(*), sum(amount) FROM bench_orders GROUP BY region"
    echo "join:      SELECT o.region, avg(p.ts - o.ts), count(*) FROM bench_orders o JOIN bench_payments p"
    echo "             ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region"
    echo
    for i in $(seq "$r"); do
        a=$(bench_view_seconds bench_agg "SELECT region, count(*), sum(amount) FROM bench_orders GROUP BY region" "")
        j=$(bench_view_seconds bench_join "SELECT o.region, avg(p.ts - o.ts), count(*) FROM bench_orders o JOIN bench_payments p ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region" "")
        echo "  run $i: aggregate ${a} s, join ${j} s"
        agg+=("$a")
        join+=("$j")
    done
    a=$(printf '%s\n' "${agg[@]}" | bench_median)
    j=$(printf '%s\n' "${join[@]}" | bench_median)
    echo
    echo "median aggregate: $a s ($(awk -v n="$n" -v t="$a" 'BEGIN {printf "%d", n / t}') messages/s)"
    echo "median join:      $j s ($(awk -v n="$((n + payments))" -v t="$j" 'BEGIN {printf "%d", n / t}') messages/s over both topics)"
    echo "join / aggregate, per message: $(awk -v a="$a" -v j="$j" -v n="$n" -v m="$((n + payments))" 'BEGIN {printf "%.2f", (j / m) / (a / n)}')"
    echo "RESULT joins aggregate_s=$a join_s=$j"
}

# main [WORKLOAD...]: run the workloads named, or all of them.
main() {
    local w
    # as root: packages, then the rest as the unprivileged user (Postgres)
    if [ "$(id -u)" -eq 0 ] && [ -z "${SSP_INNER:-}" ]; then
        bench_need_packages libcjson-dev
    fi
    SSP_COPY_BACK=test/bench/results ssp_setup "$@"
    cd "$SSP_SRC"
    [ $# -gt 0 ] || set -- "${BENCH_WORKLOADS[@]}"
    for w in "$@"; do
        declare -F "bench_$w" >/dev/null ||
            ssp_die "no workload $w (there are: ${BENCH_WORKLOADS[*]})"
        "bench_$w"
    done
}

main "$@"
