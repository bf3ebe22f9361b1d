#!/bin/bash
# make bench: ssp's benchmarks.  Each workload is a function bench_NAME that
# writes its report, headed by a description of the machine, to
# test/bench/results/NAME.txt and to the terminal; main runs the workloads
# named as arguments, or all of them.  Workloads:
#   json_parsers   Postgres's jsonapi against cJSON (test/bench/json_parsers.c)
#   windows        what a hopping window costs against a tumbling one
#   joins          a join of two streams against an aggregate of one
#   catchup        a view catching up on 1,000,000 orders against kcat into
#                  COPY and an aggregate (baseline A) and kcat alone (B)
#   groups         the same with 1,000, 100,000 and 1,000,000 groups
#   formats        the same orders in JSON, Avro and Protobuf: a view's
#                  catch-up and a scan that decodes every message
#   aggregates     built-in aggregates on their fast path and through their
#                  own functions (the generic path), and hll and tdigest
#   output         a view catching up with and without ssp.output_topic
#   views          1 to 50 views catching up on the same stream: the time and
#                  the ssp workers' peak memory, with one reader per stream
#                  (ssp.shared_readers = on) and with one consumer per view
#   freshness      latency from produce to view under 20,000 events/s, with
#                  the view alone and with 19 other views on the stream
#   memory         the worker's memory over 10,000,000 events, busy and idle
#   streams        a view catching up on 1,000,000 orders against Kafka
#                  Streams computing the same aggregate (test/kafka/
#                  StreamsAggregate.java), on Apache Kafka
#   shards         a view catching up on 1,000,000 orders read by 1, 2 and 3
#                  Postgres servers (ssp.shard) on this machine, and a query
#                  of the view over the shards (ssp.shards) against the same
#                  view on one server
# Settings: SSP_BENCH_MESSAGES (default 1000000), SSP_BENCH_RUNS (default 5);
# SSP_BENCH_KAFKA=apache runs the workloads on Apache Kafka (KRaft, one node,
# started by test/kafka/kafka_ctl) rather than the test broker; the streams
# workload always runs on Apache Kafka, one of its own if need be.  Each
# report names its broker; on Apache Kafka, results/NAME-apache.txt (and
# .png), so the test broker's reports stay.  SSP_BENCH_JAVA_OPTS: the JVM options of the
# benchmark's Kafka and of Kafka Streams.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(dirname "$0")/../lib.sh"

BENCH_WORKLOADS=(json_parsers windows joins catchup groups formats aggregates output views freshness memory streams shards)
BENCH_DIR=test/bench  # main runs in $SSP_SRC
BENCH_RESULTS=$BENCH_DIR/results
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}
# the benchmark's topics, NAME:PARTITIONS
BENCH_TOPICS=(events:16 bench_orders:16 bench_payments:16 bench_shipments:16 bench_accounts:16 bench_rates:16 bench_catchup:64 bench_avro:64 bench_proto:64 bench_fresh:16 bench_mem:16)
# Apache Kafka's JVM in a benchmark (SSP_BENCH_JAVA_OPTS): the default JIT
# (kafka_ctl's own options stop at C1, which starts faster and runs slower)
# and a fixed heap
BENCH_JAVA_OPTS="-Xms1g -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true"

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
    [ -z "${BENCH_BROKER:-}" ] || echo "broker:   $BENCH_BROKER"
}

# bench_report NAME CMD...: run CMD, its output after bench_machine's, into
# results/NAME.txt (NAME-apache.txt on Apache Kafka, BENCH_SUFFIX) and the
# terminal; a failed run keeps the previous report.
bench_report() {
    local out=$BENCH_RESULTS/$1${BENCH_SUFFIX:-}.txt
    shift
    mkdir -p "$BENCH_RESULTS"
    { bench_machine; echo; "$@"; } 2>&1 | tee "$out.tmp"
    mv "$out.tmp" "$out"
    ssp_log "report: $out"
}

# bench_json_parsers: decoding JSON order messages, Postgres's jsonapi
# (as src/stream/decode.c uses it) against cJSON.
bench_json_parsers() {
    local bin=$BENCH_DIR/json_parsers
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    local -a build
    bench_need_packages libcjson-dev "postgresql-server-dev-$SSP_PG_VERSION" gcc
    local BENCH_BROKER="none (no Kafka in this workload)" BENCH_SUFFIX=
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

# bench_kafka_version: the Apache Kafka version kafka_ctl runs.
bench_kafka_version() {
    sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$SSP_SRC/test/kafka/pom.xml"
}

# bench_start_apache DIR NAME:PARTITIONS...: Apache Kafka in DIR with these
# topics, its JVMs with BENCH_JAVA_OPTS; sets SSP_BROKERS and SSP_KAFKA_DIR.
# Three tries: kafka_ctl picks free ports before the broker binds them, and
# on a machine starting many brokers another may take one meanwhile.
bench_start_apache() {
    local dir=$1 t try
    shift
    ssp_log "starting Apache Kafka in $dir"
    SSP_KAFKA_DIRS+=("$dir")
    for try in 1 2 3; do
        SSP_BROKERS=$(SSP_KAFKA_JAVA_OPTS=$BENCH_JAVA_OPTS "$SSP_SRC/test/kafka/kafka_ctl" start "$dir" | tail -n 1) && break
        SSP_BROKERS=
        "$SSP_SRC/test/kafka/kafka_ctl" stop "$dir"
        rm -rf "$dir"
    done
    [ -n "$SSP_BROKERS" ] || ssp_die "Apache Kafka did not start (logs in $dir)"
    SSP_KAFKA_DIR=$dir SSP_BROKER_CONTROL=
    export SSP_BROKERS SSP_KAFKA_DIR SSP_BROKER_CONTROL
    for t in "$@"; do
        "$SSP_SRC/test/kafka/kafka_ctl" topics "$dir" --create --topic "${t%:*}" --partitions "${t#*:}" >/dev/null
    done
}

# bench_start_postgres: a throwaway Postgres with ssp, and the broker, with
# the topics of BENCH_TOPICS: the test broker, or Apache Kafka with
# SSP_BENCH_KAFKA=apache; sets PGHOST, PGPORT, SSP_BROKERS, BENCH_BROKER
# (what the reports name), BENCH_KAFKA (mock or apache) and BENCH_SUFFIX
# (what the reports' file names end with: -apache on Apache Kafka).
bench_start_postgres() {
    [ -n "${BENCH_PG:-}" ] && return 0
    ssp_build
    if [ "${SSP_BENCH_KAFKA:-mock}" = apache ]; then
        bench_start_apache "$SSP_WORK/bench-kafka" "${BENCH_TOPICS[@]}"
        BENCH_KAFKA=apache BENCH_SUFFIX=-apache
        BENCH_BROKER="Apache Kafka $(bench_kafka_version) (KRaft, one node, on the same machine; JVM $BENCH_JAVA_OPTS)"
    else
        local t args=()
        for t in "${BENCH_TOPICS[@]}"; do
            args+=(--topic "$t")
        done
        SSP_TEST_KAFKA=mock ssp_start_broker "$SSP_WORK/bench-broker" "${args[@]}"
        BENCH_KAFKA=mock
        BENCH_BROKER="the test broker (librdkafka's mock cluster, in process test/broker/ssp_test_broker, on the same machine)"
        [ -z "${SSP_TEST_BROKERS:-}" ] || BENCH_BROKER="the Kafka at $SSP_TEST_BROKERS (SSP_TEST_BROKERS)"
    fi
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
-- written to partition id % 16: without a key, the producer would put
-- most messages in one partition, and the test broker keeps a partition's
-- latest 50,000 or so only
CREATE FOREIGN TABLE bench_orders (id bigint, region text, amount numeric, ts timestamptz,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_orders', timestamp 'ts');
CREATE FOREIGN TABLE bench_payments (id bigint, region text, amount numeric, ts timestamptz,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_payments', timestamp 'ts');
CREATE FOREIGN TABLE bench_shipments (id bigint, ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_shipments', timestamp 'ts');
-- one topic read two ways: as a changelog (the latest version per id), and as a log
CREATE FOREIGN TABLE bench_accounts (id bigint, region text, amount numeric)
  SERVER kafka OPTIONS (topic 'bench_accounts', key 'id', changelog 'upsert');
CREATE FOREIGN TABLE bench_accounts_log (id bigint, region text, amount numeric)
  SERVER kafka OPTIONS (topic 'bench_accounts', key 'id');
-- a changelog of a rate per region, for a temporal join with the orders
CREATE FOREIGN TABLE bench_rates (region text, rate numeric, ts timestamptz OPTIONS (meta 'timestamp'),
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_rates', key 'region', changelog 'upsert');
CREATE FOREIGN TABLE bench_catchup (order_id bigint, customer_id bigint, region text, amount numeric,
    ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_catchup', timestamp 'ts');
CREATE FOREIGN TABLE bench_avro (order_id bigint, customer_id bigint, region text, amount numeric,
    ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_avro', timestamp 'ts', format 'avro',
    schema '{"type": "record", "name": "Order", "fields": [{"name": "order_id", "type": "long"}, {"name": "customer_id", "type": "long"}, {"name": "region", "type": "string"}, {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}}, {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}');
CREATE FOREIGN TABLE bench_catchup_raw (v bytea) SERVER kafka OPTIONS (topic 'bench_catchup', format 'bytea');
CREATE FOREIGN TABLE bench_avro_raw (v bytea) SERVER kafka OPTIONS (topic 'bench_avro', format 'bytea');
CREATE FOREIGN TABLE bench_fresh (seq bigint, produced_at timestamptz)
  SERVER kafka OPTIONS (topic 'bench_fresh', timestamp 'produced_at');
CREATE FOREIGN TABLE bench_mem (id bigint, region text, amount numeric, ts timestamptz,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_mem', timestamp 'ts');
SQL
}

# bench_view_seconds NAME DEFINITION [OPTIONS [MESSAGES [QUERY]]]: seconds
# for a new view to catch up; OPTIONS are view options after ssp.continuous
# (default: a grace of a day); with MESSAGES, fails unless the view
# processed that many; with QUERY (a statement with its semicolon), its
# output, once caught up, on the lines after the seconds.  With
# BENCH_CPU_FILE, the CPU-seconds the machine used in those seconds go
# into that file.
bench_view_seconds() {
    psql -X -q -At -v ON_ERROR_STOP=1 <<SQL
CREATE VIEW $1 WITH (ssp.continuous${3-, ssp.grace = '1 day'}) AS $2;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
\set c0 \`$BENCH_CPU_TICKS\`
SELECT ssp.wait('$1', '600 s') \g /dev/null
\set c1 \`$BENCH_CPU_TICKS\`
SELECT round((extract(epoch FROM clock_timestamp()) - :t0)::numeric, 3);
\o ${BENCH_CPU_FILE:-/dev/null}
SELECT round((:c1 - :c0) / $(getconf CLK_TCK)::numeric, 2);
\o
DO \$\$
DECLARE
  n bigint := (SELECT processed FROM ssp.views WHERE view = '$1'::regclass);
BEGIN
  IF '${4:-}' <> '' AND n <> '${4:-0}'::bigint THEN
    RAISE EXCEPTION 'view $1 processed % messages, not ${4:-}', n;
  END IF;
END \$\$;
${5:-}
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
# payments within the hour: average delay by region), and of that join in
# one-minute windows of the later of the two times, against an aggregate of
# the orders alone; and of an aggregate over a changelog (ten versions of
# each account, old versions retracted) against the same aggregate over the
# topic read as a log; and of counts of distinct values (each one new, and
# each seen before) against the plain aggregate; and of a temporal join of
# the orders with a changelog of rates per region; and of a join of three
# streams, the orders, their payments and their shipments; in the same run.
bench_joins() {
    local n=${SSP_BENCH_EVENTS:-100000} r=${SSP_BENCH_RUNS:-5}
    bench_start_postgres
    ssp_log "joins: producing $n orders and their payments"
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO bench_orders SELECT g, 'r' || g % 100, g % 1000, timestamptz '2024-01-01' + g * interval '100 ms', g % 16
  FROM generate_series(1, $n) g;
INSERT INTO bench_payments SELECT id, region, amount, ts, id % 16 FROM (
  SELECT g AS id, 'r' || g % 100 AS region, g % 1000 AS amount,
         timestamptz '2024-01-01' + g * interval '100 ms' + (g % 600) * interval '1 s' AS ts
  FROM generate_series(1, $n) g WHERE g % 10 <> 0) p ORDER BY ts;
INSERT INTO bench_shipments SELECT id, ts, id % 16 FROM (
  SELECT g AS id, timestamptz '2024-01-01' + g * interval '100 ms' + (g % 600) * interval '1 s'
           + (g % 1200) * interval '1 s' AS ts
  FROM generate_series(1, $n) g WHERE g % 10 <> 0 AND g % 7 <> 0) s ORDER BY ts;
INSERT INTO bench_accounts SELECT g % ($n / 10), 'r' || g % 100, g % 1000 FROM generate_series(1, $n) g;
INSERT INTO bench_rates SELECT 'r' || k, 1 + m % 7 / 10.0, timestamptz '2024-01-01' + m * interval '1 minute', k % 16
  FROM generate_series(0, $n / 600 + 1) m, generate_series(0, 99) k ORDER BY m, k;
SQL
    bench_report joins bench_joins_run "$n" "$r"
}

bench_joins_run() {
    local n=$1 r=$2 i a j w c l dn ds t j3 payments shipments rates
    local -a agg=() join=() win=() cl=() log=() dnew=() dseen=() temporal=() three=()
    payments=$(psql -X -q -At -c "SELECT count(*) FROM generate_series(1, $n) g WHERE g % 10 <> 0")
    shipments=$(psql -X -q -At -c "SELECT count(*) FROM generate_series(1, $n) g WHERE g % 10 <> 0 AND g % 7 <> 0")
    rates=$(psql -X -q -At -c "SELECT count(*) FROM bench_rates")
    echo "workload: $n orders (ten a second) and $payments payments (up to 10 minutes later), 16 partitions each; catch-up from the earliest offsets"
    echo "aggregate: SELECT region, count(*), sum(amount) FROM bench_orders GROUP BY region"
    echo "join:      SELECT o.region, avg(p.ts - o.ts), count(*) FROM bench_orders o JOIN bench_payments p"
    echo "             ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region"
    echo "windowed:  SELECT ssp.tumble(GREATEST(o.ts, p.ts), '1 minute'), avg(p.ts - o.ts), count(*) FROM (the same join) GROUP BY 1"
    echo "changelog: SELECT region, count(*), sum(amount) FROM bench_accounts GROUP BY region"
    echo "             ($n versions of $((n / 10)) accounts, key 'id', changelog 'upsert')"
    echo "log:       the same over the same topic without changelog 'upsert'"
    echo "distinct, new:  SELECT region, count(DISTINCT id), sum(amount) FROM bench_orders GROUP BY region (every id new)"
    echo "distinct, seen: SELECT region, count(DISTINCT amount), sum(amount) FROM bench_orders GROUP BY region"
    echo "                (10 amounts per region, each seen again in nearly every batch)"
    echo "temporal:  SELECT o.region, count(*), sum(o.amount * r.rate) FROM bench_orders o JOIN bench_rates r"
    echo "             ON r.region = o.region AND r.ts <= o.ts GROUP BY o.region"
    echo "             ($rates versions: a rate per region and minute; changelog 'upsert')"
    echo "three:     SELECT o.region, avg(s.ts - o.ts), count(*) FROM bench_orders o"
    echo "             JOIN bench_payments p ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour'"
    echo "             JOIN bench_shipments s ON s.id = p.id AND s.ts BETWEEN p.ts AND p.ts + interval '1 hour' GROUP BY o.region"
    echo "             ($shipments shipments, up to 20 minutes after their payment)"
    echo
    for i in $(seq "$r"); do
        a=$(bench_view_seconds bench_agg "SELECT region, count(*), sum(amount) FROM bench_orders GROUP BY region" "" "$n")
        j=$(bench_view_seconds bench_join "SELECT o.region, avg(p.ts - o.ts), count(*) FROM bench_orders o JOIN bench_payments p ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region" "")
        w=$(bench_view_seconds bench_win "SELECT ssp.tumble(GREATEST(o.ts, p.ts), '1 minute'), avg(p.ts - o.ts), count(*) FROM bench_orders o JOIN bench_payments p ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY 1" "")
        c=$(bench_view_seconds bench_cl "SELECT region, count(*), sum(amount) FROM bench_accounts GROUP BY region" "" "$n")
        l=$(bench_view_seconds bench_log "SELECT region, count(*), sum(amount) FROM bench_accounts_log GROUP BY region" "" "$n")
        dn=$(bench_view_seconds bench_dnew "SELECT region, count(DISTINCT id), sum(amount) FROM bench_orders GROUP BY region" "" "$n")
        ds=$(bench_view_seconds bench_dseen "SELECT region, count(DISTINCT amount), sum(amount) FROM bench_orders GROUP BY region" "" "$n")
        t=$(bench_view_seconds bench_temporal "SELECT o.region, count(*), sum(o.amount * r.rate) FROM bench_orders o JOIN bench_rates r ON r.region = o.region AND r.ts <= o.ts GROUP BY o.region" "" "$((n + rates))")
        j3=$(bench_view_seconds bench_three "SELECT o.region, avg(s.ts - o.ts), count(*) FROM bench_orders o JOIN bench_payments p ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' JOIN bench_shipments s ON s.id = p.id AND s.ts BETWEEN p.ts AND p.ts + interval '1 hour' GROUP BY o.region" "" "$((n + payments + shipments))")
        echo "  run $i: aggregate ${a} s, join ${j} s, windowed join ${w} s, changelog ${c} s, log ${l} s, distinct new ${dn} s, distinct seen ${ds} s, temporal ${t} s, three ${j3} s"
        three+=("$j3")
        temporal+=("$t")
        dnew+=("$dn")
        dseen+=("$ds")
        agg+=("$a")
        join+=("$j")
        win+=("$w")
        cl+=("$c")
        log+=("$l")
    done
    a=$(printf '%s\n' "${agg[@]}" | bench_median)
    j=$(printf '%s\n' "${join[@]}" | bench_median)
    w=$(printf '%s\n' "${win[@]}" | bench_median)
    c=$(printf '%s\n' "${cl[@]}" | bench_median)
    l=$(printf '%s\n' "${log[@]}" | bench_median)
    dn=$(printf '%s\n' "${dnew[@]}" | bench_median)
    ds=$(printf '%s\n' "${dseen[@]}" | bench_median)
    t=$(printf '%s\n' "${temporal[@]}" | bench_median)
    j3=$(printf '%s\n' "${three[@]}" | bench_median)
    echo
    echo "median aggregate: $a s ($(awk -v n="$n" -v t="$a" 'BEGIN {printf "%d", n / t}') messages/s)"
    echo "median join:      $j s ($(awk -v n="$((n + payments))" -v t="$j" 'BEGIN {printf "%d", n / t}') messages/s over both topics)"
    echo "join / aggregate, per message: $(awk -v a="$a" -v j="$j" -v n="$n" -v m="$((n + payments))" 'BEGIN {printf "%.2f", (j / m) / (a / n)}')"
    echo "median windowed join: $w s ($(awk -v n="$((n + payments))" -v t="$w" 'BEGIN {printf "%d", n / t}') messages/s over both topics); windowed / join: $(awk -v w="$w" -v j="$j" 'BEGIN {printf "%.2f", w / j}')"
    echo "median changelog: $c s ($(awk -v n="$n" -v t="$c" 'BEGIN {printf "%d", n / t}') messages/s); log: $l s; changelog / log: $(awk -v c="$c" -v l="$l" 'BEGIN {printf "%.2f", c / l}')"
    echo "median distinct, new: $dn s ($(awk -v n="$n" -v t="$dn" 'BEGIN {printf "%d", n / t}') messages/s), $(awk -v d="$dn" -v a="$a" 'BEGIN {printf "%.2f", d / a}') times the aggregate"
    echo "median distinct, seen: $ds s ($(awk -v n="$n" -v t="$ds" 'BEGIN {printf "%d", n / t}') messages/s), $(awk -v d="$ds" -v a="$a" 'BEGIN {printf "%.2f", d / a}') times the aggregate"
    echo "median temporal join: $t s ($(awk -v n="$((n + rates))" -v t="$t" 'BEGIN {printf "%d", n / t}') messages/s over both topics); temporal / aggregate, per message: $(awk -v a="$a" -v t="$t" -v n="$n" -v m="$((n + rates))" 'BEGIN {printf "%.2f", (t / m) / (a / n)}'); temporal / join, per message: $(awk -v j="$j" -v t="$t" -v m="$((n + rates))" -v p="$((n + payments))" 'BEGIN {printf "%.2f", (t / m) / (j / p)}')"
    echo "median join of three: $j3 s ($(awk -v n="$((n + payments + shipments))" -v t="$j3" 'BEGIN {printf "%d", n / t}') messages/s over the three topics); three / join, per message: $(awk -v j="$j" -v t="$j3" -v m="$((n + payments + shipments))" -v p="$((n + payments))" 'BEGIN {printf "%.2f", (t / m) / (j / p)}')"
    echo "RESULT joins aggregate_s=$a join_s=$j windowed_s=$w changelog_s=$c log_s=$l distinct_new_s=$dn distinct_seen_s=$ds temporal_s=$t three_s=$j3"
}

# bench_stats NAME N VALUE...: "NAME: median s (min - max), N/median per s".
bench_stats() {
    local name=$1 n=$2 med
    shift 2
    med=$(printf '%s\n' "$@" | bench_median)
    printf '%-10s median %s s (%s - %s), %s messages/s\n' "$name" "$med" \
        "$(printf '%s\n' "$@" | sort -n | head -n 1)" "$(printf '%s\n' "$@" | sort -n | tail -n 1)" \
        "$(awk -v n="$n" -v t="$med" 'BEGIN {printf "%d", n / t}')"
}

# bench_now: seconds since the epoch, to the millisecond.
bench_now() {
    date +%s.%3N
}

# bench_cpu: the CPU-seconds every process of the machine has used so far
# (user, nice, system, irq and softirq of /proc/stat; not idle, not steal);
# BENCH_CPU_TICKS: the same in clock ticks, a command for psql's \set
bench_cpu() {
    awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {printf "%.2f", ($2 + $3 + $4 + $7 + $8) / hz}' /proc/stat
}
BENCH_CPU_TICKS="awk '\$1 == \"cpu\" {printf \"%.0f\", \$2 + \$3 + \$4 + \$7 + \$8}' /proc/stat"

# bench_cpu_since T: CPU-seconds since bench_cpu said T
bench_cpu_since() {
    awk -v a="$1" -v b="$(bench_cpu)" 'BEGIN {printf "%.2f", b - a}'
}

# bench_formats: the catch-up's orders in JSON (bench_catchup), in Avro
# (bench_avro: unframed, the writer schema in the stream option; framed
# Avro adds a 5-byte header and a cached lookup of its id) and in Protobuf
# (bench_proto: Confluent's framing, the schema in the test Schema
# Registry, test/kafka/SchemaRegistry.java), a view of the catch-up's
# aggregate and a scan that decodes every message (the sum of their
# amounts), the formats alternated in each run.
BENCH_FORMATS=(json avro protobuf)
bench_formats() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    bench_produce_orders "$n" bench_avro
    bench_start_registry
    bench_produce_orders "$n" bench_proto
    bench_report formats bench_formats_run "$n" "$r"
    kill "$BENCH_REGISTRY" 2>/dev/null || true
}

# bench_format_stream FORMAT: the stream of the orders in that format
bench_format_stream() {
    case $1 in
        json) echo bench_catchup ;;
        avro) echo bench_avro ;;
        protobuf) echo bench_proto ;;
    esac
}

# bench_start_registry: the test Schema Registry (Java), the orders'
# Protobuf schema registered as bench_proto-value, and the stream
# bench_proto on a server that reads it; sets BENCH_REGISTRY (its pid).
bench_start_registry() {
    local dir=$SSP_WORK/bench-registry url
    [ -n "${BENCH_REGISTRY:-}" ] && return 0
    mkdir -p "$dir"
    "$SSP_SRC/test/kafka/kafka_ctl" fetch >/dev/null
    "$SSP_SRC/test/kafka/kafka_ctl" run "$dir" SchemaRegistry "$dir" >"$dir/stdout.log" 2>&1 &
    BENCH_REGISTRY=$!
    for _ in $(seq 600); do
        [ -s "$dir/port" ] && break
        sleep 0.1
    done
    [ -s "$dir/port" ] || ssp_die "the schema registry did not start: $(cat "$dir/stdout.log")"
    url=http://127.0.0.1:$(cat "$dir/port")
    perl -MHTTP::Tiny -MJSON::PP -e '
        my $schema = q{syntax = "proto3"; import "google/protobuf/timestamp.proto";
            message Order { int64 order_id = 1; int64 customer_id = 2; string region = 3; double amount = 4;
                            google.protobuf.Timestamp ts = 5; }};
        my $r = HTTP::Tiny->new->post("$ARGV[0]/subjects/bench_proto-value/versions",
            { headers => { "Content-Type" => "application/vnd.schemaregistry.v1+json" },
              content => JSON::PP->new->encode({ schema => $schema, schemaType => "PROTOBUF" }) });
        die "registering: $r->{status} $r->{content}" unless $r->{success};' "$url"
    psql -X -q -v ON_ERROR_STOP=1 -v brokers="$SSP_BROKERS" -v url="$url" <<'SQL'
CREATE SERVER kafka_registry FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers :'brokers', "schema.registry.url" :'url');
CREATE FOREIGN TABLE bench_proto (order_id bigint, customer_id bigint, region text, amount numeric,
    ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka_registry OPTIONS (topic 'bench_proto', timestamp 'ts', format 'protobuf');
CREATE FOREIGN TABLE bench_proto_raw (v bytea) SERVER kafka OPTIONS (topic 'bench_proto', format 'bytea');
SQL
}

bench_formats_run() {
    local n=$1 r=$2 i f stream t t0 bytes
    local -A views=() scans=()
    echo "workload: $n orders in 64 partitions, the same rows in three topics: JSON (bench_catchup),"
    echo "  Avro (bench_avro, unframed, amount a decimal(12,2), ts a timestamp-millis) and Protobuf"
    echo "  (bench_proto, Confluent's framing through a schema registry, amount a double, ts a"
    echo "  google.protobuf.Timestamp); per format,"
    echo "  view: SELECT region, count(*), sum(amount), avg(amount) FROM <stream> GROUP BY region,"
    echo "        the time until ssp.wait returns;"
    echo "  scan: SELECT sum(amount) FROM <stream>, every message decoded by the backend"
    for f in "${BENCH_FORMATS[@]}"; do
        stream=$(bench_format_stream "$f")
        bytes=$(psql -X -At -c "SELECT round(avg(octet_length(v))) FROM (SELECT v FROM ${stream}_raw LIMIT 1000) s" 2>/dev/null || echo "?")
        echo "  $f: $bytes bytes a message on average"
    done
    echo
    for i in $(seq "$r"); do
        for f in "${BENCH_FORMATS[@]}"; do
            stream=$(bench_format_stream "$f")
            t=$(bench_view_seconds bench_fmt_view "SELECT region, count(*), sum(amount), avg(amount) FROM $stream GROUP BY region" "" "$n")
            views[$f]="${views[$f]:-} $t"
            t0=$(bench_now)
            psql -X -q -At -v ON_ERROR_STOP=1 -c "SELECT sum(amount) FROM $stream" >/dev/null
            t=$(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN {printf "%.3f", b - a}')
            scans[$f]="${scans[$f]:-} $t"
            echo "  run $i: $f view ${views[$f]##* } s, scan $t s"
        done
    done
    echo
    for f in "${BENCH_FORMATS[@]}"; do
        # shellcheck disable=SC2086
        bench_stats "view $f" "$n" ${views[$f]}
    done
    for f in "${BENCH_FORMATS[@]}"; do
        # shellcheck disable=SC2086
        bench_stats "scan $f" "$n" ${scans[$f]}
    done
    for f in avro protobuf; do
        # shellcheck disable=SC2086
        awk -v f="$f" -v vj="$(printf '%s\n' ${views[json]} | bench_median)" -v va="$(printf '%s\n' ${views[$f]} | bench_median)" \
            -v sj="$(printf '%s\n' ${scans[json]} | bench_median)" -v sa="$(printf '%s\n' ${scans[$f]} | bench_median)" \
            'BEGIN {printf "%s / json time (medians): view %.2f, scan %.2f (below 1: %s faster)\n", f, va / vj, sa / sj, f}'
    done
    bench_formats_profile
}

# bench_formats_profile: the share of the scanning backend's CPU (user
# time, perf's samples with call graphs) spent decoding messages, per
# format; skipped without perf.
bench_formats_profile() {
    local f stream out share scan pid rec
    command -v perf >/dev/null || { echo "(no perf: no decoding share)"; return 0; }
    echo
    echo "profile of one scan per format (perf record -g, user time of the backend):"
    for f in "${BENCH_FORMATS[@]}"; do
        stream=$(bench_format_stream "$f")
        out=$SSP_WORK/formats-$f.perf
        PGAPPNAME=bench_formats_scan psql -X -q -At -c "SELECT pg_sleep(1)" -c "SELECT sum(amount) FROM $stream" >/dev/null &
        scan=$!
        sleep 0.5
        pid=$(psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'bench_formats_scan'")
        perf record -q -e cpu-clock:u -g -p "$pid" -o "$out" >/dev/null 2>&1 &
        rec=$!
        wait "$scan" || true
        kill -INT "$rec" 2>/dev/null || true
        wait "$rec" 2>/dev/null || true
        # decode() is where ssp_decode_message's time goes (a tail call
        # leaves the latter out of the call chains)
        share=$(perf report -i "$out" --children --sort dso,symbol --stdio 2>/dev/null |
            awk '$3 == "ssp.so" && ($5 == "decode" || $5 == "ssp_decode_message") {
                     v = $1 + 0; if (v > max) max = v }
                 END {printf "%.1f%%", max}')
        echo "  $f: $share of the samples inside the decoding of a message (decode.c)"
    done
}

# bench_catchup: workload 1 of the performance issue.  1,000,000 JSON
# orders in 64 partitions; the time for a view of count, sum and avg by
# region (1,000 values) and minute to catch up from the earliest offset,
# against baseline A (kcat consumes the topic into COPY of a jsonb table,
# then the same aggregate) and baseline B (kcat consumes it to /dev/null),
# with the consumer settings ssp uses, in the same run.
bench_catchup() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    psql -X -q -v ON_ERROR_STOP=1 -c "CREATE TABLE IF NOT EXISTS baseline_raw (doc jsonb)"
    bench_report catchup bench_catchup_run "$n" "$r"
}

# bench_produce_orders N [STREAM]: N orders into topic bench_catchup
# through STREAM (default bench_catchup), spread evenly over its 64
# partitions (the producer's sticky partitioner would fill some past what
# the test broker keeps), once per bench run.
declare -A BENCH_ORDERS=()
bench_produce_orders() {
    local stream=${2:-bench_catchup}
    stream=${stream#public.}
    bench_start_postgres
    [ -n "${BENCH_ORDERS[$stream]:-}" ] && return 0
    ssp_log "producing $1 orders through $stream"
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO $stream
  SELECT g, g % 100000, 'region-' || lpad((g % 1000)::text, 4, '0'), round((g % 100000) * 0.01, 2),
         timestamptz '2024-01-01' + g * interval '10 ms', g % 64
  FROM generate_series(1, $1) g;
SQL
    BENCH_ORDERS[$stream]=$1
}

# bench_groups: workload 3: the catch-up of count, sum and avg over the
# orders by 1,000, 100,000 and 1,000,000 groups (order_id modulo).
bench_groups() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    bench_report groups bench_groups_run "$n" "$r"
}

bench_groups_run() {
    local n=$1 r=$2 i g t
    local -A times=()
    echo "workload: $n JSON orders in 64 partitions, already produced; views of"
    echo "  SELECT order_id % G AS g, count(*), sum(amount), avg(amount) FROM bench_catchup GROUP BY 1"
    echo "  for G = 1,000, 100,000 and 1,000,000; the time until ssp.wait returns"
    echo
    for i in $(seq "$r"); do
        for g in 1000 100000 1000000; do
            t=$(bench_view_seconds bench_groups_view "SELECT order_id % $g AS g, count(*), sum(amount), avg(amount) FROM bench_catchup GROUP BY 1" "")
            times[$g]="${times[$g]:-} $t"
            echo "  run $i: $g groups $t s"
        done
    done
    echo
    for g in 1000 100000 1000000; do
        # shellcheck disable=SC2086
        bench_stats "$g groups" "$n" ${times[$g]}
    done
    awk -v a="$(printf '%s\n' ${times[1000]} | bench_median)" -v b="$(printf '%s\n' ${times[100000]} | bench_median)" 'BEGIN {
        printf "speed with 100,000 groups / with 1,000: %.2f (target at least 0.5: %s)\n", a / b, (a / b >= 0.5 ? "met" : "MISSED") }'
}

# bench_aggregates: the catch-up of count, sum, avg and stddev by region
# (1,000 groups) kept on the fast path (plain SQL states) and through the
# aggregates' own transition and combine functions (ssp.aggregate_fast_path
# = off: the generic path any other aggregate takes), and of hll_add_agg and
# tdigest, in the same run.
bench_aggregates() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS hll" -c "CREATE EXTENSION IF NOT EXISTS tdigest"
    bench_report aggregates bench_aggregates_run "$n" "$r"
}

bench_aggregates_run() {
    local n=$1 r=$2 i f g f2 g2 k
    local q="SELECT region, count(*), sum(amount), avg(amount), stddev(amount) FROM bench_catchup GROUP BY region"
    local q2="SELECT order_id % 100000 AS g, count(*), sum(amount), avg(amount), stddev(amount) FROM bench_catchup GROUP BY 1"
    local qs="SELECT region, hll_add_agg(hll_hash_bigint(customer_id)), tdigest(amount::float8, 100) FROM bench_catchup GROUP BY region"
    local -a fast=() generic=() fast2=() generic2=() sketch=()
    echo "workload: $n JSON orders in 64 partitions, already produced; the time until ssp.wait returns for"
    echo "  1,000 groups:   $q"
    echo "  100,000 groups: $q2"
    echo "                  each on the fast path, and with ssp.aggregate_fast_path = off"
    echo "  sketches:       $qs"
    echo
    for i in $(seq "$r"); do
        f=$(bench_view_seconds bench_agg_fast "$q" "" "$n")
        g=$(PGOPTIONS="-c ssp.aggregate_fast_path=off" bench_view_seconds bench_agg_generic "$q" "" "$n")
        f2=$(bench_view_seconds bench_agg_fast2 "$q2" "" "$n")
        g2=$(PGOPTIONS="-c ssp.aggregate_fast_path=off" bench_view_seconds bench_agg_generic2 "$q2" "" "$n")
        k=$(bench_view_seconds bench_agg_sketch "$qs" "" "$n")
        echo "  run $i: 1,000 groups: fast $f s, generic $g s; 100,000 groups: fast $f2 s, generic $g2 s; hll and tdigest $k s"
        fast+=("$f")
        generic+=("$g")
        fast2+=("$f2")
        generic2+=("$g2")
        sketch+=("$k")
    done
    echo
    bench_stats "fast 1k" "$n" "${fast[@]}"
    bench_stats "generic 1k" "$n" "${generic[@]}"
    bench_stats "fast 100k" "$n" "${fast2[@]}"
    bench_stats "generic 100k" "$n" "${generic2[@]}"
    bench_stats "sketches" "$n" "${sketch[@]}"
    f=$(printf '%s\n' "${fast[@]}" | bench_median)
    g=$(printf '%s\n' "${generic[@]}" | bench_median)
    f2=$(printf '%s\n' "${fast2[@]}" | bench_median)
    g2=$(printf '%s\n' "${generic2[@]}" | bench_median)
    k=$(printf '%s\n' "${sketch[@]}" | bench_median)
    echo "generic path / fast path time: $(awk -v a="$g" -v b="$f" 'BEGIN {printf "%.2f", a / b}') with 1,000 groups, $(awk -v a="$g2" -v b="$f2" 'BEGIN {printf "%.2f", a / b}') with 100,000"
    echo "RESULT aggregates fast_s=$f generic_s=$g fast100k_s=$f2 generic100k_s=$g2 sketches_s=$k"
}

# bench_output: the catch-up of count and sum by 1,000 and by 100,000
# groups, without and with ssp.output_topic (every change published before
# the next batch), in the same run; each published view's topic is new.
bench_output() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    bench_report output bench_output_run "$n" "$r"
}

bench_output_run() {
    local n=$1 r=$2 i g t
    local -A times=()
    echo "workload: $n JSON orders in 64 partitions, already produced; views of"
    echo "  SELECT <key> AS g, count(*), sum(amount) FROM bench_catchup GROUP BY 1"
    echo "  by region (1,000 groups) and by order_id % 100000, without and with ssp.output_topic;"
    echo "  the time until ssp.wait returns (the last batch's changes may still be publishing)"
    echo
    for i in $(seq "$r"); do
        for g in 1000 100000; do
            local key="region"
            [ "$g" = 100000 ] && key="order_id % 100000"
            t=$(bench_view_seconds bench_out_none "SELECT $key AS g, count(*), sum(amount) FROM bench_catchup GROUP BY 1" "" "$n")
            times[none$g]="${times[none$g]:-} $t"
            t=$(bench_view_seconds bench_out_topic "SELECT $key AS g, count(*), sum(amount) FROM bench_catchup GROUP BY 1" ", ssp.output_topic = 'bench_changes_${g}_$i'" "$n")
            times[topic$g]="${times[topic$g]:-} $t"
            echo "  run $i: $g groups: without ${times[none$g]##* } s, with an output topic ${times[topic$g]##* } s"
        done
    done
    echo
    for g in 1000 100000; do
        # shellcheck disable=SC2086
        bench_stats "none $g" "$n" ${times[none$g]}
        # shellcheck disable=SC2086
        bench_stats "topic $g" "$n" ${times[topic$g]}
    done
    # shellcheck disable=SC2086
    awk -v a="$(printf '%s\n' ${times[none1000]} | bench_median)" -v b="$(printf '%s\n' ${times[topic1000]} | bench_median)" \
        -v c="$(printf '%s\n' ${times[none100000]} | bench_median)" -v d="$(printf '%s\n' ${times[topic100000]} | bench_median)" \
        'BEGIN { printf "with / without an output topic: %.2f with 1,000 groups, %.2f with 100,000\n", b / a, d / c
                 printf "RESULT output none1k_s=%s topic1k_s=%s none100k_s=%s topic100k_s=%s\n", a, b, c, d }'
}

# bench_views: workload 4: k views of the same aggregate created at once on
# the same stream, for k = 1 to 50: the time until all have caught up and
# the peak resident memory of the ssp worker processes meanwhile, with one
# reader per stream (ssp.shared_readers = on, the default) and, for k = 1,
# 5 and 20, with a worker and a consumer per view (off: 50 views would need
# more than max_worker_processes), and made behind a view whose reader is
# at the end of the topic already (behind), and with a WHERE of their own
# that every order passes, so that no two reduce a batch to the same groups
# (apart: each view's own aggregation, not shared with the others).
BENCH_VIEWS_ON=(1 2 5 10 20 50)
BENCH_VIEWS_OFF=(1 5 20)
BENCH_VIEWS_BEHIND=(1 5 20)
BENCH_VIEWS_APART=(1 5 20)
bench_views() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    bench_report views bench_views_run "$n" "$r"
}

# bench_views_ks MODE: the numbers of views measured in a mode.
bench_views_ks() {
    case $1 in
        on) echo "${BENCH_VIEWS_ON[*]}" ;;
        off) echo "${BENCH_VIEWS_OFF[*]}" ;;
        behind) echo "${BENCH_VIEWS_BEHIND[*]}" ;;
        apart) echo "${BENCH_VIEWS_APART[*]}" ;;
    esac
}

# bench_views_mode on|off|behind|apart|DEFAULT: ssp.shared_readers through
# ALTER SYSTEM (behind and apart: on), once a new session has it (a
# session and the workers started from now on take the postmaster's
# settings).
bench_views_mode() {
    local set=$1 want=$1 i
    case $1 in behind | apart) set=on ;; esac
    [ "$set" = DEFAULT ] || [ "$set" = on ] && want=on
    psql -X -q -v ON_ERROR_STOP=1 -c "ALTER SYSTEM SET ssp.shared_readers = $set" -c "SELECT pg_reload_conf()" >/dev/null
    for i in $(seq 100); do
        [ "$(psql -X -At -c 'SHOW ssp.shared_readers')" = "$want" ] && return 0
        sleep 0.1
    done
    ssp_die "ssp.shared_readers is not $want 10 s after pg_reload_conf()"
}

# bench_views_workers: the pids of the ssp worker processes, one a line.
bench_views_workers() {
    psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ssp worker'"
}

# bench_views_sample OUT STOP PID: every 0.2 s, a line into OUT: the number
# of ssp worker processes and the sums of their VmRSS and RssAnon in kB;
# until the file STOP exists (one more line then) or process PID is gone.
bench_views_sample() {
    local out=$1 stop=$2 parent=$3 last='' pids p
    while kill -0 "$parent" 2>/dev/null; do
        [ -e "$stop" ] && last=1
        pids=$(bench_views_workers 2>/dev/null) || pids=
        for p in $pids; do
            cat "/proc/$p/status" 2>/dev/null || true
        done | awk '/^VmRSS:/ {n++; rss += $2} /^RssAnon:/ {anon += $2}
                    END {printf "%d %d %d\n", n, rss, anon}' >>"$out"
        [ -z "$last" ] || return 0
        sleep 0.2
    done
}

# bench_views_once K N [behind|apart]: K views created in one transaction, each
# to take N orders; sets BENCH_VIEWS_ONCE (not a command substitution: set
# -e holds, and the sampler is this shell's child) to "SECONDS PEAK_RSS_MB
# PEAK_ANON_MB PEAK_WORKERS END_WORKERS ATTACHED READERS ONE_READER": the
# time from the commit until ssp.wait has returned for all, the peaks of
# the workers' summed memory and of their number while they caught up,
# then the workers left, the views attached (ssp.views), the readers
# (ssp.readers), and the seconds until one reader was left (polled up to
# 30 s; -1: not within them, or none).  behind: first a view of the same aggregate,
# bench_live, created and caught up, so that the K views start behind a
# reader already at the end of the topic.  apart: each view with a WHERE
# of its own that every order passes.  Then drops the views and waits,
# up to 30 s, until their workers are gone.
bench_views_once() {
    local k=$1 n=$2 mode=${3:-} v out=$SSP_WORK/views-sample stop=$SSP_WORK/views-stop sampler res t peak after i
    local names one=-1 t1
    names=$(seq -f 'bench_v%g' -s ', ' 1 "$k")
    if [ "$mode" = behind ]; then
        names+=", bench_live"
        psql -X -q -At -v ON_ERROR_STOP=1 \
            -c "CREATE VIEW bench_live WITH (ssp.continuous) AS SELECT region, count(*), sum(amount), avg(amount) FROM bench_catchup GROUP BY region" \
            -c "SELECT ssp.wait('bench_live', '900 s')" | grep -qx t || ssp_die "bench_live did not catch up"
    fi
    rm -f "$out" "$stop"
    bench_views_sample "$out" "$stop" "$BASHPID" &
    sampler=$!
    res=$({
        echo "BEGIN;"
        for v in $(seq "$k"); do
            echo "CREATE VIEW bench_v$v WITH (ssp.continuous) AS SELECT region, count(*), sum(amount), avg(amount) FROM bench_catchup$([ "$mode" != apart ] || echo " WHERE order_id <> -$v") GROUP BY region;"
        done
        echo "COMMIT;"
        echo "SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset"
        for v in $(seq "$k"); do
            echo "SELECT ssp.wait('bench_v$v', '900 s');"
        done
        echo "SELECT round((extract(epoch FROM clock_timestamp()) - :t0)::numeric, 3);"
    } | psql -X -q -At -v ON_ERROR_STOP=1) || res=
    touch "$stop"
    wait "$sampler" || true
    [ -n "$res" ] || ssp_die "$k views: creating them or waiting for them failed"
    [ "$(grep -c '^t$' <<<"$res")" = "$k" ] || ssp_die "$k views: not all caught up within 900 s"
    t=$(tail -n 1 <<<"$res")
    peak=$(awk '$1 > w {w = $1} $2 > rss {rss = $2} $3 > anon {anon = $3} {last = $1}
                END {printf "%.1f %.1f %d %d", rss / 1024, anon / 1024, w, last}' "$out")
    after=$(psql -X -At -F ' ' -v ON_ERROR_STOP=1 -c "SELECT count(*) FILTER (WHERE processed = $n), count(*) FILTER (WHERE attached),
            (SELECT count(*) FROM ssp.readers) FROM ssp.views WHERE view::text ~ '^bench_v[0-9]+\$'")
    [ "${after%% *}" = "$k" ] ||
        ssp_die "$k views: only ${after%% *} processed $n messages: $(psql -X -At -c "SELECT string_agg(view || ' ' || processed, ', ') FROM ssp.views")"
    t1=$(bench_now)
    for i in $(seq 300); do
        [ "${after##* }" != 0 ] || break
        if [ "$(psql -X -At -c 'SELECT count(*) FROM ssp.readers')" = 1 ]; then
            one=$(awk -v a="$t1" -v b="$(bench_now)" 'BEGIN {printf "%.1f", b - a}')
            break
        fi
        sleep 0.1
    done
    psql -X -q -v ON_ERROR_STOP=1 -c "DROP VIEW $names" || ssp_die "$k views: DROP VIEW failed"
    for i in $(seq 300); do
        [ -n "$(bench_views_workers)" ] || break
        sleep 0.1
    done
    [ -z "$(bench_views_workers)" ] ||
        echo "  (ssp worker processes still there 30 s after the views were dropped: $(bench_views_workers | tr '\n' ' '))" >&2
    BENCH_VIEWS_ONCE="$t $peak ${after#* } $one"
}

# bench_views_mmm VALUE...: "median (min - max)".
bench_views_mmm() {
    printf '%s (%s - %s)' "$(printf '%s\n' "$@" | bench_median)" \
        "$(printf '%s\n' "$@" | sort -n | head -n 1)" "$(printf '%s\n' "$@" | sort -n | tail -n 1)"
}

bench_views_run() {
    local n=$1 r=$2 i k mode t rss anon wpeak wend attached readers one label
    local -A times=() mems=() anons=() peaks=() ones=() med_t=() med_m=()
    local -a ks
    echo "workload: $n JSON orders in 64 partitions, already produced; k views of"
    echo "  SELECT region, count(*), sum(amount), avg(amount) FROM bench_catchup GROUP BY region"
    echo "  created in one transaction; the time from its commit until ssp.wait has returned for all k,"
    echo "  and the peak of the summed resident memory (VmRSS; \"private\": RssAnon) of the 'ssp worker'"
    echo "  processes (pg_stat_activity), sampled every 0.2 s until then (VmRSS counts the shared buffers a"
    echo "  process has touched, so the sum counts them once a process); the views dropped after each"
    echo "  measurement, and the next one once their workers are gone"
    echo "on:  ssp.shared_readers = on (the default): one reader per stream; k = ${BENCH_VIEWS_ON[*]}"
    echo "off: ssp.shared_readers = off: a worker and a Kafka consumer per view; k = ${BENCH_VIEWS_OFF[*]}"
    echo "     (50 views would need more than max_worker_processes = 32)"
    echo "behind: shared readers on, the k views created once a view of the same aggregate (bench_live)"
    echo "  has caught up, its reader at the end of the topic; k = ${BENCH_VIEWS_BEHIND[*]}"
    echo "apart: shared readers on, view v with WHERE order_id <> -v, which every order passes: no two views"
    echo "  reduce a batch to the same groups, each aggregates it on its own; k = ${BENCH_VIEWS_APART[*]}"
    echo "after the catch-up: the worker processes left, the views with attached = true (ssp.views), the"
    echo "  rows of ssp.readers, and the seconds until one reader was left (-1: not within 30 s)"
    echo
    for i in $(seq "$r"); do
        for mode in on off behind apart; do
            bench_views_mode "$mode"
            read -r -a ks <<<"$(bench_views_ks "$mode")"
            for k in "${ks[@]}"; do
                bench_views_once "$k" "$n" "$mode"
                read -r t rss anon wpeak wend attached readers one <<<"$BENCH_VIEWS_ONCE"
                times[$mode$k]="${times[$mode$k]:-} $t"
                mems[$mode$k]="${mems[$mode$k]:-} $rss"
                anons[$mode$k]="${anons[$mode$k]:-} $anon"
                peaks[$mode$k]="${peaks[$mode$k]:-} $wpeak"
                ones[$mode$k]="${ones[$mode$k]:-} $one"
                printf '  run %s: %-6s %2s views %8s s (%d view-messages/s), peak memory %s MB (private %s MB),' \
                    "$i" "$mode" "$k" "$t" "$(awk -v n="$n" -v k="$k" -v t="$t" 'BEGIN {printf "%d", n * k / t}')" "$rss" "$anon"
                echo " up to $wpeak workers; after: $wend workers, $attached attached, $readers readers, one reader after $one s"
            done
        done
    done
    bench_views_mode DEFAULT
    echo
    echo "median (min - max) of $r runs:"
    printf '%-6s %5s  %-26s %15s  %-26s %-24s %-18s %s\n' mode views "time s" "view-messages/s" "peak memory MB" "private MB" "workers at peak" "one reader after s"
    for mode in on off behind apart; do
        read -r -a ks <<<"$(bench_views_ks "$mode")"
        for k in "${ks[@]}"; do
            # shellcheck disable=SC2086
            {
                med_t[$mode$k]=$(printf '%s\n' ${times[$mode$k]} | bench_median)
                med_m[$mode$k]=$(printf '%s\n' ${mems[$mode$k]} | bench_median)
                printf '%-6s %5s  %-26s %15d  %-26s %-24s %-18s %s\n' "$mode" "$k" "$(bench_views_mmm ${times[$mode$k]})" \
                    "$(awk -v n="$n" -v k="$k" -v t="${med_t[$mode$k]}" 'BEGIN {printf "%d", n * k / t}')" \
                    "$(bench_views_mmm ${mems[$mode$k]})" "$(bench_views_mmm ${anons[$mode$k]})" \
                    "$(bench_views_mmm ${peaks[$mode$k]})" "$(bench_views_mmm ${ones[$mode$k]})"
            }
        done
    done
    echo
    awk -v t1="${med_t[on1]}" -v t20="${med_t[on20]}" -v m1="${med_m[on1]}" -v m20="${med_m[on20]}" 'BEGIN {
        printf "shared readers (on):    20 views / 1 view: time %.2f (target at most 3: %s), memory %.2f (target at most 3: %s)\n",
            t20 / t1, (t20 / t1 <= 3 ? "met" : "MISSED"), m20 / m1, (m20 / m1 <= 3 ? "met" : "MISSED") }'
    awk -v t1="${med_t[off1]}" -v t20="${med_t[off20]}" -v m1="${med_m[off1]}" -v m20="${med_m[off20]}" 'BEGIN {
        printf "one consumer per view:  20 views / 1 view: time %.2f, memory %.2f (for comparison)\n", t20 / t1, m20 / m1 }'
    awk -v a="${med_t[on20]}" -v b="${med_t[off20]}" -v c="${med_m[on20]}" -v d="${med_m[off20]}" 'BEGIN {
        printf "20 views, on / off:     time %.2f, memory %.2f\n", a / b, c / d }'
    awk -v a="${med_t[behind20]}" -v b="${med_t[on20]}" -v c="${med_t[behind1]}" 'BEGIN {
        printf "20 views behind a reader / on a stream without one: time %.2f; 20 views behind / 1 view behind: %.2f\n", a / b, a / c }'
    awk -v t1="${med_t[apart1]}" -v t20="${med_t[apart20]}" -v m1="${med_m[apart1]}" -v m20="${med_m[apart20]}" 'BEGIN {
        printf "views apart (no groups shared): 20 views / 1 view: time %.2f, memory %.2f\n", t20 / t1, m20 / m1 }'
    label="RESULT views"
    for mode in on off behind apart; do
        read -r -a ks <<<"$(bench_views_ks "$mode")"
        for k in "${ks[@]}"; do
            label+=" ${mode}${k}_s=${med_t[$mode$k]} ${mode}${k}_mb=${med_m[$mode$k]}"
        done
        for k in "${ks[@]}"; do
            echo "$k ${med_t[$mode$k]} ${med_m[$mode$k]}"
        done >"$SSP_WORK/views-$mode.dat"
    done
    echo "$label"
    bench_views_plot "$n" "$r"
}

# bench_views_plot N RUNS: results/views.png from views-on.dat,
# views-off.dat, views-behind.dat and views-apart.dat (views, median seconds, median MB), if
# gnuplot is there.
bench_views_plot() {
    local png=$BENCH_RESULTS/views${BENCH_SUFFIX:-}.png
    command -v gnuplot >/dev/null || { echo "(no gnuplot: no plot)"; return 0; }
    gnuplot <<GP
set terminal pngcairo size 1000,460 font "sans,10" noenhanced
set output "$png"
set multiplot layout 1,2 title "k views of one stream catching up on $1 orders (median of $2 runs)"
set logscale x
set xrange [0.8:60]
set xtics ("1" 1, "2" 2, "5" 5, "10" 10, "20" 20, "50" 50)
set xlabel "views"
set yrange [0:*]
set grid
set key below
set title "catch-up time"
set ylabel "seconds until ssp.wait returns for all"
plot "$SSP_WORK/views-on.dat" using 1:2 with linespoints linewidth 2 pointtype 7 linecolor rgb "#3b6ea5" \
         title "one reader per stream (shared_readers on)", \
     "$SSP_WORK/views-off.dat" using 1:2 with points pointtype 9 pointsize 1.6 linecolor rgb "#c0504d" \
         title "one consumer per view (off)", \
     "$SSP_WORK/views-behind.dat" using 1:2 with linespoints dashtype 2 pointtype 5 linecolor rgb "#6a9a48" \
         title "made behind a reader at the end of the topic", \
     "$SSP_WORK/views-apart.dat" using 1:2 with linespoints dashtype 3 pointtype 13 linecolor rgb "#8064a2" \
         title "apart: no two views group alike"
set title "peak memory of the ssp worker processes"
set ylabel "MB (sum of VmRSS)"
plot "$SSP_WORK/views-on.dat" using 1:3 with linespoints linewidth 2 pointtype 7 linecolor rgb "#3b6ea5" \
         title "one reader per stream (shared_readers on)", \
     "$SSP_WORK/views-off.dat" using 1:3 with points pointtype 9 pointsize 1.6 linecolor rgb "#c0504d" \
         title "one consumer per view (off)", \
     "$SSP_WORK/views-behind.dat" using 1:3 with linespoints dashtype 2 pointtype 5 linecolor rgb "#6a9a48" \
         title "made behind a reader at the end of the topic", \
     "$SSP_WORK/views-apart.dat" using 1:3 with linespoints dashtype 3 pointtype 13 linecolor rgb "#8064a2" \
         title "apart: no two views group alike"
unset multiplot
GP
    echo "plot: $png"
}

bench_catchup_run() {
    local n=$1 r=$2 i t0 c0 s s2 a b bytes got cs cs2 cb
    local -a ssp=() ssp2=() base_a=() base_b=() cpu_s=() cpu_s2=() cpu_b=()
    local agg="count(*) AS n, sum(amount) AS total, avg(amount) AS mean"
    local kcat=(kcat -C -b "$SSP_BROKERS" -t bench_catchup -o beginning -e -q -f '%s\n'
        -X queued.min.messages=10000000 -X fetch.wait.max.ms=50)
    bytes=$("${kcat[@]}" -c 1000 | awk '{s += length($0)} END {printf "%d", s / NR}')
    echo "workload: $n JSON orders (about $bytes bytes: order_id, customer_id, region of 1,000, amount, ts) in 64 partitions, already produced"
    echo "ssp:        CREATE VIEW ... WITH (ssp.continuous) AS SELECT region, date_trunc('minute', ts) AS minute, $agg"
    echo "            FROM bench_catchup GROUP BY region, minute; the time until ssp.wait returns"
    echo "ssp x2:     the same view WITH (ssp.continuous, ssp.parallelism = 2): two workers, 32 partitions each"
    echo "baseline A: ${kcat[*]} | psql -c 'COPY baseline_raw (doc) FROM STDIN',"
    echo "            then CREATE TABLE AS the same aggregate over the jsonb"
    echo "baseline B: ${kcat[*]} > /dev/null"
    echo "cpu:        the CPU-seconds the whole machine used in the time measured (ssp's processes, the broker,"
    echo "            kcat), from /proc/stat; over $(nproc) cores, a time that needs C CPU-seconds cannot be below C / $(nproc)"
    echo
    for i in $(seq "$r"); do
        s=$(BENCH_CPU_FILE=$SSP_WORK/bench-cpu bench_view_seconds bench_catchup_view "SELECT region, date_trunc('minute', ts) AS minute, $agg FROM bench_catchup GROUP BY region, minute" "" "$n")
        cs=$(cat "$SSP_WORK/bench-cpu")
        s2=$(BENCH_CPU_FILE=$SSP_WORK/bench-cpu bench_view_seconds bench_catchup_view2 "SELECT region, date_trunc('minute', ts) AS minute, $agg FROM bench_catchup GROUP BY region, minute" ", ssp.parallelism = 2" "$n")
        cs2=$(cat "$SSP_WORK/bench-cpu")
        psql -X -q -c "SET client_min_messages = warning" -c "TRUNCATE baseline_raw" -c "DROP TABLE IF EXISTS baseline_result"
        t0=$(bench_now)
        "${kcat[@]}" | psql -X -q -v ON_ERROR_STOP=1 -c "COPY baseline_raw (doc) FROM STDIN"
        psql -X -q -v ON_ERROR_STOP=1 -c "CREATE TABLE baseline_result AS SELECT doc->>'region' AS region,
            date_trunc('minute', (doc->>'ts')::timestamptz) AS minute, count(*) AS n,
            sum((doc->>'amount')::numeric) AS total, avg((doc->>'amount')::numeric) AS mean
            FROM baseline_raw GROUP BY 1, 2"
        a=$(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN {printf "%.3f", b - a}')
        got=$(psql -X -q -At -c "SELECT count(*) FROM baseline_raw")
        [ "$got" = "$n" ] || ssp_die "baseline A read $got messages, not $n"
        t0=$(bench_now)
        c0=$(bench_cpu)
        "${kcat[@]}" >/dev/null
        b=$(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN {printf "%.3f", b - a}')
        cb=$(bench_cpu_since "$c0")
        echo "  run $i: ssp $s s, ssp x2 $s2 s, baseline A $a s, baseline B $b s (cpu: ssp $cs s, ssp x2 $cs2 s, baseline B $cb s)"
        cpu_s+=("$cs")
        cpu_s2+=("$cs2")
        cpu_b+=("$cb")
        ssp+=("$s")
        ssp2+=("$s2")
        base_a+=("$a")
        base_b+=("$b")
    done
    echo
    bench_stats ssp "$n" "${ssp[@]}"
    bench_stats "ssp x2" "$n" "${ssp2[@]}"
    bench_stats "baseline A" "$n" "${base_a[@]}"
    bench_stats "baseline B" "$n" "${base_b[@]}"
    s=$(printf '%s\n' "${ssp[@]}" | bench_median)
    s2=$(printf '%s\n' "${ssp2[@]}" | bench_median)
    a=$(printf '%s\n' "${base_a[@]}" | bench_median)
    b=$(printf '%s\n' "${base_b[@]}" | bench_median)
    cs=$(printf '%s\n' "${cpu_s[@]}" | bench_median)
    cs2=$(printf '%s\n' "${cpu_s2[@]}" | bench_median)
    cb=$(printf '%s\n' "${cpu_b[@]}" | bench_median)
    echo
    awk -v s="$cs" -v s2="$cs2" -v b="$cb" -v c="$(nproc)" 'BEGIN {
        printf "cpu, medians: ssp %.2f s, ssp x2 %.2f s, baseline B %.2f s: ssp needs %.1f and %.1f times the CPU of B,\n", s, s2, b, s / b, s2 / b
        printf "so over %d cores ssp cannot go below %.2f s, nor ssp x2 below %.2f s\n", c, s / c, s2 / c }'
    awk -v s="$s" -v s2="$s2" -v a="$a" -v b="$b" 'BEGIN {
        printf "ssp speed / baseline A: %.2f (target at least 1.5: %s)\n", a / s, (a / s >= 1.5 ? "met" : "MISSED")
        printf "ssp speed / baseline B: %.2f (target at least 0.5: %s)\n", b / s, (b / s >= 0.5 ? "met" : "MISSED")
        printf "ssp x2 speed / baseline A: %.2f (target at least 1.5: %s)\n", a / s2, (a / s2 >= 1.5 ? "met" : "MISSED")
        printf "ssp x2 speed / baseline B: %.2f (target at least 0.7: %s)\n", b / s2, (b / s2 >= 0.7 ? "met" : "MISSED") }'
    echo "RESULT catchup ssp_s=$s ssp_x2_s=$s2 baseline_a_s=$a baseline_b_s=$b"
    bench_bars catchup "catch-up, $n orders, 64 partitions (median of $r)" \
        "ssp $(awk -v n="$n" -v t="$s" 'BEGIN {printf "%d", n / t}')" \
        "ssp x2 $(awk -v n="$n" -v t="$s2" 'BEGIN {printf "%d", n / t}')" \
        "baseline A $(awk -v n="$n" -v t="$a" 'BEGIN {printf "%d", n / t}')" \
        "baseline B $(awk -v n="$n" -v t="$b" 'BEGIN {printf "%d", n / t}')"
}

# bench_shard_servers: two more Postgres servers with ssp, on the ports
# after the first's, each with the stream bench_catchup; sets BENCH_SHARD_PORTS
# (the three servers' ports).
bench_shard_servers() {
    local k dir port base=${SSP_BENCH_PORT:-54331}
    BENCH_SHARD_PORTS=("$base")
    for k in 1 2; do
        dir=$SSP_WORK/bench-pg$k port=$((base + k))
        initdb -D "$dir" -A trust >/dev/null
        cat >>"$dir/postgresql.conf" <<CONF
shared_preload_libraries = 'ssp'
max_worker_processes = 32
port = $port
unix_socket_directories = '$SSP_WORK'
listen_addresses = ''
CONF
        pg_ctl -D "$dir" -l "$SSP_WORK/bench-pg$k.log" -w start >/dev/null
        BENCH_SHARD_PORTS+=("$port")
        psql -X -q -v ON_ERROR_STOP=1 -p "$port" -v brokers="$SSP_BROKERS" <<'SQL'
CREATE EXTENSION ssp;
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE bench_catchup (order_id bigint, customer_id bigint, region text, amount numeric,
    ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_catchup', timestamp 'ts');
SQL
    done
    trap 'for d in "$BENCH_PG" "$SSP_WORK/bench-pg1" "$SSP_WORK/bench-pg2"; do pg_ctl -D "$d" -m immediate stop >/dev/null 2>&1; done; ssp_cleanup' EXIT
}

# bench_shards: the catch-up of count, sum and avg by region over the
# orders, the view read by 1, 2 and 3 servers on this machine (ssp.shard =
# 'k/N': the partitions p % N = k each), the time from the first CREATE
# VIEW until every server's ssp.wait has returned; then the time of a query
# of the view over the three shards (ssp.shards, from a database of the
# first server through postgres_fdw) against the same query of the view on
# one server, and that they give the same rows.
bench_shards() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5}
    bench_produce_orders "$n"
    bench_shard_servers
    bench_report shards bench_shards_run "$n" "$r"
}

BENCH_SHARD_QUERY="SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean FROM bench_catchup GROUP BY region"

# bench_shards_catchup N: seconds for the view to catch up on N servers
# (left in place, as bench_shard_view on each).
bench_shards_catchup() {
    local n=$1 k t0 pids=()
    for k in $(seq 0 $((n - 1))); do
        psql -X -q -p "${BENCH_SHARD_PORTS[$k]}" -c "DROP VIEW IF EXISTS bench_shard_view"
    done
    t0=$(bench_now)
    for k in $(seq 0 $((n - 1))); do
        psql -X -q -v ON_ERROR_STOP=1 -p "${BENCH_SHARD_PORTS[$k]}" \
            -c "CREATE VIEW bench_shard_view WITH (ssp.continuous, ssp.shard = '$k/$n') AS $BENCH_SHARD_QUERY"
    done
    for k in $(seq 0 $((n - 1))); do
        psql -X -q -At -v ON_ERROR_STOP=1 -p "${BENCH_SHARD_PORTS[$k]}" \
            -c "SELECT ssp.wait('bench_shard_view', '600 s')" >"$SSP_WORK/bench-shard-wait$k" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for k in $(seq 0 $((n - 1))); do
        [ "$(cat "$SSP_WORK/bench-shard-wait$k")" = t ] || ssp_die "shard $k/$n did not catch up"
    done
    awk -v a="$t0" -v b="$(bench_now)" 'BEGIN {printf "%.3f", b - a}'
}

# bench_shards_query DB: milliseconds per read of every row and column of
# bench_shard_view in database DB of the first server, over 50 reads.
bench_shards_query() {
    psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  FOR i IN 1 .. 50 LOOP
    -- every column of every row, as a client reads them
    PERFORM pg_catalog.sum(pg_catalog.length(v::text)) FROM bench_shard_view v;
  END LOOP;
  RAISE NOTICE '%', round((extract(epoch FROM clock_timestamp() - t0) * 1000 / 50)::numeric, 2);
END $$;
SQL
}

bench_shards_run() {
    local n=$1 r=$2 i k s local_ms over_ms
    local -A times=()
    local -a q_local=() q_over=()
    echo "workload: $n JSON orders in 64 partitions, already produced; on N servers (Postgres clusters on this"
    echo "  machine, sharing its $(nproc) cores and the broker), CREATE VIEW bench_shard_view WITH (ssp.continuous,"
    echo "  ssp.shard = 'k/N') AS $BENCH_SHARD_QUERY"
    echo "  (1,000 groups); the time from the first CREATE VIEW until ssp.wait has returned on every server"
    echo "query: every row and column of bench_shard_view (sum(length(v::text))), 50 times, on the first server (the view read by one server: its"
    echo "  own table) and in a database of it over the three shards (ssp.shards, postgres_fdw, async append)"
    echo
    for i in $(seq "$r"); do
        for k in 1 2 3; do
            s=$(bench_shards_catchup "$k")
            times[$k]="${times[$k]:-} $s"
            echo "  run $i: $k server(s) $s s"
            if [ "$k" = 1 ]; then
                local_ms=$(bench_shards_query postgres 2>&1 | sed -n 's/.*NOTICE:  //p')
                psql -X -q -c "DROP TABLE IF EXISTS bench_shard_one; CREATE TABLE bench_shard_one AS SELECT * FROM bench_shard_view"
            fi
        done
        if [ "$i" = 1 ]; then
            psql -X -q -c "DROP DATABASE IF EXISTS bench_coord"
            psql -X -q -c "CREATE DATABASE bench_coord"
            psql -X -q -v ON_ERROR_STOP=1 -d bench_coord -v brokers="$SSP_BROKERS" <<SQL
CREATE EXTENSION ssp;
CREATE EXTENSION postgres_fdw;
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE bench_catchup (order_id bigint, customer_id bigint, region text, amount numeric,
    ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic 'bench_catchup', timestamp 'ts');
$(for k in 0 1 2; do echo "CREATE SERVER shard$k FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$SSP_WORK', port '${BENCH_SHARD_PORTS[$k]}', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$k;"; done)
SQL
        fi
        psql -X -q -v ON_ERROR_STOP=1 -d bench_coord -c "DROP VIEW IF EXISTS bench_shard_view" \
            -c "CREATE VIEW bench_shard_view WITH (ssp.continuous, ssp.shards = 'shard0, shard1, shard2') AS $BENCH_SHARD_QUERY"
        over_ms=$(bench_shards_query bench_coord 2>&1 | sed -n 's/.*NOTICE:  //p')
        [ "$(psql -X -q -At -d bench_coord -c "SELECT * FROM bench_shard_view ORDER BY region")" = \
          "$(psql -X -q -At -c "SELECT * FROM bench_shard_one ORDER BY region")" ] ||
            ssp_die "the view over the shards differs from the view of one server"
        echo "  run $i: query of one server's view $local_ms ms, of the view over three shards $over_ms ms"
        q_local+=("$local_ms")
        q_over+=("$over_ms")
    done
    echo
    for k in 1 2 3; do
        # shellcheck disable=SC2086
        bench_stats "$k server(s)" "$n" ${times[$k]}
    done
    local t1 t2 t3 ql qo
    t1=$(printf '%s\n' ${times[1]} | bench_median)
    t2=$(printf '%s\n' ${times[2]} | bench_median)
    t3=$(printf '%s\n' ${times[3]} | bench_median)
    ql=$(printf '%s\n' "${q_local[@]}" | bench_median)
    qo=$(printf '%s\n' "${q_over[@]}" | bench_median)
    echo
    awk -v a="$t1" -v b="$t2" -v c="$t3" -v ql="$ql" -v qo="$qo" 'BEGIN {
        printf "catch-up speed-up with 2 servers: %.2f, with 3: %.2f (the servers share this machine'"'"'s cores)\n", a / b, a / c
        printf "query over three shards / query of one server'"'"'s view: %.1f times (%.2f ms against %.2f ms)\n", qo / ql, qo, ql }'
    echo "RESULT shards one_s=$t1 two_s=$t2 three_s=$t3 query_one_ms=$ql query_shards_ms=$qo"
    bench_bars shards "catch-up, $n orders, 64 partitions, servers on one machine (median of $r)" \
        "1 server $(awk -v n="$n" -v t="$t1" 'BEGIN {printf "%d", n / t}')" \
        "2 servers $(awk -v n="$n" -v t="$t2" 'BEGIN {printf "%d", n / t}')" \
        "3 servers $(awk -v n="$n" -v t="$t3" 'BEGIN {printf "%d", n / t}')"
}

# bench_bars NAME TITLE "LABEL VALUE"...: a bar chart of messages/s into
# results/NAME.png, if gnuplot is there.
bench_bars() {
    local name=$1 title=$2 data bar
    shift 2
    command -v gnuplot >/dev/null || { echo "(no gnuplot: no plot)"; return 0; }
    data=$(mktemp)
    for bar in "$@"; do
        printf '"%s" %s\n' "${bar% *}" "${bar##* }" >>"$data"
    done
    gnuplot <<GP
set terminal pngcairo size 640,400 font "sans,10"
set output "$BENCH_RESULTS/$name${BENCH_SUFFIX:-}.png"
set title "$title"
set ylabel "messages/s"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics
unset key
plot "$data" using 2:xtic(1) linecolor rgb "#3b6ea5", '' using 0:2:2 with labels offset 0,0.8
GP
    rm -f "$data"
    echo "plot: $BENCH_RESULTS/$name${BENCH_SUFFIX:-}.png"
}

# bench_freshness: workload 2: a producer sends 20,000 events a second
# for SSP_BENCH_SECONDS (default 60) while an append-only view keeps each
# event with the time its batch's transaction applied it; the latency from
# produce to apply, p50, p99 and max, at ssp.commit_interval's default, at
# 50 ms, and at 50 ms with 19 other views of the stream created with it
# (bench_fresh_views), which share its reader: measured once all 20 are
# attached (ssp.views), against the target p99 under 150 ms.
bench_freshness() {
    bench_start_postgres
    bench_report freshness bench_freshness_run "${SSP_BENCH_SECONDS:-60}"
}

# bench_fresh_view KIND M: the definition of a view of the stream
# bench_fresh of kind KIND (0 to 4) with modulus M (a number, or a name for
# the report): an aggregate by key, by second, a filtered aggregate without
# groups, an append-only filter, an aggregate by key and second.
bench_fresh_view() {
    case $1 in
        0) echo "SELECT seq % (100 * $2) AS k, count(*), max(produced_at) FROM bench_fresh GROUP BY k" ;;
        1) echo "SELECT date_trunc('second', produced_at) AS s, count(*), sum(seq) FROM bench_fresh WHERE seq % $2 <> 0 GROUP BY s" ;;
        2) echo "SELECT count(*), min(seq), max(produced_at) FROM bench_fresh WHERE seq % $2 = 0" ;;
        3) echo "SELECT seq, produced_at FROM bench_fresh WHERE seq % (10 * $2) = 0" ;;
        4) echo "SELECT seq % $2 AS k, date_trunc('second', produced_at) AS s, count(*), avg(seq) FROM bench_fresh GROUP BY k, s" ;;
    esac
}

# bench_fresh_views OPTIONS N: the statements creating N continuous views
# bench_fresh_w1 .. wN with these view options: view i of kind (i - 1) % 5
# with modulus i + 2.
bench_fresh_views() {
    local i
    for i in $(seq "$2"); do
        echo "CREATE VIEW bench_fresh_w$i WITH ($1) AS $(bench_fresh_view $(((i - 1) % 5)) $((i + 2)));"
    done
}

# bench_fresh_attached K: waits, up to 30 s, until the K views bench_fresh_v
# and bench_fresh_w* show attached = true in ssp.views; prints "ATTACHED
# SECONDS WORKERS READERS": the views attached, the seconds waited, the
# 'ssp worker' processes (pg_stat_activity) and the rows of ssp.readers.
bench_fresh_attached() {
    local k=$1 t0 a i
    t0=$(bench_now)
    for i in $(seq 300); do
        a=$(psql -X -At -v ON_ERROR_STOP=1 -c "SELECT count(*) FILTER (WHERE attached) FROM ssp.views
                WHERE view::text ~ '^bench_fresh_(v|w[0-9]+)\$'")
        [ "$a" -lt "$k" ] || break
        sleep 0.1
    done
    echo "$a $(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN {printf "%.1f", b - a}')" \
        "$(psql -X -At -F ' ' -v ON_ERROR_STOP=1 -c "SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ssp worker'),
                (SELECT count(*) FROM ssp.readers)")"
}

bench_freshness_run() {
    local secs=$1 ticks c ci label k opts create drop att t workers readers p99 i
    local others=19
    ticks=$((secs * 20))
    echo "workload: 20,000 events/s for $secs s (1,000 every 50 ms, from one INSERT each) into 16 partitions"
    echo "view:     SELECT seq, produced_at, now() AS applied_at FROM bench_fresh (append-only)"
    echo "latency:  applied_at (the start of the transaction that applies the event; it commits"
    echo "          right after) - produced_at (clock_timestamp() when the row was made)"
    echo "50ms, 20 views: the view at ssp.commit_interval = '50ms' and $others other views of bench_fresh, created"
    echo "          in the same transaction with the same options: view i of kind (i - 1) % 5, m = i + 2:"
    for i in 0 1 2 3 4; do
        echo "            $(bench_fresh_view "$i" m)"
    done
    echo "          the latency measured on the view once all 20 are attached = true (ssp.views, polled up"
    echo "          to 30 s), then all 20 dropped"
    echo
    for c in default 50ms 50ms-20; do
        ci=${c%-20} label=${c%-20} k=1 drop=
        [ "$c" = 50ms-20 ] && label="50ms, 20 views" k=$((others + 1)) drop=$(seq -f ', bench_fresh_w%g' -s '' 1 "$others")
        opts="ssp.continuous$([ "$ci" = default ] || echo ", ssp.commit_interval = '$ci'"), ssp.start = 'latest'"
        create="CREATE VIEW bench_fresh_v WITH ($opts)
  AS SELECT seq, produced_at, now() AS applied_at FROM bench_fresh;"
        if [ "$k" -gt 1 ]; then
            # all of them at once, and their reader running before the producer
            { echo "BEGIN;"; echo "$create"; bench_fresh_views "$opts" "$others"; echo "COMMIT;"; } |
                psql -X -q -v ON_ERROR_STOP=1
            create=
            read -r att t workers readers <<<"$(bench_fresh_attached "$k")"
            echo "$label: $att of $k views attached after $t s (ssp.views); ssp worker processes" \
                "(pg_stat_activity): $workers; readers (ssp.readers): $readers"
            [ "$att" = "$k" ] || echo "$label: NOT ALL ATTACHED within 30 s: measured anyway"
        fi
        psql -X -q -v ON_ERROR_STOP=1 <<SQL
$create
$(bench_fresh_produce bench_fresh "$ticks")
SELECT ssp.wait('bench_fresh_v', '120 s') \g /dev/null
\pset tuples_only on
\pset format unaligned
\pset fieldsep ' '
SELECT format('commit_interval %s: %s events in %s s; latency p50 %s ms, p99 %s ms, max %s ms',
              '$label', count(*), round(extract(epoch FROM max(produced_at) - min(produced_at))::numeric, 1),
              round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l)::numeric, 1),
              round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l)::numeric, 1), round(max(l)::numeric, 1))
  FROM (SELECT produced_at, extract(epoch FROM applied_at - produced_at) * 1000 AS l FROM bench_fresh_v) x \g
$([ "$k" -eq 1 ] || echo "SELECT format('$label, after: %s of $k views attached (ssp.views); ssp worker processes (pg_stat_activity): %s',
              count(*) FILTER (WHERE attached), (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ssp worker'))
  FROM ssp.views WHERE view::text ~ '^bench_fresh_(v|w[0-9]+)\$' \g")
\o $SSP_WORK/freshness-$c.p99
SELECT round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM applied_at - produced_at) * 1000)::numeric, 1)
  FROM bench_fresh_v;
\o $SSP_WORK/freshness-$c.dat
SELECT s, round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l)::numeric, 1)
  FROM (SELECT floor(extract(epoch FROM produced_at - (SELECT min(produced_at) FROM bench_fresh_v))) AS s,
               extract(epoch FROM applied_at - produced_at) * 1000 AS l FROM bench_fresh_v) x
  GROUP BY s ORDER BY s;
\o
\pset tuples_only off
\pset format aligned
DROP VIEW bench_fresh_v$drop;
SQL
    done
    p99=$(cat "$SSP_WORK/freshness-50ms-20.p99")
    awk -v p="$p99" -v a="$att" -v k="$((others + 1))" 'BEGIN {
        printf "target: p99 under 150 ms with 20 views at 50 ms: %s (p99 %s ms%s)\n", (p != "" && p + 0 < 150 ? "met" : "MISSED"), p,
            (a == k ? "" : sprintf("; only %d of %d views attached", a, k)) }'
    command -v gnuplot >/dev/null || return 0
    gnuplot <<GP
set terminal pngcairo size 640,400 font "sans,10"
set output "$BENCH_RESULTS/freshness${BENCH_SUFFIX:-}.png"
set title "freshness: p99 latency per second, 20,000 events/s"
set xlabel "seconds"
set ylabel "ms from produce to apply"
set yrange [0:*]
set grid
plot "$SSP_WORK/freshness-default.dat" using 1:2 with lines title "commit interval 100 ms", \
     "$SSP_WORK/freshness-50ms.dat" using 1:2 with lines title "commit interval 50 ms", \
     "$SSP_WORK/freshness-50ms-20.dat" using 1:2 with lines title "commit interval 50 ms, 20 views"
GP
    echo "plot: $BENCH_RESULTS/freshness${BENCH_SUFFIX:-}.png"
}

# bench_memory: workload 5: a view of count, sum and avg by region over
# 10,000,000 events, produced a million at a time while it consumes (the
# test broker keeps only about 5 MiB a partition); the worker's memory
# after each million: resident (VmRSS, which counts the shared buffers it
# has touched) and private (RssAnon, what a leak would grow).
bench_memory() {
    bench_start_postgres
    bench_report memory bench_memory_run "${SSP_BENCH_MILLIONS:-10}"
}

bench_memory_run() {
    local millions=$1 m c pid rss anon idle_rss idle_anon first_anon=
    echo "workload: $millions x 1,000,000 events into 16 partitions, 200,000 at a time once the view has the last"
    echo "view:     SELECT region, count(*), sum(amount), avg(amount) FROM bench_mem GROUP BY region (100 regions)"
    echo "sampled:  after each million, the worker's VmRSS and RssAnon (private) as soon as the view has it"
    echo "          (busy: a worker keeps what it frees while it works) and 2 s later (idle: a worker gives"
    echo "          that back after a second with nothing to apply, doc/internals.md, A batch); the growth"
    echo "          is the idle private memory's, what the worker holds for good"
    echo
    psql -X -q -v ON_ERROR_STOP=1 -c "CREATE VIEW bench_mem_v WITH (ssp.continuous) AS
        SELECT region, count(*), sum(amount), avg(amount) FROM bench_mem GROUP BY region"
    printf '%-10s %15s %15s %15s %15s\n' events "busy VmRSS kB" "busy RssAnon kB" "idle VmRSS kB" "idle RssAnon kB"
    for m in $(seq "$millions"); do
        for c in 0 1 2 3 4; do
            # spread evenly: librdkafka's sticky partitioner would put a run
            # of them in one partition, beyond what the test broker keeps
            psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO bench_mem
                SELECT g, 'r' || g % 100, g % 1000, timestamptz '2024-01-01' + g * interval '1 ms', g % 16
                FROM generate_series(($m - 1) * 1000000 + $c * 200000 + 1, ($m - 1) * 1000000 + ($c + 1) * 200000) g"
            [ "$(psql -X -At -c "SELECT ssp.wait('bench_mem_v', '300 s')")" = t ] ||
                ssp_die "the view did not catch up"
        done
        pid=$(psql -X -At -c "SELECT worker_pid FROM ssp.views WHERE view = 'bench_mem_v'::regclass")
        rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
        anon=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")
        sleep 2
        idle_rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
        idle_anon=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")
        first_anon=${first_anon:-$idle_anon}
        printf '%-10s %15s %15s %15s %15s\n' "${m}000000" "$rss" "$anon" "$idle_rss" "$idle_anon"
    done
    echo
    psql -X -At -c "SELECT format('applied %s events, %s dead letters', processed, dead_letters)
        FROM ssp.views WHERE view = 'bench_mem_v'::regclass"
    awk -v a="$first_anon" -v b="$idle_anon" 'BEGIN {
        printf "idle private memory growth from the first million to the last: %.1f MB (target under 10 MB: %s)\n",
            (b - a) / 1024, ((b - a) / 1024 < 10 ? "met" : "MISSED") }'
    psql -X -q -c "DROP VIEW bench_mem_v"
}

# bench_streams: ssp against Kafka Streams computing the same aggregate
# (test/kafka/StreamsAggregate.java), on Apache Kafka: the catch-up of the
# catchup workload's view, SSP_BENCH_RUNS times (each run checks that both
# hold the same groups, counts and sums), then the freshness workload's
# latency, once each, at 20,000 events/s for SSP_BENCH_SECONDS (default 60).
# The benchmark's Kafka if SSP_BENCH_KAFKA=apache, else one of its own,
# which the views read through server kafka_apache and schema apache.
bench_streams() {
    local n=${SSP_BENCH_MESSAGES:-1000000} r=${SSP_BENCH_RUNS:-5} schema=public kafka_dir bootstrap server=kafka
    bench_start_postgres
    if [ "$BENCH_KAFKA" = apache ]; then
        kafka_dir=$SSP_KAFKA_DIR bootstrap=$SSP_BROKERS
        "$SSP_SRC/test/kafka/kafka_ctl" topics "$kafka_dir" --create --if-not-exists --topic bench_fresh_streams \
            --partitions 16 >/dev/null
    else
        local brokers=$SSP_BROKERS control=$SSP_BROKER_CONTROL
        bench_start_apache "$SSP_WORK/bench-kafka-streams" bench_catchup:64 bench_fresh:16 bench_fresh_streams:16
        kafka_dir=$SSP_KAFKA_DIR bootstrap=$SSP_BROKERS
        export SSP_BROKERS=$brokers SSP_BROKER_CONTROL=$control SSP_KAFKA_DIR=
        schema=apache server=kafka_apache
        psql -X -q -v ON_ERROR_STOP=1 -v brokers="$bootstrap" <<'SQL'
CREATE SERVER kafka_apache FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE SCHEMA apache;
CREATE FOREIGN TABLE apache.bench_catchup (order_id bigint, customer_id bigint, region text, amount numeric,
    ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka_apache OPTIONS (topic 'bench_catchup', timestamp 'ts');
CREATE FOREIGN TABLE apache.bench_fresh (seq bigint, produced_at timestamptz)
  SERVER kafka_apache OPTIONS (topic 'bench_fresh', timestamp 'produced_at');
SQL
    fi
    psql -X -q -v ON_ERROR_STOP=1 -c "CREATE FOREIGN TABLE IF NOT EXISTS $schema.bench_fresh_streams
        (seq bigint, produced_at timestamptz) SERVER $server OPTIONS (topic 'bench_fresh_streams', timestamp 'produced_at')"
    # always on Apache Kafka: results/streams.txt
    local BENCH_BROKER BENCH_SUFFIX=
    BENCH_BROKER="Apache Kafka $(bench_kafka_version) (KRaft, one node, on the same machine; JVM $BENCH_JAVA_OPTS)"
    bench_produce_orders "$n" "$schema.bench_catchup"
    bench_report streams bench_streams_run "$n" "$r" "$schema" "$kafka_dir" "$bootstrap" "${SSP_BENCH_SECONDS:-60}"
}

# bench_fresh_produce STREAM TICKS: the statement producing 1,000 events
# into STREAM every 50 ms, TICKS times, each with its making's time.
bench_fresh_produce() {
    cat <<SQL
DO \$\$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    FOR i IN 0 .. $2 - 1 LOOP
        INSERT INTO $1 SELECT i * 1000 + g, clock_timestamp() FROM generate_series(1, 1000) g;
        -- a transaction each: one open for the whole run would hold back
        -- the xmin horizon, and every view's table would bloat with the
        -- versions no one may prune (a producer that is a Kafka client holds none)
        COMMIT;
        PERFORM pg_sleep(GREATEST(0, extract(epoch FROM t0 + (i + 1) * interval '50 ms' - clock_timestamp())));
    END LOOP;
END
\$\$;
SQL
}

# bench_streams_run N RUNS SCHEMA KAFKA_DIR BOOTSTRAP SECONDS: the report's
# body.
bench_streams_run() {
    local n=$1 r=$2 schema=$3 kafka_dir=$4 bootstrap=$5 secs=$6 i out s k kr w app t0 check ssp_check k_check
    local -a ssp=() kstreams=() whole=()
    local agg="count(*) AS n, sum(amount) AS total, avg(amount) AS mean"
    local kafka_ctl=(env SSP_KAFKA_JAVA_OPTS="$BENCH_JAVA_OPTS" "$SSP_SRC/test/kafka/kafka_ctl")
    echo "catch-up"
    echo "workload: $n JSON orders in 64 partitions of topic bench_catchup, already produced; from the earliest offsets"
    echo "ssp:           CREATE VIEW ... WITH (ssp.continuous) AS SELECT region, date_trunc('minute', ts) AS minute, $agg"
    echo "               FROM $schema.bench_catchup GROUP BY region, minute; the time until ssp.wait returns (one worker)"
    echo "Kafka Streams: test/kafka/StreamsAggregate.java: stream (byte arrays) -> map (Jackson: key region|minute,"
    echo "               value amount as BigDecimal) -> groupByKey (through a repartition topic) -> aggregate"
    echo "               (count, sum, avg) into a persistent store (RocksDB, with its changelog topic);"
    echo "               processing.guarantee=exactly_once_v2, one stream thread, the other settings Kafka's defaults"
    echo "               (commit.interval.ms 100 under exactly-once, a 10 MB record cache); a new application.id and"
    echo "               state directory each run; the time from KafkaStreams.start() until its aggregate has taken"
    echo "               all $n orders and close() has committed (the JVM's start and the topology's build excluded;"
    echo "               \"until RUNNING\": making its internal topics, the rebalance, its tasks' initialisation;"
    echo "               \"process\" is the whole java command, from its start to its exit)"
    echo "check:         each run, the groups, the counts summed and the amounts summed are equal in both"
    echo
    for i in $(seq "$r"); do
        out=$(bench_view_seconds bench_streams_view \
            "SELECT region, date_trunc('minute', ts) AS minute, $agg FROM $schema.bench_catchup GROUP BY region, minute" \
            "" "$n" "SELECT count(*), sum(n), sum(total) FROM bench_streams_view;")
        s=$(sed -n 1p <<<"$out")
        ssp_check=$(sed -n 2p <<<"$out" | tr '|' ' ')
        app=bench-streams-$i-$(date +%s)
        t0=$(bench_now)
        out=$("${kafka_ctl[@]}" run "$kafka_dir" StreamsAggregate catchup \
            "$bootstrap" bench_catchup "$n" "$app" "$SSP_WORK/streams-state/$app") ||
            ssp_die "Kafka Streams failed (its log: $kafka_dir/tools.log)"
        w=$(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN {printf "%.3f", b - a}')
        out=$(grep '^RESULT streams ' <<<"$out") || ssp_die "Kafka Streams printed no result"
        k=$(sed -n 's/.* seconds=\([^ ]*\).*/\1/p' <<<"$out")
        kr=$(sed -n 's/.* running=\([^ ]*\).*/\1/p' <<<"$out")
        k_check=$(sed -n 's/.* groups=\([^ ]*\) count=\([^ ]*\) amount=\([^ ]*\).*/\1 \2 \3/p' <<<"$out")
        # numerically: Postgres's sum may carry another scale than Java's
        check=$(psql -X -q -At -c "SELECT ARRAY[$(tr ' ' , <<<"$ssp_check")]::numeric[]
                                          = ARRAY[$(tr ' ' , <<<"$k_check")]::numeric[]
                                     AND $(cut -d' ' -f2 <<<"$ssp_check") = $n")
        [ "$check" = t ] ||
            ssp_die "ssp and Kafka Streams differ: ssp groups, count, amount $ssp_check; Kafka Streams $k_check (of $n orders)"
        # the run's internal topics (repartition, changelog) and state
        "$SSP_SRC/test/kafka/kafka_ctl" topics "$kafka_dir" --delete --topic "$app-.*" >/dev/null
        rm -rf "$SSP_WORK/streams-state/$app"
        echo "  run $i: ssp $s s, Kafka Streams $k s ($kr s of it until RUNNING; process $w s); both: groups, count, amount $ssp_check"
        ssp+=("$s")
        kstreams+=("$k")
        whole+=("$w")
    done
    echo
    bench_stats ssp "$n" "${ssp[@]}"
    bench_stats "Streams" "$n" "${kstreams[@]}"
    bench_stats "(process)" "$n" "${whole[@]}"
    s=$(printf '%s\n' "${ssp[@]}" | bench_median)
    k=$(printf '%s\n' "${kstreams[@]}" | bench_median)
    w=$(printf '%s\n' "${whole[@]}" | bench_median)
    echo
    awk -v s="$s" -v k="$k" -v w="$w" 'BEGIN {
        printf "ssp time / Kafka Streams time: %.2f (target below 1: %s)\n", s / k, (s / k < 1 ? "met" : "MISSED")
        printf "ssp time / Kafka Streams process time: %.2f\n", s / w }'
    echo "RESULT streams ssp_s=$s kafka_streams_s=$k kafka_streams_process_s=$w"
    bench_bars streams "catch-up on Apache Kafka, $n orders, 64 partitions (median of $r)" \
        "ssp $(awk -v n="$n" -v t="$s" 'BEGIN {printf "%d", n / t}')" \
        "Kafka Streams $(awk -v n="$n" -v t="$k" 'BEGIN {printf "%d", n / t}')"
    echo
    bench_streams_freshness "$schema" "$kafka_dir" "$bootstrap" "$secs"
}

# bench_streams_freshness SCHEMA KAFKA_DIR BOOTSTRAP SECONDS: the latency
# from produce to applied, ssp against Kafka Streams, one run each.
bench_streams_freshness() {
    local schema=$1 kafka_dir=$2 bootstrap=$3 secs=$4 ticks out app pid i line
    ticks=$((secs * 20))
    echo "freshness"
    echo "workload: 20,000 events/s for $secs s (1,000 every 50 ms, from one INSERT each) into 16 partitions,"
    echo "          {\"seq\": ..., \"produced_at\": clock_timestamp() when the row was made}; one run each"
    echo "ssp:           the freshness workload: a view SELECT seq, produced_at, now() AS applied_at FROM $schema.bench_fresh"
    echo "               (append-only; ssp.commit_interval at its default, 100 ms); latency: applied_at (the start of"
    echo "               the transaction that applies the event; it commits right after) - produced_at"
    echo "Kafka Streams: StreamsAggregate fresh over topic bench_fresh_streams: stream -> map (Jackson; key the second"
    echo "               of produced_at) -> groupByKey (through a repartition topic) -> aggregate (count, latest"
    echo "               produced_at) into a persistent store; exactly_once_v2, commit.interval.ms 100 (its default);"
    echo "               started, and running, before the events are produced; latency: from produced_at to"
    echo "               \"processed\", when the aggregate takes the event, and to \"committed\", the end of the commit"
    echo "               of the transaction holding its update (what a read_committed reader, such as ssp, sees)"
    echo "figures:       p50 / p99 / max in ms, over all the events, then over those produced 10 s or more after the first"
    echo
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE VIEW bench_streams_fresh_v WITH (ssp.continuous, ssp.start = 'latest')
  AS SELECT seq, produced_at, now() AS applied_at FROM $schema.bench_fresh;
$(bench_fresh_produce "$schema.bench_fresh" "$ticks")
SELECT ssp.wait('bench_streams_fresh_v', '300 s') \g /dev/null
\pset tuples_only on
\pset format unaligned
\pset fieldsep ' '
SELECT format('ssp:                     %s events; all %s / %s / %s ms; after 10 s %s / %s / %s ms', count(*),
              round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l)::numeric, 1),
              round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l)::numeric, 1), round(max(l)::numeric, 1),
              round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l) FILTER (WHERE warm)::numeric, 1),
              round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l) FILTER (WHERE warm)::numeric, 1),
              round(max(l) FILTER (WHERE warm)::numeric, 1))
  FROM (SELECT extract(epoch FROM applied_at - produced_at) * 1000 AS l,
               produced_at >= min(produced_at) OVER () + interval '10 s' AS warm
          FROM bench_streams_fresh_v) x;
SELECT format('RESULT streams_fresh_ssp p99_ms=%s',
              round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM applied_at - produced_at) * 1000)::numeric, 1))
  FROM bench_streams_fresh_v;
DROP VIEW bench_streams_fresh_v;
SQL
    app=bench-streams-fresh-$(date +%s)
    out=$SSP_WORK/$app.out
    env SSP_KAFKA_JAVA_OPTS="$BENCH_JAVA_OPTS" "$SSP_SRC/test/kafka/kafka_ctl" run "$kafka_dir" StreamsAggregate fresh \
        "$bootstrap" bench_fresh_streams "$((ticks * 1000))" "$app" "$SSP_WORK/streams-state/$app" >"$out" &
    pid=$!
    for i in $(seq 600); do
        grep -q '^READY' "$out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    grep -q '^READY' "$out" || { kill "$pid" 2>/dev/null; ssp_die "Kafka Streams did not start (its log: $kafka_dir/tools.log)"; }
    psql -X -q -v ON_ERROR_STOP=1 <<<"$(bench_fresh_produce "$schema.bench_fresh_streams" "$ticks")"
    wait "$pid" || ssp_die "Kafka Streams failed (its log: $kafka_dir/tools.log)"
    line=$(grep '^RESULT streams_fresh ' "$out") || ssp_die "Kafka Streams printed no result"
    "$SSP_SRC/test/kafka/kafka_ctl" topics "$kafka_dir" --delete --topic "$app-.*" >/dev/null
    rm -rf "$SSP_WORK/streams-state/$app"
    awk '{
        for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        split(f["processed_ms"], a, ","); split(f["processed_after_10s_ms"], b, ",")
        printf "Kafka Streams processed: %s events; all %s / %s / %s ms; after 10 s %s / %s / %s ms\n", f["processed"], a[1], a[2], a[3], b[1], b[2], b[3]
        split(f["committed_ms"], a, ","); split(f["committed_after_10s_ms"], b, ",")
        printf "Kafka Streams committed: %s events; all %s / %s / %s ms; after 10 s %s / %s / %s ms\n", f["processed"], a[1], a[2], a[3], b[1], b[2], b[3]
        split(f["committed_ms"], a, ",")
        printf "RESULT streams_fresh_kafka_streams committed_p99_ms=%s\n", a[2] }' <<<"$line"
}

# main [WORKLOAD...]: run the workloads named, or all of them.
main() {
    local w
    # as root: packages, then the rest as the unprivileged user (Postgres)
    if [ "$(id -u)" -eq 0 ] && [ -z "${SSP_INNER:-}" ]; then
        bench_need_packages libcjson-dev kcat gnuplot-nox linux-perf postgresql-$SSP_PG_VERSION-hll postgresql-$SSP_PG_VERSION-tdigest
        # Apache Kafka: Java and Maven
        if [ "${SSP_BENCH_KAFKA:-}" = apache ] || [ $# -eq 0 ] || [[ " $* " == *" streams "* ]]; then
            SSP_PACKAGES="$SSP_PACKAGES $SSP_KAFKA_PACKAGES"
        fi
        # the settings, as arguments: ssp_setup passes on only some
        for w in $(env | sed -n 's/^\(SSP_BENCH_[A-Z_]*\)=.*/\1/p'); do
            set -- "$w=${!w}" "$@"
        done
    fi
    SSP_COPY_BACK=test/bench/results ssp_setup "$@"
    cd "$SSP_SRC"
    while [ $# -gt 0 ] && [[ $1 == SSP_BENCH_*=* ]]; do
        export "${1%%=*}=${1#*=}"
        shift
    done
    BENCH_JAVA_OPTS=${SSP_BENCH_JAVA_OPTS:-$BENCH_JAVA_OPTS}
    [ $# -gt 0 ] || set -- "${BENCH_WORKLOADS[@]}"
    for w in "$@"; do
        declare -F "bench_$w" >/dev/null ||
            ssp_die "no workload $w (there are: ${BENCH_WORKLOADS[*]})"
        "bench_$w"
    done
}

main "$@"
