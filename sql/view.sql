-- Continuous views: what they refuse, what they maintain, and operating them.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic views_ :run
-- four partitions, each written (keyless rows would stick to a few, and an
-- empty partition has no offset row in some views)
\! "$SSP_SRC/test/create_topic" "views_$SSP_RUN_ID" 4 >/dev/null
CREATE FOREIGN TABLE orders (order_id bigint, customer_id bigint, region text,
    amount numeric, qty int, ts timestamptz,
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
CREATE TABLE customers (id bigint PRIMARY KEY, segment text);

-- refused: what cannot be maintained incrementally, and why
CREATE VIEW r WITH (ssp.continuous) AS SELECT DISTINCT ON (region) region, amount FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT DISTINCT region, count(*) FROM orders GROUP BY region;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region FROM orders ORDER BY region;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region FROM orders LIMIT 10;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region, row_number() OVER () FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region FROM orders WHERE amount > (SELECT max(amount) FROM orders);
CREATE VIEW r WITH (ssp.continuous) AS SELECT region FROM orders UNION SELECT 'x';
CREATE VIEW r WITH (ssp.continuous) AS WITH x AS (SELECT * FROM orders) SELECT region FROM x;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region, count(*) FROM orders GROUP BY ROLLUP (region);
CREATE VIEW r WITH (ssp.continuous) AS SELECT count(DISTINCT (customer_id, region)) FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT (customer_id, region) AS cr, count(*) FROM orders GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS SELECT count(*) FROM orders GROUP BY ROW(customer_id, region);
CREATE VIEW r WITH (ssp.continuous) AS SELECT string_agg(region, region) FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT array_agg(amount ORDER BY amount) FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2) AS SELECT json_agg(region) FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT generate_series(1, qty) FROM orders;
CREATE VIEW r WITH (ssp.continuous) AS SELECT c.segment, count(*) FROM customers c LEFT JOIN orders o ON c.id = o.customer_id GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS SELECT segment FROM customers;
CREATE OR REPLACE VIEW orders WITH (ssp.continuous) AS SELECT region FROM orders;
CREATE TEMP VIEW r WITH (ssp.continuous) AS SELECT region FROM orders;
CREATE TEMP TABLE tiers (region text, tier int);
CREATE VIEW r WITH (ssp.continuous) AS SELECT t.tier, count(*) FROM orders o JOIN tiers t ON t.region = o.region GROUP BY 1;
DROP TABLE tiers;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region FROM orders WITH CHECK OPTION;
-- refused: options
CREATE VIEW r WITH (ssp.continuous, ssp.batch_size = 0) AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.commit_interval = '2 hours') AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.commit_interval = 'soon') AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.on_error = 'ignore') AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.start = 'yesterday at noon') AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 0) AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 17) AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2, ssp.primary_key = 'order_id') AS
  SELECT order_id, region FROM orders;
CREATE VIEW r WITH (ssp.continuous, ssp.colour = 'blue') AS SELECT region FROM orders;
CREATE VIEW r WITH (ssp.continuous, security_barrier) AS SELECT region FROM orders;

-- views of each kind, over 5,000 orders produced before and after they start
INSERT INTO orders (order_id, customer_id, region, amount, qty, ts, p)
  SELECT g, g % 97, 'r' || g % 7, (g % 1000) * 0.25, g % 10, timestamptz '2024-01-01' + g * interval '1 s', g % 4
  FROM generate_series(1, 2500) g;
CREATE VIEW by_region WITH (ssp.continuous) AS
  SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, min(amount), max(amount)
  FROM orders WHERE amount > 0 GROUP BY region HAVING count(*) > 1;
CREATE VIEW by_region_bucket WITH (ssp.continuous, ssp.commit_interval = '10ms', ssp.batch_size = 100) AS
  SELECT region, qty % 3 AS bucket, count(*), sum(qty) AS units, stddev(qty) AS sd, var_pop(amount) AS vp,
         max(ts) AS latest, bool_and(amount < 200) AS all_small
  FROM orders GROUP BY region, bucket;
CREATE VIEW totals WITH (ssp.continuous) AS
  SELECT count(*) AS n, sum(amount) / count(*) AS mean, bool_or(qty > 8) AS any_big,
         round(stddev_samp(amount::float8)::numeric, 6) AS sd,
         count(*) FILTER (WHERE qty > 5) AS many,
         round(var_pop(amount::float8) FILTER (WHERE qty > 5)::numeric, 6) AS vp_many
  FROM orders;
CREATE VIEW big (id, region, value) WITH (ssp.continuous) AS
  SELECT order_id, upper(region), amount * qty FROM orders WHERE amount * qty > 1000;
\d+ by_region
-- a name taken: refused as CREATE VIEW refuses it, before ssp makes anything
CREATE VIEW big WITH (ssp.continuous) AS SELECT order_id FROM orders;
CREATE VIEW orders WITH (ssp.continuous) AS SELECT order_id FROM orders;
INSERT INTO orders (order_id, customer_id, region, amount, qty, ts, p)
  SELECT g, g % 97, 'r' || g % 7, (g % 1000) * 0.25, g % 10, timestamptz '2024-01-01' + g * interval '1 s', g % 4
  FROM generate_series(2501, 5000) g;
SELECT ssp.wait('by_region'), ssp.wait('by_region_bucket'), ssp.wait('totals'), ssp.wait('big');
-- the running worker reports what it writes, so that autovacuum and
-- autoanalyze see the view's table (within a second or so)
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN (SELECT n_tup_ins FROM pg_stat_user_tables WHERE relid = 'by_region_mrel'::regclass) > 0;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT n_tup_ins > 0 AS reported
FROM pg_stat_user_tables WHERE relid = 'by_region_mrel'::regclass;

-- each view equals its query run over the whole stream (EXCEPT ALL both ways)
CREATE TEMP TABLE all_orders AS SELECT * FROM orders;
SELECT count(*) FROM all_orders;
(SELECT * FROM by_region EXCEPT ALL
 SELECT region, count(*), sum(amount), avg(amount), min(amount), max(amount)
 FROM all_orders WHERE amount > 0 GROUP BY region HAVING count(*) > 1)
UNION ALL
(SELECT region, count(*), sum(amount), avg(amount), min(amount), max(amount)
 FROM all_orders WHERE amount > 0 GROUP BY region HAVING count(*) > 1
 EXCEPT ALL SELECT * FROM by_region);
(SELECT * FROM by_region_bucket EXCEPT ALL
 SELECT region, qty % 3, count(*), sum(qty), stddev(qty), var_pop(amount), max(ts), bool_and(amount < 200)
 FROM all_orders GROUP BY 1, 2)
UNION ALL
(SELECT region, qty % 3, count(*), sum(qty), stddev(qty), var_pop(amount), max(ts), bool_and(amount < 200)
 FROM all_orders GROUP BY 1, 2
 EXCEPT ALL SELECT * FROM by_region_bucket);
SELECT * FROM totals;
SELECT count(*), sum(amount) / count(*), bool_or(qty > 8), round(stddev_samp(amount::float8)::numeric, 6),
       count(*) FILTER (WHERE qty > 5), round(var_pop(amount::float8) FILTER (WHERE qty > 5)::numeric, 6)
  FROM all_orders;
(SELECT * FROM big EXCEPT ALL
 SELECT order_id, upper(region), amount * qty FROM all_orders WHERE amount * qty > 1000)
UNION ALL
(SELECT order_id, upper(region), amount * qty FROM all_orders WHERE amount * qty > 1000
 EXCEPT ALL SELECT * FROM big);

-- operating
SELECT view, status, processed, dead_letters, lag, last_error FROM ssp.views ORDER BY view::text;
SELECT view, count(*) AS partitions, sum(next_offset) AS consumed FROM ssp.offsets GROUP BY view ORDER BY view::text;
SELECT ssp.pause('big');
SELECT view, status FROM ssp.views WHERE view = 'big'::regclass;
INSERT INTO orders (order_id, region, amount, qty) VALUES (5001, 'r1', 500, 9);
SELECT ssp.wait('big', '1 s');
SELECT count(*) FROM big;
SELECT ssp.resume('big');
SELECT ssp.wait('big');
SELECT count(*) FROM big;
-- a timeout past int64's microseconds is a long one (it was negative: false)
SELECT ssp.wait('big', '1000000 years');
-- a topic not made yet holds nothing to wait for (it was an error)
\set unmade_topic views_unmade_ :run
CREATE FOREIGN TABLE unmade (a int) SERVER kafka OPTIONS (topic :'unmade_topic');
CREATE VIEW unmade_n WITH (ssp.continuous) AS SELECT count(*) AS n FROM unmade;
SELECT ssp.wait('unmade_n', '5 s');
DROP VIEW unmade_n;
-- once the topic is made, a view that waited for it says it runs as it
-- applies its first batch (a probe saw "waiting for broker" throughout a
-- long first batch, with JIT compiling at each split of it)
CREATE FUNCTION slow_id(a int) RETURNS int IMMUTABLE LANGUAGE plpgsql
  AS $$ BEGIN PERFORM pg_sleep(2); RETURN a; END $$;
CREATE VIEW unmade_slow WITH (ssp.continuous) AS SELECT count(*) AS n, sum(slow_id(a)) AS s FROM unmade;
DO $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    EXIT WHEN (SELECT status = 'waiting for broker' FROM ssp.views WHERE view = 'unmade_slow'::regclass);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT status FROM ssp.views WHERE view = 'unmade_slow'::regclass;
INSERT INTO unmade VALUES (7);
DO $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    EXIT WHEN EXISTS (SELECT FROM pg_stat_activity a JOIN ssp.views v ON a.pid = v.worker_pid
                      WHERE v.view = 'unmade_slow'::regclass AND a.query = 'applying a batch');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT status IN ('running', 'catching up') AS says_it_runs FROM ssp.views WHERE view = 'unmade_slow'::regclass;
SELECT ssp.wait('unmade_slow');
SELECT * FROM unmade_slow;
DROP VIEW unmade_slow;
DROP FUNCTION slow_id(int);
DROP FOREIGN TABLE unmade;
-- in the transaction that changed the view, ssp.wait is an error, not a
-- wait to its timeout: the worker goes on only once it ends
BEGIN;
SELECT ssp.reset('big');
SELECT ssp.wait('big', '10 s');
ROLLBACK;
BEGIN;
CREATE VIEW made_here WITH (ssp.continuous) AS SELECT count(*) AS n FROM orders;
SELECT ssp.wait('made_here', '10 s');
ROLLBACK;
SELECT ssp.pause('big');
INSERT INTO orders (order_id, region, amount, qty) VALUES (5002, 'r1', 1, 1);
BEGIN;
SELECT ssp.resume('big');
SELECT ssp.wait('big', '10 s');
ROLLBACK;
SELECT view, status FROM ssp.views WHERE view = 'big'::regclass;
SELECT ssp.resume('big');
SELECT ssp.wait('big');
-- rewind and replay
SELECT ssp.reset('by_region');
SELECT count(*) FROM by_region;
SELECT ssp.wait('by_region');
SELECT sum(n) FROM by_region;
SELECT view, processed FROM ssp.views WHERE view = 'by_region'::regclass;
-- start at the end: nothing counted until new messages (a view without
-- GROUP BY has its one row, as its query over no rows: count 0)
SELECT ssp.reset('totals', 'latest');
SELECT ssp.wait('totals');
SELECT * FROM totals;
INSERT INTO orders (order_id, region, amount, qty) VALUES (5002, 'r1', 10, 1);
SELECT ssp.wait('totals');
SELECT n, mean FROM totals;
CREATE VIEW late_starter WITH (ssp.continuous, ssp.start = 'latest') AS SELECT count(*) FROM orders;
INSERT INTO orders (order_id, region, amount, qty) VALUES (5003, 'r1', 10, 1);
SELECT ssp.wait('late_starter');
SELECT * FROM late_starter;
-- renaming keeps it working
ALTER VIEW big RENAME TO big_orders;
INSERT INTO orders (order_id, region, amount, qty) VALUES (5004, 'r2', 999, 9);
SELECT ssp.wait('big_orders');
SELECT * FROM big_orders WHERE id = 5004;
-- only the owner operates a view
CREATE ROLE ssp_reader;
-- a role that may not read it is told so (it was "not a continuous view")
SET ROLE ssp_reader;
SELECT ssp.wait('big_orders');
SELECT ssp.pause('big_orders');
RESET ROLE;
GRANT SELECT ON big_orders TO ssp_reader;
SET ROLE ssp_reader;
SELECT ssp.wait('big_orders');
SELECT ssp.pause('big_orders');
SELECT ssp.reset('big_orders');
RESET ROLE;
-- a view's worker runs as its owner: it reads only what the owner may
CREATE FUNCTION wait_for_error(v regclass) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..300 LOOP
    IF (SELECT last_error FROM ssp.views WHERE view = v) IS NOT NULL THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
CREATE ROLE ssp_owner;
GRANT CREATE ON SCHEMA public TO ssp_owner;
GRANT SELECT ON orders TO ssp_owner;
SET ROLE ssp_owner;
CREATE VIEW owned WITH (ssp.continuous) AS SELECT count(*) AS n FROM orders;
SELECT ssp.wait('owned');
SELECT n > 5000 FROM owned;
RESET ROLE;
REVOKE SELECT ON orders FROM ssp_owner;
INSERT INTO orders (order_id, region, amount, qty) VALUES (5005, 'r2', 1, 1);
SELECT ssp.wait('owned', '2 s');
SELECT wait_for_error('owned');
SELECT last_error FROM ssp.views WHERE view = 'owned'::regclass;
DROP VIEW owned;
-- and it cannot become the worker's superuser session again
GRANT SELECT ON orders TO ssp_owner;
CREATE FUNCTION escalate(x bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RESET ROLE;
  RETURN x;
END $$;
SET ROLE ssp_owner;
CREATE VIEW sneaky WITH (ssp.continuous) AS SELECT escalate(order_id) AS id FROM orders;
RESET ROLE;
SELECT wait_for_error('sneaky');
SELECT last_error FROM ssp.views WHERE view = 'sneaky'::regclass;
DROP VIEW sneaky;
DROP FUNCTION escalate(bigint);
REVOKE SELECT ON orders FROM ssp_owner;
-- functions on something that is not a continuous view
SELECT ssp.wait('customers');
SELECT ssp.pause('customers');
-- the parts of a view go with it
DROP TABLE big_mrel;
DROP VIEW big_orders;
SELECT count(*) FROM ssp.continuous_views WHERE view::text = 'big_orders';
SELECT count(*) FROM pg_class WHERE relname = 'big_mrel';
DROP FOREIGN TABLE orders;

-- poison messages: each bad one in ssp.dead_letters, every good one in the view
\set topic views_dl_ :run
CREATE FOREIGN TABLE dl (id bigint, region text, amount numeric, qty int)
  SERVER kafka OPTIONS (topic :'topic');
CREATE FOREIGN TABLE dl_raw (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE VIEW per_unit WITH (ssp.continuous, ssp.batch_size = 50) AS
  SELECT region, count(*), sum(amount / qty) AS per_unit, max(id) AS last_id FROM dl GROUP BY region;
CREATE VIEW dl_count WITH (ssp.continuous, ssp.on_error = 'skip') AS SELECT count(*) FROM dl;
INSERT INTO dl_raw
  SELECT CASE WHEN g = 10 THEN '{"id": 10, "region": "a", "amount": 1'
              WHEN g = 20 THEN '{"id": "twenty", "region": "a", "amount": 1, "qty": 1}'
              WHEN g = 30 THEN '{"id": 30, "region": "a", "amount": 1, "qty": 0}'
              WHEN g = 40 THEN 'not json at all'
              ELSE format('{"id": %s, "region": "%s", "amount": %s, "qty": %s}', g, 'r' || g % 3, g, 1 + g % 4)
         END, 0
  FROM generate_series(1, 100) g;
SELECT ssp.wait('per_unit'), ssp.wait('dl_count');
-- on_error 'stop': the first bad message stops the view, and says where
CREATE VIEW dl_stop WITH (ssp.continuous, ssp.on_error = 'stop') AS SELECT max(id) FROM dl;
SELECT wait_for_error('dl_stop');
SELECT last_error FROM ssp.views WHERE view = 'dl_stop'::regclass;
-- nothing of the failed batch applied: the view's one row is as over no rows
SELECT * FROM dl_stop;
DROP VIEW dl_stop;
SELECT view, partition, "offset", error FROM ssp.dead_letters ORDER BY view::text, "offset";
-- dead letters are whole messages: not shown to a role that may read the
-- view alone, nor with some of the stream's columns; with them all, they are
GRANT SELECT ON per_unit TO ssp_reader;
GRANT SELECT (id, region) ON dl TO ssp_reader;
SET ROLE ssp_reader;
SELECT count(*) AS views FROM ssp.views WHERE view = 'per_unit'::regclass;
SELECT count(*) AS dead_letters FROM ssp.dead_letters;
RESET ROLE;
GRANT SELECT ON dl TO ssp_reader;
SET ROLE ssp_reader;
SELECT view, "offset", convert_from(payload, 'UTF8') AS payload FROM ssp.dead_letters ORDER BY "offset";
RESET ROLE;
REVOKE ALL ON per_unit, dl FROM ssp_reader;
SELECT view, processed, dead_letters FROM ssp.views ORDER BY view::text;
SELECT * FROM per_unit ORDER BY region;
-- the same over the good messages, read leniently
CREATE FOREIGN TABLE dl_lenient (id bigint, region text, amount numeric, qty int)
  SERVER kafka OPTIONS (topic :'topic', on_error 'null');
SELECT region, count(*), sum(amount / qty), max(id) FROM dl_lenient
  WHERE id IS NOT NULL AND qty <> 0 GROUP BY region ORDER BY region;
-- a view decodes only the columns it reads: dl_count reads none, so the
-- message with a wrong id is not a dead letter for it
SELECT columns FROM ssp.continuous_views WHERE view IN ('per_unit'::regclass, 'dl_count'::regclass) ORDER BY view::text;
SELECT * FROM dl_count;
-- a value a cast cannot take is a dead letter whatever its SQLSTATE (NaN
-- or infinity to an integer is 0A000, "not supported"), not a view stopped
\set topic views_nan_ :run
CREATE FOREIGN TABLE nan_s (k text, n numeric) SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW nan_v WITH (ssp.continuous) AS SELECT k, sum(n::int) FROM nan_s GROUP BY k;
INSERT INTO nan_s VALUES ('a', 1), ('a', 'NaN'), ('b', 2), ('b', 'Infinity'), ('b', 3);
SELECT ssp.wait('nan_v', '30 s');
SELECT status, processed, dead_letters FROM ssp.views WHERE view = 'nan_v'::regclass;
SELECT error FROM ssp.dead_letters WHERE view = 'nan_v'::regclass ORDER BY error;
SELECT * FROM nan_v ORDER BY k;
DROP VIEW nan_v;
DROP FOREIGN TABLE nan_s;
-- a message the view's query refuses for what it holds, in a subquery
-- (more than one row: 21000) or in a function of the user's (RAISE:
-- P0001): a dead letter, not a view stopped
\set topic views_refused_ :run
CREATE TABLE refused_seg (id int, seg text);
INSERT INTO refused_seg VALUES (1, 'x'), (1, 'y'), (2, 'z');
CREATE FUNCTION refused_check(n int) RETURNS int IMMUTABLE LANGUAGE plpgsql
  AS $$ BEGIN IF n = 3 THEN RAISE EXCEPTION 'three is refused'; END IF; RETURN n; END $$;
CREATE FOREIGN TABLE refused_s (id int) SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW refused_v WITH (ssp.continuous) AS
  SELECT refused_check(s.id) AS id, (SELECT seg FROM refused_seg c WHERE c.id = s.id) AS seg FROM refused_s s;
INSERT INTO refused_s VALUES (1), (2), (3), (4);
SELECT ssp.wait('refused_v', '30 s');
SELECT status, processed, dead_letters FROM ssp.views WHERE view = 'refused_v'::regclass;
SELECT error FROM ssp.dead_letters WHERE view = 'refused_v'::regclass ORDER BY error;
SELECT * FROM refused_v ORDER BY id;
DROP VIEW refused_v;
DROP FOREIGN TABLE refused_s;
DROP TABLE refused_seg;
DROP FUNCTION refused_check(int);
-- an index goes on the view's table
CREATE INDEX ON per_unit (region);
-- the regression family and bitwise aggregates: Postgres's own transition
-- states, merged across batches (one worker) and across workers (two)
CREATE VIEW stats WITH (ssp.continuous, ssp.batch_size = 700) AS
  SELECT region, corr(amount, qty) AS c, covar_pop(amount, qty) AS cp, covar_samp(amount, qty) AS cs,
         regr_slope(amount, qty) AS slope, regr_intercept(amount, qty) AS icpt, regr_r2(amount, qty) AS r2,
         regr_avgx(amount, qty) AS ax, regr_avgy(amount, qty) AS ay, regr_sxx(amount, qty) AS sxx,
         regr_syy(amount, qty) AS syy, regr_sxy(amount, qty) AS sxy, regr_count(amount, qty) AS rc,
         bit_and(qty) AS band, bit_or(qty) AS bor, bit_xor(order_id) AS bxor,
         regr_slope(amount, qty) FILTER (WHERE qty > 2) AS slope3
  FROM orders GROUP BY region;
CREATE VIEW stats_par WITH (ssp.continuous, ssp.parallelism = 2) AS
  SELECT region, corr(amount, qty) AS c, regr_slope(amount, qty) AS slope, regr_count(amount, qty) AS rc,
         bit_xor(order_id) AS bxor, bit_or(qty) AS bor
  FROM orders GROUP BY region;
SELECT ssp.wait('stats'), ssp.wait('stats_par');
CREATE FUNCTION r6(float8) RETURNS numeric LANGUAGE sql AS 'SELECT round($1::numeric, 6)';
SELECT count(*) AS regions,
       count(*) FILTER (WHERE (r6(s.c), r6(s.cp), r6(s.cs), r6(s.slope), r6(s.icpt), r6(s.r2), r6(s.ax), r6(s.ay),
                               r6(s.sxx), r6(s.syy), r6(s.sxy), s.rc, s.band, s.bor, s.bxor, r6(s.slope3))
                         IS NOT DISTINCT FROM
                              (r6(q.c), r6(q.cp), r6(q.cs), r6(q.slope), r6(q.icpt), r6(q.r2), r6(q.ax), r6(q.ay),
                               r6(q.sxx), r6(q.syy), r6(q.sxy), q.rc, q.band, q.bor, q.bxor, r6(q.slope3))) AS same
FROM stats s JOIN (
  SELECT region, corr(amount, qty) AS c, covar_pop(amount, qty) AS cp, covar_samp(amount, qty) AS cs,
         regr_slope(amount, qty) AS slope, regr_intercept(amount, qty) AS icpt, regr_r2(amount, qty) AS r2,
         regr_avgx(amount, qty) AS ax, regr_avgy(amount, qty) AS ay, regr_sxx(amount, qty) AS sxx,
         regr_syy(amount, qty) AS syy, regr_sxy(amount, qty) AS sxy, regr_count(amount, qty) AS rc,
         bit_and(qty) AS band, bit_or(qty) AS bor, bit_xor(order_id) AS bxor,
         regr_slope(amount, qty) FILTER (WHERE qty > 2) AS slope3
  FROM orders GROUP BY region) q USING (region);
SELECT count(*) AS regions,
       count(*) FILTER (WHERE (r6(s.c), r6(s.slope), s.rc, s.bxor, s.bor)
                         IS NOT DISTINCT FROM (r6(q.c), r6(q.slope), q.rc, q.bxor, q.bor)) AS same
FROM stats_par s JOIN (
  SELECT region, corr(amount, qty) AS c, regr_slope(amount, qty) AS slope, regr_count(amount, qty) AS rc,
         bit_xor(order_id) AS bxor, bit_or(qty) AS bor
  FROM orders GROUP BY region) q USING (region);
DROP VIEW stats, stats_par;
DROP FUNCTION r6;

-- parallel workers: each reads its share of the partitions (p % 3) and
-- keeps its own row per group, merged when the view is read
CREATE VIEW par_region WITH (ssp.continuous, ssp.parallelism = 3, ssp.batch_size = 300) AS
  SELECT region, count(*) AS n, sum(amount) AS total, avg(qty) AS mean_qty, max(ts) AS latest
  FROM orders GROUP BY region;
CREATE VIEW par_all WITH (ssp.continuous, ssp.parallelism = 2) AS
  SELECT count(*) AS n, min(amount), stddev(qty) AS sd FROM orders;
CREATE VIEW par_copy WITH (ssp.continuous, ssp.parallelism = 4) AS
  SELECT order_id, region FROM orders WHERE qty > 5;
SELECT ssp.wait('par_region'), ssp.wait('par_all'), ssp.wait('par_copy');
(SELECT * FROM par_region EXCEPT ALL
 SELECT region, count(*), sum(amount), avg(qty), max(ts) FROM orders GROUP BY region)
UNION ALL
(SELECT region, count(*), sum(amount), avg(qty), max(ts) FROM orders GROUP BY region
 EXCEPT ALL SELECT * FROM par_region);
SELECT (SELECT row(n, min, sd) FROM par_all) = (SELECT row(count(*), min(amount), stddev(qty)) FROM orders) AS same;
SELECT count(*) FROM ((SELECT * FROM par_copy EXCEPT ALL SELECT order_id, region FROM orders WHERE qty > 5)
  UNION ALL (SELECT order_id, region FROM orders WHERE qty > 5 EXCEPT ALL SELECT * FROM par_copy)) d;
-- one row in ssp.views per view; a worker per part
SELECT view, status, processed FROM ssp.views WHERE view::text LIKE 'par_%' ORDER BY view::text;
SELECT view::regclass, count(*) AS workers FROM ssp.worker_status()
  WHERE view::regclass::text LIKE 'par_%' GROUP BY 1 ORDER BY 1;
-- each worker its own rows: a region's rows come from each worker that
-- read a message (the producer may put a whole INSERT's messages in one
-- partition: a part with none has no rows)
SELECT count(DISTINCT _w) = (SELECT count(DISTINCT p % 3) FROM orders) AS each_part FROM par_region_mrel;
-- reset replays through all of them
SELECT ssp.reset('par_region');
SELECT ssp.wait('par_region');
SELECT sum(n) = (SELECT count(*) FROM orders) AS all_counted FROM par_region;
DROP VIEW par_region, par_all, par_copy;

-- a null group key is a group of its own, merged across batches like any
-- other (ten messages a batch)
\set topic views_null_ :run
CREATE FOREIGN TABLE tagged (tag text, n int, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW by_tag WITH (ssp.continuous, ssp.batch_size = 10) AS
  SELECT tag, n % 2 AS odd, count(*), sum(n) FROM tagged GROUP BY tag, odd;
INSERT INTO tagged SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE 't' || g % 2 END,
                          CASE WHEN g % 5 = 0 THEN NULL ELSE g END, 0
  FROM generate_series(1, 100) g;
SELECT ssp.wait('by_tag');
SELECT * FROM by_tag ORDER BY tag, odd;
(SELECT * FROM by_tag EXCEPT ALL SELECT tag, n % 2, count(*), sum(n) FROM tagged GROUP BY 1, 2)
UNION ALL
(SELECT tag, n % 2, count(*), sum(n) FROM tagged GROUP BY 1, 2 EXCEPT ALL SELECT * FROM by_tag);
-- SELECT DISTINCT: kept as the groups of its columns, nulls equal as
-- DISTINCT takes them; its kept query still says DISTINCT
CREATE VIEW tag_pairs WITH (ssp.continuous, ssp.batch_size = 10) AS
  SELECT DISTINCT tag, n % 3 AS r FROM tagged;
SELECT ssp.wait('tag_pairs');
INSERT INTO tagged SELECT CASE WHEN g % 4 = 0 THEN NULL ELSE 't' || g % 3 END, g, 0
  FROM generate_series(101, 130) g;
SELECT ssp.wait('tag_pairs');
SELECT * FROM tag_pairs ORDER BY tag, r;
(SELECT * FROM tag_pairs EXCEPT ALL SELECT DISTINCT tag, n % 3 FROM tagged)
UNION ALL
(SELECT DISTINCT tag, n % 3 FROM tagged EXCEPT ALL SELECT * FROM tag_pairs);
SELECT pg_get_viewdef('tag_pairs_query');
DROP VIEW tag_pairs;

-- GROUP BY () and grouping sets that make one set group as a GROUP BY of
-- that set does: taken as that.  More sets are refused, and so are GROUP BY
-- () and HAVING without an aggregate (one row over all the stream, which was
-- taken for a row per message).
CREATE VIEW r WITH (ssp.continuous) AS SELECT tag, count(*) FROM tagged GROUP BY GROUPING SETS ((tag), ());
CREATE VIEW r WITH (ssp.continuous) AS SELECT tag, count(*) FROM tagged GROUP BY CUBE (tag);
CREATE VIEW r WITH (ssp.continuous) AS SELECT 1 AS one FROM tagged GROUP BY ();
CREATE VIEW r WITH (ssp.continuous) AS SELECT 1 AS one FROM tagged HAVING true;
CREATE VIEW r WITH (ssp.continuous) AS SELECT DISTINCT 1 AS one FROM tagged HAVING 1 > 0;
CREATE VIEW tag_none WITH (ssp.continuous) AS SELECT count(*) AS c, sum(n) AS total FROM tagged GROUP BY ();
SELECT count(*) AS rows_at_once FROM tag_none;
CREATE VIEW tag_one_set WITH (ssp.continuous) AS
  SELECT tag, count(*) AS c FROM tagged GROUP BY GROUPING SETS ((tag));
CREATE VIEW tag_sets WITH (ssp.continuous) AS
  SELECT tag, n % 2 AS odd, count(*) AS c FROM tagged GROUP BY DISTINCT tag, (), GROUPING SETS ((tag, n % 2));
INSERT INTO tagged SELECT 't' || g % 5, g, 0 FROM generate_series(131, 150) g;
SELECT ssp.wait('tag_none'), ssp.wait('tag_one_set'), ssp.wait('tag_sets');
SELECT * FROM tag_none;
SELECT count(*), sum(n) FROM tagged GROUP BY ();
(SELECT * FROM tag_one_set EXCEPT ALL SELECT tag, count(*) FROM tagged GROUP BY tag)
UNION ALL
(SELECT tag, count(*) FROM tagged GROUP BY tag EXCEPT ALL SELECT * FROM tag_one_set);
(SELECT * FROM tag_sets EXCEPT ALL SELECT tag, n % 2, count(*) FROM tagged GROUP BY tag, n % 2)
UNION ALL
(SELECT tag, n % 2, count(*) FROM tagged GROUP BY tag, n % 2 EXCEPT ALL SELECT * FROM tag_sets);
SELECT count(*) AS groups FROM tag_sets;
DROP VIEW tag_none, tag_one_set, tag_sets;

-- a composite key with some fields null is a group of its own, as GROUP BY
-- and DISTINCT make it (it passed neither IS NULL nor IS NOT NULL, and its
-- group was lost); its index, as GROUP BY, takes two null fields as equal
CREATE TYPE tag_odd AS (tag text, odd int);
CREATE VIEW tag_odd_n WITH (ssp.continuous, ssp.batch_size = 20) AS
  SELECT (tag, NULLIF(n % 2, 0))::tag_odd AS pair, count(*) AS c, count(DISTINCT n % 5) AS dn
  FROM tagged GROUP BY 1;
CREATE VIEW tag_odd_d WITH (ssp.continuous, ssp.batch_size = 20) AS
  SELECT DISTINCT (tag, NULLIF(n % 2, 0))::tag_odd AS pair FROM tagged;
SELECT ssp.wait('tag_odd_n'), ssp.wait('tag_odd_d');
SELECT * FROM tag_odd_n ORDER BY 1;
(SELECT * FROM tag_odd_n EXCEPT ALL
 SELECT (tag, NULLIF(n % 2, 0))::tag_odd, count(*), count(DISTINCT n % 5) FROM tagged GROUP BY 1)
UNION ALL
(SELECT (tag, NULLIF(n % 2, 0))::tag_odd, count(*), count(DISTINCT n % 5) FROM tagged GROUP BY 1
 EXCEPT ALL SELECT * FROM tag_odd_n);
(SELECT * FROM tag_odd_d EXCEPT ALL SELECT DISTINCT (tag, NULLIF(n % 2, 0))::tag_odd FROM tagged)
UNION ALL
(SELECT DISTINCT (tag, NULLIF(n % 2, 0))::tag_odd FROM tagged EXCEPT ALL SELECT * FROM tag_odd_d);
DROP VIEW tag_odd_n, tag_odd_d;
DROP TYPE tag_odd;

-- of two equal values, min and max keep the later one, as Postgres's do
-- (1.0 and 1.00 are equal numerics, shown apart), batch after batch
\set ties_topic views_ties_ :run
\! "$SSP_SRC/test/create_topic" "views_ties_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE ties (v numeric, iv interval) SERVER kafka OPTIONS (topic :'ties_topic');
CREATE VIEW ties_v WITH (ssp.continuous) AS
  SELECT min(v)::text AS lo, max(v)::text AS hi, min(iv)::text AS ilo, count(*) AS n FROM ties;
INSERT INTO ties VALUES (1.0, '1 day');
SELECT ssp.wait('ties_v');
INSERT INTO ties VALUES (1.00, '24 hours');
SELECT ssp.wait('ties_v');
INSERT INTO ties VALUES (1.000, '1440 minutes');
SELECT ssp.wait('ties_v');
SELECT * FROM ties_v;
SELECT min(v)::text, max(v)::text, min(iv)::text, count(*) FROM ties;
DROP VIEW ties_v;
DROP FOREIGN TABLE ties;

-- a whole-row reference to the stream is the row of its columns, as in its
-- query (the batch's row held ssp's columns too: s::text and row_to_json(s)
-- showed them, SELECT s and GROUP BY s failed), a dropped column left out;
-- s IS NULL over GROUP BY s tests the group's key
\set wholes_topic views_wholes_ :run
\! "$SSP_SRC/test/create_topic" "views_wholes_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE wholes (k text, x int, gone int) SERVER kafka OPTIONS (topic :'wholes_topic');
ALTER FOREIGN TABLE wholes DROP COLUMN gone;
ALTER FOREIGN TABLE wholes ADD COLUMN y int;
CREATE VIEW wholes_rows WITH (ssp.continuous) AS
  SELECT s, s::text AS t, row_to_json(s)::text AS j FROM wholes s WHERE s IS NOT NULL OR s.k = 'b';
CREATE VIEW wholes_n WITH (ssp.continuous) AS
  SELECT s, s IS NULL AS null_key, s IS NOT NULL AS full_key, count(*) AS n,
         count(*) FILTER (WHERE s IS NULL) AS nulls FROM wholes s GROUP BY s;
-- over rows (WHERE), the test is of each row's columns, grouped by s or
-- not (taken for the group's, it was over a ROW holding the dropped
-- column's null: never true)
CREATE VIEW wholes_full WITH (ssp.continuous) AS
  SELECT s, count(*) AS n, s IS NOT NULL AS full_key FROM wholes s WHERE s IS NOT NULL GROUP BY s;
CREATE VIEW wholes_agg WITH (ssp.continuous) AS
  SELECT k, array_agg(s) AS a, count(DISTINCT s) AS d FROM wholes s
  WHERE EXISTS (SELECT 1 WHERE s IS DISTINCT FROM ROW('z', 0, 0)::wholes) GROUP BY k;
INSERT INTO wholes VALUES ('a', 1, 10), (NULL, NULL, NULL), ('b', NULL, 2), ('a', 1, 10);
SELECT ssp.wait('wholes_rows'), ssp.wait('wholes_n'), ssp.wait('wholes_agg');
SELECT * FROM wholes_rows ORDER BY t;
(SELECT * FROM wholes_n EXCEPT ALL
 SELECT s, s IS NULL, s IS NOT NULL, count(*), count(*) FILTER (WHERE s IS NULL) FROM wholes s GROUP BY s)
UNION ALL
(SELECT s, s IS NULL, s IS NOT NULL, count(*), count(*) FILTER (WHERE s IS NULL) FROM wholes s GROUP BY s
 EXCEPT ALL SELECT * FROM wholes_n);
SELECT null_key, full_key, n, nulls FROM wholes_n ORDER BY n, null_key, full_key;
SELECT ssp.wait('wholes_full');
(SELECT * FROM wholes_full EXCEPT ALL
 SELECT s, count(*), s IS NOT NULL FROM wholes s WHERE s IS NOT NULL GROUP BY s)
UNION ALL
(SELECT s, count(*), s IS NOT NULL FROM wholes s WHERE s IS NOT NULL GROUP BY s
 EXCEPT ALL SELECT * FROM wholes_full);
SELECT n, full_key FROM wholes_full;
SELECT k, a::text, d FROM wholes_agg ORDER BY k;
SELECT k, array_agg(s)::text, count(DISTINCT s) FROM wholes s GROUP BY k ORDER BY k;
-- a column added to the stream is in the rows of later messages
ALTER FOREIGN TABLE wholes ADD COLUMN z text;
INSERT INTO wholes VALUES ('c', 3, 30, 'zed');
SELECT ssp.wait('wholes_rows');
SELECT * FROM wholes_rows WHERE (s).k = 'c';
DROP VIEW wholes_rows, wholes_n, wholes_full, wholes_agg;
DROP FOREIGN TABLE wholes;

-- ssp.output_topic: what it refuses; its outbox and trigger go with the view
-- (test/tap/t/016_output_topic.pl publishes through crashes)
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = 'no spaces') AS SELECT tag, count(*) FROM tagged GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = '') AS SELECT tag, count(*) FROM tagged GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = 'x') AS SELECT tag, n FROM tagged;
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = 'x', ssp.parallelism = 2) AS
  SELECT tag, count(*) FROM tagged GROUP BY 1;
-- nor into the topic the view reads (it counted its own changes without end)
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = :'topic') AS SELECT tag, count(*) FROM tagged GROUP BY 1;
-- nor a column a change's own fields would replace
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = 'x') AS SELECT tag, max(n) AS _seq FROM tagged GROUP BY 1;
\set topic views_out_ :run
CREATE VIEW tag_out WITH (ssp.continuous, ssp.output_topic = :'topic') AS
  SELECT tag, count(*) AS n FROM tagged GROUP BY 1;
SELECT ssp.wait('tag_out');
SELECT output_topic = :'topic' AS topic, outbox
FROM ssp.continuous_views WHERE view = 'tag_out'::regclass;
SELECT tgname, tgfoid::regproc FROM pg_trigger WHERE tgrelid = 'tag_out_mrel'::regclass ORDER BY 1;
DROP VIEW tag_out;
SELECT (SELECT count(*) FROM pg_class WHERE relname = 'tag_out_outbox') AS outboxes,
       (SELECT count(*) FROM pg_proc WHERE proname = 'tag_out_changes') AS functions;
-- a worker writes dates as text in ISO form whatever the database's
-- DateStyle, and reads them in the database's order of day and month; the
-- NULL of an array constant stays a null where the database has
-- array_nulls off; and JIT is off in workers whatever the database says
-- (it compiled each statement again at each split of a batch)
\set topic views_dates_ :run
SELECT format('ALTER DATABASE %I SET DateStyle = %L', current_database(), 'SQL, DMY') \gexec
SELECT format('ALTER DATABASE %I SET array_nulls = off', current_database()) \gexec
SELECT format('ALTER DATABASE %I SET jit = on', current_database()) \gexec
CREATE FOREIGN TABLE dated (d date, note text) SERVER kafka OPTIONS (topic :'topic');
CREATE FOREIGN TABLE dated_raw (v text) SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO dated_raw VALUES ('{"d": "04/03/2024", "note": "day first"}'), ('{"d": "2024-03-05", "note": "iso"}');
CREATE VIEW dated_text WITH (ssp.continuous) AS
  SELECT d::text AS d_text, note, count(*) AS n FROM dated GROUP BY 1, 2;
CREATE VIEW dated_nulls WITH (ssp.continuous) AS
  SELECT note, note = ANY ('{iso,NULL}'::text[]) AS listed, ('{x,NULL}'::text[])[2] IS NULL AS second_null
  FROM dated;
CREATE VIEW dated_jit WITH (ssp.continuous) AS
  SELECT current_setting('jit') AS jit, count(*) AS n FROM dated GROUP BY 1;
SELECT ssp.wait('dated_text'), ssp.wait('dated_nulls'), ssp.wait('dated_jit');
SELECT * FROM dated_text ORDER BY 1;
SELECT * FROM dated_nulls ORDER BY 1;
SELECT * FROM dated_jit;
SELECT format('ALTER DATABASE %I RESET DateStyle', current_database()) \gexec
SELECT format('ALTER DATABASE %I RESET array_nulls', current_database()) \gexec
SELECT format('ALTER DATABASE %I RESET jit', current_database()) \gexec
DROP VIEW dated_text, dated_nulls, dated_jit;
-- a database made read-only: a view's worker says so, and the view goes on
-- once it is writable again (a stream and batch size of its own: no live
-- reader, started before, takes the view)
SELECT format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()) \gexec
CREATE FOREIGN TABLE dated_again (d date, note text) SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW dated_count WITH (ssp.continuous, ssp.batch_size = 77) AS SELECT count(*) AS n FROM dated_again;
SELECT wait_for_error('dated_count');
SELECT status, last_error FROM ssp.views WHERE view = 'dated_count'::regclass;
SELECT format('ALTER DATABASE %I RESET default_transaction_read_only', current_database()) \gexec
SELECT ssp.wait('dated_count', '60 s');
SELECT * FROM dated_count;
DROP VIEW dated_count;
DROP FOREIGN TABLE dated, dated_raw, dated_again;

-- brokers that do not answer: ssp.wait is false at its timeout, as it says,
-- not an error after ssp.broker_timeout
\set gone_topic views_ :run
CREATE SERVER gone FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE gone_orders (order_id bigint) SERVER gone OPTIONS (topic :'gone_topic');
CREATE VIEW gone_n WITH (ssp.continuous) AS SELECT count(*) AS n FROM gone_orders;
SELECT ssp.wait('gone_n');
ALTER SERVER gone OPTIONS (SET brokers '127.0.0.1:1');
SET ssp.broker_timeout = '1 min';
SELECT ssp.wait('gone_n', '2 s');
RESET ssp.broker_timeout;
DROP SERVER gone CASCADE;
DROP SERVER kafka CASCADE;
DROP TABLE customers;
DROP ROLE ssp_reader;
REVOKE CREATE ON SCHEMA public FROM ssp_owner;
DROP ROLE ssp_owner;
SELECT count(*) FROM ssp.continuous_views;
SELECT count(*) FROM ssp.offsets;
SELECT count(*) FROM ssp.dead_letters;
