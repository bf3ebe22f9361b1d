-- Options of servers, user mappings, streams and columns, and their errors.
\getenv brokers SSP_BROKERS
\set VERBOSITY default

-- servers: brokers is required; any librdkafka property, validated by it
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka;
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', "fetch.wait.max.msx" '10');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', "fetch.wait.max.ms" 'soon');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', "bootstrap.servers" 'h:9092');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', "enable.auto.commit" 'true');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', "sasl.password" 'hunter2');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', brokers 'h:9093');
CREATE SERVER k2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092', "socket.timeout.ms" '5000');
ALTER SERVER k2 OPTIONS (ADD "socket.timeout.msx" '1');
ALTER SERVER k2 OPTIONS (SET "socket.timeout.ms" 'never');
-- ssp's producers are idempotent: librdkafka would refuse more in flight only when one starts
ALTER SERVER k2 OPTIONS (ADD "max.in.flight" '10');
ALTER SERVER k2 OPTIONS (ADD "max.in.flight.requests.per.connection" '5');
ALTER SERVER k2 OPTIONS (DROP "max.in.flight.requests.per.connection");
ALTER SERVER k2 OPTIONS (DROP brokers);
ALTER SERVER k2 OPTIONS (SET brokers 'h:9093', DROP "socket.timeout.ms");
SELECT srvname, srvoptions FROM pg_foreign_server WHERE srvname = 'k2';
DROP SERVER k2;
ALTER FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers 'h:9092');

-- user mappings hold secrets; their values never show in errors
CREATE USER MAPPING FOR PUBLIC SERVER kafka OPTIONS ("sasl.username" 'me', "sasl.password" 'hunter2');
CREATE USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS ("sasl.pasword" 'hunter2');
CREATE USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS ("ssl.key.password" 'hunter2', "session.timeout.ms" 'hunter2');
CREATE USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS ("sasl.password" 'hunter2', "socket.timeout.ms" 'x');
CREATE USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS (brokers 'h:9092');
DROP USER MAPPING FOR PUBLIC SERVER kafka;

-- streams: topic is required
CREATE FOREIGN TABLE s (a int) SERVER kafka;
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic '');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', format 'avro');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', on_error 'ignore');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', partitions '3');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', topic 'u');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', timestamp 'ts');
CREATE FOREIGN TABLE s (a int, ts text) SERVER kafka OPTIONS (topic 't', timestamp 'ts');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', key 'id');
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't', key 'a,');
-- columns: field and meta
CREATE FOREIGN TABLE s (a int OPTIONS (meta 'part')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (meta 'header:')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a text OPTIONS (meta 'partition')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (meta 'offset')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a date OPTIONS (meta 'timestamp')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (field 'x', meta 'key')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (field 'x..y')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (field '.x')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (path 'x')) SERVER kafka OPTIONS (topic 't');
CREATE FOREIGN TABLE s (a int OPTIONS (field 'x')) SERVER kafka OPTIONS (topic 't', format 'csv');
-- formats text and bytea take one value column
CREATE FOREIGN TABLE s (a text, b text) SERVER kafka OPTIONS (topic 't', format 'text');
CREATE FOREIGN TABLE s (a text) SERVER kafka OPTIONS (topic 't', format 'bytea');
-- key columns and a meta 'key' column do not mix
CREATE FOREIGN TABLE s (a int, k text OPTIONS (meta 'key')) SERVER kafka OPTIONS (topic 't', key 'a');
CREATE FOREIGN TABLE s (a int OPTIONS (meta 'partition')) SERVER kafka OPTIONS (topic 't', key 'a');

-- a valid stream with every kind of column
CREATE FOREIGN TABLE s (
    id bigint,
    city text OPTIONS (field 'address.city'),
    ts timestamptz,
    p int OPTIONS (meta 'partition'),
    o bigint OPTIONS (meta 'offset'),
    kt timestamptz OPTIONS (meta 'timestamp'),
    k text OPTIONS (meta 'key'),
    trace text OPTIONS (meta 'header:trace')
) SERVER kafka OPTIONS (topic 't', format 'json', timestamp 'ts', on_error 'error');
\d s
-- ALTER is checked like CREATE
ALTER FOREIGN TABLE s OPTIONS (SET format 'text');
ALTER FOREIGN TABLE s RENAME COLUMN ts TO event_time;
ALTER FOREIGN TABLE s ALTER COLUMN ts TYPE text;
ALTER FOREIGN TABLE s ALTER COLUMN p OPTIONS (SET meta 'offset');
ALTER FOREIGN TABLE s OPTIONS (SET timestamp 'kt');
ALTER FOREIGN TABLE s RENAME COLUMN ts TO event_time;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 's'::regclass;
DROP FOREIGN TABLE s;

-- streams are append-only
CREATE FOREIGN TABLE s (a int) SERVER kafka OPTIONS (topic 't');
UPDATE s SET a = 1;
DELETE FROM s;
DROP FOREIGN TABLE s;
DROP SERVER kafka;
