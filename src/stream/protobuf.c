/*-------------------------------------------------------------------------
 *
 * protobuf.c
 *	  Protobuf in the backend: a registry's schema with its references,
 *	  messages read as JSON (protobuf_read.c), and rows written: the row as
 *	  JSON (encode.c writes it as for format json), then each key as the
 *	  field of its name (or JSON name) in Protobuf's binary encoding, as
 *	  Google's JSON parser would.  A key the message has no field for is an
 *	  error, never dropped.  And the .proto of a stream's columns, for
 *	  auto_register.  Protobuf's strings are UTF-8: converted from and to
 *	  the database encoding.  A domain's values are its base type's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "common/shortest_dec.h"
#include "stream/protobuf.h"
#include "stream/stream.h"
#include "stream/protobuf_internal.h"

/* Reading --------------------------------------------------------------- */

/* ssp_pb_parse: a schema's text with its references' (each before its users) */
SspPbSchema *
ssp_pb_parse(List *references, const char *text)
{
	const char **refs = palloc(sizeof(char *) * Max(list_length(references), 1));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, references)
		refs[n++] = lfirst(lc);
	return ssp_pb_parse_texts(n, refs, text);
}

SspPbMessage *
ssp_pb_framed(SspPbSchema *schema, const char **data, size_t *len)
{
	return ssp_pb_read_indexes(schema, data, len);
}

void
ssp_pb_json(SspPbMessage *m, const char *data, size_t len,
			const char *const *only, int nonly, StringInfo out)
{
	ssp_pb_to_json(m, data, len, only, nonly, out);
}

/*
 * ssp_pb_plan: how the columns of source (a stream's value or key) are
 * read from messages of type m: a column whose path names a top-level
 * field that ssp_pb_values reads, and that is not json or jsonb, straight
 * from the message; the others from the message written as JSON, of only
 * the top-level fields they need.  Made once per message type and source,
 * kept in the stream's memory.
 */
SspPbPlan *
ssp_pb_plan(SspStream *stream, SspSource source, SspPbMessage *m)
{
	MemoryContext old;
	SspPbPlan  *plan;
	ListCell   *lc;
	int			i;

	foreach(lc, stream->pb_plans)
	{
		plan = lfirst(lc);
		if (plan->source == source && plan->message == m)
			return plan;
	}
	old = MemoryContextSwitchTo(stream->cxt);
	plan = palloc0(sizeof(SspPbPlan));
	plan->source = source;
	plan->message = m;
	plan->fields = palloc(sizeof(int) * Max(stream->ncolumns, 1));
	plan->columns = palloc(sizeof(int) * Max(stream->ncolumns, 1));
	plan->values = palloc(sizeof(SspPbValue) * Max(stream->ncolumns, 1));
	plan->direct = palloc0(sizeof(bool) * Max(stream->ncolumns, 1));
	plan->only = palloc(sizeof(char *) * Max(stream->ncolumns, 1));
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];
		List	   *path;
		const char *first;
		SspPbField *f = NULL;
		int			k;

		if (col->source != source || (stream->needed && !stream->needed[i]))
			continue;
		/* a key column is the key's field of its name */
		path = source == SSP_SRC_KEY ? list_make1(makeString(col->name)) : col->path;
		first = strVal(linitial(path));
		for (k = 0; k < m->nfields; k++)
			if (strcmp(m->fields[k].name, first) == 0)
				f = &m->fields[k];
		if (m->wk == PBW_NONE && list_length(path) == 1 &&
			(f == NULL || ssp_pb_direct(f)) &&
			col->basetype != JSONOID && col->basetype != JSONBOID)
		{
			plan->direct[i] = true;
			if (f == NULL)
				continue;		/* no such field: NULL */
			plan->fields[plan->ndirect] = f - m->fields;
			plan->columns[plan->ndirect++] = i;
			continue;
		}
		/* through JSON: the top-level field, once */
		for (k = 0; k < plan->nonly; k++)
			if (strcmp(plan->only[k], first) == 0)
				break;
		if (k == plan->nonly)
			plan->only[plan->nonly++] = pstrdup(first);
	}
	stream->pb_plans = lcons(plan, stream->pb_plans);
	MemoryContextSwitchTo(old);
	return plan;
}

/*
 * value_text: a value's text as the JSON path reads it (a JSON string's
 * contents, or a number's or a boolean's token), *number if JSON writes it
 * as a number.
 */
static char *
value_text(SspPbValue *v, bool *number)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];
	StringInfoData out;
	size_t		k;

	*number = false;
	switch (v->kind)
	{
		case PBV_INT:
			*number = true;
			return psprintf(INT64_FORMAT, v->i);
		case PBV_UINT:
			*number = true;
			return psprintf(UINT64_FORMAT, v->u);
		case PBV_DOUBLE:
		case PBV_FLOAT:
			{
				double		d = v->kind == PBV_FLOAT ? v->f : v->d;

				if (isnan(d))
					return pstrdup("NaN");
				if (isinf(d))
					return pstrdup(d > 0 ? "Infinity" : "-Infinity");
				*number = true;
				if (v->kind == PBV_FLOAT)
					float_to_shortest_decimal_buf(v->f, buf);
				else
					double_to_shortest_decimal_buf(v->d, buf);
				return pstrdup(buf);
			}
		case PBV_BOOL:
			return pstrdup(v->i ? "true" : "false");
		case PBV_ENUM:
			if (v->name)
				return pstrdup(v->name);
			*number = true;
			return psprintf("%d", (int32) v->i);
		case PBV_STRING:
			return pnstrdup((const char *) v->p, v->len);
		case PBV_BYTES:
			initStringInfo(&out);
			appendStringInfoString(&out, "\\x");
			for (k = 0; k < v->len; k++)
				appendStringInfo(&out, "%02x", v->p[k]);
			return out.data;
		case PBV_TIMESTAMP:
			initStringInfo(&out);
			ssp_pb_timestamp_text(v->i, v->nanos, &out);
			return out.data;
		case PBV_NULL:
			break;
	}
	return NULL;
}

/*
 * server_string: a string value (UTF-8 without zero bytes, checked) in the
 * database encoding: converted, as Postgres converts a client's text (an
 * error, SQLSTATE 22P05, for a character the database encoding lacks).
 */
static void
server_string(SspPbValue *v)
{
	const char *s;

	if (GetDatabaseEncoding() == PG_UTF8)
		return;
	s = pg_any_to_server((const char *) v->p, (int) v->len, PG_UTF8);
	if (s != (const char *) v->p)
	{
		v->p = (const uint8 *) s;
		v->len = strlen(s);
	}
}

/*
 * checked: a value of a column's base type made here, without its input
 * function: checked against the column's domain, if it has one.
 */
static Datum
checked(SspColumn *col, Datum d)
{
	if (col->basetype != col->typid)
		ssp_domain_check(col, d);
	return d;
}

/*
 * value_datum: a value into a column, as the JSON path would make it from
 * the value's JSON: the common pairs straight (integers into integers,
 * numerics, doubles and timestamps as milliseconds since 1970; doubles into
 * doubles; strings; bytes into bytea; booleans; Timestamps of whole
 * microseconds into timestamptz), the rest from the value's text.  A
 * domain's value is its base type's, checked.
 */
static Datum
value_datum(SspColumn *col, SspPbValue *v, bool *isnull)
{
	Oid			typid = col->basetype;
	int32		typmod = col->basetypmod;
	char	   *text;
	bool		number;

	*isnull = false;
	if (v->kind == PBV_UINT && v->u <= (uint64) PG_INT64_MAX)
	{
		v->kind = PBV_INT;
		v->i = (int64) v->u;
	}
	switch (v->kind)
	{
		case PBV_NULL:
			*isnull = true;
			return (Datum) 0;
		case PBV_INT:
			if (typid == INT8OID)
				return checked(col, Int64GetDatum(v->i));
			if (typid == INT4OID && v->i >= PG_INT32_MIN && v->i <= PG_INT32_MAX)
				return checked(col, Int32GetDatum((int32) v->i));
			if (typid == INT2OID && v->i >= PG_INT16_MIN && v->i <= PG_INT16_MAX)
				return checked(col, Int16GetDatum((int16) v->i));
			if (typid == FLOAT8OID)
				return checked(col, Float8GetDatum((double) v->i));
			if (typid == NUMERICOID && typmod < 0)
				return checked(col, NumericGetDatum(int64_to_numeric(v->i)));
			/* milliseconds since 1970, exactly as a double holds them */
			if ((typid == TIMESTAMPTZOID || typid == TIMESTAMPOID) &&
				v->i >= -(INT64CONST(1) << 53) && v->i <= (INT64CONST(1) << 53))
			{
				Datum		ts = ssp_ms_to_timestamptz(v->i);

				if (typid == TIMESTAMPOID)
					ts = DirectFunctionCall1(timestamptz_timestamp, ts);
				return checked(col, ssp_typmod_datum(typid, typmod, ts));
			}
			break;
		case PBV_DOUBLE:
			if (typid == FLOAT8OID)
				return checked(col, Float8GetDatum(v->d));
			break;
		case PBV_BOOL:
			if (typid == BOOLOID)
				return checked(col, BoolGetDatum(v->i != 0));
			break;
		case PBV_STRING:
			/* UTF-8 without zero bytes, checked: in the database encoding */
			server_string(v);
			if (typid == TEXTOID)
				return checked(col, PointerGetDatum(cstring_to_text_with_len((const char *) v->p,
																			 v->len)));
			if (typid != BYTEAOID)
				return ssp_text_input(col, (const char *) v->p, v->len);
			break;
		case PBV_BYTES:
			if (typid == BYTEAOID)
			{
				bytea	   *b = palloc(VARHDRSZ + v->len);

				SET_VARSIZE(b, VARHDRSZ + v->len);
				memcpy(VARDATA(b), v->p, v->len);
				return checked(col, PointerGetDatum(b));
			}
			break;
		case PBV_TIMESTAMP:
			if (typid == TIMESTAMPTZOID && typmod < 0 && v->nanos % 1000 == 0)
				return checked(col,
							   TimestampTzGetDatum((v->i - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
													SECS_PER_DAY) * USECS_PER_SEC + v->nanos / 1000));
			break;
		default:
			break;
	}
	/* through the column's input function, which checks a domain itself */
	text = value_text(v, &number);
	return ssp_scalar_input(col, text, strlen(text), number);
}

/*
 * ssp_pb_decode: the columns of a plan read straight from a message (data,
 * past its framing) into values/nulls (by attnum - 1); only column index
 * "only" if it is not -1.  *column names the column being converted, for
 * the error context.
 */
void
ssp_pb_decode(SspStream *stream, SspPbPlan *plan, const char *data, size_t len,
			  Datum *values, bool *nulls, int only, const char **column)
{
	int			k;

	/* with no column at all, the message is still read: a malformed one errs */
	if (plan->ndirect == 0 && plan->nonly > 0)
		return;
	ssp_pb_values(plan->message, data, len, plan->ndirect, plan->fields, plan->values);
	for (k = 0; k < plan->ndirect; k++)
	{
		SspColumn  *col = &stream->columns[plan->columns[k]];

		if (only >= 0 && plan->columns[k] != only)
			continue;
		*column = col->name;
		values[col->attnum - 1] = value_datum(col, &plan->values[k], &nulls[col->attnum - 1]);
	}
	*column = NULL;
}

/* Writing --------------------------------------------------------------- */

static void encode_message(SspPbMessage *m, SspPbField *outer, JsonbValue *v, StringInfo out,
						   int depth);

static void
put_varint(StringInfo out, uint64 v)
{
	while (v >= 0x80)
	{
		appendStringInfoChar(out, (char) ((v & 0x7f) | 0x80));
		v >>= 7;
	}
	appendStringInfoChar(out, (char) v);
}

static void
put_tag(StringInfo out, int32 number, int wt)
{
	put_varint(out, ((uint64) number << 3) | wt);
}

static void
put_fixed(StringInfo out, uint64 v, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		appendStringInfoChar(out, (char) ((v >> (8 * i)) & 0xff));
}

static void
put_bytes(StringInfo out, const char *p, size_t len)
{
	put_varint(out, len);
	appendBinaryStringInfo(out, p, len);
}

/* the path of a message among the schema's, as Confluent frames it */
static bool
find_path(SspPbMessage **list, int n, SspPbMessage *m, List **path)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		if (list[i] == m ||
			find_path(list[i]->nested, list[i]->nnested, m, path))
		{
			*path = lcons_int(i, *path);
			return true;
		}
	}
	return false;
}

/*
 * ssp_pb_writer: the message INSERT writes (option "message", else the
 * schema's first) and its message indexes.
 */
SspPbWriter *
ssp_pb_writer(SspPbSchema *schema, const char *message, const char *stream)
{
	SspPbWriter *w = palloc0(sizeof(SspPbWriter));
	List	   *path = NIL;
	ListCell   *lc;

	w->message = message ? ssp_pb_by_name(schema, message) : schema->top[0];
	if (w->message == NULL || w->message->map_entry ||
		!find_path(schema->top, schema->ntop, w->message, &path))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("cannot insert into stream \"%s\": its schema has no message \"%s\"",
						stream, message)));
	initStringInfo(&w->indexes);
	if (list_length(path) == 1 && linitial_int(path) == 0)
		put_varint(&w->indexes, 0);
	else
	{
		put_varint(&w->indexes, (uint64) list_length(path) << 1);
		foreach(lc, path)
			put_varint(&w->indexes, (uint64) lfirst_int(lc) << 1);
	}
	return w;
}

/* write_error(f, fmt, ...): a value field f cannot hold */
#define write_error(f, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_DATATYPE_MISMATCH), \
			 errmsg("cannot write Protobuf field \"%s\": %s", (f)->name, psprintf(__VA_ARGS__))))

/* scalar_text: a JSON scalar's text (a number's, a string's, true/false) */
static char *
scalar_text(SspPbField *f, JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return v->val.boolean ? "true" : "false";
		default:
			write_error(f, "an object or array is not a %s",
						f->type == PB_STRING ? "string" : "number");
	}
	return NULL;
}

static uint64
integer_value(SspPbField *f, JsonbValue *v, bool is_signed, int64 min, uint64 max)
{
	char	   *s = scalar_text(f, v);
	char	   *end;

	errno = 0;
	if (is_signed)
	{
		long long	x = strtoll(s, &end, 10);

		if (errno == 0 && *end == '\0' && end != s && x >= min && (uint64) Max(x, 0) <= max)
			return (uint64) x;
	}
	else
	{
		unsigned long long x = strtoull(s, &end, 10);

		if (errno == 0 && *end == '\0' && end != s && s[0] != '-' && x <= max)
			return x;
	}
	/* 1.0 and 1e2 are integers too, as Google's JSON parser reads them */
	if (v->type == jbvNumeric || v->type == jbvString)
	{
		char	   *dend;
		double		d;

		errno = 0;
		d = strtod(s, &dend);
		if (errno == 0 && *dend == '\0' && dend != s && d == floor(d) &&
			fabs(d) < 9007199254740992.0 &&
			(is_signed ? (d >= (double) min && d <= (double) max) : (d >= 0 && d <= (double) max)))
			return is_signed ? (uint64) (int64) d : (uint64) d;
	}
	write_error(f, "\"%s\" is not an integer in its range", s);
	return 0;
}

static double
double_value(SspPbField *f, JsonbValue *v)
{
	char	   *s = scalar_text(f, v);

	if (v->type == jbvBool)
		write_error(f, "a boolean is not a number");
	if (strcmp(s, "Infinity") == 0)
		return get_float8_infinity();
	if (strcmp(s, "-Infinity") == 0)
		return -get_float8_infinity();
	return DatumGetFloat8(DirectFunctionCall1(float8in, CStringGetDatum(s)));
}

/* scalar: one value of a field of a scalar or enum type, without its tag */
static void
scalar(SspPbField *f, JsonbValue *v, StringInfo out)
{
	switch (f->type)
	{
		case PB_INT32:
			put_varint(out, (uint64) (int64) (int32) integer_value(f, v, true, PG_INT32_MIN, PG_INT32_MAX));
			break;
		case PB_INT64:
			put_varint(out, integer_value(f, v, true, PG_INT64_MIN, PG_INT64_MAX));
			break;
		case PB_UINT32:
			put_varint(out, integer_value(f, v, false, 0, PG_UINT32_MAX));
			break;
		case PB_UINT64:
			put_varint(out, integer_value(f, v, false, 0, PG_UINT64_MAX));
			break;
		case PB_SINT32:
		case PB_SINT64:
			{
				int64		x = (int64) integer_value(f, v, true,
													  f->type == PB_SINT32 ? PG_INT32_MIN : PG_INT64_MIN,
													  f->type == PB_SINT32 ? PG_INT32_MAX : PG_INT64_MAX);

				put_varint(out, ((uint64) x << 1) ^ (uint64) (x >> 63));
				break;
			}
		case PB_FIXED32:
			put_fixed(out, integer_value(f, v, false, 0, PG_UINT32_MAX), 4);
			break;
		case PB_SFIXED32:
			put_fixed(out, integer_value(f, v, true, PG_INT32_MIN, PG_INT32_MAX), 4);
			break;
		case PB_FIXED64:
			put_fixed(out, integer_value(f, v, false, 0, PG_UINT64_MAX), 8);
			break;
		case PB_SFIXED64:
			put_fixed(out, integer_value(f, v, true, PG_INT64_MIN, PG_INT64_MAX), 8);
			break;
		case PB_BOOL:
			{
				char	   *s = scalar_text(f, v);
				bool		b;

				if (!parse_bool(s, &b))
					write_error(f, "\"%s\" is not a boolean", s);
				put_varint(out, b ? 1 : 0);
				break;
			}
		case PB_FLOAT:
			{
				union
				{
					float		f;
					uint32		i;
				}			u;
				double		d = double_value(f, v);

				u.f = (float) d;
				if (isinf(u.f) && !isinf(d))
					write_error(f, "%g is out of range for a float", d);
				put_fixed(out, u.i, 4);
				break;
			}
		case PB_DOUBLE:
			{
				union
				{
					double		d;
					uint64		i;
				}			u;

				u.d = double_value(f, v);
				put_fixed(out, u.i, 8);
				break;
			}
		case PB_ENUM:
			{
				SspPbEnum  *e = f->enumt;
				int			i;

				if (v->type == jbvNumeric)
				{
					put_varint(out, (uint64) (int64) (int32) integer_value(f, v, true, PG_INT32_MIN, PG_INT32_MAX));
					break;
				}
				if (v->type == jbvString)
				{
					char	   *text = scalar_text(f, v);
					char	   *end;
					long		n;

					for (i = 0; i < e->n; i++)
						if (strlen(e->names[i]) == v->val.string.len &&
							memcmp(e->names[i], v->val.string.val, v->val.string.len) == 0)
						{
							put_varint(out, (uint64) (int64) e->numbers[i]);
							return;
						}
					/* a number in text, as Google's JSON parser takes it */
					errno = 0;
					n = strtol(text, &end, 10);
					if (end != text && *end == '\0' && !isspace((unsigned char) text[0]) &&
						errno == 0 && n >= PG_INT32_MIN && n <= PG_INT32_MAX)
					{
						for (i = 0; i < e->n && e->numbers[i] != n; i++)
							;
						/* a closed enum's number must be one of its values */
						if (i < e->n || !e->closed)
						{
							put_varint(out, (uint64) (int64) (int32) n);
							return;
						}
					}
				}
				write_error(f, "\"%s\" is not a value of enum \"%s\"", scalar_text(f, v), e->name);
				break;
			}
		case PB_STRING:
			{
				/* Protobuf's strings are UTF-8 */
				char	   *s = scalar_text(f, v);
				char	   *u = pg_server_to_any(s, strlen(s), PG_UTF8);

				put_bytes(out, u, strlen(u));
				break;
			}
		case PB_BYTES:
			{
				char	   *s = scalar_text(f, v);
				bytea	   *b;

				/* bytea's text: "\x..." hex, or its escape form */
				b = DatumGetByteaPP(DirectFunctionCall1(byteain, CStringGetDatum(s)));
				put_bytes(out, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
				break;
			}
		default:
			write_error(f, "it is not a scalar");
	}
}

static bool
is_container(JsonbValue *v, bool object)
{
	return v->type == jbvBinary &&
		(object ? JsonContainerIsObject(v->val.binary.data) :
		 JsonContainerIsArray(v->val.binary.data));
}

/* one: a field's value (not repeated), with its tag */
static void
one(SspPbField *f, JsonbValue *v, StringInfo out, int depth)
{
	if (f->type == PB_MESSAGE)
	{
		StringInfoData sub;

		initStringInfo(&sub);
		encode_message(f->message, f, v, &sub, depth + 1);
		put_tag(out, f->number, 2);
		put_bytes(out, sub.data, sub.len);
		pfree(sub.data);
		return;
	}
	if (v->type == jbvBinary)
		write_error(f, "an object or array is not a %s", f->type == PB_ENUM ? "enum value" : "scalar");
	switch (f->type)
	{
		case PB_DOUBLE:
		case PB_FIXED64:
		case PB_SFIXED64:
			put_tag(out, f->number, 1);
			break;
		case PB_FLOAT:
		case PB_FIXED32:
		case PB_SFIXED32:
			put_tag(out, f->number, 5);
			break;
		case PB_STRING:
		case PB_BYTES:
			put_tag(out, f->number, 2);
			break;
		default:
			put_tag(out, f->number, 0);
			break;
	}
	scalar(f, v, out);
}

/* field: a field's value from a JSON value (NULL: left out) */
static void
field(SspPbField *f, JsonbValue *v, StringInfo out, int depth)
{
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	e;
	JsonbIteratorToken tok;

	if (v->type == jbvNull)
		return;					/* SQL NULL, or JSON null: the field left out */
	if (f->map)
	{
		if (!is_container(v, true))
			write_error(f, "a map is written from a JSON object");
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			StringInfoData entry;

			if (tok != WJB_KEY)
				continue;
			(void) JsonbIteratorNext(&it, &e, true);
			initStringInfo(&entry);
			one(&f->message->fields[0], &k, &entry, depth);
			if (e.type != jbvNull ||
				(f->message->fields[1].type == PB_MESSAGE &&
				 f->message->fields[1].message->wk == PBW_VALUE))
				one(&f->message->fields[1], &e, &entry, depth);
			put_tag(out, f->number, 2);
			put_bytes(out, entry.data, entry.len);
		}
		return;
	}
	if (f->repeated)
	{
		StringInfoData packed;

		if (!is_container(v, false))
			write_error(f, "a repeated field is written from an array");
		initStringInfo(&packed);
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (e.type == jbvNull &&
				!(f->type == PB_MESSAGE && f->message->wk == PBW_VALUE))
				write_error(f, "a repeated field cannot hold NULL");
			/* a Postgres array of more than one dimension: arrays in an array */
			if (is_container(&e, false) &&
				!(f->type == PB_MESSAGE &&
				  (f->message->wk == PBW_VALUE || f->message->wk == PBW_LIST)))
				write_error(f, "an element of a repeated field cannot be an array (Protobuf has no multidimensional arrays)");
			if (f->packed && f->type != PB_STRING && f->type != PB_BYTES &&
				f->type != PB_MESSAGE)
				scalar(f, &e, &packed);
			else
				one(f, &e, out, depth);
		}
		if (packed.len > 0)
		{
			put_tag(out, f->number, 2);
			put_bytes(out, packed.data, packed.len);
		}
		return;
	}
	one(f, v, out, depth);
}

static SspPbField *
field_named(SspPbMessage *m, const char *name, int len)
{
	int			i;

	for (i = 0; i < m->nfields; i++)
		if ((strlen(m->fields[i].name) == len && memcmp(m->fields[i].name, name, len) == 0) ||
			(strlen(m->fields[i].json_name) == len && memcmp(m->fields[i].json_name, name, len) == 0))
			return &m->fields[i];
	return NULL;
}

/*
 * well_known: a well-known type from its JSON form; errors name the field
 * that holds it (outer), or its own first field at the top
 */
static void
well_known(SspPbMessage *m, SspPbField *outer, JsonbValue *v, StringInfo out, int depth)
{
	SspPbField *f0 = &m->fields[0];
	SspPbField *named = outer ? outer : f0;

	switch (m->wk)
	{
		case PBW_TIMESTAMP:
			{
				char	   *s = scalar_text(named, v);
				TimestampTz ts = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
																		 CStringGetDatum(s),
																		 ObjectIdGetDatum(InvalidOid),
																		 Int32GetDatum(-1)));
				int64		us = ts + SSP_UNIX_EPOCH_US;
				int64		sec = us / USECS_PER_SEC;
				int64		nanos = (us % USECS_PER_SEC) * 1000;

				if (TIMESTAMP_NOT_FINITE(ts))
					write_error(named, "a Timestamp cannot be infinite");
				if (nanos < 0)
				{
					nanos += 1000000000;
					sec--;
				}
				/* Google's range: 0001-01-01 to 9999-12-31 */
				if (sec < INT64CONST(-62135596800) || sec > INT64CONST(253402300799))
					write_error(named, "\"%s\" is out of a Timestamp's range (years 1 to 9999)", s);
				put_tag(out, 1, 0);
				put_varint(out, (uint64) sec);
				if (nanos)
				{
					put_tag(out, 2, 0);
					put_varint(out, (uint64) nanos);
				}
				break;
			}
		case PBW_DURATION:
			{
				char	   *s = scalar_text(named, v);
				Interval   *iv = DatumGetIntervalP(DirectFunctionCall3(interval_in,
																	   CStringGetDatum(s),
																	   ObjectIdGetDatum(InvalidOid),
																	   Int32GetDatum(-1)));
				int64		us = iv->time + ((int64) iv->day + (int64) iv->month * DAYS_PER_MONTH) * USECS_PER_DAY;

				/* Google's range: 10,000 years either way */
				if (us / USECS_PER_SEC < INT64CONST(-315576000000) ||
					us / USECS_PER_SEC > INT64CONST(315576000000))
					write_error(named, "\"%s\" is out of a Duration's range (10,000 years)", s);

				put_tag(out, 1, 0);
				put_varint(out, (uint64) (us / USECS_PER_SEC));
				if (us % USECS_PER_SEC)
				{
					put_tag(out, 2, 0);
					put_varint(out, (uint64) (int64) (int32) ((us % USECS_PER_SEC) * 1000));
				}
				break;
			}
		case PBW_WRAPPER:
			one(f0, v, out, depth);
			break;
		case PBW_STRUCT:
		case PBW_LIST:
			field(f0, v, out, depth);
			break;
		case PBW_VALUE:
			switch (v->type)
			{
				case jbvNull:
					put_tag(out, 1, 0);
					put_varint(out, 0);
					break;
				case jbvNumeric:
					one(&m->fields[1], v, out, depth);
					break;
				case jbvString:
					one(&m->fields[2], v, out, depth);
					break;
				case jbvBool:
					one(&m->fields[3], v, out, depth);
					break;
				default:
					one(&m->fields[is_container(v, true) ? 4 : 5], v, out, depth);
					break;
			}
			break;
		case PBW_FIELD_MASK:
			{
				char	   *s = scalar_text(named, v);
				char	   *path;
				char	   *utf8;
				char	   *save = NULL;

				/* Google's form is lowerCamelCase; the paths are field names */
				for (path = strtok_r(s, ",", &save); path; path = strtok_r(NULL, ",", &save))
				{
					StringInfoData snake;
					const char *c;

					initStringInfo(&snake);
					for (c = path; *c; c++)
					{
						if (*c >= 'A' && *c <= 'Z')
						{
							appendStringInfoChar(&snake, '_');
							appendStringInfoChar(&snake, *c - 'A' + 'a');
						}
						else
							appendStringInfoChar(&snake, *c);
					}
					put_tag(out, 1, 2);
					utf8 = pg_server_to_any(snake.data, snake.len, PG_UTF8);
					put_bytes(out, utf8, utf8 == snake.data ? snake.len : strlen(utf8));
				}
				break;
			}
		case PBW_ANY:
		case PBW_EMPTY:
		case PBW_NONE:
			break;
	}
}

static void
encode_message(SspPbMessage *m, SspPbField *outer, JsonbValue *v, StringInfo out, int depth)
{
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	e;
	JsonbIteratorToken tok;

	if (depth > SSP_PB_MAX_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("cannot write Protobuf message \"%s\": it is nested more than %d deep",
						m->name, SSP_PB_MAX_DEPTH)));
	check_stack_depth();
	if (m->wk != PBW_NONE && m->wk != PBW_ANY && m->wk != PBW_EMPTY)
	{
		well_known(m, outer, v, out, depth);
		return;
	}
	if (!is_container(v, true))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cannot write Protobuf message \"%s\" from a JSON %s", m->name,
						v->type == jbvBinary ? "array" : "scalar")));
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		SspPbField *f;
		char	   *name;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &e, true);
		name = k.val.string.val;
		/* Any's type: "@type" */
		if (m->wk == PBW_ANY && k.val.string.len == 5 && memcmp(name, "@type", 5) == 0)
			f = &m->fields[0];
		else if ((f = field_named(m, name, k.val.string.len)) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("Protobuf message \"%s\" has no field \"%.*s\"",
							m->name, (int) k.val.string.len, name),
					 errhint("Each column written must be a field of the subject's latest schema.")));
		field(f, &e, out, depth);
	}
}

/* ssp_pb_encode: a row, as JSON (encode.c's), in the writer's message */
void
ssp_pb_encode(SspPbWriter *writer, const char *json, StringInfo out)
{
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
	JsonbValue	v;

	v.type = jbvBinary;
	v.val.binary.data = &jb->root;
	v.val.binary.len = VARSIZE(jb) - VARHDRSZ;
	appendBinaryStringInfo(out, writer->indexes.data, writer->indexes.len);
	encode_message(writer->message, NULL, &v, out, 0);
}

/* auto_register -------------------------------------------------------- */

/* pb_type_of: the Protobuf type that holds a Postgres type (not a domain) */
static const char *
pb_type_of(Oid typid)
{
	switch (typid)
	{
		case BOOLOID:
			return "bool";
		case INT2OID:
		case INT4OID:
			return "int32";
		case INT8OID:
			return "int64";
		case FLOAT4OID:
			return "float";
		case FLOAT8OID:
			return "double";
		case BYTEAOID:
			return "bytes";
		case TIMESTAMPTZOID:
			return "google.protobuf.Timestamp";
		case JSONOID:
		case JSONBOID:
			return "google.protobuf.Value";
		default:
			return "string";	/* numeric, date, uuid ...: their text */
	}
}

static bool
proto_name(const char *s)
{
	const char *p;

	if (!(isalpha((unsigned char) s[0]) || s[0] == '_') || IS_HIGHBIT_SET(s[0]))
		return false;
	for (p = s; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '_') || IS_HIGHBIT_SET(*p))
			return false;
	return true;
}

/*
 * ssp_pb_schema_of: a proto3 schema of a stream's value (or key) columns:
 * one message named after the stream, a field per column in column order
 * (NULL stays NULL: scalars are "optional"), arrays repeated.
 */
char *
ssp_pb_schema_of(SspStream *stream, SspSource source)
{
	StringInfoData fields;
	StringInfoData buf;
	StringInfoData name;
	bool		timestamp = false;
	bool		value = false;
	const char *p;
	int			i;
	int			n = 0;

	initStringInfo(&name);
	for (p = stream->relname; *p; p++)
		appendStringInfoChar(&name, isalnum((unsigned char) *p) && !IS_HIGHBIT_SET(*p) ? *p : '_');
	if (isdigit((unsigned char) name.data[0]))
		name.data = psprintf("_%s", name.data);	/* a name begins with a letter or _ */
	initStringInfo(&fields);
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];
		/* a domain's values are written as its base type's */
		Oid			elem = get_element_type(col->basetype);
		const char *type;

		if (col->source != source)
			continue;
		if (source == SSP_SRC_VALUE && list_length(col->path) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot derive a Protobuf schema for column \"%s\" of stream \"%s\", which names a nested field",
							col->name, stream->relname),
					 errhint("Register the subject's schema in the schema registry instead.")));
		p = source == SSP_SRC_VALUE ? strVal(linitial(col->path)) : col->name;
		if (!proto_name(p))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot derive a Protobuf schema for stream \"%s\": \"%s\" is not a Protobuf field name",
							stream->relname, p),
					 errhint("Register the subject's schema in the schema registry instead.")));
		type = pb_type_of(OidIsValid(elem) ? getBaseType(elem) : col->basetype);
		timestamp |= strcmp(type, "google.protobuf.Timestamp") == 0;
		value |= strcmp(type, "google.protobuf.Value") == 0;
		appendStringInfo(&fields, "  %s%s %s = %d;\n",
						 OidIsValid(elem) ? "repeated " :
						 strchr(type, '.') ? "" : "optional ",
						 type, p, ++n);
	}
	initStringInfo(&buf);
	appendStringInfoString(&buf, "syntax = \"proto3\";\n");
	if (timestamp)
		appendStringInfoString(&buf, "import \"google/protobuf/timestamp.proto\";\n");
	if (value)
		appendStringInfoString(&buf, "import \"google/protobuf/struct.proto\";\n");
	appendStringInfo(&buf, "\nmessage %s {\n%s}\n", name.data, fields.data);
	return buf.data;
}
