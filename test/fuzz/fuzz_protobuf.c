/*-------------------------------------------------------------------------
 *
 * fuzz_protobuf.c
 *	  libFuzzer target: src/stream/protobuf_schema.c, the parser of .proto
 *	  text, and src/stream/protobuf_read.c, the reader of Protobuf's binary
 *	  encoding that writes a message as JSON, on hostile bytes.
 *
 * An input whose first byte is even is a schema: the rest, as .proto text,
 * parsed.  An odd first byte makes the rest a message in Confluent's
 * framing after the schema id (message indexes, then the message) of the
 * schema below (every scalar type, enums, nested and recursive messages,
 * repeated fields, maps, oneofs, proto2 defaults and the well-known
 * types), read whole into JSON, then its top-level fields that columns
 * read without JSON (ssp_pb_values), each against that field alone as JSON
 * (the same value, NULL where JSON leaves it out, and an error exactly
 * when JSON errs on it).  Each must end in an error (ereport, which
 * here jumps back) or with JSON of balanced brackets, never read past its
 * input (AddressSanitizer: the input is copied to a buffer of its exact
 * size), never loop without end, never recurse past its bound.  palloc is
 * an arena freed after each input, so an error leaks nothing.
 *
 * Built and run by test/fuzz/run_fuzz.sh (make fuzz, and make test).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>

#include "common/shortest_dec.h"
#include "miscadmin.h"

#include "protobuf_internal.h"

/* the backend's error reporting, as the reader uses it: an error jumps back */
static sigjmp_buf fuzz_jump;

bool
errstart_cold(int elevel, const char *domain)
{
	return true;
}

bool
errstart(int elevel, const char *domain)
{
	return elevel >= ERROR;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	siglongjmp(fuzz_jump, 1);
}

int
errcode(int sqlerrcode)
{
	return 0;
}

int
errmsg(const char *fmt,...)
{
	return 0;
}

void
check_stack_depth(void)
{
}

volatile sig_atomic_t InterruptPending = false;

void
ProcessInterrupts(void)
{
}

/* palloc: an arena, freed after each input ------------------------------- */

typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	size_t		size;
	max_align_t pad[];
} Chunk;

static Chunk arena = {&arena, &arena, 0};
static Chunk kept = {&kept, &kept, 0};	/* the schema's, for every input */
static bool keep;

static void *
chunk_data(Chunk *c)
{
	return c->pad;
}

void *
palloc(Size size)
{
	Chunk	   *c = malloc(sizeof(Chunk) + size);

	if (c == NULL)
		abort();
	c->size = size;
	c->next = keep ? &kept : &arena;
	c->prev = c->next->prev;
	c->next->prev->next = c;
	c->next->prev = c;
	return chunk_data(c);
}

void *
palloc0(Size size)
{
	return memset(palloc(size), 0, size);
}

void *
repalloc(void *pointer, Size size)
{
	Chunk	   *c = (Chunk *) ((char *) pointer - offsetof(Chunk, pad));
	void	   *p = palloc(size);

	memcpy(p, pointer, Min(size, c->size));
	return p;
}

void
pfree(void *pointer)
{
}

char *
pstrdup(const char *in)
{
	return strcpy(palloc(strlen(in) + 1), in);
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = palloc(len + 1);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

static void
free_arena(void)
{
	while (arena.next != &arena)
	{
		Chunk	   *c = arena.next;

		arena.next = c->next;
		free(c);
	}
	arena.prev = &arena;
}

/* The schema of the messages ------------------------------------------------ */

static const char schema_text[] =
"syntax = \"proto3\";\n"
"package fuzz;\n"
"import \"google/protobuf/timestamp.proto\";\n"
"message First { string s = 1; }\n"
"message All {\n"
"  enum E { ZERO = 0; ONE = 1; }\n"
"  message Node { Node next = 1; repeated Node kids = 2; int32 v = 3; }\n"
"  double d = 1; float f = 2; int64 i64 = 3; uint64 u64 = 4; int32 i32 = 5;\n"
"  fixed64 f64 = 6; fixed32 f32 = 7; bool b = 8; string s = 9; bytes raw = 12;\n"
"  uint32 u32 = 13; E e = 14; sfixed32 sf32 = 15; sfixed64 sf64 = 16;\n"
"  sint32 s32 = 17; sint64 s64 = 18; Node node = 19;\n"
"  repeated int64 nums = 20; repeated double ds = 21 [packed = false];\n"
"  repeated string strs = 22; map<string, Node> nodes = 23; map<int64, E> es = 24;\n"
"  oneof o { string os = 25; Node on = 26; }\n"
"  optional int32 oi = 27;\n"
"  google.protobuf.Timestamp ts = 28; google.protobuf.Duration dur = 29;\n"
"  google.protobuf.Struct st = 30; google.protobuf.Value val = 31;\n"
"  google.protobuf.ListValue lv = 32; google.protobuf.Any any = 33;\n"
"  google.protobuf.Int64Value w64 = 34; google.protobuf.BytesValue wb = 35;\n"
"  google.protobuf.FieldMask fm = 36; google.protobuf.Empty empty = 37;\n"
"  map<bool, string> bs = 38;\n"
"}\n"
"message Two { Legacy x = 1; }\n";

static const char proto2_text[] =
"syntax = \"proto2\";\n"
"package fuzz;\n"
"message Legacy { optional int32 a = 1 [default = -3]; optional string b = 2 [default = \"d\\n\"];\n"
"  optional bytes c = 3 [default = \"\\001\\x02\"]; optional double e = 4 [default = inf];\n"
"  repeated int32 p = 5 [packed = true]; optional bool t = 6 [default = true];\n"
"  enum C { X = 1; Y = 2; } optional C c2 = 7; repeated C cs = 8 [packed = true]; }\n";

static SspPbSchema *schema;

static void
check_json(const char *s, int len)
{
	int			depth = 0;
	bool		in_string = false;
	int			i;

	for (i = 0; i < len; i++)
	{
		if (in_string)
		{
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_string = false;
		}
		else if (s[i] == '"')
			in_string = true;
		else if (s[i] == '{' || s[i] == '[')
			depth++;
		else if (s[i] == '}' || s[i] == ']')
		{
			if (--depth < 0)
				abort();
		}
	}
	if (depth != 0 || in_string || len == 0 || s[0] != '{')
		abort();
}

/* value_json: a value as ssp_pb_to_json writes it, to compare them */
static void
value_json(SspPbValue *v, StringInfo out)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];
	size_t		k;

	switch (v->kind)
	{
		case PBV_NULL:
			break;
		case PBV_INT:
			appendStringInfo(out, INT64_FORMAT, v->i);
			break;
		case PBV_UINT:
			appendStringInfo(out, UINT64_FORMAT, v->u);
			break;
		case PBV_BOOL:
			appendStringInfoString(out, v->i ? "true" : "false");
			break;
		case PBV_ENUM:
			if (v->name)
				appendStringInfo(out, "\"%s\"", v->name);
			else
				appendStringInfo(out, "%d", (int32) v->i);
			break;
		case PBV_DOUBLE:
		case PBV_FLOAT:
			{
				double		d = v->kind == PBV_FLOAT ? v->f : v->d;

				if (isnan(d))
					appendStringInfoString(out, "\"NaN\"");
				else if (isinf(d))
					appendStringInfoString(out, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
				else
				{
					if (v->kind == PBV_FLOAT)
						float_to_shortest_decimal_buf(v->f, buf);
					else
						double_to_shortest_decimal_buf(v->d, buf);
					appendStringInfoString(out, buf);
				}
				break;
			}
		case PBV_STRING:
			appendStringInfoChar(out, '"');
			for (k = 0; k < v->len; k++)
			{
				if (v->p[k] == '"' || v->p[k] == '\\')
					appendStringInfo(out, "\\%c", v->p[k]);
				else if (v->p[k] < 0x20)
					appendStringInfo(out, "\\u%04x", v->p[k]);
				else
					appendStringInfoChar(out, v->p[k]);
			}
			appendStringInfoChar(out, '"');
			break;
		case PBV_BYTES:
			appendStringInfoString(out, "\"\\\\x");
			for (k = 0; k < v->len; k++)
				appendStringInfo(out, "%02x", v->p[k]);
			appendStringInfoChar(out, '"');
			break;
		case PBV_TIMESTAMP:
			appendStringInfoChar(out, '"');
			ssp_pb_timestamp_text(v->i, v->nanos, out);
			appendStringInfoChar(out, '"');
			break;
	}
}

/*
 * check_values: each top-level field ssp_pb_values reads, against the same
 * field alone written as JSON: {"name":value}, or {} for NULL; an error in
 * one exactly when the other errs.
 */
static void
check_values(SspPbMessage *m, const char *p, size_t len)
{
	int			i;

	if (m->wk != PBW_NONE)
		return;
	for (i = 0; i < m->nfields; i++)
	{
		const char *only[1];
		StringInfoData json;
		StringInfoData mine;
		SspPbValue	v;
		volatile bool json_failed = false;

		if (!ssp_pb_direct(&m->fields[i]))
			continue;
		only[0] = m->fields[i].name;
		initStringInfo(&json);
		if (sigsetjmp(fuzz_jump, 0) == 0)
			ssp_pb_to_json(m, p, len, only, 1, &json);
		else
			json_failed = true;
		if (sigsetjmp(fuzz_jump, 0) != 0)
		{
			if (!json_failed)
				abort();		/* an error the JSON path does not give */
			continue;
		}
		ssp_pb_values(m, p, len, 1, &i, &v);
		if (json_failed)
			abort();			/* a value where the JSON path errs */
		initStringInfo(&mine);
		if (v.kind != PBV_NULL)
			appendStringInfo(&mine, "{\"%s\":", only[0]);
		else
			appendStringInfoChar(&mine, '{');
		value_json(&v, &mine);
		appendStringInfoChar(&mine, '}');
		if (strcmp(mine.data, json.data) != 0)
		{
			fprintf(stderr, "field %s: values %s, JSON %s\n", only[0], mine.data, json.data);
			abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (schema == NULL)
	{
		const char *refs[] = {proto2_text};

		keep = true;
		if (sigsetjmp(fuzz_jump, 0) != 0)
			abort();			/* the schema above must parse */
		schema = ssp_pb_parse_texts(1, refs, schema_text);
		keep = false;
	}
	if (size < 1)
		return 0;
	if ((data[0] & 1) == 0)
	{
		char	   *text = malloc(size);

		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		if (sigsetjmp(fuzz_jump, 0) == 0)
		{
			(void) ssp_pb_parse_texts(0, NULL, text);
#ifdef FUZZ_PRINT
			fprintf(stderr, "parsed\n");
#endif
		}
		free(text);
	}
	else
	{
		/* exactly the message's bytes: a read past them is a heap overflow */
		char	   *copy = malloc(size - 1 + 1);
		const char *p = copy;
		size_t		len = size - 1;

		memcpy(copy, data + 1, size - 1);
		if (sigsetjmp(fuzz_jump, 0) == 0)
		{
			SspPbMessage *m = ssp_pb_read_indexes(schema, &p, &len);
			StringInfoData out;

			if (p < copy || p > copy + size - 1)
				abort();
			initStringInfo(&out);
			ssp_pb_to_json(m, p, len, NULL, 0, &out);
			if (m->wk == PBW_NONE)
				check_json(out.data, out.len);
#ifdef FUZZ_PRINT
			fprintf(stderr, "%s\n", out.data);	/* -DFUZZ_PRINT: what it reads */
#endif
			check_values(m, p, len);
		}
		free(copy);
	}
	free_arena();
	return 0;
}
