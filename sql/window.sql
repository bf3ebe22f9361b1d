-- Windows on event time: ssp.tumble, watermarks per partition, grace,
-- late events, emit final, retention.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
SET timezone = 'UTC';
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');

-- the function
SELECT ssp.tumble('2024-05-01 12:34:56+00', '1 minute'),
       ssp.tumble('2024-05-01 12:34:56+00', '15 minutes'),
       ssp.tumble('2024-05-01 12:34:56+00', '1 hour', '2000-01-01 00:30+00');
-- a day in Paris, across the change to summer time (2024-03-31)
SELECT d, ssp.tumble(d, '1 day', '2000-01-01 00:00 Europe/Paris') AS paris_day
FROM (VALUES ('2024-03-30 12:00+00'::timestamptz), ('2024-03-31 12:00+00'), ('2024-04-01 12:00+00')) v(d);
SELECT w FROM ssp.hop_windows('2024-05-01 12:34:56+00', '1 hour', '15 minutes') w;
-- a size that is not a multiple of the slide: windows start every 20 s and
-- last 50 s; 00:00:50 is in those of 00:00:20 and 00:00:40 (00:00:00's
-- ends at 00:00:50), 00:00:10 in those of 23:59:40 and 00:00:00
SELECT w FROM ssp.hop_windows('2024-01-01 00:00:50+00', '50 s', '20 s') w;
SELECT w FROM ssp.hop_windows('2024-01-01 00:00:10+00', '50 s', '20 s') w;
-- neither infinity is in a window (the series to infinity never ended)
SET statement_timeout = '60s';
SELECT count(*) FROM ssp.hop_windows('infinity', '1 hour', '1 minute');
SELECT count(*) FROM ssp.hop_windows('-infinity', '1 hour', '1 minute');
SELECT t, count(w) FROM (VALUES ('infinity'::timestamptz), ('2024-01-01 00:00:10+00'), ('-infinity')) v(t)
  LEFT JOIN LATERAL ssp.hop_windows(t, '50 s', '20 s') w ON true GROUP BY t ORDER BY t;
RESET statement_timeout;
SELECT count(*) FROM ssp.hop_windows(now(), '1 hour', '0 s');
SELECT ssp.hop(now(), '1 hour', '10 minutes');
SELECT ssp.tumble(now(), '1 month');
SELECT ssp.tumble(now(), '-1 minute');
-- a null time or size: no window (a null size crashed the server)
SELECT ssp.tumble(NULL, '1 minute') IS NULL AS no_time, ssp.tumble(now(), NULL) IS NULL AS no_size,
       ssp.tumble(now(), '1 minute', NULL) IS NOT NULL AS default_origin,
       (SELECT count(*) FROM ssp.hop_windows(now(), '1 hour', NULL)) AS no_slide;

\set topic win_ :run
-- the steps below use two partitions: a topic of two (the test broker would
-- make four, and a partition never written holds the watermark until
-- ssp.idle_timeout)
\! "$SSP_SRC/test/create_topic" "win_$SSP_RUN_ID" 2 >/dev/null
CREATE FOREIGN TABLE ev (id int, region text, ts timestamptz, step int,
    p int OPTIONS (meta 'partition'), kts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE FOREIGN TABLE ev_kafka_time (id int, kts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic');

-- refused
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(kts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, (step || ' minutes')::interval) AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 minute', NULL) AS w, count(*) FROM ev GROUP BY w;
-- ssp.hop and ssp.session are GROUP BY keys only, themselves (elsewhere every
-- message was a dead letter, or a join's view failed)
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM ev WHERE ssp.hop(ts, '1 hour', '30 minutes') > '2024-01-01';
CREATE VIEW r WITH (ssp.continuous) AS SELECT region, ssp.hop(ts, '1 hour', '30 minutes') FROM ev;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT region, max(ssp.hop(ts, '1 hour', '30 minutes')) FROM ev GROUP BY region;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '1 hour', '30 minutes') + interval '1 hour' AS w, count(*) FROM ev GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS SELECT region, ssp.session(ts, '1 hour') FROM ev;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 minute') AS a, ssp.tumble(ts, '1 hour') AS b, count(*) FROM ev GROUP BY a, b;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 month') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '7 minutes', '1 hour') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '1 day', '1 microsecond') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '100001 s', '1 s') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '1 hour', '10 minutes') AS w, ssp.tumble(ts, '1 hour') AS t, count(*) FROM ev GROUP BY w, t;
CREATE VIEW r WITH (ssp.continuous, ssp.grace = '1 minute') AS SELECT region, count(*) FROM ev GROUP BY region;
CREATE VIEW r WITH (ssp.continuous, ssp.emit = 'final') AS SELECT id FROM ev;
CREATE VIEW r WITH (ssp.continuous, ssp.grace = '-1 minute') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous, ssp.emit = 'sometimes') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous, ssp.step = '1 second') AS SELECT count(*) FROM ev;
CREATE VIEW r WITH (ssp.continuous, ssp.sliding = '1 day') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2) AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW r WITH (ssp.continuous, ssp.parallelism = 2, ssp.sliding = '1 hour') AS
  SELECT region, count(*) FROM ev GROUP BY region;
CREATE FOREIGN TABLE ev_no_time (id int) SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW r WITH (ssp.continuous, ssp.sliding = '1 day') AS SELECT count(*) FROM ev_no_time;
CREATE VIEW r WITH (ssp.continuous, ssp.sliding = '1 day') AS SELECT id FROM ev_no_time;
-- the Kafka timestamp is the event time of a stream without option timestamp
CREATE VIEW by_kafka_time WITH (ssp.continuous) AS
  SELECT ssp.tumble(kts, '1 hour') AS w, count(*) FROM ev_kafka_time GROUP BY w;
DROP VIEW by_kafka_time;

-- windowed views: grace 10 s, one-minute windows
CREATE VIEW per_minute WITH (ssp.continuous, ssp.grace = '10 s', ssp.commit_interval = '300ms') AS
  SELECT region, ssp.tumble(ts, '1 minute') AS window_start,
         ssp.tumble(ts, '1 minute') + interval '1 minute' AS window_end, count(*), max(id)
  FROM ev GROUP BY region, window_start;
CREATE VIEW closed WITH (ssp.continuous, ssp.grace = '10 s', ssp.emit = 'final', ssp.commit_interval = '300ms') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
CREATE VIEW recent WITH (ssp.continuous, ssp.grace = '10 s', ssp.retention = '1 minute', ssp.commit_interval = '300ms') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM ev GROUP BY w;
-- the table's one index leads with the window's start, whatever the
-- GROUP BY's order: events come mostly in time order, new groups at its end
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN ssp.continuous_views c ON i.indrelid = c.mrel
WHERE c.view = 'per_minute'::regclass;

-- hopping: two-minute windows every minute; each event is in two windows
CREATE VIEW hopping WITH (ssp.continuous, ssp.grace = '10 s', ssp.commit_interval = '300ms') AS
  SELECT ssp.hop(ts, '2 minutes', '1 minute') AS w, count(*), max(id) FROM ev GROUP BY w;
-- and 50-second windows every 20 seconds: each event is in two or three
CREATE VIEW hop_odd WITH (ssp.continuous, ssp.grace = '10 s', ssp.commit_interval = '300ms') AS
  SELECT ssp.hop(ts, '50 s', '20 s') AS w, count(*), max(id) FROM ev GROUP BY w;

-- distinct values per window, kept until the window closes
CREATE VIEW distinct_min WITH (ssp.continuous, ssp.grace = '10 s', ssp.commit_interval = '300ms') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(DISTINCT region) AS regions, count(*) FROM ev GROUP BY w;
CREATE VIEW distinct_hop WITH (ssp.continuous, ssp.grace = '10 s', ssp.commit_interval = '300ms') AS
  SELECT ssp.hop(ts, '2 minutes', '1 minute') AS w, count(DISTINCT region) AS regions,
         count(DISTINCT id % 3) AS threes FROM ev GROUP BY w;

-- events in steps, each one INSERT (one batch), out of order across two
-- partitions; ev_all keeps a plain copy
CREATE TABLE ev_all (id int, region text, ts timestamptz, step int, p int);
CREATE FUNCTION produce(s int, evs text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO ev (id, region, ts, step, p) SELECT id, region, ts::timestamptz, %s, p FROM (VALUES %s) v(id, region, ts, p)', s, evs);
  EXECUTE format('INSERT INTO ev_all SELECT id, region, ts::timestamptz, %s, p FROM (VALUES %s) v(id, region, ts, p)', s, evs);
END $$;
SELECT produce(1, $$(1, 'a', '2024-01-01 00:00:10', 0), (2, 'a', '2024-01-01 00:00:20', 1)$$);
SELECT ssp.wait('per_minute'), ssp.wait('closed'), ssp.wait('recent'), ssp.wait('hopping'), ssp.wait('hop_odd'),
       ssp.wait('distinct_min'), ssp.wait('distinct_hop');
SELECT produce(2, $$(3, 'b', '2024-01-01 00:01:05', 0), (4, 'b', '2024-01-01 00:01:30', 0), (5, 'a', '2024-01-01 00:00:50', 1)$$);
SELECT ssp.wait('per_minute'), ssp.wait('closed'), ssp.wait('recent'), ssp.wait('hopping'), ssp.wait('hop_odd'),
       ssp.wait('distinct_min'), ssp.wait('distinct_hop');
SELECT produce(3, $$(6, 'a', '2024-01-01 00:02:40', 1)$$);
SELECT ssp.wait('per_minute'), ssp.wait('closed'), ssp.wait('recent'), ssp.wait('hopping'), ssp.wait('hop_odd'),
       ssp.wait('distinct_min'), ssp.wait('distinct_hop');
SELECT view, watermark, late_events FROM ssp.views ORDER BY view::text;
-- late: windows 00:00 end at 00:01, before the watermark 00:01:20
SELECT produce(4, $$(7, 'a', '2024-01-01 00:00:30', 0), (8, 'b', '2024-01-01 00:01:59', 0), (9, 'a', '2024-01-01 00:00:59', 1)$$);
SELECT ssp.wait('per_minute'), ssp.wait('closed'), ssp.wait('recent'), ssp.wait('hopping'), ssp.wait('hop_odd'),
       ssp.wait('distinct_min'), ssp.wait('distinct_hop');
SELECT produce(5, $$(10, 'c', '2024-01-01 00:03:00', 0), (11, 'c', '2024-01-01 00:03:05', 1)$$);
SELECT ssp.wait('per_minute'), ssp.wait('closed'), ssp.wait('recent'), ssp.wait('hopping'), ssp.wait('hop_odd'),
       ssp.wait('distinct_min'), ssp.wait('distinct_hop');
SELECT produce(6, $$(12, 'b', '2024-01-01 00:02:10', 0), (13, 'b', '2024-01-01 00:01:10', 0)$$);
SELECT ssp.wait('per_minute'), ssp.wait('closed'), ssp.wait('recent'), ssp.wait('hopping'), ssp.wait('hop_odd'),
       ssp.wait('distinct_min'), ssp.wait('distinct_hop');
SELECT view, watermark, late_events, processed FROM ssp.views ORDER BY view::text;

-- the same rules as a plain query: the watermark before each step is the
-- smallest, over the partitions, of the latest event time of the earlier
-- steps, less the grace; an event is late if its window ended by then
CREATE VIEW step_marks AS
  SELECT s.step, (SELECT min(m) FROM (SELECT max(e.ts) AS m FROM ev_all e
                                      WHERE e.step < s.step GROUP BY e.p) x) - interval '10 s' AS w
  FROM (SELECT DISTINCT step FROM ev_all) s;
CREATE VIEW expected_late AS
SELECT e.*, ssp.tumble(e.ts, '1 minute') + interval '1 minute' <= m.w AS late
FROM ev_all e JOIN step_marks m USING (step);
SELECT id, ts, step, late FROM expected_late WHERE late ORDER BY id;
(SELECT * FROM per_minute EXCEPT ALL
 SELECT region, ssp.tumble(ts, '1 minute'), ssp.tumble(ts, '1 minute') + interval '1 minute', count(*), max(id)
 FROM expected_late WHERE late IS NOT TRUE GROUP BY 1, 2)
UNION ALL
(SELECT region, ssp.tumble(ts, '1 minute'), ssp.tumble(ts, '1 minute') + interval '1 minute', count(*), max(id)
 FROM expected_late WHERE late IS NOT TRUE GROUP BY 1, 2
 EXCEPT ALL SELECT * FROM per_minute);
SELECT * FROM per_minute ORDER BY window_start, region;
-- hopping windows: every window of each event that was open when it came
WITH pairs AS (
       SELECT e.id, hw, m.w AS mark FROM ev_all e JOIN step_marks m USING (step),
              ssp.hop_windows(e.ts, '2 minutes', '1 minute') hw),
     expected AS (
       SELECT hw AS w, count(*), max(id) FROM pairs
       WHERE hw + interval '2 minutes' > COALESCE(mark, '-infinity') GROUP BY hw)
SELECT count(*) AS differences FROM
  ((SELECT * FROM hopping EXCEPT ALL SELECT * FROM expected)
   UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM hopping)) d;
SELECT * FROM hopping ORDER BY w;
-- the same for windows whose size is not a multiple of their slide
WITH pairs AS (
       SELECT e.id, hw, m.w AS mark FROM ev_all e JOIN step_marks m USING (step),
              ssp.hop_windows(e.ts, '50 s', '20 s') hw),
     expected AS (
       SELECT hw AS w, count(*), max(id) FROM pairs
       WHERE hw + interval '50 s' > COALESCE(mark, '-infinity') GROUP BY hw)
SELECT count(*) AS differences FROM
  ((SELECT * FROM hop_odd EXCEPT ALL SELECT * FROM expected)
   UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM hop_odd)) d;
SELECT count(*) AS windows, sum(count) AS pairs FROM hop_odd;
-- distinct values: those of the events that were not late, per window
SELECT count(*) AS differences FROM
  ((SELECT * FROM distinct_min EXCEPT ALL
    SELECT ssp.tumble(ts, '1 minute'), count(DISTINCT region), count(*) FROM expected_late
    WHERE late IS NOT TRUE GROUP BY 1)
   UNION ALL
   (SELECT ssp.tumble(ts, '1 minute'), count(DISTINCT region), count(*) FROM expected_late
    WHERE late IS NOT TRUE GROUP BY 1 EXCEPT ALL SELECT * FROM distinct_min)) d;
SELECT * FROM distinct_min ORDER BY w;
WITH pairs AS (
       SELECT e.id, e.region, hw, m.w AS mark FROM ev_all e JOIN step_marks m USING (step),
              ssp.hop_windows(e.ts, '2 minutes', '1 minute') hw),
     expected AS (
       SELECT hw AS w, count(DISTINCT region), count(DISTINCT id % 3) FROM pairs
       WHERE hw + interval '2 minutes' > COALESCE(mark, '-infinity') GROUP BY hw)
SELECT count(*) AS differences FROM
  ((SELECT * FROM distinct_hop EXCEPT ALL SELECT * FROM expected)
   UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM distinct_hop)) d;
-- a window's values go in the first batch that begins after it closed;
-- the open ones' are kept
SELECT (SELECT count(*) FROM distinct_min_distinct d
        WHERE d._g1 + interval '1 minute' <= c.batch_watermark) AS closed_kept,
       (SELECT count(*) FROM distinct_min_distinct d
        WHERE d._g1 + interval '1 minute' > c.batch_watermark) AS open_kept
FROM ssp.continuous_views c WHERE c.view = 'distinct_min'::regclass;
SELECT (SELECT count(*) FROM distinct_hop_distinct d
        WHERE d._g1 + interval '2 minutes' <= c.batch_watermark) AS closed_kept,
       (SELECT count(*) FROM distinct_hop_distinct d
        WHERE d._g1 + interval '2 minutes' > c.batch_watermark) AS open_kept
FROM ssp.continuous_views c WHERE c.view = 'distinct_hop'::regclass;
-- emit final: only the windows the watermark (00:02:50) has closed
SELECT * FROM closed ORDER BY w;
-- retention: windows that ended a minute before the watermark are gone
SELECT * FROM recent ORDER BY w;
-- reset replays with a fresh watermark
SELECT ssp.reset('per_minute');
SELECT ssp.wait('per_minute');
SELECT view, watermark, late_events FROM ssp.views WHERE view = 'per_minute'::regclass;
SELECT sum(count) FROM per_minute;

DROP VIEW expected_late, step_marks;

-- a quiet partition stops holding the watermark after ssp.idle_timeout
\set topic win_idle_ :run
\! "$SSP_SRC/test/create_topic" "win_idle_$SSP_RUN_ID" 2 >/dev/null
CREATE FOREIGN TABLE idle_ev (ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW idle_w WITH (ssp.continuous, ssp.idle_timeout = '1 second', ssp.commit_interval = '100ms') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM idle_ev GROUP BY w;
CREATE VIEW busy_w WITH (ssp.continuous, ssp.commit_interval = '100ms') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) FROM idle_ev GROUP BY w;
INSERT INTO idle_ev VALUES ('2024-01-01 00:00', 0), ('2024-01-01 00:00', 1);
SELECT ssp.wait('idle_w'), ssp.wait('busy_w');
SELECT pg_sleep(1.5);
INSERT INTO idle_ev VALUES ('2024-01-01 00:10', 0);
SELECT ssp.wait('idle_w'), ssp.wait('busy_w');
SELECT view, watermark FROM ssp.views WHERE view IN ('idle_w'::regclass, 'busy_w'::regclass) ORDER BY 1;

-- sessions: bursts of activity per user, closed after 10 minutes of silence
\set topic win_sessions_ :run
\! "$SSP_SRC/test/create_topic" "win_sessions_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE clicks (usr text, page int, ts timestamptz, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW sessions WITH (ssp.continuous, ssp.commit_interval = '300ms') AS
  SELECT usr, ssp.session(ts, '10 minutes') AS session_start, max(ts) AS session_end,
         count(*) AS clicks, sum(page) AS pages
  FROM clicks GROUP BY usr, session_start;
CREATE VIEW closed_sessions WITH (ssp.continuous, ssp.emit = 'final', ssp.commit_interval = '300ms') AS
  SELECT usr, ssp.session(ts, '10 minutes') AS session_start, count(*) AS clicks
  FROM clicks GROUP BY usr, session_start;
-- the index of a session view's table is what its statements read: its
-- last one is not dropped (one of the user's own may go)
SELECT i.indexrelid::regclass AS session_index FROM pg_index i JOIN ssp.continuous_views c ON i.indrelid = c.mrel
WHERE c.view = 'sessions'::regclass \gset
CREATE INDEX sessions_own ON sessions_mrel (usr);
\set VERBOSITY terse
DROP INDEX sessions_own;
DROP INDEX :session_index;
\set VERBOSITY default
SELECT ssp.session(now(), '1 minute');
CREATE TABLE clicks_all (usr text, page int, ts timestamptz);
CREATE FUNCTION click(evs text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO clicks SELECT usr, page, ts::timestamptz, 0 FROM (VALUES %s) v(usr, page, ts)', evs);
  EXECUTE format('INSERT INTO clicks_all SELECT usr, page, ts::timestamptz FROM (VALUES %s) v(usr, page, ts)', evs);
END $$;
SELECT click($$('u1', 1, '2024-01-01 00:00'), ('u1', 2, '2024-01-01 00:05'), ('u2', 1, '2024-01-01 00:01')$$);
SELECT ssp.wait('sessions'), ssp.wait('closed_sessions');
SELECT click($$('u1', 3, '2024-01-01 00:22'), ('u2', 2, '2024-01-01 00:08')$$);
SELECT ssp.wait('sessions'), ssp.wait('closed_sessions');
SELECT * FROM sessions ORDER BY usr, session_start;
-- emit final shows no session yet: at the watermark 00:22 a click up to
-- 10 minutes after u1's first one (00:05) is not late (it showed that
-- session closed, with 2 clicks, before the next click took it)
SELECT * FROM closed_sessions ORDER BY usr, session_start;
-- a late click at 00:14 bridges u1's two sessions into one
SELECT click($$('u1', 4, '2024-01-01 00:14')$$);
SELECT ssp.wait('sessions'), ssp.wait('closed_sessions');
SELECT * FROM sessions ORDER BY usr, session_start;
SELECT * FROM closed_sessions ORDER BY usr, session_start;
-- time moves on; a click at 00:40 is then too late for any open session
SELECT click($$('u2', 3, '2024-01-01 01:00'), ('u3', 1, '2024-01-01 01:02')$$);
SELECT ssp.wait('sessions'), ssp.wait('closed_sessions');
SELECT click($$('u1', 5, '2024-01-01 00:40'), ('u3', 2, '2024-01-01 01:05')$$);
SELECT ssp.wait('sessions'), ssp.wait('closed_sessions');
SELECT view, watermark, late_events FROM ssp.views WHERE view::text LIKE '%sessions' ORDER BY 1;
-- the same as gaps and islands over the clicks that were not late
WITH c AS (SELECT * FROM clicks_all WHERE NOT (usr = 'u1' AND page = 5)),
     g AS (SELECT c.*, CASE WHEN ts - lag(ts) OVER (PARTITION BY usr ORDER BY ts) <= interval '10 minutes'
                       THEN 0 ELSE 1 END AS new FROM c),
     i AS (SELECT g.*, sum(new) OVER (PARTITION BY usr ORDER BY ts) AS sid FROM g),
     expected AS (SELECT usr, min(ts), max(ts), count(*), sum(page) FROM i GROUP BY usr, sid)
SELECT count(*) AS differences FROM
  ((SELECT * FROM sessions EXCEPT ALL SELECT * FROM expected)
   UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM sessions)) d;
SELECT * FROM sessions ORDER BY usr, session_start;
-- emit final: sessions that ended 20 minutes (twice the gap) before the
-- watermark (01:05)
SELECT * FROM closed_sessions ORDER BY usr, session_start;

-- sliding: the last 20 seconds, moving every second, relative to now
\set topic win_sliding_ :run
CREATE FOREIGN TABLE sl (region text, amount numeric, ts timestamptz)
  SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW last_20s WITH (ssp.continuous, ssp.sliding = '20 seconds', ssp.step = '1 second') AS
  SELECT region, count(*), sum(amount), avg(amount), min(amount), max(amount), stddev(amount),
         round(var_samp(amount::float8)::numeric, 6) AS vf
  FROM sl GROUP BY region;
CREATE VIEW last_20s_all WITH (ssp.continuous, ssp.sliding = '20 seconds') AS
  SELECT count(*) AS n, sum(amount) AS total FROM sl HAVING count(*) > 0;
-- without aggregates: the rows of the last 20 seconds
CREATE VIEW last_20s_rows WITH (ssp.continuous, ssp.sliding = '20 seconds', ssp.step = '1 second') AS
  SELECT region, amount FROM sl WHERE amount > 5;
-- the same over the Kafka timestamp (a meta column: decoded for the steps)
CREATE FOREIGN TABLE sl_kafka (region text, amount numeric, kts timestamptz OPTIONS (meta 'timestamp'))
  SERVER kafka OPTIONS (topic :'topic');
CREATE VIEW last_20s_kafka WITH (ssp.continuous, ssp.sliding = '20 seconds', ssp.step = '1 second') AS
  SELECT region, amount FROM sl_kafka WHERE amount > 5;
CREATE VIEW last_20s_kafka_n WITH (ssp.continuous, ssp.sliding = '20 seconds', ssp.step = '1 second') AS
  SELECT count(*) AS n FROM sl_kafka;
INSERT INTO sl SELECT 'r' || g % 2, g, now() - interval '16 seconds' FROM generate_series(1, 10) g;
INSERT INTO sl SELECT 'r' || g % 2, g * 10, now() - interval '4 seconds' FROM generate_series(1, 10) g;
INSERT INTO sl VALUES ('r0', 1000, now() - interval '1 hour');   -- already out of range: late
SELECT ssp.wait('last_20s'), ssp.wait('last_20s_all'), ssp.wait('last_20s_rows'),
       ssp.wait('last_20s_kafka'), ssp.wait('last_20s_kafka_n');
CREATE VIEW sl_expected AS
  SELECT region, count(*), sum(amount), avg(amount), min(amount), max(amount), stddev(amount),
         round(var_samp(amount::float8)::numeric, 6) AS vf
  FROM sl WHERE ts > now() - interval '20 seconds' GROUP BY region;
SELECT count(*) AS differences FROM
  ((SELECT * FROM last_20s EXCEPT ALL SELECT * FROM sl_expected)
   UNION ALL (SELECT * FROM sl_expected EXCEPT ALL SELECT * FROM last_20s)) d;
SELECT region, count, sum FROM last_20s ORDER BY region;
SELECT * FROM last_20s_all;
SELECT late_events FROM ssp.views WHERE view = 'last_20s'::regclass;
CREATE VIEW sl_rows_expected AS SELECT region, amount FROM sl WHERE amount > 5 AND ts > now() - interval '20 seconds';
SELECT count(*) AS differences FROM
  ((SELECT * FROM last_20s_rows EXCEPT ALL SELECT * FROM sl_rows_expected)
   UNION ALL (SELECT * FROM sl_rows_expected EXCEPT ALL SELECT * FROM last_20s_rows)) d;
SELECT count(*) AS rows, sum(amount) FROM last_20s_rows;
SELECT late_events FROM ssp.views WHERE view = 'last_20s_rows'::regclass;
SELECT (SELECT count(*) FROM last_20s_kafka) AS rows, (SELECT sum(amount) FROM last_20s_kafka) AS sum,
       (SELECT n FROM last_20s_kafka_n) AS n;
-- ten seconds later the older events have left the range
SELECT pg_sleep(10);
SELECT count(*) AS differences FROM
  ((SELECT * FROM last_20s EXCEPT ALL SELECT * FROM sl_expected)
   UNION ALL (SELECT * FROM sl_expected EXCEPT ALL SELECT * FROM last_20s)) d;
SELECT region, count, sum FROM last_20s ORDER BY region;
SELECT * FROM last_20s_all;
SELECT count(*) AS differences FROM
  ((SELECT * FROM last_20s_rows EXCEPT ALL SELECT * FROM sl_rows_expected)
   UNION ALL (SELECT * FROM sl_rows_expected EXCEPT ALL SELECT * FROM last_20s_rows)) d;
SELECT count(*) AS rows, sum(amount) FROM last_20s_rows;
SELECT (SELECT count(*) FROM last_20s_kafka) AS rows, (SELECT sum(amount) FROM last_20s_kafka) AS sum,
       (SELECT n FROM last_20s_kafka_n) AS n;
DROP VIEW sl_expected, sl_rows_expected;

-- an event at 'infinity' is a dead letter of a view on event time (it would
-- close every window for good, and is in endless hopping windows), and a
-- value like another for a view that does not use event time
\set topic win_inf_ :run
CREATE FOREIGN TABLE ev_inf (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW inf_hop WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '2 minutes', '1 minute') AS w, count(*), max(id) FROM ev_inf GROUP BY w;
CREATE VIEW inf_plain WITH (ssp.continuous) AS SELECT count(*), max(ts) FROM ev_inf;
INSERT INTO ev_inf VALUES (1, '2024-01-01 00:00:10+00'), (2, 'infinity'), (3, '2024-01-01 00:00:20+00'),
  (4, '-infinity'), (5, '294276-12-31 23:59:59+00'), (6, '4713-01-01 00:00:00+00 BC'), (7, NULL);
SELECT ssp.wait('inf_hop'), ssp.wait('inf_plain');
SELECT * FROM inf_hop ORDER BY w;
SELECT * FROM inf_plain;
SELECT view, "offset" IS NOT NULL AS has_offset, error FROM ssp.dead_letters
WHERE view IN ('inf_hop'::regclass, 'inf_plain'::regclass) ORDER BY error;
SELECT view, dead_letters, late_events FROM ssp.views WHERE view IN ('inf_hop'::regclass, 'inf_plain'::regclass)
ORDER BY view::text;
-- an event time a day from the start of the range (4714 BC), first on its
-- partition: the watermark less grace is no timestamp, which failed the
-- batch, again and again; it stays where it was
\set topic win_ancient_ :run
\! "$SSP_SRC/test/create_topic" "win_ancient_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE ancient (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW ancient_v WITH (ssp.continuous, ssp.grace = '1 minute') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM ancient GROUP BY w;
INSERT INTO ancient VALUES (1, '4714-11-24 00:00:10+00 BC');
SELECT ssp.wait('ancient_v');
INSERT INTO ancient VALUES (2, '2024-01-01 00:00:30+00');
SELECT ssp.wait('ancient_v');
SELECT w, n FROM ancient_v ORDER BY w;
SELECT status, last_error, late_events FROM ssp.views WHERE view = 'ancient_v'::regclass;
-- a day aligned on a zone's midnight ends at the next one: Paris's
-- 2024-10-27 lasted 25 hours (its end was taken as 24 hours after its
-- start: a click at 23:40 local was late, and emit final closed the day an
-- hour early)
\set topic win_dst_ :run
\! "$SSP_SRC/test/create_topic" "win_dst_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE dst (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW dst_days WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 day', '2000-01-01 00:00 Europe/Paris') AS day, count(*) AS n FROM dst GROUP BY day;
CREATE VIEW dst_final WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(ts, '1 day', '2000-01-01 00:00 Europe/Paris') AS day, count(*) AS n FROM dst GROUP BY day;
INSERT INTO dst VALUES (1, '2024-10-27 22:10+00');
SELECT ssp.wait('dst_days'), ssp.wait('dst_final');
SELECT * FROM dst_final;
INSERT INTO dst VALUES (2, '2024-10-27 22:40+00');
SELECT ssp.wait('dst_days'), ssp.wait('dst_final');
SELECT * FROM dst_final;
INSERT INTO dst VALUES (3, '2024-10-27 23:00+00');
SELECT ssp.wait('dst_days'), ssp.wait('dst_final');
SELECT day AT TIME ZONE 'Europe/Paris' AS paris_day, n FROM dst_days ORDER BY day;
SELECT day AT TIME ZONE 'Europe/Paris' AS paris_day, n FROM dst_final ORDER BY day;
SELECT view, late_events FROM ssp.views WHERE view IN ('dst_days'::regclass, 'dst_final'::regclass) ORDER BY 1;
DROP SERVER kafka CASCADE;
