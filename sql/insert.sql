-- INSERT into streams: acknowledged by the broker, or an error.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic ins_ :run
CREATE FOREIGN TABLE ins (id int, note text, p int OPTIONS (meta 'partition'),
    o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
-- RETURNING gives the rows as written; the offset is the broker's to assign
INSERT INTO ins (id, note, p, o) VALUES (1, 'one', 0, 12345) RETURNING id, note, p;
SELECT id, note, p, o FROM ins;
-- a partition the topic does not have
INSERT INTO ins (id, p) VALUES (2, 99);
INSERT INTO ins (id, p) VALUES (2, -1);
-- a row that cannot be made fails the statement (rows queued before it are
-- dropped if not yet sent, so whether they arrive is not shown here)
INSERT INTO ins (id, note) SELECT g, CASE WHEN g = 3 THEN 1 / 0 END::text FROM generate_series(1, 5) g;
-- Kafka has no rollback: what the broker acknowledged stays
BEGIN;
INSERT INTO ins (id, note, p) VALUES (4, 'four', 1);
ROLLBACK;
SELECT id, note, p FROM ins WHERE note IS NOT NULL ORDER BY id;
-- a transaction that inserted cannot be prepared: a ROLLBACK PREPARED would
-- leave its messages in the topic
BEGIN;
INSERT INTO ins (id, note) VALUES (5, 'five');
PREPARE TRANSACTION 'ssp_insert';
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'ssp_insert';
-- an INSERT into a partitioned table of streams opens each partition as its
-- first row comes: a producer made stale before that (its role changed)
-- stays until the transaction ends, for the statement's other partitions
-- to flush (it was purged, and INSERT 0 202 had lost 200 rows)
\set topic_a ins_pa_ :run
\set topic_b ins_pb_ :run
CREATE TABLE ins_parted (id int, p int) PARTITION BY LIST (p);
CREATE FOREIGN TABLE ins_pa PARTITION OF ins_parted FOR VALUES IN (1) SERVER kafka OPTIONS (topic :'topic_a');
CREATE FOREIGN TABLE ins_pb PARTITION OF ins_parted FOR VALUES IN (2) SERVER kafka OPTIONS (topic :'topic_b');
CREATE FUNCTION touch_role(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF i = 201 THEN
    EXECUTE format('ALTER ROLE %I VALID UNTIL %L', current_user, 'infinity');
  END IF;
  RETURN i;
END $$;
INSERT INTO ins_parted SELECT touch_role(g), CASE WHEN g <= 200 THEN 1 ELSE 2 END
  FROM generate_series(1, 202) g;
SELECT (SELECT count(*) FROM ins_pa) AS first, (SELECT count(*) FROM ins_pb) AS second;
DROP TABLE ins_parted;
DROP FUNCTION touch_role(int);
-- a subtransaction that queued nothing (an exception block in a function
-- the INSERT calls, a lenient decode's) drops nothing of the statement's
\set topic_c ins_sub_ :run
CREATE FOREIGN TABLE ins_sub (id int) SERVER kafka OPTIONS (topic :'topic_c');
CREATE FUNCTION careful(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    PERFORM 1 / (i % 100);
  EXCEPTION WHEN division_by_zero THEN
    RETURN -i;
  END;
  RETURN i;
END $$;
INSERT INTO ins_sub SELECT careful(g) FROM generate_series(1, 5000) g;
SELECT count(*), count(*) FILTER (WHERE id < 0) AS caught FROM ins_sub;
DROP FUNCTION careful(int);
DROP FOREIGN TABLE ins_sub;
-- a subtransaction that queued messages and rolled back drops them: only
-- its own, and the statement around it goes on; with messages of that
-- statement among them (its broker down, they wait unsent), it fails
\set topic_d ins_drop_ :run
CREATE FOREIGN TABLE ins_drop (id int) SERVER kafka OPTIONS (topic :'topic_d');
CREATE SERVER down FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '127.0.0.1:1');
CREATE FOREIGN TABLE ins_down (id int) SERVER down OPTIONS (topic :'topic_d');
CREATE FUNCTION tries(i int, at int, s regclass) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF i = at THEN
    BEGIN
      EXECUTE format('INSERT INTO %s SELECT 100 / (2 - x) FROM generate_series(1, 2) x', s);
    EXCEPTION WHEN division_by_zero THEN
      NULL;
    END;
  END IF;
  RETURN i;
END $$;
INSERT INTO ins_drop SELECT tries(g, 1, 'ins_drop') FROM generate_series(1, 3) g;
SELECT array_agg(id ORDER BY id) FILTER (WHERE id <= 3) AS ids FROM ins_drop;
INSERT INTO ins_down SELECT tries(g, 3, 'ins_down') FROM generate_series(1, 3) g;
DROP FUNCTION tries(int, int, regclass);
DROP SERVER down CASCADE;
DROP FOREIGN TABLE ins_drop;
-- what INSERT writes reads back the same whatever the session's styles
-- (SQL, DMY wrote March 4 as 04/03, read back as April 3; sql_standard
-- intervals flipped a sign; extra_float_digits 0 rounded 0.1 + 0.2)
\set topic_s ins_styles_ :run
CREATE FOREIGN TABLE ins_styles_csv (d date, ts timestamptz, iv interval, f float8)
  SERVER kafka OPTIONS (topic :'topic_s', format 'csv');
\set topic_j ins_styles_j_ :run
CREATE FOREIGN TABLE ins_styles_json (d date, iv interval, f float8, k date)
  SERVER kafka OPTIONS (topic :'topic_j', key 'k');
SET datestyle = 'SQL, DMY';
SET intervalstyle = 'sql_standard';
SET extra_float_digits = 0;
SET timezone = 'Asia/Kolkata';
INSERT INTO ins_styles_csv VALUES ('2026-03-04', '2026-03-04 05:06:07+00', '-1 day -2 hours', 0.1::float8 + 0.2::float8);
INSERT INTO ins_styles_json VALUES ('2026-03-04', '-1 day -2 hours', 0.1::float8 + 0.2::float8, '2026-03-04');
SHOW datestyle;
RESET datestyle;
RESET intervalstyle;
RESET extra_float_digits;
RESET timezone;
SELECT d, ts, iv, f = 0.1::float8 + 0.2::float8 AS f_exact FROM ins_styles_csv;
SELECT d, iv, f = 0.1::float8 + 0.2::float8 AS f_exact, k FROM ins_styles_json;
DROP FOREIGN TABLE ins_styles_csv, ins_styles_json;
-- a client that cannot start: an invalid combination of properties
CREATE SERVER broken FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers :'brokers', "security.protocol" 'sasl_ssl', "sasl.mechanisms" 'NOSUCH');
CREATE FOREIGN TABLE broken_s (a int) SERVER broken OPTIONS (topic :'topic');
INSERT INTO broken_s VALUES (1);
SELECT * FROM broken_s;
DROP SERVER broken CASCADE;
-- a message larger than the producer's whole queue: said at once (it waited
-- for the broker's timeout, hinting that the brokers were down)
CREATE SERVER small_queue FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers :'brokers', "queue.buffering.max.kbytes" '1');
CREATE FOREIGN TABLE small_queue_s (id int, note text) SERVER small_queue OPTIONS (topic :'topic');
INSERT INTO small_queue_s VALUES (1, 'fits');
INSERT INTO small_queue_s VALUES (2, repeat('x', 2000));
DROP SERVER small_queue CASCADE;
DROP SERVER kafka CASCADE;
