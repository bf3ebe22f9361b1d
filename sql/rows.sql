-- How views read their batch (src/runtime/rows.c): the scan of the decoded
-- rows, of the columns a statement reads (in its order, twice, none); the
-- tuplestore for a statement that needs whole rows; a scan that reads
-- nothing when it asks for nulls the batch does not have; several views of
-- one reader reading the same rows; a dropped column.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
\set topic rows_ :run
CREATE SERVER rows_kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE rows_orders (order_id bigint, region text, amount numeric, note text, qty int)
  SERVER rows_kafka OPTIONS (topic :'topic');

-- created in one transaction: one reader decodes each batch for all four
BEGIN;
CREATE VIEW rows_by_region WITH (ssp.continuous, ssp.batch_size = 500) AS
  SELECT region, count(*) AS n, sum(amount) AS total, count(note) AS notes
  FROM rows_orders GROUP BY region;
CREATE VIEW rows_by_pair WITH (ssp.continuous, ssp.batch_size = 500) AS
  SELECT region, note, count(*) AS n FROM rows_orders GROUP BY region, note;
CREATE VIEW rows_whole WITH (ssp.continuous, ssp.batch_size = 500) AS
  SELECT o.order_id, to_jsonb(o) ->> 'region' AS region, (o).amount AS amount FROM rows_orders o;
CREATE VIEW rows_wide WITH (ssp.continuous, ssp.batch_size = 500) AS
  SELECT order_id, upper(region) AS region, amount * qty AS value, note FROM rows_orders
  WHERE order_id % 3 <> 0;
-- columns out of the stream's order, one twice, a filter on another
CREATE VIEW rows_picked WITH (ssp.continuous, ssp.batch_size = 500) AS
  SELECT note, amount, amount AS again, region FROM rows_orders WHERE order_id % 5 = 1;
-- no column at all
CREATE VIEW rows_total WITH (ssp.continuous, ssp.batch_size = 500) AS
  SELECT count(*) AS n FROM rows_orders;
COMMIT;

-- a trigger on a view's table whose transition table is named like the
-- batch: its statement reads its own rows, not the batch's.  (The view's
-- worker runs with search_path pg_catalog: the function names its schema.)
CREATE TABLE rows_seen (n bigint);
CREATE FUNCTION rows_count_new() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
  INSERT INTO rows_seen SELECT count(*) FROM ssp_batch;
  RETURN NULL;
END $$;
SELECT format('CREATE TRIGGER rows_seen AFTER INSERT ON %s REFERENCING NEW TABLE AS ssp_batch '
              'FOR EACH STATEMENT EXECUTE FUNCTION rows_count_new()', mrel::regclass)
  FROM ssp.continuous_views WHERE view = 'rows_wide'::regclass \gexec

-- no null region in the first batches; nulls (and nulls only) in the later
INSERT INTO rows_orders
  SELECT g, 'r' || g % 5, g * 0.5, CASE WHEN g % 4 = 0 THEN NULL ELSE 'n' || g % 3 END, g % 7
  FROM generate_series(1, 1000) g;
SELECT ssp.wait('rows_by_region') AND ssp.wait('rows_by_pair') AND ssp.wait('rows_whole')
   AND ssp.wait('rows_wide') AS caught_up;
SELECT count(*) AS null_groups FROM rows_by_region WHERE region IS NULL;
INSERT INTO rows_orders
  SELECT g, NULL, g * 0.5, 'late', g % 7 FROM generate_series(1001, 1200) g;
INSERT INTO rows_orders
  SELECT g, CASE WHEN g % 2 = 0 THEN NULL ELSE 'r' || g % 5 END, g * 0.5, NULL, NULL
  FROM generate_series(1201, 2000) g;
SELECT ssp.wait('rows_by_region') AND ssp.wait('rows_by_pair') AND ssp.wait('rows_whole')
   AND ssp.wait('rows_wide') AND ssp.wait('rows_picked') AND ssp.wait('rows_total') AS caught_up;

-- each view equals its query over the whole topic
SELECT count(*) AS differences FROM (
  (TABLE rows_by_region EXCEPT
   SELECT region, count(*), sum(amount), count(note) FROM rows_orders GROUP BY region)
  UNION ALL
  (SELECT region, count(*), sum(amount), count(note) FROM rows_orders GROUP BY region
   EXCEPT TABLE rows_by_region)) d;
SELECT region, n, total, notes FROM rows_by_region WHERE region IS NULL;
SELECT count(*) AS differences FROM (
  (TABLE rows_by_pair EXCEPT SELECT region, note, count(*) FROM rows_orders GROUP BY region, note)
  UNION ALL
  (SELECT region, note, count(*) FROM rows_orders GROUP BY region, note EXCEPT TABLE rows_by_pair)) d;
SELECT count(*) AS n, count(region) AS regions, sum(amount) AS total FROM rows_whole;
SELECT count(*) AS differences FROM (
  (SELECT order_id, region, amount FROM rows_whole EXCEPT SELECT order_id, region, amount FROM rows_orders)
  UNION ALL
  (SELECT order_id, region, amount FROM rows_orders EXCEPT SELECT order_id, region, amount FROM rows_whole)) d;
SELECT count(*) AS n, sum(value) AS value FROM rows_wide;
SELECT count(*) AS differences FROM (
  (SELECT order_id, region, value, note FROM rows_wide
   EXCEPT SELECT order_id, upper(region), amount * qty, note FROM rows_orders WHERE order_id % 3 <> 0)
  UNION ALL
  (SELECT order_id, upper(region), amount * qty, note FROM rows_orders WHERE order_id % 3 <> 0
   EXCEPT SELECT order_id, region, value, note FROM rows_wide)) d;
SELECT count(*) AS n, count(note) AS notes, sum(amount) AS total, sum(again) AS again FROM rows_picked;
SELECT count(*) AS differences FROM (
  (SELECT note, amount, again, region FROM rows_picked
   EXCEPT ALL SELECT note, amount, amount, region FROM rows_orders WHERE order_id % 5 = 1)
  UNION ALL
  (SELECT note, amount, amount, region FROM rows_orders WHERE order_id % 5 = 1
   EXCEPT ALL SELECT note, amount, again, region FROM rows_picked)) d;
SELECT n, n = (SELECT count(*) FROM rows_orders) AS all_counted FROM rows_total;

SELECT sum(n) AS seen_by_trigger FROM rows_seen;

-- a column no view reads is dropped from the stream: the batch keeps its
-- place, and the views go on (rows_wide reads it: it goes first)
ALTER FOREIGN TABLE rows_orders DROP COLUMN qty;
DROP VIEW rows_wide;
ALTER FOREIGN TABLE rows_orders DROP COLUMN qty;
SELECT pg_sleep(0.5);
INSERT INTO rows_orders SELECT g, 'r' || g % 5, 1, 'd' FROM generate_series(2001, 2100) g;
-- the views knew the stream from before the drop, unlike their reader
-- now: each decodes the batch itself rather than fail (a failed view
-- shows its error for a second at least, until its worker starts again)
DO $$
BEGIN
  FOR i IN 1..1200 LOOP
    EXIT WHEN EXISTS (SELECT FROM ssp.views WHERE view::text LIKE 'rows_%' AND last_error IS NOT NULL)
           OR NOT EXISTS (SELECT FROM ssp.views WHERE view::text LIKE 'rows_%' AND processed < 2100);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT view, processed, last_error FROM ssp.views WHERE view::text LIKE 'rows_%' ORDER BY 1;
SELECT ssp.wait('rows_by_region') AND ssp.wait('rows_by_pair') AND ssp.wait('rows_whole')
   AND ssp.wait('rows_total') AS caught_up;
SELECT n FROM rows_total;
SELECT count(*) AS differences FROM (
  (TABLE rows_by_region EXCEPT
   SELECT region, count(*), sum(amount), count(note) FROM rows_orders GROUP BY region)
  UNION ALL
  (SELECT region, count(*), sum(amount), count(note) FROM rows_orders GROUP BY region
   EXCEPT TABLE rows_by_region)) d;
SELECT count(*) AS n, sum(amount) AS total FROM rows_whole;
SELECT view, status FROM ssp.views WHERE view::text LIKE 'rows_%' ORDER BY 1;
SELECT count(*) AS dead_letters FROM ssp.dead_letters WHERE view::text LIKE 'rows_%';

DROP SERVER rows_kafka CASCADE;
DROP TABLE rows_seen;
DROP FUNCTION rows_count_new();
