#!/bin/bash
# make demo: a throwaway Postgres with ssp, the test broker (or the Kafka in
# KAFKA_BROKERS), a stream, continuous views, and a generator producing
# orders at a steady rate; the terminal shows the views refreshing live, with
# events/s and lag, for SSP_DEMO_SECONDS (default 60) or until interrupted.
# Postgres and the broker keep running afterwards; make demo-stop stops them.
source "$(dirname "$0")/lib.sh"
ssp_setup "$@"
ssp_build

DEMO=$SSP_WORK/demo
mkdir -p "$DEMO"
PORT=${SSP_DEMO_PORT:-54329}
export PGHOST=$DEMO PGPORT=$PORT PGDATABASE=postgres

# the broker and Postgres outlive this script: not in SSP_PIDS
if [ -n "${KAFKA_BROKERS:-}" ]; then
    SSP_BROKERS=$KAFKA_BROKERS
else
    setsid "$SSP_SRC/test/broker/ssp_test_broker" --topic demo_orders:8 \
        --bootstrap-file "$DEMO/bootstrap" --control-file "$DEMO/control" \
        --pid-file "$DEMO/broker.pid" 2>"$DEMO/broker.log" </dev/null &
    for _ in $(seq 100); do [ -f "$DEMO/control" ] && break; sleep 0.1; done
    [ -f "$DEMO/control" ] || ssp_die "the test broker did not start"
    SSP_BROKERS=$(cat "$DEMO/bootstrap")
fi
ssp_log "Kafka at $SSP_BROKERS"

initdb -D "$DEMO/pgdata" -A trust >/dev/null
cat >>"$DEMO/pgdata/postgresql.conf" <<CONF
shared_preload_libraries = 'ssp'
port = $PORT
unix_socket_directories = '$DEMO'
listen_addresses = ''
CONF
pg_ctl -D "$DEMO/pgdata" -l "$DEMO/postgres.log" -w start >/dev/null
echo "$DEMO" >"/tmp/ssp-demo.current" 2>/dev/null || true
chmod 644 /tmp/ssp-demo.current 2>/dev/null || true

psql -q -v ON_ERROR_STOP=1 -v brokers="$SSP_BROKERS" <<'SQL'
CREATE EXTENSION ssp;
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE orders (
    order_id bigint, customer_id bigint, region text, amount numeric, ts timestamptz,
    part int OPTIONS (meta 'partition'), off bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic 'demo_orders', format 'json', key 'order_id', timestamp 'ts');
CREATE VIEW revenue_by_region WITH (ssp.continuous) AS
  SELECT region, count(*) AS orders, sum(amount) AS revenue, round(avg(amount), 2) AS avg_order,
         max(ts) AS latest
  FROM orders GROUP BY region;
CREATE VIEW big_orders WITH (ssp.continuous) AS
  SELECT order_id, customer_id, region, amount, ts FROM orders WHERE amount > 195;
SQL

# the generator: 200 orders every 100 ms, about 2,000 a second
(
    n=0
    while true; do
        psql -q -c "INSERT INTO orders (order_id, customer_id, region, amount, ts)
            SELECT $n * 200 + g, (random() * 10000)::int,
                   (ARRAY['emea','amer','apac','latam'])[1 + floor(random() * 4)::int],
                   round((random() * 200)::numeric, 2), now()
            FROM generate_series(1, 200) g" >/dev/null 2>&1 || true
        n=$((n + 1))
        sleep 0.1
    done
) &
SSP_PIDS+=($!)

seconds=${SSP_DEMO_SECONDS:-60}
prev=0
for ((i = 1; i <= seconds; i++)); do
    out=$(psql -X -q -P pager=off <<'SQL'
SELECT region, orders, revenue, avg_order, latest::time(0) AS latest
FROM revenue_by_region ORDER BY revenue DESC;
SELECT view, status, lag, processed, dead_letters, last_commit::time(3) AS last_commit FROM ssp.views ORDER BY view::text;
SQL
)
    total=$(psql -X -At -c "SELECT processed FROM ssp.views WHERE view = 'revenue_by_region'::regclass")
    total=${total:-0}
    clear 2>/dev/null || true
    echo "ssp demo: orders produced into Kafka, continuous views kept by ssp ($i/$seconds s)"
    echo "orders applied to revenue_by_region: $total ($((total - prev)) in the last second)"
    echo "$out"
    prev=$total
    sleep 1
done

cat <<MSG

The demo keeps running. Connect with:
    psql -h $DEMO -p $PORT -U $(id -un) postgres
Try:  SELECT * FROM big_orders ORDER BY ts DESC LIMIT 5;
      SELECT * FROM orders WHERE part = 0 ORDER BY off DESC LIMIT 5;
Stop it with:  make demo-stop
MSG
