-- Temporal joins: a stream joined with a changelog, each row of the stream
-- with the version of its key current at the row's event time (the latest
-- at or before it, by time and then log order; none after a delete).
-- Versions come out of step with the rows and with each other's times;
-- each view must equal the plain query over the same messages.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic tj_orders_ :run
CREATE FOREIGN TABLE t_orders (order_id bigint, currency text, amount numeric, ts timestamptz,
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic tj_rates_ :run
CREATE FOREIGN TABLE t_rates (currency text, rate numeric, ts timestamptz OPTIONS (meta 'timestamp'),
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', key 'currency', changelog 'upsert');
-- the same topic, raw: deletes (null values), a version without a key, and
-- the log order
CREATE FOREIGN TABLE t_rates_raw (currency text, v text, ts timestamptz OPTIONS (meta 'timestamp'),
    part int OPTIONS (meta 'partition'), off bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'text', key 'currency');

-- refused, each with its reason
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate FROM t_rates r JOIN t_orders o ON r.currency = o.currency AND r.ts <= o.ts;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate FROM t_orders o JOIN t_rates r ON r.currency = o.currency;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate FROM t_orders o JOIN t_rates r
    ON r.currency = o.currency AND r.ts <= o.ts + interval '1 hour';
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate FROM t_orders o JOIN t_rates r ON r.rate > 1 AND r.ts <= o.ts;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate FROM t_orders o JOIN t_rates r ON r.currency = r.currency AND r.ts <= o.ts;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(r.ts, '1 hour'), count(*) FROM t_orders o JOIN t_rates r
    ON r.currency = o.currency AND r.ts <= o.ts GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, _ssp_v.rate FROM t_orders o JOIN t_rates _ssp_v
    ON _ssp_v.currency = o.currency AND _ssp_v.ts <= o.ts;
-- a delete has no value, so no time of its own: the changelog's event
-- time must be the messages' timestamp
CREATE FOREIGN TABLE t_rates_valuetime (currency text, rate numeric, ts timestamptz)
  SERVER kafka OPTIONS (topic 'x', key 'currency', changelog 'upsert', timestamp 'ts');
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate FROM t_orders o JOIN t_rates_valuetime r ON r.currency = o.currency AND r.ts <= o.ts;
DROP FOREIGN TABLE t_rates_valuetime;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2) AS
  SELECT o.order_id, r.rate FROM t_orders o JOIN t_rates r ON r.currency = o.currency AND r.ts <= o.ts;

-- settled: whether a batch of view v began with watermark w or later (the
-- rows before w have gone then), within 30 s
CREATE FUNCTION pg_temp.settled(v regclass, w timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    IF (SELECT batch_watermark >= w FROM ssp.continuous_views WHERE view = v) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END
$$;

-- failed: whether each of views vs has a last error, within 30 s
CREATE FUNCTION pg_temp.failed(vs regclass[]) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    IF (SELECT bool_and(last_error IS NOT NULL) FROM ssp.views WHERE view = ANY (vs)) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END
$$;

-- both topics exist before the views read them
INSERT INTO t_orders VALUES (-1, 'EUR', 0, '2025-12-31', 0);
INSERT INTO t_rates VALUES ('USD', 0.90, '2026-01-01 00:00+00', 0);

-- each order converted at the rate of its time; every order, with the rate
-- of its time if below 100 (a version that fails ON is no match: an older
-- one is not taken instead); converted per hour, strictly before the order
CREATE VIEW priced WITH (ssp.continuous) AS
  SELECT o.order_id, o.currency, o.amount * r.rate AS converted, r.ts AS rate_ts
  FROM t_orders o JOIN t_rates r ON r.currency = o.currency AND r.ts <= o.ts
  WHERE o.order_id > 0;
CREATE VIEW rated_orders WITH (ssp.continuous) AS
  SELECT o.order_id, r.rate
  FROM t_orders o LEFT JOIN t_rates r ON o.currency = r.currency AND o.ts >= r.ts AND r.rate < 100
  WHERE o.order_id > 0;
CREATE VIEW priced_hourly WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS orders, sum(o.amount * r.rate) AS converted
  FROM t_orders o JOIN t_rates r ON r.currency = o.currency AND r.ts < o.ts
  WHERE o.order_id > 0 GROUP BY 1;
SELECT buffers FROM ssp.continuous_views WHERE view = 'priced'::regclass;
\d priced_right

-- each currency's versions in a partition of its own; orders in all four.
-- USD, GBP, JPY and CHF rates, CHF twice at one time (the later in the log
-- counts), and orders to 02:00
INSERT INTO t_rates VALUES ('GBP', 1.15, '2026-01-01 00:30+00', 1), ('JPY', 0.006, '2026-01-01 00:00+00', 2),
  ('CHF', 1.05, '2026-01-01 01:00+00', 3), ('CHF', 1.06, '2026-01-01 01:00+00', 3);
CREATE TEMP VIEW order_gen AS
  SELECT g AS order_id, (ARRAY['USD', 'GBP', 'JPY', 'CHF', 'EUR'])[g % 5 + 1] AS currency,
         g * 10 AS amount, '2026-01-01 00:00+00'::timestamptz + g * interval '10 minutes' AS ts, g % 4 AS part
  FROM generate_series(1, 24) g;
INSERT INTO t_orders SELECT * FROM order_gen WHERE order_id <= 12;
SELECT ssp.wait('priced'), ssp.wait('rated_orders'), ssp.wait('priced_hourly');
-- rates out of step: USD at 01:00, then at 00:30 after it; JPY deleted at
-- 01:30; CHF jumps to 150; and a version without a key: a dead letter
INSERT INTO t_rates VALUES ('USD', 0.92, '2026-01-01 01:00+00', 0), ('USD', 0.91, '2026-01-01 00:30+00', 0),
  ('GBP', 1.20, '2026-01-01 02:00+00', 1), ('CHF', 150, '2026-01-01 02:00+00', 3);
INSERT INTO t_rates_raw (currency, v, ts, part) VALUES ('JPY', NULL, '2026-01-01 01:30+00', 2),
  (NULL, '{"rate": 2}', '2026-01-01 01:30+00', 2);
SELECT ssp.wait('priced'), ssp.wait('rated_orders'), ssp.wait('priced_hourly');
-- the watermark is 01:00: the orders before it have gone, each with its
-- rate, and the others wait
SELECT pg_temp.settled('rated_orders', '2026-01-01 01:00+00');
SELECT count(*) AS waiting, min(ts) AS first FROM rated_orders_left;
SELECT count(*) AS rated FROM rated_orders;
-- JPY comes back at 03:00, USD moves at 02:30, and the other orders
INSERT INTO t_rates VALUES ('JPY', 0.0065, '2026-01-01 03:00+00', 2), ('USD', 0.95, '2026-01-01 02:30+00', 0);
INSERT INTO t_orders SELECT * FROM order_gen WHERE order_id > 12;
SELECT ssp.wait('priced'), ssp.wait('rated_orders'), ssp.wait('priced_hourly');
-- a time of 2027 in every partition of both topics: every order goes
INSERT INTO t_orders SELECT 0, 'ZZZ', 0, '2027-01-01', g FROM generate_series(0, 3) g;
INSERT INTO t_rates SELECT 'ZZZ', 1, '2027-01-01', g FROM generate_series(0, 3) g;
SELECT ssp.wait('priced'), ssp.wait('rated_orders'), ssp.wait('priced_hourly');
SELECT pg_temp.settled(v, '2027-01-01') FROM unnest('{priced,rated_orders,priced_hourly}'::regclass[]) v;

-- the plain query: each order with the latest version of its currency at
-- or before its time (by time, then offset), unless a delete
CREATE TEMP TABLE all_orders AS SELECT * FROM t_orders WHERE order_id > 0;
CREATE TEMP TABLE all_rates AS
  SELECT currency, (v::jsonb ->> 'rate')::numeric AS rate, v IS NULL AS deleted, ts, off
  FROM t_rates_raw WHERE currency IS NOT NULL;
CREATE TEMP VIEW as_of AS
  SELECT o.*, v.rate, v.deleted, v.ts AS rate_ts FROM all_orders o LEFT JOIN LATERAL
    (SELECT * FROM all_rates r WHERE r.currency = o.currency AND r.ts <= o.ts
     ORDER BY r.ts DESC, r.off DESC LIMIT 1) v ON true;
CREATE TEMP VIEW before AS
  SELECT o.*, v.rate, v.deleted FROM all_orders o LEFT JOIN LATERAL
    (SELECT * FROM all_rates r WHERE r.currency = o.currency AND r.ts < o.ts
     ORDER BY r.ts DESC, r.off DESC LIMIT 1) v ON true;
SELECT * FROM priced ORDER BY order_id;
CREATE TEMP VIEW priced_differences AS
SELECT count(*) AS differences FROM
  ((SELECT * FROM priced EXCEPT ALL
    SELECT order_id, currency, amount * rate, rate_ts FROM as_of WHERE NOT deleted)
   UNION ALL
   (SELECT order_id, currency, amount * rate, rate_ts FROM as_of WHERE NOT deleted
    EXCEPT ALL SELECT * FROM priced)) d;
SELECT * FROM priced_differences;
SELECT count(*) AS orders, count(rate) AS rated FROM rated_orders;
SELECT count(*) AS differences FROM
  ((SELECT * FROM rated_orders EXCEPT ALL
    SELECT order_id, CASE WHEN NOT deleted AND rate < 100 THEN rate END FROM as_of)
   UNION ALL
   (SELECT order_id, CASE WHEN NOT deleted AND rate < 100 THEN rate END FROM as_of
    EXCEPT ALL SELECT * FROM rated_orders)) d;
SELECT * FROM priced_hourly ORDER BY hour;
SELECT count(*) AS differences FROM
  ((SELECT * FROM priced_hourly EXCEPT ALL
    SELECT ssp.tumble(ts, '1 hour'), count(*), sum(amount * rate) FROM before WHERE NOT deleted GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(ts, '1 hour'), count(*), sum(amount * rate) FROM before WHERE NOT deleted GROUP BY 1
    EXCEPT ALL SELECT * FROM priced_hourly)) d;
-- what waits: the orders of 2027; of each currency, the latest version
-- before the watermark, and those of 2027
SELECT count(*) AS orders_waiting FROM rated_orders_left;
SELECT currency, rate, ts FROM priced_right ORDER BY currency, ts, _ssp_seq;
SELECT view, status, late_events, dead_letters, last_error FROM ssp.views ORDER BY view::text;
SELECT view, error FROM ssp.dead_letters ORDER BY view::text;

-- reset replays both topics: the same rows
SELECT ssp.reset('priced');
SELECT ssp.wait('priced');
SELECT pg_temp.settled('priced', '2027-01-01');
SELECT * FROM priced_differences;

-- Debezium's envelope on the right: creates, an update, a delete (op d,
-- then its tombstone), a key back; each login with its account's owner
-- at the time, or none
\set topic tj_accounts_ :run
CREATE FOREIGN TABLE t_accounts (id int, owner text, ts timestamptz OPTIONS (meta 'timestamp'),
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'debezium', key 'id');
CREATE FOREIGN TABLE t_accounts_raw (k text, v text, ts timestamptz OPTIONS (meta 'timestamp'),
    part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text', key 'k');
\set topic tj_logins_ :run
CREATE FOREIGN TABLE t_logins (login int, id int, ts timestamptz, part int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
INSERT INTO t_accounts VALUES (1, 'ann', '2026-01-01 00:00+00', 0), (2, 'bob', '2026-01-01 00:00+00', 1);
INSERT INTO t_logins VALUES (0, 0, '2025-12-31', 0);
CREATE VIEW logins_owner WITH (ssp.continuous) AS
  SELECT l.login, l.id, a.owner FROM t_logins l LEFT JOIN t_accounts a ON a.id = l.id AND a.ts <= l.ts
  WHERE l.login > 0;
INSERT INTO t_accounts_raw VALUES
  ('{"id": 1}', '{"schema": {"type": "struct"}, "payload": {"before": {"id": 1, "owner": "ann"}, "after": {"id": 1, "owner": "cy"}, "op": "u"}}',
   '2026-01-01 02:00+00', 0),
  ('{"id": 2}', '{"before": {"id": 2, "owner": "bob"}, "after": null, "op": "d"}', '2026-01-01 01:00+00', 1),
  ('{"id": 2}', NULL, '2026-01-01 01:00+00', 1),
  ('{"id": 2}', '{"before": null, "after": {"id": 2, "owner": "dee"}, "op": "c"}', '2026-01-01 03:00+00', 1),
  ('{"id": 4}', '{"before": null, "after": {"id": 4, "owner": "eve"}, "op": "c"}', '2026-01-01 00:00+00', 2),
  ('{"id": 4}', '{"before": {"id": 4, "owner": "eve"}, "after": null, "op": "d"}', '2026-01-01 04:00+00', 2);
INSERT INTO t_logins VALUES (1, 1, '2026-01-01 00:30+00', 0), (2, 1, '2026-01-01 02:00+00', 1),
  (3, 2, '2026-01-01 00:59+00', 2), (4, 2, '2026-01-01 01:00+00', 3), (5, 2, '2026-01-01 02:59+00', 0),
  (6, 2, '2026-01-01 03:30+00', 1), (7, 3, '2026-01-01 03:30+00', 2);
INSERT INTO t_logins SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 3) g;
INSERT INTO t_accounts SELECT 0, 'x', '2027-01-01', g FROM generate_series(0, 3) g;
SELECT ssp.wait('logins_owner');
SELECT pg_temp.settled('logins_owner', '2027-01-01');
SELECT * FROM logins_owner ORDER BY login;
-- late: a version of June 2026, one of account 4 from before its delete,
-- and a login of January (the watermark is 2027): each counted late; the
-- login is not joined; the first version is kept for the logins after it,
-- and the second brings no deleted account back
INSERT INTO t_accounts VALUES (1, 'late', '2026-06-01', 0), (4, 'zed', '2026-01-01 02:00+00', 2);
INSERT INTO t_logins VALUES (8, 1, '2026-01-01 05:00+00', 2), (9, 1, '2027-02-01', 3), (10, 4, '2027-02-01', 3);
INSERT INTO t_logins SELECT 0, 0, '2027-03-01', g FROM generate_series(0, 3) g;
INSERT INTO t_accounts SELECT 0, 'x', '2027-03-01', g FROM generate_series(0, 3) g;
SELECT ssp.wait('logins_owner');
SELECT pg_temp.settled('logins_owner', '2027-03-01');
SELECT * FROM logins_owner WHERE login > 7 ORDER BY login;
SELECT late_events, dead_letters FROM ssp.views WHERE view = 'logins_owner'::regclass;
-- a row that waited cannot be applied (a division by zero for login 7):
-- no message is to blame, none goes to the dead letters; the view fails,
-- saying so, and tries again
CREATE VIEW logins_poison WITH (ssp.continuous) AS
  SELECT l.login, 10 / (l.id - 3) AS x, a.owner
  FROM t_logins l LEFT JOIN t_accounts a ON a.id = l.id AND a.ts <= l.ts WHERE l.login > 0;
SELECT pg_temp.failed('{logins_poison}');
SELECT dead_letters, last_error FROM ssp.views WHERE view = 'logins_poison'::regclass;
SELECT count(*) AS logins FROM logins_poison;
-- made again with a query that takes it: every login
DROP VIEW logins_poison;
CREATE VIEW logins_poison WITH (ssp.continuous) AS
  SELECT l.login, 10 / NULLIF(l.id - 3, 0) AS x, a.owner
  FROM t_logins l LEFT JOIN t_accounts a ON a.id = l.id AND a.ts <= l.ts WHERE l.login > 0;
SELECT ssp.wait('logins_poison');
SELECT pg_temp.settled('logins_poison', '2027-03-01');
SELECT * FROM logins_poison ORDER BY login;
SELECT dead_letters, last_error FROM ssp.views WHERE view = 'logins_poison'::regclass;
DROP VIEW logins_poison;

-- the right stream made a log under a temporal join, and a log made a
-- changelog under an interval join: each view fails, saying why, until the
-- option is set back
CREATE VIEW rate_pairs WITH (ssp.continuous) AS
  SELECT count(*) AS n FROM t_orders o JOIN t_rates_raw r
    ON r.currency = o.currency AND r.ts BETWEEN o.ts - interval '1 hour' AND o.ts;
SELECT ssp.wait('rate_pairs');
ALTER FOREIGN TABLE t_rates OPTIONS (DROP changelog);
ALTER FOREIGN TABLE t_rates_raw OPTIONS (ADD changelog 'upsert');
INSERT INTO t_orders VALUES (100, 'USD', 1, '2027-01-02', 0);
SELECT pg_temp.failed('{priced,rate_pairs}');
SELECT view, last_error FROM ssp.views WHERE view IN ('priced'::regclass, 'rate_pairs'::regclass)
  ORDER BY view::text;
ALTER FOREIGN TABLE t_rates OPTIONS (ADD changelog 'upsert');
ALTER FOREIGN TABLE t_rates_raw OPTIONS (DROP changelog);
SELECT ssp.wait('priced'), ssp.wait('rate_pairs');
SELECT view, last_error FROM ssp.views WHERE view IN ('priced'::regclass, 'rate_pairs'::regclass)
  ORDER BY view::text;
-- both streams renamed under the view: it goes on, and the order written
-- while it failed is joined with the rate of its time
ALTER FOREIGN TABLE t_rates RENAME TO t_fx;
ALTER FOREIGN TABLE t_orders RENAME TO t_sales;
INSERT INTO t_sales SELECT 0, 'ZZZ', 0, '2027-02-01', g FROM generate_series(0, 3) g;
INSERT INTO t_fx SELECT 'ZZZ', 1, '2027-02-01', g FROM generate_series(0, 3) g;
SELECT ssp.wait('priced');
SELECT pg_temp.settled('priced', '2027-02-01');
SELECT order_id, currency, converted FROM priced WHERE order_id = 100;
SELECT last_error FROM ssp.views WHERE view = 'priced'::regclass;

DROP SERVER kafka CASCADE;
