-- DDL on what continuous views read: columns a view reads cannot be
-- dropped or retyped (a dependency, as for a plain view); other columns
-- can, and columns can be added, with the view running on.  Renames are
-- harmless: a view's SQL is built again from its kept query.
\getenv brokers SSP_BROKERS
\set VERBOSITY default
CREATE SERVER ddl_kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE ddl_orders (id bigint, region text, amount numeric, note text)
  SERVER ddl_kafka OPTIONS (topic 'ddl_orders');
CREATE TABLE ddl_regions (region text PRIMARY KEY, name text, unused int);
INSERT INTO ddl_regions SELECT 'r' || g, 'region ' || g FROM generate_series(0, 2) g;
CREATE VIEW ddl_view WITH (ssp.continuous) AS
  SELECT r.name, count(*) AS n, sum(o.amount) AS total
  FROM ddl_orders o JOIN ddl_regions r ON r.region = o.region GROUP BY r.name;
INSERT INTO ddl_orders SELECT g, 'r' || g % 3, g, 'x' FROM generate_series(1, 30) g;
SELECT ssp.wait('ddl_view');
-- the view keeps its query as the plain view ddl_view_query, part of it
SELECT pg_get_viewdef('ddl_view_query'::regclass);
DROP VIEW ddl_view_query;
-- what the view reads: refused
ALTER FOREIGN TABLE ddl_orders DROP COLUMN amount;
ALTER FOREIGN TABLE ddl_orders ALTER COLUMN amount TYPE float8;
ALTER FOREIGN TABLE ddl_orders DROP COLUMN region;
ALTER TABLE ddl_regions DROP COLUMN name;
ALTER TABLE ddl_regions ALTER COLUMN region TYPE varchar;
DROP TABLE ddl_regions;
-- the topic: a view keeps the one it was made with, so another is refused
-- while views read the stream (the same one, or other options, are fine)
ALTER FOREIGN TABLE ddl_orders OPTIONS (SET topic 'ddl_other');
ALTER FOREIGN TABLE ddl_orders OPTIONS (SET topic 'ddl_orders');
ALTER FOREIGN TABLE ddl_orders OPTIONS (ADD format 'json');
ALTER FOREIGN TABLE ddl_orders OPTIONS (DROP format);
-- what it does not read: fine, and the view runs on
ALTER FOREIGN TABLE ddl_orders DROP COLUMN note;
ALTER TABLE ddl_regions DROP COLUMN unused;
ALTER FOREIGN TABLE ddl_orders ADD COLUMN channel text;
INSERT INTO ddl_orders (id, region, amount, channel) SELECT g, 'r' || g % 3, g, 'web' FROM generate_series(31, 60) g;
SELECT ssp.wait('ddl_view');
SELECT * FROM ddl_view ORDER BY name;
SELECT status, last_error FROM ssp.views WHERE view = 'ddl_view'::regclass;
-- renames, while the view runs: each batch after one is counted once
ALTER TABLE ddl_regions RENAME TO ddl_regions_renamed;
INSERT INTO ddl_orders (id, region, amount) SELECT g, 'r' || g % 3, g FROM generate_series(61, 90) g;
SELECT ssp.wait('ddl_view');
ALTER TABLE ddl_regions_renamed RENAME COLUMN name TO label;
-- (a stream's column is its message's field of that name, unless it names another)
ALTER FOREIGN TABLE ddl_orders RENAME COLUMN amount TO value;
ALTER FOREIGN TABLE ddl_orders ALTER COLUMN value OPTIONS (ADD field 'amount');
ALTER FOREIGN TABLE ddl_orders RENAME TO ddl_orders_renamed;
INSERT INTO ddl_orders_renamed (id, region, value) SELECT g, 'r' || g % 3, g FROM generate_series(91, 120) g;
SELECT ssp.wait('ddl_view');
ALTER VIEW ddl_view RENAME TO ddl_view2;
-- its ssp options are changed by CREATE OR REPLACE VIEW, not by ALTER
ALTER VIEW ddl_view2 SET (ssp.batch_size = 500);
ALTER TABLE ddl_view2 RESET (ssp.commit_interval);
ALTER VIEW ddl_view2 SET (security_barrier = false, "ssp".batch_size = 500);
ALTER TABLE ddl_view_mrel RENAME TO ddl_view_table;
CREATE SCHEMA ddl_s;
ALTER TABLE ddl_regions_renamed SET SCHEMA ddl_s;
INSERT INTO ddl_orders_renamed (id, region, value) SELECT g, 'r' || g % 3, g FROM generate_series(121, 150) g;
SELECT ssp.wait('ddl_view2');
SELECT status, last_error FROM ssp.views WHERE view = 'ddl_view2'::regclass;
SELECT sum(n) AS n, sum(total) AS total FROM ddl_view2;
-- the kept query follows too: read as a plain view (the whole topic), the same rows
SELECT pg_get_viewdef('ddl_view_query'::regclass);
SELECT count(*) AS differ FROM (
  (SELECT * FROM ddl_view2 EXCEPT ALL SELECT * FROM ddl_view_query)
  UNION ALL (SELECT * FROM ddl_view_query EXCEPT ALL SELECT * FROM ddl_view2)) d;
-- a rollup made after the view's table was renamed
CREATE VIEW ddl_rollup WITH (ssp.rollup) AS SELECT ssp.combine(n) AS n, ssp.combine(total) AS total FROM ddl_view2;
SELECT * FROM ddl_rollup;
DROP VIEW ddl_rollup;
-- the columns of a view's own tables keep their names
ALTER TABLE ddl_view_table RENAME COLUMN name TO label;
-- a view's own tables, their indexes and its kept query are ssp's: what
-- would fail its worker or make its rows wrong is refused; their storage
-- settings, renames and AFTER triggers are not
SELECT indexrelid::regclass AS ddl_index FROM pg_index WHERE indrelid = 'ddl_view_table'::regclass \gset
DROP INDEX :ddl_index;
TRUNCATE ddl_view_table;
ALTER TABLE ddl_view_table ADD COLUMN extra int;
ALTER TABLE ddl_view_table ALTER COLUMN name SET NOT NULL;
ALTER TABLE ddl_view_table DISABLE TRIGGER ALL;
ALTER TABLE ddl_view_table SET UNLOGGED;
ALTER TABLE ddl_view_table ENABLE ROW LEVEL SECURITY;
CREATE TRIGGER ddl_before BEFORE UPDATE ON ddl_view_table
  FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
CREATE RULE ddl_rule AS ON INSERT TO ddl_view_table DO INSTEAD NOTHING;
CREATE TABLE ddl_child () INHERITS (ddl_view_table);
CREATE TABLE ddl_child (LIKE ddl_view_table);
ALTER TABLE ddl_child INHERIT ddl_view_table;
DROP TABLE ddl_child;
-- indexes of the user's own on the view's table are the user's to drop; the
-- unique index on its group keys too, once another like it (on the same
-- columns, NULLS NOT DISTINCT) stands in for it, and the view runs on
CREATE INDEX ddl_own ON ddl_view_table (name);
DROP INDEX ddl_own;
CREATE UNIQUE INDEX ddl_own_unique ON ddl_view_table (name);
DROP INDEX :ddl_index;
DROP INDEX ddl_own_unique;
CREATE UNIQUE INDEX ddl_own_unique ON ddl_view_table (name) NULLS NOT DISTINCT WHERE name <> '';
DROP INDEX :ddl_index;
DROP INDEX ddl_own_unique;
CREATE UNIQUE INDEX ddl_own_unique ON ddl_view_table (name) NULLS NOT DISTINCT;
DROP INDEX :ddl_index;
DROP INDEX ddl_own_unique;
-- (nor two, each the other's stand-in, in one statement)
CREATE UNIQUE INDEX ddl_own_unique2 ON ddl_view_table (name) NULLS NOT DISTINCT;
DROP INDEX ddl_own_unique2, ddl_own_unique;
DROP INDEX ddl_own_unique2;
-- (nor one of another collation: it would take other keys for the same)
CREATE UNIQUE INDEX ddl_own_c ON ddl_view_table (name COLLATE "C") NULLS NOT DISTINCT;
DROP INDEX ddl_own_unique;
DROP INDEX ddl_own_c;
CREATE OR REPLACE VIEW ddl_view_query AS SELECT label AS name, 0::bigint AS n, 0::numeric AS total FROM ddl_s.ddl_regions_renamed;
-- nor its owner, which is the view's (the view then failed at its next start)
CREATE ROLE ddl_other;
ALTER VIEW ddl_view_query OWNER TO ddl_other;
ALTER TABLE ddl_view_query OWNER TO ddl_other;
DROP ROLE ddl_other;
ALTER TABLE ddl_view_table SET (fillfactor = 60), ALTER COLUMN name SET STATISTICS 200;
CREATE FUNCTION ddl_after() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER ddl_after AFTER UPDATE ON ddl_view_table FOR EACH ROW EXECUTE FUNCTION ddl_after();
INSERT INTO ddl_orders_renamed (id, region, value) SELECT g, 'r' || g % 3, g FROM generate_series(181, 210) g;
SELECT ssp.wait('ddl_view2');
SELECT status, last_error FROM ssp.views WHERE view = 'ddl_view2'::regclass;
SELECT sum(n) AS n, sum(total) AS total FROM ddl_view2;
DROP TRIGGER ddl_after ON ddl_view_table;
DROP FUNCTION ddl_after();
-- its rows are ssp's too: written through the view, in a WITH query or a
-- function, refused; what was counted stays
UPDATE ddl_view2 SET n = 0;
DELETE FROM ddl_view2 WHERE n > 0;
INSERT INTO ddl_view2 SELECT * FROM ddl_view2;
WITH d AS (DELETE FROM ddl_view2 RETURNING *) SELECT count(*) FROM d;
CREATE FUNCTION ddl_zero() RETURNS void LANGUAGE plpgsql AS $$BEGIN UPDATE ddl_view2 SET n = 0; END$$;
SELECT ddl_zero();
DROP FUNCTION ddl_zero();
-- nor rules or triggers on it, which could never fire, or, as a rule ON
-- SELECT, would show other rows as the view's
CREATE OR REPLACE RULE "_RETURN" AS ON SELECT TO ddl_view2 DO INSTEAD SELECT 'x'::text AS name, 1::bigint AS n, 1::numeric AS total;
CREATE RULE ddl_view_rule AS ON INSERT TO ddl_view2 DO INSTEAD NOTHING;
CREATE FUNCTION ddl_instead() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER ddl_instead INSTEAD OF UPDATE ON ddl_view2 FOR EACH ROW EXECUTE FUNCTION ddl_instead();
CREATE TRIGGER ddl_statement AFTER UPDATE ON ddl_view2 FOR EACH STATEMENT EXECUTE FUNCTION ddl_instead();
DROP FUNCTION ddl_instead();
-- a plain CREATE OR REPLACE VIEW must read the view's table, as a dump's
-- script does (its own definition again); not rows of its own, nor its
-- stream (a new query without WITH (ssp.continuous))
CREATE OR REPLACE VIEW ddl_view2 AS SELECT 'x'::text AS name, 1::bigint AS n, 1::numeric AS total;
CREATE OR REPLACE VIEW ddl_view2 AS
  SELECT region AS name, count(*) AS n, sum(value)::numeric AS total FROM ddl_orders_renamed GROUP BY region;
DO $$BEGIN EXECUTE format('CREATE OR REPLACE VIEW ddl_view2 AS %s', pg_get_viewdef('ddl_view2')); END$$;
SELECT sum(n) AS n, sum(total) AS total FROM ddl_view2;
-- a view with an output topic in a schema that is renamed, its outbox too:
-- its trigger function is written again and the changes go on
CREATE SCHEMA ddl_v;
CREATE VIEW ddl_v.totals WITH (ssp.continuous, ssp.output_topic = 'ddl_totals') AS
  SELECT region, count(*) AS n FROM ddl_orders_renamed GROUP BY region;
SELECT ssp.wait('ddl_v.totals');
ALTER SCHEMA ddl_v RENAME TO ddl_w;
ALTER TABLE ddl_w.totals_outbox RENAME TO totals_box;
SELECT published_seq AS published FROM ssp.continuous_views WHERE view = 'ddl_w.totals'::regclass \gset
INSERT INTO ddl_orders_renamed (id, region, value) SELECT g, 'r' || g % 3, g FROM generate_series(151, 180) g;
SELECT ssp.wait('ddl_w.totals'), ssp.wait('ddl_view2');
SELECT * FROM ddl_w.totals ORDER BY region;
SELECT strpos(prosrc, 'ddl_w.totals_box') > 0 AS names_the_outbox
FROM pg_proc WHERE oid = (SELECT tgfoid FROM pg_trigger WHERE tgname = 'ssp_changes_insert'
  AND tgrelid = (SELECT mrel FROM ssp.continuous_views WHERE view = 'ddl_w.totals'::regclass));
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT count(*) FROM ddl_w.totals_box o, ssp.continuous_views c
               WHERE c.view = 'ddl_w.totals'::regclass AND o.seq > c.published_seq) = 0;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT published_seq > :published AS published_more, status, last_error
FROM ssp.continuous_views c JOIN ssp.views v USING (view) WHERE view = 'ddl_w.totals'::regclass;
DROP VIEW ddl_w.totals;
DROP SCHEMA ddl_w;
SELECT sum(n) AS n, sum(total) AS total FROM ddl_view2;
-- the dependencies go with the view
DROP VIEW ddl_view2;
-- a new definition takes the old one's place over a topic with partitions
-- that never had a message (the old view has offset 0 there, the new one
-- no row: the pair once stayed apart for good)
\! "$SSP_SRC/test/create_topic" "ddl_sparse_$SSP_RUN_ID" 4 >/dev/null
\getenv run SSP_RUN_ID
\set sparse ddl_sparse_ :run
CREATE FOREIGN TABLE ddl_sparse (k int, p int OPTIONS (meta 'partition'))
  SERVER ddl_kafka OPTIONS (topic :'sparse');
INSERT INTO ddl_sparse VALUES (1, 0), (2, 1);
CREATE VIEW ddl_sparse_v WITH (ssp.continuous) AS SELECT k, count(*) AS n FROM ddl_sparse GROUP BY k;
SELECT ssp.wait('ddl_sparse_v');
-- a new definition still catching up is not replaced itself (its own
-- replacement took its place, and the view it was for kept its old one)
BEGIN;
CREATE OR REPLACE VIEW ddl_sparse_v WITH (ssp.continuous) AS SELECT k, count(*) AS n, min(p) AS p FROM ddl_sparse GROUP BY k;
CREATE OR REPLACE VIEW ddl_sparse_v_next WITH (ssp.continuous) AS SELECT k, count(*) AS n FROM ddl_sparse GROUP BY k;
ROLLBACK;
CREATE OR REPLACE VIEW ddl_sparse_v WITH (ssp.continuous) AS SELECT k, count(*) AS n, max(p) AS p FROM ddl_sparse GROUP BY k;
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN to_regclass('ddl_sparse_v_next') IS NULL;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT to_regclass('ddl_sparse_v_next') AS still_beside;
SELECT * FROM ddl_sparse_v ORDER BY k;
DROP VIEW ddl_sparse_v;
-- a view whose table has no index is not waiting for one, whatever its
-- query says (a WHERE that spelled MERGE INTO failed it for good)
CREATE VIEW ddl_sparse_text WITH (ssp.continuous) AS
  SELECT k FROM ddl_sparse WHERE k::text <> 'MERGE INTO x ON CONFLICT DO NOTHING';
SELECT ssp.wait('ddl_sparse_text', '20 s');
SELECT status, last_error, (SELECT count(*) FROM ddl_sparse_text) AS n FROM ssp.views WHERE view = 'ddl_sparse_text'::regclass;
DROP VIEW ddl_sparse_text;
DROP FOREIGN TABLE ddl_sparse;
-- no view reads it any more: its topic may change
ALTER FOREIGN TABLE ddl_orders_renamed OPTIONS (SET topic 'ddl_other');
ALTER FOREIGN TABLE ddl_orders_renamed DROP COLUMN value;
DROP TABLE ddl_s.ddl_regions_renamed;
DROP SCHEMA ddl_s;
DROP FOREIGN TABLE ddl_orders_renamed;
-- a stream dropped with CASCADE as soon as its views' processes start:
-- they lock the stream before the view, as the DROP does (the other order
-- deadlocked, one DROP in a few)
SELECT format('CREATE FOREIGN TABLE ddl_dl%s (x int, y int) SERVER ddl_kafka OPTIONS (topic %L)',
              g, 'ddl_dl_' || g || '_' || :'run'),
       format('CREATE VIEW ddl_dla%s WITH (ssp.continuous) AS SELECT x, count(*) FROM ddl_dl%s GROUP BY x', g, g),
       format('CREATE VIEW ddl_dlb%s WITH (ssp.continuous) AS SELECT x, y, count(*) FROM ddl_dl%s GROUP BY x, y', g, g),
       format('DROP FOREIGN TABLE ddl_dl%s CASCADE', g)
FROM generate_series(1, 10) g \gexec
DROP SERVER ddl_kafka;
