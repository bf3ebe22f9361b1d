/*-------------------------------------------------------------------------
 *
 * decode.c
 *	  From a Kafka message to a row of its stream: the value in the stream's
 *	  format (json, csv, text, bytea), key columns, and metadata columns.
 *
 * JSON goes first through jsonscan.c, a fast scanner for the common message
 * (an object without string escapes); anything else through Postgres's own
 * parser (common/jsonapi.h) with semantic actions that pick out only the
 * fields the stream's columns name.  Measured
 * against cJSON (test/bench/json_parsers.c, figures in doc/performance.md) it is a
 * little slower (0.85-0.95x), but it keeps numbers exact, where cJSON turns
 * every number into a double and loses bigints over 2^53 and numeric
 * digits; so jsonapi.
 *
 * A message that cannot be decoded raises an error whose context names the
 * stream, topic, partition, offset and column.  ssp_decode_message_lenient
 * turns such errors into NULLs, for streams with on_error 'null'.
 *
 * Everything is allocated in CurrentMemoryContext, which callers reset per
 * message.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/jsonapi.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonfuncs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "stream/isotime.h"
#include "stream/jsonscan.h"
#include "stream/avro.h"
#include "stream/protobuf.h"
#include "registry/registry.h"


typedef struct JsonState
{
	JsonLexContext *lex;
	PathTree   *tree;
	PathNode  **objnode;		/* [level]: path node of the open object */
	PathNode  **fieldnode;		/* [level]: path node of the current field */
	char	  **valstart;		/* [level]: start of the current field's value */
	JsonFound  *found;			/* [column] */
	bool		saw_object;
} JsonState;

/* What the error context callback reports. */
typedef struct DecodeContext
{
	SspStream  *stream;
	SspMessage *msg;
	const char *column;
} DecodeContext;

static void decode_error_context(void *arg);
static char *message_start(const char *text, size_t len);

/* Path trees ------------------------------------------------------------ */

static PathNode *
path_child(PathNode *node, const char *name, bool create)
{
	ListCell   *lc;
	PathNode   *child;

	foreach(lc, node->children)
	{
		child = lfirst(lc);
		if (strcmp(child->name, name) == 0)
			return child;
	}
	if (!create)
		return NULL;
	child = palloc0(sizeof(PathNode));
	child->name = pstrdup(name);
	child->namelen = strlen(name);
	child->column = -1;
	node->children = lappend(node->children, child);
	return child;
}

/* build_paths: the path tree of the columns from source, in cxt. */
static PathTree *
build_paths(SspStream *stream, SspSource source, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	PathTree   *tree = palloc0(sizeof(PathTree));
	int			i;

	tree->root = palloc0(sizeof(PathNode));
	tree->root->column = -1;
	tree->same = palloc(sizeof(int) * Max(stream->ncolumns, 1));
	for (i = 0; i < stream->ncolumns; i++)
		tree->same[i] = -1;
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];
		PathNode   *node = tree->root;
		List	   *path = source == SSP_SRC_KEY ? list_make1(makeString(col->name)) : col->path;
		ListCell   *lc;

		if (col->source != source || (stream->needed && !stream->needed[i]))
			continue;
		foreach(lc, path)
			node = path_child(node, strVal(lfirst(lc)), true);
		/* a column whose path is a prefix of another's still gets its value */
		if (node->column >= 0)
			tree->same[i] = node->column;	/* and two of one path, both */
		else
			node->column = i;
		tree->depth = Max(tree->depth, list_length(path));
	}
	MemoryContextSwitchTo(old);
	return tree;
}

/* JSON semantic actions --------------------------------------------------- */

#define AT(arr, level) ((level) <= st->tree->depth + 1 ? (arr)[(level)] : NULL)

static void
js_object_start(void *state)
{
	JsonState  *st = state;
	int			level = st->lex->lex_level;

	if (level == 0)
	{
		st->saw_object = true;
		st->objnode[0] = st->tree->root;
	}
	else if (level <= st->tree->depth + 1)
		st->objnode[level] = st->fieldnode[level];
}

static void
js_array_start(void *state)
{
	JsonState  *st = state;
	int			level = st->lex->lex_level;

	/* nothing inside an array is on a path */
	if (level + 1 <= st->tree->depth + 1)
		st->fieldnode[level + 1] = NULL;
}

static void
js_field_start(void *state, char *fname, bool isnull)
{
	JsonState  *st = state;
	int			level = st->lex->lex_level;
	PathNode   *parent;
	PathNode   *node = NULL;

	if (level > st->tree->depth + 1)
		return;
	parent = st->objnode[level - 1];
	if (parent)
		node = path_child(parent, fname, false);
	st->fieldnode[level] = node;
	if (node)
		st->valstart[level] = st->lex->token_start;
	if (node && node->children)
		ssp_json_forget_below(node, st->found);
	if (node && node->column >= 0)
	{
		JsonFound  *f = &st->found[node->column];

		/* the last of duplicate fields wins, as in jsonb */
		f->found = true;
		f->type = st->lex->token_type;
		f->scalar = NULL;
		f->scalarlen = 0;
		f->raw = NULL;
	}
}

static void
js_field_end(void *state, char *fname, bool isnull)
{
	JsonState  *st = state;
	int			level = st->lex->lex_level;
	PathNode   *node;

	if (level > st->tree->depth + 1)
		return;
	node = st->fieldnode[level];
	if (node && node->column >= 0)
	{
		JsonFound  *f = &st->found[node->column];

		f->raw = st->valstart[level];
		f->rawlen = st->lex->prev_token_terminator - st->valstart[level];
	}
	st->fieldnode[level] = NULL;
}

static void
js_scalar(void *state, char *token, JsonTokenType tokentype)
{
	JsonState  *st = state;
	int			level = st->lex->lex_level;
	PathNode   *node;

	if (level == 0 || level > st->tree->depth + 1)
		return;
	node = st->fieldnode[level];
	if (node && node->column >= 0)
	{
		st->found[node->column].scalar = token;
		st->found[node->column].scalarlen = strlen(token);
	}
}

/* share_found: what a column found, for the columns of the same path. */
static JsonFound *
share_found(SspStream *stream, PathTree *tree, JsonFound *found)
{
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
		if (tree->same[i] >= 0)
			found[i] = found[tree->same[i]];
	return found;
}

/*
 * parse_json_fields: parse text as a JSON object and find the values of
 * the tree's columns.  Errors on invalid JSON or a value that is not an
 * object.
 */
static JsonFound *
parse_json_fields(SspStream *stream, PathTree *tree, const char *text, size_t len)
{
	JsonState	st;
	JsonSemAction sem;
	JsonFound  *found;
	int			levels = tree->depth + 2;

	if (len > INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("message of %zu bytes is too large to decode", len)));

	/* the common case, fast; anything unusual goes to Postgres's parser */
	found = palloc0(sizeof(JsonFound) * Max(stream->ncolumns, 1));
	if (ssp_json_scan(text, len, tree->root, found))
		return share_found(stream, tree, found);
	memset(found, 0, sizeof(JsonFound) * Max(stream->ncolumns, 1));

	memset(&st, 0, sizeof(st));
	st.lex = makeJsonLexContextCstringLen((char *) text, (int) len,
										  GetDatabaseEncoding(), true);
	st.tree = tree;
	st.objnode = palloc0(sizeof(PathNode *) * levels);
	st.fieldnode = palloc0(sizeof(PathNode *) * levels);
	st.valstart = palloc0(sizeof(char *) * levels);
	st.found = found;

	memset(&sem, 0, sizeof(sem));
	sem.semstate = &st;
	sem.object_start = js_object_start;
	sem.array_start = js_array_start;
	sem.object_field_start = js_field_start;
	sem.object_field_end = js_field_end;
	sem.scalar = js_scalar;

	pg_parse_json_or_ereport(st.lex, &sem);
	if (!st.saw_object)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("message is not a JSON object"),
				 stream->unquoted ? 0 :
				 errdetail("It begins with \"%s\".", message_start(text, len))));
	return share_found(stream, tree, st.found);
}

/*
 * message_start: the first characters of a message, to quote in an
 * error: up to MESSAGE_START_CHARS characters of the database's
 * encoding; a byte that begins no valid character there, or a control
 * character, as \xNN (the message may be anything).
 */
#define MESSAGE_START_CHARS 20
static char *
message_start(const char *text, size_t len)
{
	StringInfoData buf;
	int			encoding = GetDatabaseEncoding();
	size_t		i = 0;
	int			n;

	initStringInfo(&buf);
	for (n = 0; i < len && n < MESSAGE_START_CHARS; n++)
	{
		unsigned char c = (unsigned char) text[i];
		int			l = pg_encoding_verifymbchar(encoding, text + i, (int) Min(len - i, INT_MAX));

		if (l <= 0 || (l == 1 && (c < 0x20 || c == 0x7f)))
		{
			appendStringInfo(&buf, "\\x%02x", c);
			i++;
		}
		else
		{
			appendBinaryStringInfo(&buf, text + i, l);
			i += l;
		}
	}
	if (i < len)
		appendStringInfoString(&buf, "...");
	return buf.data;
}

/* Values ------------------------------------------------------------------ */

/*
 * ssp_ms_to_timestamptz: milliseconds since 1970-01-01 UTC as a
 * timestamptz; errors if out of range.
 */
Datum
ssp_ms_to_timestamptz(int64 ms)
{
	TimestampTz ts;

	if (ms > PG_INT64_MAX / 1000 || ms < PG_INT64_MIN / 1000 ||
		pg_sub_s64_overflow(ms * 1000, SSP_UNIX_EPOCH_US, &ts) || !IS_VALID_TIMESTAMP(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range: %lld milliseconds since 1970",
						(long long) ms)));
	return TimestampTzGetDatum(ts);
}

/* ssp_timestamptz_to_ms: the reverse of ssp_ms_to_timestamptz. */
int64
ssp_timestamptz_to_ms(Datum ts)
{
	TimestampTz t = DatumGetTimestampTz(ts);

	/* the infinities as far as milliseconds go, without overflow */
	if (TIMESTAMP_IS_NOBEGIN(t))
		return PG_INT64_MIN / 1000;
	if (TIMESTAMP_IS_NOEND(t))
		return PG_INT64_MAX / 1000;
	/* past the year 262,000 t + the epoch overflows; both are positive there */
	if (t > 0)
		return t / 1000 + SSP_UNIX_EPOCH_US / 1000;
	return (t + SSP_UNIX_EPOCH_US) / 1000;
}

/*
 * plain_decimal: a numeric from text that is a plain decimal (a sign, at
 * most 18 digits, a point: "-12.50"), without numeric_in's parse; false
 * for anything else (exponents, spaces, NaN, more digits), which
 * numeric_in reads.  The same value and display scale as numeric_in.
 */
static bool
plain_decimal(const char *data, size_t len, Datum *result)
{
	const char *p = data;
	const char *end = data + len;
	bool		neg = false;
	bool		point = false;
	int64		v = 0;
	int			digits = 0;
	int			scale = 0;

	if (p < end && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	for (; p < end; p++)
	{
		if (*p >= '0' && *p <= '9')
		{
			if (++digits > 18)
				return false;
			v = v * 10 + (*p - '0');
			scale += point;
		}
		else if (*p == '.' && !point)
			point = true;
		else
			return false;
	}
	if (digits == 0)
		return false;
	*result = NumericGetDatum(int64_div_fast_to_numeric(neg ? -v : v, scale));
	return true;
}

/*
 * text_input: bytes (not NUL-terminated) through the column's input; a
 * bytea column takes the bytes as they are (a whole message, a key, a
 * header, Avro's bytes).
 */
static Datum
text_input(SspColumn *col, const char *data, size_t len)
{
	char	   *str;
	Datum		d;

	if (col->typid == BYTEAOID)
	{
		bytea	   *b = palloc(VARHDRSZ + len);

		SET_VARSIZE(b, VARHDRSZ + len);
		memcpy(VARDATA(b), data, len);
		return PointerGetDatum(b);
	}
	/* numbers as most messages carry them (JSON's), read without numeric_in */
	if (col->typid == NUMERICOID && col->typmod < 0 && plain_decimal(data, len, &d))
		return d;
	/* rejects invalid sequences and NUL bytes */
	pg_verifymbstr(data, len, false);
	if (col->typid == TEXTOID)
		return PointerGetDatum(cstring_to_text_with_len(data, len));
	if (col->typid == TIMESTAMPTZOID && col->typmod < 0)
	{
		TimestampTz ts;

		if (ssp_iso_timestamptz(data, len, &ts))
			return TimestampTzGetDatum(ts);
	}
	str = pnstrdup(data, len);
	return InputFunctionCall(&col->infunc, str, col->ioparam, col->typmod);
}

/* ssp_text_input: text_input for the other decoders (avro.c). */
Datum
ssp_text_input(SspColumn *col, const char *data, size_t len)
{
	return text_input(col, data, len);
}

/*
 * string_input: a string of a text format (a JSON string, a CSV field)
 * into the column.  Unlike text_input, a bytea column reads it by bytea's
 * input function ("\\x00ff"), as for every other type: that is what INSERT
 * writes (byteaout's text), and raw bytes could not hold a zero byte.
 */
static Datum
string_input(SspColumn *col, const char *data, size_t len)
{
	if (col->typid == BYTEAOID)
	{
		/* rejects invalid sequences and NUL bytes, as text_input does */
		pg_verifymbstr(data, len, false);
		return DirectFunctionCall1(byteain, CStringGetDatum(pnstrdup(data, len)));
	}
	return text_input(col, data, len);
}

/*
 * ssp_domain_check: error unless a value of a domain column's base type
 * (not NULL) is one of the domain's, checked as domain_in checks it.
 * The check's state (the domain's constraints, kept up to date by the type
 * cache) lives as long as the column, in its memory: looked up once, not
 * for each value.
 */
void
ssp_domain_check(SspColumn *col, Datum value)
{
	domain_check(value, false, col->typid, &col->domain_cache, col->cxt);
}

/*
 * ssp_typmod_datum: a value of a base type made without the type's input
 * function (from a number, or from a binary format's value), coerced to
 * typmod as its input function would coerce it: timestamps, times and
 * intervals rounded to their precision, numerics to theirs.  Other types'
 * values are returned as they are.
 */
Datum
ssp_typmod_datum(Oid typid, int32 typmod, Datum value)
{
	if (typmod < 0)
		return value;
	switch (typid)
	{
		case TIMESTAMPOID:
			return DirectFunctionCall2(timestamp_scale, value, Int32GetDatum(typmod));
		case TIMESTAMPTZOID:
			return DirectFunctionCall2(timestamptz_scale, value, Int32GetDatum(typmod));
		case TIMEOID:
			return DirectFunctionCall2(time_scale, value, Int32GetDatum(typmod));
		case TIMETZOID:
			return DirectFunctionCall2(timetz_scale, value, Int32GetDatum(typmod));
		case INTERVALOID:
			return DirectFunctionCall2(interval_scale, value, Int32GetDatum(typmod));
		case NUMERICOID:
			return DirectFunctionCall2(numeric, value, Int32GetDatum(typmod));
		default:
			return value;
	}
}

/*
 * epoch_input: a JSON number into a timestamp column (or a domain over
 * one): milliseconds since 1970, exactly to the microsecond (a fraction of
 * a millisecond was cut off: 1.5 was 0.001 s), then at the column's
 * precision, as text would be rounded.  A whole number of up to 15 digits
 * is read as such; any other through numeric, exactly (1e-400 is the
 * epoch).
 */
static Datum
epoch_input(SspColumn *col, const char *number)
{
	const char *p = number + (number[0] == '-');
	size_t		digits = strspn(p, "0123456789");
	char	   *end;
	int64		us;
	TimestampTz ts;
	Datum		value;

	if (digits > 0 && digits <= 15 && p[digits] == '\0')
		us = strtoll(number, NULL, 10) * 1000;
	else
	{
		double		d = strtod(number, &end);

		/* beyond any timestamp, and beyond int64's microseconds */
		if (*end != '\0' || !(d <= 9.2e15 && d >= -9.2e15))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("timestamp out of range: %s milliseconds since 1970", number)));
		/* too small for a double: 0 (and numeric refuses exponents below -1000) */
		if (d == 0)
			us = 0;
		else
		{
			value = DirectFunctionCall3(numeric_in, CStringGetDatum(number),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
			value = DirectFunctionCall2(numeric_mul, value,
										NumericGetDatum(int64_to_numeric(1000)));
			us = DatumGetInt64(DirectFunctionCall1(numeric_int8, value));
		}
	}
	if (pg_sub_s64_overflow(us, SSP_UNIX_EPOCH_US, &ts) || !IS_VALID_TIMESTAMP(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range: %s milliseconds since 1970", number)));
	value = TimestampTzGetDatum(ts);
	if (col->basetype == TIMESTAMPOID)
		value = DirectFunctionCall1(timestamptz_timestamp, value);
	value = ssp_typmod_datum(col->basetype, col->basetypmod, value);
	if (col->basetype != col->typid)
		ssp_domain_check(col, value);
	return value;
}

/*
 * ssp_scalar_input: a JSON scalar into the column, from its text (a
 * string's contents, or a number's or boolean's token; number says which):
 * a number into a timestamp is milliseconds since 1970; a string into a
 * bytea column is bytea's text "\\x...", as INSERT writes it and as
 * Protobuf's JSON writes bytes.  protobuf.c reads the values it does not
 * convert itself through it, as from JSON.  text is len bytes, not always
 * NUL-terminated.
 */
Datum
ssp_scalar_input(SspColumn *col, const char *text, size_t len, bool number)
{
	if (number && (col->basetype == TIMESTAMPTZOID || col->basetype == TIMESTAMPOID))
		return epoch_input(col, pnstrdup(text, len));
	return string_input(col, text, len);
}

/* What json_array_input's semantic actions gather. */
typedef struct ArrayState
{
	JsonLexContext *lex;
	Oid			elemtype;
	bool		json_elems;		/* elements of json or jsonb: any JSON value */
	int			ndims;			/* -1 until an element (or empty array) fixes it */
	int			dims[MAXDIM];	/* per level: the length of its arrays, or -1 */
	int			count[MAXDIM];	/* per level: elements so far of the open array */
	const char *elemstart;		/* json_elems: where the current element began */
	List	   *elems;			/* element texts in order, NULL for null */
} ArrayState;

static void
not_rectangular(ArrayState *st)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("cannot decode a JSON array whose sub-arrays differ in shape into an array of %s",
					format_type_be(st->elemtype)),
			 errdetail("Multidimensional arrays must have sub-arrays with matching dimensions.")));
}

/* elements_at: elements (or empty arrays' places) at this level fix ndims */
static void
elements_at(ArrayState *st, int level)
{
	if (st->ndims < 0)
		st->ndims = level;
	else if (st->ndims != level)
		not_rectangular(st);
}

static void
ja_array_start(void *state)
{
	ArrayState *st = state;
	int			level = st->lex->lex_level;

	if (st->json_elems && level > 0)
		return;					/* inside an element, which is its own */
	if (level >= MAXDIM)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("number of array dimensions (%d) exceeds the maximum allowed (%d)",
						level + 1, MAXDIM)));
	/* a sub-array where another array had its elements */
	if (st->ndims >= 0 && level >= st->ndims)
		not_rectangular(st);
	st->count[level] = 0;
}

static void
ja_array_end(void *state)
{
	ArrayState *st = state;
	int			level = st->lex->lex_level;

	if (st->json_elems && level > 0)
		return;
	/* an empty array: its elements' level is the innermost */
	if (st->count[level] == 0)
		elements_at(st, level + 1);
	if (st->dims[level] < 0)
		st->dims[level] = st->count[level];
	else if (st->dims[level] != st->count[level])
		not_rectangular(st);
}

static void
ja_object_start(void *state)
{
	ArrayState *st = state;

	if (!st->json_elems)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("cannot decode a JSON object into an element of type %s",
						format_type_be(st->elemtype))));
}

static void
ja_element_start(void *state, bool isnull)
{
	ArrayState *st = state;

	if (st->json_elems && st->lex->lex_level == 1)
		st->elemstart = st->lex->token_start;
}

static void
ja_element_end(void *state, bool isnull)
{
	ArrayState *st = state;
	int			level = st->lex->lex_level;

	if (!st->json_elems)
	{
		st->count[level - 1]++;
		return;
	}
	if (level != 1)
		return;
	/* the element's JSON text, whatever it is; JSON null is NULL, as for a column */
	elements_at(st, 1);
	st->count[0]++;
	if (isnull)
		st->elems = lappend(st->elems, NULL);
	else
	{
		size_t		len = st->lex->prev_token_terminator - st->elemstart;

		pg_verifymbstr(st->elemstart, len, false);
		st->elems = lappend(st->elems, pnstrdup(st->elemstart, len));
	}
}

static void
ja_scalar(void *state, char *token, JsonTokenType tokentype)
{
	ArrayState *st = state;

	if (st->json_elems)
		return;					/* taken whole by ja_element_end */
	elements_at(st, st->lex->lex_level);
	if (tokentype == JSON_TOKEN_NULL)
		st->elems = lappend(st->elems, NULL);
	else
	{
		if (tokentype == JSON_TOKEN_STRING)
			pg_verifymbstr(token, strlen(token), false);
		st->elems = lappend(st->elems, token);
	}
}

/*
 * The elements of a column's arrays (or of its domain's base type's): what
 * json_array_input needs of their type, looked up once per column and
 * kept in its memory (col->array_cache).  elemtype is InvalidOid if the
 * column is not an array.
 */
typedef struct ElemIO
{
	Oid			elemtype;
	bool		json_elems;		/* of json or jsonb (or a domain over them) */
	FmgrInfo	infunc;			/* its fn_extra: domain_in's cache, kept */
	Oid			ioparam;
	int16		typlen;
	bool		typbyval;
	char		typalign;
} ElemIO;

static ElemIO *
elem_io(SspColumn *col)
{
	ElemIO	   *eio = col->array_cache;

	if (eio == NULL)
	{
		Oid			infunc;
		Oid			elembase;

		eio = MemoryContextAllocZero(col->cxt, sizeof(ElemIO));
		eio->elemtype = OidIsValid(col->elemtype) ? col->elemtype :
			col->basetype != col->typid ? get_element_type(col->basetype) : InvalidOid;
		if (OidIsValid(eio->elemtype))
		{
			elembase = getBaseType(eio->elemtype);
			eio->json_elems = elembase == JSONOID || elembase == JSONBOID;
			getTypeInputInfo(eio->elemtype, &infunc, &eio->ioparam);
			fmgr_info_cxt(infunc, &eio->infunc, col->cxt);
			get_typlenbyvalalign(eio->elemtype, &eio->typlen, &eio->typbyval,
								 &eio->typalign);
		}
		col->array_cache = eio;
	}
	return eio;
}

/*
 * json_array_input: a JSON array into an array of the elements of eio
 * whose elements take typmod, as array_in gives the column's typmod to
 * each element.  Nested arrays of one shape are a multidimensional array,
 * as INSERT writes one; but an element of json or jsonb is any JSON value,
 * nested arrays too, so such arrays have one dimension.
 */
static Datum
json_array_input(ElemIO *eio, int32 typmod, JsonFound *f)
{
	ArrayState	st;
	JsonSemAction sem;
	Oid			elemtype = eio->elemtype;
	int			nelems;
	Datum	   *values;
	bool	   *nulls;
	int			lbs[MAXDIM];
	int			i = 0;
	ListCell   *lc;

	memset(&st, 0, sizeof(st));
	st.lex = makeJsonLexContextCstringLen(f->raw, f->rawlen, GetDatabaseEncoding(), true);
	st.elemtype = elemtype;
	st.json_elems = eio->json_elems;
	st.ndims = -1;
	for (i = 0; i < MAXDIM; i++)
	{
		st.dims[i] = -1;
		lbs[i] = 1;
	}
	memset(&sem, 0, sizeof(sem));
	sem.semstate = &st;
	sem.array_start = ja_array_start;
	sem.array_end = ja_array_end;
	sem.object_start = ja_object_start;
	sem.array_element_start = ja_element_start;
	sem.array_element_end = ja_element_end;
	sem.scalar = ja_scalar;
	pg_parse_json_or_ereport(st.lex, &sem);

	nelems = list_length(st.elems);
	if (nelems == 0)
		return PointerGetDatum(construct_empty_array(elemtype));

	values = palloc(sizeof(Datum) * nelems);
	nulls = palloc(sizeof(bool) * nelems);
	i = 0;
	foreach(lc, st.elems)
	{
		char	   *s = lfirst(lc);

		nulls[i] = s == NULL;
		values[i] = s ? InputFunctionCall(&eio->infunc, s, eio->ioparam, typmod) : (Datum) 0;
		i++;
	}
	return PointerGetDatum(construct_md_array(values, nulls, st.ndims, st.dims, lbs,
											  elemtype, eio->typlen, eio->typbyval,
											  eio->typalign));
}

/*
 * json_input: a JSON value into the column; *isnull for JSON null.  A
 * domain's value is read as its base type's would be, then checked.
 */
static Datum
json_input(SspColumn *col, JsonFound *f, bool *isnull)
{
	*isnull = false;
	if (!f->found || f->type == JSON_TOKEN_NULL)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (col->basetype == JSONBOID || col->basetype == JSONOID)
	{
		/*
		 * The value's JSON text, checked as text_input checks text: neither
		 * parser of the message checks its strings' bytes, and json_in and
		 * jsonb_in expect text that is valid in the database encoding.
		 */
		pg_verifymbstr(f->raw, f->rawlen, false);
		return InputFunctionCall(&col->infunc, pnstrdup(f->raw, f->rawlen),
								 col->ioparam, col->typmod);
	}
	if (f->type == JSON_TOKEN_ARRAY_START && OidIsValid(elem_io(col)->elemtype))
	{
		/* an array, or a domain over an array type: checked */
		Datum		d = json_array_input(elem_io(col), col->basetypmod, f);

		if (col->basetype != col->typid)
			ssp_domain_check(col, d);
		return d;
	}
	if (f->scalar == NULL)		/* an object or array: its JSON text */
		return text_input(col, f->raw, f->rawlen);
	return ssp_scalar_input(col, f->scalar, f->scalarlen, f->type == JSON_TOKEN_NUMBER);
}

/* CSV ---------------------------------------------------------------------- */

/*
 * parse_csv: split one CSV record into fields and their lengths (RFC 4180:
 * comma separated, double quotes, "" for a quote).  An unquoted empty field
 * is NULL.  A field may hold any byte, NUL too: its reader checks it.
 */
static int
parse_csv(const char *data, size_t len, char ***fields, int **lens)
{
	const char *p = data;
	const char *end = data + len;
	int			n = 0;
	int			cap = 8;
	StringInfoData buf;

	/* one trailing line end is not part of the record */
	if (end > p && end[-1] == '\n')
		end--;
	if (end > p && end[-1] == '\r')
		end--;

	*fields = palloc(sizeof(char *) * cap);
	*lens = palloc(sizeof(int) * cap);
	initStringInfo(&buf);
	for (;;)
	{
		bool		q = false;

		resetStringInfo(&buf);
		if (p < end && *p == '"')
		{
			q = true;
			p++;
			for (;;)
			{
				if (p >= end)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
							 errmsg("unterminated quoted field in CSV message")));
				if (*p == '"')
				{
					if (p + 1 < end && p[1] == '"')
					{
						appendStringInfoChar(&buf, '"');
						p += 2;
						continue;
					}
					p++;
					break;
				}
				appendStringInfoChar(&buf, *p++);
			}
			if (p < end && *p != ',')
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						 errmsg("unexpected character after quoted field in CSV message")));
		}
		else
		{
			while (p < end && *p != ',')
			{
				if (*p == '"')
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
							 errmsg("unexpected quote in unquoted field in CSV message")));
				appendStringInfoChar(&buf, *p++);
			}
		}
		if (n == cap)
		{
			cap *= 2;
			*fields = repalloc(*fields, sizeof(char *) * cap);
			*lens = repalloc(*lens, sizeof(int) * cap);
		}
		(*lens)[n] = buf.len;
		(*fields)[n++] = (!q && buf.len == 0) ? NULL : pnstrdup(buf.data, buf.len);
		if (p >= end)
			break;
		p++;					/* the comma */
	}
	return n;
}

/*
 * SKIP: is column i left out: when decoding only column "only", or when the
 * stream's reader does not need it (it stays NULL, unconverted)?
 */
#define SKIP(i, only) (((only) >= 0 && (i) != (only)) || \
					   (stream->needed && !stream->needed[i]))

/* Confluent's framing and Avro ------------------------------------------ */

/*
 * unframe: past the magic byte and schema id of a message's value or key
 * (source), checking that the registry, if the stream has one, knows the
 * id as a schema of the type.  Errors are about the message (class 22):
 * the registry's own failures are class 08 (registry.c).
 */
static SspSchema *
unframe(SspStream *stream, SspSource source, const char **data, size_t *len,
		SspSchemaType type)
{
	static const char *const type_names[] = {"Avro", "Protobuf", "JSON Schema"};
	const char *what = source == SSP_SRC_KEY ? "key" : "value";
	int			k = source == SSP_SRC_KEY ? 1 : 0;
	SspSchema  *schema = NULL;
	int32		id;

	if (!ssp_registry_framed(*data, *len, &id))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 *len < SSP_REGISTRY_HEADER ?
				 errmsg("message %s is not in Confluent's wire format: it has %zu bytes, fewer than the magic byte and the schema id",
						what, *len) :
				 errmsg("message %s is not in Confluent's wire format: it starts with byte %d, not the magic byte 0",
						what, (unsigned char) (*data)[0])));
	if (stream->registry)
	{
		/* most messages name the schema the one before named: no lookup */
		if (stream->last_schema[k] && stream->last_schema[k]->id == id &&
			stream->last_schema[k]->type == type && stream->last_schema[k]->missing == NULL)
		{
			*data += SSP_REGISTRY_HEADER;
			*len -= SSP_REGISTRY_HEADER;
			return stream->last_schema[k];
		}
		schema = ssp_registry_schema(stream->registry, id);
		if (schema->missing)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("message %s names schema %d: %s", what, id, schema->missing)));
		if (schema->type != type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("message %s names schema %d, a %s schema, but the stream's %s is %s",
							what, id, type_names[schema->type], what,
							type == SSP_SCHEMA_AVRO ? "avro" :
							type == SSP_SCHEMA_PROTOBUF ? "protobuf" : "jsonschema")));
		/*
		 * a schema the registry gave never changes (one it lacks may come),
		 * and stays in this process's cache (registry.c) for its life
		 */
		if (schema->text)
			stream->last_schema[k] = schema;
	}
	*data += SSP_REGISTRY_HEADER;
	*len -= SSP_REGISTRY_HEADER;
	return schema;
}

/*
 * compiled: a registry schema's own form (an Avro or Protobuf schema),
 * parsed once per process.  A schema that is not valid is remembered as
 * such: every message that names it is a dead letter, without parsing it
 * again.
 */
static void *
compiled(SspSchema *schema)
{
	MemoryContext old;

	if (schema->compiled)
		return schema->compiled;
	old = MemoryContextSwitchTo(ssp_registry_memory());
	PG_TRY();
	{
		if (schema->type == SSP_SCHEMA_PROTOBUF)
			schema->compiled = ssp_pb_parse(schema->references, schema->text);
		else
			schema->compiled = ssp_avro_parse_with(schema->references, schema->text);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(ssp_registry_memory());
		edata = CopyErrorData();
		if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_DATA_EXCEPTION)
			schema->missing = psprintf("schema %d is not a valid %s schema: %s", schema->id,
									   schema->type == SSP_SCHEMA_PROTOBUF ? "Protobuf" : "Avro",
									   edata->message);
		MemoryContextSwitchTo(old);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return schema->compiled;
}

/*
 * decode_avro: a value or key in Avro (framed, or unframed with the
 * stream's option "schema") into its columns, by the plan of its writer
 * schema.
 */
static void
decode_avro(SspStream *stream, SspSource source, const char *data, size_t len,
			Datum *values, bool *nulls, DecodeContext *dc)
{
	SspAvroType *writer;

	if (source == SSP_SRC_VALUE && stream->avro_writer)
		writer = stream->avro_writer;
	else
		writer = compiled(unframe(stream, source, &data, &len, SSP_SCHEMA_AVRO));
	dc->column = NULL;
	ssp_avro_decode(ssp_avro_plan(stream, source, writer), data, len, values, nulls, &dc->column);
}

/*
 * decode_protobuf: a value or key in Protobuf (Confluent's framing) into
 * its columns: by the plan of its message's type, straight from the
 * message, and, for the columns that need it (nested paths, json, repeated
 * fields, maps, messages), from the message written as JSON (only the
 * top-level fields they read), whose UTF-8 is converted to the database
 * encoding first.
 */
static void
decode_protobuf(SspStream *stream, SspSource source, const char *data, size_t len,
				Datum *values, bool *nulls, DecodeContext *dc, int only)
{
	int			k = source == SSP_SRC_KEY ? 1 : 0;
	PathTree  **tree = source == SSP_SRC_KEY ? (PathTree **) &stream->key_paths :
		(PathTree **) &stream->value_paths;
	SspSchema  *schema = unframe(stream, source, &data, &len, SSP_SCHEMA_PROTOBUF);
	SspPbPlan  *plan;
	StringInfo	buf;
	const char *json;
	size_t		jsonlen;
	JsonFound  *found;
	int			i;

	if (schema == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("stream \"%s\" in format protobuf needs a schema registry",
						stream->relname)));
	plan = ssp_pb_plan(stream, source, ssp_pb_framed(compiled(schema), &data, &len));
	ssp_pb_decode(stream, plan, data, len, values, nulls, only, &dc->column);
	if (plan->nonly == 0)
		return;

	/* one buffer per source for the stream's life: no allocation a message */
	if (stream->pb_json[k] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(stream->cxt);

		stream->pb_json[k] = makeStringInfo();
		MemoryContextSwitchTo(old);
	}
	buf = stream->pb_json[k];
	if (buf->maxlen > 8 * 1024 * 1024)
	{
		/* not kept at the size of the largest message ever seen */
		pfree(buf->data);
		buf->data = MemoryContextAlloc(stream->cxt, 1024);
		buf->maxlen = 1024;
	}
	resetStringInfo(buf);
	ssp_pb_json(plan->message, data, len, plan->only, plan->nonly, buf);
	json = buf->data;
	jsonlen = buf->len;
	if (GetDatabaseEncoding() != PG_UTF8)
	{
		/* its strings are UTF-8 (checked): JSON in the database encoding */
		json = pg_any_to_server(buf->data, buf->len, PG_UTF8);
		if (json != buf->data)
			jsonlen = strlen(json);
	}
	if (*tree == NULL)
		*tree = build_paths(stream, source, stream->cxt);
	found = parse_json_fields(stream, *tree, json, jsonlen);
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		if (col->source != source || plan->direct[i] || SKIP(i, only))
			continue;
		dc->column = col->name;
		values[col->attnum - 1] = json_input(col, &found[i], &nulls[col->attnum - 1]);
	}
	dc->column = NULL;
}

/* Messages --------------------------------------------------------------- */

/* Debezium ---------------------------------------------------------------- */

/* The top-level fields of an envelope that debezium_row reads. */
typedef struct Envelope
{
	JsonLexContext *lex;
	const char *start;			/* where the current top-level value began */
	const char *field;			/* its name, if one we read */
	const char *op;				/* "op": its string, or NULL */
	const char *span[2];		/* "after" and "payload": raw value */
	size_t		spanlen[2];
} Envelope;

static const char *const envelope_fields[] = {"op", "after", "payload"};

static void
env_field_start(void *state, char *fname, bool isnull)
{
	Envelope   *e = state;
	int			i;

	if (e->lex->lex_level != 1)
		return;					/* inside a top-level value */
	e->field = NULL;
	for (i = 0; i < 3; i++)
		if (strcmp(fname, envelope_fields[i]) == 0)
			e->field = envelope_fields[i];
	e->start = e->lex->token_start;
}

static void
env_field_end(void *state, char *fname, bool isnull)
{
	Envelope   *e = state;
	int			i;

	if (e->lex->lex_level != 1 || e->field == NULL)
		return;
	for (i = 1; i < 3; i++)
		if (e->field == envelope_fields[i])
		{
			e->span[i - 1] = e->start;
			e->spanlen[i - 1] = e->lex->prev_token_terminator - e->start;
		}
	e->field = NULL;
}

static void
env_scalar(void *state, char *token, JsonTokenType tokentype)
{
	Envelope   *e = state;

	if (e->lex->lex_level == 1 && e->field == envelope_fields[0])
		e->op = tokentype == JSON_TOKEN_STRING ? token : NULL;
}

/* parse_envelope: the fields of a JSON object debezium_row reads. */
static void
parse_envelope(const char *data, size_t len, Envelope *e)
{
	JsonSemAction sem;

	if (len > INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("message of %zu bytes is too large to decode", len)));
	memset(e, 0, sizeof(*e));
	memset(&sem, 0, sizeof(sem));
	e->lex = makeJsonLexContextCstringLen((char *) data, (int) len, GetDatabaseEncoding(), true);
	sem.semstate = e;
	sem.object_field_start = env_field_start;
	sem.object_field_end = env_field_end;
	sem.scalar = env_scalar;
	pg_parse_json_or_ereport(e->lex, &sem);
}

/*
 * debezium_unwrap: the payload of Debezium's JSON converter with schemas
 * ({"schema": ..., "payload": ...}), or data itself without.
 */
static void
debezium_unwrap(const char **data, size_t *len, Envelope *e)
{
	parse_envelope(*data, *len, e);
	if (e->op == NULL && e->span[1] && e->spanlen[1] > 0 && e->span[1][0] == '{')
	{
		*data = e->span[1];
		*len = e->spanlen[1];
		parse_envelope(*data, *len, e);
	}
}

/*
 * debezium_row: the row of a Debezium change event: its "after" for a
 * create, an update or a snapshot read (op c, u, r); NULL for a delete (op
 * d), which sets stream->deleted.  Anything else is an error: an event
 * without op (a schema change, a heartbeat), a truncate (op t).
 */
static const char *
debezium_row(SspStream *stream, const char *data, size_t len, size_t *rowlen)
{
	Envelope	e;

	debezium_unwrap(&data, &len, &e);
	if (e.op == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("message is not a Debezium change event"),
				 errdetail("It has no field \"op\"%s.", e.span[1] ? " in its payload" : "")));
	if (strcmp(e.op, "d") == 0)
	{
		stream->deleted = true;
		return NULL;
	}
	if (strcmp(e.op, "c") != 0 && strcmp(e.op, "u") != 0 && strcmp(e.op, "r") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("Debezium operation \"%s\" is not supported", e.op),
				 errdetail("A changelog applies creates (c), updates (u), snapshot reads (r) and deletes (d).")));
	if (e.span[0] == NULL || e.spanlen[0] == 0 || e.span[0][0] != '{')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("Debezium event of operation \"%s\" has no row in \"after\"", e.op)));
	*rowlen = e.spanlen[0];
	return e.span[0];
}

static void
decode_value(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls,
			 DecodeContext *dc, int only)
{
	int			i;

	if (msg->value == NULL)
		return;					/* a null value: every value column is NULL */
	if (only >= 0 && stream->columns[only].source != SSP_SRC_VALUE)
		return;

	if (stream->format == SSP_FORMAT_AVRO)
		decode_avro(stream, SSP_SRC_VALUE, msg->value, msg->value_len, values, nulls, dc);
	else if (stream->format == SSP_FORMAT_PROTOBUF)
		decode_protobuf(stream, SSP_SRC_VALUE, msg->value, msg->value_len, values, nulls, dc, only);
	else if (stream->format == SSP_FORMAT_JSON || stream->format == SSP_FORMAT_JSONSCHEMA ||
			 stream->format == SSP_FORMAT_DEBEZIUM)
	{
		JsonFound  *found;
		const char *data = msg->value;
		size_t		len = msg->value_len;

		if (stream->value_paths == NULL)
			stream->value_paths = build_paths(stream, SSP_SRC_VALUE, stream->cxt);
		dc->column = NULL;
		if (stream->format == SSP_FORMAT_JSONSCHEMA)
			unframe(stream, SSP_SRC_VALUE, &data, &len, SSP_SCHEMA_JSON);
		if (stream->format == SSP_FORMAT_DEBEZIUM &&
			(data = debezium_row(stream, data, len, &len)) == NULL)
			return;				/* a delete: every value column is NULL */
		found = parse_json_fields(stream, stream->value_paths, data, len);
		for (i = 0; i < stream->ncolumns; i++)
		{
			SspColumn  *col = &stream->columns[i];

			if (col->source != SSP_SRC_VALUE || SKIP(i, only))
				continue;
			dc->column = col->name;
			values[col->attnum - 1] = json_input(col, &found[i], &nulls[col->attnum - 1]);
		}
	}
	else if (stream->format == SSP_FORMAT_CSV)
	{
		char	  **fields;
		int		   *lens;
		int			n = parse_csv(msg->value, msg->value_len, &fields, &lens);
		int			f = 0;

		if (n != stream->nvalue)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("CSV message has %d fields, stream \"%s\" expects %d",
							n, stream->relname, stream->nvalue)));
		for (i = 0; i < stream->ncolumns; i++)
		{
			SspColumn  *col = &stream->columns[i];

			if (col->source != SSP_SRC_VALUE)
				continue;
			dc->column = col->name;
			if (fields[f] != NULL && !SKIP(i, only))
			{
				nulls[col->attnum - 1] = false;
				values[col->attnum - 1] = string_input(col, fields[f], lens[f]);
			}
			f++;
		}
	}
	else
	{
		for (i = 0; i < stream->ncolumns; i++)
		{
			SspColumn  *col = &stream->columns[i];

			if (col->source != SSP_SRC_VALUE || SKIP(i, only))
				continue;
			dc->column = col->name;
			nulls[col->attnum - 1] = false;
			values[col->attnum - 1] = text_input(col, msg->value, msg->value_len);
		}
	}
}

static void
decode_key(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls,
		   DecodeContext *dc, int only)
{
	JsonFound  *found = NULL;
	int			i;
	const char *data = msg->key;
	size_t		len = msg->key_len;

	if (msg->key == NULL || stream->nkey == 0)
		return;
	if (only >= 0 && stream->columns[only].source != SSP_SRC_KEY)
		return;
	if (stream->key_format == SSP_FORMAT_AVRO)
	{
		decode_avro(stream, SSP_SRC_KEY, msg->key, msg->key_len, values, nulls, dc);
		return;
	}
	if (stream->key_format == SSP_FORMAT_PROTOBUF)
	{
		decode_protobuf(stream, SSP_SRC_KEY, msg->key, msg->key_len, values, nulls, dc, only);
		return;
	}
	/* Debezium's keys are objects of the key columns, perhaps wrapped */
	if (stream->nkey > 1 || stream->key_format == SSP_FORMAT_JSONSCHEMA ||
		(stream->format == SSP_FORMAT_DEBEZIUM && stream->key_format == SSP_FORMAT_JSON))
	{
		if (stream->key_paths == NULL)
			stream->key_paths = build_paths(stream, SSP_SRC_KEY, stream->cxt);
		dc->column = NULL;
		if (stream->key_format == SSP_FORMAT_JSONSCHEMA)
			unframe(stream, SSP_SRC_KEY, &data, &len, SSP_SCHEMA_JSON);
		if (stream->format == SSP_FORMAT_DEBEZIUM && stream->key_format == SSP_FORMAT_JSON)
		{
			Envelope	e;

			debezium_unwrap(&data, &len, &e);
		}
		found = parse_json_fields(stream, stream->key_paths, data, len);
	}
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		if (col->source != SSP_SRC_KEY || SKIP(i, only))
			continue;
		dc->column = col->name;
		if (found)
			values[col->attnum - 1] = json_input(col, &found[i], &nulls[col->attnum - 1]);
		else
		{
			nulls[col->attnum - 1] = false;
			values[col->attnum - 1] = text_input(col, data, len);
		}
	}
}

static Datum
int_datum(Oid typid, int64 v)
{
	if (typid == INT2OID)
		return Int16GetDatum((int16) v);
	if (typid == INT4OID)
		return Int32GetDatum((int32) v);
	return Int64GetDatum(v);
}

static void
decode_meta(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls,
			DecodeContext *dc, int only)
{
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];
		int			a = col->attnum - 1;
		const char *hv;
		size_t		hlen;

		if (SKIP(i, only))
			continue;
		dc->column = col->name;
		switch (col->source)
		{
			case SSP_SRC_PARTITION:
				nulls[a] = false;
				values[a] = int_datum(col->typid, msg->partition);
				break;
			case SSP_SRC_OFFSET:
				nulls[a] = false;
				values[a] = Int64GetDatum(msg->offset);
				break;
			case SSP_SRC_TIMESTAMP:
				if (msg->timestamp_ms < 0)
					break;
				nulls[a] = false;
				values[a] = ssp_ms_to_timestamptz(msg->timestamp_ms);
				if (col->typid == TIMESTAMPOID)
					values[a] = DirectFunctionCall1(timestamptz_timestamp, values[a]);
				/* timestamptz(0): rounded as any value of the column */
				values[a] = ssp_typmod_datum(col->typid, col->typmod, values[a]);
				break;
			case SSP_SRC_RAWKEY:
				if (msg->key == NULL)
					break;
				nulls[a] = false;
				values[a] = text_input(col, msg->key, msg->key_len);
				break;
			case SSP_SRC_HEADER:
				if (!ssp_kafka_header(msg, col->header, &hv, &hlen) || hv == NULL)
					break;
				nulls[a] = false;
				values[a] = text_input(col, hv, hlen);
				break;
			default:
				break;
		}
	}
}

static void
decode_error_context(void *arg)
{
	DecodeContext *dc = arg;

	if (dc->column)
		errcontext("stream \"%s\", topic \"%s\", partition %d, offset %lld, column \"%s\"",
				   dc->stream->relname, dc->stream->topic, dc->msg->partition,
				   (long long) dc->msg->offset, dc->column);
	else
		errcontext("stream \"%s\", topic \"%s\", partition %d, offset %lld",
				   dc->stream->relname, dc->stream->topic, dc->msg->partition,
				   (long long) dc->msg->offset);
}

/*
 * check_null_domains: a column of a domain that refuses NULL (NOT NULL, or
 * a CHECK that fails on it) left without a value is an error, as in a
 * table; except the value columns of a tombstone or a delete, which are
 * NULL by what the message is.
 */
static void
check_null_domains(SspStream *stream, SspMessage *msg, bool *nulls, DecodeContext *dc,
				   int only)
{
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		if (col->basetype == col->typid || SKIP(i, only) || !nulls[col->attnum - 1] ||
			(col->source == SSP_SRC_VALUE && (msg->value == NULL || stream->deleted)))
			continue;
		dc->column = col->name;
		domain_check((Datum) 0, true, col->typid, &col->domain_cache, col->cxt);
	}
}

/*
 * decode: the row of msg into values/nulls (natts entries, indexed by
 * attnum - 1); only column index "only" if it is not -1.
 */
static void
decode(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls, int only)
{
	ErrorContextCallback errcb;
	DecodeContext dc;

	dc.stream = stream;
	dc.msg = msg;
	dc.column = NULL;
	errcb.callback = decode_error_context;
	errcb.arg = &dc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	memset(nulls, true, sizeof(bool) * stream->natts);
	memset(values, 0, sizeof(Datum) * stream->natts);
	stream->deleted = false;
	decode_meta(stream, msg, values, nulls, &dc, only);
	dc.column = NULL;			/* a key's framing is no column's */
	decode_key(stream, msg, values, nulls, &dc, only);
	dc.column = NULL;
	decode_value(stream, msg, values, nulls, &dc, only);
	if (stream->has_domain)
		check_null_domains(stream, msg, nulls, &dc, only);

	error_context_stack = errcb.previous;
}

/*
 * ssp_decode_message: the row of msg into values/nulls (natts entries,
 * indexed by attnum - 1): of the columns stream->needed marks (all if it
 * is NULL); the others are NULL, their values not even converted.  Errors
 * if the message cannot be decoded; the error context names the message
 * and the column.
 */
void
ssp_decode_message(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls)
{
	decode(stream, msg, values, nulls, -1);
}

/*
 * try_decode: decode() in a subtransaction; false (with every column NULL)
 * if it failed.  Only the error is swallowed: its effects are rolled back
 * with the subtransaction.
 */
static bool
try_decode(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls,
		   int only)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		decode(stream, msg, values, nulls, only);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int			category;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		/*
		 * Only what is wrong with the message becomes NULL: a schema
		 * registry that cannot answer, a cancel, memory run out are errors.
		 */
		category = ERRCODE_TO_CATEGORY(edata->sqlerrcode);
		if (category != ERRCODE_DATA_EXCEPTION && category != ERRCODE_PROGRAM_LIMIT_EXCEEDED &&
			category != ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION &&
			edata->sqlerrcode != ERRCODE_DATATYPE_MISMATCH)
		{
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
			ReThrowError(edata);
		}
		FreeErrorData(edata);
		memset(nulls, true, sizeof(bool) * stream->natts);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return ok;
}

/*
 * ssp_decode_message_lenient: as ssp_decode_message, but a column that
 * cannot be decoded is NULL (all the value columns, if the value cannot be
 * parsed at all).  Needs a transaction: it uses subtransactions, only for
 * messages that fail.
 */
void
ssp_decode_message_lenient(SspStream *stream, SspMessage *msg, Datum *values,
						   bool *nulls)
{
	Datum	   *v;
	bool	   *n;
	int			i;

	if (try_decode(stream, msg, values, nulls, -1))
		return;

	v = palloc(sizeof(Datum) * stream->natts);
	n = palloc(sizeof(bool) * stream->natts);
	for (i = 0; i < stream->ncolumns; i++)
	{
		int			a = stream->columns[i].attnum - 1;

		if (stream->needed && !stream->needed[i])
			continue;			/* NULL already, and no subtransaction */
		if (try_decode(stream, msg, v, n, i))
		{
			values[a] = v[a];
			nulls[a] = n[a];
		}
	}
}
