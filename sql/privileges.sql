-- Who may set which Kafka property (src/property.c), and what roles that
-- are not superusers see of the views in ssp.views.
\getenv brokers SSP_BROKERS
\set VERBOSITY default

CREATE SERVER priv FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE ROLE ssp_alice;
CREATE ROLE ssp_bob;
CREATE ROLE ssp_carol;
GRANT USAGE ON FOREIGN SERVER priv TO ssp_alice;
GRANT USAGE ON FOREIGN DATA WRAPPER ssp_kafka TO ssp_alice;
GRANT CREATE ON SCHEMA public TO ssp_alice;

-- try_property: set one property in a new user mapping (mapping), a new
-- server (server) or the server su (alter), as the current role; the error
-- it gives, or 'accepted' (the change is rolled back)
CREATE FUNCTION try_property(what text, name text, value text)
RETURNS TABLE (message text, detail text) LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    IF what = 'mapping' THEN
      EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER priv OPTIONS (%I %L)', name, value);
    ELSIF what = 'server' THEN
      EXECUTE format('CREATE SERVER priv_try FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers %L, %I %L)',
                     'localhost:9', name, value);
    ELSE
      EXECUTE format('ALTER SERVER su OPTIONS (ADD %I %L)', name, value);
    END IF;
    RAISE EXCEPTION 'accepted' USING DETAIL = '';
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
    RETURN NEXT;	-- the exception rolled the statement back
  END;
END $$;

-- Every property that runs a command, loads code, names a file of the
-- server, changes logging or points the server at an address, listed here
-- independently of src/property.c, with a value a superuser could use.
CREATE TABLE dangerous (name text, value text);
INSERT INTO dangerous VALUES
  ('sasl.kerberos.kinit.cmd', 'touch /tmp/ssp_pwned'),
  ('sasl.kerberos.principal', 'x; touch /tmp/ssp_pwned'),
  ('sasl.kerberos.keytab', '/etc/krb5.keytab'),
  ('sasl.kerberos.service.name', 'kafka'),
  ('sasl.kerberos.min.time.before.relogin', '1000'),
  ('plugin.library.paths', '/tmp/ssp_no_such_plugin'),
  ('ssl.engine.location', '/tmp/ssp_no_such_engine.so'),
  ('ssl.engine.id', 'dynamic'),
  ('ssl.providers', 'default'),
  ('ssl.ca.location', '/etc/shadow'),
  ('ssl.key.location', '/etc/shadow'),
  ('ssl.certificate.location', '/etc/shadow'),
  ('ssl.crl.location', '/etc/shadow'),
  ('ssl.keystore.location', '/etc/shadow'),
  ('ssl.keystore.password', 'x'),
  ('ssl.ca.certificate.stores', 'Root'),
  ('offset.store.path', '/tmp'),
  ('offset.store.method', 'file'),
  ('debug', 'all'),
  ('log_level', '7'),
  ('log.connection.close', 'true'),
  ('log.thread.name', 'true'),
  ('sasl.oauthbearer.token.endpoint.url', 'http://127.0.0.1:1/'),
  ('test.mock.num.brokers', '1'),
  ('no.such.property', 'x');
GRANT SELECT ON dangerous TO PUBLIC;

-- a role with USAGE on a server: none of them in its user mapping
SET ROLE ssp_alice;
SELECT d.name, t.message FROM dangerous d, try_property('mapping', d.name, d.value) t;
SELECT DISTINCT t.detail FROM dangerous d, try_property('mapping', d.name, d.value) t ORDER BY 1;
-- the repro of the issue, whole
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS (
    "sasl.kerberos.kinit.cmd" 'touch /tmp/ssp_pwned', "security.protocol" 'sasl_plaintext',
    "sasl.mechanisms" 'GSSAPI');
-- nor in a server it may create (USAGE on the wrapper)
SELECT d.name, t.message FROM dangerous d, try_property('server', d.name, d.value) t;
-- credentials in its own user mapping, tuning in its own server: fine
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS (
    "security.protocol" 'sasl_plaintext', "sasl.mechanisms" 'PLAIN',
    "sasl.username" 'alice', "sasl.password" 'secret',
    "ssl.ca.pem" '-----BEGIN CERTIFICATE-----', "ssl.key.password" 'x');
-- but only credentials in a user mapping
ALTER USER MAPPING FOR ssp_alice SERVER priv OPTIONS (ADD "socket.timeout.ms" '5000');
ALTER USER MAPPING FOR ssp_alice SERVER priv OPTIONS (ADD "ssl.key.location" '/etc/shadow');
DROP USER MAPPING FOR ssp_alice SERVER priv;
CREATE SERVER alices FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'localhost:9', "socket.timeout.ms" '5000', "compression.type" 'lz4');
ALTER SERVER alices OPTIONS (ADD debug 'all');
ALTER SERVER alices OPTIONS (ADD "plugin.library.paths" '/tmp/ssp_no_such_plugin');
-- a user mapping for PUBLIC on its own server: credentials only
CREATE USER MAPPING FOR PUBLIC SERVER alices OPTIONS ("fetch.max.bytes" '1000000');
CREATE USER MAPPING FOR PUBLIC SERVER alices OPTIONS ("sasl.username" 'everyone');
-- streams and views take no Kafka properties
CREATE FOREIGN TABLE alice_stream (x int) SERVER priv
  OPTIONS (topic 'priv_t', "sasl.kerberos.kinit.cmd" 'touch /tmp/ssp_pwned');
CREATE FOREIGN TABLE alice_stream (x int OPTIONS ("ssl.ca.location" '/etc/shadow')) SERVER priv
  OPTIONS (topic 'priv_t');
CREATE FOREIGN TABLE alice_stream (x int) SERVER priv OPTIONS (topic 'priv_t');
CREATE VIEW alice_view WITH (ssp.continuous, "ssp.sasl.kerberos.kinit.cmd" = 'touch /tmp/ssp_pwned') AS
  SELECT count(*) AS n FROM alice_stream;
CREATE VIEW alice_view WITH (ssp.continuous, "sasl.kerberos.kinit.cmd" = 'touch /tmp/ssp_pwned') AS
  SELECT count(*) AS n FROM alice_stream;
RESET ROLE;

-- properties that ssp sets, or that cannot be text: nobody, superusers included
CREATE SERVER su FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'localhost:9');
SELECT t.* FROM unnest(ARRAY['auto.offset.reset', 'isolation.level', 'enable.idempotence', 'acks',
                             'transactional.id', 'group.instance.id', 'delivery.report.only.error',
                             'enabled_events', 'dr_msg_cb', 'internal.termination.signal']) AS n,
              try_property('alter', n, 'x') t;

-- a superuser may set them in its server (where librdkafka accepts them
-- here) and in its own user mapping
SELECT d.name, t.message FROM dangerous d, try_property('alter', d.name, d.value) t
 WHERE d.name NOT IN ('sasl.kerberos.kinit.cmd', 'plugin.library.paths', 'no.such.property');
SELECT * FROM try_property('mapping', 'ssl.keystore.password', 'x');
-- but sasl.kerberos.kinit.cmd only with ssp.allow_kinit_cmd
SELECT * FROM try_property('mapping', 'sasl.kerberos.kinit.cmd', 'touch /tmp/ssp_pwned');
SHOW ssp.allow_kinit_cmd;
SET ssp.allow_kinit_cmd = on;
-- not in a user mapping for a role that is not a superuser, which it may alter
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS ("ssl.key.location" '/etc/ssl/private/k.pem');
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS ("socket.timeout.ms" '5000');
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS ("sasl.username" 'alice', "sasl.password" 'pw');
-- nor in a server given to such a role
CREATE SERVER handed FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'localhost:9', "ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt');
ALTER SERVER handed OWNER TO ssp_alice;
-- nor in a server of such a role, even by a superuser
ALTER SERVER alices OPTIONS (ADD "ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt');
DROP SERVER handed;

-- a CA file in a superuser's server still works: a stream over it scans
ALTER SERVER priv OPTIONS (ADD "ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt', ADD debug 'generic');
INSERT INTO alice_stream VALUES (1), (2), (3);
SELECT count(*) FROM alice_stream;

-- a superuser that is one no more: its server's file property is refused
-- when a client is built, not only at CREATE
CREATE ROLE ssp_dave SUPERUSER;
SET ROLE ssp_dave;
CREATE SERVER daves FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers', "ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt');
CREATE FOREIGN TABLE dave_stream (x int) SERVER daves OPTIONS (topic 'priv_t');
SELECT count(*) FROM dave_stream;
RESET ROLE;
ALTER ROLE ssp_dave NOSUPERUSER;
SELECT count(*) FROM dave_stream;
INSERT INTO dave_stream VALUES (4);
-- until it is one again
ALTER ROLE ssp_dave SUPERUSER;
SELECT count(*) FROM dave_stream;

-- ssp.views: a view's owner sees its row, a role granted SELECT on the view
-- too, a role with no rights none; ssp.worker_status() hides the rest
SET ROLE ssp_alice;
CREATE VIEW alice_view WITH (ssp.continuous) AS SELECT count(*) AS n FROM alice_stream;
SELECT ssp.wait('alice_view');
SELECT n FROM alice_view;
-- SELECT on the columns a view reads is enough for its worker, as for its
-- query (it failed: "cannot read the stream"); not on fewer
RESET ROLE;
CREATE FOREIGN TABLE cols_stream (x int, secret int) SERVER priv OPTIONS (topic 'priv_cols');
GRANT SELECT (x) ON cols_stream TO ssp_alice;
INSERT INTO cols_stream VALUES (1, 10), (2, 20);
SET ROLE ssp_alice;
SELECT sum(x) FROM cols_stream;
CREATE VIEW alice_cols WITH (ssp.continuous) AS SELECT count(*) AS n, sum(x) AS total FROM cols_stream;
CREATE VIEW alice_secret WITH (ssp.continuous) AS SELECT sum(secret) AS total FROM cols_stream;
SELECT ssp.wait('alice_cols');
SELECT * FROM alice_cols;
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT last_error FROM ssp.views WHERE view = 'alice_secret'::regclass) IS NOT NULL;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT last_error FROM ssp.views WHERE view = 'alice_secret'::regclass;
-- nor do her view's dead letters hold the messages, which have the
-- columns she may not read (they did: its payload, its key)
CREATE VIEW alice_dead WITH (ssp.continuous) AS SELECT sum(x / (x - x)) AS s FROM cols_stream;
SELECT ssp.wait('alice_dead');
SELECT key, payload, error FROM ssp.dead_letters WHERE view = 'alice_dead'::regclass ORDER BY partition, "offset";
DROP VIEW alice_cols, alice_secret, alice_dead;
RESET ROLE;
DROP FOREIGN TABLE cols_stream;
DO $$ BEGIN
  FOR i IN 1 .. 300 LOOP
    EXIT WHEN (SELECT count(*) FROM ssp.worker_status()) = 1;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SET ROLE ssp_alice;
SELECT view, status, lag, processed, last_error FROM ssp.views;
GRANT SELECT ON alice_view TO ssp_bob;
SET ROLE ssp_bob;
SELECT view, status, lag, processed, last_error FROM ssp.views;
SELECT view::regclass, status IS NOT NULL AS has_status, lag FROM ssp.worker_status();
SET ROLE ssp_carol;
SELECT count(*) FROM ssp.views;
SELECT view::regclass, pid IS NOT NULL AS has_pid, status, lag, last_error, rate FROM ssp.worker_status();
SELECT count(*) FROM ssp.continuous_views;
RESET ROLE;
GRANT pg_read_all_stats TO ssp_carol;
SET ROLE ssp_carol;
SELECT view, status FROM ssp.views;
SELECT view::regclass, status IS NOT NULL AS has_status, lag FROM ssp.worker_status();
RESET ROLE;

-- a user mapping changed behind the rule's back (as before it existed):
-- refused to its role's scans, ssp.wait, ssp.reset, and the view's worker
SET ROLE ssp_alice;
SELECT ssp.pause('alice_view');
RESET ROLE;
UPDATE pg_user_mapping SET umoptions = '{debug=all}'
 WHERE umuser = 'ssp_alice'::regrole AND umserver = (SELECT oid FROM pg_foreign_server WHERE srvname = 'priv');
SET ROLE ssp_alice;
SELECT count(*) FROM alice_stream;
SELECT ssp.wait('alice_view');
SELECT ssp.reset('alice_view', 'latest');
SELECT ssp.resume('alice_view');
RESET ROLE;
CREATE FUNCTION wait_for_error(v regclass) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..300 LOOP
    IF (SELECT last_error FROM ssp.views WHERE view = v) IS NOT NULL THEN
      RETURN (SELECT last_error FROM ssp.views WHERE view = v);
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN NULL;
END $$;
SELECT wait_for_error('alice_view');
DROP USER MAPPING FOR ssp_alice SERVER priv;
INSERT INTO alice_stream VALUES (4);
SELECT ssp.wait('alice_view', '90 s');
SELECT n FROM alice_view;

-- a view's owner may write its row in ssp.continuous_views, but what the
-- row names as the view's parts is taken only where it is the owner's: a
-- row naming another role's table neither hands that table over with the
-- view (ALTER VIEW ... OWNER TO gave it away, unchecked), nor is run by a
-- worker, nor made a part of the view (dropped with it) by the repair the
-- scheduler runs for a row of parallelism 0
CREATE TABLE precious (x int);
INSERT INTO precious VALUES (42);
GRANT ssp_carol TO ssp_alice;
GRANT CREATE ON SCHEMA public TO ssp_carol;
SET ROLE ssp_alice;
CREATE VIEW forged AS SELECT 1 AS x;
INSERT INTO ssp.continuous_views (view, mrel, streams, topics, apply_sql, start, commit_interval_ms,
    batch_size, on_error, names, options, paused)
  VALUES ('forged', 'precious', '{}', '{}', '', 'earliest', 1000, 1, 'skip', '{}', '{}', true);
ALTER VIEW forged OWNER TO ssp_carol;
CREATE VIEW forged_run AS SELECT 1 AS x;
INSERT INTO ssp.continuous_views (view, mrel, streams, topics, apply_sql, start, commit_interval_ms,
    batch_size, on_error, names, options)
  SELECT 'forged_run', 'precious', streams, topics, 'SELECT 1', 'earliest', 1000, 1, 'skip', '{}', '{}'
  FROM ssp.continuous_views WHERE view = 'alice_view'::regclass;
CREATE VIEW forged_repair AS SELECT 1 AS x;
INSERT INTO ssp.continuous_views (view, mrel, streams, topics, apply_sql, start, commit_interval_ms,
    batch_size, on_error, names, options, parallelism)
  VALUES ('forged_repair', 'precious', '{}', '{}', '', 'earliest', 1000, 1, 'skip', '{}', '{}', 0);
RESET ROLE;
SELECT relowner::regrole AS precious_owner FROM pg_class WHERE oid = 'precious'::regclass;
SELECT wait_for_error('forged_run');
DO $$
BEGIN
  FOR i IN 1..30 LOOP
    EXIT WHEN EXISTS (SELECT FROM pg_depend WHERE objid = 'precious'::regclass AND deptype = 'i');
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT count(*) AS precious_parts FROM pg_depend WHERE objid = 'precious'::regclass AND deptype = 'i';
SET ROLE ssp_alice;
DELETE FROM ssp.continuous_views WHERE view IN ('forged'::regclass, 'forged_run'::regclass, 'forged_repair'::regclass);
DROP VIEW forged_run, forged_repair;
RESET ROLE;
DROP VIEW forged;
SELECT * FROM precious;
DROP TABLE precious;
REVOKE ssp_carol FROM ssp_alice;
REVOKE CREATE ON SCHEMA public FROM ssp_carol;

-- ssp's processes run with search_path pg_catalog, pg_temp: an exact "="
-- for oid and regclass, put in a schema on the database's path by whoever
-- may create there (its owner), runs in none of them (the scheduler ran
-- it, as superuser, at each round)
CREATE TABLE hijack_log (pid int, who name);
GRANT INSERT ON hijack_log TO PUBLIC;
CREATE FUNCTION hijack_eq(oid, regclass) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hijack_log VALUES (pg_backend_pid(), current_user);
  RETURN $1 OPERATOR(pg_catalog.=) $2::oid;
END $$;
CREATE FUNCTION hijack_eq(regclass, regclass) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hijack_log VALUES (pg_backend_pid(), current_user);
  RETURN $1::oid OPERATOR(pg_catalog.=) $2::oid;
END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = hijack_eq);
CREATE OPERATOR public.= (LEFTARG = regclass, RIGHTARG = regclass, FUNCTION = hijack_eq);
CREATE VIEW hijack_v WITH (ssp.continuous) AS SELECT count(*) AS n FROM alice_stream;
SELECT ssp.wait('hijack_v');
SELECT pg_sleep(1);
SELECT count(*) AS calls_in_ssp_processes FROM hijack_log WHERE pid <> pg_backend_pid();
-- nor in this session, a superuser's, when it changes ssp's objects
-- (ssp's own SQL in the utility hook): each of these reads ssp's catalog
CREATE OR REPLACE VIEW hijack_v WITH (ssp.continuous) AS SELECT count(*) AS n, sum(x) AS total FROM alice_stream;
SELECT ssp.wait('hijack_v');
ALTER FOREIGN TABLE alice_stream RENAME COLUMN x TO y;
ALTER FOREIGN TABLE alice_stream OPTIONS (SET topic 'priv_other');
DO $$ BEGIN
  EXECUTE format('ALTER TABLE %s ADD COLUMN extra int',
                 (SELECT mrel FROM ssp.continuous_views WHERE view OPERATOR(pg_catalog.=) 'hijack_v'::regclass));
END $$;
ALTER VIEW hijack_v OWNER TO ssp_alice;
ALTER VIEW hijack_v RENAME TO hijack_w;
SELECT ssp.pause('hijack_w'), ssp.resume('hijack_w');
SELECT ssp.reset('hijack_w');
SELECT ssp.wait('hijack_w');
DROP VIEW hijack_w;
DROP OPERATOR public.= (oid, regclass), public.= (regclass, regclass);
SELECT count(*) AS calls_in_this_session FROM hijack_log WHERE pid = pg_backend_pid();
DROP TABLE hijack_log;
DROP FUNCTION hijack_eq(oid, regclass), hijack_eq(regclass, regclass);

-- an INSERT through a view into a partitioned table of streams uses the
-- view owner's user mapping, as into a stream: the partition a row goes to
-- has no entry of its own in the statement (it took the caller's, here
-- one whose client cannot be made)
CREATE USER MAPPING FOR ssp_bob SERVER priv OPTIONS ("security.protocol" 'sasl_plaintext', "sasl.mechanisms" 'NOSUCH');
CREATE TABLE priv_parted (x int, k int) PARTITION BY LIST (k);
CREATE FOREIGN TABLE priv_part1 PARTITION OF priv_parted FOR VALUES IN (1) SERVER priv OPTIONS (topic 'priv_t');
CREATE VIEW priv_parted_v AS SELECT * FROM priv_parted;
GRANT INSERT ON priv_parted_v TO ssp_bob;
SET ROLE ssp_bob;
INSERT INTO priv_parted_v VALUES (7, 1);
RESET ROLE;
DROP VIEW priv_parted_v;
DROP TABLE priv_parted;
DROP USER MAPPING FOR ssp_bob SERVER priv;

-- SASL mechanism GSSAPI logs in with Kerberos, with the database server's
-- own tickets and keytab: superusers only, as the properties above,
-- whether named (any case, either name) or left to librdkafka's default
-- under a SASL security.protocol
SET ROLE ssp_alice;
SELECT * FROM try_property('mapping', 'sasl.mechanisms', 'GSSAPI');
SELECT * FROM try_property('mapping', 'sasl.mechanism', 'gssapi');
SELECT * FROM try_property('server', 'sasl.mechanisms', 'GSSAPI');
SELECT * FROM try_property('mapping', 'sasl.mechanisms', 'PLAIN');
ALTER SERVER alices OPTIONS (ADD "sasl.mechanisms" 'GSSAPI');
CREATE USER MAPPING FOR ssp_alice SERVER alices OPTIONS ("sasl.mechanisms" 'PLAIN');
ALTER USER MAPPING FOR ssp_alice SERVER alices OPTIONS (SET "sasl.mechanisms" 'GSSAPI');
DROP USER MAPPING FOR ssp_alice SERVER alices;
-- a SASL protocol with no mechanism: refused when a client is built, in
-- her server (the user mapping for PUBLIC adds no mechanism) and in her
-- user mapping on a superuser's server
ALTER SERVER alices OPTIONS (ADD "security.protocol" 'SASL_PLAINTEXT');
CREATE FOREIGN TABLE alice_sasl (x int) SERVER alices OPTIONS (topic 'priv_t');
SELECT count(*) FROM alice_sasl;
ALTER SERVER alices OPTIONS (ADD "sasl.mechanism" 'Gssapi');
DROP FOREIGN TABLE alice_sasl;
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS ("security.protocol" 'sasl_ssl');
SELECT count(*) FROM alice_stream;
DROP USER MAPPING FOR ssp_alice SERVER priv;
RESET ROLE;
-- nor may a superuser put it in a user mapping its role may alter
CREATE USER MAPPING FOR ssp_alice SERVER priv OPTIONS ("sasl.mechanisms" 'GSSAPI');
-- a superuser's server with GSSAPI is the superuser's choice: a role
-- granted USAGE scans it and owns a view over it (both get as far as the
-- brokers, which know no SASL), by name and by default
CREATE SERVER kerb FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers',
    "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'GSSAPI');
CREATE SERVER kerb_default FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers',
    "security.protocol" 'SASL_PLAINTEXT');
GRANT USAGE ON FOREIGN SERVER kerb, kerb_default TO ssp_alice;
CREATE FUNCTION error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SET ROLE ssp_alice;
SET ssp.broker_timeout = 1000;
CREATE FOREIGN TABLE kerb_stream (x int) SERVER kerb OPTIONS (topic 'priv_t');
CREATE FOREIGN TABLE kerb_default_stream (x int) SERVER kerb_default OPTIONS (topic 'priv_t');
SELECT error_of('SELECT count(*) FROM kerb_stream');
SELECT error_of('SELECT count(*) FROM kerb_default_stream');
CREATE VIEW kerb_view WITH (ssp.continuous) AS SELECT count(*) AS n FROM kerb_stream;
SELECT wait_for_error('kerb_view') NOT LIKE '%permission denied%' AS reached_the_brokers;
DROP VIEW kerb_view;
DROP FOREIGN TABLE kerb_stream, kerb_default_stream;
RESET ssp.broker_timeout;
RESET ROLE;
DROP SERVER kerb, kerb_default;

-- sasl.oauthbearer.config is read by librdkafka's unsecured JWT in its own
-- thread, and librdkafka 2.0 crashes the server on one it refuses there
-- (a consumer's fatal error): ssp refuses such a config first, when it is
-- set and when a client is built, saying what is wrong but not the value;
-- with enable.sasl.oauthbearer.unsecure.jwt and no config too
CREATE SERVER oauth FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers',
    "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'OAUTHBEARER');
CREATE USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (
    "sasl.oauthbearer.config" 'principal=svc topsecret=hunter2',
    "enable.sasl.oauthbearer.unsecure.jwt" 'true');
CREATE USER MAPPING FOR PUBLIC SERVER oauth OPTIONS ("enable.sasl.oauthbearer.unsecure.jwt" 'true');
CREATE FOREIGN TABLE oauth_stream (a int) SERVER oauth OPTIONS (topic 'priv_t');
GRANT USAGE ON FOREIGN SERVER oauth TO ssp_bob;
GRANT SELECT, INSERT ON oauth_stream TO ssp_bob;
SET ROLE ssp_bob;
SET ssp.broker_timeout = 1000;
SELECT * FROM oauth_stream;
INSERT INTO oauth_stream VALUES (1);
RESET ROLE;
ALTER USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (ADD "sasl.oauthbearer.config" 'principal=a"b');
ALTER USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (ADD "sasl.oauthbearer.config" 'principal=svc lifeSeconds=9x');
ALTER USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (ADD "sasl.oauthbearer.config" 'principal=svc principal=hunter2');
ALTER USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (ADD "sasl.oauthbearer.config" 'principal=svc extension_auth=hunter2');
ALTER USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (ADD "sasl.oauthbearer.config" 'scope=hunter2');
-- a config it takes gets as far as the brokers, which know no SASL
-- (test/tap/t/012_secrets.pl: what another role sees of it)
ALTER USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (ADD "sasl.oauthbearer.config"
    ' principal=svc  scope=hunter2,b lifeSeconds=600 extension_trace=hunter3 principalClaimName=azp ');
SET ROLE ssp_bob;
SELECT error_of('SELECT * FROM oauth_stream');
RESET ssp.broker_timeout;
RESET ROLE;
DROP FOREIGN TABLE oauth_stream;
DROP SERVER oauth CASCADE;
DROP FUNCTION error_of(text);

DROP VIEW alice_view;
DROP FOREIGN TABLE alice_stream, dave_stream;
DROP SERVER alices CASCADE;
DROP SERVER daves;
DROP SERVER priv, su;
DROP FUNCTION wait_for_error(regclass);
REVOKE ALL ON SCHEMA public FROM ssp_alice;
REVOKE ALL ON FOREIGN DATA WRAPPER ssp_kafka FROM ssp_alice;
DROP ROLE ssp_alice, ssp_bob, ssp_carol, ssp_dave;
DROP FUNCTION try_property(text, text, text);
DROP TABLE dangerous;
