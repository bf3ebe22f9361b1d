/*-------------------------------------------------------------------------
 *
 * avro.c
 *	  Apache Avro (specification 1.12), read by a decoder of ssp's own:
 *	  values decoded into a stream's columns by field name.  Writer schemas
 *	  are avro_schema.c's, the binary encoding's reading avro_read.c's.
 *
 * A message is decoded with the schema it was written with (its writer
 * schema, from the registry or the stream's option "schema"), and each
 * column takes the field of its name (or of its "field" path), whatever
 * the field's position: a topic whose schema evolved (fields added,
 * removed, reordered, widened) decodes every version, and a column whose
 * field a version lacks is NULL.  A plan (SspAvroPlan) says, for one writer
 * schema and one stream, which fields go to which columns; the fields no
 * column reads are skipped, not converted.
 *
 * Why a decoder of our own rather than libavro (Debian's libavro-dev): it
 * allocates with malloc, reports errors through a global string, and builds
 * a generic value for every field before anything can be skipped; here the
 * encoding is read straight into Datums in palloc'd memory, with ereport.
 * The encoding is small (zig-zag varints, little-endian floats, lengths,
 * blocks), and the hostile cases are bounded: every length against the
 * bytes left, every count against what its items can take, nesting
 * against the stack.
 *
 * Every error about a message is a data exception (class 22, or 54001 for
 * nesting), so a view sends the message to its dead letters.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/jsonapi.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "parser/parse_coerce.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
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

/* Values as text and JSON ------------------------------------------------- */

/* server_string: UTF-8 bytes of a message as a string of the database's encoding. */
static char *
server_string(const uint8 *p, int64 len)
{
	char	   *s = pnstrdup((const char *) p, len);

	if (strlen(s) != len)
		ssp_avro_data_error("a string holds a zero byte");
	return pg_any_to_server(s, len, PG_UTF8);
}

/* decimal_numeric: a decimal's two's-complement big-endian unscaled value. */
static Numeric
decimal_numeric(const uint8 *p, int64 len, int scale)
{
	bool		neg = len > 0 && (p[0] & 0x80);
	uint8	   *mag;
	uint32	   *limbs;
	int			nlimbs = 0;
	StringInfoData digits;
	int64		i;

	if (len == 0)
		return int64_div_fast_to_numeric(0, scale);
	if (len <= 8)
	{
		uint64		u = neg ? ~(uint64) 0 : 0;

		for (i = 0; i < len; i++)
			u = (u << 8) | p[i];
		return int64_div_fast_to_numeric((int64) u, scale);
	}
	if (len > 1024)
		ssp_avro_data_error("a decimal of %lld bytes", (long long) len);
	/* the magnitude, then repeated division by 10^9 */
	mag = palloc(len);
	memcpy(mag, p, len);
	if (neg)
	{
		int			carry = 1;

		for (i = len - 1; i >= 0; i--)
		{
			int			v = (uint8) ~mag[i] + carry;

			mag[i] = (uint8) v;
			carry = v >> 8;
		}
	}
	limbs = palloc(sizeof(uint32) * (len * 8 / 29 + 2));
	for (;;)
	{
		uint64		rem = 0;
		bool		zero = true;

		for (i = 0; i < len; i++)
		{
			uint64		cur = (rem << 8) | mag[i];

			mag[i] = (uint8) (cur / 1000000000);
			rem = cur % 1000000000;
			zero &= mag[i] == 0;
		}
		limbs[nlimbs++] = (uint32) rem;
		if (zero)
			break;
	}
	initStringInfo(&digits);
	if (neg)
		appendStringInfoChar(&digits, '-');
	appendStringInfo(&digits, "%u", limbs[nlimbs - 1]);
	for (i = nlimbs - 2; i >= 0; i--)
		appendStringInfo(&digits, "%09u", limbs[i]);
	if (scale > 0)
	{
		int			start = neg ? 1 : 0;
		int			ndig = digits.len - start;
		StringInfoData s;

		initStringInfo(&s);
		appendBinaryStringInfo(&s, digits.data, start);
		if (ndig <= scale)
		{
			appendStringInfoString(&s, "0.");
			appendStringInfoSpaces(&s, scale - ndig);
			for (i = 0; i < scale - ndig; i++)
				s.data[s.len - scale + ndig + i] = '0';
			appendStringInfoString(&s, digits.data + start);
		}
		else
		{
			appendBinaryStringInfo(&s, digits.data + start, ndig - scale);
			appendStringInfoChar(&s, '.');
			appendStringInfoString(&s, digits.data + start + ndig - scale);
		}
		return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(s.data),
												   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	}
	return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(digits.data),
											   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
}

/* instant: a timestamp logical type's value as a Postgres timestamp (µs since 2000). */
static Timestamp
instant(SspAvroType *t, int64 v)
{
	int64		us;

	switch (t->logical)
	{
		case AL_TS_MILLIS:
		case AL_LOCAL_TS_MILLIS:
			if (pg_mul_s64_overflow(v, 1000, &us))
				goto out_of_range;
			break;
		case AL_TS_NANOS:
		case AL_LOCAL_TS_NANOS:
			us = v / 1000 - (v % 1000 < 0 ? 1 : 0);
			break;
		default:
			us = v;
	}
	if (pg_sub_s64_overflow(us, SSP_UNIX_EPOCH_US, &us) || !IS_VALID_TIMESTAMP(us))
		goto out_of_range;
	return us;

out_of_range:
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of range: %lld in Avro %s", (long long) v,
					ssp_avro_kind_names[t->kind])));
	return 0;
}

static bool
is_timestamp(SspAvroType *t)
{
	return t->logical >= AL_TS_MILLIS && t->logical <= AL_LOCAL_TS_NANOS;
}

static bool
is_local(SspAvroType *t)
{
	return t->logical >= AL_LOCAL_TS_MILLIS && t->logical <= AL_LOCAL_TS_NANOS;
}

/* logical_datum: a logical type's value as its natural Postgres datum and type. */
static Datum
logical_datum(SspAvroType *t, int64 v, Oid *typid)
{
	if (is_timestamp(t))
	{
		*typid = is_local(t) ? TIMESTAMPOID : TIMESTAMPTZOID;
		return TimestampGetDatum(instant(t, v));
	}
	if (t->logical == AL_DATE)
	{
		int64		d = v + (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE);

		if (!IS_VALID_DATE(d))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("date out of range: %lld days since 1970 in an Avro date", (long long) v)));
		*typid = DATEOID;
		return DateADTGetDatum((DateADT) d);
	}
	/* time-millis, time-micros */
	{
		int64		us = t->logical == AL_TIME_MILLIS ? v * 1000 : v;

		if (us < 0 || us > USECS_PER_DAY)
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("time out of range: %lld in an Avro time", (long long) v)));
		*typid = TIMEOID;
		return TimeADTGetDatum(us);
	}
}

static Datum
duration_datum(const uint8 *p)
{
	Interval   *iv = palloc(sizeof(Interval));
	uint32		m = p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32) p[3] << 24);
	uint32		d = p[4] | (p[5] << 8) | (p[6] << 16) | ((uint32) p[7] << 24);
	uint32		ms = p[8] | (p[9] << 8) | (p[10] << 16) | ((uint32) p[11] << 24);

	if (m > PG_INT32_MAX || d > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("interval out of range in an Avro duration")));
	iv->month = (int32) m;
	iv->day = (int32) d;
	iv->time = (int64) ms * 1000;
	return IntervalPGetDatum(iv);
}

/* ssp_avro_text_of: a value as its type's output function writes it. */
char *
ssp_avro_text_of(Datum d, Oid typid)
{
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(typid, &out, &varlena);
	return OidOutputFunctionCall(out, d);
}

static void avro_json(SspAvroType *t, SspAvroReader *r, StringInfo buf);

/* json_bytes: bytes as a JSON string of bytea's text, "\\x0102" (JSON cannot hold a zero byte). */
static void
json_bytes(StringInfo buf, const uint8 *p, int64 len)
{
	static const char hex[] = "0123456789abcdef";
	int64		i;

	appendStringInfoString(buf, "\"\\\\x");
	for (i = 0; i < len; i++)
	{
		appendStringInfoChar(buf, hex[p[i] >> 4]);
		appendStringInfoChar(buf, hex[p[i] & 0xf]);
	}
	appendStringInfoChar(buf, '"');
}

static void
json_logical(StringInfo buf, SspAvroType *t, int64 v)
{
	Oid			typid;
	Datum		d = logical_datum(t, v, &typid);
	char		tmp[MAXDATELEN + 1];

	if (typid == TIMEOID)
		escape_json(buf, ssp_avro_text_of(d, typid));
	else
		escape_json(buf, JsonEncodeDateTime(tmp, d, typid, NULL));
}

/* avro_json: a value as JSON text, for json and jsonb columns and composites of them. */
static void
avro_json(SspAvroType *t, SspAvroReader *r, StringInfo buf)
{
	int64		len;
	int64		n;
	const uint8 *p;
	bool		first = true;
	int			i;

	switch (t->kind)
	{
		case AV_NULL:
			appendStringInfoString(buf, "null");
			break;
		case AV_BOOLEAN:
			appendStringInfoString(buf, ssp_avro_boolean(r) ? "true" : "false");
			break;
		case AV_INT:
		case AV_LONG:
			{
				int64		v = t->kind == AV_INT ? ssp_avro_int(r) : ssp_avro_long(r);

				if (t->logical != AL_NONE)
					json_logical(buf, t, v);
				else
					appendStringInfo(buf, INT64_FORMAT, v);
				break;
			}
		case AV_FLOAT:
		case AV_DOUBLE:
			{
				double		d = t->kind == AV_FLOAT ? ssp_avro_float(r) : ssp_avro_double(r);

				if (isnan(d) || isinf(d))
					escape_json(buf, float8out_internal(d));
				else
					appendStringInfoString(buf, float8out_internal(d));
				break;
			}
		case AV_STRING:
			p = ssp_avro_bytes(r, &len);
			escape_json(buf, server_string(p, len));
			break;
		case AV_BYTES:
		case AV_FIXED:
			if (t->kind == AV_BYTES)
				p = ssp_avro_bytes(r, &len);
			else
				p = ssp_avro_fixed(r, len = t->n);
			if (t->logical == AL_DECIMAL)
				appendStringInfoString(buf, DatumGetCString(DirectFunctionCall1(numeric_out,
																				NumericGetDatum(decimal_numeric(p, len, t->scale)))));
			else if (t->logical == AL_UUID)
				escape_json(buf, ssp_avro_text_of(UUIDPGetDatum((pg_uuid_t *) p), UUIDOID));
			else if (t->logical == AL_DURATION)
				escape_json(buf, ssp_avro_text_of(duration_datum(p), INTERVALOID));
			else
				json_bytes(buf, p, len);
			break;
		case AV_ENUM:
			n = ssp_avro_long(r);
			if (n < 0 || n >= t->n)
				ssp_avro_data_error("enum symbol %lld of %d", (long long) n, t->n);
			escape_json(buf, t->names[n]);
			break;
		case AV_RECORD:
			ssp_avro_enter(r);
			ssp_avro_count(r, t->n);
			appendStringInfoChar(buf, '{');
			for (i = 0; i < t->n; i++)
			{
				if (i > 0)
					appendStringInfoString(buf, ", ");
				escape_json(buf, t->names[i]);
				appendStringInfoString(buf, ": ");
				avro_json(t->types[i], r, buf);
			}
			appendStringInfoChar(buf, '}');
			r->depth--;
			break;
		case AV_UNION:
			ssp_avro_enter(r);
			avro_json(t->types[ssp_avro_branch(r, t)], r, buf);
			r->depth--;
			break;
		case AV_ARRAY:
		case AV_MAP:
			ssp_avro_enter(r);
			appendStringInfoChar(buf, t->kind == AV_ARRAY ? '[' : '{');
			while ((n = ssp_avro_block(r, t->types[0])) > 0)
			{
				CHECK_FOR_INTERRUPTS();
				while (n-- > 0)
				{
					if (!first)
						appendStringInfoString(buf, ", ");
					first = false;
					if (t->kind == AV_MAP)
					{
						p = ssp_avro_bytes(r, &len);
						escape_json(buf, server_string(p, len));
						appendStringInfoString(buf, ": ");
					}
					avro_json(t->types[0], r, buf);
				}
			}
			appendStringInfoChar(buf, t->kind == AV_ARRAY ? ']' : '}');
			r->depth--;
			break;
	}
}

/* Values into columns ------------------------------------------------------ */

/* A column, an array's element or a composite's attribute: what a value becomes. */
typedef struct Target
{
	SspColumn  *col;			/* typid, typmod, input function */
	int16		typlen;			/* arrays: the element's */
	bool		typbyval;
	char		typalign;
	struct Target *elem;		/* arrays: the element's */
	bool		subarrays;		/* arrays: nested arrays are dimensions */
	struct Target *base;		/* domains: the base type's */
	TupleDesc	desc;			/* composites */
	struct Target *atts;		/* composites: per attribute */
	bool		completed;		/* complete_target has run */
	MemoryContext cxt;			/* where the plan lives, and all of this */
} Target;

static Target *
make_target(Oid typid, int32 typmod)
{
	Target	   *tg = palloc0(sizeof(Target));
	SspColumn  *col = palloc0(sizeof(SspColumn));
	Oid			func;

	tg->cxt = CurrentMemoryContext;
	col->typid = typid;
	col->typmod = typmod;
	col->basetypmod = typmod;
	col->basetype = getBaseTypeAndTypmod(typid, &col->basetypmod);
	col->cxt = tg->cxt;
	getTypeInputInfo(typid, &func, &col->ioparam);
	fmgr_info(func, &col->infunc);
	col->category = TypeCategory(typid);
	if (col->category == TYPCATEGORY_ARRAY)
		col->elemtype = get_element_type(typid);
	tg->col = col;
	return tg;
}

/*
 * complete_target: what a domain's base type, an array's elements or a
 * composite's attributes become, once, in the memory of the target itself
 * (the plan's).
 */
static void
complete_target(Target *tg)
{
	SspColumn  *col = tg->col;
	MemoryContext old;

	if (tg->completed)
		return;
	old = MemoryContextSwitchTo(tg->cxt);

	if (col->basetype != col->typid)
	{
		/* a domain: a value is read as its base type's, then checked */
		if (tg->base == NULL)
			tg->base = make_target(col->basetype, col->basetypmod);
	}
	else if (OidIsValid(col->elemtype) && tg->elem == NULL)
	{
		Oid			elembase;

		tg->elem = make_target(col->elemtype, col->typmod);
		get_typlenbyvalalign(col->elemtype, &tg->elem->typlen, &tg->elem->typbyval,
							 &tg->elem->typalign);
		/*
		 * Avro arrays of arrays are the dimensions of a multidimensional
		 * array, unless an element takes an array whole: json and jsonb
		 * (a JSON array), and a domain over an array type.
		 */
		elembase = tg->elem->col->basetype;
		tg->subarrays = elembase != JSONOID && elembase != JSONBOID &&
			!OidIsValid(get_element_type(elembase));
	}
	else if (col->category == TYPCATEGORY_COMPOSITE && tg->desc == NULL)
	{
		int			i;

		tg->desc = lookup_rowtype_tupdesc_copy(col->typid, col->typmod);
		tg->atts = palloc0(sizeof(Target) * Max(tg->desc->natts, 1));
		for (i = 0; i < tg->desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(tg->desc, i);

			if (!att->attisdropped)
				tg->atts[i] = *make_target(att->atttypid, att->atttypmod);
		}
	}
	tg->completed = true;
	MemoryContextSwitchTo(old);
}

static Datum to_datum(SspAvroType *t, SspAvroReader *r, Target *tg, bool *isnull);

static Datum
int_datum(int64 v, Oid typid)
{
	if (typid == INT2OID && (v < PG_INT16_MIN || v > PG_INT16_MAX))
		goto out_of_range;
	if (typid == INT4OID && (v < PG_INT32_MIN || v > PG_INT32_MAX))
		goto out_of_range;
	return typid == INT2OID ? Int16GetDatum((int16) v) :
		typid == INT4OID ? Int32GetDatum((int32) v) : Int64GetDatum(v);

out_of_range:
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value %lld is out of range for type %s", (long long) v,
					format_type_be(typid))));
	return (Datum) 0;
}

static Datum
numeric_typmod(Numeric n, int32 typmod)
{
	if (typmod < 0)
		return NumericGetDatum(n);
	return DirectFunctionCall2(numeric, NumericGetDatum(n), Int32GetDatum(typmod));
}

/* What array_datum gathers: the elements, and the shape of nested arrays. */
typedef struct ArrayShape
{
	int			ndims;			/* -1 until the first element (or empty array) */
	int			dims[MAXDIM];	/* per level: the length of its arrays, or -1 */
	int			n;
	int			cap;
	Datum	   *values;
	bool	   *nulls;
} ArrayShape;

static void
not_rectangular(Target *et)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("cannot decode an Avro array whose sub-arrays differ in shape into an array of %s",
					format_type_be(et->col->typid)),
			 errdetail("Multidimensional arrays must have sub-arrays with matching dimensions.")));
}

/* elements_at: elements (or an empty array) at this level fix the dimensions */
static void
elements_at(ArrayShape *sh, Target *et, int level)
{
	if (sh->ndims < 0)
		sh->ndims = level;
	else if (sh->ndims != level)
		not_rectangular(et);
}

/*
 * array_level: the items of an Avro array at level (0: the value's own)
 * into sh.  With tg->subarrays, an item that is an array (a union's array
 * branch too) is a sub-array: the next dimension; all the arrays of a level
 * must have one length, and the elements must all be at one level.
 */
static void
array_level(SspAvroType *t, SspAvroReader *r, Target *tg, ArrayShape *sh, int level)
{
	Target	   *et = tg->elem;
	int64		count;
	int			len = 0;

	if (level >= MAXDIM)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("number of array dimensions (%d) exceeds the maximum allowed (%d)",
						level + 1, MAXDIM)));
	ssp_avro_enter(r);
	while ((count = ssp_avro_block(r, t->types[0])) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		while (count-- > 0)
		{
			SspAvroType *it = t->types[0];
			bool		branch = false;

			len++;
			if (tg->subarrays && it->kind == AV_UNION)
			{
				/* which branch, to know whether it is a sub-array */
				ssp_avro_enter(r);
				it = it->types[ssp_avro_branch(r, it)];
				branch = true;
			}
			if (tg->subarrays && it->kind == AV_ARRAY)
			{
				if (sh->ndims >= 0 && level + 1 >= sh->ndims)
					not_rectangular(et);	/* a sub-array where elements were */
				array_level(it, r, tg, sh, level + 1);
			}
			else
			{
				elements_at(sh, et, level + 1);
				if (sh->n == sh->cap)
				{
					if (sh->cap >= MaxArraySize / 2)
						ssp_avro_data_error("an array has too many items");
					sh->cap *= 2;
					sh->values = repalloc(sh->values, sizeof(Datum) * sh->cap);
					sh->nulls = repalloc(sh->nulls, sizeof(bool) * sh->cap);
				}
				sh->values[sh->n] = to_datum(it, r, et, &sh->nulls[sh->n]);
				sh->n++;
			}
			if (branch)
				r->depth--;
		}
	}
	r->depth--;
	if (len == 0)
		elements_at(sh, et, level + 1); /* an empty array: the innermost level */
	if (sh->dims[level] < 0)
		sh->dims[level] = len;
	else if (sh->dims[level] != len)
		not_rectangular(et);
}

/*
 * array_datum: an Avro array into a Postgres array of the target's
 * elements; arrays of arrays into a multidimensional one (as INSERT writes
 * it), if the elements do not take arrays themselves.
 */
static Datum
array_datum(SspAvroType *t, SspAvroReader *r, Target *tg)
{
	Target	   *et = tg->elem;
	ArrayShape	sh;
	int			lbs[MAXDIM];
	int			i;

	sh.ndims = -1;
	for (i = 0; i < MAXDIM; i++)
	{
		sh.dims[i] = -1;
		lbs[i] = 1;
	}
	sh.n = 0;
	sh.cap = 16;
	sh.values = palloc(sizeof(Datum) * sh.cap);
	sh.nulls = palloc(sizeof(bool) * sh.cap);
	array_level(t, r, tg, &sh, 0);
	if (sh.n == 0)
		return PointerGetDatum(construct_empty_array(et->col->typid));
	return PointerGetDatum(construct_md_array(sh.values, sh.nulls, sh.ndims, sh.dims, lbs,
											  et->col->typid, et->typlen, et->typbyval,
											  et->typalign));
}

/* composite_datum: an Avro record into a composite, attributes by field name. */
static Datum
composite_datum(SspAvroType *t, SspAvroReader *r, Target *tg)
{
	TupleDesc	desc = tg->desc;
	Datum	   *values = palloc0(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	int			f;

	memset(nulls, true, sizeof(bool) * Max(desc->natts, 1));
	ssp_avro_enter(r);
	ssp_avro_count(r, t->n);
	for (f = 0; f < t->n; f++)
	{
		int			a;

		for (a = 0; a < desc->natts; a++)
			if (!TupleDescAttr(desc, a)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, a)->attname), t->names[f]) == 0)
				break;
		if (a < desc->natts)
			values[a] = to_datum(t->types[f], r, &tg->atts[a], &nulls[a]);
		else
			ssp_avro_skip(t->types[f], r);
	}
	r->depth--;
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* scalar_text: a scalar value as text, for the target type's input function. */
static char *
scalar_text(SspAvroType *t, SspAvroReader *r)
{
	const uint8 *p;
	int64		n;

	switch (t->kind)
	{
		case AV_BOOLEAN:
			return pstrdup(ssp_avro_boolean(r) ? "true" : "false");
		case AV_INT:
		case AV_LONG:
			{
				int64		v = t->kind == AV_INT ? ssp_avro_int(r) : ssp_avro_long(r);
				Oid			typid;

				if (t->logical != AL_NONE)
				{
					Datum		d = logical_datum(t, v, &typid);

					return ssp_avro_text_of(d, typid);
				}
				return psprintf(INT64_FORMAT, v);
			}
		case AV_FLOAT:
			return float8out_internal(ssp_avro_float(r));
		case AV_DOUBLE:
			return float8out_internal(ssp_avro_double(r));
		case AV_STRING:
			p = ssp_avro_bytes(r, &n);
			return server_string(p, n);
		case AV_ENUM:
			n = ssp_avro_long(r);
			if (n < 0 || n >= t->n)
				ssp_avro_data_error("enum symbol %lld of %d", (long long) n, t->n);
			return pstrdup(t->names[n]);
		case AV_BYTES:
		case AV_FIXED:
			if (t->kind == AV_BYTES)
				p = ssp_avro_bytes(r, &n);
			else
				p = ssp_avro_fixed(r, n = t->n);
			if (t->logical == AL_DECIMAL)
				return DatumGetCString(DirectFunctionCall1(numeric_out,
														   NumericGetDatum(decimal_numeric(p, n, t->scale))));
			if (t->logical == AL_UUID)
				return ssp_avro_text_of(UUIDPGetDatum((pg_uuid_t *) p), UUIDOID);
			if (t->logical == AL_DURATION)
				return ssp_avro_text_of(duration_datum(p), INTERVALOID);
			{
				bytea	   *b = palloc(VARHDRSZ + n);

				SET_VARSIZE(b, VARHDRSZ + n);
				memcpy(VARDATA(b), p, n);
				return ssp_avro_text_of(PointerGetDatum(b), BYTEAOID);
			}
		default:
			{
				StringInfoData buf;

				initStringInfo(&buf);
				avro_json(t, r, &buf);
				return buf.data;
			}
	}
}

/*
 * to_datum: the value of type t at r as the target's type; *isnull for
 * Avro null (a union's null branch).  Numbers, booleans, strings, bytes
 * and the logical types go straight to the types that hold them; anything
 * else through the target type's input function, from its text (records,
 * maps and arrays as JSON).
 */
static Datum
to_datum(SspAvroType *t, SspAvroReader *r, Target *tg, bool *isnull)
{
	SspColumn  *col = tg->col;
	Oid			typid = col->typid;
	const uint8 *start = r->p;

	*isnull = false;
	if (t->kind == AV_UNION)
	{
		Datum		d;

		ssp_avro_enter(r);
		d = to_datum(t->types[ssp_avro_branch(r, t)], r, tg, isnull);
		r->depth--;
		return d;
	}
	if (t->kind == AV_NULL)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (col->basetype != typid)
	{
		Datum		d;

		/* a domain: the value as its base type's, then checked */
		complete_target(tg);
		d = to_datum(t, r, tg->base, isnull);
		if (!*isnull)
			ssp_domain_check(col, d);
		return d;
	}
	if (typid == JSONBOID || typid == JSONOID)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		avro_json(t, r, &buf);
		return InputFunctionCall(&col->infunc, buf.data, col->ioparam, col->typmod);
	}
	complete_target(tg);
	if (t->kind == AV_ARRAY && tg->elem)
		return array_datum(t, r, tg);
	if (t->kind == AV_RECORD && tg->desc)
		return composite_datum(t, r, tg);

	switch (t->kind)
	{
		case AV_BOOLEAN:
			if (typid == BOOLOID)
				return BoolGetDatum(ssp_avro_boolean(r));
			break;
		case AV_INT:
		case AV_LONG:
			if (t->logical == AL_NONE &&
				(typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == FLOAT8OID ||
				 typid == FLOAT4OID || typid == NUMERICOID || typid == TIMESTAMPTZOID ||
				 typid == TIMESTAMPOID))
			{
				int64		v = t->kind == AV_INT ? ssp_avro_int(r) : ssp_avro_long(r);

				if (typid == FLOAT8OID)
					return Float8GetDatum((double) v);
				if (typid == FLOAT4OID)
					return Float4GetDatum((float) v);
				if (typid == NUMERICOID)
					return numeric_typmod(int64_to_numeric(v), col->typmod);
				if (typid == TIMESTAMPTZOID || typid == TIMESTAMPOID)
				{
					/* milliseconds since 1970, as for JSON numbers */
					SspAvroType ms = {.kind = AV_LONG,.logical = AL_TS_MILLIS};
					Timestamp	ts = instant(&ms, v);

					return ssp_typmod_datum(typid, col->typmod, typid == TIMESTAMPOID ?
											DirectFunctionCall1(timestamptz_timestamp,
																TimestampTzGetDatum(ts)) :
											TimestampTzGetDatum(ts));
				}
				return int_datum(v, typid);
			}
			if (t->logical != AL_NONE)
			{
				int64		v = t->kind == AV_INT ? ssp_avro_int(r) : ssp_avro_long(r);
				Oid			natural;
				Datum		d = logical_datum(t, v, &natural);

				/* a timestamp's or a time's precision is the column's */
				if (natural == typid)
					return ssp_typmod_datum(typid, col->typmod, d);
				if (natural == TIMESTAMPTZOID && typid == TIMESTAMPOID)
					return ssp_typmod_datum(typid, col->typmod,
											DirectFunctionCall1(timestamptz_timestamp, d));
				if (natural == TIMESTAMPOID && typid == TIMESTAMPTZOID)
					return ssp_typmod_datum(typid, col->typmod,
											DirectFunctionCall1(timestamp_timestamptz, d));
				{
					char	   *text = ssp_avro_text_of(d, natural);

					return ssp_text_input(col, text, strlen(text));
				}
			}
			break;
		case AV_FLOAT:
		case AV_DOUBLE:
			if (typid == FLOAT8OID || typid == FLOAT4OID || typid == NUMERICOID)
			{
				double		d = t->kind == AV_FLOAT ? ssp_avro_float(r) : ssp_avro_double(r);

				if (typid == FLOAT8OID)
					return Float8GetDatum(d);
				if (typid == NUMERICOID)
					return numeric_typmod(DatumGetNumeric(DirectFunctionCall1(float8_numeric,
																			  Float8GetDatum(d))),
										  col->typmod);
				if (isinf((float) d) && !isinf(d))
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("value out of range: overflow")));
				return Float4GetDatum((float) d);
			}
			break;
		case AV_STRING:
			if (typid == TEXTOID || typid == BYTEAOID)
			{
				int64		len;
				const uint8 *p = ssp_avro_bytes(r, &len);

				if (typid == BYTEAOID)
					return ssp_text_input(col, (const char *) p, len);
				return PointerGetDatum(cstring_to_text(server_string(p, len)));
			}
			break;
		case AV_BYTES:
		case AV_FIXED:
			{
				int64		len;
				const uint8 *p = t->kind == AV_BYTES ? ssp_avro_bytes(r, &len) : ssp_avro_fixed(r, len = t->n);

				if (t->logical == AL_DECIMAL && (typid == NUMERICOID || typid == FLOAT8OID))
				{
					Numeric		n = decimal_numeric(p, len, t->scale);

					if (typid == FLOAT8OID)
						return DirectFunctionCall1(numeric_float8, NumericGetDatum(n));
					return numeric_typmod(n, col->typmod);
				}
				if (t->logical == AL_UUID && typid == UUIDOID)
				{
					pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

					memcpy(u, p, 16);
					return UUIDPGetDatum(u);
				}
				if (t->logical == AL_DURATION && typid == INTERVALOID)
					return ssp_typmod_datum(typid, col->typmod, duration_datum(p));
				if (typid == BYTEAOID && t->logical != AL_DECIMAL)
					return ssp_text_input(col, (const char *) p, len);
				r->p = start;	/* the rest from its text: read it again */
				break;
			}
		default:
			break;
	}
	/* through the text representation */
	{
		char	   *s = scalar_text(t, r);

		return ssp_text_input(col, s, strlen(s));
	}
}

/* Plans --------------------------------------------------------------------- */

/* Where the columns are in a value of one type of the writer schema. */
typedef struct PlanNode
{
	List	   *targets;		/* Target of each column that takes this value */
	struct PlanNode **fields;	/* record: per field, NULL: skipped */
	struct PlanNode **branches; /* union: per branch, NULL: skipped */
} PlanNode;

struct SspAvroPlan
{
	SspStream  *stream;
	SspSource	source;
	SspAvroType *writer;
	PlanNode   *root;
};

static PlanNode *
new_node(void)
{
	return palloc0(sizeof(PlanNode));
}

/* find_field: the field of a record named name: exactly, else an alias, else case-insensitively. */
static int
find_field(SspAvroType *t, const char *name)
{
	int			i;
	int			found = -1;
	ListCell   *lc;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->names[i], name) == 0)
			return i;
	for (i = 0; i < t->n; i++)
		foreach(lc, t->aliases[i])
			if (strcmp(strVal(lfirst(lc)), name) == 0)
			return i;
	for (i = 0; i < t->n; i++)
		if (pg_strcasecmp(t->names[i], name) == 0)
		{
			if (found >= 0)
				return -1;		/* two match: neither */
			found = i;
		}
	return found;
}

static void
add_path(PlanNode **node, SspAvroType *t, List *path, int pos, int column, SspStream *stream)
{
	if (*node == NULL)
		*node = new_node();
	if (pos == list_length(path))
	{
		Target	   *tg = palloc0(sizeof(Target));

		tg->col = &stream->columns[column];
		tg->cxt = stream->cxt;
		(*node)->targets = lappend((*node)->targets, tg);
		return;
	}
	if (t->kind == AV_UNION)
	{
		int			b;

		if ((*node)->branches == NULL)
			(*node)->branches = palloc0(sizeof(PlanNode *) * t->n);
		for (b = 0; b < t->n; b++)
			if (t->types[b]->kind == AV_RECORD)
				add_path(&(*node)->branches[b], t->types[b], path, pos, column, stream);
		return;
	}
	if (t->kind == AV_RECORD)
	{
		int			f = find_field(t, strVal(list_nth(path, pos)));

		if (f < 0)
			return;				/* not in this version of the schema: NULL */
		if ((*node)->fields == NULL)
			(*node)->fields = palloc0(sizeof(PlanNode *) * Max(t->n, 1));
		add_path(&(*node)->fields[f], t->types[f], path, pos + 1, column, stream);
	}
	/* a path into a scalar, an array or a map: the column stays NULL */
}

static bool
has_record(SspAvroType *t)
{
	int			b;

	if (t->kind == AV_RECORD)
		return true;
	if (t->kind == AV_UNION)
		for (b = 0; b < t->n; b++)
			if (t->types[b]->kind == AV_RECORD)
				return true;
	return false;
}

/*
 * ssp_avro_plan: how values written with writer go into the stream's
 * columns from source (its value or key), made once per writer schema and
 * kept in the stream (its avro_plans), in its memory.  A writer schema
 * that is not a record gives its whole value to the one column of that
 * source.
 */
SspAvroPlan *
ssp_avro_plan(SspStream *stream, SspSource source, SspAvroType *writer)
{
	MemoryContext old;
	SspAvroPlan *plan;
	int			ncols = 0;
	int			last = -1;
	int			i;
	ListCell   *lc;

	foreach(lc, stream->avro_plans)
	{
		plan = lfirst(lc);
		if (plan->source == source && plan->writer == writer)
			return plan;
	}
	old = MemoryContextSwitchTo(stream->cxt);
	plan = palloc0(sizeof(SspAvroPlan));

	plan->stream = stream;
	plan->source = source;
	plan->writer = writer;
	for (i = 0; i < stream->ncolumns; i++)
		if (stream->columns[i].source == source)
		{
			ncols++;
			last = i;
		}
	if (!has_record(writer))
	{
		if (ncols != 1)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the Avro schema of the message %s is a %s, not a record",
							source == SSP_SRC_KEY ? "key" : "value", ssp_avro_kind_names[writer->kind]),
					 errdetail("Stream \"%s\" has %d %s columns; a schema that is not a record fills exactly one.",
							   stream->relname, ncols, source == SSP_SRC_KEY ? "key" : "value")));
		plan->root = new_node();
		if (!stream->needed || stream->needed[last])
		{
			Target	   *tg = palloc0(sizeof(Target));

			tg->col = &stream->columns[last];
			tg->cxt = stream->cxt;
			plan->root->targets = list_make1(tg);
		}
	}
	else
	{
		for (i = 0; i < stream->ncolumns; i++)
		{
			SspColumn  *col = &stream->columns[i];

			if (col->source != source || (stream->needed && !stream->needed[i]))
				continue;
			add_path(&plan->root, writer,
					 source == SSP_SRC_KEY ? list_make1(makeString(col->name)) : col->path,
					 0, i, stream);
		}
		if (plan->root == NULL)
			plan->root = new_node();
	}
	stream->avro_plans = lcons(plan, stream->avro_plans);
	MemoryContextSwitchTo(old);
	return plan;
}

static void
decode_node(SspAvroPlan *plan, PlanNode *n, SspAvroType *t, SspAvroReader *r,
			Datum *values, bool *nulls, const char **column)
{
	if (n->targets != NIL)
	{
		const uint8 *start = r->p;
		ListCell   *lc;

		/* each column of this value reads it, and so do the columns inside it */
		foreach(lc, n->targets)
		{
			Target	   *tg = lfirst(lc);
			SspColumn  *col = tg->col;

			r->p = start;
			*column = col->name;
			values[col->attnum - 1] = to_datum(t, r, tg, &nulls[col->attnum - 1]);
			*column = NULL;
		}
		if (n->fields == NULL && n->branches == NULL)
			return;
		r->p = start;
	}
	if (n->fields && t->kind == AV_RECORD)
	{
		int			i;

		ssp_avro_enter(r);
		ssp_avro_count(r, t->n);
		for (i = 0; i < t->n; i++)
		{
			if (n->fields[i])
				decode_node(plan, n->fields[i], t->types[i], r, values, nulls, column);
			else
				ssp_avro_skip(t->types[i], r);
		}
		r->depth--;
	}
	else if (n->branches && t->kind == AV_UNION)
	{
		int			b = ssp_avro_branch(r, t);

		if (n->branches[b])
			decode_node(plan, n->branches[b], t->types[b], r, values, nulls, column);
		else
			ssp_avro_skip(t->types[b], r);
	}
	else
		ssp_avro_skip(t, r);
}

/*
 * ssp_avro_decode: a value (or key) in Avro's binary encoding, written with
 * the plan's writer schema, into values/nulls (indexed by attnum - 1) of the
 * plan's columns; *column names the column being converted, for the error
 * context.  Every byte must belong to the value.
 */
void
ssp_avro_decode(SspAvroPlan *plan, const char *data, size_t len,
				Datum *values, bool *nulls, const char **column)
{
	SspAvroReader		r;

	r.p = (const uint8 *) data;
	r.end = r.p + len;
	r.depth = 0;
	r.values = 0;
	decode_node(plan, plan->root, plan->writer, &r, values, nulls, column);
	if (r.p != r.end)
		ssp_avro_data_error("%lld bytes are left after the value", (long long) (r.end - r.p));
}
