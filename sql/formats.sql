-- Formats with schemas: avro (unframed, with the writer schema in option
-- "schema"; framed through a schema registry in TAP test 031_avro),
-- protobuf (TAP test 032_protobuf) and jsonschema, and the schema
-- registry's options.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
SET timezone = 'UTC';
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');

-- the options
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'protobuf');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'thrift');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', key_format 'csv');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro', schema 'not json');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro', schema '"nosuchtype"');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro',
  schema '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "long"}]}');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro',
  schema '{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["int", "int"]}]}');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro',
  schema '{"type": "record", "fields": []}');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro',
  schema '{"type": "enum", "name": "E", "symbols": [1]}');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', message 'a.B');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'protobuf', message 'a..B');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'protobuf', message '1a');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'protobuf', message 'a.B ');
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'json', key 'a', key_format 'protobuf');
-- a schema for another format, and avro without a registry or a schema
CREATE FOREIGN TABLE f1 (a int) SERVER kafka OPTIONS (topic 'x', format 'json', schema '"int"');
CREATE FOREIGN TABLE f2 (a int) SERVER kafka OPTIONS (topic 'x', format 'avro');
CREATE FOREIGN TABLE f3 (a int) SERVER kafka OPTIONS (topic 'x', format 'json', key 'a', key_format 'avro');

-- registry options: where they go, what they take
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'b', "schema.registry.url" 'ftp://x');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'b', "schema.registry.url" 'file:///etc/passwd');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'b', "schema.registry.url" 'http://');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'b', "schema.registry.colour" 'red');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers 'b', "schema.registry.basic.auth.user.info" 'u:secret-pw');
-- nor a password in the URL (every role reads a server's options); a @
-- past the host is no user
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers 'b', "schema.registry.url" 'http://r:1, https://u:secret-pw@r:2/x');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers 'b', "schema.registry.url" 'http://r:1/a@b, http://r:2?c=d@e');
DROP SERVER reg1;
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers 'b', "schema.registry.request.timeout.ms" '0');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers 'b', "schema.registry.ssl.endpoint.identification.algorithm" 'maybe');
CREATE SERVER reg1 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers :'brokers', "schema.registry.url" 'http://127.0.0.1:1/, http://127.0.0.1:1',
           "schema.registry.request.timeout.ms" '500',
           "schema.registry.ssl.endpoint.identification.algorithm" 'none');
CREATE USER MAPPING FOR PUBLIC SERVER reg1 OPTIONS ("schema.registry.basic.auth.user.info" 'nocolon');
CREATE USER MAPPING FOR PUBLIC SERVER reg1
  OPTIONS ("schema.registry.basic.auth.user.info" 'u:secret-pw', "schema.registry.bearer.auth.token" 'tok');
-- a registry that does not answer: the scan says so (the detail, curl's, names the URL)
\set topic formats_noregistry_ :run
CREATE FOREIGN TABLE r1 (a int) SERVER reg1 OPTIONS (topic :'topic', format 'avro');
CREATE FOREIGN TABLE r1_raw (v bytea) SERVER reg1 OPTIONS (topic :'topic', format 'bytea');
INSERT INTO r1_raw VALUES ('\x000000000102');
\set VERBOSITY terse
SELECT * FROM r1;
-- nor can an INSERT find the subject's latest schema
INSERT INTO r1 VALUES (1);
\set VERBOSITY default
DROP SERVER reg1 CASCADE;
-- files of the server: superusers only
CREATE ROLE formats_user;
GRANT USAGE ON FOREIGN DATA WRAPPER ssp_kafka TO formats_user;
SET ROLE formats_user;
CREATE SERVER reg2 FOREIGN DATA WRAPPER ssp_kafka
  OPTIONS (brokers 'b', "schema.registry.ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt');
CREATE SERVER reg2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'b', "schema.registry.url" 'http://r:8081');
CREATE USER MAPPING FOR formats_user SERVER reg2 OPTIONS ("schema.registry.bearer.auth.token" 'tok');
ALTER USER MAPPING FOR formats_user SERVER reg2 OPTIONS (ADD "schema.registry.url" 'http://elsewhere');
DROP SERVER reg2 CASCADE;
RESET ROLE;
REVOKE USAGE ON FOREIGN DATA WRAPPER ssp_kafka FROM formats_user;
DROP ROLE formats_user;

-- unframed Avro, written as raw bytes into partition 0:
-- {"id": int, "name": string, "score": ["null", double], "tags": {"array": string}}
\set topic formats_avro_ :run
CREATE FOREIGN TABLE avro_w (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO avro_w VALUES
  -- id 1, "ab", score 2.5, tags ["x", "yz"]
  ('\x0204616202000000000000044004027804797a00', 0),
  -- id -3, "", score null, tags []
  ('\x05000000', 0),
  -- id 64, "é" (UTF-8), score -1, tags: a block of -1 items with its size in bytes, then the end
  ('\x800104c3a902000000000000f0bf0104027100', 0),
  -- truncated inside the score
  ('\x02046162020000', 0),
  -- a string whose length is negative
  ('\x0203', 0),
  -- union branch 5 of 2
  ('\x02000a', 0),
  -- an array block of 2^40 items in 6 bytes
  ('\x020000808080808040', 0),
  -- a number of 11 bytes
  ('\xffffffffffffffffffff01', 0),
  -- bytes left after the value
  ('\x02000000ff', 0);
\set schema '{"type": "record", "name": "P", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}, {"name": "score", "type": ["null", "double"]}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}'
CREATE FOREIGN TABLE avro_r (id bigint, name text, score numeric, tags text[], tagsj jsonb OPTIONS (field 'tags'),
    o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema');
-- each bad message fails the scan, saying why and where
SELECT * FROM avro_r WHERE o < 3 ORDER BY o;
SELECT * FROM avro_r WHERE o = 3;
SELECT * FROM avro_r WHERE o = 4;
SELECT * FROM avro_r WHERE o = 5;
SELECT * FROM avro_r WHERE o = 6;
SELECT * FROM avro_r WHERE o = 7;
SELECT * FROM avro_r WHERE o = 8;
-- a view sends them to its dead letters
CREATE VIEW avro_v WITH (ssp.continuous) AS SELECT id, name, score, tags FROM avro_r;
SELECT ssp.wait('avro_v');
SELECT * FROM avro_v ORDER BY id;
SELECT "offset", error FROM ssp.dead_letters WHERE view = 'avro_v'::regclass ORDER BY "offset";
-- a schema that is not a record fills the one value column, and only one
\set topic formats_avro_bytes_ :run
CREATE FOREIGN TABLE avro_bw (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO avro_bw VALUES ('\x06616263', 0);
CREATE FOREIGN TABLE avro_s (v text, b bytea OPTIONS (meta 'key'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema '"bytes"');
SELECT v FROM avro_s;
CREATE FOREIGN TABLE avro_two (a text, b text) SERVER kafka OPTIONS (topic :'topic', format 'avro', schema '"bytes"');
SELECT * FROM avro_two;
\set topic formats_avro_ :run
CREATE FOREIGN TABLE avro_bad (id bigint, name int, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema');
SELECT id, name FROM avro_bad WHERE o = 0;
-- a column the query does not read is not converted
SELECT id FROM avro_bad WHERE o = 0;

-- writing unframed Avro: the bytes as the specification has them, and read back
\set topic formats_avro_write_ :run
CREATE FOREIGN TABLE avro_out (id bigint, name text, score numeric, tags text[], p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema');
INSERT INTO avro_out VALUES (1, 'a', 2.5, '{x,y}', 0), (-2, 'é', NULL, '{}', 0);
CREATE FOREIGN TABLE avro_out_raw (v bytea, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
SELECT o, v FROM avro_out_raw ORDER BY o;
CREATE FOREIGN TABLE avro_back (id bigint, name text, score numeric, tags text[], o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema');
SELECT * FROM avro_back ORDER BY o;
-- what cannot be written
INSERT INTO avro_out VALUES (NULL, 'a', 1, '{}', 0);
INSERT INTO avro_out VALUES (3000000000, 'a', 1, '{}', 0);
INSERT INTO avro_out (id, name, p) VALUES (5, 'a', 0);
INSERT INTO avro_out VALUES (5, 'a', 1, '{x,NULL}', 0);
\set schema2 '{"type": "record", "name": "W", "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}, {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}}, {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}}, {"name": "m", "type": {"type": "map", "values": ["null", "long"]}}]}'
\set topic formats_avro_write2_ :run
CREATE FOREIGN TABLE avro_w2 (e text, fx bytea, dec numeric, m jsonb, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema2');
INSERT INTO avro_w2 VALUES ('A', '\x0102', 12.345, '{"k": 1, "n": null}', 0), ('B', '\xfffe', -0.01, '{}', 0);
INSERT INTO avro_w2 VALUES ('C', '\x0102', 1, '{}', 0);
INSERT INTO avro_w2 VALUES ('A', '\x010203', 1, '{}', 0);
INSERT INTO avro_w2 VALUES ('A', '\x0102', 123.45, '{}', 0);
INSERT INTO avro_w2 VALUES ('A', '\x0102', 1, '{"k": "x"}', 0);
INSERT INTO avro_w2 VALUES ('A', '\x0102', 1, '[1]', 0);
CREATE FOREIGN TABLE avro_w2_raw (v bytea, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
SELECT o, v FROM avro_w2_raw ORDER BY o;
CREATE FOREIGN TABLE avro_w2_back (e text, fx bytea, dec numeric, m jsonb, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema2');
SELECT * FROM avro_w2_back ORDER BY o;
-- a composite of a text and an array, a wide fixed decimal, bytes into jsonb
CREATE TYPE formats_street AS (street text, tags text[]);
\set schema3 '{"type": "record", "name": "X", "fields": [{"name": "a", "type": {"type": "record", "name": "S", "fields": [{"name": "street", "type": "string"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}}, {"name": "d", "type": {"type": "fixed", "name": "D", "size": 200, "logicalType": "decimal", "precision": 10, "scale": 2}}, {"name": "b", "type": "bytes"}]}'
\set topic formats_avro_write3_ :run
CREATE FOREIGN TABLE avro_w3 (a formats_street, d numeric, b bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema3');
INSERT INTO avro_w3 VALUES (ROW('Main', '{x,y}'), -1.5, '\x00ff', 0), (ROW('', '{}'), 99999999.99, '\x', 0);
CREATE FOREIGN TABLE avro_w3_back (a formats_street, d numeric, d_text text OPTIONS (field 'd'),
    b bytea, bj jsonb OPTIONS (field 'b'), whole jsonb OPTIONS (field 'a'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema3');
SELECT * FROM avro_w3_back ORDER BY o;
CREATE FOREIGN TABLE avro_w3_raw (v bytea, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
SELECT o, length(v), substring(v from 12 for 200) = decode(repeat('ff', 198) || 'ff6a', 'hex') AS sign_extended
FROM avro_w3_raw WHERE o = 0;
-- domains: written as their base types (a domain over timestamptz to a
-- long as milliseconds since 1970 or to a timestamp, one over jsonb to a
-- map, over int[] to an array, over a composite to a record); read as
-- their base types, then checked (a string into a domain over jsonb is a
-- JSON string)
CREATE DOMAIN formats_posint AS int CHECK (VALUE > 0);
CREATE DOMAIN formats_ts AS timestamptz CHECK (VALUE > '2000-01-01');
CREATE DOMAIN formats_js AS jsonb;
CREATE DOMAIN formats_ints AS int[] CHECK (cardinality(VALUE) < 3);
CREATE DOMAIN formats_street_d AS formats_street;
\set schema4 '{"type": "record", "name": "D", "fields": [{"name": "n", "type": "int"}, {"name": "ms", "type": "long"}, {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}}, {"name": "m", "type": {"type": "map", "values": "long"}}, {"name": "a", "type": {"type": "array", "items": "int"}}, {"name": "s", "type": {"type": "record", "name": "S", "fields": [{"name": "street", "type": "string"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}}, {"name": "js", "type": "string"}]}'
\set topic formats_avro_domains_ :run
CREATE FOREIGN TABLE avro_dw (n formats_posint, ms formats_ts, us formats_ts, m formats_js, a formats_ints,
    s formats_street_d, js text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema4');
INSERT INTO avro_dw VALUES
  (5, '2024-05-01 12:00:00.123+00', '2024-05-01 12:00:00.123456+00', '{"k": 1}', '{1,2}', ROW('Main', '{x}'), 'hi', 0);
-- values the domains refuse, written through the base types: one each
CREATE FOREIGN TABLE avro_dw_base (n int, ms timestamptz, us timestamptz, m jsonb, a int[], s formats_street,
    js text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema4');
INSERT INTO avro_dw_base VALUES
  (-1, '2024-05-01', '2024-05-01', '{}', '{}', ROW('', '{}'), '', 0),
  (1, '1999-05-01', '2024-05-01', '{}', '{}', ROW('', '{}'), '', 0),
  (1, '2024-05-01', '2024-05-01', '{}', '{1,2,3}', ROW('', '{}'), '', 0);
CREATE FOREIGN TABLE avro_dr (n formats_posint, ms formats_ts, us formats_ts, m formats_js, a formats_ints,
    s formats_street_d, js formats_js, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema4');
SELECT n, ms, us, m, a, s, js, pg_typeof(js) FROM avro_dr WHERE o = 0;
SELECT n FROM avro_dr WHERE o = 1;
SELECT ms FROM avro_dr WHERE o = 2;
SELECT a FROM avro_dr WHERE o = 3;
-- a view sends them to its dead letters
CREATE VIEW avro_dv WITH (ssp.continuous) AS SELECT n, ms, a FROM avro_dr;
SELECT ssp.wait('avro_dv');
SELECT * FROM avro_dv;
SELECT "offset", error FROM ssp.dead_letters WHERE view = 'avro_dv'::regclass ORDER BY "offset";
CREATE FOREIGN TABLE avro_dr_base (n int, ms bigint, us timestamptz, m jsonb, a int[], s formats_street,
    js text, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema4');
SELECT * FROM avro_dr_base WHERE o = 0;

-- a domain NOT NULL, or a CHECK that NULL fails, refuses a message without
-- the field or with null, as a table's column would: an error in a scan, a
-- dead letter in a view; what reads no such column takes every message
CREATE DOMAIN formats_nn AS text NOT NULL;
CREATE DOMAIN formats_nn_check AS int CHECK (VALUE IS NOT NULL);
\set topic formats_nn_ :run
CREATE FOREIGN TABLE json_nn_raw (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO json_nn_raw VALUES ('{"k": "a", "c": 1, "v": 1}', 0), ('{"c": 2, "v": 2}', 0),
  ('{"k": null, "c": 3, "v": 3}', 0), ('{"k": "d", "v": 4}', 0), (NULL, 0);
CREATE FOREIGN TABLE json_nn (k formats_nn, c formats_nn_check, v int, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
SELECT k, c, v FROM json_nn WHERE o = 0;
SELECT k FROM json_nn WHERE o = 1;
SELECT c FROM json_nn WHERE o = 3;
SELECT v FROM json_nn ORDER BY v;
-- but a tombstone's value columns are NULL whatever their type; a key
-- column is checked in a tombstone too
SELECT k, c, v FROM json_nn WHERE o = 4;
CREATE FOREIGN TABLE json_nn_key (id formats_nn OPTIONS (meta 'key'), v int, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
SELECT o FROM json_nn_key WHERE o = 4;
SELECT id FROM json_nn_key WHERE o = 4;
DROP FOREIGN TABLE json_nn_key;
CREATE VIEW json_nnv WITH (ssp.continuous) AS SELECT k, c, v FROM json_nn;
CREATE VIEW json_nnv2 WITH (ssp.continuous) AS SELECT count(*) AS n, sum(v) AS v FROM json_nn;
SELECT ssp.wait('json_nnv') AND ssp.wait('json_nnv2') AS caught_up;
SELECT * FROM json_nnv;
SELECT * FROM json_nnv2;
SELECT "offset", error FROM ssp.dead_letters WHERE view = 'json_nnv'::regclass ORDER BY "offset";
DROP VIEW json_nnv, json_nnv2;
-- a scan with on_error 'null' makes such a column NULL, as any it cannot decode
ALTER FOREIGN TABLE json_nn OPTIONS (ADD on_error 'null');
SELECT o, k, c, v FROM json_nn ORDER BY o;
DROP FOREIGN TABLE json_nn, json_nn_raw;
DROP DOMAIN formats_nn, formats_nn_check;

-- a timestamp, time or interval column's precision applies to what Avro
-- gives without text (timestamps, milliseconds, times, durations), array
-- elements' too
\set schema5 '{"type": "record", "name": "T", "fields": [{"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}}, {"name": "ms", "type": "long"}, {"name": "l", "type": {"type": "array", "items": {"type": "long", "logicalType": "local-timestamp-micros"}}}, {"name": "t", "type": {"type": "long", "logicalType": "time-micros"}}, {"name": "d", "type": {"type": "fixed", "name": "Du", "size": 12, "logicalType": "duration"}}]}'
\set topic formats_avro_typmods_ :run
CREATE FOREIGN TABLE avro_tw (us timestamptz, ms timestamptz, l timestamp[], t time, d interval,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema5');
INSERT INTO avro_tw VALUES ('2024-05-01 12:00:00.654321+00', '2024-05-01 12:00:00.654+00',
  '{"2024-05-01 12:00:00.654321"}', '12:00:00.654321', '1 mon 2 days 00:00:03.5', 0);
CREATE FOREIGN TABLE avro_tr (us timestamptz(0), ms timestamptz(1), l timestamp(2)[], t time(0), d interval(0))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema5');
SELECT * FROM avro_tr;

-- multidimensional arrays: written as arrays of arrays where the field's
-- items are arrays, read back so; what the schema cannot hold is refused,
-- not flattened
\set schema6 '{"type": "record", "name": "M", "fields": [{"name": "m", "type": {"type": "array", "items": {"type": "array", "items": ["null", "int"]}}}, {"name": "f", "type": {"type": "array", "items": "int"}}]}'
\set topic formats_avro_md_ :run
CREATE FOREIGN TABLE avro_mw (m int[], f int[], p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema6');
INSERT INTO avro_mw VALUES ('{{1,2},{3,NULL}}', '{1}', 0), ('{}', '{}', 0);
INSERT INTO avro_mw VALUES ('{{1}}', '{{1,2}}', 0);
INSERT INTO avro_mw VALUES ('{{{1}}}', '{1}', 0);
INSERT INTO avro_mw VALUES ('{1,2}', '{1}', 0);
CREATE FOREIGN TABLE avro_mraw (v bytea, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
SELECT o, v FROM avro_mraw ORDER BY o;
-- sub-arrays of different lengths, [[1, 2], [3]]; a sub-array and a null, [[1], null]
INSERT INTO avro_mraw (v, p) VALUES ('\x04040202020400020206000000', 0), ('\x0402020200000000', 0);
CREATE FOREIGN TABLE avro_mr (m int[], mt text[] OPTIONS (field 'm'), mj jsonb OPTIONS (field 'm'),
    mja jsonb[] OPTIONS (field 'm'), f int[], o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema6');
SELECT o, m, array_dims(m) AS dims, mt, mj, mja, f FROM avro_mr WHERE o < 2 ORDER BY o;
SELECT m FROM avro_mr WHERE o = 2;
-- an element of jsonb takes an array whole
CREATE FOREIGN TABLE avro_mrj (mja jsonb[] OPTIONS (field 'm'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema6');
SELECT mja FROM avro_mrj WHERE o = 2;
\set schema7 '{"type": "record", "name": "M", "fields": [{"name": "m", "type": {"type": "array", "items": ["null", {"type": "array", "items": "int"}]}}, {"name": "f", "type": {"type": "array", "items": "int"}}]}'
CREATE FOREIGN TABLE avro_mr2 (m int[], o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema7');
SELECT m FROM avro_mr2 WHERE o = 3;

-- INSERT refuses columns that would write one field twice, or a field and
-- one inside it: a record holds each field once (the other column was not
-- written); reading them is fine
\set topic formats_avro_write3_ :run
CREATE FOREIGN TABLE avro_twice (a formats_street, street text OPTIONS (field 'a.street'), d numeric,
    d2 numeric OPTIONS (field 'd'), b bytea, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'avro', schema :'schema3');
INSERT INTO avro_twice (a, d, b) VALUES (ROW('x', '{}'), 1, '\x');
ALTER FOREIGN TABLE avro_twice DROP COLUMN street;
INSERT INTO avro_twice (a, d, b) VALUES (ROW('x', '{}'), 1, '\x');
SELECT d, d2 FROM avro_twice ORDER BY o;

-- a schema of 27,000,000 nulls in no bytes: skipped at once, refused when read whole
\set topic formats_avro_nulls_ :run
SELECT set_config('formats.topic', :'topic', false) IS NOT NULL AS set;
DO $$
DECLARE
  f text := (SELECT string_agg(format('{"name": "n%s", "type": "null"}', g), ', ') FROM generate_series(1, 300) g);
  r2 text := (SELECT string_agg(format('{"name": "m%s", "type": "R1"}', g), ', ') FROM generate_series(2, 300) g);
  r3 text := (SELECT string_agg(format('{"name": "k%s", "type": "R2"}', g), ', ') FROM generate_series(2, 300) g);
  schema text := format('{"type": "record", "name": "W", "fields": [{"name": "w", "type": {"type": "record", "name": "R3", "fields": [{"name": "k1", "type": {"type": "record", "name": "R2", "fields": [{"name": "m1", "type": {"type": "record", "name": "R1", "fields": [%s]}}, %s]}}, %s]}}]}', f, r2, r3);
BEGIN
  EXECUTE format($f$CREATE FOREIGN TABLE avro_nulls_small (small jsonb OPTIONS (field 'w.k1.m1'))
    SERVER kafka OPTIONS (topic %L, format 'avro', schema %L)$f$, current_setting('formats.topic'), schema);
  EXECUTE format($f$CREATE FOREIGN TABLE avro_nulls_whole (w jsonb)
    SERVER kafka OPTIONS (topic %L, format 'avro', schema %L)$f$, current_setting('formats.topic'), schema);
END $$;
CREATE FOREIGN TABLE avro_nulls_w (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO avro_nulls_w VALUES ('\x', 0);
SELECT length(small::text) FROM avro_nulls_small;
SELECT w IS NULL FROM avro_nulls_whole;

-- a subject's latest schema needs a registry
CREATE FOREIGN TABLE js_out (id int) SERVER kafka OPTIONS (topic 'x', format 'jsonschema');
INSERT INTO js_out VALUES (1);

-- jsonschema: JSON after Confluent's framing (no registry: the id is not checked)
\set topic formats_jsonschema_ :run
CREATE FOREIGN TABLE js_w (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO js_w VALUES
  ('\x0000000007'::bytea || convert_to('{"id": 7, "geo": {"city": "Oslo"}}', 'UTF8'), 0),
  (convert_to('{"id": 8}', 'UTF8'), 0);
CREATE FOREIGN TABLE js (id int, city text OPTIONS (field 'geo.city'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'jsonschema');
SELECT id, city FROM js WHERE o = 0;
SELECT id, city FROM js WHERE o = 1;
-- a key not in the wire format: the error names no column (it named the
-- last meta column decoded before the key)
CREATE FOREIGN TABLE jsk_w (v bytea, k text OPTIONS (meta 'key'), p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO jsk_w VALUES (convert_to('{"id": 9}', 'UTF8'), 'garbage', 0);
CREATE FOREIGN TABLE jsk (id int, kid int, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', key 'kid', key_format 'jsonschema');
SELECT kid, o FROM jsk WHERE o = 2;
-- two columns of one field, in json as in avro
CREATE FOREIGN TABLE js2 (id int, id_text text OPTIONS (field 'id'), geo jsonb, city text OPTIONS (field 'geo.city'),
    city2 varchar(10) OPTIONS (field 'geo.city'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'jsonschema');
SELECT id, id_text, geo, city, city2 FROM js2 WHERE o = 0;
DROP SERVER kafka CASCADE;
DROP DOMAIN formats_posint, formats_ts, formats_js, formats_ints, formats_street_d;
DROP TYPE formats_street;
