-- Scans: decoding JSON into Postgres types, errors, and pushdown.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
SET timezone = 'UTC';
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
-- raw messages are written through a text stream, into partition 0
\set topic scan_json_ :run
CREATE FOREIGN TABLE raw_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO raw_w VALUES
  ('{"id": 1, "i2": 7, "big": 9223372036854775807, "num": 12345678901234567890.123456789, "f": 1.5e3,
     "s": "tab\there \u00e9\ud83d\ude00 \"q\"", "b": true, "ts": "2024-05-01T12:00:00Z", "d": "2024-05-01",
     "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "j": {"x": [1, {"y": null}]}, "arr": [1, 2, null],
     "tarr": ["a", "b,c"], "geo": {"lat": 45.5, "deeper": {"name": "n1"}}}', 0),
  ('{"id": 2, "ts": 1714564800123, "s": 42, "b": false, "j": "just a string", "extra": {"ignored": [1,2,3]}}', 0),
  ('{"id": 3, "id": 4, "s": null, "geo": {"lat": "12.25"}, "j": null}', 0),
  ('{}', 0),
  ('  {"id": 5, "geo": [1, 2], "s": {"an": "object"}}  ', 0);
CREATE FOREIGN TABLE orders_j (
    id int, i2 smallint, big bigint, num numeric, f float8, s text, b bool,
    ts timestamptz, d date, u uuid, j jsonb, arr int[], tarr text[],
    lat float8 OPTIONS (field 'geo.lat'), name text OPTIONS (field 'geo.deeper.name'),
    missing text, o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
\x on
SELECT * FROM orders_j ORDER BY o;
\x off

-- a message that cannot be decoded fails the scan, saying where;
-- each bad message is in a partition of its own
\set topic scan_bad_ :run
CREATE FOREIGN TABLE bad_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE bad (id int, amount numeric,
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
INSERT INTO bad_w VALUES ('{"id": 1, "amount": 10}', 0), ('{"id": 2, "amount": "ten"}', 0),
  ('{"id": 3, "amount": 1', 1), ('[1, 2]', 2), ('{"id": 3000000000}', 3);
SELECT * FROM bad WHERE p = 0;
SELECT * FROM bad WHERE p = 1;
SELECT * FROM bad WHERE p = 2;
SELECT * FROM bad WHERE p = 3;
-- on_error 'null': what cannot be decoded is NULL, the rest of the row stays
ALTER FOREIGN TABLE bad OPTIONS (ADD on_error 'null');
SELECT * FROM bad ORDER BY p, o;
-- text that is not valid in the database encoding
\set topic scan_bytes_ :run
CREATE FOREIGN TABLE bytes_w (b bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
CREATE FOREIGN TABLE bytes_r (t text) SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO bytes_w VALUES ('\x6f6bff'::bytea, 0);
SELECT * FROM bytes_r;
-- csv with the wrong number of fields
\set topic scan_csv_ :run
CREATE FOREIGN TABLE csv_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE csv_r (a int, b text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'csv');
INSERT INTO csv_w VALUES ('1,"x,y"', 0);
SELECT * FROM csv_r;
INSERT INTO csv_w VALUES ('1,2,3', 0);
SELECT * FROM csv_r;
INSERT INTO csv_w VALUES ('1,"x"y', 1);
SELECT * FROM csv_r WHERE p = 1;

-- the fast scanner and Postgres's own JSON parser agree: on valid
-- messages ssp decodes what jsonb reads, invalid ones are errors; a field
-- that comes again replaces what was found inside its earlier value (o.x
-- was kept from it)
\set topic scan_grammar_ :run
CREATE FOREIGN TABLE grammar_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE grammar_r (a numeric, b text, c bool, o jsonb, n text OPTIONS (field 'o.x'),
    raw text OPTIONS (meta 'key'), off bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json', on_error 'null');
CREATE TABLE grammar (v text);
INSERT INTO grammar VALUES
  ('{"a": 1}'), ('{"a": -0}'), ('{"a": 1.5e3}'), ('{"a": 2E-2, "b": "x"}'), ('{"a": 0.25}'),
  (' {"a":1,"b":"y","c":true,"o":{"x":"in","z":[1,{"y":null}]}} '), (E'{\t"a"\n:\r7}'),
  ('{"b": "tab\tescaped", "a": 3}'), ('{"b": "\u00e9t\u00e9"}'), ('{"o": {"x": "deep"}, "o": {"x": "last"}}'),
  ('{"o": {"x": "gone"}, "o": {"y": 1}}'), ('{"o": {"x": "gone"}, "o": 5}'), ('{"o": {"x": "g\u006fne"}, "o": {}}'),
  ('{"c": false, "b": null}'), ('{}'), ('{"a": 1, "a": 2}'), ('{"o": []}'), ('{"o": [[], {}, [1, [2]]]}'),
  ('{"a": 01}'), ('{"a": 1.}'), ('{"a": -}'), ('{"a": .5}'), ('{"a": +1}'), ('{"a": 1x}'), ('{"c": tru}'),
  ('{"c": truex}'), ('{"c": nulll}'), ('{"a": 1,}'), ('{"a" 1}'), ('{"a": 1'), ('{"a": "open}'),
  ('{''a'': 1}'), ('{} x'), ('[1]'), ('"a"'), (''), ('{"a": 1} {"a": 2}'), (E'{"b": "line\nbreak"}'),
  ('{"b": "bad \x escape"}'), ('{"a": 1e}'), ('{"a": 1e+}'), ('{"a": -01}');
INSERT INTO grammar_w SELECT v, 0 FROM grammar;
CREATE FUNCTION valid_json(t text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  RETURN t::jsonb;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$;
WITH r AS (SELECT row_number() OVER (ORDER BY off) AS i, * FROM grammar_r),
     g AS (SELECT row_number() OVER () AS i, v, valid_json(v) AS j FROM grammar)
SELECT g.v, jsonb_typeof(g.j) = 'object' AS valid,
       r.a IS NOT DISTINCT FROM (g.j ->> 'a')::numeric
         AND r.b IS NOT DISTINCT FROM g.j ->> 'b'
         AND r.c IS NOT DISTINCT FROM (g.j ->> 'c')::bool
         AND r.o IS NOT DISTINCT FROM g.j -> 'o'
         AND r.n IS NOT DISTINCT FROM g.j -> 'o' ->> 'x' AS same
FROM r JOIN g USING (i) ORDER BY g.i;

-- timestamps: the common ISO form is read without timestamptz_in, and
-- gives what timestamptz_in gives (every other form goes to it, and so
-- does every error); in two time zones, as forms without an offset use it
\set topic scan_ts_ :run
CREATE FOREIGN TABLE ts_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE ts_r (s text, ts timestamptz, off bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json', on_error 'null');
CREATE TABLE ts_cases (s text);
INSERT INTO ts_cases VALUES
  ('2024-05-01T12:00:00Z'), ('2024-05-01 12:00:00+00'), ('2024-01-01T00:00:00.02+00:00'),
  ('2024-02-29T23:59:59.999999-07:00'), ('1999-12-31T23:59:59.5+05:30'), ('2000-03-01T00:00:00+0530'),
  ('0001-01-01T00:00:00Z'), ('9999-12-31T23:59:59.999999+14:00'), ('2024-05-01T12:00:00-00:30'),
  ('1900-02-28T12:00:00+01'), ('2100-02-28T00:00:00Z'), ('2024-12-31T23:59:59.000001-14:59'),
  ('2024-05-01T12:00:00.1234567Z'), ('2024-05-01T24:00:00Z'), ('2024-05-01T12:00:00'),
  ('2024-05-01T12:00Z'), ('2016-12-31T23:59:60Z'), ('2024-05-01T12:00:00+15:00'),
  ('2024-05-01 12:00:00 +01:00'), ('2024-5-1T12:00:00Z'), ('2024-05-01T12:00:00z'),
  ('2024-05-01T12:00:00+01:00:30'), ('2024-05-01T12:00:00.5'), ('2024-05-01'),
  ('2023-02-29T00:00:00Z'), ('2024-13-01T00:00:00Z'), ('2024-04-31T00:00:00Z'),
  ('2024-05-01T25:00:00Z'), ('2024-05-01T12:60:00Z'), ('2024-05-01T12:00:61Z'),
  ('2024-05-01T12:00:00+16:00'), ('2024-05-01T12:00:00.Z'), ('0000-01-01T00:00:00Z'),
  ('2024-05-01T12:00:00+1'), ('2024-05-01T12:00:00Zulu'), ('2024-05-01X12:00:00Z'),
  ('2024-05-01T12:00:00+01:0x'), ('+024-05-01T12:00:00Z');
INSERT INTO ts_w SELECT json_build_object('s', s, 'ts', s)::text, 0 FROM ts_cases;
CREATE FUNCTION try_timestamptz(t text) RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
  RETURN t::timestamptz;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$;
SELECT count(*) AS cases, count(try_timestamptz(s)) AS valid,
       count(*) FILTER (WHERE ts IS DISTINCT FROM try_timestamptz(s)) AS different
FROM ts_r;
SET timezone = 'America/New_York';
SELECT count(*) FILTER (WHERE ts IS DISTINCT FROM try_timestamptz(s)) AS different FROM ts_r;
SELECT s, ts FROM ts_r WHERE s IN ('2024-05-01T12:00:00', '2024-02-29T23:59:59.999999-07:00') ORDER BY off;
SET timezone = 'UTC';

-- a topic that does not exist
CREATE FOREIGN TABLE nowhere (a int) SERVER kafka OPTIONS (topic 'no_such_topic');
SELECT * FROM nowhere;

-- pushdown: partition, offset and timestamp bounds narrow what is read
\set topic scan_push_ :run
CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric,
    part int OPTIONS (meta 'partition'), off bigint OPTIONS (meta 'offset'),
    kts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
INSERT INTO orders (order_id, region, amount, part, kts)
  SELECT g, 'r' || g % 10, g * 1.5, g % 4, timestamptz '2024-01-01' + g * interval '1 minute'
  FROM generate_series(1, 10000) g;
SELECT region, count(*), sum(amount) FROM orders GROUP BY region ORDER BY region;
EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE part = 2 AND off >= 100 LIMIT 5;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT * FROM orders WHERE part = 2 AND off >= 100 LIMIT 5;
SELECT * FROM orders WHERE part = 2 AND off >= 100 ORDER BY off LIMIT 5;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT count(*) FROM orders WHERE part IN (1, 3) AND off < 10 AND 5 <= off;
SELECT part, min(off), max(off), count(*) FROM orders
  WHERE part IN (1, 3) AND off < 10 AND 5 <= off GROUP BY part ORDER BY part;
-- the same through expressions that are not pushed down
SELECT part, min(off), max(off), count(*) FROM orders
  WHERE part + 0 IN (1, 3) AND off + 0 < 10 AND 5 <= off + 0 GROUP BY part ORDER BY part;
-- parameters and stable expressions are evaluated at scan start
PREPARE q(int, bigint) AS SELECT count(*) FROM orders WHERE part = $1 AND off > $2;
EXECUTE q(0, 2490);
EXECUTE q(3, 0);
-- contradictions and NULL read nothing
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT * FROM orders WHERE off > 5 AND off < 3;
SELECT count(*) FROM orders WHERE part = NULL::int;
SELECT count(*) FROM orders WHERE part = 17;
-- timestamps: a lower bound is pushed down, every bound is checked
SELECT count(*) FROM orders WHERE kts >= '2024-01-07 00:00+00' AND kts < '2024-01-07 01:00+00';
-- a scan inside a nested loop is rescanned
SELECT p, (SELECT count(*) FROM orders o WHERE o.part = p AND o.off < 3)
  FROM generate_series(0, 4) p;

-- numbers: plain decimals are read without numeric_in, to the same value
-- and scale; every other spelling through numeric_in
\set topic scan_numbers_ :run
CREATE FOREIGN TABLE numbers_w (v text) SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE numbers_n (n numeric, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
CREATE FOREIGN TABLE numbers_t (n text, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
CREATE VIEW numbers AS SELECT n.n, t.n AS t FROM numbers_n n JOIN numbers_t t USING (p, o);
INSERT INTO numbers_w SELECT format('{"n": "%s"}', x) FROM unnest(ARRAY[
  '0', '-0', '0.00', '-0.0', '7', '-7', '+7', '007', '12.50', '-12.5', '1.', '-.5', '.25',
  '123456789012345678', '-123456789012345678', '1234567890123456789', '0.000000000000000001',
  '99999999999999999.9', '1.5e3', '-2E-2', '12345678901234567890.123456789']) x;
INSERT INTO numbers_w VALUES ('{"n": "  3.5 "}'), ('{"n": "NaN"}'), ('{"n": "Infinity"}'),
  ('{"n": 12.50}'), ('{"n": -0.0}'), ('{"n": 1.5e3}'), ('{"n": 123456789012345678901}');
SELECT t, n FROM numbers WHERE n::text IS DISTINCT FROM t::numeric::text;
SELECT count(*) AS same_value_and_scale FROM numbers WHERE n::text = t::numeric::text;
SELECT t, n FROM numbers ORDER BY t COLLATE "C";
DROP VIEW numbers;


-- text not valid in the database encoding is an error (22021) wherever it
-- goes: json and jsonb columns (which took it, and pg_dump's output could
-- not be restored), their arrays' elements, text; so are NUL bytes: raw
-- or as \u0000 in JSON, and in CSV fields (which cut the field short)
\set topic scan_utf8_ :run
CREATE FOREIGN TABLE utf8_w (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
CREATE FOREIGN TABLE utf8_j (a jsonb, b json, c jsonb[], t text,
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', on_error 'null');
INSERT INTO utf8_w VALUES
  (convert_to('{"a": "é", "b": {"x": "é"}, "c": [{"x": "é"}], "t": "é"}', 'UTF8'), 0),
  (convert_to('{"a": "', 'UTF8') || '\xfffe' || convert_to('"}', 'UTF8'), 0),
  (convert_to('{"a": {"x": "', 'UTF8') || '\xc328' || convert_to('"}}', 'UTF8'), 0),
  (convert_to('{"b": ["', 'UTF8') || '\xc328' || convert_to('"]}', 'UTF8'), 0),
  (convert_to('{"c": [{"x": "', 'UTF8') || '\xc328' || convert_to('"}]}', 'UTF8'), 0),
  (convert_to('{"t": "', 'UTF8') || '\xc328' || convert_to('"}', 'UTF8'), 0),
  (convert_to('{"a": "a\u0000b"}', 'UTF8'), 0),
  (convert_to('{"t": "a', 'UTF8') || '\x00' || convert_to('b"}', 'UTF8'), 0);
SELECT o, a, b, c, t FROM utf8_j WHERE p = 0 ORDER BY o;
ALTER FOREIGN TABLE utf8_j OPTIONS (SET on_error 'error');
SELECT a FROM utf8_j WHERE p = 0 AND o = 1;
SELECT a FROM utf8_j WHERE p = 0 AND o = 2;
SELECT b FROM utf8_j WHERE p = 0 AND o = 3;
SELECT c FROM utf8_j WHERE p = 0 AND o = 4;
SELECT a FROM utf8_j WHERE p = 0 AND o = 6;
SELECT t FROM utf8_j WHERE p = 0 AND o = 7;
CREATE FOREIGN TABLE utf8_c (id int, t text, b bytea,
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'csv', on_error 'null');
INSERT INTO utf8_w VALUES
  (convert_to('1,ab', 'UTF8') || '\x00' || convert_to('cd,', 'UTF8'), 1),
  (convert_to('2,"ab', 'UTF8') || '\x00' || convert_to('cd",', 'UTF8'), 1),
  (convert_to('3,,ab', 'UTF8') || '\x00' || convert_to('cd', 'UTF8'), 1),
  (convert_to('4,', 'UTF8') || '\xc328' || convert_to(',', 'UTF8'), 1),
  (convert_to('5,"a,""b""",\x00ff', 'UTF8'), 1);
SELECT o, id, t, b FROM utf8_c WHERE p = 1 ORDER BY o;
ALTER FOREIGN TABLE utf8_c OPTIONS (SET on_error 'error');
SELECT t FROM utf8_c WHERE p = 1 AND o = 0;
SELECT t FROM utf8_c WHERE p = 1 AND o = 1;
SELECT b FROM utf8_c WHERE p = 1 AND o = 2;

-- array elements take the column's typmod, as in '{...}'::numeric(5,2)[]
\set topic scan_typmod_ :run
CREATE FOREIGN TABLE typmod_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE typmod_r (v varchar(3)[], n numeric(5,2)[], p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO typmod_w VALUES ('{"v": ["abc", null], "n": [1.005, "2", 3]}', 0),
  ('{"v": ["abcdef"]}', 1), ('{"n": [12345.678]}', 2);
SELECT v, n FROM typmod_r WHERE p = 0;
SELECT v FROM typmod_r WHERE p = 1;
SELECT n FROM typmod_r WHERE p = 2;

-- nested JSON arrays of one shape are a multidimensional array; an
-- element of json or jsonb is any JSON value, as a jsonb column's is
\set topic scan_arrays_ :run
CREATE FOREIGN TABLE arrays_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE arrays_r (i int[], j jsonb[],
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', on_error 'null');
INSERT INTO arrays_w VALUES
  ('{"i": [[1, 2], [3, null]], "j": [{"x": 1}, [1, [2]], "s", 3, null]}', 0),
  ('{"i": [[[1], [2]], [[3], [4]]], "j": []}', 0),
  ('{"i": [], "j": [[]]}', 0),
  ('{"i": [[], []]}', 0),
  ('{"i": [[1, 2], [3]]}', 0),
  ('{"i": [[1], 2]}', 0),
  ('{"i": [1, [2]]}', 0),
  ('{"i": [{"x": 1}]}', 0),
  ('{"i": [[[[[[[1]]]]]]]}', 0);
SELECT o, i, array_dims(i) AS dims, j FROM arrays_r WHERE p = 0 ORDER BY o;
ALTER FOREIGN TABLE arrays_r OPTIONS (SET on_error 'error');
SELECT i FROM arrays_r WHERE p = 0 AND o = 4;
SELECT i FROM arrays_r WHERE p = 0 AND o = 5;
SELECT i FROM arrays_r WHERE p = 0 AND o = 6;
SELECT i FROM arrays_r WHERE p = 0 AND o = 7;
SELECT i FROM arrays_r WHERE p = 0 AND o = 8;

-- a domain is read as its base type, then checked: a number into a domain
-- over timestamptz is milliseconds since 1970, a string into one over jsonb
-- a JSON string
\set topic scan_domain_ :run
CREATE DOMAIN scan_ts AS timestamptz CHECK (VALUE > '2000-01-01');
CREATE DOMAIN scan_dj AS jsonb CHECK (jsonb_typeof(VALUE) <> 'number');
CREATE FOREIGN TABLE domain_w (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE FOREIGN TABLE domain_r (t scan_ts, j scan_dj,
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO domain_w VALUES ('{"t": 1714564800123, "j": "s"}', 0), ('{"t": 1000}', 0), ('{"j": 7}', 0);
SELECT t, j FROM domain_r WHERE p = 0 AND o = 0;
SELECT t FROM domain_r WHERE p = 0 AND o = 1;
SELECT j FROM domain_r WHERE p = 0 AND o = 2;
-- a number into a timestamp of a precision is rounded to it, as text is
CREATE FOREIGN TABLE domain_p (t0 timestamptz(0) OPTIONS (field 't'), t1 timestamp(1) OPTIONS (field 't'),
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
SELECT t0, t1 FROM domain_p WHERE p = 0 AND o = 0;
-- a fraction of a millisecond is kept to the microsecond (it was cut off),
-- and a number too small for a double is 0 (it was out of range)
INSERT INTO domain_w VALUES ('{"t": 1705314030123.456}', 0), ('{"t": 1.5}', 0), ('{"t": -2.5}', 0),
  ('{"t": 1e-400}', 0), ('{"t": 1.705314030123456e12}', 0), ('{"t": -5e-1001}', 0);
CREATE FOREIGN TABLE epoch_r (t timestamptz, t3 timestamptz(3) OPTIONS (field 't'),
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic');
SELECT o, t, t3 FROM epoch_r WHERE p = 0 AND o >= 3 ORDER BY o;
DROP FOREIGN TABLE epoch_r;

-- a scan decodes only the columns the query reads (its select list, WHERE,
-- joins; every column for a whole-row reference): another column's value
-- is never converted, so it neither fails the scan nor shows in an error to
-- a role that may read only some columns; the message itself must still
-- be JSON
\set topic scan_columns_ :run
CREATE FOREIGN TABLE columns_w (v text, k text OPTIONS (meta 'key'),
    h text OPTIONS (meta 'header:h'), p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO columns_w VALUES
  ('{"id": 1, "pin": "secret 1234", "note": "a"}', '1', '1', 0),
  ('{"id": "x2", "pin": 2, "note": "b"}', '2', '2', 0),
  ('{"id": 3, "pin": 3, "note": "c"}', 'key secret', 'header secret', 1),
  ('{"id": 4, "pin": 4', '4', '4', 2);
CREATE FOREIGN TABLE columns_r (id int, pin int, note text,
    kid int OPTIONS (meta 'key'), hid int OPTIONS (meta 'header:h'),
    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
CREATE ROLE ssp_scan_reader;
GRANT SELECT (id, note, p, o) ON columns_r TO ssp_scan_reader;
SET ROLE ssp_scan_reader;
SELECT id, note FROM columns_r WHERE p = 0 AND o = 0;
SELECT count(*) FROM columns_r WHERE p < 2;
SELECT pin FROM columns_r WHERE p = 0 AND o = 0;
SELECT c FROM columns_r c WHERE p = 0 AND o = 0;
-- a column it reads fails as before, naming the column
SELECT id, note FROM columns_r WHERE p = 0 ORDER BY o;
-- a message that is not JSON fails, without the parser's quote of it (the
-- pin, up to where it went wrong); JSON that is not an object, without
-- the start of the message
SELECT count(*) FROM columns_r WHERE p = 2;
RESET ROLE;
INSERT INTO columns_w VALUES ('["pin", 1234, "ééééééééééééééééé"]', '5', '5', 2);
CREATE FOREIGN TABLE columns_b (v bytea, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'bytea');
INSERT INTO columns_b VALUES ('\x0a0931', 2);
SET ROLE ssp_scan_reader;
SELECT id FROM columns_r WHERE p = 2 AND o = 1;
RESET ROLE;
-- a message that is not JSON fails whatever the scan reads
SELECT count(*) FROM columns_r WHERE p = 2;
-- JSON that is not an object: its start, whole characters, control
-- characters and bytes of no character escaped
SELECT id FROM columns_r WHERE p = 2 AND o = 1;
SELECT id FROM columns_r WHERE p = 2 AND o = 2;
-- every column: SELECT * and a whole-row reference fail on the pin
SELECT * FROM columns_r WHERE p = 0 AND o = 0;
SELECT row_to_json(c) FROM columns_r c WHERE p = 0 AND o = 0;
-- a column read only in WHERE, or in a join's condition, is read
SELECT id FROM columns_r WHERE p = 0 AND o = 0 AND pin > 0;
SELECT c.id FROM columns_r c JOIN (VALUES (1)) v (x) ON v.x = c.pin WHERE c.p = 0 AND c.o = 0;
-- key and header columns alike
SELECT id, note FROM columns_r WHERE p = 1;
SELECT id, kid FROM columns_r WHERE p = 1;
SELECT id, hid FROM columns_r WHERE p = 1;
CREATE FOREIGN TABLE columns_k (id int, kid int, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'json', key 'kid');
SELECT id FROM columns_k WHERE p = 1;
SELECT id, kid FROM columns_k WHERE p = 1;
-- on_error 'null': a column read that cannot be decoded is NULL, as before
ALTER FOREIGN TABLE columns_r OPTIONS (ADD on_error 'null');
SELECT id, note FROM columns_r WHERE p < 2 ORDER BY p, o;
-- csv: an unread field is not converted, but a record needs every field
\set topic scan_columns_csv_ :run
CREATE FOREIGN TABLE columns_cw (v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
INSERT INTO columns_cw VALUES ('1,secret 1234', 0), ('2', 1);
CREATE FOREIGN TABLE columns_c (id int, pin int, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'csv');
SELECT id FROM columns_c WHERE p = 0;
SELECT pin FROM columns_c WHERE p = 0;
SELECT id FROM columns_c WHERE p = 1;

-- a message timestamp into a column of a precision is rounded as any value
-- of the column (it kept its milliseconds), and a lower bound still reads
-- what rounds up to it
\set topic scan_round_ :run
CREATE FOREIGN TABLE rounded (id int, kts timestamptz(0) OPTIONS (meta 'timestamp'),
    kts3 timestamptz OPTIONS (meta 'timestamp')) SERVER kafka OPTIONS (topic :'topic');
CREATE FOREIGN TABLE rounded_w (id int, kts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO rounded_w VALUES (1, '2030-01-01 12:00:00.6+00'), (2, '2030-01-01 12:00:00.4+00');
SELECT id, kts, kts3 FROM rounded ORDER BY id;
SELECT id FROM rounded WHERE kts >= '2030-01-01 12:00:01+00';
SELECT id FROM rounded WHERE kts3 >= '2030-01-01 12:00:00.5+00';

DROP SERVER kafka CASCADE;
DROP ROLE ssp_scan_reader;
DROP DOMAIN scan_ts, scan_dj;
