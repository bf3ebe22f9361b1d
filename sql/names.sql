-- Names of every legal length: views, streams and schemas named with 1 to
-- 63 bytes, multibyte names, and names whose derived names are taken.  A
-- view's own objects (NAME_mrel, NAME_outbox, NAME_changes, NAME_left,
-- NAME_right and NAME_distinct) are named as Postgres names an index: NAME clipped at a
-- character so that the whole fits in 63 bytes, a number added if taken.
\getenv brokers SSP_BROKERS
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SERVER names_kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE names_orders (id bigint, region text, amount numeric, ts timestamptz)
  SERVER names_kafka OPTIONS (topic 'names_orders', timestamp 'ts');
INSERT INTO names_orders SELECT g, 'r' || g % 3, g, '2024-01-01'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 30) g;

-- every length from 1 to 63, created, paused, resumed, reset, renamed to
-- the other end of the range, and dropped; what each one's table is named
CREATE TABLE lengths (n int, mrel text);
CREATE TABLE one_rows (n int, one_rows bigint);
DO $$
DECLARE
  name text;
  other text;
  rows bigint;
BEGIN
  FOR n IN 1 .. 63 LOOP
    name := repeat('v', n);
    other := repeat('w', 64 - n);
    -- (a view without GROUP BY: its one row, at CREATE VIEW and at reset)
    EXECUTE format('CREATE VIEW %I WITH (ssp.continuous) AS '
                   'SELECT count(*) AS n, count(DISTINCT id %% 7) AS d FROM names_orders WHERE id < 0', name);
    EXECUTE format('ALTER VIEW %I RENAME TO %I', name, other);
    PERFORM ssp.reset(other);
    EXECUTE format('SELECT count(*) FROM %I WHERE n = 0 AND d = 0', other) INTO rows;
    INSERT INTO one_rows VALUES (n, rows);
    EXECUTE format('DROP VIEW %I', other);
    EXECUTE format('CREATE VIEW %I WITH (ssp.continuous, ssp.output_topic = ''names_changes'') AS '
                   'SELECT region, count(*) AS n, count(DISTINCT id %% 7) AS d FROM names_orders GROUP BY region', name);
    PERFORM ssp.pause(name);
    PERFORM ssp.resume(name);
    PERFORM ssp.reset(name);
    EXECUTE format('ALTER VIEW %I RENAME TO %I', name, other);
    PERFORM ssp.reset(other);
    INSERT INTO lengths VALUES (n, (SELECT mrel::text FROM ssp.continuous_views WHERE view = other::regclass));
    EXECUTE format('DROP VIEW %I', other);
  END LOOP;
END $$;
SELECT n, mrel FROM lengths WHERE n IN (1, 2, 57, 58, 59, 62, 63) ORDER BY n;
SELECT count(DISTINCT mrel) AS tables, max(octet_length(mrel)) AS longest FROM lengths;
SELECT count(*) AS lengths, min(one_rows), max(one_rows) FROM one_rows;
-- nothing is left behind
SELECT count(*) FROM pg_class WHERE relname ~ '^[vw]+_' OR relname ~ '^[vw]+$';
SELECT count(*) FROM pg_proc WHERE proname ~ '^[vw]+_changes';
SELECT count(*) FROM ssp.continuous_views;

-- the longest names, committed, so that their workers run them: a view of
-- 63 bytes and one of 62, whose clipped names are the same, in a schema of
-- 63 bytes, over a stream of 63 bytes (each view publishing to a topic of
-- its own); a join of two streams (buffers)
CREATE SCHEMA sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss;
SET search_path = sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss, public;
CREATE FOREIGN TABLE ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt
  (id bigint, region text, amount numeric, ts timestamptz)
  SERVER names_kafka OPTIONS (topic 'names_orders', timestamp 'ts');
CREATE VIEW vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv WITH (ssp.continuous, ssp.output_topic = 'names_changes') AS
  SELECT region, count(*) AS n, sum(amount) AS total, count(DISTINCT id % 4) AS d FROM ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt GROUP BY region;
CREATE VIEW vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv WITH (ssp.continuous, ssp.output_topic = 'names_changes_62') AS
  SELECT region, count(*) AS n, sum(amount) AS total FROM ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt GROUP BY region;
-- (a self-join of a topic is refused: one offset per topic and partition)
CREATE VIEW jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj WITH (ssp.continuous) AS
  SELECT a.region, count(*) AS n FROM ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt a
  JOIN names_orders b ON b.id = a.id AND b.ts BETWEEN a.ts AND a.ts + interval '1 s' GROUP BY a.region;
CREATE FOREIGN TABLE pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp
  (id bigint, ts timestamptz) SERVER names_kafka OPTIONS (topic 'names_payments', timestamp 'ts');
INSERT INTO pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp
  SELECT g, '2024-01-01'::timestamptz + g * interval '1 s' FROM generate_series(1, 30) g;
CREATE VIEW jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj WITH (ssp.continuous) AS
  SELECT a.region, count(*) AS n, count(DISTINCT b.id % 5) AS d FROM ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt a
  JOIN pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp b
    ON b.id = a.id AND b.ts BETWEEN a.ts AND a.ts + interval '1 s' GROUP BY a.region;
SELECT view, mrel, outbox FROM ssp.continuous_views ORDER BY view::text;
SELECT relname FROM pg_class WHERE relnamespace = 'sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss'::regnamespace
   AND relkind = 'r' ORDER BY relname;
SELECT proname FROM pg_proc WHERE pronamespace = 'sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss'::regnamespace
 ORDER BY proname;
SELECT ssp.wait('vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'),
       ssp.wait('vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'),
       ssp.wait('jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj');
SELECT * FROM vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv ORDER BY region;
SELECT * FROM vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv ORDER BY region;
SELECT * FROM jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj ORDER BY region;
SELECT ssp.reset('vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv');
SELECT ssp.reset('jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj');
SELECT ssp.wait('vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'),
       ssp.wait('jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj');
SELECT sum(n) FROM vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv;
-- what a continuous view refuses says its whole name, and its table's
UPDATE vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv SET n = 0;
CREATE RULE r AS ON DELETE TO vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv DO INSTEAD NOTHING;
-- a view whose neighbour was reset may be between two processes for a moment
-- (handed to a reader, or leaving one to publish alone): wait until each runs
DO $$BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM ssp.views WHERE status <> 'running');
    PERFORM pg_sleep(0.1);
  END LOOP;
END$$;
SELECT view, status, last_error FROM ssp.views ORDER BY view::text;
RESET search_path;
DROP SCHEMA sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss CASCADE;

-- multibyte names: clipped at a character, never inside one
CREATE VIEW "éééééééééééééééééééééééééééééé€" WITH (ssp.continuous, ssp.output_topic = 'names_changes') AS
  SELECT region, count(*) AS n FROM names_orders GROUP BY region;
CREATE VIEW "🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀" WITH (ssp.continuous) AS
  SELECT region, count(*) AS n FROM names_orders GROUP BY region;
SELECT view, r.relname AS mrel, octet_length(r.relname) AS bytes, outbox
  FROM ssp.continuous_views c JOIN pg_class r ON r.oid = c.mrel ORDER BY view::text;
SELECT ssp.wait('"éééééééééééééééééééééééééééééé€"'), ssp.wait('"🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀"');
SELECT sum(n) FROM "éééééééééééééééééééééééééééééé€";
DELETE FROM "éééééééééééééééééééééééééééééé€";
CREATE TRIGGER t INSTEAD OF DELETE ON "éééééééééééééééééééééééééééééé€" FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
DROP VIEW "éééééééééééééééééééééééééééééé€", "🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀";

-- derived names already taken: the next free one
CREATE TABLE taken_mrel (x int);
CREATE TABLE taken_outbox (x int);
CREATE FUNCTION taken_changes() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE VIEW taken WITH (ssp.continuous, ssp.output_topic = 'names_changes') AS
  SELECT region, count(*) AS n FROM names_orders GROUP BY region;
SELECT view, mrel, outbox FROM ssp.continuous_views;
SELECT proname FROM pg_proc WHERE proname LIKE 'taken%' ORDER BY 1;
SELECT ssp.wait('taken');
SELECT sum(n) FROM taken;
DROP VIEW taken;
SELECT relname FROM pg_class WHERE relname LIKE 'taken%' ORDER BY 1;
DROP TABLE taken_mrel, taken_outbox;
DROP FUNCTION taken_changes();

DROP TABLE lengths, one_rows;
DROP FOREIGN TABLE names_orders;
DROP SERVER names_kafka;
