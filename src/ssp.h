/*-------------------------------------------------------------------------
 *
 * ssp.h
 *	  Declarations shared by the files of ssp, stateful stream processing
 *	  over Kafka inside PostgreSQL.
 *
 * A stream is a foreign table of the ssp_kafka wrapper over one topic.
 * stream.c turns its catalog entry into an SspStream; decode.c and
 * encode.c convert between Kafka messages and rows; kafka.c is the only
 * file that talks to librdkafka, through the opaque handle SspKafka.
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

/* GUCs (ssp.c) */
extern int	ssp_broker_timeout;
extern bool ssp_aggregate_fast_path;
extern bool ssp_allow_kinit_cmd;	/* property.c */

/* Formats of a message's value. */
typedef enum SspFormat
{
	SSP_FORMAT_JSON,
	SSP_FORMAT_CSV,
	SSP_FORMAT_TEXT,
	SSP_FORMAT_BYTEA
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
	SspSource	source;
	char	   *header;			/* SSP_SRC_HEADER: the header's name */
	List	   *path;			/* JSON: field names (String nodes) */
	FmgrInfo	infunc;
	Oid			ioparam;
	FmgrInfo	outfunc;
	Oid			elemtype;		/* element type if an array, else InvalidOid */
	char		category;		/* TYPCATEGORY_* of the type */
} SspColumn;

typedef struct SspStream
{
	Oid			relid;
	char	   *relname;
	MemoryContext cxt;			/* where the stream was opened */
	Oid			serverid;
	char	   *topic;
	SspFormat	format;
	bool		on_error_null;	/* on_error 'null' rather than 'error' */
	AttrNumber	timestamp_attnum;	/* event time column, or 0 */
	int			natts;			/* attributes of the relation (incl. dropped) */
	int			ncolumns;
	SspColumn  *columns;		/* live columns, in attnum order */
	int			nvalue;			/* columns decoded from the value */
	int			nkey;			/* columns decoded from the key */
	bool		has_rawkey;
	bool	   *needed;			/* per column: decode it? NULL: all */
	TupleDesc	batch_desc;		/* batch.c: the columns of ssp_batch */
	void	   *value_paths;	/* decode.c: JSON paths of the value columns */
	void	   *key_paths;		/* decode.c: JSON paths of the key columns */
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

/* option.c */
extern bool ssp_option_is_secret(const char *name);
extern void ssp_check_topic_name(const char *name, const char *what);
extern bool ssp_is_kafka_server(Oid serverid);

/* property.c */
extern void ssp_check_kafka_property(const char *name, bool in_user_mapping,
									 bool trusted);
extern void ssp_check_server_properties(Oid serverid, bool server, bool mapping,
										Oid umuser, bool all_mappings);
extern List *ssp_server_kafka_options(Oid serverid, Oid userid);
extern char *ssp_server_kafka_signature(Oid serverid, Oid userid);

/* stream.c */
extern SspStream *ssp_stream_open(Oid relid);
extern bool ssp_is_stream(Oid relid);

/* decode.c */
extern void ssp_decode_message(SspStream *stream, SspMessage *msg,
							   Datum *values, bool *nulls);
extern void ssp_decode_message_lenient(SspStream *stream, SspMessage *msg,
									   Datum *values, bool *nulls);
extern int64 ssp_timestamptz_to_ms(Datum ts);
extern Datum ssp_ms_to_timestamptz(int64 ms);

/* encode.c */
extern void ssp_encode_row(SspStream *stream, Datum *values, bool *nulls,
						   SspOutMessage *out);

/* kafka.c: handles, errors, metadata, consuming and producing */
typedef struct SspKafka SspKafka;

typedef struct SspPartitionRange
{
	int32		partition;
	int64		start;			/* first offset to read */
	int64		end;			/* stop before this offset */
} SspPartitionRange;

extern void ssp_kafka_validate_property(const char *name, const char *value,
										bool secret);
extern bool ssp_kafka_property_known(const char *name);
extern SspKafka *ssp_kafka_consumer(Oid serverid, Oid userid,
									 const char *topic, const char *view_group);
extern void ssp_kafka_commit(SspKafka *kafka, int nparts, const int64 *next);
extern void ssp_kafka_close(SspKafka *kafka);
extern int	ssp_kafka_partition_count(SspKafka *kafka);
extern int	ssp_kafka_partition_count_try(SspKafka *kafka, int timeout_ms);
extern void ssp_kafka_watermarks(SspKafka *kafka, int32 partition,
								 int64 *low, int64 *high);
extern int64 ssp_kafka_offset_for_time(SspKafka *kafka, int32 partition,
									   int64 timestamp_ms);
extern void ssp_kafka_assign(SspKafka *kafka, SspPartitionRange *ranges,
							 int nranges);
extern bool ssp_kafka_next(SspKafka *kafka, SspMessage *msg);
extern bool ssp_kafka_header(SspMessage *msg, const char *name,
							 const char **value, size_t *len);
extern SspKafka *ssp_kafka_producer(Oid serverid, Oid userid);
extern void ssp_kafka_produce(SspKafka *kafka, const char *topic,
							  SspOutMessage *out);
extern void ssp_kafka_flush(SspKafka *kafka, const char *topic);
extern int	ssp_kafka_event_fd(SspKafka *kafka);
extern void ssp_kafka_drain_fd(SspKafka *kafka);
/* an offset for ssp_kafka_assign_at and ssp_kafka_lag: a partition not to read */
#define SSP_OFFSET_NOT_OURS (-2)
extern void ssp_kafka_assign_at(SspKafka *kafka, int nparts, const int64 *offsets);
extern int	ssp_kafka_poll_batch(SspKafka *kafka, SspMessage *out, int max,
								 int64 *eof, bool *lost, int nparts);
extern void ssp_kafka_release(SspKafka *kafka);
extern int64 ssp_kafka_lag(SspKafka *kafka, int nparts, const int64 *next,
						   bool *lagging);
extern const char *ssp_kafka_trouble(SspKafka *kafka);

/* utility.c */
extern void ssp_utility_init(void);

#endif							/* SSP_H */
