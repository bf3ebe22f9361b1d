-- Changelogs: streams whose messages are each the new version of their
-- key's row (changelog 'upsert'; format 'debezium'), and aggregates over
-- them that take a key's old version back when a new one comes.  Each view
-- must equal the aggregate over the final state of the table.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic cl_customers_ :run
CREATE FOREIGN TABLE clients (id int, segment text, balance numeric, active boolean,
    p int OPTIONS (meta 'partition'), ts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic', key 'id', changelog 'upsert');
-- the same topic, raw: tombstones, and a message without a key
CREATE FOREIGN TABLE clients_raw (id text, v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text', key 'id');
-- what the table holds, kept by hand: the truth the views must equal
CREATE TABLE truth (id int PRIMARY KEY, segment text, balance numeric, active boolean);
CREATE TABLE client_regions (segment text PRIMARY KEY, region text);
INSERT INTO client_regions VALUES ('retail', 'north'), ('pro', 'south'), ('vip', 'south');

-- refused
CREATE FOREIGN TABLE nokey (a int) SERVER kafka OPTIONS (topic 'x', changelog 'append');
CREATE FOREIGN TABLE nokey (a int) SERVER kafka OPTIONS (topic 'x', changelog 'upsert');
CREATE FOREIGN TABLE nokey (a int) SERVER kafka OPTIONS (topic 'x', format 'debezium');
CREATE VIEW r WITH (ssp.continuous) AS SELECT segment, stddev(balance) FROM clients GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous, ssp.output_topic = 'x') AS SELECT segment, min(balance) FROM clients GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS SELECT segment, avg(balance::float8) FROM clients GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS SELECT count(DISTINCT segment) FROM clients;
CREATE VIEW r WITH (ssp.continuous) AS SELECT id, segment FROM clients;
CREATE VIEW r WITH (ssp.continuous, ssp.primary_key = 'segment') AS SELECT id, segment FROM clients;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2) AS SELECT count(*) FROM clients;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 hour'), count(*) FROM clients GROUP BY 1;

-- 60 clients in three segments, with balances
INSERT INTO clients (id, segment, balance, active)
  SELECT g, (ARRAY['retail', 'pro', 'vip'])[g % 3 + 1], g * 10.5, g % 4 <> 0 FROM generate_series(1, 60) g;
INSERT INTO truth SELECT g, (ARRAY['retail', 'pro', 'vip'])[g % 3 + 1], g * 10.5, g % 4 <> 0 FROM generate_series(1, 60) g;

-- per segment: clients, balances, the active ones; per region (a table
-- joined); over everyone active; and the rows themselves
CREATE VIEW per_segment WITH (ssp.continuous) AS
  SELECT segment, count(*) AS clients, sum(balance) AS balance, avg(balance) AS avg_balance,
         count(*) FILTER (WHERE active) AS active, count(balance) AS with_balance,
         min(balance) AS lowest, max(id) FILTER (WHERE active) AS last_active
  FROM clients GROUP BY segment;
CREATE VIEW per_region WITH (ssp.continuous) AS
  SELECT s.region, count(*) AS clients, sum(c.balance) AS balance
  FROM clients c JOIN client_regions s ON s.segment = c.segment GROUP BY s.region;
CREATE VIEW active_total WITH (ssp.continuous) AS
  SELECT count(*) AS clients, sum(balance) AS balance, max(balance) AS highest FROM clients WHERE active;
CREATE VIEW current WITH (ssp.continuous, ssp.primary_key = 'id') AS
  SELECT id, segment, balance FROM clients;
CREATE VIEW segments_present WITH (ssp.continuous) AS SELECT segment FROM clients GROUP BY segment;
SELECT buffers FROM ssp.continuous_views WHERE view = 'per_segment'::regclass;
\d per_segment_versions
-- the index of the groups with no rows left is ssp's: refused
SELECT indexrelid::regclass AS rows_index FROM pg_index i JOIN ssp.continuous_views c ON i.indrelid = c.mrel
WHERE c.view = 'per_segment'::regclass AND NOT i.indisunique \gset
\set VERBOSITY terse
DROP INDEX :rows_index;
\set VERBOSITY default
SELECT ssp.wait('per_segment'), ssp.wait('per_region'), ssp.wait('active_total'), ssp.wait('current');
SELECT * FROM per_segment ORDER BY segment;

-- clients move between segments, balances change, some leave (a
-- tombstone), one comes back, and a key is updated twice in one message
-- run; a message without a key is a dead letter
INSERT INTO clients (id, segment, balance, active)
  SELECT g, 'vip', g * 100, true FROM generate_series(1, 20) g;
INSERT INTO clients (id, segment, balance, active)
  SELECT g, 'retail', NULL, false FROM generate_series(21, 30) g;
INSERT INTO clients_raw (id, v) SELECT g::text, NULL FROM generate_series(31, 45) g;
INSERT INTO clients_raw (id, v) VALUES (NULL, '{"segment": "pro", "balance": 1}');
INSERT INTO clients (id, segment, balance, active) VALUES (33, 'pro', 7.25, true), (1, 'pro', 1.5, true);
UPDATE truth SET segment = 'vip', balance = id * 100, active = true WHERE id BETWEEN 1 AND 20;
UPDATE truth SET segment = 'retail', balance = NULL, active = false WHERE id BETWEEN 21 AND 30;
DELETE FROM truth WHERE id BETWEEN 31 AND 45;
INSERT INTO truth VALUES (33, 'pro', 7.25, true);
UPDATE truth SET segment = 'pro', balance = 1.5, active = true WHERE id = 1;
SELECT ssp.wait('per_segment'), ssp.wait('per_region'), ssp.wait('active_total'), ssp.wait('current'),
       ssp.wait('segments_present');

SELECT * FROM per_segment ORDER BY segment;
SELECT count(*) AS differences FROM
  ((SELECT * FROM per_segment EXCEPT ALL
    SELECT segment, count(*), sum(balance), avg(balance), count(*) FILTER (WHERE active), count(balance),
           min(balance), max(id) FILTER (WHERE active)
    FROM truth GROUP BY segment)
   UNION ALL
   (SELECT segment, count(*), sum(balance), avg(balance), count(*) FILTER (WHERE active), count(balance),
           min(balance), max(id) FILTER (WHERE active)
    FROM truth GROUP BY segment EXCEPT ALL SELECT * FROM per_segment)) d;
SELECT * FROM per_region ORDER BY region;
SELECT count(*) AS differences FROM
  ((SELECT * FROM per_region EXCEPT ALL
    SELECT s.region, count(*), sum(t.balance) FROM truth t JOIN client_regions s USING (segment) GROUP BY 1)
   UNION ALL
   (SELECT s.region, count(*), sum(t.balance) FROM truth t JOIN client_regions s USING (segment) GROUP BY 1
    EXCEPT ALL SELECT * FROM per_region)) d;
SELECT * FROM active_total;
SELECT (SELECT row(clients, balance, highest) FROM active_total) =
       (SELECT row(count(*), sum(balance), max(balance)) FROM truth WHERE active) AS equal;
SELECT count(*) AS differences FROM
  ((SELECT * FROM current EXCEPT ALL SELECT id, segment, balance FROM truth)
   UNION ALL (SELECT id, segment, balance FROM truth EXCEPT ALL SELECT * FROM current)) d;
SELECT array_agg(segment ORDER BY segment) AS present FROM segments_present;
SELECT view, processed, dead_letters, last_error FROM ssp.views ORDER BY view::text;
SELECT view, error FROM ssp.dead_letters ORDER BY view::text;

-- a segment whose last customer leaves is gone; the total without GROUP BY stays
INSERT INTO clients_raw (id, v) SELECT id::text, NULL FROM truth;
DELETE FROM truth;
SELECT ssp.wait('per_segment'), ssp.wait('active_total'), ssp.wait('segments_present');
SELECT count(*) AS segments FROM per_segment;
SELECT count(*) AS present FROM segments_present;
SELECT * FROM active_total;

-- reset replays the topic into an empty view and an empty table of versions
SELECT ssp.reset('per_region');
SELECT ssp.wait('per_region');
SELECT count(*) AS regions FROM per_region;
SELECT count(*) AS versions FROM per_region_versions;

-- Debezium's JSON envelope, with and without the schema/payload wrapper of
-- its converter; keys as Debezium writes them.  INSERT writes creates, and
-- a row of NULLs a delete.
\set topic cl_accounts_ :run
CREATE FOREIGN TABLE accounts (id int, owner text, balance numeric)
  SERVER kafka OPTIONS (topic :'topic', format 'debezium', key 'id');
CREATE FOREIGN TABLE accounts_raw (k text, v text)
  SERVER kafka OPTIONS (topic :'topic', format 'text', key 'k');
INSERT INTO accounts VALUES (1, 'ann', 100), (3, 'ann', 25);
INSERT INTO accounts_raw VALUES ('{"schema": {"type": "struct"}, "payload": {"id": 2}}',
  '{"schema": {"type": "struct"}, "payload": {"before": null, "after": {"id": 2, "owner": "bob", "balance": 50}, "op": "c"}}');
CREATE VIEW per_owner WITH (ssp.continuous) AS
  SELECT owner, count(*) AS accounts, sum(balance) AS balance FROM accounts GROUP BY owner;
CREATE VIEW accounts_live WITH (ssp.continuous, ssp.primary_key = 'id') AS
  SELECT id, owner, balance FROM accounts;
INSERT INTO accounts_raw VALUES
  ('{"id": 4}', '{"before": null, "after": {"id": 4, "owner": "cy", "balance": 10}, "op": "r", "ts_ms": 1}'),
  ('{"schema": {"type": "struct"}, "payload": {"id": 2}}',
   '{"schema": {"type": "struct"}, "payload": {"before": {"id": 2, "owner": "bob", "balance": 50}, "after": {"id": 2, "owner": "ann", "balance": 75}, "op": "u"}}'),
  ('{"id":3}', '{"before": {"id": 3}, "after": null, "op": "d"}'),
  ('{"id":3}', NULL),
  ('{"id": 5}', '{"op": "t"}'),
  ('{"id": 6}', '{"schema": {}, "payload": {"ddl": "ALTER TABLE"}}'),
  ('{"id": 7}', '{"after": null, "op": "u"}');
INSERT INTO accounts (id, owner, balance) VALUES (1, NULL, NULL);
SELECT ssp.wait('per_owner'), ssp.wait('accounts_live');
SELECT view, status, processed, dead_letters, last_error FROM ssp.views
  WHERE view IN ('per_owner'::regclass, 'accounts_live'::regclass) ORDER BY view::text;
SELECT * FROM per_owner ORDER BY owner;
SELECT * FROM accounts_live ORDER BY id;
SELECT payload IS NOT NULL AS has_payload, error FROM ssp.dead_letters
  WHERE view = 'per_owner'::regclass ORDER BY "offset", partition;

-- a stream made a changelog under a view kept for a log: the view fails, saying why
\set topic cl_plain_ :run
CREATE FOREIGN TABLE plain_log (id int, v int) SERVER kafka OPTIONS (topic :'topic', key 'id');
INSERT INTO plain_log VALUES (1, 1);
CREATE VIEW plain_sum WITH (ssp.continuous) AS SELECT sum(v) FROM plain_log;
SELECT ssp.wait('plain_sum');
ALTER FOREIGN TABLE plain_log OPTIONS (ADD changelog 'upsert');
INSERT INTO plain_log VALUES (1, 2);
DO $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT last_error IS NOT NULL FROM ssp.views WHERE view = 'plain_sum'::regclass);
    PERFORM pg_sleep(0.1);
  END LOOP;
END
$$;
SELECT last_error FROM ssp.views WHERE view = 'plain_sum'::regclass;
SELECT * FROM plain_sum;
-- and the other way: a changelog made a log under views kept for versions
-- of keys (a sum, and a view of the latest row per key), and a DISTINCT
-- count over a stream made a changelog under it
\set topic cl_versions_ :run
CREATE FOREIGN TABLE was_changelog (id int, v int) SERVER kafka
  OPTIONS (topic :'topic', key 'id', changelog 'upsert');
INSERT INTO was_changelog VALUES (1, 1), (1, 5), (2, 2);
CREATE VIEW versions_sum WITH (ssp.continuous) AS SELECT sum(v) AS total, count(*) AS n FROM was_changelog;
CREATE VIEW versions_latest WITH (ssp.continuous, ssp.primary_key = 'id') AS SELECT id, v FROM was_changelog;
\set topic cl_distinct_ :run
CREATE FOREIGN TABLE distinct_log (id int, v int) SERVER kafka OPTIONS (topic :'topic', key 'id');
INSERT INTO distinct_log VALUES (1, 1), (1, 1), (2, 3);
CREATE VIEW distinct_n WITH (ssp.continuous) AS SELECT count(DISTINCT v) AS n FROM distinct_log;
SELECT ssp.wait('versions_sum'), ssp.wait('versions_latest'), ssp.wait('distinct_n');
SELECT * FROM versions_sum;
SELECT * FROM distinct_n;
ALTER FOREIGN TABLE was_changelog OPTIONS (DROP changelog);
INSERT INTO was_changelog VALUES (2, 7);
ALTER FOREIGN TABLE distinct_log OPTIONS (ADD changelog 'upsert');
INSERT INTO distinct_log VALUES (3, 4);
DO $$
BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT count(*) = 2 FROM ssp.views
               WHERE view IN ('versions_sum'::regclass, 'distinct_n'::regclass) AND last_error IS NOT NULL);
    PERFORM pg_sleep(0.1);
  END LOOP;
END
$$;
SELECT view, last_error FROM ssp.views WHERE view IN ('versions_sum'::regclass, 'distinct_n'::regclass)
  ORDER BY view::text;
-- nothing of the new messages was applied
SELECT * FROM versions_sum;
SELECT * FROM distinct_n;
-- the view of the latest row per key reads a log as it read the changelog
SELECT ssp.wait('versions_latest');
SELECT * FROM versions_latest ORDER BY id;

-- count(x) of a composite counts one whose fields are all null, a value,
-- as Postgres's count does, when its key's version comes and goes
\set topic cl_pairs_ :run
CREATE FOREIGN TABLE pairs (id int, a text, b int) SERVER kafka OPTIONS (topic :'topic', key 'id', changelog 'upsert');
CREATE TYPE a_b AS (a text, b int);
CREATE VIEW pair_counts WITH (ssp.continuous) AS
  SELECT count((a, b)::a_b) AS n, count(*) AS versions FROM pairs;
INSERT INTO pairs VALUES (1, 'x', 1), (2, NULL, NULL), (3, 'y', NULL);
SELECT ssp.wait('pair_counts');
SELECT * FROM pair_counts;
INSERT INTO pairs VALUES (2, 'z', 2), (4, NULL, NULL);
SELECT ssp.wait('pair_counts');
SELECT * FROM pair_counts;
DROP VIEW pair_counts;
DROP TYPE a_b;

-- NaN and the infinities leave a sum and an average of numerics as other
-- values do, batch after batch (NaN - NaN was NaN for good); in a GROUP BY
-- too, with a filter
\set topic cl_readings_ :run
CREATE FOREIGN TABLE readings (k text, v numeric) SERVER kafka OPTIONS (topic :'topic', key 'k', changelog 'upsert');
CREATE VIEW reading_totals WITH (ssp.continuous) AS
  SELECT count(v) AS n, sum(v) AS total, avg(v) AS mean, sum(v) FILTER (WHERE k <> 'z') AS not_z FROM readings;
CREATE VIEW reading_groups WITH (ssp.continuous) AS
  SELECT k < 'x' AS early, sum(v) AS total, avg(v) AS mean FROM readings GROUP BY 1;
CREATE TABLE readings_now (k text PRIMARY KEY, v numeric);
CREATE FUNCTION readings_check() RETURNS TABLE (n bigint, total numeric, mean numeric, not_z numeric, same boolean)
  LANGUAGE sql AS $$
    SELECT r.*, r IS NOT DISTINCT FROM (SELECT t FROM (SELECT count(v), sum(v), avg(v), sum(v) FILTER (WHERE k <> 'z')
                                                        FROM readings_now) t)
    FROM reading_totals r $$;
INSERT INTO readings VALUES ('x', 'NaN'), ('y', 'Infinity'), ('z', 1.5);
INSERT INTO readings_now VALUES ('x', 'NaN'), ('y', 'Infinity'), ('z', 1.5);
SELECT ssp.wait('reading_totals'), ssp.wait('reading_groups');
SELECT * FROM readings_check();
INSERT INTO readings VALUES ('x', 7);
UPDATE readings_now SET v = 7 WHERE k = 'x';
SELECT ssp.wait('reading_totals');
SELECT * FROM readings_check();
INSERT INTO readings VALUES ('w', '-Infinity');
INSERT INTO readings_now VALUES ('w', '-Infinity');
SELECT ssp.wait('reading_totals');
SELECT * FROM readings_check();
INSERT INTO readings VALUES ('y', 1), ('w', NULL);
UPDATE readings_now SET v = CASE k WHEN 'y' THEN 1 END WHERE k IN ('y', 'w');
SELECT ssp.wait('reading_totals'), ssp.wait('reading_groups');
SELECT * FROM readings_check();
SELECT g.*, g IS NOT DISTINCT FROM (SELECT t FROM (SELECT k < 'x', sum(v), avg(v) FROM readings_now
                                                    WHERE (k < 'x') = g.early GROUP BY 1) t) AS same
  FROM reading_groups g ORDER BY early;
DROP VIEW reading_totals, reading_groups;
DROP FUNCTION readings_check();
DROP TABLE readings_now;

DROP SERVER kafka CASCADE;
