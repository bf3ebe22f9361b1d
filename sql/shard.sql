-- Shards: ssp.shard = 'k/N' makes a view one shard of a view read by N
-- servers (the partitions p % N = k); ssp.shards makes a view over the
-- shards, on a coordinator, through postgres_fdw.  Here: the options
-- checked, what a shard cannot be, and one server as shard 0/1 of a view
-- read through a loopback server from a second database.  Three servers:
-- test/tap/t/035_shards.pl.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic shard_orders_ :run
CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, ts timestamptz,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
\set topic shard_payments_ :run
CREATE FOREIGN TABLE payments (id bigint, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');

-- the value of ssp.shard
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '3/3') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '-1/3') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/0') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/257') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '1') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '1/3x') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '') AS SELECT count(*) FROM orders;
-- ssp.shards
CREATE VIEW s WITH (ssp.continuous, ssp.shards = '') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shards = 'a,,b') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shards = 'nowhere') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shards = 'kafka') AS SELECT count(*) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2', ssp.shards = 'kafka') AS SELECT count(*) FROM orders;

-- what a shard cannot be: each server reads only its partitions
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2') AS
  SELECT count(*) FROM orders o JOIN payments p ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour';
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2', ssp.primary_key = 'id') AS SELECT id, region FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2') AS
  SELECT ssp.session(ts, '5 minutes') AS s, count(*) FROM orders GROUP BY 1;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2') AS SELECT count(DISTINCT region) FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2') AS SELECT string_agg(region, ',') FROM orders;
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2', ssp.output_topic = 'out') AS
  SELECT region, count(*) FROM orders GROUP BY region;
\set topic shard_customers_ :run
CREATE FOREIGN TABLE shard_customers (id bigint OPTIONS (meta 'key'), segment text)
  SERVER kafka OPTIONS (topic :'topic', changelog 'upsert');
CREATE VIEW s WITH (ssp.continuous, ssp.shard = '0/2') AS SELECT segment, count(*) FROM shard_customers GROUP BY segment;

-- a shard: its table has the column _shard, and ssp.shard_views says
-- which shard it is, for the coordinator
CREATE VIEW totals WITH (ssp.continuous, ssp.shard = ' 0 / 1 ', ssp.commit_interval = '20ms') AS
  SELECT region, count(*) AS n, avg(amount) AS mean FROM orders GROUP BY region;
CREATE VIEW per_minute WITH (ssp.continuous, ssp.shard = '0/1', ssp.emit = 'final', ssp.idle_timeout = '1 hour') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM orders GROUP BY w;
SELECT attname, pg_get_expr(adbin, adrelid) FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
WHERE attrelid = 'totals_mrel'::regclass;
SELECT shard, shards, view_schema, view_name, mrel_schema, mrel_name FROM ssp.shard_views ORDER BY view_name;
SELECT options FROM ssp.continuous_views WHERE view = 'totals'::regclass;
INSERT INTO orders SELECT g, 'r' || g % 3, g, timestamptz '2024-01-01' + g * interval '10 s', g % 4
FROM generate_series(1, 100) g;
SELECT ssp.wait('totals'), ssp.wait('per_minute');

-- moving partitions: ssp.handover and ssp.reshard want a paused shard
CREATE VIEW plain WITH (ssp.continuous) AS SELECT count(*) FROM orders;
SELECT ssp.handover('plain');
DROP VIEW plain;
SELECT ssp.handover('totals');
SELECT ssp.reshard('totals', '0/1', '[]');
SELECT ssp.pause('totals');
SELECT ssp.reshard('totals', '0/0', '[]');
SELECT ssp.reshard('totals', '0/1', '[{"topic": "elsewhere", "partition": 0, "next_offset": 0}]');
\set otopic shard_orders_ :run
SELECT ssp.reshard('totals', '0/1', jsonb_build_array(jsonb_build_object('topic', :'otopic', 'partition', 0)));
SELECT ssp.reshard('totals', '0/1', jsonb_build_array(jsonb_build_object('topic', :'otopic', 'partition', 9, 'next_offset', 0)));
SELECT ssp.handover('totals') AS handover \gset
SELECT jsonb_array_length(:'handover') AS partitions,
       (SELECT sum((e->>'next_offset')::int) FROM jsonb_array_elements(:'handover') e) AS offsets;
-- handed over: it waits for its new shard
SELECT ssp.resume('totals');
SELECT ssp.reshard('totals', '0/1', :'handover'::jsonb || :'handover'::jsonb);
SELECT ssp.reshard('totals', '0/1', (SELECT jsonb_agg(e) FROM jsonb_array_elements(:'handover') e
                                      WHERE (e->>'partition')::int > 0));
SELECT ssp.reshard('totals', '0/1', :'handover');
SELECT ssp.resume('totals');
SELECT view, paused, resharding, options FROM ssp.continuous_views WHERE view = 'totals'::regclass;

-- the coordinator: another database, reading this one through postgres_fdw
SELECT current_database() AS here \gset
CREATE DATABASE shard_coordinator;
\c shard_coordinator
SET client_min_messages = warning;
CREATE EXTENSION ssp;
CREATE EXTENSION postgres_fdw;
RESET client_min_messages;
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
\getenv pghost PGHOST
\getenv pgport PGPORT
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic shard_orders_ :run
CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, ts timestamptz,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE SERVER here FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host :'pghost', port :'pgport', dbname :'here');
CREATE USER MAPPING FOR CURRENT_USER SERVER here;
-- refused: ssp.parallelism, and a view the shard does not have
CREATE VIEW totals WITH (ssp.continuous, ssp.shards = 'here', ssp.parallelism = 2) AS
  SELECT region, count(*) AS n, avg(amount) AS mean FROM orders GROUP BY region;
CREATE VIEW missing WITH (ssp.continuous, ssp.shards = 'here') AS SELECT count(*) FROM orders;
CREATE VIEW totals WITH (ssp.continuous, ssp.shards = 'here') AS
  SELECT region, count(*) AS n, avg(amount) AS mean FROM orders GROUP BY region;
CREATE VIEW per_minute WITH (ssp.continuous, ssp.shards = 'here', ssp.emit = 'final') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM orders GROUP BY w;
SELECT * FROM totals ORDER BY region;
SELECT * FROM per_minute ORDER BY w;
SELECT view, status, worker_pid FROM ssp.views ORDER BY view;
SELECT parallelism, shards FROM ssp.continuous_views ORDER BY view::text;
-- another partition of its table, foreign or not, would be read as a shard's rows
CREATE FOREIGN TABLE totals_more PARTITION OF totals_mrel FOR VALUES IN (7) SERVER here;
CREATE TABLE totals_local PARTITION OF totals_mrel FOR VALUES IN (8);
-- what it does not do: it reads nothing itself
SELECT ssp.wait('totals');
SELECT ssp.pause('totals');
SELECT ssp.reset('totals');
CREATE OR REPLACE VIEW totals WITH (ssp.continuous, ssp.shards = 'here') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
-- a rollup of a view over shards merges the shards' states
CREATE VIEW everywhere WITH (ssp.rollup) AS SELECT ssp.combine(n) AS n, ssp.combine(mean) AS mean FROM totals;
SELECT * FROM everywhere;
DROP VIEW everywhere;
-- and over windows with ssp.emit = 'final': those every shard has closed
CREATE VIEW closed WITH (ssp.rollup) AS SELECT ssp.combine(n) AS n FROM per_minute;
SELECT (SELECT n FROM closed) = (SELECT sum(n) FROM per_minute) AS same, (SELECT n FROM closed) > 0 AS some;
DROP VIEW closed;
-- a shard's server goes with the views over it, never from under them
\set VERBOSITY terse
DROP SERVER here;
DROP VIEW totals;
DROP SERVER here CASCADE;
\set VERBOSITY default
SELECT count(*) FROM pg_class WHERE relname ~ '^(totals|per_minute)';
SELECT count(*) FROM ssp.continuous_views;
\c :here
DROP DATABASE shard_coordinator WITH (FORCE);
DROP SERVER kafka CASCADE;
