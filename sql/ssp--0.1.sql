-- ssp 0.1: streams over Kafka topics

\echo Use "CREATE EXTENSION ssp" to load this file. \quit

CREATE FUNCTION kafka_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'ssp_kafka_fdw_handler'
LANGUAGE C STRICT;

CREATE FUNCTION kafka_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME', 'ssp_kafka_fdw_validator'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER ssp_kafka
  HANDLER kafka_fdw_handler
  VALIDATOR kafka_fdw_validator;

COMMENT ON FOREIGN DATA WRAPPER ssp_kafka IS 'Kafka topics as streams';
