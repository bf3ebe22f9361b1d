/*-------------------------------------------------------------------------
 *
 * ssp.h
 *	  Declarations shared by the files of ssp, stateful stream processing
 *	  over Kafka inside PostgreSQL.
 *
 * A stream is a foreign table of the ssp_kafka wrapper over one topic.
 * stream/stream.c turns its catalog entry into an SspStream; stream/decode.c
 * and stream/encode.c convert between Kafka messages and rows;
 * kafka/kafka.c is the only file that talks to librdkafka's clients,
 * through the opaque handle SspKafka.  The functions of each folder are
 * declared in its own header (kafka/kafka.h, stream/stream.h, ...).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_H
#define SSP_H

#include "access/tupdesc.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/palloc.h"
#include "nodes/pg_list.h"

/*
 * The version of this library, and of the extension's SQL it works with:
 * ssp.control's default_version, the version the last update script in
 * sql/ reaches (each script checks the library's).  A database whose ssp
 * is another version waits for ALTER EXTENSION ssp UPDATE.
 */
#define SSP_VERSION "0.3"

/* GUCs (ssp.c) */
extern int	ssp_broker_timeout;
extern bool ssp_aggregate_fast_path;
extern int	ssp_attached_lock_timeout;
extern int	ssp_reader_buffer;
extern bool ssp_shared_readers;
extern int	ssp_work_mem;
extern bool ssp_allow_kinit_cmd;	/* property.c */

/* Formats of a message's value. */
typedef enum SspFormat
{
	SSP_FORMAT_JSON,
	SSP_FORMAT_CSV,
	SSP_FORMAT_TEXT,
	SSP_FORMAT_BYTEA,
	SSP_FORMAT_AVRO,			/* Confluent's framing, or option "schema" */
	SSP_FORMAT_JSONSCHEMA,		/* JSON in Confluent's framing */
	SSP_FORMAT_PROTOBUF,		/* Protobuf in Confluent's framing */
	SSP_FORMAT_DEBEZIUM			/* Debezium's JSON envelope: a changelog */
} SspFormat;

/* Where a column's value comes from. */
typedef enum SspSource
{
	SSP_SRC_VALUE,				/* the message value, in the stream's format */
	SSP_SRC_KEY,				/* the message key (table option "key") */
	SSP_SRC_PARTITION,			/* meta 'partition' */
	SSP_SRC_OFFSET,				/* meta 'offset' */
	SSP_SRC_TIMESTAMP,			/* meta 'timestamp' */
	SSP_SRC_RAWKEY,				/* meta 'key' */
	SSP_SRC_HEADER				/* meta 'header:NAME' */
} SspSource;

typedef struct SspColumn
{
	char	   *name;
	AttrNumber	attnum;
	Oid			typid;
	int32		typmod;
	Oid			basetype;		/* typid, or a domain's base type */
	int32		basetypmod;		/* typmod, or the domain's base type's */
	SspSource	source;
	char	   *header;			/* SSP_SRC_HEADER: the header's name */
	List	   *path;			/* JSON: field names (String nodes) */
	FmgrInfo	infunc;
	Oid			ioparam;
	FmgrInfo	outfunc;
	Oid			elemtype;		/* element type if an array, else InvalidOid */
	char		category;		/* TYPCATEGORY_* of the type */
	MemoryContext cxt;			/* where the column lives, and its caches */
	void	   *domain_cache;	/* decode.c: domain_check's, for a domain */
	void	   *array_cache;	/* decode.c: its JSON arrays' elements' I/O */
} SspColumn;

typedef struct SspStream
{
	Oid			relid;
	char	   *relname;
	MemoryContext cxt;			/* where the stream was opened */
	Oid			serverid;
	char	   *topic;
	SspFormat	format;
	SspFormat	key_format;		/* json (the default: text for one column), text,
								 * avro, jsonschema, protobuf */
	void	   *registry;		/* SspRegistry, when a format reads one */
	void	   *avro_writer;	/* option "schema", parsed: unframed Avro values */
	List	   *avro_plans;		/* decode.c: SspAvroPlan per writer schema and source */
	bool		auto_register;	/* option auto_register: INSERT may register a schema */
	char	   *message;		/* option "message": the Protobuf message INSERT writes */
	void	   *write_schema[2];	/* encode.c: value's [0] and key's [1] writer schema */
	int32		write_id[2];	/* and its id (-1: unframed); 0: not looked up yet */
	bool		on_error_null;	/* on_error 'null' rather than 'error' */
	bool		unquoted;		/* decoding errors do not quote the message:
								 * its reader may read only some columns */
	bool		changelog;		/* each message the new version of its key
								 * (option changelog 'upsert', or format
								 * debezium); the key: the key columns */
	bool		deleted;		/* decode.c: the message just decoded deletes
								 * its key (a Debezium delete) */
	AttrNumber	timestamp_attnum;	/* event time column, or 0 */
	Oid			timestamp_typid;	/* its type: timestamptz or timestamp */
	int			natts;			/* attributes of the relation (incl. dropped) */
	TupleDesc	desc;			/* the relation's, as it was opened: decoding
								 * follows it, not a later ALTER */
	int			ncolumns;
	SspColumn  *columns;		/* live columns, in attnum order */
	bool		has_domain;		/* a column's type is a domain */
	int			nvalue;			/* columns decoded from the value */
	int			nkey;			/* columns decoded from the key */
	bool		has_rawkey;
	bool	   *needed;			/* per column: decode it? NULL: all */
	TupleDesc	batch_desc;		/* batch.c: the columns of ssp_batch */
	void	   *value_paths;	/* decode.c: JSON paths of the value columns */
	void	   *key_paths;		/* decode.c: JSON paths of the key columns */
	List	   *pb_plans;		/* decode.c: SspPbPlan per message type and source */
	StringInfo	pb_json[2];		/* decode.c: a Protobuf value [0] or key [1] as JSON */
	struct SspSchema *last_schema[2];	/* decode.c: the last value's and key's schema */
	char	   *signature;		/* reader.c: its definition when a view's
								 * process opened it (ssp_stream_signature) */
} SspStream;

/* A message as decode.c sees it; kafka.c fills it. */
typedef struct SspMessage
{
	const char *value;			/* NULL for a null value (tombstone) */
	size_t		value_len;
	const char *key;			/* NULL for a null key */
	size_t		key_len;
	int32		partition;
	int64		offset;
	int64		timestamp_ms;	/* -1 if the broker gave none */
	void	   *handle;			/* the librdkafka message, for headers */
	int			source;			/* a worker's: which of its view's topics */
} SspMessage;

/* A message as encode.c builds it for kafka.c to produce. */
typedef struct SspOutMessage
{
	StringInfoData value;
	bool		value_null;
	StringInfoData key;
	bool		key_null;
	int32		partition;		/* -1: let the partitioner choose */
	int64		timestamp_ms;	/* 0: now */
	List	   *headers;		/* pairs of (name, StringInfo) as SspHeader */
} SspOutMessage;

typedef struct SspHeader
{
	char	   *name;
	char	   *value;			/* NULL for a null header value */
	size_t		len;
} SspHeader;

/* state_check.c */
extern void ssp_check_stored_state(Oid deserialfn, Oid aggfnoid, const bytea *state);

/* ssp.c */
extern int	ssp_pin_search_path(void);
extern int	ssp_spi_catalog(const char *sql, int nargs, Oid *argtypes, Datum *values,
							const char *nulls, bool read_only, long count);

/* utility.c */
extern void ssp_utility_init(void);
extern void ssp_wake_scheduler_at_commit(void);
extern int	ssp_own_ddl;

#endif							/* SSP_H */
