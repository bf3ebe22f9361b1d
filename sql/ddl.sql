-- DDL on what continuous views read: columns a view reads cannot be
-- dropped or retyped (a dependency, as for a plain view); other columns
-- can, and columns can be added, with the view running on.
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
-- the view keeps its query, names qualified
SELECT definition FROM ssp.continuous_views WHERE view = 'ddl_view'::regclass;
-- what the view reads: refused
ALTER FOREIGN TABLE ddl_orders DROP COLUMN amount;
ALTER FOREIGN TABLE ddl_orders ALTER COLUMN amount TYPE float8;
ALTER FOREIGN TABLE ddl_orders DROP COLUMN region;
ALTER TABLE ddl_regions DROP COLUMN name;
ALTER TABLE ddl_regions ALTER COLUMN region TYPE varchar;
DROP TABLE ddl_regions;
-- what it does not read: fine, and the view runs on
ALTER FOREIGN TABLE ddl_orders DROP COLUMN note;
ALTER TABLE ddl_regions DROP COLUMN unused;
ALTER FOREIGN TABLE ddl_orders ADD COLUMN channel text;
INSERT INTO ddl_orders (id, region, amount, channel) SELECT g, 'r' || g % 3, g, 'web' FROM generate_series(31, 60) g;
SELECT ssp.wait('ddl_view');
SELECT * FROM ddl_view ORDER BY name;
SELECT status, last_error FROM ssp.views WHERE view = 'ddl_view'::regclass;
-- renaming a table the view joins is not yet followed by the view's SQL:
-- its worker stops, saying so, and goes on exactly once when it is back
ALTER TABLE ddl_regions RENAME TO ddl_regions_renamed;
INSERT INTO ddl_orders (id, region, amount) SELECT g, 'r' || g % 3, g FROM generate_series(61, 90) g;
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT last_error FROM ssp.views WHERE view = 'ddl_view'::regclass) IS NOT NULL;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT last_error FROM ssp.views WHERE view = 'ddl_view'::regclass;
ALTER TABLE ddl_regions_renamed RENAME TO ddl_regions;
SELECT ssp.wait('ddl_view', '90 s');
SELECT sum(n) FROM ddl_view;
-- the dependencies go with the view
DROP VIEW ddl_view;
ALTER FOREIGN TABLE ddl_orders DROP COLUMN amount;
DROP TABLE ddl_regions;
DROP FOREIGN TABLE ddl_orders;
DROP SERVER ddl_kafka;
