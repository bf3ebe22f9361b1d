#!/bin/bash
# make demo: a throwaway Postgres with ssp, the test broker (Apache Kafka
# with SSP_DEMO_KAFKA=apache, or the Kafka in KAFKA_BROKERS), three streams
# (orders, payments, customers), continuous views over them, a backlog to
# catch up on and a generator producing events at a steady rate; the
# terminal shows the views refreshing live, with events/s, lag and catch-up
# progress, for SSP_DEMO_SECONDS (default 60) or until interrupted.
# Postgres and the broker keep running afterwards; make demo-stop stops
# them.
source "$(dirname "$0")/lib.sh"
[ "${SSP_DEMO_KAFKA:-}" = apache ] && SSP_PACKAGES="$SSP_PACKAGES $SSP_KAFKA_PACKAGES"
ssp_setup "$@"
ssp_build

DEMO=${SSP_DEMO_DIR:-$SSP_WORK/demo}
mkdir -p "$DEMO"
PORT=${SSP_DEMO_PORT:-54329}
RATE=${SSP_DEMO_RATE:-1000}           # orders a second
BACKLOG=${SSP_DEMO_BACKLOG:-200000}   # orders already in Kafka when the views start
export PGHOST=$DEMO PGPORT=$PORT PGDATABASE=postgres

# the broker and Postgres outlive this script: not in SSP_PIDS
if [ -n "${KAFKA_BROKERS:-}" ]; then
    SSP_BROKERS=$KAFKA_BROKERS
elif [ "${SSP_DEMO_KAFKA:-}" = apache ]; then
    ssp_log "starting Apache Kafka (fetched with Maven the first time)"
    SSP_BROKERS=$("$SSP_SRC/test/kafka/kafka_ctl" start "$DEMO/kafka" | tail -n 1) ||
        ssp_die "Apache Kafka did not start (logs in $DEMO/kafka)"
    for t in demo_orders:8 demo_payments:8; do
        "$SSP_SRC/test/kafka/kafka_ctl" topics "$DEMO/kafka" --create --topic "${t%:*}" \
            --partitions "${t#*:}" >/dev/null
    done
    # the customer directory is a compacted topic, as a real one would be
    "$SSP_SRC/test/kafka/kafka_ctl" topics "$DEMO/kafka" --create --topic demo_customers \
        --partitions 4 --config cleanup.policy=compact >/dev/null
else
    setsid "$SSP_SRC/test/broker/ssp_test_broker" --topic demo_orders:8 --topic demo_payments:8 \
        --topic demo_customers:4 \
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
max_worker_processes = 16
CONF
pg_ctl -D "$DEMO/pgdata" -l "$DEMO/postgres.log" -w start >/dev/null
echo "$DEMO" >"/tmp/ssp-demo.current" 2>/dev/null || true
chmod 644 /tmp/ssp-demo.current 2>/dev/null || true

ssp_log "streams, and a backlog of $BACKLOG orders with their payments"
psql -q -v ON_ERROR_STOP=1 -v brokers="$SSP_BROKERS" -v backlog="$BACKLOG" <<'SQL'
CREATE EXTENSION ssp;
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
-- three topics, three streams
CREATE FOREIGN TABLE orders (order_id bigint, customer_id bigint, region text, amount numeric, ts timestamptz)
  SERVER kafka OPTIONS (topic 'demo_orders', key 'order_id', timestamp 'ts');
CREATE FOREIGN TABLE payments (order_id bigint, amount numeric, method text, ts timestamptz)
  SERVER kafka OPTIONS (topic 'demo_payments', key 'order_id', timestamp 'ts');
CREATE FOREIGN TABLE customers (customer_id bigint, name text, tier text, ts timestamptz)
  SERVER kafka OPTIONS (topic 'demo_customers', key 'customer_id', timestamp 'ts');

-- 2,000 customers, then the backlog: the last hour of orders, and the
-- payments of nine in ten of them, 5 to 60 seconds after the order
INSERT INTO customers
  SELECT g, (ARRAY['Ada','Grace','Edsger','Barbara','Donald','Frances','Ken','Radia'])[1 + g % 8] || ' #' || g,
         (ARRAY['bronze','silver','gold'])[1 + g % 3], now() - interval '2 hours'
  FROM generate_series(1, 2000) g;
INSERT INTO orders
  SELECT g, 1 + (g * 7919) % 2000, (ARRAY['emea','amer','apac','latam'])[1 + g % 4],
         round((5 + (g * 31) % 19500 / 100.0)::numeric, 2),
         now() - interval '1 hour' + g * (interval '1 hour' / :backlog)
  FROM generate_series(1, :backlog) g;
INSERT INTO payments
  SELECT g, round((5 + (g * 31) % 19500 / 100.0)::numeric, 2), (ARRAY['card','card','wire','wallet'])[1 + g % 4],
         now() - interval '1 hour' + g * (interval '1 hour' / :backlog) + (5 + g % 56) * interval '1 s'
  FROM generate_series(1, :backlog) g WHERE g % 10 <> 0;

-- the continuous views
CREATE VIEW revenue_per_minute WITH (ssp.continuous, ssp.grace = '1 minute', ssp.retention = '2 hours') AS
  SELECT ssp.tumble(ts, '1 minute') AS minute, region, count(*) AS orders, sum(amount) AS revenue
  FROM orders GROUP BY 1, 2;
CREATE VIEW payment_delay WITH (ssp.continuous, ssp.grace = '1 minute') AS
  SELECT o.region, count(*) AS paid, avg(p.ts - o.ts) AS avg_delay
  FROM orders o JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '10 minutes'
  GROUP BY o.region;
CREATE VIEW customer_directory WITH (ssp.continuous, ssp.primary_key = 'customer_id') AS
  SELECT customer_id, name, tier FROM customers;
CREATE VIEW spend_per_customer WITH (ssp.continuous) AS
  SELECT customer_id, count(*) AS orders, sum(amount) AS spent FROM orders GROUP BY customer_id;
SQL

# the generator, a procedure in one session: every 100 ms a tenth of RATE
# orders, the payments of nine in ten of those of 5 seconds before, and now
# and then a customer changing tier; each tick commits
psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE PROCEDURE demo_generate(per_second int, first_id bigint) LANGUAGE plpgsql AS $$
DECLARE
    per int := greatest(per_second / 10, 1);
    n bigint := 0;
    t0 timestamptz := clock_timestamp();
BEGIN
    LOOP
        INSERT INTO orders
          SELECT first_id + n * per + g, 1 + (random() * 1999)::int,
                 (ARRAY['emea','amer','apac','latam'])[1 + floor(random() * 4)::int],
                 round((5 + random() * 195)::numeric, 2), now()
          FROM generate_series(1, per) g;
        IF n >= 50 THEN
            INSERT INTO payments
              SELECT first_id + (n - 50) * per + g, round((5 + random() * 195)::numeric, 2), 'card', now()
              FROM generate_series(1, per) g WHERE g % 10 <> 0;
        END IF;
        IF n % 10 = 0 THEN
            INSERT INTO customers
              SELECT c, (ARRAY['Ada','Grace','Edsger','Barbara','Donald','Frances','Ken','Radia'])[1 + c % 8] || ' #' || c,
                     (ARRAY['bronze','silver','gold'])[1 + floor(random() * 3)::int], now()
              FROM (SELECT 1 + (random() * 1999)::int AS c) x;
        END IF;
        COMMIT;
        n := n + 1;
        PERFORM pg_sleep(greatest(0, extract(epoch FROM t0 + n * interval '100 ms' - clock_timestamp())));
    END LOOP;
END
$$;
SQL
PGAPPNAME="ssp demo generator" psql -q -c "CALL demo_generate($RATE, $BACKLOG)" >/dev/null 2>&1 &
SSP_PIDS+=($!)
# stop it with the script (its session would outlive its psql)
demo_exit() {
    psql -X -q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                   WHERE application_name = 'ssp demo generator'" >/dev/null 2>&1 || true
    ssp_cleanup
}
trap demo_exit EXIT

seconds=${SSP_DEMO_SECONDS:-60}
prev=$(psql -X -At -c "SELECT coalesce(sum(processed), 0) FROM ssp.views")
for ((i = 1; i <= seconds; i++)); do
    out=$(psql -X -q -P pager=off -P footer=off <<'SQL'
SELECT view, status, lag, rate AS "msgs/s", progress AS "%", time_left, processed
FROM ssp.views ORDER BY view::text;
\echo 'revenue per region and minute (the last three minutes):'
SELECT minute::time(0) AS minute,
       sum(revenue) FILTER (WHERE region = 'emea') AS emea, sum(revenue) FILTER (WHERE region = 'amer') AS amer,
       sum(revenue) FILTER (WHERE region = 'apac') AS apac, sum(revenue) FILTER (WHERE region = 'latam') AS latam,
       sum(orders) AS orders
FROM revenue_per_minute WHERE minute > now() - interval '3 minutes' GROUP BY minute ORDER BY minute;
\echo 'order to payment, by region:'
SELECT region, paid, date_trunc('second', avg_delay)::text AS avg_delay FROM payment_delay ORDER BY region;
\echo 'top customers:'
SELECT s.customer_id, d.name, d.tier, s.orders, s.spent
FROM spend_per_customer s LEFT JOIN customer_directory d USING (customer_id)
ORDER BY s.spent DESC LIMIT 5;
SQL
)
    total=$(psql -X -At -c "SELECT coalesce(sum(processed), 0) FROM ssp.views")
    clear 2>/dev/null || true
    echo "ssp demo: orders, payments and customers produced into Kafka, continuous views kept by ssp ($i/$seconds s)"
    echo "messages applied by the views: $total ($((total - prev)) in the last second; $RATE orders/s, $((RATE * 9 / 10)) payments/s produced)"
    echo "$out"
    prev=$total
    sleep 1
done

cat <<MSG

The demo keeps running (the generator has stopped). Connect with:
    psql -h $DEMO -p $PORT -U $(id -un) postgres
Try:  SELECT * FROM ssp.views;
      SELECT * FROM revenue_per_minute ORDER BY minute DESC, region LIMIT 8;
      SELECT * FROM orders LIMIT 5;          -- the topic itself
Stop it with:  make demo-stop
MSG
