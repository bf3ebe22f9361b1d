/*-------------------------------------------------------------------------
 *
 * protobuf_read.c
 *	  Protobuf's binary encoding, read by a message's schema and written as
 *	  JSON, as Google's JSON mapping writes it (the fields' own names kept),
 *	  for decode.c to take the columns from it as from a JSON message.
 *
 * Fields are found by number, in any order; the last of a singular field
 * wins, a message field given twice is the two merged, repeated numbers
 * are read packed or not, a oneof is the member set last, unknown fields
 * are skipped (groups too).  Absent fields: proto3's plain scalars are
 * their defaults (0, "", false, the enum's first value), repeated fields
 * and maps empty, fields with presence left out (NULL), proto2's
 * [default = ...] its value.  Numbers are JSON numbers, 64-bit ones too;
 * NaN and the infinities strings; bytes "\\x..." (bytea's hex form); enums
 * their value's name; map keys strings; the well-known types their JSON
 * forms.
 *
 * Every read is bounded by the bytes left, nesting by SSP_PB_MAX_DEPTH and
 * the values of a message by SSP_PB_MAX_VALUES.  An error is a data
 * exception (class 22, or 54001 for nesting): the message is a dead
 * letter.  Nothing here needs more of the backend than palloc, StringInfo
 * and ereport (test/fuzz/fuzz_protobuf.c runs it alone).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/shortest_dec.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "stream/protobuf_internal.h"

/* wire types */
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2
#define WT_SGROUP 3
#define WT_EGROUP 4
#define WT_I32 5

typedef struct Segment
{
	const uint8 *p;
	size_t		len;
} Segment;

/* One occurrence of a field on the wire. */
typedef struct Occ
{
	const uint8 *p;				/* a varint's first byte, or the bytes */
	size_t		len;
	int			wt;
	int			next;			/* the field's next occurrence, or -1 */
} Occ;

/* occurrences and fields a Scan holds without palloc (most messages) */
#define SCAN_INLINE 32

/* A message's fields as found on the wire. */
typedef struct Scan
{
	SspPbMessage *m;
	Occ		   *occ;
	int			nocc;
	int			cap;
	int		   *head;			/* [field]: its first occurrence, or -1 */
	int		   *tail;			/* [field]: its last */
	Occ			occ_inline[SCAN_INLINE];
	int			head_inline[SCAN_INLINE];
	int			tail_inline[SCAN_INLINE];
} Scan;

typedef struct PbRead
{
	int			depth;
	int64		values;
	const char *const *only;	/* the top-level fields to write, or NULL */
	int			nonly;
} PbRead;

static void emit_message(PbRead *r, SspPbMessage *m, Segment *segs, int nsegs,
						 StringInfo out);

/* data_error(fmt, ...): a message that cannot be read */
#define data_error(...) \
	ereport(ERROR, \
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), \
			 errmsg("invalid Protobuf message: %s", psprintf(__VA_ARGS__))))

static pg_noinline uint64
varint_long(const uint8 **p, const uint8 *end)
{
	uint64		v = 0;
	int			shift = 0;

	for (;;)
	{
		uint8		b;

		if (*p >= end)
			data_error("it ends inside a number");
		b = *(*p)++;
		if (shift == 63 && (b & 0x7e) != 0)
			data_error("a number does not fit in 64 bits");
		v |= (uint64) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return v;
		shift += 7;
		if (shift > 63)
			data_error("a number does not fit in 64 bits");
	}
}

/* varint: a base-128 number; most (tags, small values) are one byte */
static inline uint64
varint(const uint8 **p, const uint8 *end)
{
	if (*p < end && **p < 0x80)
		return *(*p)++;
	return varint_long(p, end);
}

static int64
zigzag(uint64 v)
{
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

static uint64
fixed(const uint8 **p, const uint8 *end, int n)
{
	uint64		v = 0;
	int			i;

	if (end - *p < n)
		data_error("it ends inside a number");
	for (i = n - 1; i >= 0; i--)
		v = (v << 8) | (*p)[i];
	*p += n;
	return v;
}

static void
count_value(PbRead *r)
{
	if (++r->values > SSP_PB_MAX_VALUES)
		data_error("it holds more than %d values", SSP_PB_MAX_VALUES);
}

/*
 * written: one more value written, and what is written within bounds (a
 * message of a few bytes may stand for many defaults).
 */
static void
written(PbRead *r, StringInfo out)
{
	count_value(r);
	if (out->len > SSP_PB_MAX_JSON)
		data_error("it is more than %d MB as JSON", SSP_PB_MAX_JSON / (1024 * 1024));
}

static void
enter(PbRead *r)
{
	if (++r->depth > SSP_PB_MAX_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("invalid Protobuf message: it is nested more than %d deep",
						SSP_PB_MAX_DEPTH)));
	check_stack_depth();
}

/* skip_group: past a group (wire types 3 and 4) of an unknown field */
static void
skip_group(PbRead *r, const uint8 **p, const uint8 *end, uint64 number)
{
	enter(r);
	for (;;)
	{
		uint64		tag = varint(p, end);
		uint64		len;

		count_value(r);
		switch (tag & 7)
		{
			case WT_VARINT:
				(void) varint(p, end);
				break;
			case WT_I64:
				(void) fixed(p, end, 8);
				break;
			case WT_I32:
				(void) fixed(p, end, 4);
				break;
			case WT_LEN:
				len = varint(p, end);
				if (len > (uint64) (end - *p))
					data_error("a field's length is past its end");
				*p += len;
				break;
			case WT_SGROUP:
				skip_group(r, p, end, tag >> 3);
				break;
			case WT_EGROUP:
				if ((tag >> 3) != number)
					data_error("a group of field %llu ends as field %llu",
							   (unsigned long long) number, (unsigned long long) (tag >> 3));
				r->depth--;
				return;
			default:
				data_error("wire type %d is not Protobuf's", (int) (tag & 7));
		}
	}
}

/* wire_type: the wire type of a field's values, when not packed */
static int
wire_type(PbType type)
{
	switch (type)
	{
		case PB_DOUBLE:
		case PB_FIXED64:
		case PB_SFIXED64:
			return WT_I64;
		case PB_FLOAT:
		case PB_FIXED32:
		case PB_SFIXED32:
			return WT_I32;
		case PB_STRING:
		case PB_BYTES:
		case PB_MESSAGE:
		case PB_GROUP:
			return WT_LEN;
		default:
			return WT_VARINT;
	}
}

/* unknown_enum: is v a number a closed enum does not name (an unknown field)? */
static bool
unknown_enum(SspPbField *f, uint64 v)
{
	int			i;

	if (f->type != PB_ENUM || !f->enumt->closed)
		return false;
	for (i = 0; i < f->enumt->n; i++)
		if (f->enumt->numbers[i] == (int32) v)
			return false;
	return true;
}

/* scan: the occurrences of a message's fields in its segments */
static void
scan(PbRead *r, SspPbMessage *m, Segment *segs, int nsegs, Scan *s)
{
	int			i;

	s->m = m;
	s->nocc = 0;
	s->cap = SCAN_INLINE;
	s->occ = s->occ_inline;
	if (m->nfields <= SCAN_INLINE)
	{
		s->head = s->head_inline;
		s->tail = s->tail_inline;
	}
	else
	{
		s->head = palloc(sizeof(int) * m->nfields);
		s->tail = palloc(sizeof(int) * m->nfields);
	}
	for (i = 0; i < m->nfields; i++)
		s->head[i] = s->tail[i] = -1;
	for (i = 0; i < nsegs; i++)
	{
		const uint8 *p = segs[i].p;
		const uint8 *end = p + segs[i].len;

		while (p < end)
		{
			uint64		tag = varint(&p, end);
			uint64		number = tag >> 3;
			int			wt = tag & 7;
			const uint8 *start = p;
			size_t		len = 0;
			SspPbField *f;
			int			fi;

			if (number == 0 || number > 536870911)
				data_error("field number %llu is not valid", (unsigned long long) number);
			count_value(r);
			switch (wt)
			{
				case WT_VARINT:
					(void) varint(&p, end);
					len = p - start;
					break;
				case WT_I64:
					(void) fixed(&p, end, 8);
					len = 8;
					break;
				case WT_I32:
					(void) fixed(&p, end, 4);
					len = 4;
					break;
				case WT_LEN:
					len = varint(&p, end);
					if (len > (uint64) (end - p))
						data_error("the length of field %d is past the message's end", (int) number);
					start = p;
					p += len;
					break;
				case WT_SGROUP:
					skip_group(r, &p, end, number);
					continue;
				case WT_EGROUP:
					data_error("a group of field %d ends without starting", (int) number);
					break;
				default:
					data_error("wire type %d is not Protobuf's", wt);
			}
			f = ssp_pb_field(m, (int32) number);
			if (f == NULL)
				continue;		/* unknown: skipped */
			/* another wire type than its type's: an unknown field, as Google reads it */
			if (wt != wire_type(f->type) &&
				!(wt == WT_LEN && f->repeated && wire_type(f->type) != WT_LEN))
				continue;
			if (wt == WT_VARINT && f->type == PB_ENUM && f->enumt->closed)
			{
				const uint8 *q = start;

				if (unknown_enum(f, varint(&q, end)))
					continue;	/* proto2: kept among the unknown fields */
			}
			if (s->nocc == s->cap)
			{
				Occ		   *more = palloc(sizeof(Occ) * s->cap * 2);

				memcpy(more, s->occ, sizeof(Occ) * s->cap);
				if (s->occ != s->occ_inline)
					pfree(s->occ);
				s->occ = more;
				s->cap *= 2;
			}
			fi = f - m->fields;
			s->occ[s->nocc].p = start;
			s->occ[s->nocc].len = len;
			s->occ[s->nocc].wt = wt;
			s->occ[s->nocc].next = -1;
			if (s->head[fi] < 0)
				s->head[fi] = s->nocc;
			else
				s->occ[s->tail[fi]].next = s->nocc;
			s->tail[fi] = s->nocc;
			s->nocc++;
		}
	}
}

static void
scan_free(Scan *s)
{
	if (s->occ != s->occ_inline)
		pfree(s->occ);
	if (s->head != s->head_inline)
	{
		pfree(s->head);
		pfree(s->tail);
	}
}

/* JSON text ----------------------------------------------------------------- */

static void
json_string(StringInfo out, const char *s, size_t len)
{
	size_t		i;
	size_t		run = 0;		/* the start of the characters kept as they are */

	appendStringInfoChar(out, '"');
	for (i = 0; i < len; i++)
	{
		unsigned char c = s[i];

		if (c != '"' && c != '\\' && c >= 0x20)
			continue;
		appendBinaryStringInfo(out, s + run, i - run);
		run = i + 1;
		if (c == '"')
			appendStringInfoString(out, "\\\"");
		else if (c == '\\')
			appendStringInfoString(out, "\\\\");
		else
			appendStringInfo(out, "\\u%04x", c);
	}
	appendBinaryStringInfo(out, s + run, len - run);
	appendStringInfoChar(out, '"');
}

/* check_utf8: a string field's bytes, which must be UTF-8 without zeros */
static void
check_utf8(SspPbField *f, const uint8 *p, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		int			l = pg_utf_mblen(p + i);

		if (p[i] == 0)
			data_error("field \"%s\" holds a string with a zero byte", f->name);
		if (l > (int) (len - i) || !pg_utf8_islegal(p + i, l))
			data_error("field \"%s\" holds a string that is not UTF-8", f->name);
		i += l;
	}
}

static void
utf8_string(StringInfo out, SspPbField *f, const uint8 *p, size_t len)
{
	check_utf8(f, p, len);
	json_string(out, (const char *) p, len);
}

static void
hex_bytes(StringInfo out, const uint8 *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t		i;

	appendStringInfoString(out, "\"\\\\x");
	for (i = 0; i < len; i++)
	{
		appendStringInfoChar(out, hex[p[i] >> 4]);
		appendStringInfoChar(out, hex[p[i] & 15]);
	}
	appendStringInfoChar(out, '"');
}

static void
json_double(StringInfo out, double d)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (isnan(d))
		appendStringInfoString(out, "\"NaN\"");
	else if (isinf(d))
		appendStringInfoString(out, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
	{
		double_to_shortest_decimal_buf(d, buf);
		appendStringInfoString(out, buf);
	}
}

static void
json_float(StringInfo out, float f)
{
	char		buf[FLOAT_SHORTEST_DECIMAL_LEN];

	if (isnan(f) || isinf(f))
		json_double(out, f);
	else
	{
		float_to_shortest_decimal_buf(f, buf);
		appendStringInfoString(out, buf);
	}
}

/* enum_name: the name of an enum's value v, or NULL if it names none */
static const char *
enum_name(SspPbEnum *e, int32 v)
{
	int			i;

	for (i = 0; i < e->n; i++)
		if (e->numbers[i] == v)
			return e->names[i];
	return NULL;
}

static void
enum_value(StringInfo out, SspPbEnum *e, int32 v)
{
	const char *name = enum_name(e, v);

	if (name)
		json_string(out, name, strlen(name));
	else
		appendStringInfo(out, "%d", v); /* a value the schema does not name */
}

/* read_number: one value of a numeric, bool or enum field at *p (wire type wt) */
static void
read_number(SspPbField *f, int wt, const uint8 **p, const uint8 *end, SspPbValue *v)
{
	uint64		u = wt == WT_VARINT ? varint(p, end) :
		fixed(p, end, wt == WT_I64 ? 8 : 4);
	uint32		u32 = (uint32) u;

	switch (f->type)
	{
		case PB_INT32:
		case PB_SFIXED32:
			v->kind = PBV_INT;
			v->i = (int32) u32;
			break;
		case PB_INT64:
		case PB_SFIXED64:
			v->kind = PBV_INT;
			v->i = (int64) u;
			break;
		case PB_UINT32:
		case PB_FIXED32:
			v->kind = PBV_UINT;
			v->u = u32;
			break;
		case PB_UINT64:
		case PB_FIXED64:
			v->kind = PBV_UINT;
			v->u = u;
			break;
		case PB_SINT32:
			v->kind = PBV_INT;
			v->i = (int32) ((u32 >> 1) ^ -(u32 & 1));
			break;
		case PB_SINT64:
			v->kind = PBV_INT;
			v->i = zigzag(u);
			break;
		case PB_BOOL:
			v->kind = PBV_BOOL;
			v->i = u != 0;
			break;
		case PB_ENUM:
			v->kind = PBV_ENUM;
			v->i = (int32) u32;
			v->name = enum_name(f->enumt, (int32) u32);
			break;
		case PB_FLOAT:
			v->kind = PBV_FLOAT;
			memcpy(&v->f, &u32, sizeof(v->f));
			break;
		case PB_DOUBLE:
			v->kind = PBV_DOUBLE;
			memcpy(&v->d, &u, sizeof(v->d));
			break;
		default:
			data_error("field \"%s\" is not a number", f->name);
	}
}

/*
 * number: one value of a numeric, bool or enum field at *p (wire type wt),
 * as JSON; as a string when quoted (a map's key).
 */
static void
number(StringInfo out, SspPbField *f, int wt, const uint8 **p, const uint8 *end,
	   bool quoted)
{
	SspPbValue	v;

	read_number(f, wt, p, end, &v);
	if (quoted)
		appendStringInfoChar(out, '"');
	switch (v.kind)
	{
		case PBV_INT:
			appendStringInfo(out, INT64_FORMAT, v.i);
			break;
		case PBV_UINT:
			appendStringInfo(out, UINT64_FORMAT, v.u);
			break;
		case PBV_BOOL:
			appendStringInfoString(out, v.i ? "true" : "false");
			break;
		case PBV_ENUM:
			if (v.name)
				json_string(out, v.name, strlen(v.name));
			else
				appendStringInfo(out, "%d", (int32) v.i);
			break;
		case PBV_FLOAT:
			json_float(out, v.f);
			break;
		default:
			json_double(out, v.d);
			break;
	}
	if (quoted)
		appendStringInfoChar(out, '"');
}

/* default_value: an absent field's value, as proto2's default or its type's */
static void
default_value(StringInfo out, SspPbField *f)
{
	const char *d = f->default_value;

	switch (f->type)
	{
		case PB_STRING:
			json_string(out, d ? d : "", d ? strlen(d) : 0);
			break;
		case PB_BYTES:
			hex_bytes(out, (const uint8 *) (d ? d : ""), d ? strlen(d) : 0);
			break;
		case PB_BOOL:
			appendStringInfoString(out, d && strcmp(d, "true") == 0 ? "true" : "false");
			break;
		case PB_ENUM:
			if (d)
				json_string(out, d, strlen(d));
			else
			{
				int			i;

				/* the value numbered 0 (proto3's first), else proto2's first */
				for (i = 0; i < f->enumt->n; i++)
					if (f->enumt->numbers[i] == 0)
						break;
				enum_value(out, f->enumt, f->enumt->numbers[i < f->enumt->n ? i : 0]);
			}
			break;
		default:
			if (d == NULL)
				appendStringInfoChar(out, '0');
			else if (strcmp(d, "inf") == 0)
				appendStringInfoString(out, "\"Infinity\"");
			else if (strcmp(d, "-inf") == 0)
				appendStringInfoString(out, "\"-Infinity\"");
			else if (strcmp(d, "nan") == 0)
				appendStringInfoString(out, "\"NaN\"");
			else if (d[0] != '\0' && strspn(d, "0123456789-+.eE") == strlen(d))
				appendStringInfoString(out, d);
			else
				json_string(out, d, strlen(d));
			break;
	}
}

/* one_value: the value of one occurrence of a field (not packed) */
static void
one_value(PbRead *r, SspPbField *f, Occ *o, StringInfo out)
{
	const uint8 *p = o->p;

	if (f->type == PB_STRING)
		utf8_string(out, f, o->p, o->len);
	else if (f->type == PB_BYTES)
		hex_bytes(out, o->p, o->len);
	else if (f->type == PB_MESSAGE)
	{
		Segment		seg = {o->p, o->len};

		emit_message(r, f->message, &seg, 1, out);
	}
	else
		number(out, f, o->wt, &p, o->p + o->len, false);
}

static bool
present(Scan *s, int i)
{
	SspPbField *f = &s->m->fields[i];

	if (s->head[i] >= 0)
		return true;
	return !(f->presence && f->default_value == NULL);
}

/* map_value: a map as a JSON object, its keys strings */
static void
map_value(PbRead *r, SspPbField *f, Scan *s, int i, StringInfo out)
{
	SspPbMessage *entry = f->message;
	int			o;
	bool		first = true;

	appendStringInfoChar(out, '{');
	for (o = s->head[i]; o >= 0; o = s->occ[o].next)
	{
		Segment		seg = {s->occ[o].p, s->occ[o].len};
		Scan		es;
		SspPbField *k = &entry->fields[0];
		SspPbField *v = &entry->fields[1];

		scan(r, entry, &seg, 1, &es);
		written(r, out);
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		if (es.tail[0] < 0)
		{
			if (k->type == PB_STRING)
				appendStringInfoString(out, "\"\"");
			else
				appendStringInfoString(out, k->type == PB_BOOL ? "\"false\"" : "\"0\"");
		}
		else if (k->type == PB_STRING)
			one_value(r, k, &es.occ[es.tail[0]], out);
		else
		{
			const uint8 *p = es.occ[es.tail[0]].p;

			number(out, k, es.occ[es.tail[0]].wt, &p, p + es.occ[es.tail[0]].len, true);
		}
		appendStringInfoChar(out, ':');
		if (v->type == PB_MESSAGE)
		{
			/* every occurrence of the value, merged; none is an empty message */
			Segment    *segs = palloc(sizeof(Segment) * Max(es.nocc, 1));
			int			n = 0;
			int			j;

			for (j = es.head[1]; j >= 0; j = es.occ[j].next)
			{
				segs[n].p = es.occ[j].p;
				segs[n++].len = es.occ[j].len;
			}
			emit_message(r, v->message, segs, n, out);
		}
		else if (es.tail[1] < 0)
			default_value(out, v);
		else
			one_value(r, v, &es.occ[es.tail[1]], out);
		scan_free(&es);
	}
	appendStringInfoChar(out, '}');
}

/*
 * field_value: the JSON value of field i of a scanned message, of its
 * occurrences after the after'th (a oneof member: those since another
 * member was last set, which cleared it)
 */
static void
field_value(PbRead *r, Scan *s, int i, StringInfo out, int after)
{
	SspPbField *f = &s->m->fields[i];
	int			o;

	if (f->map)
		map_value(r, f, s, i, out);
	else if (f->repeated)
	{
		bool		first = true;

		appendStringInfoChar(out, '[');
		for (o = s->head[i]; o >= 0; o = s->occ[o].next)
		{
			Occ		   *occ = &s->occ[o];

			if (occ->wt == WT_LEN && wire_type(f->type) != WT_LEN)
			{
				/* packed: values one after another */
				const uint8 *p = occ->p;
				const uint8 *end = occ->p + occ->len;
				int			wt = wire_type(f->type);

				while (p < end)
				{
					const uint8 *q = p;

					if (wt == WT_VARINT && unknown_enum(f, varint(&q, end)))
					{
						p = q;
						continue;
					}
					written(r, out);
					if (!first)
						appendStringInfoChar(out, ',');
					first = false;
					number(out, f, wt, &p, end, false);
				}
				continue;
			}
			written(r, out);
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			one_value(r, f, occ, out);
		}
		appendStringInfoChar(out, ']');
	}
	else if (s->head[i] < 0)
		default_value(out, f);
	else if (f->type == PB_MESSAGE && s->head[i] != s->tail[i])
	{
		/* given more than once: merged, as the bytes one after the other */
		Segment    *segs = palloc(sizeof(Segment) * s->nocc);
		int			n = 0;

		for (o = s->head[i]; o >= 0; o = s->occ[o].next)
		{
			if (o <= after)
				continue;
			segs[n].p = s->occ[o].p;
			segs[n++].len = s->occ[o].len;
		}
		emit_message(r, f->message, segs, n, out);
		pfree(segs);
	}
	else
		one_value(r, f, &s->occ[s->tail[i]], out);
}

/* The well-known types ------------------------------------------------------- */

/* int_field: a well-known type's integer field (1 or 2), 0 when absent */
static int64
int_field(Scan *s, int i)
{
	SspPbField *f = &s->m->fields[i];
	const uint8 *p;
	uint64		v;

	if (s->tail[i] < 0)
		return 0;
	p = s->occ[s->tail[i]].p;
	v = varint(&p, p + s->occ[s->tail[i]].len);
	return f->type == PB_INT32 ? (int64) (int32) (uint32) v : (int64) v;
}

static void
fraction(StringInfo out, int32 nanos)
{
	if (nanos == 0)
		return;
	if (nanos % 1000000 == 0)
		appendStringInfo(out, ".%03d", nanos / 1000000);
	else if (nanos % 1000 == 0)
		appendStringInfo(out, ".%06d", nanos / 1000);
	else
		appendStringInfo(out, ".%09d", nanos);
}

/* timestamp_check: a Timestamp in Google's range, 0001-01-01 to 9999-12-31 */
static void
timestamp_check(int64 seconds, int64 nanos)
{
	if (seconds < INT64CONST(-62135596800) || seconds > INT64CONST(253402300799) ||
		nanos < 0 || nanos > 999999999)
		data_error("a Timestamp of " INT64_FORMAT " seconds and " INT64_FORMAT " nanoseconds is out of range",
				   seconds, nanos);
}

/*
 * ssp_pb_timestamp_text: a Timestamp (checked) as Google's JSON writes it,
 * without the quotes: "2026-12-01T10:00:00.500Z".
 */
void
ssp_pb_timestamp_text(int64 seconds, int32 nanos, StringInfo out)
{
	int64		days = seconds / 86400;
	int64		rem = seconds % 86400;
	int64		z,
				era,
				doe,
				yoe,
				doy,
				mp,
				y;
	int			month,
				day;

	if (rem < 0)
	{
		rem += 86400;
		days--;
	}
	/* days since 1970-01-01 to the civil date (the proleptic Gregorian calendar) */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	day = (int) (doy - (153 * mp + 2) / 5 + 1);
	month = (int) (mp < 10 ? mp + 3 : mp - 9);
	if (month <= 2)
		y++;
	appendStringInfo(out, "%04d-%02d-%02dT%02d:%02d:%02d", (int) y, month, day,
					 (int) (rem / 3600), (int) (rem / 60 % 60), (int) (rem % 60));
	fraction(out, nanos);
	appendStringInfoChar(out, 'Z');
}

static void
timestamp_value(Scan *s, StringInfo out)
{
	int64		seconds = int_field(s, 0);
	int64		nanos = int_field(s, 1);

	timestamp_check(seconds, nanos);
	appendStringInfoChar(out, '"');
	ssp_pb_timestamp_text(seconds, (int32) nanos, out);
	appendStringInfoChar(out, '"');
}

static void
duration_value(Scan *s, StringInfo out)
{
	int64		seconds = int_field(s, 0);
	int64		nanos = int_field(s, 1);

	if (seconds < INT64CONST(-315576000000) || seconds > INT64CONST(315576000000) ||
		nanos < -999999999 || nanos > 999999999 ||
		(seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0))
		data_error("a Duration of " INT64_FORMAT " seconds and " INT64_FORMAT " nanoseconds is out of range",
				   seconds, nanos);
	appendStringInfoChar(out, '"');
	if (seconds < 0 || nanos < 0)
		appendStringInfoChar(out, '-');
	appendStringInfo(out, INT64_FORMAT, seconds < 0 ? -seconds : seconds);
	fraction(out, (int32) (nanos < 0 ? -nanos : nanos));
	appendStringInfoString(out, "s\"");
}

static void
well_known_value(PbRead *r, Scan *s, StringInfo out)
{
	int			i;
	int			last = -1;

	switch (s->m->wk)
	{
		case PBW_TIMESTAMP:
			timestamp_value(s, out);
			break;
		case PBW_DURATION:
			duration_value(s, out);
			break;
		case PBW_WRAPPER:
		case PBW_STRUCT:
		case PBW_LIST:
			field_value(r, s, 0, out, -1);
			break;
		case PBW_VALUE:
			/* the kind set last; none is null */
			for (i = 0; i < s->m->nfields; i++)
				if (s->tail[i] > (last >= 0 ? s->tail[last] : -1))
					last = i;
			if (last < 0 || s->m->fields[last].type == PB_ENUM)
				appendStringInfoString(out, "null");
			else
				field_value(r, s, last, out, -1);
			break;
		case PBW_ANY:
			appendStringInfoString(out, "{\"@type\":");
			field_value(r, s, 0, out, -1);
			appendStringInfoString(out, ",\"value\":");
			field_value(r, s, 1, out, -1);
			appendStringInfoChar(out, '}');
			break;
		case PBW_EMPTY:
			appendStringInfoString(out, "{}");
			break;
		case PBW_FIELD_MASK:
			{
				StringInfoData paths;
				int			o;

				initStringInfo(&paths);
				/* each path in lowerCamelCase, as Google writes it */
				for (o = s->head[0]; o >= 0; o = s->occ[o].next)
				{
					bool		upper = false;
					size_t		k;

					if (paths.len > 0)
						appendStringInfoChar(&paths, ',');
					for (k = 0; k < s->occ[o].len; k++)
					{
						char		c = (char) s->occ[o].p[k];

						if (c == '_')
							upper = true;
						else
						{
							appendStringInfoChar(&paths, upper && c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
							upper = false;
						}
					}
				}
				utf8_string(out, &s->m->fields[0], (const uint8 *) paths.data, paths.len);
				break;
			}
		case PBW_NONE:
			break;
	}
}

/* Messages ------------------------------------------------------------------- */

static bool
wanted(PbRead *r, SspPbField *f)
{
	int			i;

	if (r->only == NULL || r->depth != 1)
		return true;
	for (i = 0; i < r->nonly; i++)
		if (strcmp(r->only[i], f->name) == 0)
			return true;
	return false;
}

static void
emit_message(PbRead *r, SspPbMessage *m, Segment *segs, int nsegs, StringInfo out)
{
	Scan		s;
	int		   *oneof_last = NULL;
	bool		first = true;
	int			i;

	enter(r);
	scan(r, m, segs, nsegs, &s);
	if (m->wk != PBW_NONE)
	{
		well_known_value(r, &s, out);
		scan_free(&s);
		r->depth--;
		return;
	}
	/* of each oneof, the member set last */
	if (m->noneofs > 0)
	{
		oneof_last = palloc(sizeof(int) * m->noneofs);
		for (i = 0; i < m->noneofs; i++)
			oneof_last[i] = -1;
		for (i = 0; i < m->nfields; i++)
		{
			int			k = m->fields[i].oneof;

			if (k >= 0 && s.tail[i] >= 0 &&
				(oneof_last[k] < 0 || s.tail[i] > s.tail[oneof_last[k]]))
				oneof_last[k] = i;
		}
	}
	appendStringInfoChar(out, '{');
	for (i = 0; i < m->nfields; i++)
	{
		SspPbField *f = &m->fields[i];
		int			after = -1;

		if (!present(&s, i) || !wanted(r, f) ||
			(f->oneof >= 0 && oneof_last[f->oneof] != i))
			continue;
		if (f->oneof >= 0)
		{
			int			j;

			/* setting another member cleared this one */
			for (j = 0; j < m->nfields; j++)
				if (j != i && m->fields[j].oneof == f->oneof && s.tail[j] > after)
					after = s.tail[j];
		}
		written(r, out);
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		json_string(out, f->name, strlen(f->name));
		appendStringInfoChar(out, ':');
		field_value(r, &s, i, out, after);
	}
	appendStringInfoChar(out, '}');
	scan_free(&s);
	r->depth--;
}

/*
 * ssp_pb_read_indexes: the message of a value in Confluent's framing, by
 * the message indexes after the schema id (a list of zig-zag varints: its
 * length, then the path from the schema's top-level messages down nested
 * ones; a lone 0 is the first message).  Advances data past them.
 */
SspPbMessage *
ssp_pb_read_indexes(SspPbSchema *schema, const char **data, size_t *len)
{
	const uint8 *p = (const uint8 *) *data;
	const uint8 *end = p + *len;
	int64		n = zigzag(varint(&p, end));
	SspPbMessage *m = NULL;
	int64		i;

	if (n == 0)
		m = schema->top[0];
	else if (n < 0 || n > 64)
		data_error("its message indexes are " INT64_FORMAT " long", n);
	for (i = 0; i < n; i++)
	{
		int64		k = zigzag(varint(&p, end));
		int			count = i == 0 ? schema->ntop : m->nnested;

		if (k < 0 || k >= count)
			data_error("its message index " INT64_FORMAT " names no message of %s",
					   k, i == 0 ? "the schema" : m->name);
		m = i == 0 ? schema->top[k] : m->nested[k];
	}
	*len -= (const char *) p - *data;
	*data = (const char *) p;
	return m;
}

/*
 * ssp_pb_to_json: a message of type m as a JSON object into out: of its
 * top-level fields, only those named in only (all when only is NULL).
 */
void
ssp_pb_to_json(SspPbMessage *m, const char *data, size_t len,
			   const char *const *only, int nonly, StringInfo out)
{
	PbRead		r;
	Segment		seg = {(const uint8 *) data, len};

	memset(&r, 0, sizeof(r));
	r.only = only;
	r.nonly = nonly;
	if (m->wk != PBW_NONE)
		r.only = NULL;
	emit_message(&r, m, &seg, 1, out);
}

/* Values for columns --------------------------------------------------------- */

/*
 * ssp_pb_direct: can ssp_pb_values read a top-level field: a singular
 * number, bool, enum, string, bytes or Timestamp, without a proto2
 * default (its value's text is JSON's: the JSON path reads it)?
 */
bool
ssp_pb_direct(SspPbField *f)
{
	if (f->repeated || f->map || f->default_value != NULL)
		return false;
	if (f->type == PB_MESSAGE)
		return f->message->wk == PBW_TIMESTAMP;
	return f->type != PB_GROUP;
}

/* default_of: an absent field's value without presence: proto3's default */
static void
default_of(SspPbField *f, SspPbValue *v)
{
	int			i;

	switch (f->type)
	{
		case PB_STRING:
		case PB_BYTES:
			v->kind = f->type == PB_STRING ? PBV_STRING : PBV_BYTES;
			v->p = (const uint8 *) "";
			v->len = 0;
			break;
		case PB_BOOL:
			v->kind = PBV_BOOL;
			break;
		case PB_ENUM:
			/* the value numbered 0 (proto3's first), else proto2's first */
			for (i = 0; i < f->enumt->n; i++)
				if (f->enumt->numbers[i] == 0)
					break;
			if (i == f->enumt->n)
				i = 0;
			v->kind = PBV_ENUM;
			if (i < f->enumt->n)
			{
				v->i = f->enumt->numbers[i];
				v->name = f->enumt->names[i];
			}
			break;
		case PB_DOUBLE:
			v->kind = PBV_DOUBLE;
			break;
		case PB_FLOAT:
			v->kind = PBV_FLOAT;
			break;
		case PB_UINT32:
		case PB_UINT64:
		case PB_FIXED32:
		case PB_FIXED64:
			v->kind = PBV_UINT;
			break;
		default:
			v->kind = PBV_INT;
			break;
	}
}

/*
 * ssp_pb_values: of a message of type m, the values of its top-level
 * fields whose indexes are in fields (each one ssp_pb_direct can read), as
 * ssp_pb_to_json would write them: the last given, the oneof member set
 * last (the others NULL), a Timestamp given twice merged, an absent field
 * its default or, with presence, NULL.  Strings are checked, Timestamps
 * too; the bytes point into data.
 */
void
ssp_pb_values(SspPbMessage *m, const char *data, size_t len,
			  int nfields, const int *fields, SspPbValue *values)
{
	PbRead		r;
	Segment		seg = {(const uint8 *) data, len};
	Scan		s;
	int			k;

	memset(&r, 0, sizeof(r));
	enter(&r);
	scan(&r, m, &seg, 1, &s);
	for (k = 0; k < nfields; k++)
	{
		int			i = fields[k];
		SspPbField *f = &m->fields[i];
		SspPbValue *v = &values[k];
		int			after = -1;
		Occ		   *o;

		memset(v, 0, sizeof(SspPbValue));
		if (f->oneof >= 0)
		{
			int			j;

			/* setting another member cleared this one */
			for (j = 0; j < m->nfields; j++)
				if (j != i && m->fields[j].oneof == f->oneof && s.tail[j] > after)
					after = s.tail[j];
		}
		if (s.tail[i] < 0 || s.tail[i] < after)
		{
			if (s.tail[i] < 0 && !f->presence)
				default_of(f, v);
			else
				v->kind = PBV_NULL;
			continue;
		}
		count_value(&r);
		o = &s.occ[s.tail[i]];
		if (f->type == PB_MESSAGE)
		{
			/* a Timestamp: what was given since another member was set, merged */
			Segment		one[4];
			Segment    *segs = s.nocc <= lengthof(one) ? one : palloc(sizeof(Segment) * s.nocc);
			Scan		ts;
			int64		nanos;
			int			n = 0;
			int			j;

			for (j = s.head[i]; j >= 0; j = s.occ[j].next)
			{
				if (j <= after)
					continue;
				segs[n].p = s.occ[j].p;
				segs[n++].len = s.occ[j].len;
			}
			enter(&r);
			scan(&r, f->message, segs, n, &ts);
			v->kind = PBV_TIMESTAMP;
			v->i = int_field(&ts, 0);
			nanos = int_field(&ts, 1);
			timestamp_check(v->i, nanos);
			v->nanos = (int32) nanos;
			scan_free(&ts);
			if (segs != one)
				pfree(segs);
			r.depth--;
		}
		else if (f->type == PB_STRING || f->type == PB_BYTES)
		{
			if (f->type == PB_STRING)
				check_utf8(f, o->p, o->len);
			v->kind = f->type == PB_STRING ? PBV_STRING : PBV_BYTES;
			v->p = o->p;
			v->len = o->len;
		}
		else
		{
			const uint8 *p = o->p;

			read_number(f, o->wt, &p, o->p + o->len, v);
		}
	}
	scan_free(&s);
}
