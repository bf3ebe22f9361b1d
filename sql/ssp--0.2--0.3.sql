-- ssp 0.2 to 0.3: one reader per stream.  The views of a stream share one
-- consumer and one decoding of each message (doc/internals.md, One reader
-- per stream); ssp.readers shows the readers, ssp.views which views share one.

\echo Use "ALTER EXTENSION ssp UPDATE" to load this file. \quit

DO $$
BEGIN
    IF pg_catalog.string_to_array(coalesce(pg_catalog.current_setting('ssp.library_version', true), '0.1'), '.')::int[]
       OPERATOR(pg_catalog.<) '{0,3}' THEN
        RAISE EXCEPTION 'the ssp library loaded by this server is older than version 0.3'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('The server has loaded version %s.',
                                             coalesce(pg_catalog.current_setting('ssp.library_version', true), '0.1')),
                  HINT = 'Restart PostgreSQL after installing the new version of ssp.';
    END IF;
END
$$;

-- CREATE OR REPLACE VIEW ... WITH (ssp.continuous): the new definition is
-- a continuous view of its own until it has caught up, then takes the
-- place of the one it replaces.
ALTER TABLE continuous_views ADD COLUMN replaces regclass;

-- The watermark the view's last batch began with: a left join of two
-- streams emits a left row without a partner in the batch after the
-- watermark passed its bound, so its windows close by this one.
ALTER TABLE continuous_views ADD COLUMN batch_watermark timestamptz;

-- Shards (doc/operating.md, Several servers): a view over shards
-- (ssp.shards) lists the postgres_fdw servers of its shards, and runs no
-- worker (parallelism 0); shard_status is its table of the shards'
-- ssp.shard_views, shard_view the view's name there.
ALTER TABLE continuous_views ADD COLUMN shards text[];
ALTER TABLE continuous_views ADD COLUMN shard_status regclass;
ALTER TABLE continuous_views ADD COLUMN shard_view text;

-- The readers of this database, from shared memory: one row per reader
-- (a stream, or the two streams of a join, for one owner, part and batch
-- settings).  What a role may not see of a reader of another owner's
-- views is null, unless it is a member of pg_read_all_stats.
CREATE FUNCTION reader_status(
    OUT pid int, OUT streams regclass[], OUT part int, OUT parallelism int,
    OUT views int, OUT partitions int, OUT "position" bigint, OUT lag bigint,
    OUT rate double precision, OUT memory bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ssp_reader_status'
LANGUAGE C STRICT VOLATILE;

-- rate: messages read a second, lately; memory: the resident memory of
-- the reader's process, in bytes (its prefetch buffer is ssp.reader_buffer).
CREATE VIEW readers WITH (security_invoker) AS
SELECT r.pid, r.streams, r.part, r.parallelism, r.views, r.partitions,
       r."position", r.lag, pg_catalog.round(r.rate)::bigint AS rate, r.memory
FROM reader_status() r;
GRANT SELECT ON readers TO PUBLIC;

-- attached: the view is applied by its streams' reader together with
-- other views (false: by a worker of its own, while it catches up, or
-- because no other view reads its streams the same way).  A worker that
-- waits for a lock as it starts (on the view itself, held by a session)
-- says so, as one that waits for its table's does.
CREATE OR REPLACE VIEW views WITH (security_invoker) AS
SELECT c.view,
       CASE WHEN c.shards IS NOT NULL THEN 'over shards'
            WHEN c.paused THEN 'paused'
            WHEN w.status IN ('starting', 'running', 'catching up') AND w.blocked THEN 'waiting for a lock'
            WHEN w.status IS NOT NULL THEN w.status
            ELSE 'starting' END AS status,
       w.pid AS worker_pid,
       w.lag,
       pg_catalog.round(w.rate)::bigint AS rate,
       pg_catalog.round(100 * c.processed::numeric
                        / NULLIF(c.processed + w.lag, 0), 1) AS progress,
       CASE WHEN w.lag = 0 THEN interval '0'
            WHEN w.rate >= 1 THEN pg_catalog.make_interval(secs => pg_catalog.ceil(w.lag / w.rate))
       END AS time_left,
       c.processed,
       c.late_events,
       c.dead_letters,
       c.watermark,
       w.last_error,
       c.last_commit,
       c.streams,
       c.topics,
       c.mrel,
       coalesce(w.attached, false) AS attached
FROM continuous_views c
LEFT JOIN (
  SELECT s.view,
         pg_catalog.min(s.pid) FILTER (WHERE s.part = 0) AS pid,
         CASE WHEN pg_catalog.bool_or(s.status = 'failed') THEN 'failed'
              WHEN pg_catalog.bool_or(s.status = 'waiting for broker') THEN 'waiting for broker'
              WHEN pg_catalog.bool_or(s.status = 'starting') THEN 'starting'
              WHEN pg_catalog.bool_or(s.status = 'catching up') THEN 'catching up'
              ELSE pg_catalog.min(s.status) END AS status,
         pg_catalog.sum(s.lag)::bigint AS lag,
         pg_catalog.sum(s.rate) AS rate,
         pg_catalog.min(s.last_error) AS last_error,
         pg_catalog.bool_or(s.pid IS NOT NULL AND
                            pg_catalog.cardinality(pg_catalog.pg_blocking_pids(s.pid)) > 0) AS blocked,
         pg_catalog.bool_and(s.pid IN (SELECT r.pid FROM reader_status() r WHERE r.views > 1)) AS attached
  FROM worker_status() s
  GROUP BY s.view) w ON w.view = c.view::oid;

-- Hopping windows of any size, not only multiples of their slide (ksqlDB's
-- SIZE 5 MILLISECONDS, ADVANCE BY 2 MILLISECONDS): windows start every
-- slide, aligned as ssp.tumble aligns them, and each lasts size; the first
-- that may hold ts starts ceil(size / slide) - 1 slides before ts's own.
-- Lengths of time, as a continuous view's ssp.hop() takes them (a day is
-- 24 hours, whatever the session's TimeZone), with its limits (at most
-- 100,000 windows an event, no months).  Neither infinity is in a window
-- (a stream refuses such an event time): the series would never end.
CREATE OR REPLACE FUNCTION hop_windows(ts timestamptz, size interval, slide interval, origin text DEFAULT NULL)
RETURNS SETOF timestamptz
AS 'MODULE_PATHNAME', 'ssp_hop_windows'
LANGUAGE C STABLE PARALLEL SAFE ROWS 60;

-- The end of ssp.tumble's window that holds ts: the start of the next
-- (aligned on a zone's local time, a day lasts 23 or 25 hours when its
-- clocks change).
CREATE FUNCTION tumble_end(ts timestamptz, size interval, origin text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'ssp_tumble_end'
LANGUAGE C STABLE PARALLEL SAFE;

-- What a view over shards reads of each shard's server, through
-- postgres_fdw: where each view's table is, the shard it is
-- (ssp.shard = 'k/N'; null: not sharded), and its watermark.
CREATE VIEW shard_views WITH (security_invoker) AS
SELECT pg_catalog.split_part(pg_catalog.substr(s.o, 7), '/', 1)::int AS shard,
       pg_catalog.split_part(pg_catalog.substr(s.o, 7), '/', 2)::int AS shards,
       vn.nspname::text AS view_schema,
       v.relname::text AS view_name,
       mn.nspname::text AS mrel_schema,
       m.relname::text AS mrel_name,
       c.watermark
FROM continuous_views c
JOIN pg_catalog.pg_class v ON v.oid = c.view
JOIN pg_catalog.pg_namespace vn ON vn.oid = v.relnamespace
JOIN pg_catalog.pg_class m ON m.oid = c.mrel
JOIN pg_catalog.pg_namespace mn ON mn.oid = m.relnamespace
LEFT JOIN LATERAL (SELECT o FROM pg_catalog.unnest(c.options) o
                   WHERE o OPERATOR(pg_catalog.~~) 'shard=%') s ON true;
GRANT SELECT ON shard_views TO PUBLIC;

-- Moving partitions between shards (doc/operating.md, Moving partitions):
-- every shard paused, ssp.handover on each gives its partitions' offsets
-- and marks it handed over (it cannot be resumed before ssp.reshard);
-- ssp.reshard on each server of the new layout gives it its new shard,
-- each partition it takes over starting where its old owner stopped.
ALTER TABLE continuous_views ADD COLUMN resharding boolean NOT NULL DEFAULT false;

CREATE FUNCTION handover(view regclass) RETURNS jsonb
AS 'MODULE_PATHNAME', 'ssp_handover' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION reshard(view regclass, shard text, handovers jsonb) RETURNS void
AS 'MODULE_PATHNAME', 'ssp_reshard' LANGUAGE C STRICT VOLATILE;

-- SQL that ssp runs finds only pg_catalog's operators and functions, so
-- that whoever may create objects in a schema on the search path cannot
-- have one of theirs run instead, as the role that calls these functions
-- (an exact "=" for oid and regclass would be taken over pg_catalog's).
CREATE OR REPLACE FUNCTION owns(v regclass) RETURNS boolean LANGUAGE sql STABLE AS
$$ SELECT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                  WHERE c.oid OPERATOR(pg_catalog.=) v::pg_catalog.oid), 'USAGE') $$;
ALTER FUNCTION wait(regclass, interval) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pause(regclass) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION resume(regclass) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION reset(regclass, text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION handover(regclass) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION reshard(regclass, text, jsonb) SET search_path = pg_catalog, pg_temp;

-- The square root of a variance at its scale: NaN (a NaN or an infinity
-- among the values) has no scale, and came out null.
CREATE OR REPLACE FUNCTION numeric_sqrt_scaled(numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.round(pg_catalog.sqrt($1 OPERATOR(pg_catalog.*) 1.00000000000000000000),
                        COALESCE(pg_catalog.scale($1), 0));

-- Dead letters hold whole messages (and their errors quote them): shown to
-- a view's owner, and to roles that may read the view and every column of
-- its streams; not to a role that may read the view alone, which would see
-- columns the view leaves out, and rows its WHERE does.
CREATE FUNCTION may_read_messages(view regclass) RETURNS boolean
AS 'MODULE_PATHNAME', 'ssp_may_read_messages' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
ALTER POLICY read ON dead_letters USING (ssp.may_read_messages(view));

-- The tables of aggregating views made before: their unique index with a
-- window's start and other times first, and no index of the window's own,
-- as a view made now has.  A view that cannot be built keeps its indexes.
-- And views of one group (aggregates without GROUP BY) have, as a view made
-- now has, the row their query has over no rows (count 0, sum NULL) from
-- the start: those that have applied no batch yet get it now.
CREATE FUNCTION update_mrel_index(view regclass) RETURNS void
AS 'MODULE_PATHNAME', 'ssp_update_mrel_index' LANGUAGE C STRICT VOLATILE;
CREATE FUNCTION update_seed(view regclass) RETURNS void
AS 'MODULE_PATHNAME', 'ssp_update_seed' LANGUAGE C STRICT VOLATILE;
DO $$
DECLARE
    v regclass;
BEGIN
    FOR v IN SELECT c.view FROM continuous_views c ORDER BY c.view::oid LOOP
        BEGIN
            PERFORM update_mrel_index(v);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'the indexes of continuous view % are left as they were: %', v, SQLERRM;
        END;
        BEGIN
            PERFORM update_seed(v);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'continuous view % gets its row at its first batch: %', v, SQLERRM;
        END;
    END LOOP;
END
$$;
DROP FUNCTION update_mrel_index(regclass);
DROP FUNCTION update_seed(regclass);
