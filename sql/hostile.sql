-- Hostile input: every kind of bad message ends in ssp.dead_letters with a
-- reason, or in the view; nothing crashes, nothing is lost.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic hostile_ :run
-- the same topic as raw bytes (to write anything) and as JSON
CREATE FOREIGN TABLE raw (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
CREATE FOREIGN TABLE msgs (id bigint, name text, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO raw (v, p) VALUES (convert_to('{"id": 0, "name": "first"}', 'UTF8'), 0);
CREATE VIEW hv WITH (ssp.continuous) AS SELECT o, id, name FROM msgs;
INSERT INTO raw (v, p) SELECT v, 0 FROM (VALUES
  (1, convert_to('{"id": 1, "name": "ok"}', 'UTF8')),
  (2, convert_to('{"id": 2, "name": "trunc', 'UTF8')),
  (3, '\xfffe00676172626167650102'::bytea),
  (4, convert_to('{"id": 4, "name": ' || repeat('[', 100000) || repeat(']', 100000) || '}', 'UTF8')),
  (5, convert_to('{"id": 99999999999999999999999999, "name": "big"}', 'UTF8')),
  (6, convert_to('{"id": 6, "name": "nul\u0000byte"}', 'UTF8')),
  (7, '\x7b226964223a20372c20226e616d65223a2022626164c328757466227d'::bytea),
  (8, '\x'::bytea),
  (9, convert_to('null', 'UTF8')),
  (10, convert_to('{"id": null, "name": null}', 'UTF8')),
  (11, '\x7b226964223a2031312c20226e616d65223a2022726177006e756c227d'::bytea),
  (12, convert_to('[1, 2, 3]', 'UTF8')),
  (13, convert_to('{"id": "13", "name": 13}', 'UTF8')),
  (14, convert_to('{"id": 1e400, "name": "inf"}', 'UTF8')),
  (15, convert_to('{"id": 15, "name": "é\u00e9\ud83d\ude00"}', 'UTF8')),
  (16, convert_to('{"id": 16, "id": 17, "name": "duplicate key"}', 'UTF8')),
  (17, convert_to('{"id": 18, "name": "' || repeat('x', 500000) || '"}', 'UTF8')),
  (18, NULL),
  (19, convert_to('  {"id": 19, "name": "spaces"}  ', 'UTF8')),
  (20, convert_to('{"id": 20, "name": "trailing"} x', 'UTF8'))) AS m(n, v)
  ORDER BY n;
SELECT ssp.wait('hv');
SELECT o, id, left(name, 20) AS name, length(name) FROM hv ORDER BY o;
SELECT "offset", left(error, 140) AS error FROM ssp.dead_letters WHERE view = 'hv'::regclass ORDER BY 1;
-- every message is in the view or a dead letter
SELECT processed, dead_letters, processed + dead_letters AS total, status, last_error
  FROM ssp.views WHERE view = 'hv'::regclass;
SELECT count(*) AS messages FROM raw;
-- a scan stops at the first bad message and says where
SELECT count(*) FROM msgs;
-- a message larger than the producer allows is refused, clearly
INSERT INTO raw (v, p) VALUES (convert_to(repeat('x', 11000000), 'UTF8'), 0);
DROP VIEW hv;
SELECT count(*) FROM ssp.dead_letters;

-- identifiers and option values that try SQL injection are only names:
-- quotes, semicolons and comments in the stream's, its columns', the view's
-- and its columns' names reach the apply statement quoted
CREATE TABLE victim (x int);
INSERT INTO victim VALUES (1);
\set topic hostile_names_ :run
CREATE FOREIGN TABLE "s'; DROP TABLE victim; --" (
    "k"")); DROP TABLE victim; --" text, "v'--" int, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO "s'; DROP TABLE victim; --" VALUES ('a"b', 1, 0), ('a"b', 2, 0), ($$c'd$$, 3, 0), (NULL, 4, 0);
CREATE VIEW "v""; DROP TABLE victim; --" ("g'; --", "n"";") WITH (ssp.continuous) AS
  SELECT "k"")); DROP TABLE victim; --", sum("v'--") FROM "s'; DROP TABLE victim; --"
  GROUP BY 1;
SELECT ssp.wait('"v""; DROP TABLE victim; --"');
SELECT * FROM "v""; DROP TABLE victim; --" ORDER BY 1;
SELECT topics FROM ssp.views WHERE view = '"v""; DROP TABLE victim; --"'::regclass;
-- group keys named as the columns a view keeps for itself (its states
-- _aN, _g0, _w, _ssp_rows, and the names given to unnamed keys): the keys
-- take other names in its table, and the view shows them as named
\set topic hostile_own_ :run
CREATE FOREIGN TABLE own_names ("_a1" int, "_g1" int, "_w" int, "_ssp_rows" int, x int)
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO own_names SELECT g % 2, g % 3, g % 4, g % 5, g FROM generate_series(1, 60) g;
CREATE VIEW own_plain AS
  SELECT "_a1", "_w", "_g1" + 0, "_ssp_rows" AS "_g0", count(*) AS "_a1_n", count(DISTINCT x % 7) AS "_g3",
         sum(x) AS "_a2"
  FROM own_names GROUP BY 1, 2, 3, 4;
SELECT format('CREATE VIEW %I WITH (ssp.continuous%s) AS %s', v, o, pg_get_viewdef('own_plain'::regclass))
FROM (VALUES ('own_cv', ''), ('own_cv2', ', ssp.parallelism = 2')) x(v, o) \gexec
SELECT ssp.wait('own_cv'), ssp.wait('own_cv2');
SELECT count(*) AS differences FROM
  ((SELECT * FROM own_cv EXCEPT ALL SELECT * FROM own_plain) UNION ALL (SELECT * FROM own_plain EXCEPT ALL SELECT * FROM own_cv)
   UNION ALL (SELECT * FROM own_cv2 EXCEPT ALL SELECT * FROM own_plain) UNION ALL (SELECT * FROM own_plain EXCEPT ALL SELECT * FROM own_cv2)) d;
SELECT attname FROM pg_attribute WHERE attrelid = 'own_cv_mrel'::regclass AND attnum > 0 ORDER BY attnum;
DROP VIEW own_cv, own_cv2, own_plain;
-- but not the columns ssp adds to a stream's rows: refused with the stream,
-- named, where a view over it failed at its first batch ("ambiguous")
CREATE FOREIGN TABLE hidden_names (_ssp_offset bigint, x int) SERVER kafka OPTIONS (topic :'topic');
CREATE FOREIGN TABLE hidden_names (id bigint, _ssp_tombstone bool OPTIONS (field 'gone')) SERVER kafka OPTIONS (topic :'topic');
CREATE FOREIGN TABLE hidden_names (id bigint, "_ssp_partition" int OPTIONS (meta 'partition')) SERVER kafka OPTIONS (topic :'topic');
CREATE FOREIGN TABLE hidden_names (id bigint, offs bigint OPTIONS (field '_ssp_offset')) SERVER kafka OPTIONS (topic :'topic');
ALTER FOREIGN TABLE hidden_names ADD COLUMN _ssp_run int;
ALTER FOREIGN TABLE hidden_names RENAME COLUMN offs TO _ssp_seq;
ALTER FOREIGN TABLE hidden_names ADD COLUMN _ssp_matched bool;
DROP FOREIGN TABLE hidden_names;
-- a topic name that Kafka cannot have is refused with the stream
CREATE FOREIGN TABLE bad_topic (x int) SERVER kafka OPTIONS (topic 'x''; DROP TABLE victim; --');
SELECT * FROM victim;
-- a view's owner may write its rows in ssp.offsets and
-- ssp.continuous_views (a restore does): what CREATE VIEW would refuse
-- there fails the view, saying what is wrong, not its process (a
-- partition of -2147483648 wrote 16 GB before an array) nor the scheduler
-- (which listed 2147483647 parallel parts); a row of a table starts none
\set topic hostile_cat_ :run
CREATE FOREIGN TABLE cat_s (x int) SERVER kafka OPTIONS (topic :'topic');
INSERT INTO cat_s VALUES (1);
CREATE VIEW cat_off WITH (ssp.continuous) AS SELECT count(*) FROM cat_s;
CREATE VIEW cat_par WITH (ssp.continuous) AS SELECT count(*) FROM cat_s;
SELECT ssp.wait('cat_off'), ssp.wait('cat_par');
SELECT ssp.pause('cat_off');
-- once no process serves it, which then reads the planted row at resume
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT worker_pid IS NULL FROM ssp.views WHERE view = 'cat_off'::regclass);
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
INSERT INTO ssp.offsets (view, topic, partition, next_offset) VALUES ('cat_off', :'topic', -2147483648, 0);
SELECT ssp.resume('cat_off');
UPDATE ssp.continuous_views SET parallelism = 2147483647 WHERE view = 'cat_par'::regclass;
CREATE TABLE cat_t ();
INSERT INTO ssp.continuous_views (view, mrel, streams, topics, apply_sql, start, commit_interval_ms,
    batch_size, on_error, names, options, parallelism)
  VALUES ('cat_t', 'cat_t', '{}', '{}', '', 'earliest', 1000, 1, 'skip', '{}', '{}', 16);
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT count(*) FROM ssp.views WHERE status = 'failed'
               AND view IN ('cat_off'::regclass, 'cat_par'::regclass)) = 2;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT view, status, last_error FROM ssp.views
  WHERE view IN ('cat_off'::regclass, 'cat_par'::regclass, 'cat_t'::regclass) ORDER BY view::text;
-- nor does a row of a view "over shards" (parallelism 0, which the
-- scheduler makes whole again after a restore) stop the scheduler: a view
-- made after it runs
CREATE VIEW cat_v AS SELECT 1 AS x;
INSERT INTO ssp.continuous_views (view, mrel, streams, topics, apply_sql, start, commit_interval_ms,
    batch_size, on_error, names, options, parallelism)
  VALUES ('cat_v', 'cat_t', '{}', '{}', '', 'earliest', 1000, 0, 'skip', '{}', '{}', 0);
CREATE VIEW cat_after WITH (ssp.continuous) AS SELECT count(*) FROM cat_s;
SELECT ssp.wait('cat_after', '60 s');
SELECT * FROM cat_after;
DELETE FROM ssp.continuous_views WHERE view IN ('cat_t'::regclass, 'cat_v'::regclass);
DROP VIEW cat_off, cat_par, cat_after, cat_v;
DROP TABLE cat_t;
DROP VIEW "v""; DROP TABLE victim; --";
DROP TABLE victim;
DROP SERVER kafka CASCADE;
