/*-------------------------------------------------------------------------
 *
 * protobuf.h
 *	  Protobuf through a Schema Registry: schemas parsed from their .proto
 *	  text, messages read into columns (straight, or as JSON that decode.c
 *	  reads as a JSON message), and rows written as the registry's latest
 *	  schema's message.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_PROTOBUF_H
#define SSP_PROTOBUF_H

#include "ssp.h"

typedef struct SspPbSchema SspPbSchema;
typedef struct SspPbMessage SspPbMessage;

/* What INSERT writes: a message, and the indexes that frame it. */
typedef struct SspPbWriter
{
	SspPbMessage *message;
	StringInfoData indexes;		/* Confluent's message indexes, encoded */
} SspPbWriter;

/*
 * How a stream's columns of one source are read from messages of one type
 * (ssp_pb_plan): some straight from the message, the others through JSON.
 */
typedef struct SspPbPlan
{
	SspSource	source;
	SspPbMessage *message;
	int			ndirect;		/* columns read straight from the message */
	int		   *fields;			/* [k]: the field, its index in the message */
	int		   *columns;		/* [k]: the column, its index in the stream */
	bool	   *direct;			/* [column]: read straight (or NULL: no field) */
	int			nonly;			/* top-level fields the other columns read */
	const char **only;
	struct SspPbValue *values;	/* [k]: a message's, while it is decoded */
} SspPbPlan;

extern SspPbSchema *ssp_pb_parse(List *references, const char *text);
extern SspPbPlan *ssp_pb_plan(SspStream *stream, SspSource source, SspPbMessage *m);
extern void ssp_pb_decode(SspStream *stream, SspPbPlan *plan, const char *data, size_t len,
						  Datum *values, bool *nulls, int only, const char **column);
extern SspPbMessage *ssp_pb_framed(SspPbSchema *schema, const char **data, size_t *len);
extern void ssp_pb_json(SspPbMessage *m, const char *data, size_t len,
						const char *const *only, int nonly, StringInfo out);

/* protobuf_write.c */
extern SspPbWriter *ssp_pb_writer(SspPbSchema *schema, const char *message,
								  const char *stream);
extern void ssp_pb_encode(SspPbWriter *writer, const char *json, StringInfo out);
extern char *ssp_pb_schema_of(SspStream *stream, SspSource source);

#endif							/* SSP_PROTOBUF_H */
