-- Joins of two streams on a time bound between their event times.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic sj_orders_ :run
CREATE FOREIGN TABLE orders (order_id bigint, region text, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic sj_payments_ :run
CREATE FOREIGN TABLE payments (order_id bigint, amount numeric, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic sj_clicks_ :run
CREATE FOREIGN TABLE clicks (order_id bigint, at timestamptz) SERVER kafka OPTIONS (topic :'topic');
CREATE TABLE regions (region text PRIMARY KEY, manager text);
INSERT INTO regions VALUES ('north', 'Ada'), ('south', 'Grace');

-- refused
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN payments p ON p.order_id = o.order_id;
-- a stream's whole row: its buffer has the columns of CREATE VIEW's time
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, to_jsonb(o) FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN payments p ON p.order_id = o.order_id AND p.ts >= o.ts;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN payments p ON p.order_id = o.order_id AND p.ts < o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o RIGHT JOIN payments p ON p.ts BETWEEN o.ts AND o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o FULL JOIN payments p ON p.ts BETWEEN o.ts AND o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o, payments p WHERE p.ts BETWEEN o.ts AND o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN payments p USING (order_id);
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN orders o2 ON o2.ts BETWEEN o.ts AND o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN clicks c ON c.at BETWEEN o.ts AND o.ts + interval '1 day';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN payments p ON p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  JOIN clicks c ON c.order_id = o.order_id;
CREATE VIEW r WITH (ssp.continuous, ssp.primary_key = 'order_id') AS
  SELECT o.order_id FROM orders o JOIN payments p ON p.ts BETWEEN o.ts AND o.ts + interval '1 day';

-- both topics exist before the views read them: a payment of no order
INSERT INTO payments (order_id, amount, ts) VALUES (-1, 0, '2025-12-31');

-- the average time from order to payment, within a day, by region and
-- manager (a table joined too); and orders with their payments or none
CREATE VIEW completion WITH (ssp.continuous) AS
  SELECT o.region, r.manager, count(*) AS n, avg(p.ts - o.ts) AS avg_completion,
         sum(p.amount) AS paid
  FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  JOIN regions r ON r.region = o.region
  WHERE o.order_id > 0
  GROUP BY o.region, r.manager;
CREATE VIEW order_payments WITH (ssp.continuous) AS
  SELECT o.order_id, o.region, p.amount, p.ts - o.ts AS delay
  FROM orders o LEFT JOIN payments p
    ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
  WHERE o.order_id > 0;
SELECT streams, topics = ARRAY['sj_orders_' || :'run', 'sj_payments_' || :'run'] AS topics,
       buffers
  FROM ssp.continuous_views WHERE view = 'order_payments'::regclass;
\d order_payments_left

-- orders 1 to 100, then every payment (of those before and after), then
-- orders 101 to 200: each topic in event-time order.  Payments take 1 to 6
-- hours; every 7th takes two days; every 4th order is never paid; every
-- 10th is paid twice.
INSERT INTO orders (order_id, region, ts)
  SELECT g, CASE WHEN g % 3 = 0 THEN 'north' ELSE 'south' END,
         '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes'
  FROM generate_series(1, 100) g;
SELECT ssp.wait('completion'), ssp.wait('order_payments');
INSERT INTO payments (order_id, amount, ts)
  SELECT order_id, amount, ts FROM (
    SELECT g AS order_id, g * 1.5 AS amount,
           '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes' +
           CASE WHEN g % 7 = 0 THEN interval '2 days' ELSE (g % 6 + 1) * interval '1 hour' END AS ts
    FROM generate_series(1, 200) g WHERE g % 4 <> 0
    UNION ALL
    SELECT g, 1, '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes' + interval '10 minutes'
    FROM generate_series(10, 200, 10) g) x
  ORDER BY ts;
SELECT ssp.wait('completion'), ssp.wait('order_payments');
INSERT INTO orders (order_id, region, ts)
  SELECT g, CASE WHEN g % 3 = 0 THEN 'north' ELSE 'south' END,
         '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes'
  FROM generate_series(101, 200) g;
SELECT ssp.wait('completion'), ssp.wait('order_payments');
-- a late event time in every partition of both topics moves the watermark
-- past every bound: the unpaid orders come out of the left join
INSERT INTO orders (order_id, region, ts, part)
  SELECT 0, 'none', '2027-01-01', g FROM generate_series(0, 3) g;
INSERT INTO payments (order_id, amount, ts, part)
  SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 3) g;
SELECT ssp.wait('completion'), ssp.wait('order_payments');
-- one more batch, now that the watermark has moved
INSERT INTO orders (order_id, region, ts, part) VALUES (0, 'none', '2027-01-02', 0);
SELECT ssp.wait('completion'), ssp.wait('order_payments');

SELECT * FROM completion ORDER BY region;
CREATE TEMP TABLE all_orders AS SELECT * FROM orders;
CREATE TEMP TABLE all_payments AS SELECT * FROM payments;
SELECT count(*) AS differences FROM
  ((SELECT * FROM completion
    EXCEPT ALL SELECT o.region, r.manager, count(*), avg(p.ts - o.ts), sum(p.amount)
    FROM all_orders o JOIN all_payments p
      ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN regions r ON r.region = o.region WHERE o.order_id > 0 GROUP BY 1, 2)
   UNION ALL
   (SELECT o.region, r.manager, count(*), avg(p.ts - o.ts), sum(p.amount)
    FROM all_orders o JOIN all_payments p
      ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN regions r ON r.region = o.region WHERE o.order_id > 0 GROUP BY 1, 2
    EXCEPT ALL SELECT * FROM completion)) d;
SELECT count(*) AS rows, count(amount) AS paid, count(*) - count(amount) AS unpaid
  FROM order_payments;
SELECT count(*) AS differences FROM
  ((SELECT * FROM order_payments
    EXCEPT ALL SELECT o.order_id, o.region, p.amount, p.ts - o.ts
    FROM all_orders o LEFT JOIN all_payments p
      ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
    WHERE o.order_id > 0)
   UNION ALL
   (SELECT o.order_id, o.region, p.amount, p.ts - o.ts
    FROM all_orders o LEFT JOIN all_payments p
      ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
    WHERE o.order_id > 0
    EXCEPT ALL SELECT * FROM order_payments)) d;
-- what the buffers still hold: the rows at the end of event time only
SELECT count(*) AS left_rows, max(ts) FROM order_payments_left;
SELECT count(*) AS right_rows, max(ts) FROM order_payments_right;
SELECT view, status, processed, late_events, dead_letters, last_error FROM ssp.views ORDER BY view::text;

-- renaming a stream or a buffer is harmless; a column of a joined stream keeps its name
ALTER FOREIGN TABLE payments RENAME COLUMN amount TO paid;
ALTER TABLE order_payments_left RENAME COLUMN region TO area;
ALTER FOREIGN TABLE payments RENAME TO renamed_payments;
ALTER TABLE order_payments_left RENAME TO renamed_left;

-- reset replays both topics into an empty view and empty buffers
SELECT ssp.reset('order_payments');
SELECT ssp.wait('order_payments');
SELECT count(amount) AS paid FROM order_payments;

-- a column added to a joined stream, which the views cannot read: they
-- go on (their buffers keep the columns they were made with; both views
-- once failed at the next batch, "column ... does not exist")
ALTER FOREIGN TABLE renamed_payments ADD COLUMN note text;
INSERT INTO renamed_payments (order_id, amount, ts, note, part)
  SELECT 0, 0, '2027-01-02', 'added', g FROM generate_series(0, 3) g;
SELECT ssp.wait('completion'), ssp.wait('order_payments');
SELECT view, status, last_error FROM ssp.views WHERE view IN ('completion'::regclass, 'order_payments'::regclass) ORDER BY view::text;

DROP VIEW order_payments;
SELECT count(*) FROM pg_class WHERE relname LIKE 'order_payments%';
DROP VIEW completion;
SELECT count(*) FROM ssp.offsets;

-- event times of type timestamp (without time zone), east of UTC: each is
-- the instant Postgres casts it to in the database's zone, as the join's
-- SQL compares it with the watermark; read as UTC, each batch's events
-- were late by five hours here, and their pairs lost
DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', current_database(), 'Asia/Karachi'); END$$;
\set topic sj_local_a_ :run
CREATE FOREIGN TABLE local_a (k int, ts timestamp, p int OPTIONS (meta 'partition'),
    kafka_ts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic sj_local_b_ :run
CREATE FOREIGN TABLE local_b (k int, ts timestamp, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
INSERT INTO local_a (k, ts, p) SELECT 0, '2026-01-01 09:00', g FROM generate_series(0, 3) g;
INSERT INTO local_b SELECT 0, '2026-01-01 09:00', g FROM generate_series(0, 3) g;
CREATE VIEW local_pairs WITH (ssp.continuous) AS
  SELECT a.k, a.ts AS a_ts, b.ts AS b_ts FROM local_a a JOIN local_b b
    ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + interval '1 hour';
SELECT ssp.wait('local_pairs');
INSERT INTO local_a (k, ts, p) VALUES (1, '2026-01-01 10:00', 0);
INSERT INTO local_b VALUES (1, '2026-01-01 10:00', 0);
SELECT ssp.wait('local_pairs');
INSERT INTO local_a (k, ts, p) VALUES (2, '2026-01-01 11:00', 0);
INSERT INTO local_b VALUES (2, '2026-01-01 11:00', 0);
SELECT ssp.wait('local_pairs');
SELECT k, a_ts, b_ts FROM local_pairs WHERE k > 0 ORDER BY k;
SELECT late_events FROM ssp.views WHERE view = 'local_pairs'::regclass;
-- and INSERT gives the message the instant of the local time (UTC+5)
SET timezone = 'Asia/Karachi';
INSERT INTO local_a (k, ts) VALUES (3, '2026-01-01 12:00');
SELECT k, ts, kafka_ts AT TIME ZONE 'UTC' AS kafka_utc FROM local_a WHERE k = 3;
RESET timezone;
DROP VIEW local_pairs;
DROP FOREIGN TABLE local_a, local_b;
DO $$BEGIN EXECUTE format('ALTER DATABASE %I RESET timezone', current_database()); END$$;
DROP SERVER kafka CASCADE;
