-- ssp 0.1 to 0.2.  CREATE EXTENSION ssp runs ssp--0.1.sql and then this
-- (and the updates after it): a fresh install is an updated one.

\echo Use "ALTER EXTENSION ssp UPDATE" to load this file. \quit

-- The library the server has loaded must be this script's version or a
-- later one: after new files are installed, Postgres must be restarted
-- first.  (Each update script checks its own version.)
DO $$
BEGIN
    IF pg_catalog.string_to_array(coalesce(pg_catalog.current_setting('ssp.library_version', true), '0.1'), '.')::int[]
       OPERATOR(pg_catalog.<) '{0,2}' THEN
        RAISE EXCEPTION 'the ssp library loaded by this server is older than version 0.2'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('The server has loaded version %s.',
                                             coalesce(pg_catalog.current_setting('ssp.library_version', true), '0.1')),
                  HINT = 'Restart PostgreSQL after installing the new version of ssp.';
    END IF;
END
$$;

-- pg_upgrade refuses a cluster whose tables have regprocedure columns
-- (function oids are not kept); the outbox's trigger function of a view
-- with ssp.output_topic is found through its trigger instead.
ALTER TABLE continuous_views DROP COLUMN changes;

-- The outbox's trigger function of a view with ssp.output_topic was an
-- INTERNAL part of the view, and pg_dump (so pg_upgrade too) leaves such
-- functions out: a restored view's triggers had no function.  It depends
-- on the view as AUTO now, dropped with it all the same.
UPDATE pg_catalog.pg_depend d SET deptype = 'a'
FROM pg_catalog.pg_trigger t
WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = t.tgfoid
  AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype = 'i'
  AND t.tgname = 'ssp_changes_insert'
  AND t.tgrelid IN (SELECT mrel FROM continuous_views);
