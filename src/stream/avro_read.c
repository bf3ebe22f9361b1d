/*-------------------------------------------------------------------------
 *
 * avro_read.c
 *	  Apache Avro's binary encoding, read: zig-zag varints, little-endian
 *	  floats, lengths, union branches, blocks of arrays and maps, and a
 *	  value skipped whole.
 *
 * Every read is bounded by the bytes left: a length against them, a block's
 * count against what its items can take (items of no bytes against a
 * fixed bound), nesting against the stack and 512 levels.  An error is a
 * data exception (class 22, or 54001 for nesting): the message is a dead
 * letter.  Nothing here needs more of the backend than ereport, so the
 * fuzz target test/fuzz/fuzz_avro.c runs it alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "stream/avro_internal.h"

const char *const ssp_avro_kind_names[] = {
	"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"record", "enum", "array", "map", "union", "fixed"
};

void
ssp_avro_data_error(const char *fmt,...) pg_attribute_printf(1, 2);

void
ssp_avro_data_error(const char *fmt,...)
{
	char		buf[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid Avro message: %s", buf)));
}

int64
ssp_avro_long(SspAvroReader *r)
{
	uint64		v = 0;
	int			shift = 0;

	for (;;)
	{
		uint8		b;

		if (r->p >= r->end)
			ssp_avro_data_error("it ends inside a number");
		b = *r->p++;
		if (shift == 63 && (b & 0x7e) != 0)
			ssp_avro_data_error("a number does not fit in 64 bits");
		v |= (uint64) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			break;
		shift += 7;
		if (shift > 63)
			ssp_avro_data_error("a number does not fit in 64 bits");
	}
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

int32
ssp_avro_int(SspAvroReader *r)
{
	int64		v = ssp_avro_long(r);

	if (v < PG_INT32_MIN || v > PG_INT32_MAX)
		ssp_avro_data_error("an int does not fit in 32 bits");
	return (int32) v;
}

const uint8 *
ssp_avro_fixed(SspAvroReader *r, int64 n)
{
	const uint8 *p = r->p;

	if (n < 0)
		ssp_avro_data_error("a length is negative (%lld)", (long long) n);
	if (n > r->end - r->p)
		ssp_avro_data_error("a value of %lld bytes runs past the end of the message (%lld bytes left)",
							(long long) n, (long long) (r->end - r->p));
	r->p += n;
	return p;
}

/* read_bytes: bytes or a string, their length first. */
const uint8 *
ssp_avro_bytes(SspAvroReader *r, int64 *len)
{
	*len = ssp_avro_long(r);
	return ssp_avro_fixed(r, *len);
}

double
ssp_avro_double(SspAvroReader *r)
{
	const uint8 *p = ssp_avro_fixed(r, 8);
	uint64		u = 0;
	double		d;
	int			i;

	for (i = 7; i >= 0; i--)
		u = (u << 8) | p[i];
	memcpy(&d, &u, sizeof(d));
	return d;
}

float
ssp_avro_float(SspAvroReader *r)
{
	const uint8 *p = ssp_avro_fixed(r, 4);
	uint32		u = (uint32) p[0] | ((uint32) p[1] << 8) | ((uint32) p[2] << 16) | ((uint32) p[3] << 24);
	float		f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

bool
ssp_avro_boolean(SspAvroReader *r)
{
	const uint8 *p = ssp_avro_fixed(r, 1);

	if (*p > 1)
		ssp_avro_data_error("a boolean is %d", *p);
	return *p == 1;
}

/* read_branch: a union's branch index, checked. */
int
ssp_avro_branch(SspAvroReader *r, SspAvroType *t)
{
	int64		b = ssp_avro_long(r);

	if (b < 0 || b >= t->n)
		ssp_avro_data_error("union branch %lld of %d", (long long) b, t->n);
	return (int) b;
}

/*
 * block_count: the items of the next block of an array or map, 0 at the
 * end; a count no item type could fit in what is left is an error, as is
 * a count of items of no bytes over a bound (a message of a few bytes
 * cannot ask for 2^62 iterations).
 */
int64
ssp_avro_block(SspAvroReader *r, SspAvroType *items)
{
	int64		n = ssp_avro_long(r);

	if (n < 0)
	{
		if (n == PG_INT64_MIN)
			ssp_avro_data_error("a block count is out of range");
		n = -n;
		(void) ssp_avro_long(r);	/* the block's size in bytes */
	}
	if (!items->empty && n > r->end - r->p)
		ssp_avro_data_error("a block of %lld items runs past the end of the message", (long long) n);
	if (items->empty && n > 1000000)
		ssp_avro_data_error("a block of %lld items of no bytes", (long long) n);
	/* items of no bytes are bounded by the budget of values, not by the bytes */
	if (items->empty)
		ssp_avro_count(r, n);
	return n;
}

void
ssp_avro_enter(SspAvroReader *r)
{
	check_stack_depth();
	if (++r->depth > 512)
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("invalid Avro message: values nested more than 512 deep")));
	ssp_avro_count(r, 1);
}

/*
 * ssp_avro_count: n more values read; a message whose schema makes it more
 * than SSP_AVRO_MAX_VALUES values (records of fields of no bytes, nested,
 * take none of the message's bytes) is refused, and a long one can be
 * cancelled.
 */
void
ssp_avro_count(SspAvroReader *r, int64 n)
{
	r->values += n;
	if (r->values > SSP_AVRO_MAX_VALUES)
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("invalid Avro message: more than %d values", SSP_AVRO_MAX_VALUES)));
	if ((r->values & 0xffff) < n)
		CHECK_FOR_INTERRUPTS();
}

/* skip: past a value of type t. */
void
ssp_avro_skip(SspAvroType *t, SspAvroReader *r)
{
	int64		len;
	int64		n;
	int			i;

	if (t->empty)
		return;					/* a value of no bytes: nothing to skip */
	switch (t->kind)
	{
		case AV_NULL:
			break;
		case AV_BOOLEAN:
			(void) ssp_avro_boolean(r);
			break;
		case AV_INT:
		case AV_LONG:
		case AV_ENUM:
			(void) ssp_avro_long(r);
			break;
		case AV_FLOAT:
			(void) ssp_avro_fixed(r, 4);
			break;
		case AV_DOUBLE:
			(void) ssp_avro_fixed(r, 8);
			break;
		case AV_BYTES:
		case AV_STRING:
			(void) ssp_avro_bytes(r, &len);
			break;
		case AV_FIXED:
			(void) ssp_avro_fixed(r, t->n);
			break;
		case AV_RECORD:
			ssp_avro_enter(r);
			ssp_avro_count(r, t->n);
			for (i = 0; i < t->n; i++)
				ssp_avro_skip(t->types[i], r);
			r->depth--;
			break;
		case AV_UNION:
			ssp_avro_enter(r);
			ssp_avro_skip(t->types[ssp_avro_branch(r, t)], r);
			r->depth--;
			break;
		case AV_ARRAY:
		case AV_MAP:
			ssp_avro_enter(r);
			while ((n = ssp_avro_block(r, t->types[0])) > 0)
			{
				CHECK_FOR_INTERRUPTS();
				while (n-- > 0)
				{
					if (t->kind == AV_MAP)
						(void) ssp_avro_bytes(r, &len);
					ssp_avro_skip(t->types[0], r);
				}
			}
			r->depth--;
			break;
	}
}
