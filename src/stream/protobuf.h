/*-------------------------------------------------------------------------
 *
 * protobuf.h
 *	  Protobuf through a Schema Registry: schemas parsed from their .proto
 *	  text, messages read as JSON (decode.c takes the columns from it as
 *	  from a JSON message), and rows written as the registry's latest
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

extern SspPbSchema *ssp_pb_parse(List *references, const char *text);
extern SspPbMessage *ssp_pb_framed(SspPbSchema *schema, const char **data, size_t *len);
extern void ssp_pb_json(SspPbMessage *m, const char *data, size_t len,
						const char *const *only, int nonly, StringInfo out);

/* protobuf_write.c */
extern SspPbWriter *ssp_pb_writer(SspPbSchema *schema, const char *message,
								  const char *stream);
extern void ssp_pb_encode(SspPbWriter *writer, const char *json, StringInfo out);
extern char *ssp_pb_schema_of(SspStream *stream, SspSource source);

#endif							/* SSP_PROTOBUF_H */
