/*-------------------------------------------------------------------------
 *
 * avro_write.c
 *	  Rows into Apache Avro's binary encoding, for INSERT into a stream in
 *	  format avro: each field of the writer schema (the subject's latest in
 *	  the registry, or the stream's option "schema") from the column of its
 *	  name, and the schema of a stream's columns, for a registry that has
 *	  none yet (the stream option auto_register).
 *
 * A field no column fills is null if its type allows it, else an error; a
 * NULL column goes to a union's null branch; a value goes to the first
 * branch that can hold its type.  Values are written without text where the
 * types allow (numbers, booleans, bytes, timestamps, dates, decimals,
 * uuids), else from the column's text; a domain's value as its base
 * type's.  A multidimensional array is an array of arrays, where the
 * schema's items are arrays.  Errors are the row's: the statement fails,
 * naming the column and the field.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "ssp.h"
#include "stream/avro_internal.h"
#include "stream/stream.h"

static void write_value(SspAvroType *t, Datum d, bool isnull, Oid typid,
						const char *field, StringInfo out);

static void
put_long(StringInfo out, int64 v)
{
	uint64		z = ((uint64) v << 1) ^ (uint64) (v >> 63);

	while (z & ~(uint64) 0x7f)
	{
		appendStringInfoChar(out, (char) ((z & 0x7f) | 0x80));
		z >>= 7;
	}
	appendStringInfoChar(out, (char) z);
}

static void
put_bytes(StringInfo out, const char *p, int64 len)
{
	put_long(out, len);
	appendBinaryStringInfo(out, p, len);
}

static void
put_le(StringInfo out, uint64 u, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		appendStringInfoChar(out, (char) ((u >> (8 * i)) & 0xff));
}

static void
cannot(const char *field, SspAvroType *t, Oid typid, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("cannot write a value of type %s to Avro field \"%s\" of type %s",
					format_type_be(typid), field, ssp_avro_kind_names[t->kind]),
			 why ? errdetail("%s", why) : 0));
}

/* as_int8: an integer-like value as int64 (numbers rounded; text parsed). */
static int64
as_int8(Datum d, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		case INT8OID:
			return DatumGetInt64(d);
		case NUMERICOID:
			return DatumGetInt64(DirectFunctionCall1(numeric_int8, d));
		case FLOAT4OID:
			return DatumGetInt64(DirectFunctionCall1(ftoi8, d));
		case FLOAT8OID:
			return DatumGetInt64(DirectFunctionCall1(dtoi8, d));
		case BOOLOID:
			return DatumGetBool(d) ? 1 : 0;
		default:
			return DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(ssp_avro_text_of(d, typid))));
	}
}

static double
as_float8(Datum d, Oid typid)
{
	switch (typid)
	{
		case FLOAT4OID:
			return DatumGetFloat4(d);
		case FLOAT8OID:
			return DatumGetFloat8(d);
		case NUMERICOID:
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return (double) as_int8(d, typid);
		default:
			return DatumGetFloat8(DirectFunctionCall1(float8in, CStringGetDatum(ssp_avro_text_of(d, typid))));
	}
}

/* as_timestamp: microseconds since 2000 of a timestamp, timestamptz or date (UTC for the instant). */
static int64
as_timestamp(Datum d, Oid typid, bool local)
{
	if (typid == TIMESTAMPTZOID && local)
		return DatumGetTimestamp(DirectFunctionCall1(timestamptz_timestamp, d));
	if (typid == TIMESTAMPOID && !local)
		return DatumGetTimestampTz(DirectFunctionCall1(timestamp_timestamptz, d));
	if (typid == TIMESTAMPTZOID || typid == TIMESTAMPOID)
		return DatumGetTimestamp(d);
	if (typid == DATEOID)
		return local ? DatumGetTimestamp(DirectFunctionCall1(date_timestamp, d)) :
			DatumGetTimestampTz(DirectFunctionCall1(date_timestamptz, d));
	return DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in, CStringGetDatum(ssp_avro_text_of(d, typid)),
												   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
}

static void
write_logical_long(SspAvroType *t, Datum d, Oid typid, const char *field, StringInfo out)
{
	int64		us;
	int64		v;

	switch (t->logical)
	{
		case AL_DATE:
			if (typid != DATEOID)
				d = DirectFunctionCall1(date_in, CStringGetDatum(ssp_avro_text_of(d, typid)));
			if (DATE_NOT_FINITE(DatumGetDateADT(d)))
				cannot(field, t, typid, "An infinite date has no Avro form.");
			put_long(out, (int64) DatumGetDateADT(d) + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE));
			return;
		case AL_TIME_MILLIS:
		case AL_TIME_MICROS:
			if (typid != TIMEOID)
				d = DirectFunctionCall3(time_in, CStringGetDatum(ssp_avro_text_of(d, typid)),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
			us = DatumGetTimeADT(d);
			put_long(out, t->logical == AL_TIME_MILLIS ? us / 1000 : us);
			return;
		default:
			us = as_timestamp(d, typid, t->logical >= AL_LOCAL_TS_MILLIS);
			if (TIMESTAMP_NOT_FINITE(us))
				cannot(field, t, typid, "An infinite timestamp has no Avro form.");
			v = us + SSP_UNIX_EPOCH_US;
			if (t->logical == AL_TS_MILLIS || t->logical == AL_LOCAL_TS_MILLIS)
				v = v >= 0 ? v / 1000 : -((-v + 999) / 1000);
			else if ((t->logical == AL_TS_NANOS || t->logical == AL_LOCAL_TS_NANOS) &&
					 pg_mul_s64_overflow(v, 1000, &v))
				cannot(field, t, typid, "It is out of range in nanoseconds.");
			if (t->kind == AV_INT && (v < PG_INT32_MIN || v > PG_INT32_MAX))
				cannot(field, t, typid, "It is out of range of an int.");
			put_long(out, v);
	}
}

/* decimal_bytes: a numeric as the two's-complement big-endian unscaled value at scale. */
static void
decimal_bytes(SspAvroType *t, Datum d, Oid typid, const char *field, StringInfo out)
{
	Numeric		n;
	char	   *digits;
	char	   *p;
	uint8		mag[128];
	int			len = 1;
	bool		neg;
	int			i;
	int			ndigits = 0;
	StringInfoData b;

	n = typid == NUMERICOID ? DatumGetNumeric(d) :
		DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(ssp_avro_text_of(d, typid)),
											ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	if (numeric_is_nan(n) || numeric_is_inf(n))
		cannot(field, t, typid, "NaN and infinity have no Avro decimal form.");
	n = DatumGetNumeric(DirectFunctionCall2(numeric_round, NumericGetDatum(n), Int32GetDatum(t->scale)));
	digits = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(n)));
	neg = digits[0] == '-';
	/* the digits without sign and point: the unscaled value, in base 256 */
	memset(mag, 0, sizeof(mag));
	for (p = digits + (neg ? 1 : 0); *p; p++)
	{
		int			carry;

		if (*p == '.')
			continue;
		carry = *p - '0';
		ndigits += ndigits > 0 || carry > 0;
		for (i = 0; i < len || carry; i++)
		{
			int			v;

			if (i >= (int) sizeof(mag))
				cannot(field, t, typid, "It has too many digits.");
			v = mag[i] * 10 + carry;
			mag[i] = v & 0xff;
			carry = v >> 8;
			if (i >= len)
				len = i + 1;
		}
	}
	if (ndigits > t->precision)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value %s does not fit Avro field \"%s\", a decimal of precision %d and scale %d",
						digits, field, t->precision, t->scale)));
	if (neg)
	{
		int			carry = 1;

		for (i = 0; i < (int) sizeof(mag); i++)
		{
			int			v = (uint8) ~mag[i] + carry;

			mag[i] = v & 0xff;
			carry = v >> 8;
		}
	}
	/* the shortest form that keeps the sign, or fixed's size */
	len = sizeof(mag);
	while (len > 1 && mag[len - 1] == (neg ? 0xff : 0) &&
		   ((mag[len - 2] & 0x80) != 0) == neg)
		len--;
	initStringInfo(&b);
	if (t->kind == AV_FIXED)
	{
		if (len > t->n)
			cannot(field, t, typid, "It does not fit the fixed's size.");
		/* sign bytes before the value, to the fixed's size */
		for (i = t->n; i > len; i--)
			appendStringInfoChar(&b, (char) (neg ? 0xff : 0));
	}
	for (i = len - 1; i >= 0; i--)
		appendStringInfoChar(&b, (char) mag[i]);
	len = b.len;
	if (t->kind == AV_BYTES)
		put_long(out, len);
	appendBinaryStringInfo(out, b.data, b.len);
}

/* array_branch: the branch of a union that is an array, or -1 */
static int
array_branch(SspAvroType *t)
{
	int			b;

	for (b = 0; b < t->n; b++)
		if (t->types[b]->kind == AV_ARRAY)
			return b;
	return -1;
}

/*
 * write_array_level: the sub-arrays of one level of a multidimensional
 * array (dims: its shape) from elements *k on, as an Avro array (t) of
 * arrays down to the last level, whose items are the elements.
 */
static void
write_array_level(SspAvroType *t, int level, int ndim, int *dims, Datum *elems,
				  bool *nulls, int *k, Oid elembase, Oid typid, const char *field,
				  StringInfo out)
{
	SspAvroType *items = t->types[0];
	int			i;

	if (dims[level] > 0)
		put_long(out, dims[level]);
	for (i = 0; i < dims[level]; i++)
	{
		if (level + 1 < ndim)
		{
			SspAvroType *sub = items;

			if (sub->kind == AV_UNION)
			{
				int			b = array_branch(sub);

				if (b >= 0)
				{
					put_long(out, b);
					sub = sub->types[b];
				}
			}
			if (sub->kind != AV_ARRAY)
				cannot(field, t, typid,
					   psprintf("It has %d dimensions; the field holds %d.", ndim, level + 1));
			write_array_level(sub, level + 1, ndim, dims, elems, nulls, k, elembase, typid,
							  field, out);
		}
		else
		{
			write_value(items, elems[*k], nulls[*k], elembase, field, out);
			(*k)++;
		}
	}
	put_long(out, 0);
}

/*
 * write_array: a Postgres array as an Avro array of its elements (of their
 * base type, for an array of a domain); a multidimensional one as arrays of
 * arrays, which the decoder reads back so, if the field's items are arrays
 * (else it is refused: flattened, it would read back as another value).
 */
static void
write_array(SspAvroType *t, Datum d, Oid typid, const char *field, StringInfo out)
{
	Oid			elemtype = get_element_type(typid);
	ArrayType  *arr;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			k = 0;

	if (!OidIsValid(elemtype))
		cannot(field, t, typid, "An Avro array is written from a Postgres array.");
	arr = DatumGetArrayTypeP(d);
	if (ARR_NDIM(arr) == 0)
	{
		put_long(out, 0);
		return;
	}
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &elems, &nulls, &n);
	write_array_level(t, 0, ARR_NDIM(arr), ARR_DIMS(arr), elems, nulls, &k,
					  getBaseType(elemtype), typid, field, out);
}

/* write_map: a jsonb object into a map, each value as the scalar it is. */
static void
write_map(SspAvroType *t, Datum d, Oid typid, const char *field, StringInfo out)
{
	Jsonb	   *jb;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n;

	if (typid != JSONBOID && typid != JSONOID)
		cannot(field, t, typid, "An Avro map is written from a json or jsonb object.");
	jb = typid == JSONBOID ? DatumGetJsonbP(d) :
		DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(ssp_avro_text_of(d, typid))));
	if (!JB_ROOT_IS_OBJECT(jb))
		cannot(field, t, typid, "An Avro map is written from a JSON object.");
	n = JB_ROOT_COUNT(jb);
	if (n > 0)
		put_long(out, n);
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		Datum		value = (Datum) 0;
		Oid			vtype = TEXTOID;
		bool		isnull = false;

		if (tok == WJB_KEY)
		{
			char	   *k = pg_server_to_any(v.val.string.val, v.val.string.len, PG_UTF8);

			put_bytes(out, k, k == v.val.string.val ? v.val.string.len : strlen(k));
			continue;
		}
		if (tok != WJB_VALUE)
			continue;
		switch (v.type)
		{
			case jbvNull:
				isnull = true;
				break;
			case jbvString:
				value = PointerGetDatum(cstring_to_text_with_len(v.val.string.val, v.val.string.len));
				break;
			case jbvNumeric:
				value = NumericGetDatum(v.val.numeric);
				vtype = NUMERICOID;
				break;
			case jbvBool:
				value = BoolGetDatum(v.val.boolean);
				vtype = BOOLOID;
				break;
			default:
				value = JsonbPGetDatum(JsonbValueToJsonb(&v));
				vtype = JSONBOID;
		}
		write_value(t->types[0], value, isnull, vtype, field, out);
	}
	put_long(out, 0);
}

/* write_record: a composite value into a record, fields by attribute name. */
static void
write_record(SspAvroType *t, Datum d, Oid typid, const char *field, StringInfo out)
{
	HeapTupleHeader rec;
	TupleDesc	desc;
	HeapTupleData tuple;
	int			f;

	if (!type_is_rowtype(typid))
		cannot(field, t, typid, "An Avro record is written from a composite type, or from columns by field.");
	rec = DatumGetHeapTupleHeader(d);
	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec), HeapTupleHeaderGetTypMod(rec));
	tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
	tuple.t_data = rec;
	for (f = 0; f < t->n; f++)
	{
		int			a;
		bool		isnull = true;
		Datum		v = (Datum) 0;
		Oid			atype = TEXTOID;

		for (a = 0; a < desc->natts; a++)
			if (!TupleDescAttr(desc, a)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, a)->attname), t->names[f]) == 0)
			{
				v = heap_getattr(&tuple, a + 1, desc, &isnull);
				/* a domain's value is its base type's */
				atype = getBaseType(TupleDescAttr(desc, a)->atttypid);
				break;
			}
		write_value(t->types[f], v, isnull, atype, t->names[f], out);
	}
	ReleaseTupleDesc(desc);
}

/* branch_for: the union branch a value of typid goes to (-1: none). */
static int
branch_for(SspAvroType *t, Oid typid, bool isnull)
{
	int			b;
	int			fallback = -1;

	for (b = 0; b < t->n; b++)
	{
		AvroKind	k = t->types[b]->kind;

		if (isnull)
		{
			if (k == AV_NULL)
				return b;
			continue;
		}
		if (k == AV_NULL)
			continue;
		switch (typid)
		{
			case BOOLOID:
				if (k == AV_BOOLEAN)
					return b;
				break;
			case INT2OID:
			case INT4OID:
			case INT8OID:
				if (k == AV_INT || k == AV_LONG)
					return b;
				break;
			case FLOAT4OID:
			case FLOAT8OID:
				if (k == AV_FLOAT || k == AV_DOUBLE)
					return b;
				break;
			case NUMERICOID:
				if (t->types[b]->logical == AL_DECIMAL || k == AV_DOUBLE)
					return b;
				break;
			case BYTEAOID:
				if (k == AV_BYTES || k == AV_FIXED)
					return b;
				break;
			case TIMESTAMPTZOID:
			case TIMESTAMPOID:
				if (t->types[b]->logical >= AL_TS_MILLIS && t->types[b]->logical <= AL_LOCAL_TS_NANOS)
					return b;
				break;
			case DATEOID:
				if (t->types[b]->logical == AL_DATE)
					return b;
				break;
			case TIMEOID:
				if (t->types[b]->logical == AL_TIME_MILLIS || t->types[b]->logical == AL_TIME_MICROS)
					return b;
				break;
			case UUIDOID:
				if (t->types[b]->logical == AL_UUID)
					return b;
				break;
			case INTERVALOID:
				if (t->types[b]->logical == AL_DURATION)
					return b;
				break;
			case JSONOID:
			case JSONBOID:
				if (k == AV_MAP)
					return b;
				break;
			default:
				if (type_is_rowtype(typid) && k == AV_RECORD)
					return b;
				if (OidIsValid(get_element_type(typid)) && k == AV_ARRAY)
					return b;
				if (k == AV_STRING || k == AV_ENUM)
					return b;
		}
		if (fallback < 0 && (k == AV_STRING || k == AV_LONG || k == AV_DOUBLE || k == AV_INT))
			fallback = b;
	}
	return fallback;
}

/*
 * write_value: one value (isnull: NULL) of type typid as type t.  typid is
 * never a domain: callers give a domain's base type, whose value it is.
 */
static void
write_value(SspAvroType *t, Datum d, bool isnull, Oid typid, const char *field, StringInfo out)
{
	check_stack_depth();
	if (t->kind == AV_UNION)
	{
		int			b = branch_for(t, typid, isnull);

		if (b < 0)
			cannot(field, t, typid, isnull ? "The union has no null branch." : "No branch of the union can hold it.");
		put_long(out, b);
		t = t->types[b];
	}
	if (isnull || t->kind == AV_NULL)
	{
		if (isnull && t->kind == AV_NULL)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 isnull ? errmsg("NULL cannot be written to Avro field \"%s\" of type %s",
								 field, ssp_avro_kind_names[t->kind]) :
				 errmsg("only NULL can be written to Avro field \"%s\" of type null", field)));
	}
	switch (t->kind)
	{
		case AV_BOOLEAN:
			appendStringInfoChar(out, typid == BOOLOID ? (DatumGetBool(d) ? 1 : 0) :
								 DatumGetBool(DirectFunctionCall1(boolin, CStringGetDatum(ssp_avro_text_of(d, typid)))));
			break;
		case AV_INT:
		case AV_LONG:
			if (t->logical != AL_NONE)
				write_logical_long(t, d, typid, field, out);
			else if (typid == TIMESTAMPTZOID || typid == TIMESTAMPOID)
			{
				/* milliseconds since 1970, as the decoder reads them */
				SspAvroType ms = {.kind = t->kind,.logical = AL_TS_MILLIS};

				write_logical_long(&ms, d, typid, field, out);
			}
			else
			{
				int64		v = as_int8(d, typid);

				if (t->kind == AV_INT && (v < PG_INT32_MIN || v > PG_INT32_MAX))
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("value %lld is out of range for Avro field \"%s\" of type int",
									(long long) v, field)));
				put_long(out, v);
			}
			break;
		case AV_FLOAT:
			{
				float		f = (float) as_float8(d, typid);
				uint32		u;

				memcpy(&u, &f, 4);
				put_le(out, u, 4);
				break;
			}
		case AV_DOUBLE:
			{
				double		f = as_float8(d, typid);
				uint64		u;

				memcpy(&u, &f, 8);
				put_le(out, u, 8);
				break;
			}
		case AV_STRING:
			{
				char	   *s = typid == TEXTOID || typid == VARCHAROID ? TextDatumGetCString(d) : ssp_avro_text_of(d, typid);
				char	   *u = pg_server_to_any(s, strlen(s), PG_UTF8);

				put_bytes(out, u, strlen(u));
				break;
			}
		case AV_ENUM:
			{
				char	   *s = typid == TEXTOID ? TextDatumGetCString(d) : ssp_avro_text_of(d, typid);
				int			i;

				for (i = 0; i < t->n; i++)
					if (strcmp(t->names[i], s) == 0)
						break;
				if (i == t->n)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("\"%s\" is not a symbol of Avro enum \"%s\" (field \"%s\")", s, t->name, field)));
				put_long(out, i);
				break;
			}
		case AV_BYTES:
		case AV_FIXED:
			if (t->logical == AL_DECIMAL)
				decimal_bytes(t, d, typid, field, out);
			else if (t->logical == AL_UUID && typid == UUIDOID)
				appendBinaryStringInfo(out, (char *) DatumGetUUIDP(d)->data, UUID_LEN);
			else if (t->logical == AL_DURATION && typid == INTERVALOID)
			{
				Interval   *iv = DatumGetIntervalP(d);

				if (iv->month < 0 || iv->day < 0 || iv->time < 0 || iv->time / 1000 > PG_UINT32_MAX)
					cannot(field, t, typid, "An Avro duration holds no negative part.");
				put_le(out, (uint32) iv->month, 4);
				put_le(out, (uint32) iv->day, 4);
				put_le(out, (uint32) (iv->time / 1000), 4);
			}
			else
			{
				bytea	   *b = typid == BYTEAOID ? DatumGetByteaPP(d) :
					(bytea *) cstring_to_text(ssp_avro_text_of(d, typid));
				int64		len = VARSIZE_ANY_EXHDR(b);

				if (t->kind == AV_FIXED && len != t->n)
					cannot(field, t, typid, psprintf("It has %lld bytes; the fixed has %d.", (long long) len, t->n));
				if (t->kind == AV_BYTES)
					put_long(out, len);
				appendBinaryStringInfo(out, VARDATA_ANY(b), len);
			}
			break;
		case AV_ARRAY:
			write_array(t, d, typid, field, out);
			break;
		case AV_RECORD:
			write_record(t, d, typid, field, out);
			break;
		case AV_MAP:
			write_map(t, d, typid, field, out);
			break;
		default:
			cannot(field, t, typid, NULL);
	}
}

/* path_is: is a column's path prefix + name? */
static bool
path_is(List *path, List *prefix, const char *name)
{
	int			i;

	if (list_length(path) != list_length(prefix) + 1)
		return false;
	for (i = 0; i < list_length(prefix); i++)
		if (strcmp(strVal(list_nth(path, i)), strVal(list_nth(prefix, i))) != 0)
			return false;
	return strcmp(strVal(llast(path)), name) == 0;
}

static bool
path_under(List *path, List *prefix)
{
	int			i;

	if (list_length(path) <= list_length(prefix))
		return false;
	for (i = 0; i < list_length(prefix); i++)
		if (strcmp(strVal(list_nth(path, i)), strVal(list_nth(prefix, i))) != 0)
			return false;
	return true;
}

static List *
column_path(SspStream *stream, SspSource source, int i)
{
	return source == SSP_SRC_KEY ? list_make1(makeString(stream->columns[i].name)) :
		stream->columns[i].path;
}

/* write_fields: a record from the columns under prefix, a field from the column of its path. */
static void
write_fields(SspStream *stream, SspSource source, SspAvroType *t, List *prefix,
			 Datum *values, bool *nulls, StringInfo out)
{
	int			f;

	for (f = 0; f < t->n; f++)
	{
		SspAvroType *ft = t->types[f];
		List	   *inner = lappend(list_copy(prefix), makeString(t->names[f]));
		bool		under = false;
		int			i;

		for (i = 0; i < stream->ncolumns; i++)
		{
			SspColumn  *col = &stream->columns[i];

			if (col->source != source)
				continue;
			if (path_is(column_path(stream, source, i), prefix, t->names[f]))
				break;
			under |= path_under(column_path(stream, source, i), inner);
		}
		if (i < stream->ncolumns)
		{
			SspColumn  *col = &stream->columns[i];

			write_value(ft, values[col->attnum - 1], nulls[col->attnum - 1], col->basetype,
						t->names[f], out);
			continue;
		}
		if (under)
		{
			int			b = -1;

			/* the columns inside it: a record, or a union's record branch */
			if (ft->kind == AV_UNION)
				for (b = 0; b < ft->n && ft->types[b]->kind != AV_RECORD; b++)
					;
			if (ft->kind == AV_RECORD || (b >= 0 && b < ft->n))
			{
				if (b >= 0)
				{
					put_long(out, b);
					ft = ft->types[b];
				}
				write_fields(stream, source, ft, inner, values, nulls, out);
				continue;
			}
		}
		/* no column for it: null if it may be */
		write_value(ft, (Datum) 0, true, TEXTOID, t->names[f], out);
	}
}

/*
 * ssp_avro_encode: the stream's value (or key) columns of a row, written
 * with writer, appended to out.  A writer schema that is not a record takes
 * the one column of that source.
 */
void
ssp_avro_encode(SspStream *stream, SspSource source, SspAvroType *writer,
				Datum *values, bool *nulls, StringInfo out)
{
	int			i;

	if (writer->kind == AV_RECORD)
	{
		write_fields(stream, source, writer, NIL, values, nulls, out);
		return;
	}
	for (i = 0; i < stream->ncolumns; i++)
		if (stream->columns[i].source == source)
		{
			SspColumn  *col = &stream->columns[i];

			write_value(writer, values[col->attnum - 1], nulls[col->attnum - 1], col->basetype,
						col->name, out);
			return;
		}
}

/*
 * avro_type_of: the Avro type (as JSON) that holds a Postgres type: a
 * domain's base type's (as its values are written), arrays of one dimension.
 */
static const char *
avro_type_of(Oid typid, int32 typmod)
{
	Oid			elem;

	typid = getBaseTypeAndTypmod(typid, &typmod);
	elem = get_element_type(typid);

	if (OidIsValid(elem) && typid != INT2VECTOROID && typid != OIDVECTOROID)
		return psprintf("{\"type\": \"array\", \"items\": [\"null\", %s]}", avro_type_of(elem, typmod));
	switch (typid)
	{
		case BOOLOID:
			return "\"boolean\"";
		case INT2OID:
		case INT4OID:
			return "\"int\"";
		case INT8OID:
			return "\"long\"";
		case FLOAT4OID:
			return "\"float\"";
		case FLOAT8OID:
			return "\"double\"";
		case BYTEAOID:
			return "\"bytes\"";
		case NUMERICOID:
			if (typmod >= (int32) VARHDRSZ)
			{
				/* as numeric.c packs them: the scale is signed, 11 bits */
				int			precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
				int			scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;

				if (scale >= 0 && scale <= precision)
					return psprintf("{\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": %d, \"scale\": %d}",
									precision, scale);
			}
			return "\"string\"";
		case DATEOID:
			return "{\"type\": \"int\", \"logicalType\": \"date\"}";
		case TIMEOID:
			return "{\"type\": \"long\", \"logicalType\": \"time-micros\"}";
		case TIMESTAMPTZOID:
			return "{\"type\": \"long\", \"logicalType\": \"timestamp-micros\"}";
		case TIMESTAMPOID:
			return "{\"type\": \"long\", \"logicalType\": \"local-timestamp-micros\"}";
		case UUIDOID:
			return "{\"type\": \"string\", \"logicalType\": \"uuid\"}";
		default:
			return "\"string\"";
	}
}

/*
 * ssp_avro_schema_of: the Avro schema of a stream's value (or key) columns:
 * a record named after the stream, each column a nullable field of the type
 * that holds it, dotted "field" paths as nested records.  For auto_register.
 */
char *
ssp_avro_schema_of(SspStream *stream, SspSource source)
{
	StringInfoData buf;
	StringInfoData name;
	int			i;
	int			n = 0;
	const char *p;
	const char *fname;

	/* an Avro name: letters, digits, underscores, not starting with a digit */
	initStringInfo(&name);
	for (p = stream->relname; *p; p++)
		appendStringInfoChar(&name, isalnum((unsigned char) *p) && !IS_HIGHBIT_SET(*p) ? *p : '_');
	if (name.len == 0 || isdigit((unsigned char) name.data[0]))
		appendStringInfoString(&name, "_");
	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"type\": \"record\", \"name\": \"%s%s\", \"namespace\": \"ssp\", \"fields\": [",
					 name.data, source == SSP_SRC_KEY ? "_key" : "");
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		if (col->source != source)
			continue;
		if (source == SSP_SRC_VALUE && list_length(col->path) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot derive an Avro schema for column \"%s\" of stream \"%s\", which names a nested field",
							col->name, stream->relname),
					 errhint("Register the subject's schema in the registry.")));
		fname = source == SSP_SRC_KEY ? col->name : strVal(llast(col->path));
		for (p = fname; *p; p++)
			if (!(isalpha((unsigned char) *p) && !IS_HIGHBIT_SET(*p)) && *p != '_' &&
				!(p > fname && isdigit((unsigned char) *p)))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_NAME),
						 errmsg("cannot derive an Avro schema for stream \"%s\": \"%s\" is not an Avro field name",
								stream->relname, fname),
						 errdetail("An Avro name has letters, digits and underscores, and does not start with a digit."),
						 errhint("Register the subject's schema in the registry.")));
		if (n++ > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, "{\"name\": ");
		escape_json(&buf, fname);
		appendStringInfo(&buf, ", \"type\": [\"null\", %s], \"default\": null}",
						 avro_type_of(col->typid, col->typmod));
	}
	appendStringInfoString(&buf, "]}");
	return buf.data;
}
