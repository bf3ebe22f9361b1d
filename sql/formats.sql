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
-- two columns of one field, in json as in avro
CREATE FOREIGN TABLE js2 (id int, id_text text OPTIONS (field 'id'), geo jsonb, city text OPTIONS (field 'geo.city'),
    city2 varchar(10) OPTIONS (field 'geo.city'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'jsonschema');
SELECT id, id_text, geo, city, city2 FROM js2 WHERE o = 0;
DROP SERVER kafka CASCADE;
DROP TYPE formats_street;
