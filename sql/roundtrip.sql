-- Round trips: 10,000 rows through each format come back exactly.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');

CREATE TABLE src AS
SELECT g AS id,
       'r' || g % 10 AS region,
       (g * 1.25)::numeric(12,2) AS amount,
       g * 0.1::float8 AS f,
       g % 2 = 0 AS flag,
       timestamptz '2024-01-01 00:00:00.123456+00' + g * interval '1 second' AS ts,
       date '2024-01-01' + g % 100 AS d,
       md5(g::text)::uuid AS u,
       jsonb_build_object('n', g, 'tags', jsonb_build_array('a', g), 'nested', jsonb_build_object('x', g % 3 = 0)) AS j,
       ARRAY[g, g + 1, NULL] AS arr,
       CASE WHEN g % 7 = 0 THEN NULL
            WHEN g % 7 = 1 THEN ''
            ELSE 'text "quoted", with comma ' || g || E'\nand a newline, é ü ✓' END AS note,
       9007199254740993 + g AS big,
       123456789012345678901234567890.123456789 + g AS huge
FROM generate_series(1, 10000) g;

-- json
\set topic rt_json_ :run
CREATE FOREIGN TABLE rt_json (id int, region text, amount numeric(12,2), f float8,
    flag bool, ts timestamptz, d date, u uuid, j jsonb, arr int[], note text,
    big bigint, huge numeric)
  SERVER kafka OPTIONS (topic :'topic', format 'json');
INSERT INTO rt_json SELECT * FROM src;
SELECT count(*) FROM rt_json;
(SELECT * FROM src EXCEPT ALL SELECT * FROM rt_json)
UNION ALL
(SELECT * FROM rt_json EXCEPT ALL SELECT * FROM src);

-- csv
\set topic rt_csv_ :run
CREATE FOREIGN TABLE rt_csv (id int, region text, amount numeric(12,2), f float8,
    flag bool, ts timestamptz, d date, u uuid, j jsonb, arr int[], note text,
    big bigint, huge numeric)
  SERVER kafka OPTIONS (topic :'topic', format 'csv');
INSERT INTO rt_csv SELECT * FROM src;
SELECT count(*) FROM rt_csv;
(SELECT * FROM src EXCEPT ALL SELECT * FROM rt_csv)
UNION ALL
(SELECT * FROM rt_csv EXCEPT ALL SELECT * FROM src);

-- text: one value column; NULL is a null message
\set topic rt_text_ :run
CREATE FOREIGN TABLE rt_text (note text) SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO rt_text SELECT note FROM src;
SELECT count(*), count(note) FROM rt_text;
(SELECT note FROM src EXCEPT ALL SELECT * FROM rt_text)
UNION ALL
(SELECT * FROM rt_text EXCEPT ALL SELECT note FROM src);

-- bytea: any bytes, NUL included
\set topic rt_bytea_ :run
CREATE FOREIGN TABLE rt_bytea (b bytea) SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO rt_bytea SELECT decode(md5(id::text) || '00ff0a', 'hex') FROM src;
SELECT count(*), sum(length(b)) FROM rt_bytea;
(SELECT decode(md5(id::text) || '00ff0a', 'hex') FROM src EXCEPT ALL SELECT * FROM rt_bytea)
UNION ALL
(SELECT * FROM rt_bytea EXCEPT ALL SELECT decode(md5(id::text) || '00ff0a', 'hex') FROM src);

-- keys, event time, partitions and headers travel with the message
\set topic rt_meta_ :run
CREATE FOREIGN TABLE rt_meta (
    id int, region text, ts timestamptz, note text,
    p int OPTIONS (meta 'partition'),
    kts timestamptz OPTIONS (meta 'timestamp'),
    trace text OPTIONS (meta 'header:trace'),
    blob bytea OPTIONS (meta 'header:blob'),
    o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json', key 'id,region', timestamp 'ts');
INSERT INTO rt_meta (id, region, ts, note, p, trace, blob)
  SELECT id, region, ts, note, id % 4, 'trace-' || id, CASE WHEN id % 3 = 0 THEN '\x00ff'::bytea END FROM src;
SELECT count(*), count(DISTINCT o::text || '/' || p) AS distinct_positions,
       bool_and(p = id % 4) AS partitions_kept,
       bool_and(kts = date_trunc('milliseconds', ts)) AS timestamps_kept,
       bool_and(trace = 'trace-' || id) AS headers_kept,
       count(blob) AS blobs, bool_and(blob = '\x00ff') AS blobs_kept
FROM rt_meta;
(SELECT id, region, ts, note FROM src EXCEPT ALL SELECT id, region, ts, note FROM rt_meta)
UNION ALL
(SELECT id, region, ts, note FROM rt_meta EXCEPT ALL SELECT id, region, ts, note FROM src);
-- a message timestamp Kafka cannot carry is refused (librdkafka sent 0 as
-- the time of sending, a reader took a negative one for none), and
-- infinity did not fit; an event time that cannot be one leaves the
-- message the time of sending, the event time in its value
INSERT INTO rt_meta (id, ts, kts) VALUES (-1, now(), '1970-01-01 00:00:00+00');
INSERT INTO rt_meta (id, ts, kts) VALUES (-1, now(), '1969-12-31 23:00:00+00');
INSERT INTO rt_meta (id, ts, kts) VALUES (-1, now(), 'infinity');
INSERT INTO rt_meta (id, ts, kts) VALUES (-1, now(), '-infinity');
-- past the last millisecond a reader can take (a scan of the message failed)
INSERT INTO rt_meta (id, ts, kts) VALUES (-1, now(), '294247-01-10 04:00:54.776+00');
INSERT INTO rt_meta (id, ts, kts) VALUES (-1, now(), '1970-01-01 00:00:00.001+00');
INSERT INTO rt_meta (id, ts) VALUES (-2, '1960-06-01 00:00:00+00'), (-3, 'infinity');
-- a timestamp without time zone is named as it was given
CREATE FOREIGN TABLE rt_meta_local (id int, kt timestamp OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic');
SET TimeZone = 'Asia/Tokyo';
INSERT INTO rt_meta_local VALUES (-1, '1970-01-01 08:59:59');
RESET TimeZone;
DROP FOREIGN TABLE rt_meta_local;
SELECT id, kts = '1970-01-01 00:00:00.001+00' AS as_given, kts > now() - interval '1 hour' AS sent_now,
       CASE WHEN id < -1 THEN ts END AS ts
FROM rt_meta WHERE id < 0 ORDER BY id;
-- the same topic seen with the key as one column, and the value alone
CREATE FOREIGN TABLE rt_meta_raw (k text OPTIONS (meta 'key'), v jsonb)
  SERVER kafka OPTIONS (topic :'topic', format 'text');
SELECT k, v FROM rt_meta_raw WHERE k::jsonb ->> 'id' = '42';
-- a single key column is the key's text
\set topic rt_key_ :run
CREATE FOREIGN TABLE rt_key_w (id bigint, region text) SERVER kafka OPTIONS (topic :'topic', key 'id');
INSERT INTO rt_key_w SELECT id, region FROM src WHERE id <= 100;
CREATE FOREIGN TABLE rt_key_r (k text OPTIONS (meta 'key'), region text) SERVER kafka OPTIONS (topic :'topic');
SELECT count(*), bool_and(k::bigint BETWEEN 1 AND 100) FROM rt_key_r;
SELECT count(*) FROM (SELECT id, region FROM rt_key_w EXCEPT ALL SELECT id, region FROM src WHERE id <= 100) x;

-- nested fields: field paths build and read nested objects
\set topic rt_nested_ :run
CREATE FOREIGN TABLE rt_nested (id int, city text OPTIONS (field 'address.city'),
    zip text OPTIONS (field 'address.zip'), lat float8 OPTIONS (field 'address.geo.lat'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_nested VALUES (1, 'Lyon', '69001', 45.76), (2, NULL, '75001', NULL);
CREATE FOREIGN TABLE rt_nested_raw (v text) SERVER kafka OPTIONS (topic :'topic', format 'text');
SELECT v FROM rt_nested_raw ORDER BY v;
SELECT * FROM rt_nested ORDER BY id;

-- COPY FROM into a stream
\set topic rt_copy_ :run
CREATE FOREIGN TABLE rt_copy (id int, note text) SERVER kafka OPTIONS (topic :'topic', format 'csv');
COPY rt_copy FROM STDIN (FORMAT csv);
1,one
2,"two, with comma"
3,
\.
SELECT * FROM rt_copy ORDER BY id;

-- bytea, multidimensional arrays, arrays of jsonb and domains come back
-- as written, in json and csv: bytea as its text ("\\x0001ff", read by
-- bytea's input, not as the text's bytes), nested arrays, domains as their
-- base types (numbers as numbers, jsonb as JSON, not strings)
CREATE DOMAIN rt_posint AS int CHECK (VALUE > 0);
CREATE DOMAIN rt_dj AS jsonb;
CREATE DOMAIN rt_intarr AS int[];
CREATE TABLE rt_types_src (id int, b bytea, ba bytea[], md int[], mt text[], ja jsonb[],
    n rt_posint, j rt_dj, na rt_posint[], da rt_intarr, dja rt_dj[]);
INSERT INTO rt_types_src VALUES
  (1, '\x0001ff', ARRAY['\x00'::bytea, '\x5c78', '\x'], '{{1,2},{3,NULL}}',
   '{{"a,b","c\"d"},{NULL,""}}', ARRAY['{"x": 1}'::jsonb, '[1, [2]]', '"s"', '3', NULL],
   5, '{"x": 1}', '{1,2}', '{{1},{2}}', ARRAY['{"y": [1]}'::rt_dj, '"t"']),
  (2, '\x', '{}', '{}', '{{{a}},{{b}}}', '{}', 1, '"str"', '{}', '{}', '{}'),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
\set topic rt_types_json_ :run
CREATE FOREIGN TABLE rt_types_json (id int, b bytea, ba bytea[], md int[], mt text[], ja jsonb[],
    n rt_posint, j rt_dj, na rt_posint[], da rt_intarr, dja rt_dj[])
  SERVER kafka OPTIONS (topic :'topic', format 'json');
INSERT INTO rt_types_json SELECT * FROM rt_types_src;
SELECT id, b, length(b), md, array_dims(md), mt, ja, n, j, da, dja FROM rt_types_json ORDER BY id;
(SELECT * FROM rt_types_src EXCEPT ALL SELECT * FROM rt_types_json)
UNION ALL
(SELECT * FROM rt_types_json EXCEPT ALL SELECT * FROM rt_types_src);
CREATE FOREIGN TABLE rt_types_json_raw (v text) SERVER kafka OPTIONS (topic :'topic', format 'text');
SELECT v FROM rt_types_json_raw WHERE v LIKE '{"id": 1,%' OR v LIKE '{"id":1,%';
\set topic rt_types_csv_ :run
CREATE FOREIGN TABLE rt_types_csv (id int, b bytea, ba bytea[], md int[], mt text[], ja jsonb[],
    n rt_posint, j rt_dj, na rt_posint[], da rt_intarr, dja rt_dj[])
  SERVER kafka OPTIONS (topic :'topic', format 'csv');
INSERT INTO rt_types_csv SELECT * FROM rt_types_src;
SELECT id, b, length(b) FROM rt_types_csv ORDER BY id;
(SELECT * FROM rt_types_src EXCEPT ALL SELECT * FROM rt_types_csv)
UNION ALL
(SELECT * FROM rt_types_csv EXCEPT ALL SELECT * FROM rt_types_src);
-- a multidimensional array of jsonb would come back as one dimension: refused
INSERT INTO rt_types_json (id, ja) VALUES (4, '{{"{}"},{"[]"}}');
INSERT INTO rt_types_json (id, dja) VALUES (4, ARRAY[['{}'::rt_dj]]);
-- a field written by two columns, or holding another column's field,
-- would be written twice (the reader keeping the last): refused on INSERT
\set topic rt_overlap_ :run
CREATE FOREIGN TABLE rt_overlap (a text OPTIONS (field 'x'), b int OPTIONS (field 'x.y'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_overlap VALUES ('hello', 7);
CREATE FOREIGN TABLE rt_overlap2 (b int OPTIONS (field 'x.y'), c int, a jsonb OPTIONS (field 'x'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_overlap2 VALUES (7, 1, '{"y": 7}');
CREATE FOREIGN TABLE rt_same (a text OPTIONS (field 'x.y'), b jsonb OPTIONS (field 'x.y'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_same VALUES ('1', '1');
-- so do two columns of the message's key, partition or timestamp (the
-- keys were joined, the last partition taken)
CREATE FOREIGN TABLE rt_two_keys (id int, k1 text OPTIONS (meta 'key'), k2 text OPTIONS (meta 'key'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_two_keys VALUES (1, 'a', 'b');
CREATE FOREIGN TABLE rt_two_parts (id int, p1 int OPTIONS (meta 'partition'), p2 int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_two_parts VALUES (1, 0, NULL);
DROP FOREIGN TABLE rt_two_keys, rt_two_parts;
-- reading such streams is fine: each column gets the field's value
CREATE FOREIGN TABLE rt_overlap_w (x jsonb) SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rt_overlap_w VALUES ('{"y": 7}');
SELECT * FROM rt_overlap;
SELECT * FROM rt_overlap2;
SELECT * FROM rt_same;
DROP TABLE rt_types_src;

DROP TABLE src;
DROP SERVER kafka CASCADE;
DROP DOMAIN rt_posint, rt_dj, rt_intarr;
