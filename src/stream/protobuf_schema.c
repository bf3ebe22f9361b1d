/*-------------------------------------------------------------------------
 *
 * protobuf_schema.c
 *	  Protobuf schemas from their .proto text, as a Schema Registry serves
 *	  them: syntax proto2, proto3 and editions; packages, messages nested
 *	  to any depth, enums, oneofs, maps, proto3's optional, proto2's
 *	  defaults; options, reserved ranges, extensions and services read
 *	  and left alone.  Imports are the schema's references, parsed before
 *	  it; the well-known types of google/protobuf (Timestamp, Duration, the
 *	  wrappers, Struct, Value, ListValue, Any, Empty, FieldMask) are known
 *	  without them.  Type names resolve as protoc resolves them, from the
 *	  innermost scope out.
 *
 * A schema that cannot be parsed is an error of class 22: its messages are
 * dead letters.  Nothing here needs more of the backend than palloc and
 * ereport (test/fuzz/fuzz_protobuf.c runs it alone).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "common/hashfn.h"
#include "common/shortest_dec.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "stream/protobuf_internal.h"

/* The well-known types, as ssp reads them (their fields as Google's). */
static const char prelude[] =
"syntax = \"proto3\";\n"
"package google.protobuf;\n"
"message Timestamp { int64 seconds = 1; int32 nanos = 2; }\n"
"message Duration { int64 seconds = 1; int32 nanos = 2; }\n"
"message DoubleValue { double value = 1; }\n"
"message FloatValue { float value = 1; }\n"
"message Int64Value { int64 value = 1; }\n"
"message UInt64Value { uint64 value = 1; }\n"
"message Int32Value { int32 value = 1; }\n"
"message UInt32Value { uint32 value = 1; }\n"
"message BoolValue { bool value = 1; }\n"
"message StringValue { string value = 1; }\n"
"message BytesValue { bytes value = 1; }\n"
"message Struct { map<string, Value> fields = 1; }\n"
"message Value { oneof kind { NullValue null_value = 1; double number_value = 2;\n"
"  string string_value = 3; bool bool_value = 4; Struct struct_value = 5;\n"
"  ListValue list_value = 6; } }\n"
"enum NullValue { NULL_VALUE = 0; }\n"
"message ListValue { repeated Value values = 1; }\n"
"message Any { string type_url = 1; bytes value = 2; }\n"
"message Empty { }\n"
"message FieldMask { repeated string paths = 1; }\n";

typedef enum TokKind
{
	TK_EOF,
	TK_IDENT,					/* a name, dotted or not */
	TK_NUMBER,
	TK_STRING,
	TK_SYMBOL
} TokKind;

typedef struct PbParser
{
	const char *p;
	int			line;
	TokKind		kind;
	char	   *text;			/* the token: a name, number or string */
	char		symbol;
	int			depth;
	bool		implicit;		/* singular fields without presence (proto3) */
	bool		expanded;		/* repeated numbers written unpacked (proto2) */
	bool		closed;			/* enums closed (proto2) */
	bool		delimited;		/* message fields as groups (editions' DELIMITED) */
	char	   *package;		/* "" or "a.b" */
	SspPbSchema *schema;
	bool		own;			/* the schema's own text, not a reference */
} PbParser;

static void parse_message(PbParser *ps, const char *scope, SspPbMessage *parent);

/* schema_error(ps, fmt, ...): a schema that cannot be read, at its line */
#define schema_error(ps, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), \
			 errmsg("invalid Protobuf schema, line %d: %s", (ps)->line, psprintf(__VA_ARGS__))))

/* Tokens ------------------------------------------------------------------ */

static void
skip_space(PbParser *ps)
{
	for (;;)
	{
		if (*ps->p == '\n')
		{
			ps->line++;
			ps->p++;
		}
		else if (isspace((unsigned char) *ps->p))
			ps->p++;
		else if (ps->p[0] == '/' && ps->p[1] == '/')
		{
			while (*ps->p && *ps->p != '\n')
				ps->p++;
		}
		else if (ps->p[0] == '/' && ps->p[1] == '*')
		{
			ps->p += 2;
			while (*ps->p && !(ps->p[0] == '*' && ps->p[1] == '/'))
			{
				if (*ps->p == '\n')
					ps->line++;
				ps->p++;
			}
			if (*ps->p == '\0')
				schema_error(ps, "a comment is not closed");
			ps->p += 2;
		}
		else
			return;
	}
}

/* string_token: a quoted string, escapes decoded; adjacent strings join. */
static void
string_token(PbParser *ps)
{
	StringInfoData buf;

	initStringInfo(&buf);
	while (*ps->p == '"' || *ps->p == '\'')
	{
		char		quote = *ps->p++;

		while (*ps->p != quote)
		{
			char		c = *ps->p++;

			if (c == '\0' || c == '\n')
				schema_error(ps, "a string is not closed");
			if (c == '\\')
			{
				c = *ps->p++;
				switch (c)
				{
					case 'n':
						c = '\n';
						break;
					case 'a':
						c = '\a';
						break;
					case 'b':
						c = '\b';
						break;
					case 'f':
						c = '\f';
						break;
					case 'v':
						c = '\v';
						break;
					case 'u':
					case 'U':
						{
							/* a code point, written in UTF-8 */
							pg_wchar	cp = 0;
							int			i;
							unsigned char utf8[8];
							int			n;

							for (i = 0; i < (c == 'u' ? 4 : 8) && isxdigit((unsigned char) *ps->p); i++)
							{
								char		h = *ps->p++;

								cp = cp * 16 + (isdigit((unsigned char) h) ? h - '0' :
												tolower((unsigned char) h) - 'a' + 10);
							}
							if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
								schema_error(ps, "a string holds an invalid code point");
							unicode_to_utf8(cp, utf8);
							n = pg_utf_mblen(utf8);
							appendBinaryStringInfo(&buf, (char *) utf8, n - 1);
							c = (char) utf8[n - 1];
							break;
						}
					case 't':
						c = '\t';
						break;
					case 'r':
						c = '\r';
						break;
					case '0':
					case '1':
					case '2':
					case '3':
					case '4':
					case '5':
					case '6':
					case '7':
						{
							int			v = c - '0';
							int			i;

							for (i = 0; i < 2 && *ps->p >= '0' && *ps->p <= '7'; i++)
								v = v * 8 + (*ps->p++ - '0');
							c = (char) v;
							break;
						}
					case 'x':
						{
							int			v = 0;
							int			i;

							for (i = 0; i < 2 && isxdigit((unsigned char) *ps->p); i++)
							{
								char		h = *ps->p++;

								v = v * 16 + (isdigit((unsigned char) h) ? h - '0' :
											  tolower((unsigned char) h) - 'a' + 10);
							}
							c = (char) v;
							break;
						}
					case '\0':
						schema_error(ps, "a string is not closed");
						break;
					default:
						break;	/* \\ \' \" and the rest: the character */
				}
			}
			if (c == '\0')
				schema_error(ps, "a string holds a zero byte");
			appendStringInfoChar(&buf, c);
		}
		ps->p++;
		skip_space(ps);
	}
	ps->text = buf.data;
}

static void
next(PbParser *ps)
{
	const char *start;

	skip_space(ps);
	start = ps->p;
	if (*ps->p == '\0')
	{
		ps->kind = TK_EOF;
		ps->text = "end of schema";
		return;
	}
	if (*ps->p == '"' || *ps->p == '\'')
	{
		ps->kind = TK_STRING;
		string_token(ps);
		return;
	}
	if (isalpha((unsigned char) *ps->p) || *ps->p == '_' ||
		(*ps->p == '.' && (isalpha((unsigned char) ps->p[1]) || ps->p[1] == '_')))
	{
		ps->kind = TK_IDENT;
		while (isalnum((unsigned char) *ps->p) || *ps->p == '_' || *ps->p == '.')
			ps->p++;
		ps->text = pnstrdup(start, ps->p - start);
		return;
	}
	if (isdigit((unsigned char) *ps->p) ||
		((*ps->p == '-' || *ps->p == '+' || *ps->p == '.') && isdigit((unsigned char) ps->p[1])))
	{
		ps->kind = TK_NUMBER;
		ps->p++;
		while (isalnum((unsigned char) *ps->p) || *ps->p == '.' ||
			   ((*ps->p == '-' || *ps->p == '+') && (ps->p[-1] == 'e' || ps->p[-1] == 'E')))
			ps->p++;
		ps->text = pnstrdup(start, ps->p - start);
		return;
	}
	ps->kind = TK_SYMBOL;
	ps->symbol = *ps->p++;
	ps->text = pnstrdup(start, 1);
}

static bool
is_symbol(PbParser *ps, char c)
{
	return ps->kind == TK_SYMBOL && ps->symbol == c;
}

static bool
is_word(PbParser *ps, const char *word)
{
	return ps->kind == TK_IDENT && strcmp(ps->text, word) == 0;
}

static void
expect_symbol(PbParser *ps, char c)
{
	if (!is_symbol(ps, c))
		schema_error(ps, "expected \"%c\", found \"%s\"", c, ps->text);
	next(ps);
}

static char *
expect_ident(PbParser *ps, const char *what)
{
	char	   *name = ps->text;

	if (ps->kind != TK_IDENT)
		schema_error(ps, "expected %s, found \"%s\"", what, ps->text);
	next(ps);
	return name;
}

/*
 * skip_statement: past what ssp reads and leaves alone (an option, reserved
 * ranges, a service): to the ";" that ends it, or past its block.
 */
static void
skip_statement(PbParser *ps)
{
	int			braces = 0;
	bool		assigns = false;	/* "=" at the top: a value's braces */

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ps->kind == TK_EOF)
			schema_error(ps, "the schema ends inside a statement");
		if (is_symbol(ps, '{'))
			braces++;
		else if (is_symbol(ps, '=') && braces == 0)
			assigns = true;
		else if (is_symbol(ps, '}'))
		{
			if (--braces < 0)
				schema_error(ps, "unexpected \"}\"");
			if (braces == 0 && !assigns)
			{
				/* the end of a block (a service, an extend) */
				next(ps);
				if (is_symbol(ps, ';'))
					next(ps);
				return;
			}
		}
		else if (is_symbol(ps, ';') && braces == 0)
		{
			next(ps);
			return;
		}
		next(ps);
	}
}

/* skip_brackets: past "[ ... ]", brackets and braces inside counted */
static void
skip_brackets(PbParser *ps)
{
	int			depth = 0;

	do
	{
		CHECK_FOR_INTERRUPTS();
		if (ps->kind == TK_EOF)
			schema_error(ps, "options are not closed");
		if (is_symbol(ps, '[') || is_symbol(ps, '{'))
			depth++;
		else if (is_symbol(ps, ']') || is_symbol(ps, '}'))
			depth--;
		next(ps);
	} while (depth > 0);
}

/*
 * option_statement: "option NAME = VALUE;" of a file or message; the
 * editions' features that change how fields read are kept, the rest left.
 */
static void
option_statement(PbParser *ps)
{
	StringInfoData name;

	next(ps);					/* "option" */
	initStringInfo(&name);
	while (!is_symbol(ps, '='))
	{
		if (ps->kind == TK_EOF || is_symbol(ps, ';'))
			schema_error(ps, "expected \"=\" in an option");
		appendStringInfoString(&name, ps->text);
		next(ps);
	}
	next(ps);
	if (is_symbol(ps, '{'))
		skip_brackets(ps);
	else
	{
		if (strcmp(name.data, "features.field_presence") == 0)
			ps->implicit = strcmp(ps->text, "IMPLICIT") == 0;
		else if (strcmp(name.data, "features.repeated_field_encoding") == 0)
			ps->expanded = strcmp(ps->text, "EXPANDED") == 0;
		else if (strcmp(name.data, "features.enum_type") == 0)
			ps->closed = strcmp(ps->text, "CLOSED") == 0;
		else if (strcmp(name.data, "features.message_encoding") == 0)
			ps->delimited = strcmp(ps->text, "DELIMITED") == 0;
		if (is_symbol(ps, '-'))
			next(ps);
		next(ps);
	}
	expect_symbol(ps, ';');
}

/* The schema's parts ------------------------------------------------------ */

#define GROW(arr, n) \
	((arr) = (n) == 0 ? palloc(sizeof(*(arr)) * 4) : \
	 ((n) >= 4 && ((n) & ((n) - 1)) == 0) ? repalloc((arr), sizeof(*(arr)) * (n) * 2) : (arr))

static char *
full_name(const char *scope, const char *name)
{
	return scope[0] ? psprintf("%s.%s", scope, name) : pstrdup(name);
}

/* find_name: the slot of a full name, or the free slot it would take */
static SspPbName *
find_name(SspPbSchema *s, const char *name)
{
	uint32		h;
	int			i;

	if (s->names == NULL)
	{
		s->names_size = 64;
		s->names = palloc0(sizeof(SspPbName) * s->names_size);
	}
	h = hash_bytes((const unsigned char *) name, strlen(name));
	for (i = h & (s->names_size - 1);; i = (i + 1) & (s->names_size - 1))
		if (s->names[i].name == NULL || strcmp(s->names[i].name, name) == 0)
			return &s->names[i];
}

static bool
defined(SspPbSchema *s, const char *name)
{
	return find_name(s, name)->name != NULL;
}

/* add_name: a message's or enum's full name, not yet defined */
static void
add_name(SspPbSchema *s, const char *name, SspPbMessage *m, SspPbEnum *e)
{
	SspPbName  *slot;

	if (2 * (s->nnames + 1) > s->names_size)
	{
		SspPbName  *old = s->names;
		int			n = s->names_size;
		int			i;

		s->names_size *= 2;
		s->names = palloc0(sizeof(SspPbName) * s->names_size);
		for (i = 0; i < n; i++)
			if (old[i].name)
				*find_name(s, old[i].name) = old[i];
		pfree(old);
	}
	slot = find_name(s, name);
	slot->name = name;
	slot->message = m;
	slot->enumt = e;
	s->nnames++;
}

static void
parse_enum(PbParser *ps, const char *scope)
{
	SspPbEnum  *e = palloc0(sizeof(SspPbEnum));
	SspPbSchema *s = ps->schema;

	e->name = full_name(scope, expect_ident(ps, "an enum's name"));
	e->closed = ps->closed;
	expect_symbol(ps, '{');
	while (!is_symbol(ps, '}'))
	{
		char	   *name;
		char	   *end;
		long		number;

		if (ps->kind == TK_EOF)
			schema_error(ps, "enum \"%s\" is not closed", e->name);
		if (is_symbol(ps, ';'))
		{
			next(ps);
			continue;
		}
		if (is_word(ps, "option") || is_word(ps, "reserved"))
		{
			skip_statement(ps);
			continue;
		}
		name = expect_ident(ps, "an enum value's name");
		expect_symbol(ps, '=');
		if (ps->kind != TK_NUMBER)
			schema_error(ps, "expected the number of enum value \"%s\", found \"%s\"", name, ps->text);
		errno = 0;
		number = strtol(ps->text, &end, 0);
		if (errno != 0 || *end != '\0' || number < PG_INT32_MIN || number > PG_INT32_MAX)
			schema_error(ps, "enum value \"%s\" has an invalid number \"%s\"", name, ps->text);
		next(ps);
		GROW(e->names, e->n);
		GROW(e->numbers, e->n);
		e->names[e->n] = name;
		e->numbers[e->n] = (int32) number;
		e->n++;
		if (is_symbol(ps, '['))
			skip_brackets(ps);
		expect_symbol(ps, ';');
	}
	next(ps);
	if (e->n == 0)
		schema_error(ps, "enum \"%s\" has no values", e->name);
	if (!defined(s, e->name))
	{
		GROW(s->enums, s->nenums);
		s->enums[s->nenums++] = e;
		add_name(s, e->name, NULL, e);
	}
}

static PbType
scalar_type(const char *name)
{
	static const struct
	{
		const char *name;
		PbType		type;
	}			scalars[] = {
		{"double", PB_DOUBLE}, {"float", PB_FLOAT}, {"int64", PB_INT64},
		{"uint64", PB_UINT64}, {"int32", PB_INT32}, {"fixed64", PB_FIXED64},
		{"fixed32", PB_FIXED32}, {"bool", PB_BOOL}, {"string", PB_STRING},
		{"bytes", PB_BYTES}, {"uint32", PB_UINT32}, {"sfixed32", PB_SFIXED32},
		{"sfixed64", PB_SFIXED64}, {"sint32", PB_SINT32}, {"sint64", PB_SINT64}
	};
	int			i;

	for (i = 0; i < lengthof(scalars); i++)
		if (strcmp(name, scalars[i].name) == 0)
			return scalars[i].type;
	return 0;
}

static char *
camel_case(const char *name)
{
	StringInfoData buf;
	bool		upper = false;

	initStringInfo(&buf);
	for (; *name; name++)
	{
		if (*name == '_')
			upper = true;
		else
		{
			appendStringInfoChar(&buf, upper ? toupper((unsigned char) *name) : *name);
			upper = false;
		}
	}
	return buf.data;
}

/* field_options: "[packed = true, default = 3, json_name = "x", ...]" */
static void
field_options(PbParser *ps, SspPbField *f)
{
	next(ps);					/* the "[" */
	for (;;)
	{
		StringInfoData name;

		initStringInfo(&name);
		while (!is_symbol(ps, '='))
		{
			if (ps->kind == TK_EOF || is_symbol(ps, ']') || is_symbol(ps, ';'))
				schema_error(ps, "expected \"=\" in the options of field \"%s\"", f->name);
			appendStringInfoString(&name, ps->text);
			next(ps);
		}
		next(ps);
		if (is_symbol(ps, '{'))
		{
			int			braces = 0;

			do
			{
				if (ps->kind == TK_EOF)
					schema_error(ps, "an option's value is not closed");
				if (is_symbol(ps, '{'))
					braces++;
				else if (is_symbol(ps, '}'))
					braces--;
				next(ps);
			} while (braces > 0);
		}
		else
		{
			if (is_symbol(ps, '-'))
			{
				/* -inf, a negative float written "- 1.5" */
				next(ps);
				if (ps->kind != TK_IDENT && ps->kind != TK_NUMBER)
					schema_error(ps, "option \"%s\" of field \"%s\" has no value", name.data, f->name);
				ps->text = psprintf("-%s", ps->text);
			}
			if (ps->kind == TK_EOF || ps->kind == TK_SYMBOL)
				schema_error(ps, "option \"%s\" of field \"%s\" has no value", name.data, f->name);
			if (strcmp(name.data, "packed") == 0)
				f->packed = strcmp(ps->text, "true") == 0;
			else if (strcmp(name.data, "default") == 0)
				f->default_value = ps->text;
			else if (strcmp(name.data, "json_name") == 0)
				f->json_name = ps->text;
			else if (strcmp(name.data, "features.field_presence") == 0)
				f->presence = strcmp(ps->text, "IMPLICIT") != 0;
			else if (strcmp(name.data, "features.repeated_field_encoding") == 0)
				f->packed = strcmp(ps->text, "EXPANDED") != 0;
			else if (strcmp(name.data, "features.message_encoding") == 0)
				f->delimited = strcmp(ps->text, "DELIMITED") == 0;
			next(ps);
		}
		if (is_symbol(ps, ']'))
			break;
		expect_symbol(ps, ',');
	}
	next(ps);
}

/*
 * canonical_default: a scalar field's [default = ...] in the form the
 * reader writes into JSON: integers in decimal (protoc takes hex and
 * octal), floats shortest, checked against the field's type.
 */
static char *
canonical_default(PbParser *ps, SspPbField *f)
{
	const char *d = f->default_value;
	char	   *end;

	errno = 0;
	switch (f->type)
	{
		case PB_INT32:
		case PB_SINT32:
		case PB_SFIXED32:
		case PB_INT64:
		case PB_SINT64:
		case PB_SFIXED64:
			{
				long long	v = strtoll(d, &end, 0);
				bool		narrow = f->type == PB_INT32 || f->type == PB_SINT32 ||
					f->type == PB_SFIXED32;

				if (errno == 0 && *end == '\0' && end != d &&
					(!narrow || (v >= PG_INT32_MIN && v <= PG_INT32_MAX)))
					return psprintf("%lld", v);
				break;
			}
		case PB_UINT32:
		case PB_FIXED32:
		case PB_UINT64:
		case PB_FIXED64:
			{
				unsigned long long v = strtoull(d, &end, 0);

				if (errno == 0 && *end == '\0' && end != d && d[0] != '-' &&
					(v <= PG_UINT32_MAX || f->type == PB_UINT64 || f->type == PB_FIXED64))
					return psprintf("%llu", v);
				break;
			}
		case PB_FLOAT:
		case PB_DOUBLE:
			{
				double		v;
				char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

				if (strcmp(d, "inf") == 0 || strcmp(d, "-inf") == 0 || strcmp(d, "nan") == 0)
					return (char *) d;
				v = strtod(d, &end);
				if (*end != '\0' || end == d)
					break;
				if (isinf(v) || (f->type == PB_FLOAT && isinf((float) v)))
					return v > 0 ? "inf" : "-inf";
				if (f->type == PB_FLOAT)
					float_to_shortest_decimal_buf((float) v, buf);
				else
					double_to_shortest_decimal_buf(v, buf);
				return pstrdup(buf);
			}
		case PB_BOOL:
			if (strcmp(d, "true") == 0 || strcmp(d, "false") == 0)
				return (char *) d;
			break;
		default:
			return (char *) d;	/* strings, bytes; enums when resolved */
	}
	schema_error(ps, "field \"%s\" has an invalid default \"%s\"", f->name, d);
	return NULL;
}

static SspPbField *
add_field(SspPbMessage *m)
{
	SspPbField *f;

	GROW(m->fields, m->nfields);
	f = &m->fields[m->nfields++];
	memset(f, 0, sizeof(SspPbField));
	f->oneof = -1;
	return f;
}

/* field_number: a field's number, which must be one Protobuf allows */
static int32
field_number(PbParser *ps, const char *name)
{
	char	   *end;
	long		number;

	if (ps->kind != TK_NUMBER)
		schema_error(ps, "expected the number of field \"%s\", found \"%s\"", name, ps->text);
	errno = 0;
	number = strtol(ps->text, &end, 0);
	if (errno != 0 || *end != '\0' || number < 1 || number > 536870911 ||
		(number >= 19000 && number <= 19999))
		schema_error(ps, "field \"%s\" has an invalid number \"%s\"", name, ps->text);
	next(ps);
	return (int32) number;
}

/*
 * parse_field: "[label] type name = number [options];" or a map, in
 * message m (in a oneof when oneof >= 0).
 */
static void
parse_field(PbParser *ps, SspPbMessage *m, int oneof)
{
	SspPbField *f = add_field(m);
	bool		optional = false;
	bool		repeated = false;

	if (is_word(ps, "optional") || is_word(ps, "required"))
	{
		optional = true;
		next(ps);
	}
	else if (is_word(ps, "repeated"))
	{
		repeated = true;
		next(ps);
	}
	if (is_word(ps, "group"))
		schema_error(ps, "groups (proto2's \"group\") are not supported");
	if (is_word(ps, "map") && !repeated && !optional)
	{
		char	   *key;
		char	   *value;

		next(ps);
		expect_symbol(ps, '<');
		key = expect_ident(ps, "a map's key type");
		expect_symbol(ps, ',');
		value = expect_ident(ps, "a map's value type");
		expect_symbol(ps, '>');
		f->name = expect_ident(ps, "a map's name");
		if (scalar_type(key) == 0 || scalar_type(key) == PB_DOUBLE ||
			scalar_type(key) == PB_FLOAT || scalar_type(key) == PB_BYTES)
			schema_error(ps, "map \"%s\" has key type \"%s\", not an integer, bool or string", f->name, key);
		f->map = true;
		f->repeated = true;
		f->type = PB_MESSAGE;
		/* its entry: a nested message of key = 1 and value = 2 */
		{
			SspPbMessage *entry;
			SspPbField *k;
			SspPbField *v;
			char	   *entry_name = camel_case(psprintf("_%s", f->name));

			entry = palloc0(sizeof(SspPbMessage));
			entry->name = psprintf("%s.%sEntry", m->name, entry_name);
			entry->map_entry = true;
			k = add_field(entry);
			k->name = "key";
			k->json_name = "key";
			k->number = 1;
			k->type = scalar_type(key);
			v = add_field(entry);
			v->name = "value";
			v->json_name = "value";
			v->number = 2;
			v->type = scalar_type(value);
			if (v->type == 0)
				v->type_name = value;
			GROW(ps->schema->messages, ps->schema->nmessages);
			ps->schema->messages[ps->schema->nmessages++] = entry;
			if (!defined(ps->schema, entry->name))
				add_name(ps->schema, entry->name, entry, NULL);
			f->message = entry;
			f->type_name = entry->name;
		}
	}
	else
	{
		char	   *type = expect_ident(ps, "a field's type");

		f->type = scalar_type(type);
		if (f->type == 0)
			f->type_name = type;
		f->name = expect_ident(ps, "a field's name");
		f->repeated = repeated;
	}
	expect_symbol(ps, '=');
	f->number = field_number(ps, f->name);
	f->oneof = oneof;
	/* presence: proto3's singular fields have none unless "optional" */
	f->presence = !f->repeated && (!ps->implicit || optional || oneof >= 0);
	/* proto3 and editions pack repeated numbers unless told not to */
	f->packed = f->repeated && !ps->expanded;
	f->delimited = ps->delimited;
	if (is_symbol(ps, '['))
		field_options(ps, f);
	if (f->json_name == NULL)
		f->json_name = camel_case(f->name);
	if (f->default_value && f->type != 0)
		f->default_value = canonical_default(ps, f);
	expect_symbol(ps, ';');
}

static void
parse_oneof(PbParser *ps, SspPbMessage *m)
{
	int			oneof = m->noneofs++;

	(void) expect_ident(ps, "a oneof's name");
	expect_symbol(ps, '{');
	while (!is_symbol(ps, '}'))
	{
		if (ps->kind == TK_EOF)
			schema_error(ps, "a oneof of message \"%s\" is not closed", m->name);
		if (is_symbol(ps, ';'))
			next(ps);
		else if (is_word(ps, "option"))
			skip_statement(ps);
		else
			parse_field(ps, m, oneof);
	}
	next(ps);
}

static int
compare_int32(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return x < y ? -1 : x > y;
}

static void
parse_message(PbParser *ps, const char *scope, SspPbMessage *parent)
{
	SspPbSchema *s = ps->schema;
	SspPbMessage *m = palloc0(sizeof(SspPbMessage));
	bool		implicit = ps->implicit;	/* a message's features are its own */
	bool		expanded = ps->expanded;
	bool		closed = ps->closed;
	bool		delimited = ps->delimited;
	char	   *simple;
	int32	   *numbers;
	int			i;

	if (++ps->depth > 64)
		schema_error(ps, "messages are nested more than 64 deep");
	check_stack_depth();
	simple = expect_ident(ps, "a message's name");
	if (strchr(simple, '.'))
		schema_error(ps, "message name \"%s\" is not a simple name", simple);
	m->name = full_name(scope, simple);
	expect_symbol(ps, '{');
	while (!is_symbol(ps, '}'))
	{
		if (ps->kind == TK_EOF)
			schema_error(ps, "message \"%s\" is not closed", m->name);
		if (is_symbol(ps, ';'))
			next(ps);
		else if (is_word(ps, "message"))
		{
			next(ps);
			parse_message(ps, m->name, m);
		}
		else if (is_word(ps, "enum"))
		{
			next(ps);
			parse_enum(ps, m->name);
		}
		else if (is_word(ps, "oneof"))
		{
			next(ps);
			parse_oneof(ps, m);
		}
		else if (is_word(ps, "option"))
			option_statement(ps);
		else if (is_word(ps, "reserved") || is_word(ps, "extensions") || is_word(ps, "extend"))
			skip_statement(ps);
		else
			parse_field(ps, m, -1);
	}
	next(ps);
	ps->depth--;
	ps->implicit = implicit;
	ps->expanded = expanded;
	ps->closed = closed;
	ps->delimited = delimited;

	/* numbers are unique; a table of the small ones finds fields fast */
	if (m->nfields > 10000)
		schema_error(ps, "message \"%s\" has more than 10000 fields", m->name);
	numbers = palloc(sizeof(int32) * Max(m->nfields, 1));
	for (i = 0; i < m->nfields; i++)
	{
		numbers[i] = m->fields[i].number;
		if (m->fields[i].number < 256)
			m->nbynumber = Max(m->nbynumber, m->fields[i].number + 1);
	}
	qsort(numbers, m->nfields, sizeof(int32), compare_int32);
	for (i = 1; i < m->nfields; i++)
		if (numbers[i] == numbers[i - 1])
			schema_error(ps, "message \"%s\" has two fields numbered %d", m->name, numbers[i]);
	pfree(numbers);
	m->bynumber = palloc0(sizeof(int16) * Max(m->nbynumber, 1));
	for (i = 0; i < m->nfields; i++)
		if (m->fields[i].number < m->nbynumber)
			m->bynumber[m->fields[i].number] = i + 1;

	if (defined(s, m->name))
		return;					/* defined twice (a well-known type): the first */
	GROW(s->messages, s->nmessages);
	s->messages[s->nmessages++] = m;
	add_name(s, m->name, m, NULL);
	if (parent)
	{
		GROW(parent->nested, parent->nnested);
		parent->nested[parent->nnested++] = m;
	}
	else if (ps->own)
	{
		GROW(s->top, s->ntop);
		s->top[s->ntop++] = m;
	}
}

/* parse_file: one .proto text into the schema's messages and enums */
static void
parse_file(SspPbSchema *schema, const char *text, bool own)
{
	PbParser	ps;

	memset(&ps, 0, sizeof(ps));
	ps.p = text;
	ps.line = 1;
	ps.schema = schema;
	ps.own = own;
	ps.package = "";
	ps.expanded = true;			/* no syntax statement: proto2 */
	ps.closed = true;
	next(&ps);
	while (ps.kind != TK_EOF)
	{
		if (is_symbol(&ps, ';'))
			next(&ps);
		else if (is_word(&ps, "syntax") || is_word(&ps, "edition"))
		{
			bool		edition = is_word(&ps, "edition");

			next(&ps);
			expect_symbol(&ps, '=');
			if (ps.kind != TK_STRING)
				schema_error(&ps, "expected a string, found \"%s\"", ps.text);
			/* proto2: presence, unpacked; proto3: neither; editions: presence, packed */
			ps.implicit = !edition && strcmp(ps.text, "proto3") == 0;
			ps.expanded = !edition && strcmp(ps.text, "proto2") == 0;
			ps.closed = ps.expanded;
			if (!edition && strcmp(ps.text, "proto3") != 0 && strcmp(ps.text, "proto2") != 0)
				schema_error(&ps, "unknown syntax \"%s\"", ps.text);
			next(&ps);
			expect_symbol(&ps, ';');
		}
		else if (is_word(&ps, "package"))
		{
			next(&ps);
			ps.package = expect_ident(&ps, "a package name");
			if (ps.package[0] == '.')
				schema_error(&ps, "package name \"%s\" begins with a dot", ps.package);
			expect_symbol(&ps, ';');
		}
		else if (is_word(&ps, "message"))
		{
			next(&ps);
			parse_message(&ps, ps.package, NULL);
		}
		else if (is_word(&ps, "enum"))
		{
			next(&ps);
			parse_enum(&ps, ps.package);
		}
		else if (is_word(&ps, "option"))
			option_statement(&ps);
		else if (is_word(&ps, "import") || is_word(&ps, "service") || is_word(&ps, "extend"))
			skip_statement(&ps);
		else
			schema_error(&ps, "unexpected \"%s\"", ps.text);
	}
}

/* Names -------------------------------------------------------------------- */

SspPbMessage *
ssp_pb_by_name(SspPbSchema *schema, const char *name)
{
	if (name[0] == '.')
		name++;
	return find_name(schema, name)->message;
}

static SspPbEnum *
enum_by_name(SspPbSchema *schema, const char *name)
{
	return find_name(schema, name)->enumt;
}

/*
 * resolve: a field's type name, from the scope of its message out to the
 * root (".a.b" is absolute), to a message or an enum.
 */
static void
resolve(SspPbSchema *schema, SspPbMessage *m, SspPbField *f)
{
	char	   *scope = pstrdup(m->name);
	const char *name = f->type_name;

	if (name[0] == '.')
	{
		f->message = ssp_pb_by_name(schema, name + 1);
		f->enumt = f->message ? NULL : enum_by_name(schema, name + 1);
	}
	else
	{
		/* a map entry's value type resolves from the map's message */
		if (m->map_entry)
		{
			char	   *dot = strrchr(scope, '.');

			if (dot)
				*dot = '\0';
		}
		for (;;)
		{
			char	   *candidate = full_name(scope, name);
			char	   *dot;

			f->message = ssp_pb_by_name(schema, candidate);
			f->enumt = f->message ? NULL : enum_by_name(schema, candidate);
			if (f->message || f->enumt || scope[0] == '\0')
				break;
			dot = strrchr(scope, '.');
			if (dot)
				*dot = '\0';
			else
				scope[0] = '\0';
		}
	}
	if (f->message == NULL && f->enumt == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid Protobuf schema: field \"%s\" of message \"%s\" has type \"%s\", which no message or enum of the schema or its references defines",
						f->name, m->name, f->type_name)));
	f->type = f->message ? PB_MESSAGE : PB_ENUM;
	/* a map's entries are length-delimited whatever the feature says */
	if (f->type == PB_MESSAGE && f->delimited && !f->map)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid Protobuf schema: field \"%s\" of message \"%s\" is encoded as a group (features.message_encoding = DELIMITED), which is not supported: use LENGTH_PREFIXED, the default",
						f->name, m->name)));
	if (f->type == PB_MESSAGE)
	{
		f->packed = false;
		if (!f->repeated)
			f->presence = true;
	}
}

static void
well_known(SspPbMessage *m)
{
	static const struct
	{
		const char *name;
		PbWellKnown wk;
	}			known[] = {
		{"google.protobuf.Timestamp", PBW_TIMESTAMP},
		{"google.protobuf.Duration", PBW_DURATION},
		{"google.protobuf.DoubleValue", PBW_WRAPPER},
		{"google.protobuf.FloatValue", PBW_WRAPPER},
		{"google.protobuf.Int64Value", PBW_WRAPPER},
		{"google.protobuf.UInt64Value", PBW_WRAPPER},
		{"google.protobuf.Int32Value", PBW_WRAPPER},
		{"google.protobuf.UInt32Value", PBW_WRAPPER},
		{"google.protobuf.BoolValue", PBW_WRAPPER},
		{"google.protobuf.StringValue", PBW_WRAPPER},
		{"google.protobuf.BytesValue", PBW_WRAPPER},
		{"google.protobuf.Struct", PBW_STRUCT},
		{"google.protobuf.Value", PBW_VALUE},
		{"google.protobuf.ListValue", PBW_LIST},
		{"google.protobuf.Any", PBW_ANY},
		{"google.protobuf.Empty", PBW_EMPTY},
		{"google.protobuf.FieldMask", PBW_FIELD_MASK}
	};
	int			i;

	for (i = 0; i < lengthof(known); i++)
		if (strcmp(m->name, known[i].name) == 0)
			m->wk = known[i].wk;
}

/*
 * ssp_pb_parse_texts: a schema from its .proto text and the texts of its
 * references (the files it imports), in CurrentMemoryContext.
 */
SspPbSchema *
ssp_pb_parse_texts(int nreferences, const char *const *references, const char *text)
{
	SspPbSchema *schema = palloc0(sizeof(SspPbSchema));
	int			i;
	int			j;

	parse_file(schema, prelude, false);
	for (i = 0; i < nreferences; i++)
		parse_file(schema, references[i], false);
	parse_file(schema, text, true);
	if (schema->ntop == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid Protobuf schema: it defines no message")));
	for (i = 0; i < schema->nmessages; i++)
	{
		SspPbMessage *m = schema->messages[i];

		well_known(m);
		for (j = 0; j < m->nfields; j++)
			if (m->fields[j].type_name && !m->fields[j].map)
				resolve(schema, m, &m->fields[j]);
	}
	return schema;
}

/* ssp_pb_field: a message's field of a number, or NULL */
SspPbField *
ssp_pb_field(SspPbMessage *m, int32 number)
{
	int			i;

	if (number < m->nbynumber)
		return m->bynumber[number] ? &m->fields[m->bynumber[number] - 1] : NULL;
	for (i = 0; i < m->nfields; i++)
		if (m->fields[i].number == number)
			return &m->fields[i];
	return NULL;
}
