-- Windows and time: origins in a time zone whatever its name, windows that
-- tile the changes of its clocks, origins a continuous view keeps as its
-- creator read them, window sizes as lengths of time, ssp.hop_windows as
-- a view's windows, and the two ends of the timestamp range.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
SET timezone = 'UTC';
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');

-- a zone named without a slash aligns windows on its clocks too (GB, CET
-- and EST5EDT were fixed offsets: CET's summer midnight was 23:00 UTC); an
-- abbreviation that names no zone, or a numeric offset, is a fixed offset,
-- as timestamptz_in reads it
SELECT z, ssp.tumble('2024-07-01 23:30+00', '1 day', '2000-01-01 00:00 ' || z) AS day
FROM unnest(ARRAY['Europe/London', 'GB', 'Europe/Paris', 'CET', 'cet', 'EST5EDT', 'UTC',
                  'CEST', '+02']) z;

-- around both changes of Paris's clocks each window starts at or before
-- its events, and ends where the next starts: an hour at 02:00 twice in
-- October (an event at the first 02:30, 00:30 UTC, had a window that began
-- at the second 02:00, 01:00 UTC), the day of 25 hours; in March 03:00
-- follows 01:59, and the day lasts 23 hours
\set paris '2000-01-01 00:00 Europe/Paris'
SELECT t, ssp.tumble(t, '1 hour', :'paris') AS hour, ssp.tumble_end(t, '1 hour', :'paris') AS hour_end,
       ssp.tumble(t, '2 hours', :'paris') AS two_hours, ssp.tumble_end(t, '2 hours', :'paris') AS two_hours_end,
       ssp.tumble(t, '1 day', :'paris') AS day, ssp.tumble_end(t, '1 day', :'paris') AS day_end
FROM generate_series('2024-10-26 23:30+00'::timestamptz, '2024-10-27 02:00+00', '30 minutes') t;
SELECT t, ssp.tumble(t, '1 hour', :'paris') AS hour, ssp.tumble_end(t, '1 hour', :'paris') AS hour_end,
       ssp.tumble(t, '2 hours', :'paris') AS two_hours, ssp.tumble_end(t, '2 hours', :'paris') AS two_hours_end,
       ssp.tumble(t, '1 day', :'paris') AS day, ssp.tumble_end(t, '1 day', :'paris') AS day_end
FROM generate_series('2024-03-30 23:30+00'::timestamptz, '2024-03-31 01:30+00', '30 minutes') t;
-- a year of instants every 15 minutes in zones whose clocks move by an hour,
-- by half an hour (Lord Howe), or skip a day (Apia, 2011-12-30): each is in
-- its window, which ends where the next starts
SELECT z, s, count(*) AS instants,
       count(*) FILTER (WHERE NOT (w.start <= t AND t < w.stop)) AS outside,
       count(*) FILTER (WHERE ssp.tumble(w.stop, s, o) <> w.stop) AS not_next
FROM unnest(ARRAY['Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'Pacific/Apia']) z,
     unnest(ARRAY['30 minutes', '1 hour', '2 hours', '1 day']::interval[]) s,
     LATERAL (SELECT '2000-01-01 00:00 ' || z AS o) o,
     generate_series('2011-01-01 00:00+00'::timestamptz, '2012-01-01 00:00+00', '15 minutes') t,
     LATERAL (SELECT ssp.tumble(t, s, o) AS start, ssp.tumble_end(t, s, o) AS stop) w
GROUP BY z, s ORDER BY z, s;

-- ssp.tumble_end: the end of ssp.tumble's window
SELECT ssp.tumble_end('2024-05-01 12:34:56+00', '15 minutes') AS quarter,
       ssp.tumble_end('2024-05-01 12:34:56+00', '1 hour', '2000-01-01 00:30+00') AS hour,
       ssp.tumble_end(NULL, '1 hour') IS NULL AS no_time;
-- a size is its length, as date_bin() takes it: '1 day -23 hours' is an
-- hour (it was refused as not positive)
SELECT ssp.tumble('2024-05-01 12:34:56+00', '1 day -23 hours') AS hour;
SELECT ssp.tumble('2024-05-01 12:34:56+00', '23 hours -1 day');

-- the ends of the timestamp range: a window that would end after the last
-- timestamp, or start before the first, is no window
SELECT ssp.tumble('294276-12-31 23:58:30+00', '1 minute') AS last_minute_but_one;
SELECT ssp.tumble('294276-12-31 23:59:30+00', '1 minute');
SELECT ssp.tumble_end('294276-12-31 23:59:30+00', '1 minute');
SELECT ssp.tumble('4714-11-24 00:10:00+00 BC', '1 hour', '2000-01-01 00:30+00');

-- ssp.hop_windows: lengths of time, as a view's windows are, whatever the
-- session's TimeZone: three days at 00:00 UTC (it listed two, at 01:00
-- UTC), and a day for an event of the night the clocks moved (none)
SET timezone = 'Europe/Paris';
SELECT w AT TIME ZONE 'UTC' AS utc FROM ssp.hop_windows('2024-04-01 12:00+00', '3 days', '1 day') w;
SELECT count(*) FROM ssp.hop_windows('2024-03-31 23:30+00', '1 day', '1 day');
SET timezone = 'UTC';
-- and a view's limits: no months (a month was 30 days); at most 100,000
-- windows an event (past 2^31 - 1 it failed with "integer out of range",
-- and below, a series of windows could fill the disk); no slide longer
-- than the size
SET statement_timeout = '60s';
SELECT count(*) FROM ssp.hop_windows('2024-03-31 12:00+00', '1 month', '1 day');
SELECT count(*) FROM ssp.hop_windows('2024-01-01 00:00+00', '2147483648 microseconds', '1 microsecond');
SELECT count(*) FROM ssp.hop_windows('2024-01-01 00:00+00', '100001 s', '1 s');
SELECT count(*) FROM ssp.hop_windows('2024-01-01 00:00+00', '100000 s', '1 s');
SELECT count(*) FROM ssp.hop_windows('2024-01-01 00:00+00', '1 minute', '1 hour');
RESET statement_timeout;
-- an origin in a zone: the last window is ssp.tumble's, those before it
-- whole slides (of absolute time) before
SELECT w FROM ssp.hop_windows('2024-10-27 01:30+00', '3 hours', '1 hour', :'paris') w;
SELECT w FROM ssp.hop_windows('294276-12-31 23:59:30+00', '2 minutes', '1 minute') w;

-- windows on a zone's clocks in views: CET's midnight, in summer time (a
-- fixed offset, it was an hour late), and Paris's hours, emit final, over
-- the night its clocks went back: the hour of 02:00 twice (both events
-- were in the second, which began after the first of them)
\set topic wt_clocks_ :run
\! "$SSP_SRC/test/create_topic" "wt_clocks_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE clocks (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW cet_days WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 day', '01/01/2000 00:00 cet') AS day, count(*) AS n FROM clocks GROUP BY day;
CREATE VIEW paris_hours WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(ts, '1 hour', '2000-01-01 00:00 Europe/Paris') AS hour, count(*) AS n FROM clocks GROUP BY hour;
INSERT INTO clocks VALUES (1, '2024-10-27 00:30+00'), (2, '2024-10-27 01:30+00'), (3, '2024-10-27 03:10+00');
SELECT ssp.wait('cet_days'), ssp.wait('paris_hours');
SELECT * FROM cet_days ORDER BY day;
SELECT hour, hour AT TIME ZONE 'Europe/Paris' AS paris, n FROM paris_hours ORDER BY hour;

-- events of 1990 have a watermark: it stayed null for any time before
-- 1999-12-24, whose distance from the last timestamp overflowed (nothing
-- closed, nothing was late, no retention)
\set topic wt_past_ :run
\! "$SSP_SRC/test/create_topic" "wt_past_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE past (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW past_final WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM past GROUP BY w;
INSERT INTO past VALUES (1, '1990-01-01 00:00:10+00'), (2, '1990-01-01 00:01:10+00');
SELECT ssp.wait('past_final');
INSERT INTO past VALUES (3, '1990-01-01 00:00:50+00');
SELECT ssp.wait('past_final');
SELECT * FROM past_final ORDER BY w;
SELECT watermark, late_events FROM ssp.views WHERE view = 'past_final'::regclass;

-- an event in the year 290,000 moves the watermark there: later events of
-- 2024 are late, as in Kafka Streams (the watermark stayed in 2024 for
-- good: its distance from 4714 BC overflowed, and no window closed again);
-- an event whose window would end after the last timestamp is a dead
-- letter that says so
\set topic wt_future_ :run
\! "$SSP_SRC/test/create_topic" "wt_future_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE future (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW future_final WITH (ssp.continuous, ssp.emit = 'final') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM future GROUP BY w;
CREATE VIEW future_hop WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '2 minutes', '1 minute') AS w, count(*) AS n FROM future GROUP BY w;
INSERT INTO future VALUES (1, '2024-01-01 00:00:10+00'), (2, '2024-01-01 00:01:10+00');
SELECT ssp.wait('future_final'), ssp.wait('future_hop');
INSERT INTO future VALUES (3, '290000-01-01 00:00:10+00');
SELECT ssp.wait('future_final'), ssp.wait('future_hop');
SELECT * FROM future_final ORDER BY w;
SELECT view, watermark FROM ssp.views WHERE view IN ('future_final'::regclass, 'future_hop'::regclass) ORDER BY 1;
INSERT INTO future VALUES (4, '2024-01-01 00:02:10+00'), (5, '294276-12-31 23:59:30+00'),
  (6, '294276-12-31 23:58:10+00');
SELECT ssp.wait('future_final'), ssp.wait('future_hop');
SELECT * FROM future_final ORDER BY w;
SELECT * FROM future_hop ORDER BY w;
SELECT view, status, watermark, late_events, dead_letters, last_error FROM ssp.views
WHERE view IN ('future_final'::regclass, 'future_hop'::regclass) ORDER BY 1;
SELECT view, "offset", error FROM ssp.dead_letters
WHERE view IN ('future_final'::regclass, 'future_hop'::regclass) ORDER BY 1, 2;

-- a watermark a few seconds after the first timestamp (4714 BC): a view
-- took ssp.retention from it, which failed the batch for good, and one
-- with count(DISTINCT) a window's size, which failed every message
\set topic wt_ancient_ :run
\! "$SSP_SRC/test/create_topic" "wt_ancient_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE ancient (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW ancient_kept WITH (ssp.continuous, ssp.retention = '1 day') AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM ancient GROUP BY w;
CREATE VIEW ancient_ids WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 minute') AS w, count(DISTINCT id) AS ids FROM ancient GROUP BY w;
INSERT INTO ancient VALUES (1, '4714-11-24 00:00:10+00 BC');
SELECT ssp.wait('ancient_kept', '10 s'), ssp.wait('ancient_ids', '10 s');
SELECT view, watermark, last_error FROM ssp.views
WHERE view IN ('ancient_kept'::regclass, 'ancient_ids'::regclass) ORDER BY 1;
INSERT INTO ancient VALUES (2, '4714-11-24 00:00:20+00 BC'), (3, '2024-01-01 00:00:30+00');
SELECT ssp.wait('ancient_kept', '10 s'), ssp.wait('ancient_ids', '10 s');
INSERT INTO ancient VALUES (4, '2024-01-03 00:00:30+00');
SELECT ssp.wait('ancient_kept', '10 s'), ssp.wait('ancient_ids', '10 s');
SELECT * FROM ancient_kept ORDER BY w;
SELECT * FROM ancient_ids ORDER BY w;
SELECT view, status, watermark, dead_letters, last_error FROM ssp.views
WHERE view IN ('ancient_kept'::regclass, 'ancient_ids'::regclass) ORDER BY 1;
-- an origin without a zone is read at CREATE VIEW, in the creator's
-- TimeZone, and kept with its offset: the views' workers, in New York's
-- (the database's), keep Kolkata's midnight (they read the origin in their
-- own TimeZone: ALTER DATABASE ... SET timezone moved the windows); a
-- zone, in its own spelling, follows the local time in ISO form; an origin
-- that cannot be read fails CREATE VIEW, not each batch
SELECT current_database() AS db \gset
ALTER DATABASE :"db" SET timezone = 'America/New_York';
SET timezone = 'Asia/Kolkata';
\set topic wt_origin_ :run
\! "$SSP_SRC/test/create_topic" "wt_origin_$SSP_RUN_ID" 1 >/dev/null
CREATE FOREIGN TABLE kolkata (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW kolkata_days WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 day', '2000-01-01 00:00') AS day, count(*) AS n FROM kolkata GROUP BY day;
CREATE VIEW kolkata_hops WITH (ssp.continuous) AS
  SELECT ssp.hop(ts, '2 days', '1 day', '01/02/2000 00:00') AS day, count(*) AS n FROM kolkata GROUP BY day;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 day', 'at noon') AS d, count(*) FROM kolkata GROUP BY d;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT ssp.tumble(ts, '1 day', 'infinity') AS d, count(*) FROM kolkata GROUP BY d;
SET timezone = 'UTC';
SELECT pg_get_viewdef('kolkata_days_query') AS days, pg_get_viewdef('kolkata_hops_query') AS hops,
       pg_get_viewdef('cet_days_query') AS cet;
INSERT INTO kolkata VALUES (1, '2024-10-27 00:30+00'), (2, '2024-10-27 01:30+00'), (3, '2024-10-27 03:10+00');
SELECT ssp.wait('kolkata_days'), ssp.wait('kolkata_hops');
SELECT * FROM kolkata_days ORDER BY day;
SELECT * FROM kolkata_hops ORDER BY day;
ALTER DATABASE :"db" RESET timezone;

-- options refused at CREATE VIEW, not by each batch for good: ssp.step in
-- months; ssp.idle_timeout past what the worker's timing takes (a longer one
-- was taken as 24 days 20:31:23.647)
\set topic wt_opts_ :run
CREATE FOREIGN TABLE opts (id int, ts timestamptz) SERVER kafka OPTIONS (topic :'topic', timestamp 'ts');
CREATE VIEW r WITH (ssp.continuous, ssp.sliding = '1 year', ssp.step = '1 month') AS SELECT count(*) FROM opts;
CREATE VIEW r WITH (ssp.continuous, ssp.idle_timeout = '24 days 20:31:23.648') AS
  SELECT ssp.tumble(ts, '1 day') AS d, count(*) FROM opts GROUP BY d;
CREATE VIEW r WITH (ssp.continuous, ssp.idle_timeout = '1 month') AS
  SELECT ssp.tumble(ts, '1 day') AS d, count(*) FROM opts GROUP BY d;
CREATE VIEW longest_idle WITH (ssp.continuous, ssp.idle_timeout = '24 days 20:31:23.647') AS
  SELECT ssp.tumble(ts, '1 day') AS d, count(*) FROM opts GROUP BY d;
-- a sliding window of five years steps by a sixtieth of it, 30 days (it
-- stepped by '1 mon', which no window may be: each batch failed)
CREATE VIEW five_years WITH (ssp.continuous, ssp.sliding = '5 years') AS SELECT count(*) AS n FROM opts;
INSERT INTO opts VALUES (1, now() - interval '1 day'), (2, now() - interval '400 days');
SELECT ssp.wait('five_years', '20 s');
SELECT n FROM five_years;
SELECT status, last_error FROM ssp.views WHERE view = 'five_years'::regclass;

DROP SERVER kafka CASCADE;
