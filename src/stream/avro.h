/*-------------------------------------------------------------------------
 *
 * avro.h
 *	  Apache Avro: writer schemas parsed from their JSON, and values in
 *	  Avro's binary encoding decoded into a stream's columns by field name.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_AVRO_H
#define SSP_AVRO_H

#include "ssp.h"

typedef struct SspAvroType SspAvroType;
typedef struct SspAvroPlan SspAvroPlan;

extern SspAvroType *ssp_avro_parse(const char *json);
extern SspAvroType *ssp_avro_parse_with(List *references, const char *json);
extern SspAvroPlan *ssp_avro_plan(SspStream *stream, SspSource source,
								  SspAvroType *writer);
extern void ssp_avro_decode(SspAvroPlan *plan, const char *data, size_t len,
							Datum *values, bool *nulls, const char **column);

/* avro_write.c */
extern void ssp_avro_encode(SspStream *stream, SspSource source, SspAvroType *writer,
							Datum *values, bool *nulls, StringInfo out);
extern char *ssp_avro_schema_of(SspStream *stream, SspSource source);

#endif							/* SSP_AVRO_H */
