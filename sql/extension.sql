-- The extension's versions: the library and the SQL it works with, and
-- ALTER EXTENSION ssp UPDATE from the first release.
SELECT extversion = current_setting('ssp.library_version') AS same_version,
       extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'ssp') AS the_default
FROM pg_extension WHERE extname = 'ssp';
SET ssp.library_version = '9.9';
SELECT version FROM pg_available_extension_versions WHERE name = 'ssp' ORDER BY version;
SELECT * FROM pg_extension_update_paths('ssp') WHERE path IS NOT NULL ORDER BY source, target;
ALTER EXTENSION ssp UPDATE;

-- A database with the first release's SQL: the library of this version
-- waits for the update there, and refuses what would write its catalog.
\set regress_db :DBNAME
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
\set topic extension_ :run
CREATE DATABASE ssp_old;
\c ssp_old
CREATE EXTENSION ssp VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'ssp';
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE FOREIGN TABLE orders (region text, amount numeric) SERVER kafka OPTIONS (topic :'topic');
\set VERBOSITY default
CREATE VIEW revenue WITH (ssp.continuous) AS
  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
\set VERBOSITY terse
-- and what reads a view's catalog row (ssp.wait, pause, resume, reset)
SELECT ssp.pause('orders');
-- the catalog of 0.1 has the column pg_upgrade refuses
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'ssp.continuous_views'::regclass AND attname = 'changes' AND NOT attisdropped;

-- the update: the catalog is then this version's, and views can be made
ALTER EXTENSION ssp UPDATE;
SELECT extversion = current_setting('ssp.library_version') AS updated FROM pg_extension WHERE extname = 'ssp';
SELECT count(*) AS reg_columns_left FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid IN ('ssp.continuous_views'::regclass, 'ssp.offsets'::regclass, 'ssp.dead_letters'::regclass)
  AND NOT a.attisdropped AND t.typname IN ('regproc', 'regprocedure', 'regoper', 'regoperator',
                                           'regconfig', 'regdictionary', 'regnamespace', 'regcollation');
INSERT INTO orders SELECT 'r' || g % 3, g FROM generate_series(1, 300) g;
CREATE VIEW revenue WITH (ssp.continuous) AS
  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
SELECT ssp.wait('revenue', '120 s');
SELECT * FROM revenue ORDER BY region;

-- what the update made equals what a fresh install makes: every object of
-- the extension, described, before and after installing it afresh
CREATE TEMP VIEW objects AS
SELECT pg_describe_object(classid, objid, objsubid) ||
       coalesce(' ' || CASE classid
         WHEN 'pg_proc'::regclass THEN (
           SELECT CASE WHEN p.prokind = 'a'
                       THEN (SELECT a.aggtransfn || ' ' || a.aggfinalfn || ' ' || a.aggtranstype::regtype || ' ' || coalesce(a.agginitval, '')
                             FROM pg_aggregate a WHERE a.aggfnoid = p.oid)
                       ELSE pg_get_functiondef(p.oid) END
           FROM pg_proc p WHERE p.oid = objid)
         WHEN 'pg_class'::regclass THEN (
           SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END
                             || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY attnum)
           FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
           WHERE a.attrelid = objid AND a.attnum > 0 AND NOT a.attisdropped)
           || coalesce(' ' || pg_get_viewdef(objid), '')
           || coalesce(' acl ' || (SELECT relacl::text FROM pg_class WHERE oid = objid), '')
         END, '') AS o
FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'ssp')
UNION ALL SELECT 'policy ' || tablename || ' ' || policyname || ' ' || cmd || ' ' || coalesce(qual, '') || ' ' || coalesce(with_check, '')
FROM pg_policies WHERE schemaname = 'ssp'
UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'ssp'
UNION ALL SELECT 'config ' || extconfig::regclass[]::text || ' ' || extcondition::text FROM pg_extension WHERE extname = 'ssp';
SELECT count(*) > 40 AS many, md5(string_agg(o, E'\n' ORDER BY o)) AS updated FROM objects \gset
DROP EXTENSION ssp CASCADE;
CREATE EXTENSION ssp;
SELECT :'many' AS many, md5(string_agg(o, E'\n' ORDER BY o)) = :'updated' AS fresh_equals_updated FROM objects;
\c :regress_db
DROP DATABASE ssp_old WITH (FORCE);
