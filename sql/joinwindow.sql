-- Windows over joins of two streams: tumbling and hopping windows on either
-- stream's event time or the later of the two, emit final, retention, a
-- left join's unmatched rows in their windows, and the sliding window of
-- the talk's example over a third relation kept from a compacted topic.
-- Each view must equal the plain query over the same messages.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic jw_orders_ :run
CREATE FOREIGN TABLE orders (order_id bigint, user_id int, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic jw_payments_ :run
CREATE FOREIGN TABLE payments (order_id bigint, amount numeric, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');

-- refused, each with its reason
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(p.ts, '1 hour'), count(*) FROM orders o LEFT JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day' GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(o.ts + interval '1 hour', '1 hour'), count(*) FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day' GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(LEAST(o.ts, p.ts), '1 hour'), count(*) FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day' GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(GREATEST(o.ts, o.ts), '1 hour'), count(*) FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day' GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.session(o.ts, '1 hour'), count(*) FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day' GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous, ssp.primary_key = 'order_id') AS
  SELECT o.order_id FROM orders o JOIN payments p ON p.ts BETWEEN o.ts AND o.ts + interval '1 day';

-- both topics exist before the views read them: a payment of no order
INSERT INTO payments (order_id, amount, ts) VALUES (-1, 0, '2025-12-31');

-- per hour of the order, of the payment, and hopping on the later of the two
CREATE VIEW by_order_hour WITH (ssp.continuous) AS
  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS n, sum(p.amount) AS paid,
         avg(p.ts - o.ts) AS avg_completion
  FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1;
CREATE VIEW by_payment_hour WITH (ssp.continuous) AS
  SELECT ssp.tumble(p.ts, '1 hour') AS hour, count(*) AS n, max(p.amount) AS biggest
  FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1;
CREATE VIEW by_pair_hop WITH (ssp.continuous) AS
  SELECT ssp.hop(GREATEST(o.ts, p.ts), '3 hours', '2 hours') AS w, o.user_id % 2 AS odd, count(*) AS n
  FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1, 2;
-- a left join: every order in the hour it was made, paid or not; only
-- closed hours (they close a day, the bound, after the watermark passes)
CREATE VIEW left_final WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS orders, count(p.order_id) AS paid
  FROM orders o LEFT JOIN payments p
    ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1;
-- and windows deleted an hour after they closed: none comes back
CREATE VIEW left_retained WITH (ssp.continuous, ssp.retention = '1 hour') AS
  SELECT ssp.tumble(GREATEST(o.ts, p.ts), '1 hour') AS hour, count(*) AS orders
  FROM orders o LEFT JOIN payments p
    ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1;
-- distinct values over pairs: orders paid, per parity of user (orders
-- paid twice count once); and per day of order, over the left join
CREATE VIEW paid_orders WITH (ssp.continuous) AS
  SELECT o.user_id % 2 AS odd, count(DISTINCT o.order_id) AS orders, count(*) AS payments
  FROM orders o JOIN payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1;
CREATE VIEW left_daily_distinct WITH (ssp.continuous) AS
  SELECT ssp.tumble(o.ts, '1 day') AS day, count(DISTINCT o.user_id) AS users,
         count(DISTINCT p.order_id) AS paid
  FROM orders o LEFT JOIN payments p
    ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
  WHERE o.order_id > 0 GROUP BY 1;

-- orders 1 to 100, then every payment, then orders 101 to 200: each topic
-- in event-time order.  Payments take 1 to 6 hours; every 7th two days;
-- every 4th order is never paid; every 10th is paid twice.
INSERT INTO orders (order_id, user_id, ts)
  SELECT g, g % 5, '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes'
  FROM generate_series(1, 100) g;
SELECT ssp.wait('by_order_hour'), ssp.wait('left_final');
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
SELECT ssp.wait('by_order_hour'), ssp.wait('left_final');
INSERT INTO orders (order_id, user_id, ts)
  SELECT g, g % 5, '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes'
  FROM generate_series(101, 200) g;
SELECT ssp.wait('by_order_hour'), ssp.wait('by_payment_hour'), ssp.wait('by_pair_hop'),
       ssp.wait('left_final'), ssp.wait('left_retained');
-- a partition of payments never written holds the watermark (for
-- ssp.idle_timeout): no hour is final yet
SELECT count(*) AS final_hours FROM left_final;

-- a late event time in every partition of both topics moves the watermark
-- past every bound; with no other message, a batch of nothing then emits
-- the unpaid orders and closes their hours
INSERT INTO orders (order_id, user_id, ts, part)
  SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 3) g;
INSERT INTO payments (order_id, amount, ts, part)
  SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 3) g;
SELECT ssp.wait('by_order_hour'), ssp.wait('by_payment_hour'), ssp.wait('by_pair_hop'),
       ssp.wait('left_final'), ssp.wait('left_retained'), ssp.wait('paid_orders'),
       ssp.wait('left_daily_distinct');
DO $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT bool_and(batch_watermark IS NOT DISTINCT FROM watermark)
               FROM ssp.continuous_views WHERE view IN ('left_final'::regclass, 'left_retained'::regclass,
                                                        'left_daily_distinct'::regclass));
    PERFORM pg_sleep(0.1);
  END LOOP;
END
$$;
SELECT view, watermark, batch_watermark FROM ssp.continuous_views
  WHERE view IN ('left_final'::regclass, 'left_retained'::regclass) ORDER BY view::text;

CREATE TEMP TABLE all_orders AS SELECT * FROM orders;
CREATE TEMP TABLE all_payments AS SELECT * FROM payments;
CREATE TEMP VIEW pairs AS
  SELECT o.order_id, o.user_id, o.ts AS ots, p.amount, p.ts AS pts
  FROM all_orders o JOIN all_payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  WHERE o.order_id > 0;
CREATE TEMP VIEW left_pairs AS
  SELECT o.order_id, o.ts AS ots, p.order_id AS paid, p.ts AS pts
  FROM all_orders o LEFT JOIN all_payments p
    ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
  WHERE o.order_id > 0;

SELECT count(*) AS hours, sum(n) AS pairs, sum(paid) AS paid FROM by_order_hour;
SELECT count(*) AS differences FROM
  ((SELECT * FROM by_order_hour
    EXCEPT ALL SELECT ssp.tumble(ots, '1 hour'), count(*), sum(amount), avg(pts - ots) FROM pairs GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(ots, '1 hour'), count(*), sum(amount), avg(pts - ots) FROM pairs GROUP BY 1
    EXCEPT ALL SELECT * FROM by_order_hour)) d;
SELECT count(*) AS differences FROM
  ((SELECT * FROM by_payment_hour
    EXCEPT ALL SELECT ssp.tumble(pts, '1 hour'), count(*), max(amount) FROM pairs GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(pts, '1 hour'), count(*), max(amount) FROM pairs GROUP BY 1
    EXCEPT ALL SELECT * FROM by_payment_hour)) d;
SELECT count(*) AS windows, sum(n) AS pair_windows FROM by_pair_hop;
SELECT count(*) AS differences FROM
  ((SELECT * FROM by_pair_hop
    EXCEPT ALL SELECT hw.w, user_id % 2, count(*) FROM pairs
      CROSS JOIN LATERAL ssp.hop_windows(GREATEST(ots, pts), '3 hours', '2 hours') hw(w) GROUP BY 1, 2)
   UNION ALL
   (SELECT hw.w, user_id % 2, count(*) FROM pairs
      CROSS JOIN LATERAL ssp.hop_windows(GREATEST(ots, pts), '3 hours', '2 hours') hw(w) GROUP BY 1, 2
    EXCEPT ALL SELECT * FROM by_pair_hop)) d;
-- every hour of 2026 is final now, with its unpaid orders
SELECT count(*) AS hours, sum(orders) AS orders, sum(paid) AS paid FROM left_final;
SELECT count(*) AS differences FROM
  ((SELECT * FROM left_final
    EXCEPT ALL SELECT ssp.tumble(ots, '1 hour'), count(*), count(paid) FROM left_pairs GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(ots, '1 hour'), count(*), count(paid) FROM left_pairs GROUP BY 1
    EXCEPT ALL SELECT * FROM left_final)) d;
SELECT count(*) AS kept FROM left_retained;
-- distinct values over pairs, equal to the plain query
SELECT * FROM paid_orders ORDER BY odd;
SELECT count(*) AS differences FROM
  ((SELECT * FROM paid_orders
    EXCEPT ALL SELECT user_id % 2, count(DISTINCT order_id), count(*) FROM pairs GROUP BY 1)
   UNION ALL
   (SELECT user_id % 2, count(DISTINCT order_id), count(*) FROM pairs GROUP BY 1
    EXCEPT ALL SELECT * FROM paid_orders)) d;
SELECT count(*) AS days, sum(users) AS users, sum(paid) AS paid FROM left_daily_distinct;
SELECT count(*) AS differences FROM
  ((SELECT * FROM left_daily_distinct
    EXCEPT ALL SELECT ssp.tumble(ots, '1 day'), count(DISTINCT o.user_id), count(DISTINCT paid)
               FROM left_pairs JOIN all_orders o USING (order_id) GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(ots, '1 day'), count(DISTINCT o.user_id), count(DISTINCT paid)
    FROM left_pairs JOIN all_orders o USING (order_id) GROUP BY 1
    EXCEPT ALL SELECT * FROM left_daily_distinct)) d;
-- the streams' late rows only: no pair is ever late
SELECT view, status, late_events, dead_letters, last_error FROM ssp.views ORDER BY view::text;

-- The talk's example: the average time from order to payment by the
-- user's region, over the last day, moving every second.  The users come
-- from a compacted topic (the latest row per key).
\set topic jw_users_ :run
CREATE FOREIGN TABLE user_updates (user_id int OPTIONS (meta 'key'), region text)
  SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW users WITH (ssp.continuous, ssp.primary_key = 'user_id') AS
  SELECT user_id, region FROM user_updates;
INSERT INTO user_updates VALUES (0, 'north'), (1, 'south'), (2, 'east'), (3, 'west'), (4, 'north'), (2, 'south');
SELECT ssp.wait('users');
SELECT * FROM users ORDER BY user_id;
\set topic jw_recent_orders_ :run
CREATE FOREIGN TABLE recent_orders (order_id bigint, user_id int, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic jw_recent_payments_ :run
CREATE FOREIGN TABLE recent_payments (order_id bigint, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
-- both topics exist before the view reads them: an order and a payment of
-- three days ago, which match nothing
INSERT INTO recent_orders VALUES (-1, 0, now() - interval '3 days');
INSERT INTO recent_payments VALUES (-2, now() - interval '3 days');
CREATE VIEW completion_by_region WITH (ssp.continuous, ssp.sliding = '1 day', ssp.step = '1 second') AS
  SELECT u.region, avg(p.ts - o.ts) AS avg_completion, count(*) AS payments
  FROM recent_orders o JOIN recent_payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
  JOIN users u ON u.user_id = o.user_id
  GROUP BY u.region;
-- and the pairs themselves over the last day, without aggregates
CREATE VIEW recent_pairs WITH (ssp.continuous, ssp.sliding = '1 day') AS
  SELECT o.order_id, p.ts - o.ts AS completion
  FROM recent_orders o JOIN recent_payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day';
-- orders over the last 20 hours, each paid within 1 to 6 hours (some not
-- yet); and one order from two days ago, paid an hour later: out of the day
CREATE TEMP TABLE recent AS
  SELECT g AS order_id, g % 5 AS user_id,
         date_trunc('second', now()) - interval '20 hours' + g * interval '5 minutes' AS ots,
         date_trunc('second', now()) - interval '20 hours' + g * interval '5 minutes'
           + (g % 6 + 1) * interval '1 hour' AS pts
  FROM generate_series(1, 200) g
  UNION ALL
  SELECT 0, 1, date_trunc('second', now()) - interval '2 days', date_trunc('second', now()) - interval '47 hours';
INSERT INTO recent_orders SELECT order_id, user_id, ots FROM recent ORDER BY ots;
INSERT INTO recent_payments SELECT order_id, pts FROM recent ORDER BY pts;
SELECT ssp.wait('completion_by_region'), ssp.wait('recent_pairs');
SELECT region, payments FROM completion_by_region ORDER BY region;
SELECT count(*) AS pairs FROM recent_pairs;
SELECT count(*) AS differences FROM
  ((SELECT * FROM recent_pairs
    EXCEPT ALL SELECT order_id, pts - ots FROM recent WHERE pts > now() - interval '1 day')
   UNION ALL
   (SELECT order_id, pts - ots FROM recent WHERE pts > now() - interval '1 day'
    EXCEPT ALL SELECT * FROM recent_pairs)) d;
SELECT count(*) AS differences FROM
  ((SELECT * FROM completion_by_region
    EXCEPT ALL SELECT u.region, avg(r.pts - r.ots), count(*) FROM recent r JOIN users u USING (user_id)
      WHERE r.pts > now() - interval '1 day' GROUP BY 1)
   UNION ALL
   (SELECT u.region, avg(r.pts - r.ots), count(*) FROM recent r JOIN users u USING (user_id)
      WHERE r.pts > now() - interval '1 day' GROUP BY 1
    EXCEPT ALL SELECT * FROM completion_by_region)) d;

-- an order without an event time is in a window of its own, null, as in the
-- view's query (it was left out: neither late nor a dead letter); topics of
-- one partition, so that the watermark is each one's latest time
\set topic jw_null_orders_ :run
\! "$SSP_SRC/test/create_topic" "jw_null_orders_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE null_orders (order_id bigint, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic jw_null_payments_ :run
\! "$SSP_SRC/test/create_topic" "jw_null_payments_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE null_payments (order_id bigint, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW null_hours WITH (ssp.continuous) AS
  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS orders, count(p.order_id) AS paid
  FROM null_orders o LEFT JOIN null_payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour'
  GROUP BY 1;
INSERT INTO null_orders VALUES (1, '2026-01-01 10:00+00'), (2, NULL), (3, '2026-01-01 10:30+00');
INSERT INTO null_payments VALUES (1, '2026-01-01 10:10+00');
-- a day later on both: the watermark passes every bound
INSERT INTO null_orders VALUES (4, '2026-01-02');
INSERT INTO null_payments VALUES (4, '2026-01-02');
SELECT ssp.wait('null_hours');
DO $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT sum(orders) FROM null_hours) >= 4;
    PERFORM pg_sleep(0.1);
  END LOOP;
END
$$;
SELECT * FROM null_hours ORDER BY 1;
SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*), count(p.order_id)
  FROM null_orders o LEFT JOIN null_payments p
    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour'
  GROUP BY 1 ORDER BY 1;
SELECT dead_letters, late_events FROM ssp.views WHERE view = 'null_hours'::regclass;

DROP SERVER kafka CASCADE;
