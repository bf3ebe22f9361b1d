-- ssp.output_topic: what keeps the changes a view publishes whole
-- (doc/outputs.md; test/tap/t/016_output_topic.pl publishes them through
-- crashes).  The triggers that put a view's changes in its outbox, and
-- their function, are the view's own; its workers fire them whatever the
-- database's settings say; one view publishes to a topic, and a new one
-- numbers its changes above those at the topic's end; a change too large
-- to send fails the view, saying so, after those before it are published.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic output_orders_ :run
\set out output_changes_ :run
CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric)
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO orders SELECT g, 'r' || g % 5, g / 10.0 FROM generate_series(1, 100) g;
-- the changes as a consumer reads them
CREATE FOREIGN TABLE changes (region text, n bigint, total numeric, third float8,
    _op text, _seq bigint, seq text OPTIONS (meta 'header:ssp-seq'),
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'out');
-- whether a view runs and has published every change of its outbox
CREATE FUNCTION published(v regclass) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  box regclass := (SELECT outbox FROM ssp.continuous_views WHERE view = v);
  empty boolean;
BEGIN
  FOR i IN 1 .. 600 LOOP
    EXECUTE format('SELECT NOT EXISTS (SELECT FROM %s)', box) INTO empty;
    IF empty AND EXISTS (SELECT FROM ssp.views WHERE view = v AND status = 'running') THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
-- whether every view runs, each in a process that was not running before
CREATE TABLE old_workers (pid int);
CREATE FUNCTION restarted() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    IF NOT EXISTS (SELECT FROM ssp.views WHERE status <> 'running' OR worker_pid IS NULL
                   OR worker_pid IN (SELECT pid FROM old_workers)) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
CREATE VIEW revenue WITH (ssp.continuous, ssp.output_topic = :'out') AS
  SELECT region, count(*) AS n, sum(amount) AS total, sum(amount::float8 / 3) AS third
  FROM orders GROUP BY region;
SELECT ssp.wait('revenue'), published('revenue');

-- the triggers that put its changes in its outbox, and their function,
-- are the view's: dropped with it, and by nothing else
DROP TRIGGER ssp_changes_update ON revenue_mrel;
DROP TRIGGER IF EXISTS ssp_changes_insert ON revenue_mrel CASCADE;
DROP FUNCTION revenue_changes() CASCADE;
DROP ROUTINE revenue_changes;
CREATE OR REPLACE FUNCTION revenue_changes() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE OR REPLACE TRIGGER ssp_changes_insert AFTER INSERT ON revenue_mrel
  FOR EACH STATEMENT EXECUTE FUNCTION suppress_redundant_updates_trigger();
ALTER TRIGGER ssp_changes_delete ON revenue_mrel RENAME TO d;
ALTER TRIGGER ssp_changes_delete ON revenue_mrel DEPENDS ON EXTENSION plpgsql;
ALTER TABLE revenue_mrel DISABLE TRIGGER ssp_changes_update;
ALTER TABLE revenue_mrel ENABLE REPLICA TRIGGER ssp_changes_update;
-- a trigger of the user's on the view's table comes and goes
CREATE FUNCTION noted() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE TRIGGER noted AFTER INSERT ON revenue_mrel FOR EACH STATEMENT EXECUTE FUNCTION noted();
CREATE OR REPLACE TRIGGER noted AFTER UPDATE ON revenue_mrel FOR EACH STATEMENT EXECUTE FUNCTION noted();
DROP TRIGGER noted ON revenue_mrel;
DROP FUNCTION noted();
SELECT tgname, tgfoid::regproc, tgenabled FROM pg_trigger WHERE tgrelid = 'revenue_mrel'::regclass ORDER BY 1;

-- a database that says session_replication_role = replica (which fires no
-- trigger) and extra_float_digits = -3 (which rounds floats as text): the
-- workers, started again, fire the triggers and publish the floats whole
DO $$BEGIN
  EXECUTE format('ALTER DATABASE %I SET session_replication_role = replica', current_database());
  EXECUTE format('ALTER DATABASE %I SET extra_float_digits = -3', current_database());
END$$;
INSERT INTO old_workers SELECT worker_pid FROM ssp.views WHERE worker_pid IS NOT NULL;
SELECT count(pg_terminate_backend(pid)) > 0 AS terminated FROM old_workers;
SELECT restarted();
SELECT published_seq AS published FROM ssp.continuous_views WHERE view = 'revenue'::regclass \gset
INSERT INTO orders SELECT g, 'r' || g % 5, g / 10.0 FROM generate_series(101, 150) g;
SELECT ssp.wait('revenue'), published('revenue');
SELECT published_seq > :published AS published_more FROM ssp.continuous_views WHERE view = 'revenue'::regclass;
-- each group's last change is the view's row
SELECT count(*) AS groups, bool_and(c.n = r.n AND c.total = r.total AND c.third = r.third) AS same
FROM revenue r JOIN (SELECT DISTINCT ON (region) * FROM changes ORDER BY region, _seq DESC) c USING (region);
DO $$BEGIN
  EXECUTE format('ALTER DATABASE %I RESET session_replication_role', current_database());
  EXECUTE format('ALTER DATABASE %I RESET extra_float_digits', current_database());
END$$;

-- a view whose triggers are disabled when its worker loads it (as a
-- restore of a dump in which they were may leave them) fails, saying so;
-- enabled, it goes on by itself
UPDATE pg_trigger SET tgenabled = 'D' WHERE tgrelid = 'revenue_mrel'::regclass AND tgname = 'ssp_changes_update';
TRUNCATE old_workers;
INSERT INTO old_workers SELECT worker_pid FROM ssp.views WHERE view = 'revenue'::regclass;
SELECT count(pg_terminate_backend(pid)) AS terminated FROM old_workers;
DO $$BEGIN
  FOR i IN 1 .. 600 LOOP
    EXIT WHEN EXISTS (SELECT FROM ssp.views WHERE view = 'revenue'::regclass AND status = 'failed'
                      AND last_error LIKE '%cannot publish its changes%');
    PERFORM pg_sleep(0.1);
  END LOOP;
END$$;
SELECT status, last_error FROM ssp.views WHERE view = 'revenue'::regclass;
INSERT INTO orders SELECT g, 'r' || g % 5, g / 10.0 FROM generate_series(151, 160) g;
SELECT ssp.wait('revenue', '2 s') AS applied_meanwhile;
ALTER TABLE revenue_mrel ENABLE TRIGGER ssp_changes_update;
SELECT ssp.wait('revenue', '90 s'), published('revenue');
SELECT count(*) AS groups, bool_and(c.n = r.n AND c.total = r.total) AS same, sum(r.n) AS orders
FROM revenue r JOIN (SELECT DISTINCT ON (region) * FROM changes ORDER BY region, _seq DESC) c USING (region);

-- one view publishes to a topic
CREATE VIEW revenue2 WITH (ssp.continuous, ssp.output_topic = :'out') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
-- even through another server: two servers may reach the same brokers
CREATE SERVER kafka_again FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE orders_again (id bigint, region text, amount numeric)
  SERVER kafka_again OPTIONS (topic :'topic');
CREATE VIEW revenue2 WITH (ssp.continuous, ssp.output_topic = :'out') AS
  SELECT region, count(*) AS n FROM orders_again GROUP BY region;
DROP SERVER kafka_again CASCADE;
-- dropped and created again (to change its query), a view numbers its
-- changes above those of the view before: a consumer that skips a record
-- numbered no higher than the last one seen in its partition keeps them
SELECT max(_seq) AS before FROM changes \gset
BEGIN;
DROP VIEW revenue;
CREATE VIEW revenue WITH (ssp.continuous, ssp.output_topic = :'out') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
COMMIT;
SELECT ssp.wait('revenue'), published('revenue');
SELECT count(DISTINCT region) AS groups, bool_and(_seq > :before AND seq = _seq::text) AS above
FROM changes WHERE total IS NULL;
SELECT count(*) FILTER (WHERE _seq <= seen) AS skipped FROM (
  SELECT _seq, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
  FROM changes) c;
SELECT count(*) AS groups, bool_and(c.n = r.n) AS same
FROM revenue r JOIN (SELECT DISTINCT ON (region) * FROM changes ORDER BY region, _seq DESC) c USING (region);
-- numbered above the highest number at the end of the topic, where
-- another cluster's view may have written past the server's clock
\set planted output_planted_ :run
CREATE FOREIGN TABLE planted (region text, n bigint, _op text, _seq bigint, seq text OPTIONS (meta 'header:ssp-seq'))
  SERVER kafka OPTIONS (topic :'planted');
INSERT INTO planted VALUES ('elsewhere', 1, 'insert', 9000000000000000000, '9000000000000000000');
CREATE VIEW counted WITH (ssp.continuous, ssp.output_topic = :'planted') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
SELECT ssp.wait('counted'), published('counted');
SELECT count(DISTINCT region) AS groups, bool_and(_seq > 9000000000000000000 AND seq = _seq::text) AS above
FROM planted WHERE region <> 'elsewhere';
DROP VIEW counted;
-- a number too near int64's highest leaves the view too few: refused (the
-- view ran out of numbers, and every message became a dead letter)
INSERT INTO planted VALUES ('elsewhere', 1, 'insert', NULL, '9223372036854775000');
CREATE VIEW counted WITH (ssp.continuous, ssp.output_topic = :'planted') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
-- a number past int64's at the end of the topic is one no number can be
-- above: refused (it was passed over, and the view numbered below it)
INSERT INTO planted VALUES ('elsewhere', 1, 'insert', NULL, '99999999999999999999');
CREATE VIEW counted WITH (ssp.continuous, ssp.output_topic = :'planted') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;

-- a group key the view does not show is named apart from the view's columns
-- in the changes' JSON (a column named _g1 took the key's name: the sum in
-- inserts, the region in deletes)
\set hidden output_hidden_ :run
CREATE FOREIGN TABLE hidden_changes (v text, k text OPTIONS (meta 'key'))
  SERVER kafka OPTIONS (topic :'hidden', format 'text');
CREATE VIEW hidden_key WITH (ssp.continuous, ssp.output_topic = :'hidden') AS
  SELECT count(*) AS n, sum(amount) AS _g1 FROM orders GROUP BY region;
SELECT ssp.wait('hidden_key'), published('hidden_key');
SELECT DISTINCT k::jsonb ? '_g1_1' AS key_apart, jsonb_typeof(v::jsonb->'_g1') AS sum_type
FROM hidden_changes;
DROP VIEW hidden_key;

-- a change larger than the producer sends (message.max.bytes) fails the
-- view, saying how large it is; those before it are published, and it
-- waits, first in the outbox, until the limit is raised
\set notes output_notes_ :run
\set longest output_longest_ :run
CREATE SERVER small FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers', "message.max.bytes" '1500');
CREATE FOREIGN TABLE notes (g text, body text) SERVER small OPTIONS (topic :'notes');
CREATE FOREIGN TABLE longest_changes (g text, body text, n bigint, _op text, _seq bigint)
  SERVER small OPTIONS (topic :'longest');
CREATE VIEW longest WITH (ssp.continuous, ssp.output_topic = :'longest') AS
  SELECT g, max(body) AS body, count(*) AS n FROM notes GROUP BY g;
INSERT INTO notes VALUES ('a', 'first'), ('b', 'short');
SELECT ssp.wait('longest'), published('longest');
-- one batch (the view paused meanwhile) updates b and adds a group whose
-- name is 900 bytes, twice in its change (key and row): b's change comes
-- first (AFTER UPDATE triggers fire before AFTER INSERT ones)
SELECT ssp.pause('longest');
INSERT INTO notes VALUES ('b', 'shorter'), (repeat('k', 900), 'x');
SELECT ssp.resume('longest');
DO $$BEGIN
  FOR i IN 1 .. 600 LOOP
    EXIT WHEN EXISTS (SELECT FROM ssp.views WHERE view = 'longest'::regclass AND status = 'failed'
                      AND last_error LIKE 'could not publish%');
    PERFORM pg_sleep(0.1);
  END LOOP;
END$$;
SELECT status, regexp_replace(last_error, 'is \d+ bytes', 'is N bytes') AS last_error
FROM ssp.views WHERE view = 'longest'::regclass;
SELECT left(key->>'g', 3) AS g, value->>'_op' AS op FROM longest_outbox;
SELECT left(g, 3) AS g, n FROM longest ORDER BY g;
SELECT left(g, 3) AS g, _op, n FROM longest_changes ORDER BY g, _seq;
INSERT INTO notes VALUES ('c', 'x');
ALTER SERVER small OPTIONS (SET "message.max.bytes" '100000');
SELECT ssp.wait('longest', '90 s'), published('longest');
SELECT left(g, 3) AS g, n FROM longest ORDER BY g;
SELECT left(g, 3) AS g, _op, n FROM longest_changes ORDER BY g, _seq;
DROP VIEW longest;
DROP SERVER small CASCADE;

-- replacing a view that has no output topic by one that has: refused,
-- saying which has it
CREATE VIEW plain WITH (ssp.continuous) AS SELECT region, count(*) AS n FROM orders GROUP BY region;
CREATE OR REPLACE VIEW plain WITH (ssp.continuous, ssp.output_topic = 'plain_out') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
CREATE OR REPLACE VIEW revenue WITH (ssp.continuous, ssp.output_topic = :'out') AS
  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
DROP VIEW plain;

-- over a changelog, a group whose last row moves away is one delete, its
-- row before that the last published (it was an update to n = 0, then a
-- delete of that); a group made and emptied in one batch, nothing
\set cl output_moves_ :run
\set clout output_moves_out_ :run
CREATE FOREIGN TABLE moves (id int, seg text) SERVER kafka
  OPTIONS (topic :'cl', key 'id', changelog 'upsert');
CREATE FOREIGN TABLE moves_changes (seg text, n bigint, _op text, _seq bigint, _before jsonb)
  SERVER kafka OPTIONS (topic :'clout');
CREATE VIEW moves_by_seg WITH (ssp.continuous, ssp.output_topic = :'clout') AS
  SELECT seg, count(*) AS n FROM moves GROUP BY seg;
INSERT INTO moves VALUES (1, 'x');
SELECT ssp.wait('moves_by_seg'), published('moves_by_seg');
INSERT INTO moves VALUES (1, 'y');
SELECT ssp.wait('moves_by_seg'), published('moves_by_seg');
INSERT INTO moves VALUES (2, 'z'), (2, 'y');
SELECT ssp.wait('moves_by_seg'), published('moves_by_seg');
SELECT seg, n, _op, _before FROM moves_changes ORDER BY _seq;
SELECT * FROM moves_by_seg;
DROP VIEW moves_by_seg;
DROP FOREIGN TABLE moves, moves_changes;

-- a server's partitioner "random" would scatter a key's changes over the
-- topic's partitions: views' changes go by their key whatever it says
ALTER SERVER kafka OPTIONS (ADD partitioner 'random');
INSERT INTO orders SELECT g, 'r' || g % 5, 1 FROM generate_series(1, 10) g;
SELECT ssp.wait('revenue'), published('revenue');
INSERT INTO orders SELECT g, 'r' || g % 5, 1 FROM generate_series(1, 10) g;
SELECT ssp.wait('revenue'), published('revenue');
INSERT INTO orders SELECT g, 'r' || g % 5, 1 FROM generate_series(1, 10) g;
SELECT ssp.wait('revenue'), published('revenue');
SELECT count(*) AS regions, count(*) FILTER (WHERE parts > 1) AS scattered
FROM (SELECT region, count(DISTINCT p) AS parts FROM changes GROUP BY region) x;
ALTER SERVER kafka OPTIONS (DROP partitioner);

-- dropping the view, or its schema, drops its triggers and function
CREATE SCHEMA output_s;
CREATE VIEW output_s.totals WITH (ssp.continuous, ssp.output_topic = 'output_totals') AS
  SELECT region, count(*) AS n FROM orders GROUP BY region;
DROP SCHEMA output_s CASCADE;
DROP VIEW revenue;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgname LIKE 'ssp_changes_%'
  AND tgfoid IN (SELECT oid FROM pg_proc WHERE proname IN ('revenue_changes', 'totals_changes'));
SELECT count(*) AS functions FROM pg_proc WHERE proname IN ('revenue_changes', 'totals_changes');
DROP FUNCTION published(regclass);
DROP FUNCTION restarted();
DROP TABLE old_workers;
DROP SERVER kafka CASCADE;
