/*-------------------------------------------------------------------------
 *
 * avro_internal.h
 *	  What the parts of ssp's Avro decoder share: a schema's types
 *	  (avro_schema.c parses them), and the reader of the binary encoding
 *	  (avro_read.c), which needs nothing of the backend but ereport, so that
 *	  test/fuzz/fuzz_avro.c can run it alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_AVRO_INTERNAL_H
#define SSP_AVRO_INTERNAL_H

#include "nodes/pg_list.h"

#include "stream/avro.h"

typedef enum AvroKind
{
	AV_NULL,
	AV_BOOLEAN,
	AV_INT,
	AV_LONG,
	AV_FLOAT,
	AV_DOUBLE,
	AV_BYTES,
	AV_STRING,
	AV_RECORD,
	AV_ENUM,
	AV_ARRAY,
	AV_MAP,
	AV_UNION,
	AV_FIXED
} AvroKind;

typedef enum AvroLogical
{
	AL_NONE,
	AL_DECIMAL,
	AL_UUID,
	AL_DATE,
	AL_TIME_MILLIS,
	AL_TIME_MICROS,
	AL_TS_MILLIS,
	AL_TS_MICROS,
	AL_TS_NANOS,
	AL_LOCAL_TS_MILLIS,
	AL_LOCAL_TS_MICROS,
	AL_LOCAL_TS_NANOS,
	AL_DURATION
} AvroLogical;

struct SspAvroType
{
	AvroKind	kind;
	AvroLogical logical;
	int			precision;		/* decimal */
	int			scale;
	char	   *name;			/* record, enum, fixed: the full name */
	int			n;				/* fields, symbols, branches; fixed: size */
	char	  **names;			/* record: field names; enum: symbols */
	List	  **aliases;		/* record: each field's aliases (String) */
	SspAvroType **types;		/* record: field types; union: branches;
								 * array, map: [0] the items' */
	bool		empty;			/* can a value take no bytes? */
};

extern const char *const ssp_avro_kind_names[];

/* A value being read: the bytes left, and how deep it is nested. */
typedef struct SspAvroReader
{
	const uint8 *p;
	const uint8 *end;
	int			depth;
	int64		values;			/* read so far, for the budget */
} SspAvroReader;

/* the most values one message may hold, whatever its bytes */
#define SSP_AVRO_MAX_VALUES 10000000

/* avro_read.c: each errors (a data exception) on what cannot be read */
extern void ssp_avro_data_error(const char *fmt,...) pg_attribute_printf(1, 2);
extern int64 ssp_avro_long(SspAvroReader *r);
extern int32 ssp_avro_int(SspAvroReader *r);
extern const uint8 *ssp_avro_fixed(SspAvroReader *r, int64 n);
extern const uint8 *ssp_avro_bytes(SspAvroReader *r, int64 *len);
extern double ssp_avro_double(SspAvroReader *r);
extern float ssp_avro_float(SspAvroReader *r);
extern bool ssp_avro_boolean(SspAvroReader *r);
extern int	ssp_avro_branch(SspAvroReader *r, SspAvroType *t);
extern int64 ssp_avro_block(SspAvroReader *r, SspAvroType *items);
extern void ssp_avro_enter(SspAvroReader *r);
extern void ssp_avro_count(SspAvroReader *r, int64 n);
extern void ssp_avro_skip(SspAvroType *t, SspAvroReader *r);

/* avro.c */
extern char *ssp_avro_text_of(Datum d, Oid typid);

#endif							/* SSP_AVRO_INTERNAL_H */
