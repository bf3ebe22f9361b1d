/*-------------------------------------------------------------------------
 *
 * state_check.c
 *	  The stored states of Postgres's numeric aggregates, checked before
 *	  their deserialisation functions read them.
 *
 * Postgres never lets SQL call a deserialisation function: it trusts its
 * input, which only the matching serialisation function wrote.  The
 * generic path (combine.c) stores such states as bytea in a view's table
 * and reads them back through ssp.agg_combine and ssp.agg_finalize, which
 * anyone may call with any bytes.  numericvar_deserialize copies a
 * number's weight, sign, scale and digits as it finds them, and the
 * arithmetic after it assumes them sane: a weight near INT_MIN crashed
 * the server in var_pop's final function.  So a state is checked here
 * against the layout its deserialisation function reads, and refused
 * unless every field is one that the serialisation function could have
 * written.
 *
 * These are all the built-in aggregates of Postgres 15 with an internal
 * state and a combine function: sum and avg of numeric and bigint, and
 * the variances and standard deviations of smallint, integer, bigint and
 * numeric.  An extension's aggregate (hll's, say) has its own
 * deserialisation function, whose checks are its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/regproc.h"

#include "ssp.h"

/* numeric.c keeps these to itself */
#define NUMERIC_NBASE		10000
#define NUMERIC_POS_SIGN	0x0000
#define NUMERIC_NEG_SIGN	0x4000
#define NUMERIC_SCALE_MAX	0x3FFF
#define NUMERIC_WEIGHT_LIMIT (PG_INT16_MAX + 1)

/*
 * What a stored sum may hold: a sum of squares has up to twice a
 * numeric's weight and scale, and summing 2^63 of them adds five digits.
 * Within these, numeric.c's integer arithmetic on weights and lengths
 * cannot overflow.
 */
#define STATE_WEIGHT_MAX	(2 * NUMERIC_WEIGHT_LIMIT + 8)
#define STATE_SCALE_MAX		(2 * NUMERIC_SCALE_MAX)
#define STATE_DIGITS_MAX	(2 * STATE_WEIGHT_MAX + STATE_SCALE_MAX / 4 + 8)

typedef struct StateReader
{
	const unsigned char *p;
	const unsigned char *end;
	const char *problem;		/* the first thing found wrong */
} StateReader;

/* read_int: the next size bytes as a big-endian signed integer */
static bool
read_int(StateReader *r, int size, int64 *value)
{
	uint64		v = 0;
	int			i;

	if (r->problem)
		return false;
	if (r->end - r->p < size)
	{
		r->problem = "it ends too soon";
		return false;
	}
	for (i = 0; i < size; i++)
		v = (v << 8) | *r->p++;
	/* sign-extend from size bytes */
	if (size < 8 && (v & ((uint64) 1 << (size * 8 - 1))))
		v |= ~(uint64) 0 << (size * 8);
	*value = (int64) v;
	return true;
}

/* read_count: an int64 count, which is never negative */
static void
read_count(StateReader *r)
{
	int64		v;

	if (read_int(r, 8, &v) && v < 0)
		r->problem = "a count is negative";
}

/* read_var: a NumericVar as numericvar_serialize writes it */
static void
read_var(StateReader *r)
{
	int64		ndigits;
	int64		weight;
	int64		sign;
	int64		dscale;
	int64		i;

	if (!read_int(r, 4, &ndigits) || !read_int(r, 4, &weight) ||
		!read_int(r, 4, &sign) || !read_int(r, 4, &dscale))
		return;
	if (ndigits < 0 || ndigits > STATE_DIGITS_MAX || ndigits > (r->end - r->p) / 2)
		r->problem = "a number's length is out of range";
	else if (weight < -STATE_WEIGHT_MAX || weight > STATE_WEIGHT_MAX)
		r->problem = "a number's weight is out of range";
	else if (sign != NUMERIC_POS_SIGN && sign != NUMERIC_NEG_SIGN)
		r->problem = "a number's sign is invalid";
	else if (dscale < 0 || dscale > STATE_SCALE_MAX)
		r->problem = "a number's scale is out of range";
	for (i = 0; i < ndigits && !r->problem; i++)
	{
		int64		digit;

		if (read_int(r, 2, &digit) && (digit < 0 || digit >= NUMERIC_NBASE))
			r->problem = "a number has an invalid digit";
	}
}

/* read_scale_and_counts: NumericAggState's fields after its sums */
static void
read_scale_and_counts(StateReader *r)
{
	int64		max_scale;

	if (read_int(r, 4, &max_scale) && (max_scale < 0 || max_scale > NUMERIC_SCALE_MAX))
		r->problem = "its largest scale is out of range";
	read_count(r);				/* maxScaleCount */
	read_count(r);				/* NaNcount */
	read_count(r);				/* pInfcount */
	read_count(r);				/* nInfcount */
}

/*
 * ssp_check_stored_state: refuse stored state (a detoasted bytea) of
 * aggregate aggfnoid unless it is in the layout that deserialisation
 * function deserialfn reads.  A function not known here passes.
 */
void
ssp_check_stored_state(Oid deserialfn, Oid aggfnoid, const bytea *state)
{
	StateReader r;

	r.p = (const unsigned char *) VARDATA_ANY(state);
	r.end = r.p + VARSIZE_ANY_EXHDR(state);
	r.problem = NULL;

	switch (deserialfn)
	{
		case F_INT8_AVG_DESERIALIZE:	/* sum and avg of bigint */
			read_count(&r);
			read_var(&r);
			break;
		case F_NUMERIC_POLY_DESERIALIZE:	/* variances of smallint, integer */
			read_count(&r);
			read_var(&r);
			read_var(&r);
			break;
		case F_NUMERIC_AVG_DESERIALIZE: /* sum and avg of numeric */
			read_count(&r);
			read_var(&r);
			read_scale_and_counts(&r);
			break;
		case F_NUMERIC_DESERIALIZE: /* variances of bigint, numeric */
			read_count(&r);
			read_var(&r);
			read_var(&r);
			read_scale_and_counts(&r);
			break;
		default:
			return;
	}
	if (r.problem == NULL && r.p != r.end)
		r.problem = "it has bytes after its last field";
	if (r.problem)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid stored state of aggregate function %s",
						format_procedure(aggfnoid)),
				 errdetail("Its bytes are not a state that Postgres wrote: %s.", r.problem)));
}
