-- Joins of three streams: orders, payments and shipments, each pair
-- bounded in time, directly or through the third; the rows of each wait
-- in a buffer until no row still to come can be in a tuple with them.
-- The three topics are written a slice of event time at a time, so the
-- watermark moves, and rows go, while tuples are still being found.  Each
-- view must equal the plain query over the same messages.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic j3_orders_ :run
CREATE FOREIGN TABLE orders (order_id bigint, user_id int, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic j3_payments_ :run
CREATE FOREIGN TABLE payments (order_id bigint, amount numeric, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic j3_shipments_ :run
CREATE FOREIGN TABLE shipments (order_id bigint, carrier text, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic j3_returns_ :run
CREATE FOREIGN TABLE returns (order_id bigint, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE TABLE user_regions (user_id int PRIMARY KEY, region text);
INSERT INTO user_regions VALUES (0, 'north'), (1, 'south'), (2, 'east'), (3, 'west'), (4, 'north');

-- refused, each with its reason
-- a left join
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    LEFT JOIN shipments s ON s.order_id = o.order_id AND s.ts BETWEEN o.ts AND o.ts + interval '1 day';
-- shipments bounded by nothing
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id;
-- shipments at most a day after payments, but as early as they like
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id AND s.ts <= p.ts + interval '1 day';
-- a table between the streams
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN user_regions g ON g.user_id = o.user_id
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id AND s.ts BETWEEN o.ts AND o.ts + interval '1 day';
-- streams listed, not joined
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o, payments p, shipments s
  WHERE p.order_id = o.order_id AND s.order_id = o.order_id;
-- one stream twice
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN orders o2 ON o2.order_id = o.order_id AND o2.ts BETWEEN o.ts AND o.ts + interval '1 day';
-- four streams
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id AND s.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN returns x ON x.order_id = o.order_id AND x.ts BETWEEN o.ts AND o.ts + interval '1 day';
-- a window on a time that is not an event time, or the least of them
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(o.ts + interval '1 hour', '1 hour'), count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id AND s.ts BETWEEN o.ts AND o.ts + interval '1 day'
  GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(LEAST(o.ts, s.ts), '1 hour'), count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id AND s.ts BETWEEN o.ts AND o.ts + interval '1 day'
  GROUP BY 1;
-- names kept for ssp's own relations
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments _ssp_j ON _ssp_j.order_id = o.order_id AND _ssp_j.ts BETWEEN o.ts AND o.ts + interval '1 day';

-- the topics exist before the views read them
INSERT INTO orders VALUES (-1, 0, '2025-12-31', 0);
INSERT INTO payments VALUES (-1, 0, '2025-12-31', 0);
INSERT INTO shipments VALUES (-1, 'none', '2025-12-31', 0);

-- a chain: payments within a day of the order, shipments within two days
-- of the payment (so within three of the order: no bound says so in ON)
CREATE VIEW chain WITH (ssp.continuous) AS
  SELECT o.order_id, p.amount, s.carrier, o.ts AS ots, p.ts AS pts, s.ts AS sts
  FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '2 days'
  WHERE o.order_id > 0;
-- the chain per 6 hours of the order, each window final once no tuple can
-- come into it: three days after the watermark passes its end
CREATE VIEW chain_final WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(o.ts, '6 hours') AS w, count(*) AS n, sum(p.amount) AS paid,
         avg(s.ts - o.ts) AS avg_delivery, max(s.carrier) AS carrier
  FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '2 days'
  WHERE o.order_id > 0 GROUP BY 1;
-- a star: payments and shipments each bounded by the order, with strict
-- and reversed comparisons; per 6 hours of the payment
CREATE VIEW star_final WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(p.ts, '6 hours') AS w, count(*) AS n, count(DISTINCT s.carrier) AS carriers
  FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = o.order_id AND o.ts + interval '2 days 12 hours' >= s.ts AND s.ts > o.ts
  WHERE o.order_id > 0 GROUP BY 1;
-- hopping windows on the latest of the three, joined with a table, with
-- distinct values
CREATE VIEW by_region WITH (ssp.continuous) AS
  SELECT ssp.hop(GREATEST(o.ts, p.ts, s.ts), '12 hours', '4 hours') AS w, g.region,
         count(*) AS n, count(DISTINCT o.user_id) AS users
  FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '2 days'
    JOIN user_regions g ON g.user_id = o.user_id
  WHERE o.order_id > 0 GROUP BY 1, 2;
-- a buffer per stream, and the table of distinct values after them
-- a sliding window (ten years: every tuple is in it) on the latest of the three
CREATE VIEW chain_sliding WITH (ssp.continuous, ssp.sliding = '3650 days', ssp.step = '1 hour') AS
  SELECT count(*) AS n, sum(p.amount) AS paid
  FROM orders o
    JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN shipments s ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '2 days'
  WHERE o.order_id > 0;
SELECT relname FROM pg_class WHERE relname ~ '^(chain|by_region)_' AND relkind = 'r' ORDER BY 1;

-- 300 orders, one each half hour, over four partitions; payments an hour
-- to six later, or a day later (on the bound) for order_id % 5 = 1, every
-- 7th two days later (no match), none for every 4th, a second one for
-- every 10th; shipments 7 to 55 hours after the order, or two days after
-- the payment a day later (on the bound: three days after the order),
-- none for every 3rd
CREATE TEMP TABLE all_orders AS
  SELECT g AS order_id, g % 5 AS user_id,
         '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes' AS ts, (g % 4)::int AS part
  FROM generate_series(1, 300) g;
-- (each topic's messages dealt out over its partitions in time order, so
-- that every partition moves the watermark)
CREATE TEMP TABLE all_payments AS
  SELECT order_id, amount, ts, (row_number() OVER (ORDER BY ts, order_id) % 4)::int AS part FROM (
    SELECT g AS order_id, g * 1.5 AS amount,
           '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes' +
           CASE WHEN g % 7 = 0 THEN interval '2 days' WHEN g % 5 = 1 THEN interval '1 day'
                ELSE (g % 6 + 1) * interval '1 hour' END AS ts
    FROM generate_series(1, 300) g WHERE g % 4 <> 0
    UNION ALL
    SELECT g, 1, '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes' + interval '10 minutes'
    FROM generate_series(10, 300, 10) g) x;
CREATE TEMP TABLE all_shipments AS
  SELECT order_id, carrier, ts, (row_number() OVER (ORDER BY ts, order_id) % 4)::int AS part FROM (
  SELECT g AS order_id, (ARRAY['post', 'courier', 'van'])[g % 3 + 1] AS carrier,
         '2026-01-01 00:00+00'::timestamptz + g * interval '30 minutes' +
           CASE WHEN g % 5 = 1 THEN interval '3 days' ELSE interval '7 hours' + (g % 9) * interval '6 hours' END AS ts
  FROM generate_series(1, 300) g WHERE g % 3 <> 0) x;

-- the three topics, 6 hours of event time at a time, each in time order,
-- and the views caught up after each: the watermark moves in small steps
CREATE TEMP TABLE shipments_stream AS SELECT 'shipments'::regclass::oid AS id;
CREATE FUNCTION pg_temp.send(slice int) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  lo timestamptz := '2026-01-01 00:00+00'::timestamptz + slice * interval '6 hours';
  hi timestamptz := lo + interval '6 hours';
BEGIN
  INSERT INTO orders SELECT * FROM all_orders WHERE ts >= lo AND ts < hi ORDER BY ts;
  INSERT INTO payments SELECT * FROM all_payments WHERE ts >= lo AND ts < hi ORDER BY ts;
  EXECUTE format('INSERT INTO %s SELECT * FROM all_shipments WHERE ts >= $1 AND ts < $2 ORDER BY ts',
                 (SELECT id::regclass FROM shipments_stream)) USING lo, hi;
  IF NOT (ssp.wait('chain') AND ssp.wait('chain_final') AND ssp.wait('star_final') AND ssp.wait('by_region')
          AND ssp.wait('chain_sliding')) THEN
    RAISE EXCEPTION 'the views did not catch up';
  END IF;
  -- and each has run a batch with the watermark its messages made (a batch
  -- of nothing follows a join's watermark within a second): the rows it
  -- lets go are gone before the next slice comes
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT bool_and(batch_watermark IS NOT DISTINCT FROM watermark) FROM ssp.continuous_views);
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN true;
END
$$;
CREATE FUNCTION pg_temp.wait_all() RETURNS boolean LANGUAGE sql AS $$
  SELECT ssp.wait('chain') AND ssp.wait('chain_final') AND ssp.wait('star_final') AND ssp.wait('by_region')
    AND ssp.wait('chain_sliding')
$$;
SELECT bool_and(pg_temp.send(k)) AS sent FROM generate_series(0, 11) k;
-- a stream renamed mid-stream: the views go on with the new name
ALTER FOREIGN TABLE shipments RENAME TO deliveries;
SELECT bool_and(pg_temp.send(k)) AS sent FROM generate_series(12, 37) k;
-- the watermark moved: rows that can be in no tuple any more went
SELECT (SELECT count(*) FROM chain_stream1) < 200 AS orders_went,
       (SELECT count(*) FROM chain_stream2) < 200 AS payments_went;

-- a late event time in every partition of the three topics moves the
-- watermark past every bound: every window closes, every row goes
INSERT INTO orders (order_id, user_id, ts, part) SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 3) g;
INSERT INTO payments (order_id, amount, ts, part) SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 3) g;
INSERT INTO deliveries (order_id, carrier, ts, part) SELECT 0, 'none', '2027-01-01', g FROM generate_series(0, 3) g;
SELECT pg_temp.wait_all();
DO $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT bool_and(batch_watermark = '2027-01-01') FROM ssp.continuous_views);
    PERFORM pg_sleep(0.1);
  END LOOP;
END
$$;
SELECT view, watermark, batch_watermark FROM ssp.continuous_views ORDER BY view::text;
SELECT (SELECT count(*) FROM chain_stream1 WHERE ts < '2027-01-01') AS orders_kept,
       (SELECT count(*) FROM chain_stream2 WHERE ts < '2027-01-01') AS payments_kept,
       (SELECT count(*) FROM chain_stream3 WHERE ts < '2027-01-01') AS shipments_kept,
       (SELECT count(*) FROM star_final_stream3 WHERE ts < '2027-01-01') AS star_shipments_kept;

CREATE TEMP VIEW chain_plain AS
  SELECT o.order_id, p.amount, s.carrier, o.ts AS ots, p.ts AS pts, s.ts AS sts, o.user_id
  FROM all_orders o
    JOIN all_payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
    JOIN all_shipments s ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '2 days';
SELECT count(*) AS tuples, count(DISTINCT order_id) AS orders, sum(amount) AS paid FROM chain;
SELECT count(*) AS differences FROM
  ((SELECT * FROM chain EXCEPT ALL SELECT order_id, amount, carrier, ots, pts, sts FROM chain_plain)
   UNION ALL
   (SELECT order_id, amount, carrier, ots, pts, sts FROM chain_plain EXCEPT ALL SELECT * FROM chain)) d;
SELECT * FROM chain_sliding;
SELECT count(*) AS differences FROM
  ((SELECT * FROM chain_sliding EXCEPT ALL SELECT count(*), sum(amount) FROM chain_plain)
   UNION ALL
   (SELECT count(*), sum(amount) FROM chain_plain EXCEPT ALL SELECT * FROM chain_sliding)) d;
SELECT count(*) AS windows, sum(n) AS tuples FROM chain_final;
SELECT count(*) AS differences FROM
  ((SELECT * FROM chain_final
    EXCEPT ALL SELECT ssp.tumble(ots, '6 hours'), count(*), sum(amount), avg(sts - ots), max(carrier)
               FROM chain_plain GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(ots, '6 hours'), count(*), sum(amount), avg(sts - ots), max(carrier)
    FROM chain_plain GROUP BY 1
    EXCEPT ALL SELECT * FROM chain_final)) d;
CREATE TEMP VIEW star_plain AS
  SELECT p.ts AS pts, s.carrier
  FROM all_orders o
    JOIN all_payments p ON p.order_id = o.order_id AND o.ts <= p.ts AND p.ts < o.ts + interval '1 day'
    JOIN all_shipments s ON s.order_id = o.order_id AND o.ts + interval '2 days 12 hours' >= s.ts AND s.ts > o.ts;
SELECT count(*) AS windows, sum(n) AS tuples FROM star_final;
SELECT count(*) AS differences FROM
  ((SELECT * FROM star_final
    EXCEPT ALL SELECT ssp.tumble(pts, '6 hours'), count(*), count(DISTINCT carrier) FROM star_plain GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(pts, '6 hours'), count(*), count(DISTINCT carrier) FROM star_plain GROUP BY 1
    EXCEPT ALL SELECT * FROM star_final)) d;
SELECT count(*) AS windows, sum(n) AS tuple_windows FROM by_region;
SELECT count(*) AS differences FROM
  ((SELECT * FROM by_region
    EXCEPT ALL SELECT hw.w, g.region, count(*), count(DISTINCT c.user_id)
               FROM chain_plain c JOIN user_regions g USING (user_id)
                 CROSS JOIN LATERAL ssp.hop_windows(GREATEST(ots, pts, sts), '12 hours', '4 hours') hw(w)
               GROUP BY 1, 2)
   UNION ALL
   (SELECT hw.w, g.region, count(*), count(DISTINCT c.user_id)
    FROM chain_plain c JOIN user_regions g USING (user_id)
      CROSS JOIN LATERAL ssp.hop_windows(GREATEST(ots, pts, sts), '12 hours', '4 hours') hw(w)
    GROUP BY 1, 2
    EXCEPT ALL SELECT * FROM by_region)) d;
-- the streams' late rows only: no tuple is ever late
SELECT view, status, late_events, dead_letters, last_error FROM ssp.views ORDER BY view::text;

-- reset: the view and its buffers empty, read again from the earliest
-- offsets in a few large batches: the same tuples
SELECT ssp.reset('chain');
SELECT ssp.wait('chain');
SELECT count(*) AS differences FROM
  ((SELECT * FROM chain EXCEPT ALL SELECT order_id, amount, carrier, ots, pts, sts FROM chain_plain)
   UNION ALL
   (SELECT order_id, amount, carrier, ots, pts, sts FROM chain_plain EXCEPT ALL SELECT * FROM chain)) d;
-- a view dropped takes its buffers with it
DROP VIEW chain;
SELECT count(*) FROM pg_class WHERE relname ~ '^chain_(stream[123]|mrel|query)$';

DROP SERVER kafka CASCADE;
DROP TABLE user_regions;
