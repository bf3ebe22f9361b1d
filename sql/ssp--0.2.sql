-- ssp 0.2: streams over Kafka topics, continuous views

\echo Use "CREATE EXTENSION ssp" to load this file. \quit

CREATE FUNCTION kafka_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'ssp_kafka_fdw_handler'
LANGUAGE C STRICT;

CREATE FUNCTION kafka_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME', 'ssp_kafka_fdw_validator'
LANGUAGE C STRICT;

-- The library the server has loaded must be this script's version: after
-- new files are installed, Postgres must be restarted first.
DO $$
BEGIN
    IF pg_catalog.current_setting('ssp.library_version', true) IS DISTINCT FROM '0.2' THEN
        RAISE EXCEPTION 'the ssp library loaded by this server is not version 0.2'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('The server has loaded version %s.',
                                             coalesce(pg_catalog.current_setting('ssp.library_version', true), '0.1')),
                  HINT = 'Restart PostgreSQL after installing ssp 0.2.';
    END IF;
END
$$;

CREATE FOREIGN DATA WRAPPER ssp_kafka
  HANDLER kafka_fdw_handler
  VALIDATOR kafka_fdw_validator;

COMMENT ON FOREIGN DATA WRAPPER ssp_kafka IS 'Kafka topics as streams';

-- Continuous views ---------------------------------------------------------

-- One row per continuous view: its parts, options and persistent counters.
-- The worker updates processed and dead_letters in the transaction that
-- applies a batch, so they count exactly once too.
CREATE TABLE continuous_views (
    view regclass PRIMARY KEY,
    mrel regclass NOT NULL,
    streams regclass[] NOT NULL,    -- the streams it reads: one, or two joined
    topics text[] NOT NULL,         -- their topics
    buffers regclass[],             -- two joined streams: each one's buffered rows
    apply_sql text NOT NULL,
    columns smallint[],             -- stream columns the view reads (NULL: all)
    start text NOT NULL,
    commit_interval_ms int NOT NULL,
    batch_size int NOT NULL,
    parallelism int NOT NULL DEFAULT 1, -- workers, each on a share of the partitions
    on_error text NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    generation int NOT NULL DEFAULT 1,
    processed bigint NOT NULL DEFAULT 0,
    dead_letters bigint NOT NULL DEFAULT 0,
    last_commit timestamptz,
    -- windowed views: a GROUP BY key is ssp.tumble() over the event time
    late_sql text,                  -- counts a batch's late events
    retention_sql text,             -- deletes windows past ssp.retention
    grace interval NOT NULL DEFAULT '0',
    idle_timeout interval NOT NULL DEFAULT '1 minute',
    emit text NOT NULL DEFAULT 'changes',
    late_events bigint NOT NULL DEFAULT 0,
    watermark timestamptz,
    -- aggregating views: what a rollup of the view reads (WITH (ssp.rollup))
    rollup_from text,               -- FROM item m: the rows the view shows, with their states
    rollup_states text,             -- ", merge(m.state)::type AS state" per state column
    rollup_columns text[],          -- each output column, over m
    rollup_combinable boolean[],    -- each: made of aggregates only
    -- ssp.output_topic: the view's changes, published from an outbox
    output_topic text,
    outbox regclass,                -- the changes not yet published
    outbox_final_sql text,          -- emit final: the windows a batch closes go out
    published_seq bigint NOT NULL DEFAULT 0, -- the last change published
    -- what the SQL above is built from again when a worker loads the view,
    -- so that it names every object as it is named now
    query regclass,                 -- the view NAME_query: the query, kept by oid
    names text[] NOT NULL,          -- the output column names
    options text[] NOT NULL         -- "name=value": the ssp. options of CREATE VIEW
);

-- What each view has consumed: the truth, written with the view's rows.
CREATE TABLE offsets (
    view regclass NOT NULL,
    topic text NOT NULL,
    partition int NOT NULL,
    next_offset bigint NOT NULL,
    max_event_time timestamptz,     -- the latest event time seen here
    last_event_at timestamptz,      -- when its last message was applied
    PRIMARY KEY (view, topic, partition)
);

-- Messages that could not be used, and why.
CREATE TABLE dead_letters (
    view regclass NOT NULL,
    topic text NOT NULL,
    partition int NOT NULL,
    "offset" bigint NOT NULL,
    key bytea,
    payload bytea,
    error text NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON dead_letters (view, partition, "offset");

SELECT pg_catalog.pg_extension_config_dump('continuous_views', '');
SELECT pg_catalog.pg_extension_config_dump('offsets', '');
SELECT pg_catalog.pg_extension_config_dump('dead_letters', '');

-- A view's owner reads and writes its rows; whoever may read a view may
-- read its offsets and dead letters (ssp.wait needs them).
ALTER TABLE continuous_views ENABLE ROW LEVEL SECURITY;
ALTER TABLE offsets ENABLE ROW LEVEL SECURITY;
ALTER TABLE dead_letters ENABLE ROW LEVEL SECURITY;
CREATE FUNCTION owns(v regclass) RETURNS boolean LANGUAGE sql STABLE AS
$$ SELECT pg_catalog.pg_has_role((SELECT relowner FROM pg_catalog.pg_class WHERE oid = v), 'USAGE') $$;
CREATE POLICY read ON continuous_views FOR SELECT
  USING (pg_catalog.has_table_privilege(view, 'SELECT') OR pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'));
CREATE POLICY write ON continuous_views USING (ssp.owns(view));
CREATE POLICY read ON offsets FOR SELECT USING (pg_catalog.has_table_privilege(view, 'SELECT'));
CREATE POLICY write ON offsets USING (ssp.owns(view));
CREATE POLICY read ON dead_letters FOR SELECT USING (pg_catalog.has_table_privilege(view, 'SELECT'));
CREATE POLICY write ON dead_letters USING (ssp.owns(view));
GRANT SELECT, INSERT, UPDATE, DELETE ON continuous_views, offsets, dead_letters TO PUBLIC;
GRANT USAGE ON SCHEMA ssp TO PUBLIC;

-- Windows: the start of the window of the given size that holds ts,
-- aligned on origin (default 2000-01-01 00:00 UTC; a time zone name at its
-- end aligns on that zone's local time).
CREATE FUNCTION tumble(ts timestamptz, size interval, origin text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'ssp_tumble'
LANGUAGE C STABLE PARALLEL SAFE;

-- Hopping windows: as a GROUP BY key of a continuous view, each event goes
-- into every window of the given size, every slide, that holds it.
CREATE FUNCTION hop(ts timestamptz, size interval, slide interval, origin text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'ssp_hop'
LANGUAGE C STABLE PARALLEL SAFE;

-- Session windows: as a GROUP BY key of a continuous view, the start of a
-- burst of events of the group with no silence longer than gap.
CREATE FUNCTION session(ts timestamptz, gap interval)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'ssp_session'
LANGUAGE C STABLE PARALLEL SAFE;

-- The starts of the hopping windows that hold ts (for plain queries).
CREATE FUNCTION hop_windows(ts timestamptz, size interval, slide interval, origin text DEFAULT NULL)
RETURNS SETOF timestamptz
LANGUAGE sql STABLE PARALLEL SAFE ROWS 60 AS
$$ SELECT w FROM pg_catalog.generate_series(ssp.tumble(ts, slide, origin) - size + slide,
                                            ssp.tumble(ts, slide, origin), slide) AS w
   WHERE w OPERATOR(pg_catalog.+) size OPERATOR(pg_catalog.>) ts $$;

-- Sliding windows merge the float8 transition arrays of their steps, and
-- views with parallel workers those of their workers.
CREATE AGGREGATE float8_combine_agg(double precision[]) (
    SFUNC = pg_catalog.float8_combine,
    STYPE = double precision[],
    INITCOND = '{0,0,0}',
    PARALLEL = SAFE
);
CREATE AGGREGATE float8_regr_combine_agg(double precision[]) (
    SFUNC = pg_catalog.float8_regr_combine,
    STYPE = double precision[],
    INITCOND = '{0,0,0,0,0,0}',
    PARALLEL = SAFE
);

-- Any aggregate with a combine function (src/combine.c), kept as its
-- transition state, serialised where the state type is internal.  Each
-- call names the aggregate and ends with NULLs of its input types.
-- agg_partial: the state over a batch's rows (state: NULL of its type).
CREATE FUNCTION agg_partial_trans(internal, regprocedure, anyelement, VARIADIC "any")
RETURNS internal AS 'MODULE_PATHNAME', 'ssp_agg_partial_trans' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION agg_partial_final(internal, regprocedure, anyelement, VARIADIC "any")
RETURNS anyelement AS 'MODULE_PATHNAME', 'ssp_agg_partial_final' LANGUAGE C PARALLEL SAFE;
CREATE AGGREGATE agg_partial(regprocedure, anyelement, VARIADIC "any") (
    SFUNC = agg_partial_trans,
    STYPE = internal,
    FINALFUNC = agg_partial_final,
    FINALFUNC_EXTRA
);
-- agg_combine: two stored states merged.
CREATE FUNCTION agg_combine(regprocedure, anyelement, anyelement, VARIADIC "any")
RETURNS anyelement AS 'MODULE_PATHNAME', 'ssp_agg_combine' LANGUAGE C STABLE PARALLEL SAFE;
-- agg_combine_agg: many stored states merged.
CREATE FUNCTION agg_combine_trans(internal, regprocedure, anyelement, VARIADIC "any")
RETURNS internal AS 'MODULE_PATHNAME', 'ssp_agg_combine_trans' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION agg_combine_final(internal, regprocedure, anyelement, VARIADIC "any")
RETURNS anyelement AS 'MODULE_PATHNAME', 'ssp_agg_combine_final' LANGUAGE C PARALLEL SAFE;
CREATE AGGREGATE agg_combine_agg(regprocedure, anyelement, VARIADIC "any") (
    SFUNC = agg_combine_trans,
    STYPE = internal,
    FINALFUNC = agg_combine_final,
    FINALFUNC_EXTRA
);
-- agg_finalize: the aggregate's value from a stored state (result: NULL
-- of the aggregate's type).
CREATE FUNCTION agg_finalize(regprocedure, "any", anyelement, VARIADIC "any")
RETURNS anyelement AS 'MODULE_PATHNAME', 'ssp_agg_finalize' LANGUAGE C STABLE PARALLEL SAFE;

-- Rollups: CREATE VIEW ... WITH (ssp.rollup) AS SELECT ..., ssp.combine(col)
-- FROM a continuous view GROUP BY ...  (src/rollup.c) rewrites each call
-- into the merge of the column's stored states; anywhere else it refuses.
CREATE FUNCTION combine_elsewhere(anyelement) RETURNS anyelement
LANGUAGE plpgsql AS
$$
BEGIN
    RAISE EXCEPTION 'ssp.combine() can be used only in a rollup'
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Create the rollup with CREATE VIEW name WITH (ssp.rollup) AS SELECT ..., ssp.combine(column) FROM continuous_view GROUP BY ..., and query it.';
END
$$;
CREATE FUNCTION combine_elsewhere(anyelement, anyelement) RETURNS anyelement
LANGUAGE sql AS 'SELECT ssp.combine_elsewhere($2)';
CREATE AGGREGATE combine(anyelement) (
    SFUNC = combine_elsewhere,
    STYPE = anyelement,
    FINALFUNC = combine_elsewhere
);

-- stddev over numeric: the square root rounded at the scale of the
-- variance, as Postgres's own stddev computes it.  Taken 20 digits finer
-- first: sqrt() rounds at a scale of its own, and rounding twice could
-- land one unit off in the last digit.
CREATE FUNCTION numeric_sqrt_scaled(numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.round(pg_catalog.sqrt($1 OPERATOR(pg_catalog.*) 1.00000000000000000000), pg_catalog.scale($1));

-- The live state of the workers, from shared memory: one row per worker
-- (part: which of a view's workers, with ssp.parallelism; rate: messages
-- applied a second, lately).
CREATE FUNCTION worker_status(
    OUT view oid, OUT pid int, OUT status text, OUT lag bigint,
    OUT last_error text, OUT part int, OUT rate double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ssp_worker_status'
LANGUAGE C STRICT VOLATILE;

-- Anyone may query ssp.views: as its invoker, who sees the views it may
-- read (the policy of ssp.continuous_views), all of them as a member of
-- pg_read_all_stats, as pg_stat_activity does.
-- A view with several workers shows the most telling of their states,
-- their lags and rates summed, the first worker's pid and any one's error;
-- progress is the share of the messages so far that it has applied, and
-- time_left the lag at the current rate.
CREATE VIEW views WITH (security_invoker) AS
SELECT c.view,
       CASE WHEN c.paused THEN 'paused'
            WHEN w.status IN ('running', 'catching up') AND w.blocked THEN 'waiting for a lock'
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
       c.mrel
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
                            pg_catalog.cardinality(pg_catalog.pg_blocking_pids(s.pid)) > 0) AS blocked
  FROM worker_status() s
  GROUP BY s.view) w ON w.view = c.view::oid;
GRANT SELECT ON views TO PUBLIC;

CREATE FUNCTION wait(view regclass, timeout interval DEFAULT '30 s')
RETURNS boolean
AS 'MODULE_PATHNAME', 'ssp_wait'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION pause(view regclass) RETURNS void
AS 'MODULE_PATHNAME', 'ssp_pause' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION resume(view regclass) RETURNS void
AS 'MODULE_PATHNAME', 'ssp_resume' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION reset(view regclass, start text DEFAULT 'earliest') RETURNS void
AS 'MODULE_PATHNAME', 'ssp_reset' LANGUAGE C STRICT VOLATILE;

-- Dropping a view by any path (DROP VIEW, DROP SCHEMA ... CASCADE, DROP
-- OWNED) removes its catalog rows; its worker sees them gone and stops.
CREATE FUNCTION on_sql_drop() RETURNS event_trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog AS
$$
BEGIN
    DELETE FROM ssp.continuous_views c USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.view::oid;
    DELETE FROM ssp.offsets o USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = o.view::oid;
    DELETE FROM ssp.dead_letters l USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = l.view::oid;
END
$$;
CREATE EVENT TRIGGER ssp_sql_drop ON sql_drop EXECUTE FUNCTION on_sql_drop();
