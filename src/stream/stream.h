/*-------------------------------------------------------------------------
 *
 * stream.h
 *	  Streams: a foreign table's definition (stream.c), and messages
 *	  decoded into rows (decode.c) and rows encoded into messages
 *	  (encode.c).  Above the Kafka edge, below the FDW and the views.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_STREAM_H
#define SSP_STREAM_H

#include "ssp.h"
#include "datatype/timestamp.h"

/* microseconds from the Unix epoch, 1970-01-01, to Postgres's, 2000-01-01 */
#define SSP_UNIX_EPOCH_US ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

/* stream.c */
/* the columns ssp adds to a stream's in a batch (ssp_batch_tupdesc) */
#define SSP_BATCH_EXTRA 3

extern SspStream *ssp_stream_open(Oid relid);
extern TupleDesc ssp_batch_tupdesc(TupleDesc sdesc);
extern bool ssp_is_stream(Oid relid);
extern bool ssp_may_read_all_columns(Oid relid, Oid roleid);
extern char *ssp_stream_signature(Oid relid);
extern bool ssp_is_kafka_server(Oid serverid);
extern void ssp_check_topic_name(const char *name, const char *what);
extern SspFormat ssp_format_by_name(const char *name);

/* decode.c */
extern void ssp_decode_message(SspStream *stream, SspMessage *msg,
							   Datum *values, bool *nulls);
extern void ssp_decode_message_lenient(SspStream *stream, SspMessage *msg,
									   Datum *values, bool *nulls);
extern int64 ssp_timestamptz_to_ms(Datum ts);
extern Datum ssp_text_input(SspColumn *col, const char *data, size_t len);
extern Datum ssp_ms_to_timestamptz(int64 ms);
extern Datum ssp_scalar_input(SspColumn *col, const char *text, size_t len,
							   bool number);
extern void ssp_domain_check(SspColumn *col, Datum value);
extern Datum ssp_typmod_datum(Oid typid, int32 typmod, Datum value);

/* encode.c */
extern void ssp_encode_check(SspStream *stream);
extern void ssp_encode_row(SspStream *stream, Datum *values, bool *nulls,
						   SspOutMessage *out);

#endif							/* SSP_STREAM_H */
