-- Aggregates: every built-in one that Postgres can combine, hll and
-- tdigest, aggregates made here, and those refused.  Each view equals the
-- plain query over the same messages, merged across batches of 300 (one
-- worker) and across two workers.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE EXTENSION hll;
CREATE EXTENSION tdigest;
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic aggs_ :run
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
-- a column of every type a built-in combinable aggregate takes
CREATE FOREIGN TABLE m (g int, i2 smallint, i4 int, i8 bigint, n numeric, f4 real, f8 float8,
    iv interval, mn money, d date, t time, tz timetz, ts timestamp, tstz timestamptz,
    tx text, c char(3), o oid, arr int[], e mood, ip inet, lsn pg_lsn, x8 xid8, ti tid,
    b boolean, bt bit(4), r int4range, mr int4multirange, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO m
  SELECT g % 7, g % 300 - 150, g * 37 % 1000, g * 7919 % 100003, (g % 1000) * 0.37,
         (g % 97) / 8.0, (g % 89) / 3.0, g * interval '17 min', (g % 500) * 0.5,
         date '2024-01-01' + g % 400, time '00:00' + g * interval '7 s',
         (time '00:00' + g * interval '11 s')::timetz, timestamp '2024-01-01' + g * interval '1 h',
         timestamptz '2024-01-01 00:00+00' + g * interval '3 h',
         'x' || g * 13 % 1000, chr(65 + g % 26) || 'b', g * 3 % 1000, ARRAY[g % 10, g % 3],
         (enum_range(NULL::mood))[1 + g % 3], ('10.0.' || g % 256 || '.' || g % 7)::inet,
         ('0/' || to_hex(g * 16))::pg_lsn, (g * 5)::text::xid8, ('(' || g % 50 || ',' || g % 9 || ')')::tid,
         g % 11 <> 0, (g % 16)::bit(4), int4range(g % 20, 200 - g % 30),
         int4multirange(int4range(g % 20, 100), int4range(150, 300 - g % 40)), g % 4
  FROM generate_series(1, 2100) g;
-- nulls in every column too
INSERT INTO m (g, p) SELECT g % 7, g % 4 FROM generate_series(1, 70) g;

-- aggregates made here: a plain state with an initial value, and a combine
-- function that is not strict (states merge from the initial value, as in
-- Postgres's own partial aggregation); a strict transition function
-- without one (the first value becomes the state); an internal state,
-- serialised
CREATE FUNCTION total_sfunc(bigint, int) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS 'SELECT $1 + COALESCE($2, 0)';
CREATE FUNCTION total_combine(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS 'SELECT $1 + $2';
CREATE AGGREGATE total(int) (SFUNC = total_sfunc, STYPE = bigint, COMBINEFUNC = total_combine, INITCOND = '0');
CREATE AGGREGATE widest(int4range) (SFUNC = range_merge, STYPE = int4range, COMBINEFUNC = range_merge);
CREATE AGGREGATE mean(numeric) (SFUNC = numeric_avg_accum, STYPE = internal, FINALFUNC = numeric_avg,
  COMBINEFUNC = numeric_avg_combine, SERIALFUNC = numeric_avg_serialize,
  DESERIALFUNC = numeric_avg_deserialize);

-- the query, once as a plain view (the reference) and once continuous; floats rounded
CREATE FUNCTION r6(float8) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT round($1::numeric, 6)';
CREATE VIEW plain AS
  SELECT g, count(*) AS n, count(i4) AS ci4,
  avg(i2) AS avg_i2, avg(i4) AS avg_i4, avg(i8) AS avg_i8, avg(n) AS avg_n, r6(avg(f4)) AS avg_f4, r6(avg(f8)) AS avg_f8, avg(iv) AS avg_iv,
  sum(i2) AS sum_i2, sum(i4) AS sum_i4, sum(i8) AS sum_i8, sum(n) AS sum_n, r6(sum(f4)) AS sum_f4, r6(sum(f8)) AS sum_f8, sum(iv) AS sum_iv, sum(mn) AS sum_mn,
  min(i2) AS min_i2, min(i4) AS min_i4, min(i8) AS min_i8, min(n) AS min_n, min(f4) AS min_f4, min(f8) AS min_f8, min(iv) AS min_iv, min(mn) AS min_mn,
  min(d) AS min_d, min(t) AS min_t, min(tz) AS min_tz, min(ts) AS min_ts, min(tstz) AS min_tstz, min(tx) AS min_tx, min(c) AS min_c, min(o) AS min_o,
  min(arr) AS min_arr, min(e) AS min_e, min(ip) AS min_ip, min(lsn) AS min_lsn, min(x8) AS min_x8, min(ti) AS min_ti,
  max(i2) AS max_i2, max(i4) AS max_i4, max(i8) AS max_i8, max(n) AS max_n, max(f4) AS max_f4, max(f8) AS max_f8, max(iv) AS max_iv, max(mn) AS max_mn,
  max(d) AS max_d, max(t) AS max_t, max(tz) AS max_tz, max(ts) AS max_ts, max(tstz) AS max_tstz, max(tx) AS max_tx, max(c) AS max_c, max(o) AS max_o,
  max(arr) AS max_arr, max(e) AS max_e, max(ip) AS max_ip, max(lsn) AS max_lsn, max(x8) AS max_x8, max(ti) AS max_ti,
  var_pop(i2) AS vp_i2, var_pop(i4) AS vp_i4, var_pop(i8) AS vp_i8, var_pop(n) AS vp_n, r6(var_pop(f4)) AS vp_f4, r6(var_pop(f8)) AS vp_f8,
  var_samp(i2) AS vs_i2, var_samp(i4) AS vs_i4, var_samp(i8) AS vs_i8, var_samp(n) AS vs_n, r6(var_samp(f4)) AS vs_f4, r6(var_samp(f8)) AS vs_f8,
  variance(i2) AS v_i2, variance(i4) AS v_i4, variance(i8) AS v_i8, variance(n) AS v_n, r6(variance(f4)) AS v_f4, r6(variance(f8)) AS v_f8,
  stddev_pop(i2) AS sp_i2, stddev_pop(i4) AS sp_i4, stddev_pop(i8) AS sp_i8, stddev_pop(n) AS sp_n, r6(stddev_pop(f4)) AS sp_f4, r6(stddev_pop(f8)) AS sp_f8,
  stddev_samp(i2) AS ss_i2, stddev_samp(i4) AS ss_i4, stddev_samp(i8) AS ss_i8, stddev_samp(n) AS ss_n, r6(stddev_samp(f4)) AS ss_f4, r6(stddev_samp(f8)) AS ss_f8,
  stddev(i2) AS s_i2, stddev(i4) AS s_i4, stddev(i8) AS s_i8, stddev(n) AS s_n, r6(stddev(f4)) AS s_f4, r6(stddev(f8)) AS s_f8,
  regr_count(f8, i4) AS rc, r6(regr_sxx(f8, i4)) AS rsxx, r6(regr_syy(f8, i4)) AS rsyy, r6(regr_sxy(f8, i4)) AS rsxy,
  r6(regr_avgx(f8, i4)) AS rax, r6(regr_avgy(f8, i4)) AS ray, r6(regr_r2(f8, i4)) AS rr2, r6(regr_slope(f8, i4)) AS rslope,
  r6(regr_intercept(f8, i4)) AS ricpt, r6(covar_pop(f8, i4)) AS cvp, r6(covar_samp(f8, i4)) AS cvs, r6(corr(f8, i4)) AS corr,
  bool_and(b) AS band, bool_or(b) AS bor, every(b) AS bevery,
  bit_and(i2) AS ba_i2, bit_or(i2) AS bo_i2, bit_xor(i2) AS bx_i2, bit_and(i4) AS ba_i4, bit_or(i4) AS bo_i4, bit_xor(i4) AS bx_i4,
  bit_and(i8) AS ba_i8, bit_or(i8) AS bo_i8, bit_xor(i8) AS bx_i8, bit_and(bt) AS ba_bt, bit_or(bt) AS bo_bt, bit_xor(bt) AS bx_bt,
  range_intersect_agg(r) AS ri_r, range_intersect_agg(mr) AS ri_mr,
  total(i4) AS total, total(i4) FILTER (WHERE i2 > 0) AS total_pos, widest(r) AS widest, mean(n) AS mean,
  hll_cardinality(hll_add_agg(hll_hash_integer(i4))) AS distinct_i4, hll_cardinality(hll_add_agg(hll_hash_text(tx), 12)) AS distinct_tx
  FROM m GROUP BY g;
-- and aggregates over DISTINCT values (below)
CREATE VIEW plain_distinct AS
  SELECT i2 % 3 AS k, count(DISTINCT i4) AS d_i4, count(DISTINCT tx) FILTER (WHERE b) AS d_tx_b,
         count(DISTINCT lower(c) COLLATE "C") AS d_c, sum(DISTINCT i2) AS s_i2, avg(DISTINCT n) AS a_n,
         r6(stddev(DISTINCT f8)) AS sd_f8, min(DISTINCT tx) AS min_tx, count(*) AS n,
         count(DISTINCT e) AS d_e, count(DISTINCT ip) AS d_ip
  FROM m GROUP BY 1;
-- the continuous views: the same queries (one worker, and two)
SELECT format('CREATE VIEW %I WITH (ssp.continuous, ssp.batch_size = 300%s) AS %s',
              v, o, pg_get_viewdef(q::regclass))
FROM (VALUES ('cv', 'plain', ''), ('cv2', 'plain', ', ssp.parallelism = 2'),
             ('cvd', 'plain_distinct', ''), ('cvd2', 'plain_distinct', ', ssp.parallelism = 2')) x(v, q, o) \gexec
-- and with the built-in aggregates through their own functions, as any other
SET ssp.aggregate_fast_path = off;
SELECT format('CREATE VIEW %I WITH (ssp.continuous, ssp.batch_size = 300) AS %s', v, pg_get_viewdef(q::regclass))
FROM (VALUES ('cv3', 'plain'), ('cvd3', 'plain_distinct')) x(v, q) \gexec
RESET ssp.aggregate_fast_path;
-- every built-in aggregate with a combine function is in the query (its
-- parse tree names them)
SELECT a.aggfnoid::regprocedure AS missing
FROM pg_aggregate a JOIN pg_proc f ON f.oid = a.aggfnoid
WHERE a.aggcombinefn <> 0 AND f.pronamespace = 'pg_catalog'::regnamespace AND a.aggkind = 'n'
  AND strpos((SELECT ev_action::text FROM pg_rewrite WHERE ev_class = 'plain'::regclass),
             ':aggfnoid ' || a.aggfnoid::oid || ' ') = 0;
SELECT ssp.wait('cv'), ssp.wait('cv2'), ssp.wait('cv3');
SELECT view, processed FROM ssp.views WHERE view IN ('cv'::regclass, 'cv2'::regclass, 'cv3'::regclass)
ORDER BY 1;
-- equal to the plain query: the groups, and no row of either missing from the other
CREATE TEMP TABLE expected AS SELECT * FROM plain;
CREATE TEMP TABLE expected_rows AS SELECT * FROM m;
SELECT (SELECT count(*) FROM expected) AS groups,
       (SELECT count(*) FROM (SELECT * FROM cv EXCEPT SELECT * FROM expected) x) AS cv_extra,
       (SELECT count(*) FROM (SELECT * FROM expected EXCEPT SELECT * FROM cv) x) AS cv_missing,
       (SELECT count(*) FROM (SELECT * FROM cv2 EXCEPT SELECT * FROM expected) x) AS cv2_extra,
       (SELECT count(*) FROM (SELECT * FROM expected EXCEPT SELECT * FROM cv2) x) AS cv2_missing,
       (SELECT count(*) FROM (SELECT * FROM cv3 EXCEPT SELECT * FROM expected) x) AS cv3_extra,
       (SELECT count(*) FROM (SELECT * FROM expected EXCEPT SELECT * FROM cv3) x) AS cv3_missing;
SELECT g, n, total, total_pos, widest, mean, distinct_i4, distinct_tx, ri_r, ri_mr
FROM cv ORDER BY g;
-- the states are the aggregates' own: hll's is a sketch, stored in a bytea column
SELECT format_type(a.atttypid, a.atttypmod) AS state, count(*)
FROM pg_attribute a JOIN ssp.continuous_views c ON a.attrelid = c.mrel
WHERE c.view = 'cv'::regclass AND a.attnum > 0 AND a.attname LIKE '\_a%'
GROUP BY 1 ORDER BY 1;
SELECT count(*) AS generic_states
FROM pg_attribute a JOIN ssp.continuous_views c ON a.attrelid = c.mrel
WHERE c.view = 'cv3'::regclass AND a.attnum > 0 AND a.attname LIKE '\_a%';

-- tdigest: approximate percentiles.  Its documented error: the value
-- returned has a rank within eps of the one asked for (and one value more,
-- in a small group), checked against the messages themselves; eps is 1%
-- for a view's digests, 5% for a rollup's, merged from many small ones
CREATE FUNCTION rank_ok(vals float8[], est float8, q float8, eps float8 DEFAULT 0.01) RETURNS boolean
LANGUAGE sql AS
  'SELECT avg((v < est)::int) <= q + eps + 1.0 / count(*) AND avg((v <= est)::int) >= q - eps - 1.0 / count(*)
   FROM unnest(vals) v';
CREATE VIEW td WITH (ssp.continuous, ssp.batch_size = 300) AS
  SELECT g, tdigest(f8, 100) AS d, tdigest_percentile(n::float8, 100, 0.9) AS n90 FROM m GROUP BY g;
CREATE VIEW td2 WITH (ssp.continuous, ssp.parallelism = 2, ssp.batch_size = 300) AS
  SELECT g, tdigest(f8, 100) AS d FROM m GROUP BY g;
SELECT ssp.wait('td'), ssp.wait('td2');
SELECT count(*) AS groups,
       count(*) FILTER (WHERE rank_ok(q.f8s, v.p50, 0.5) AND rank_ok(q.f8s, v.p99, 0.99)
                          AND rank_ok(q.ns, v.n90, 0.9) AND rank_ok(q.f8s, v2.p50, 0.5)) AS within
FROM (SELECT g, tdigest_percentile(d, 0.5) AS p50, tdigest_percentile(d, 0.99) AS p99, min(n90) AS n90
      FROM td GROUP BY g) v
JOIN (SELECT g, tdigest_percentile(d, 0.5) AS p50 FROM td2 GROUP BY g) v2 USING (g)
JOIN (SELECT g, array_agg(f8) FILTER (WHERE f8 IS NOT NULL) AS f8s,
             array_agg(n::float8) FILTER (WHERE n IS NOT NULL) AS ns
      FROM expected_rows GROUP BY g) q USING (g);

-- session windows merge the states of the sessions an event joins
ALTER FOREIGN TABLE m OPTIONS (ADD timestamp 'tstz');
CREATE VIEW sess WITH (ssp.continuous, ssp.batch_size = 300, ssp.grace = '1000 days') AS
  SELECT g, ssp.session(tstz, '1 day') AS s, total(i4) AS total, mean(n) AS mean,
         hll_cardinality(hll_add_agg(hll_hash_integer(i4))) AS distinct_i4
  FROM m WHERE tstz IS NOT NULL GROUP BY 1, 2;
SELECT ssp.wait('sess');
-- a group's events are 21 hours apart: one session each, built from many batches
SELECT count(*) AS sessions,
       count(*) FILTER (WHERE (s.total, s.mean, s.distinct_i4) = (q.total, q.mean, q.distinct_i4)) AS same
FROM sess s JOIN (SELECT g, total(i4) AS total, mean(n) AS mean,
                         hll_cardinality(hll_add_agg(hll_hash_integer(i4))) AS distinct_i4
                  FROM m WHERE tstz IS NOT NULL GROUP BY g) q USING (g);

-- rollups: a view's stored states combined over coarser groups when read.
-- A daily view, rolled up by month, equals the monthly query: averages are
-- not averages of averages, sketches are unions.
CREATE VIEW daily WITH (ssp.continuous, ssp.batch_size = 300, ssp.grace = '1000 days') AS
  SELECT ssp.tumble(tstz, '1 day') AS day, g % 2 AS half, count(*) AS n, avg(i4) AS avg_i4,
         stddev(n) AS sd_n, r6(stddev(f8)) AS sd_f8, mean(n) AS mean, total(i4) AS total,
         hll_add_agg(hll_hash_integer(i4 % 50)) AS h, tdigest(f8, 100) AS d, sum(i8) / count(*) AS ratio
  FROM m WHERE tstz IS NOT NULL GROUP BY 1, 2;
CREATE VIEW monthly WITH (ssp.rollup) AS
  SELECT date_trunc('month', day AT TIME ZONE 'UTC') AS month, half, ssp.combine(n) AS n,
         ssp.combine(avg_i4) AS avg_i4, ssp.combine(sd_n) AS sd_n, ssp.combine(sd_f8) AS sd_f8,
         ssp.combine(mean) AS mean, ssp.combine(total) AS total,
         hll_cardinality(ssp.combine(h)) AS distinct_i4, ssp.combine(d) AS d, ssp.combine(ratio) AS ratio
  FROM daily GROUP BY 1, 2;
SELECT ssp.wait('daily');
SELECT count(*) AS months,
       count(*) FILTER (WHERE (r.n, r.avg_i4, r.sd_n, r.sd_f8, r.mean, r.total, r.distinct_i4, r.ratio) =
                              (q.n, q.avg_i4, q.sd_n, q.sd_f8, q.mean, q.total, q.distinct_i4, q.ratio)
                          AND rank_ok(q.f8s, t.p50, 0.5, 0.05)) AS same
FROM monthly r
JOIN (SELECT month, half, tdigest_percentile(d, 0.5) AS p50 FROM monthly GROUP BY 1, 2) t USING (month, half)
JOIN (SELECT date_trunc('month', ssp.tumble(tstz, '1 day') AT TIME ZONE 'UTC') AS month, g % 2 AS half,
             count(*) AS n, avg(i4) AS avg_i4, stddev(n) AS sd_n, r6(stddev(f8)) AS sd_f8, mean(n) AS mean,
             total(i4) AS total, hll_cardinality(hll_add_agg(hll_hash_integer(i4 % 50))) AS distinct_i4,
             sum(i8) / count(*) AS ratio, array_agg(f8) AS f8s
      FROM expected_rows WHERE tstz IS NOT NULL GROUP BY 1, 2) q USING (month, half);
-- with WHERE and HAVING over the rollup, and from a view with two workers
CREATE VIEW evens WITH (ssp.rollup) AS
  SELECT ssp.combine(n) AS n, ssp.combine(avg_n) AS avg_n, ssp.combine(s_i4) AS s_i4, ssp.combine(mean) AS mean,
         ssp.combine(distinct_i4) AS distinct_i4
  FROM cv2 WHERE g % 2 = 0 HAVING ssp.combine(n) > 0;
SELECT (e.n, e.avg_n, e.s_i4, e.mean, e.distinct_i4) =
       (SELECT count(*), avg(n), stddev(i4), mean(n), hll_cardinality(hll_add_agg(hll_hash_integer(i4)))
        FROM expected_rows WHERE g % 2 = 0) AS same
FROM evens e;
-- refused
CREATE VIEW r WITH (ssp.rollup) AS SELECT half, sum(n) FROM daily GROUP BY 1;
CREATE VIEW r WITH (ssp.rollup) AS SELECT ssp.combine(half) FROM daily;
CREATE VIEW r WITH (ssp.rollup) AS SELECT ssp.combine(n) FROM plain;
CREATE VIEW r WITH (ssp.rollup) AS SELECT half, ssp.combine(n) FROM daily GROUP BY 1 ORDER BY 1;
CREATE VIEW r WITH (ssp.rollup, ssp.continuous) AS SELECT ssp.combine(n) FROM daily;
SELECT ssp.combine(n) FROM daily;
-- only the view's owner may: what a rollup embeds is in a row the owner can change
CREATE ROLE ssp_not_owner;
GRANT SELECT ON daily TO ssp_not_owner;
SET ROLE ssp_not_owner;
CREATE VIEW r WITH (ssp.rollup) AS SELECT ssp.combine(n) FROM daily;
RESET ROLE;
REVOKE SELECT ON daily FROM ssp_not_owner;
DROP ROLE ssp_not_owner;
-- a rollup reads the continuous view's table: the view cannot go first
DROP VIEW daily;
DROP VIEW monthly, evens;

-- array_agg, string_agg, json_agg and jsonb_agg, which Postgres cannot
-- combine, kept as concatenations in arrival order: on one partition, the
-- order of the messages, across batches of 7 (json_agg's text as Postgres
-- writes it: a new line before each array after the first, not a null)
\set topic aggs_arrival_ :run
CREATE FOREIGN TABLE arrivals (k int, v int, s text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
INSERT INTO arrivals VALUES (0, 0, 'first', 0);
CREATE VIEW in_order WITH (ssp.continuous, ssp.batch_size = 7) AS
  SELECT k, array_agg(v) AS vs, string_agg(s, '|') AS ss, json_agg(v) AS js, jsonb_agg(s) AS jbs,
         array_agg(v) FILTER (WHERE v % 3 = 0) AS threes, count(*) AS n,
         json_agg(CASE WHEN v % 5 <> 0 THEN ARRAY[v, k] END) AS jas
  FROM arrivals GROUP BY k;
INSERT INTO arrivals SELECT g % 3, (g * 37) % 101, 's' || g, 0 FROM generate_series(1, 60) g;
SELECT ssp.wait('in_order');
INSERT INTO arrivals SELECT g % 4, (g * 53) % 97, NULL, 0 FROM generate_series(61, 100) g;
SELECT ssp.wait('in_order');
SELECT k, n, vs[1:5] AS first_vs, left(ss, 30) AS ss, threes[1:3] FROM in_order ORDER BY k;
CREATE TEMP TABLE arrived AS SELECT row_number() OVER () AS seq, * FROM (SELECT k, v, s FROM arrivals) a;
SELECT count(*) AS differences FROM
  ((SELECT k, vs::text, ss, js::text, jbs::text, threes::text, n, jas::text FROM in_order
    EXCEPT ALL SELECT k, array_agg(v ORDER BY seq)::text, string_agg(s, '|' ORDER BY seq),
                      json_agg(v ORDER BY seq)::text, jsonb_agg(s ORDER BY seq)::text,
                      (array_agg(v ORDER BY seq) FILTER (WHERE v % 3 = 0))::text, count(*),
                      json_agg(CASE WHEN v % 5 <> 0 THEN ARRAY[v, k] END ORDER BY seq)::text
               FROM arrived GROUP BY k)
   UNION ALL
   (SELECT k, array_agg(v ORDER BY seq)::text, string_agg(s, '|' ORDER BY seq),
           json_agg(v ORDER BY seq)::text, jsonb_agg(s ORDER BY seq)::text,
           (array_agg(v ORDER BY seq) FILTER (WHERE v % 3 = 0))::text, count(*),
           json_agg(CASE WHEN v % 5 <> 0 THEN ARRAY[v, k] END ORDER BY seq)::text
    FROM arrived GROUP BY k
    EXCEPT ALL SELECT k, vs::text, ss, js::text, jbs::text, threes::text, n, jas::text FROM in_order)) d;
-- their order cannot be merged by a rollup
CREATE VIEW r WITH (ssp.rollup) AS SELECT count(*) FROM in_order;
DROP VIEW in_order;

-- aggregates over DISTINCT values, exact: each group's values are kept in
-- a table of the view; a batch's partial reads only those new to the group.
-- NULL group keys (i2 % 3), FILTER, a collation, the generic path, two
-- workers sharing the values (cvd, cvd2 and cvd3, made above), no GROUP BY;
-- each equal to the plain query
CREATE VIEW cvd_all WITH (ssp.continuous, ssp.batch_size = 300) AS
  SELECT count(DISTINCT i4 % 100) AS d, count(DISTINCT g) FILTER (WHERE g > 2) AS dg, count(*) AS n FROM m;
-- DISTINCT aggregates alone, without GROUP BY: one group still
CREATE VIEW cvd_one WITH (ssp.continuous, ssp.batch_size = 300) AS
  SELECT count(DISTINCT g) AS groups, sum(DISTINCT g) AS total FROM m;
SELECT ssp.wait('cvd'), ssp.wait('cvd2'), ssp.wait('cvd3'), ssp.wait('cvd_all'), ssp.wait('cvd_one');
SELECT * FROM cvd_one;
DROP VIEW cvd_one;
SELECT * FROM plain_distinct ORDER BY k;
CREATE TEMP VIEW distinct_differences AS
SELECT (SELECT count(*) FROM ((SELECT * FROM cvd EXCEPT SELECT * FROM plain_distinct)
                              UNION ALL (SELECT * FROM plain_distinct EXCEPT SELECT * FROM cvd)) x) AS cvd_differences,
       (SELECT count(*) FROM ((SELECT * FROM cvd2 EXCEPT SELECT * FROM plain_distinct)
                              UNION ALL (SELECT * FROM plain_distinct EXCEPT SELECT * FROM cvd2)) x) AS cvd2_differences,
       (SELECT count(*) FROM ((SELECT * FROM cvd3 EXCEPT SELECT * FROM plain_distinct)
                              UNION ALL (SELECT * FROM plain_distinct EXCEPT SELECT * FROM cvd3)) x) AS cvd3_differences;
SELECT * FROM distinct_differences;
SELECT c.d = q.d AND c.dg = q.dg AND c.n = q.n AS same, c.d, c.dg
FROM cvd_all c, (SELECT count(DISTINCT i4 % 100) AS d, count(DISTINCT g) FILTER (WHERE g > 2) AS dg,
                        count(*) AS n FROM m) q;
-- the same values again add nothing; new ones count
INSERT INTO m (g, i2, i4, tx, b, p) SELECT g % 7, g % 300 - 150, g * 37 % 1000, 'x' || g * 13 % 1000, true, g % 4
  FROM generate_series(1, 500) g;
INSERT INTO m (g, i2, i4, p) VALUES (1, 5, 100001, 0), (1, NULL, 100002, 1);
SELECT ssp.wait('cvd'), ssp.wait('cvd2'), ssp.wait('cvd3'), ssp.wait('cvd_all');
SELECT * FROM distinct_differences;
SELECT k, d_i4, d_tx_b FROM cvd ORDER BY k;
-- the values are one of the view's tables; each kept once per group
SELECT count(*) AS buffers, bool_and(b::regclass::text LIKE 'cvd\_distinct%') AS named
FROM ssp.continuous_views c, unnest(c.buffers) b WHERE c.view = 'cvd'::regclass;
SELECT (SELECT count(*) FROM cvd_distinct WHERE _v1 IS NOT NULL) =
       (SELECT count(*) FROM (SELECT DISTINCT i2 % 3, i4 FROM m WHERE i4 IS NOT NULL) x) AS kept_once;
-- renamed, the table of values is still the view's
ALTER TABLE cvd_distinct RENAME TO "cvd's values";
INSERT INTO m (g, i2, i4, p) VALUES (2, 4, 100003, 2), (2, 4, 100003, 3), (2, 4, 100001, 0);
SELECT ssp.wait('cvd');
SELECT cvd_differences FROM distinct_differences;
SELECT k, d_i4 FROM cvd WHERE k = 1;
-- a group key of another collation; a composite value with NULL fields
-- (a value all the same, as count() takes it); a domain NOT NULL beside
-- another DISTINCT aggregate, whose rows leave it NULL
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN named AS text NOT NULL;
CREATE VIEW plain_odd AS
  SELECT chr(65 + g) COLLATE "C" AS k, count(DISTINCT (i4 % 5, tx)::pair) AS pairs,
         count(DISTINCT COALESCE(c, '-')::named) AS names, count(DISTINCT i2 % 7) AS sevens
  FROM m GROUP BY 1;
SELECT format('CREATE VIEW cvd_odd WITH (ssp.continuous, ssp.batch_size = 300) AS %s',
              pg_get_viewdef('plain_odd'::regclass)) \gexec
SELECT ssp.wait('cvd_odd');
SELECT count(*) AS cvd_odd_differences FROM ((SELECT * FROM cvd_odd EXCEPT SELECT * FROM plain_odd)
                              UNION ALL (SELECT * FROM plain_odd EXCEPT SELECT * FROM cvd_odd)) x;
SELECT * FROM cvd_odd ORDER BY k;
SELECT view, dead_letters, last_error FROM ssp.views WHERE view = 'cvd_odd'::regclass;
DROP VIEW cvd_odd, plain_odd;
DROP DOMAIN named;
DROP TYPE pair;
-- a rollup cannot combine them: two groups may hold one value
CREATE VIEW r WITH (ssp.rollup) AS SELECT ssp.combine(d_i4) FROM cvd;
CREATE VIEW cvd_rollup WITH (ssp.rollup) AS SELECT ssp.combine(n) AS n FROM cvd;
SELECT n = (SELECT count(*) FROM m) AS same FROM cvd_rollup;
DROP VIEW cvd_rollup;
-- ssp.reset empties them with the view
SELECT ssp.reset('cvd_all');
SELECT ssp.wait('cvd_all');
SELECT c.d = q.d AND c.dg = q.dg AND c.n = q.n AS same_after_reset
FROM cvd_all c, (SELECT count(DISTINCT i4 % 100) AS d, count(DISTINCT g) FILTER (WHERE g > 2) AS dg,
                        count(*) AS n FROM m) q;
DROP VIEW cvd_all;
SELECT count(*) AS left_behind FROM pg_class WHERE relname LIKE 'cvd\_all%';
-- a view of one group (no GROUP BY) has its row from the start, as its
-- query has one over no rows (count 0, most others NULL, total's initial
-- value): before any message (ssp.start = 'latest'), with two workers, and
-- after ssp.reset
CREATE VIEW plain_one AS
  SELECT count(*) AS n, count(i4) AS ci4, avg(i4) AS avg_i4, sum(n) AS sum_n, min(tx) AS min_tx,
         max(d) AS max_d, var_pop(f8) AS vp_f8, stddev(n) AS s_n, regr_count(f8, i4) AS rc,
         bool_and(b) AS band, bit_or(i4) AS bo_i4, range_intersect_agg(r) AS ri_r, total(i4) AS total,
         widest(r) AS widest, mean(n) AS mean, hll_cardinality(hll_add_agg(hll_hash_integer(i4))) AS d_i4,
         count(DISTINCT tx) AS d_tx, sum(DISTINCT i2) AS s_i2
  FROM m WHERE i4 < 0;
SELECT format('CREATE VIEW %I WITH (ssp.continuous, ssp.start = ''latest''%s) AS %s',
              v, o, pg_get_viewdef('plain_one'::regclass))
FROM (VALUES ('cv_one', ''), ('cv_one2', ', ssp.parallelism = 2')) x(v, o) \gexec
SELECT * FROM cv_one;
SELECT v, (SELECT count(*) FROM (SELECT * FROM plain_one) p) AS plain_rows, rows, differences
FROM (SELECT 'cv_one' AS v, (SELECT count(*) FROM cv_one) AS rows,
             (SELECT count(*) FROM ((SELECT * FROM cv_one EXCEPT ALL SELECT * FROM plain_one)
                                    UNION ALL (SELECT * FROM plain_one EXCEPT ALL SELECT * FROM cv_one)) x) AS differences
      UNION ALL
      SELECT 'cv_one2', (SELECT count(*) FROM cv_one2),
             (SELECT count(*) FROM ((SELECT * FROM cv_one2 EXCEPT ALL SELECT * FROM plain_one)
                                    UNION ALL (SELECT * FROM plain_one EXCEPT ALL SELECT * FROM cv_one2)) x)) c;
-- and messages merge into that row as into any group's
INSERT INTO m (g, i2, i4, n, f8, tx, d, b, r, p) VALUES
  (1, 5, -1, 2.5, 1.5, 'neg1', '2024-01-01', true, int4range(1, 5), 0),
  (2, -3, -2, NULL, 2.5, 'neg2', NULL, false, int4range(2, 9), 1),
  (3, 5, -3, 7, NULL, NULL, '2025-01-01', NULL, NULL, 2);
SELECT ssp.wait('cv_one'), ssp.wait('cv_one2');
SELECT n, ci4, avg_i4, sum_n, min_tx, max_d, rc, band, bo_i4, ri_r, total, widest, d_tx, s_i2 FROM cv_one;
SELECT (SELECT count(*) FROM ((SELECT * FROM cv_one EXCEPT ALL SELECT * FROM plain_one)
                              UNION ALL (SELECT * FROM plain_one EXCEPT ALL SELECT * FROM cv_one)) x) AS cv_one_differences,
       (SELECT count(*) FROM ((SELECT * FROM cv_one2 EXCEPT ALL SELECT * FROM plain_one)
                              UNION ALL (SELECT * FROM plain_one EXCEPT ALL SELECT * FROM cv_one2)) x) AS cv_one2_differences;
-- (reset with the view's statement of now, which names its table as renamed)
ALTER TABLE cv_one_mrel RENAME TO cv_one_table;
SELECT ssp.reset('cv_one', 'latest');
SELECT count(*) AS rows_after_reset, bool_and(n = 0 AND total = 0) AS empty FROM cv_one;
DROP VIEW cv_one, cv_one2, plain_one;
-- The generic path's functions are anyone's to call, with any arguments:
-- types that are not the aggregate's, and states its serialisation
-- function could not have written, are refused, never read as something
-- else (each of these crashed the server once).
SELECT ssp.agg_partial('sum(numeric)', NULL::bytea, x) FROM (VALUES (5)) v(x);
SELECT ssp.agg_combine('avg(int4)', 1::int8, 2::int8, NULL::int4);
SELECT ssp.agg_finalize('avg(int4)', 42::int8, NULL::numeric, NULL::int4);
SELECT ssp.agg_finalize('sum(int8)', 42::int8, NULL::text, NULL::int8);
SELECT ssp.agg_finalize('max(int4)', 42, NULL::text, NULL::int4);
SELECT ssp.agg_finalize('max(int4)', 42, NULL::int4, NULL::int4, NULL::int4);
SELECT ssp.agg_finalize('max(int4)', 42, NULL::int4, NULL::int4);
-- nor inputs a call of the aggregate would have coerced first (polymorphic
-- ones not yet of the type they resolve to, an unknown literal), an
-- ordered-set aggregate's direct arguments, or a VARIADIC array
CREATE AGGREGATE pair_replace(anycompatible, anycompatible) (SFUNC = array_replace,
  STYPE = anycompatiblearray, INITCOND = '{1}', COMBINEFUNC = array_cat);
SELECT ssp.agg_partial('pair_replace(anycompatible,anycompatible)', NULL::numeric[], 1, 2.5);
SELECT ssp.agg_partial('pair_replace(anycompatible,anycompatible)', NULL::numeric[], 1.0, 2.5);
SELECT ssp.agg_partial('max(text)', NULL::text, 'abc');
CREATE AGGREGATE ordered_cat(int ORDER BY text) (SFUNC = textcat, STYPE = text, INITCOND = '',
  COMBINEFUNC = textcat);
SELECT ssp.agg_partial('ordered_cat(int,text)', NULL::text, 42, 'x'::text);
CREATE AGGREGATE cat_all(VARIADIC int[]) (SFUNC = array_cat, STYPE = int[], COMBINEFUNC = array_cat);
SELECT ssp.agg_partial('cat_all(int[])', NULL::int[], 1, 2);
DROP AGGREGATE pair_replace(anycompatible, anycompatible), ordered_cat(int ORDER BY text),
  cat_all(VARIADIC int[]);
-- nor a way around a REVOKE: the caller needs EXECUTE on the aggregate,
-- and its owner on the aggregate's functions, as in a query of it
CREATE ROLE ssp_agg_owner;
CREATE ROLE ssp_no_execute;
CREATE FUNCTION priv_add(int, int) RETURNS int LANGUAGE sql IMMUTABLE STRICT AS 'SELECT $1 + $2';
CREATE AGGREGATE priv_sum(int) (SFUNC = priv_add, STYPE = int, COMBINEFUNC = priv_add);
ALTER AGGREGATE priv_sum(int) OWNER TO ssp_agg_owner;
REVOKE EXECUTE ON FUNCTION priv_sum(int) FROM PUBLIC;
SET ROLE ssp_no_execute;
SELECT priv_sum(x) FROM (VALUES (1), (2)) v(x);
SELECT ssp.agg_partial('priv_sum(int)', NULL::int, x) FROM (VALUES (1), (2)) v(x);
SELECT ssp.agg_combine('priv_sum(int)', 1, 2, NULL::int);
SELECT ssp.agg_finalize('priv_sum(int)', 3, NULL::int, NULL::int);
RESET ROLE;
GRANT EXECUTE ON FUNCTION priv_sum(int) TO ssp_no_execute;
SET ROLE ssp_no_execute;
SELECT ssp.agg_combine('priv_sum(int)', 1, 2, NULL::int) AS granted;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION priv_add(int, int) FROM PUBLIC;
SELECT priv_sum(x) FROM (VALUES (1), (2)) v(x);
SELECT ssp.agg_partial('priv_sum(int)', NULL::int, x) FROM (VALUES (1), (2)) v(x);
SELECT ssp.agg_combine_agg('priv_sum(int)', x, NULL::int) FROM (VALUES (1), (2)) v(x);
DROP AGGREGATE priv_sum(int);
DROP FUNCTION priv_add(int, int);
DROP ROLE ssp_agg_owner, ssp_no_execute;
-- var_pop(numeric)'s state: count, sum and sum of squares as numeric.c
-- writes them (digits, weight, sign, scale, the digits), largest scale and
-- its count, the counts of NaN and infinities
CREATE FUNCTION var_state(sum_weight text, sum_sign text DEFAULT '0000', digit text DEFAULT '1d4c',
                          n text DEFAULT '0000000000000002', tail text DEFAULT '')
RETURNS bytea LANGUAGE sql AS $$
  SELECT decode(n || '00000002' || sum_weight || '0000' || sum_sign || '00000002' || '0003' || digit
                || '00000002000000000000000000000004' || '00070c35'
                || '00000002' || '0000000000000001' || repeat('0', 48) || tail, 'hex')
$$;
SELECT ssp.agg_finalize('var_pop(numeric)', var_state('00000000'), NULL::numeric, NULL::numeric) AS sane,
       var_pop(x) AS "as Postgres" FROM (VALUES (1.5), (2.25)) v(x);
SELECT ssp.agg_finalize('var_pop(numeric)', var_state('80000001'), NULL::numeric, NULL::numeric);
SELECT ssp.agg_finalize('var_pop(numeric)', var_state('7fffffff'), NULL::numeric, NULL::numeric);
SELECT ssp.agg_combine('var_pop(numeric)', var_state('00000000', 'c000'), var_state('00000000'), NULL::numeric);
SELECT ssp.agg_finalize('var_pop(numeric)', var_state('00000000', digit => 'ffff'), NULL::numeric, NULL::numeric);
SELECT ssp.agg_finalize('var_pop(numeric)', var_state('00000000', n => 'ffffffffffffffff'), NULL::numeric, NULL::numeric);
SELECT ssp.agg_finalize('var_pop(numeric)', var_state('00000000', tail => '00'), NULL::numeric, NULL::numeric);
SELECT ssp.agg_combine_agg('var_pop(numeric)', substr(var_state('00000000'), 1, 20), NULL::numeric);
-- the states of numbers at Postgres's limits pass
SELECT ssp.agg_finalize('var_pop(numeric)', ssp.agg_partial('var_pop(numeric)', NULL::bytea, x), NULL::numeric, NULL::numeric)
       = var_pop(x) AS var_pop_exact
  FROM (VALUES ('9.999e65000'::numeric), (1e-8000), (-1e65000)) v(x);
SELECT ssp.agg_finalize('sum(numeric)', ssp.agg_partial('sum(numeric)', NULL::bytea, x), NULL::numeric, NULL::numeric)
       = sum(x) AS sum_exact
  FROM (VALUES ('9.999e131071'::numeric), (1e-16383), (-1e131071)) v(x);
SELECT ssp.agg_finalize('avg(int8)', ssp.agg_partial('avg(int8)', NULL::bytea, x), NULL::numeric, NULL::int8)
       = avg(x) AS avg_exact
  FROM (VALUES (9223372036854775807), (9223372036854775807), (-9223372036854775808)) v(x);
SELECT ssp.agg_finalize('stddev(int4)', ssp.agg_partial('stddev(int4)', NULL::bytea, x), NULL::numeric, NULL::int4)
       = stddev(x) AS stddev_exact
  FROM (VALUES (2147483647), (-2147483648), (5)) v(x);
-- every byte of a state of each layout set to each of nine values: some
-- pass, some are refused, none takes the server down
CREATE FUNCTION mutated(agg regprocedure, argtype text, vals text, OUT passed int, OUT refused int)
LANGUAGE plpgsql AS $$
DECLARE
  i int; v int; m bytea; r text; state bytea;
  ret text := (SELECT format_type(prorettype, NULL) FROM pg_proc WHERE oid = agg);
BEGIN
  EXECUTE format('SELECT ssp.agg_partial(%L::regprocedure, NULL::bytea, x) FROM unnest(%L::%s[]) x',
                 agg, vals, argtype) INTO state;
  passed := 0; refused := 0;
  FOR i IN 0 .. length(state) - 1 LOOP
    FOREACH v IN ARRAY ARRAY[0, 1, 15, 64, 127, 128, 192, 240, 255] LOOP
      m := set_byte(state, i, v);
      BEGIN
        EXECUTE format('SELECT ssp.agg_finalize(%L::regprocedure, $1, NULL::%s, NULL::%s)::text',
                       agg, ret, argtype) INTO r USING m;
        EXECUTE format('SELECT ssp.agg_combine(%L::regprocedure, $1, $1, NULL::%s)::text',
                       agg, argtype) INTO r USING m;
        passed := passed + 1;
      EXCEPTION WHEN others THEN
        refused := refused + 1;
      END;
    END LOOP;
  END LOOP;
END $$;
SELECT agg, m.passed > 0 AS some_passed, m.refused > 0 AS some_refused
FROM (VALUES ('var_pop(numeric)'::regprocedure, 'numeric', '{-1.5, 3, 1e-20, 7}'),
             ('avg(numeric)', 'numeric', '{-1.5, 3, Infinity}'),
             ('var_samp(int4)', 'int4', '{-15, 3, 2000000000}'),
             ('stddev(int8)', 'int8', '{-15, 3, 9000000000000000000}'),
             ('sum(int8)', 'int8', '{-15, 3, 9000000000000000000}')) c(agg, argtype, vals),
     LATERAL mutated(agg, argtype, vals) m;
DROP FUNCTION var_state, mutated;

-- refused
CREATE VIEW r WITH (ssp.continuous) AS SELECT array_agg(DISTINCT i4) FROM m;
CREATE VIEW r WITH (ssp.continuous) AS SELECT total(DISTINCT i4) FROM m;
CREATE VIEW r WITH (ssp.continuous, ssp.sliding = '1 hour') AS SELECT count(DISTINCT i4) FROM m;
CREATE VIEW r WITH (ssp.continuous) AS SELECT ssp.session(tstz, '1 day'), count(DISTINCT i4) FROM m GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS SELECT count(DISTINCT i4) FROM m WHERE random() < 0.5;
CREATE VIEW r WITH (ssp.continuous) AS SELECT count(DISTINCT i4 ORDER BY i4) FROM m;
CREATE VIEW r WITH (ssp.continuous) AS SELECT count(DISTINCT (i4, tx)) FROM m;

-- refused, with what to use instead
CREATE VIEW r WITH (ssp.continuous) AS SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) FROM m;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2) AS SELECT string_agg(tx, ',') FROM m;
CREATE VIEW r WITH (ssp.continuous) AS SELECT array_agg(i4 ORDER BY i4) FROM m;
CREATE VIEW r WITH (ssp.continuous) AS SELECT string_agg(tx, tx) FROM m;
CREATE VIEW r WITH (ssp.continuous) AS SELECT string_agg(tx, NULL) FROM m;
CREATE AGGREGATE unmergeable(int) (SFUNC = total_sfunc, STYPE = bigint, INITCOND = '0');
CREATE VIEW r WITH (ssp.continuous) AS SELECT unmergeable(i4) FROM m;
CREATE AGGREGATE unstorable(numeric) (SFUNC = numeric_avg_accum, STYPE = internal,
  FINALFUNC = numeric_avg, COMBINEFUNC = numeric_avg_combine);
CREATE VIEW r WITH (ssp.continuous) AS SELECT unstorable(n) FROM m;

-- numeric NaN and infinities: stddev and variance are Postgres's (NaN; the
-- square root of NaN lost its scale and came out null)
\set topic aggs_nan_ :run
CREATE FOREIGN TABLE nan_s (k text, n numeric) SERVER kafka OPTIONS (topic :'topic');
CREATE TABLE nan_t (k text, n numeric);
INSERT INTO nan_t VALUES ('a', 1), ('a', 'NaN'), ('b', 'Infinity'), ('b', 1), ('c', 'Infinity'),
  ('c', '-Infinity'), ('d', 'Infinity'), ('e', 1), ('e', 3.5);
CREATE VIEW nan_v WITH (ssp.continuous) AS
  SELECT k, stddev(n) AS sd, stddev_pop(n) AS sdp, var_samp(n) AS vs, var_pop(n) AS vp FROM nan_s GROUP BY k;
INSERT INTO nan_s SELECT * FROM nan_t;
SELECT ssp.wait('nan_v');
SELECT * FROM nan_v ORDER BY k;
SELECT (SELECT count(*) FROM (SELECT * FROM nan_v EXCEPT SELECT k, stddev(n), stddev_pop(n), var_samp(n), var_pop(n)
                               FROM nan_t GROUP BY k) x) AS extra,
       (SELECT count(*) FROM (SELECT k, stddev(n), stddev_pop(n), var_samp(n), var_pop(n) FROM nan_t GROUP BY k
                               EXCEPT SELECT * FROM nan_v) x) AS missing;
DROP VIEW nan_v;
DROP FOREIGN TABLE nan_s;
DROP TABLE nan_t;

DROP VIEW distinct_differences;
DROP VIEW plain, cv, cv2, cv3, td, td2, sess, daily, plain_distinct, cvd, cvd2, cvd3;
DROP SERVER kafka CASCADE;
DROP AGGREGATE total(int), widest(int4range), mean(numeric), unmergeable(int), unstorable(numeric);
DROP FUNCTION total_sfunc, total_combine, r6, rank_ok;
DROP TABLE expected, expected_rows;
DROP TYPE mood;
DROP EXTENSION hll, tdigest;
