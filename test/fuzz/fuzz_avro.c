/*-------------------------------------------------------------------------
 *
 * fuzz_avro.c
 *	  libFuzzer target: src/stream/avro_read.c, the reader of Avro's binary
 *	  encoding, on values of hostile bytes.
 *
 * The input's first byte picks one of the schemas below (every kind of
 * type: primitives, enum, fixed, arrays and maps, unions, records, arrays
 * of items of no bytes, and a recursive record); the rest is a value, read
 * whole with ssp_avro_skip, as a view reads the fields no column wants.
 * Reading must end in an error (ereport, which here jumps back) or with the
 * reader inside the input, never read past it (AddressSanitizer: the input
 * is copied to a buffer of its exact size), never loop without end, never
 * recurse past its bound (a 600-deep recursive value must fail, not crash).
 * The backend functions the reader calls are stubbed below.
 *
 * Built and run by test/fuzz/run_fuzz.sh (make fuzz, and make test).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <setjmp.h>
#include <stdlib.h>

#include "miscadmin.h"

#include "avro_internal.h"

/* the backend's error reporting, as the reader uses it: an error jumps back */
static sigjmp_buf fuzz_jump;
static int	errors;

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
	errors++;
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

/* Schemas, built as avro_schema.c would parse them ------------------------ */

static SspAvroType *
type(AvroKind kind)
{
	SspAvroType *t = calloc(1, sizeof(SspAvroType));

	t->kind = kind;
	t->empty = kind == AV_NULL;
	return t;
}

static SspAvroType *
items(AvroKind kind, SspAvroType *item)
{
	SspAvroType *t = type(kind);

	t->types = calloc(1, sizeof(SspAvroType *));
	t->types[0] = item;
	return t;
}

static SspAvroType *
with(AvroKind kind, int n, SspAvroType **types)
{
	SspAvroType *t = type(kind);
	int			i;

	t->n = n;
	t->types = calloc(n, sizeof(SspAvroType *));
	t->names = calloc(n, sizeof(char *));
	t->empty = kind == AV_RECORD;
	for (i = 0; i < n; i++)
	{
		t->types[i] = types[i];
		t->names[i] = "f";
		if (kind == AV_RECORD)
			t->empty &= types[i]->empty;
	}
	return t;
}

#define NSCHEMAS 6
static SspAvroType *schemas[NSCHEMAS];

static void
build_schemas(void)
{
	SspAvroType *fixed4 = type(AV_FIXED);
	SspAvroType *enum3 = type(AV_ENUM);
	SspAvroType *node;

	fixed4->n = 4;
	enum3->n = 3;
	/* 0: a record of every primitive and named type */
	schemas[0] = with(AV_RECORD, 10, (SspAvroType *[]) {
		type(AV_NULL), type(AV_BOOLEAN), type(AV_INT), type(AV_LONG), type(AV_FLOAT),
		type(AV_DOUBLE), type(AV_BYTES), type(AV_STRING), enum3, fixed4});
	/* 1: arrays and maps of unions */
	schemas[1] = with(AV_RECORD, 2, (SspAvroType *[]) {
		items(AV_ARRAY, with(AV_UNION, 3, (SspAvroType *[]) {type(AV_NULL), type(AV_STRING), type(AV_DOUBLE)})),
		items(AV_MAP, items(AV_ARRAY, type(AV_LONG)))});
	/* 2: an array of nulls, and a map of empty records: items of no bytes */
	schemas[2] = with(AV_RECORD, 2, (SspAvroType *[]) {
		items(AV_ARRAY, type(AV_NULL)),
		items(AV_MAP, with(AV_RECORD, 1, (SspAvroType *[]) {type(AV_NULL)}))});
	/* 3: a recursive record: Node {next: [null, Node]} */
	node = type(AV_RECORD);
	node->n = 1;
	node->types = calloc(1, sizeof(SspAvroType *));
	node->names = calloc(1, sizeof(char *));
	node->names[0] = "next";
	node->types[0] = with(AV_UNION, 2, (SspAvroType *[]) {type(AV_NULL), node});
	schemas[3] = node;
	/* 4: a long alone, 5: a string alone */
	schemas[4] = type(AV_LONG);
	schemas[5] = type(AV_STRING);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool built = false;
	uint8	   *copy;
	SspAvroReader r;

	if (!built)
	{
		build_schemas();
		built = true;
	}
	if (size < 1)
		return 0;
	/* exactly the value's bytes: a read past them is a heap overflow */
	copy = malloc(size - 1 + 1);
	memcpy(copy, data + 1, size - 1);
	r.p = copy;
	r.end = copy + size - 1;
	r.depth = 0;
	r.values = 0;
	if (sigsetjmp(fuzz_jump, 0) == 0)
	{
		ssp_avro_skip(schemas[data[0] % NSCHEMAS], &r);
		if (r.p < copy || r.p > r.end)
			abort();
	}
	free(copy);
	return 0;
}
