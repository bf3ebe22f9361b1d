/*-------------------------------------------------------------------------
 *
 * aggregate.c
 *	  What each aggregate of a continuous view becomes: the state columns
 *	  of the materialisation table, the partial aggregate over a batch, the
 *	  merge with the stored state, the merge of many states (for sliding
 *	  and session windows), and the finished value the view shows.
 *
 * The built-in aggregates have a fast path in plain SQL: count, sum, avg
 * (as sum and count), min, max, bool_and/or/every, bit_and/or/xor, the
 * stddev/variance family (n, sum and sum of squares in numeric for exact
 * inputs, Postgres's own float8 transition arrays for floats) and the
 * corr/covar/regr family.  Any other aggregate with a combine function
 * takes the generic path (plan_generic): its own transition state is
 * stored, through the functions of combine.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "parser/parse_agg.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "compile/build.h"
#include "compile/view.h"
#include "compile/window.h"

/* COL: add a state column to AggPlan p: name, SQL type, partial, merge */
#define COL(name, type, partial, merge, readagg) \
	(p->cols = lappend(p->cols, (name)), \
	 p->types = lappend(p->types, (type)), \
	 p->partials = lappend(p->partials, (partial)), \
	 p->merges = lappend(p->merges, (merge)), \
	 p->readaggs = lappend(p->readaggs, (readagg)))
#define SUM_MERGE(c) psprintf("COALESCE(m.%s + excluded.%s, m.%s, excluded.%s)", c, c, c, c)
/* m.c op excluded.c, where a NULL side (no input yet) gives the other */
#define NULLS_SKIPPED_MERGE(c, op) \
	psprintf("CASE WHEN m.%s IS NULL THEN excluded.%s WHEN excluded.%s IS NULL THEN m.%s ELSE m.%s %s excluded.%s END", \
			 c, c, c, c, c, op, c)

static const char *
aggname(Aggref *agg)
{
	return get_func_name(agg->aggfnoid);
}

/* the two-argument float aggregates: Postgres's own (N, Sx, Sxx, Sy, Syy, Sxy) */
static const char *const regr_aggs[] = {
	"corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count",
	"regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", NULL
};

static bool
is_regr(const char *name)
{
	const char *const *r;

	for (r = regr_aggs; *r; r++)
		if (strcmp(name, *r) == 0)
			return true;
	return false;
}

/*
 * check_agg: refuse an aggregate whose state cannot be kept and merged: an
 * ordered-set one, ORDER BY inside it, and DISTINCT where the view cannot
 * keep the distinct values (distinct_ok false: over a changelog) or the
 * aggregate has other than one argument.
 */
static void
check_agg(Aggref *agg, bool distinct_ok)
{
	const char *name = aggname(agg);

	if (agg->aggkind != AGGKIND_NORMAL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ordered-set aggregate %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errdetail("It needs all of a group's values at once; a continuous view keeps a state that merges."),
				 errhint("For percentiles, the tdigest extension's aggregate tdigest(value, 100) can be kept; read it with tdigest_percentile().")));
	if (agg->aggdistinct && !distinct_ok)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside aggregate %s is not supported over a changelog", name),
				 errdetail("A version that leaves the aggregate would have to know whether another key still holds its value.")));
	if (agg->aggdistinct && list_length(agg->args) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside aggregate %s with %d arguments is not supported in a continuous view",
						name, list_length(agg->args)),
				 errdetail("A continuous view keeps the distinct values of one argument.")));
	if (agg->aggorder)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ORDER BY inside aggregate %s is not supported in a continuous view", name),
				 errdetail("A continuous view merges the states of batches in no particular order.")));
}

/*
 * idempotent: an aggregate that DISTINCT does not change (min, max, the
 * boolean and bitwise ANDs and ORs): a value seen twice counts once anyway.
 */
static bool
idempotent(const char *name)
{
	return strcmp(name, "min") == 0 || strcmp(name, "max") == 0 ||
		strcmp(name, "bool_and") == 0 || strcmp(name, "bool_or") == 0 ||
		strcmp(name, "every") == 0 || strcmp(name, "bit_and") == 0 ||
		strcmp(name, "bit_or") == 0;
}

/* the fast path handles only Postgres's own aggregates */
static bool
is_builtin(Aggref *agg)
{
	return get_func_namespace(agg->aggfnoid) == PG_CATALOG_NAMESPACE;
}

/*
 * plan_variance: the stddev and variance family.  Floats keep Postgres's
 * own (N, Sx, Sxx) transition array, merged by float8_combine; integers and
 * numeric keep n, sum and sum of squares in numeric, finished as
 * numeric_stddev_internal does, so the digits are Postgres's own.
 */
static void
plan_variance(AggPlan *p, const char *name, const char *arg, const char *filter,
			  bool isfloat, char *c1, char *c2, char *c3)
{
	bool		pop = strstr(name, "_pop") != NULL;
	bool		sd = strncmp(name, "stddev", 6) == 0;

	if (isfloat)
	{
		/* Postgres's own (N, Sx, Sxx) transition array and functions */
		COL(c1, "double precision[]",
			psprintf("ARRAY[pg_catalog.count(%s)%s::double precision, "
					 "COALESCE(pg_catalog.sum((%s)::double precision)%s, 0), "
					 "COALESCE(pg_catalog.var_pop((%s)::double precision)%s * pg_catalog.count(%s)%s, 0)]",
					 arg, filter, arg, filter, arg, filter, arg, filter),
			psprintf("pg_catalog.float8_combine(m.%s, excluded.%s)", c1, c1), "ssp.float8_combine_agg");
		p->final = psprintf("pg_catalog.float8_%s_%s(m.%s)", sd ? "stddev" : "var",
							pop ? "pop" : "samp", c1);
	}
	else
	{
		/* n, sum and sum of squares, finished as numeric_var does */
		COL(c2, "bigint", psprintf("pg_catalog.count(%s)%s", arg, filter),
			psprintf("m.%s + excluded.%s", c2, c2), "pg_catalog.sum");
		COL(c1, "numeric", psprintf("pg_catalog.sum((%s)::numeric)%s", arg, filter), SUM_MERGE(c1), "pg_catalog.sum");
		COL(c3, "numeric", psprintf("pg_catalog.sum((%s)::numeric * (%s)::numeric)%s", arg, arg, filter),
			SUM_MERGE(c3), "pg_catalog.sum");
		{
			char	   *var = psprintf("(m.%s::numeric * m.%s - m.%s * m.%s) / (m.%s::numeric * %s)",
									   c2, c3, c1, c1, c2,
									   pop ? psprintf("m.%s", c2) : psprintf("(m.%s - 1)", c2));

			p->final = psprintf("(CASE WHEN m.%s <= %d THEN NULL "
								"WHEN m.%s::numeric * m.%s - m.%s * m.%s <= 0 THEN 0::numeric "
								"ELSE %s(%s) END)",
								c2, pop ? 0 : 1, c2, c3, c1, c1,
								sd ? "ssp.numeric_sqrt_scaled" : "", var);
		}
	}
}

/*
 * plan_regr: corr, covar_* and regr_*(y, x).  The state is Postgres's own
 * transition array (N, Sx, Sxx, Sy, Syy, Sxy), a batch's made from the
 * regr_* aggregates themselves, merged by float8_regr_combine and finished
 * by the aggregate's own final function, as parallel aggregation does (the
 * last digits may differ from a serial run).  regr_count is a count.
 */
static void
plan_regr(AggPlan *p, const char *name, const char *y, const char *x, const char *filter,
		  char *c1)
{
	char	   *n = psprintf("pg_catalog.regr_count(%s, %s)%s", y, x, filter);

	if (strcmp(name, "regr_count") == 0)
	{
		COL(c1, "bigint", n, psprintf("m.%s + excluded.%s", c1, c1), "pg_catalog.sum");
		p->final = psprintf("m.%s", c1);
		return;
	}
	COL(c1, "double precision[]",
		psprintf("ARRAY[%s::double precision, "
				 "COALESCE(pg_catalog.regr_avgx(%s, %s)%s * %s, 0), COALESCE(pg_catalog.regr_sxx(%s, %s)%s, 0), "
				 "COALESCE(pg_catalog.regr_avgy(%s, %s)%s * %s, 0), COALESCE(pg_catalog.regr_syy(%s, %s)%s, 0), "
				 "COALESCE(pg_catalog.regr_sxy(%s, %s)%s, 0)]",
				 n, y, x, filter, n, y, x, filter, y, x, filter, n, y, x, filter, y, x, filter),
		psprintf("pg_catalog.float8_regr_combine(m.%s, excluded.%s)", c1, c1),
		"ssp.float8_regr_combine_agg");
	p->final = psprintf("pg_catalog.float8_%s(m.%s)", name, c1);
}

/*
 * qualified_type: a type's name for a cast that keeps any length: bit
 * and character without one would mean bit(1) and character(1).
 */
static char *
qualified_type(Oid type)
{
	return format_type_extended(type, -1, FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

/*
 * plan_generic: any aggregate with a combine function, by its own
 * transition state (combine.c): serialised to bytea where it is internal,
 * a batch's made by ssp.agg_partial, merged by ssp.agg_combine, finished
 * by ssp.agg_finalize (over DISTINCT, the partial reads _ssp_n._vN as
 * plan_distinct says).  The calls name the aggregate as a regprocedure
 * literal, which survives a dump and restore, and end with NULLs of its
 * input types, from which the functions resolve polymorphic types.
 */
static AggPlan *
plan_generic(Build *b, Aggref *agg, AggPlan *p, int n, char *c1)
{
	char	   *distinct_value = psprintf("_ssp_n._v%d", n);
	HeapTuple	tup;
	Form_pg_aggregate form;
	Oid			argtypes[FUNC_MAX_ARGS];
	int			nargs = 0;
	Oid			transtype;
	const char *state;
	StringInfoData args;
	StringInfoData nulls;
	ListCell   *lc;

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", agg->aggfnoid);
	form = (Form_pg_aggregate) GETSTRUCT(tup);
	if (!OidIsValid(form->aggcombinefn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errdetail("It has no combine function, so the states of two batches cannot be merged."),
				 errhint("A continuous view keeps any aggregate that Postgres can run in parallel: one with a COMBINEFUNC (and SERIALFUNC and DESERIALFUNC where its state type is internal).")));
	initStringInfo(&args);
	initStringInfo(&nulls);
	foreach(lc, agg->args)
	{
		Expr	   *e = ((TargetEntry *) lfirst(lc))->expr;
		const char *type = qualified_type(exprType((Node *) e));

		argtypes[nargs++] = exprType((Node *) e);
		/* each input as the type the aggregate takes, so it sees that type */
		appendStringInfo(&args, ", (%s)::%s",
						 p->distinct_arg ? distinct_value : ssp_deparse(b, (Node *) e), type);
		appendStringInfo(&nulls, ", NULL::%s", type);
	}
	if (nargs == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errdetail("Only aggregates with arguments can be kept by their state.")));
	/* the values kept are not NULL: an aggregate that takes NULLs would miss one */
	if (p->distinct_arg && !is_builtin(agg) && !func_strict(form->aggtransfn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside aggregate %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errdetail("Its transition function takes NULL values; a continuous view keeps the distinct values that are not NULL.")));
	transtype = resolve_aggregate_transtype(agg->aggfnoid, form->aggtranstype, argtypes, nargs);
	if (transtype == INTERNALOID && (!OidIsValid(form->aggserialfn) || !OidIsValid(form->aggdeserialfn)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errdetail("Its state is of type internal and it has no serialization functions, so the state cannot be stored.")));
	ReleaseSysCache(tup);

	state = transtype == INTERNALOID ? "bytea" : qualified_type(transtype);
	p->fn = psprintf("%s::pg_catalog.regprocedure",
					 quote_literal_cstr(format_procedure_qualified(agg->aggfnoid)));
	p->nulls = nulls.data;
	COL(c1, (char *) state,
		psprintf("ssp.agg_partial(%s, NULL::%s%s)%s", p->fn, state, args.data,
				 p->distinct_arg ? psprintf(" FILTER (WHERE %s IS DISTINCT FROM NULL)", distinct_value) :
				 agg->aggfilter ? psprintf(" FILTER (WHERE %s)",
										   ssp_deparse(b, (Node *) agg->aggfilter)) : ""),
		psprintf("ssp.agg_combine(%s, m.%s, excluded.%s%s)", p->fn, c1, c1, p->nulls),
		NULL);
	p->final = psprintf("ssp.agg_finalize(%s, m.%s, NULL::%s%s)", p->fn, c1,
						qualified_type(agg->aggtype), p->nulls);
	return p;
}

/*
 * ssp_merge_many: SQL that merges the states in expr of one state column
 * over many rows, with readagg (NULL: a generic aggregate's).
 */
char *
ssp_merge_many(AggPlan *p, const char *readagg, const char *expr)
{
	if (p->ordered)
		return "NULL";			/* never: what would merge them is refused */
	if (readagg == NULL)
		return psprintf("ssp.agg_combine_agg(%s, %s%s)", p->fn, expr, p->nulls);
	return psprintf("%s(%s)", readagg, expr);
}

/*
 * plan_concat: array_agg, string_agg, json_agg and jsonb_agg, which
 * Postgres cannot combine (a merge would not know which part comes
 * first), kept as concatenations in arrival order: a batch's values in
 * order of partition and offset, after those of the batches before.  Their
 * states cannot be merged in any other order: a view with one refuses
 * what would (viewsql.c, rollup.c).
 */
static void
plan_concat(Build *b, Aggref *agg, AggPlan *p, const char *name, const char *arg,
			const char *filter, char *c1)
{
	const char *order = " ORDER BY b._ssp_partition, b._ssp_offset";
	const char *type = format_type_with_typemod(agg->aggtype, -1);
	char	   *partial;
	char	   *merge;

	if (b->stream_join)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s over a join of streams is not supported", name),
				 errdetail("It keeps values in arrival order, and a join's pairs have none.")));
	p->ordered = true;
	if (strcmp(name, "string_agg") == 0)
	{
		Node	   *sep = (Node *) ((TargetEntry *) lsecond(agg->args))->expr;

		if (!IsA(sep, Const) || ((Const *) sep)->constisnull)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the delimiter of string_agg in a continuous view must be a constant%s",
							IsA(sep, Const) ? " other than NULL" : ""),
					 errdetail("The parts of two batches are joined with it.")));
		partial = psprintf("pg_catalog.string_agg(%s, %s%s)%s", arg, ssp_deparse(b, sep), order, filter);
		merge = NULLS_SKIPPED_MERGE(c1, psprintf("|| %s ||", ssp_deparse(b, sep)));
	}
	else
	{
		partial = psprintf("pg_catalog.%s(%s%s)%s", name, arg, order, filter);
		merge = NULLS_SKIPPED_MERGE(c1, "||");
		/*
		 * json has no ||: the text of two arrays, made one, as json_agg
		 * writes one: ", " between values, and a new line before an array
		 * or a composite (not a null) after the first
		 */
		if (strcmp(name, "json_agg") == 0)
		{
			Oid			argtype = getBaseType(linitial_oid(agg->aggargtypes));
			bool		structured = type_is_rowtype(argtype) || OidIsValid(get_element_type(argtype));
			const char *sep = structured ?
				psprintf("CASE WHEN pg_catalog.substr(excluded.%s::text, 2, 1) = 'n' THEN ', ' ELSE E', \\n ' END", c1) :
				"', '";

			merge = psprintf("CASE WHEN m.%s IS NULL THEN excluded.%s WHEN excluded.%s IS NULL THEN m.%s "
							 "ELSE (pg_catalog.left(m.%s::text, -1) || %s || pg_catalog.substr(excluded.%s::text, 2))::json END",
							 c1, c1, c1, c1, c1, sep, c1);
		}
	}
	/* a group's first batch may have had no value (FILTER): a NULL side */
	COL(c1, (char *) type, partial, merge, NULL);
	p->final = psprintf("m.%s", c1);
}

/*
 * plan_retracting: an aggregate over a changelog, whose old versions leave
 * it as new ones enter: over signed rows d (d._sign -1 for a version that
 * leaves, 1 for one that enters, the aggregate's input d._iN as stored when
 * it entered; p->input says what that is).  count, sum and avg of integers
 * and numerics take a value back; min and max are computed again, for the
 * groups a batch touched, from the versions kept (p->recompute, over "v");
 * any other aggregate is refused.
 */
static AggPlan *
plan_retracting(Build *b, Aggref *agg, AggPlan *p, int n)
{
	const char *name = aggname(agg);
	Oid			argtype = agg->aggargtypes ? linitial_oid(agg->aggargtypes) : InvalidOid;
	bool		isexact = argtype == INT2OID || argtype == INT4OID ||
		argtype == INT8OID || argtype == NUMERICOID;
	char	   *c1 = psprintf("_a%d", n);
	char	   *c2 = psprintf("_a%d_n", n);
	char	   *in = psprintf("d._i%d", n);
	/* count(x) counts a composite of null fields: not null as a value */
	char	   *counted = psprintf("pg_catalog.sum(CASE WHEN %s %s THEN 0 ELSE d._sign END)", in,
								   OidIsValid(argtype) && type_is_rowtype(argtype) ?
								   "IS NOT DISTINCT FROM NULL" : "IS NULL");
	bool		count = strcmp(name, "count") == 0 && list_length(agg->args) <= 1;
	bool		minmax = strcmp(name, "min") == 0 || strcmp(name, "max") == 0;

	if (agg->aggdistinct && b->rebuilding)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stream \"%s\" became a changelog after the continuous view was created",
						b->stream->relname),
				 errdetail("The view's DISTINCT aggregates were kept for a log of rows, not for versions of keys."),
				 errhint("Set the stream's options back, or create the view again.")));
	check_agg(agg, false);
	if (!is_builtin(agg) ||
		!(count || minmax || ((strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0) && isexact)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s cannot be kept over a changelog", format_procedure(agg->aggfnoid)),
				 errdetail("When a key's row changes, its old version leaves the aggregate; only count, min, max, and sum and avg of integers and numerics, can take it back."),
				 errhint("Keep the rows with ssp.primary_key in a view of their own, and aggregate it when you query it%s.",
						 isexact || argtype == InvalidOid ? "" : "; or cast the argument to numeric")));
	/* the input as it entered: the argument, where FILTER passes (count(*): 1) */
	if (agg->args)
		p->input = ssp_deparse(b, (Node *) ((TargetEntry *) linitial(agg->args))->expr);
	else
		p->input = "1";
	if (agg->aggfilter)
		p->input = psprintf("CASE WHEN %s THEN %s END", ssp_deparse(b, (Node *) agg->aggfilter), p->input);
	else if (!agg->args)
		p->input = NULL;		/* count(*): nothing to keep */
	if (p->input == NULL)
		counted = "pg_catalog.sum(d._sign)";

	if (minmax)
	{
		/* the batch leaves it NULL; the versions kept say what it is */
		char	   *type = format_type_with_typemod(agg->aggtype, -1);

		COL(c1, type, psprintf("NULL::%s", type), psprintf("m.%s", c1), psprintf("pg_catalog.%s", name));
		p->recompute = psprintf("pg_catalog.%s(v._i%d)", name, n);
		p->final = psprintf("m.%s", c1);
		return p;
	}
	COL(c2, "bigint", counted, psprintf("m.%s + excluded.%s", c2, c2), "pg_catalog.sum");
	if (count)
	{
		p->final = psprintf("m.%s", c2);
		return p;
	}
	/*
	 * A numeric may be NaN or an infinity, which subtraction cannot take
	 * back (NaN - NaN is NaN): the finite values are summed, and those
	 * others counted, each kind in a column of its own, as Postgres's
	 * own sum(numeric) keeps them.  A view made before 0.3 has no such
	 * columns (its table says), and goes on without.
	 */
	if (argtype == NUMERICOID &&
		(!b->rebuilding || get_attnum(b->mrel_oid, psprintf("_a%d_nan", n)) != InvalidAttrNumber))
	{
		static const char *const kinds[3] = {"nan", "pinf", "ninf"};
		static const char *const values[3] = {"NaN", "Infinity", "-Infinity"};
		const char *value;
		int			k;

		for (k = 0; k < 3; k++)
		{
			char	   *ck = psprintf("_a%d_%s", n, kinds[k]);

			COL(ck, "bigint",
				psprintf("pg_catalog.sum(CASE WHEN (%s)::numeric OPERATOR(pg_catalog.=) '%s'::numeric THEN d._sign ELSE 0 END)",
						 in, values[k]),
				psprintf("m.%s + excluded.%s", ck, ck), "pg_catalog.sum");
		}
		COL(c1, "numeric",
			psprintf("pg_catalog.sum(d._sign * CASE WHEN (%s)::numeric NOT IN ('NaN'::numeric, 'Infinity'::numeric, '-Infinity'::numeric) THEN (%s)::numeric END)",
					 in, in),
			SUM_MERGE(c1), "pg_catalog.sum");
		value = psprintf("m.%s", c1);
		if (strcmp(name, "avg") == 0)
			value = psprintf("(m.%s / NULLIF(m.%s, 0)::numeric)", c1, c2);
		value = psprintf("CASE WHEN m._a%d_nan > 0 OR (m._a%d_pinf > 0 AND m._a%d_ninf > 0) THEN 'NaN'::numeric "
						 "WHEN m._a%d_pinf > 0 THEN 'Infinity'::numeric WHEN m._a%d_ninf > 0 THEN '-Infinity'::numeric "
						 "ELSE COALESCE(%s, 0) END",
						 n, n, n, n, n, value);
		p->final = psprintf("CASE WHEN m.%s > 0 THEN (%s)::%s END", c2, value,
							format_type_with_typemod(agg->aggtype, -1));
		return p;
	}
	COL(c1, "numeric", psprintf("pg_catalog.sum(d._sign * (%s)::numeric)", in), SUM_MERGE(c1), "pg_catalog.sum");
	if (strcmp(name, "sum") == 0)
		p->final = psprintf("CASE WHEN m.%s > 0 THEN m.%s::%s END", c2, c1,
							format_type_with_typemod(agg->aggtype, -1));
	else
		p->final = psprintf("(m.%s / NULLIF(m.%s, 0)::numeric)", c1, c2);
	return p;
}

/*
 * plan_distinct: an aggregate over DISTINCT values.  The view keeps each
 * group's distinct values in a table of its own (viewsql.c); a batch adds
 * those new to their group, and the aggregate's partial is taken over
 * them alone ("_ssp_n._vN"), the FILTER applied as they are added.  What
 * merges two states is then what merges the aggregate without DISTINCT:
 * the values behind them never overlap.
 */
static void
plan_distinct(Build *b, Aggref *agg, AggPlan *p)
{
	const char *name = aggname(agg);
	Node	   *arg = (Node *) ((TargetEntry *) linitial(agg->args))->expr;

	if (strcmp(name, "array_agg") == 0 || strcmp(name, "string_agg") == 0 ||
		strcmp(name, "json_agg") == 0 || strcmp(name, "jsonb_agg") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside aggregate %s is not supported in a continuous view", name),
				 errdetail("Postgres gives its distinct values in sorted order; a continuous view keeps them in arrival order."),
				 errhint("Keep %s without DISTINCT, or count the distinct values with count(DISTINCT ...).", name)));
	if (get_typtype(exprType(arg)) == TYPTYPE_PSEUDO)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside aggregate %s over a value of type %s is not supported in a continuous view",
						name, format_type_be(exprType(arg))),
				 errdetail("A continuous view keeps the distinct values in a table, which cannot have a column of that type."),
				 errhint("Take DISTINCT over a column, or over a value of a named type.")));
	p->distinct_arg = ssp_deparse(b, arg);
	p->distinct_filter = agg->aggfilter ? ssp_deparse(b, (Node *) agg->aggfilter) : NULL;
	p->distinct_type = ssp_column_type_sql(arg, true);
	p->distinct_null = psprintf("NULL::%s", p->distinct_type);
}

/* plan_agg: what an aggregate becomes; refuses unsupported ones. */
static AggPlan *
plan_agg(Build *b, Aggref *agg, int n)
{
	AggPlan    *p = palloc0(sizeof(AggPlan));
	const char *name = aggname(agg);
	Oid			argtype = agg->aggargtypes ? linitial_oid(agg->aggargtypes) : InvalidOid;
	char	   *arg = NULL;
	char	   *filter = "";
	char	   *aggtype = format_type_with_typemod(agg->aggtype, -1);
	bool		isfloat = argtype == FLOAT4OID || argtype == FLOAT8OID;
	bool		isexact = argtype == INT2OID || argtype == INT4OID ||
		argtype == INT8OID || argtype == NUMERICOID;
	char	   *c1 = psprintf("_a%d", n);
	char	   *c2 = psprintf("_a%d_n", n);
	char	   *c3 = psprintf("_a%d_sq", n);

	if (b->stream->changelog)
		return plan_retracting(b, agg, p, n);
	check_agg(agg, true);
	if (agg->aggdistinct && !(is_builtin(agg) && idempotent(name)))
		plan_distinct(b, agg, p);
	if (!is_builtin(agg) || (!b->opts->fast_path && agg->args != NIL))
		return plan_generic(b, agg, p, n, c1);
	if (agg->args)
		arg = p->distinct_arg ? psprintf("_ssp_n._v%d", n) :
			ssp_deparse(b, (Node *) ((TargetEntry *) linitial(agg->args))->expr);
	if (p->distinct_arg)
		filter = psprintf(" FILTER (WHERE _ssp_n._v%d IS DISTINCT FROM NULL)", n);
	else if (agg->aggfilter)
		filter = psprintf(" FILTER (WHERE %s)", ssp_deparse(b, (Node *) agg->aggfilter));

	if (strcmp(name, "count") == 0 && list_length(agg->args) <= 1)
	{
		COL(c1, "bigint", psprintf("pg_catalog.count(%s)%s", arg ? arg : "*", filter),
			psprintf("m.%s + excluded.%s", c1, c1), "pg_catalog.sum");
		p->final = psprintf("m.%s", c1);
	}
	else if (strcmp(name, "sum") == 0)
	{
		COL(c1, aggtype, psprintf("pg_catalog.sum(%s)%s", arg, filter), SUM_MERGE(c1), "pg_catalog.sum");
		p->final = psprintf("m.%s", c1);
	}
	else if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0)
	{
		/*
		 * LEAST and GREATEST order as min and max do, and skip NULLs; of
		 * two equal values (1.0 and 1.00, 'a' and 'A' in a collation that
		 * takes them for equal) they keep the first, min and max the
		 * later: the batch's first
		 */
		COL(c1, aggtype, psprintf("pg_catalog.%s(%s)%s", name, arg, filter),
			psprintf("%s(excluded.%s, m.%s)", name[1] == 'i' ? "LEAST" : "GREATEST", c1, c1), name[1] == 'i' ? "pg_catalog.min" : "pg_catalog.max");
		p->final = psprintf("m.%s", c1);
	}
	else if (strcmp(name, "bool_and") == 0 || strcmp(name, "every") == 0 ||
			 strcmp(name, "bool_or") == 0)
	{
		bool		isand = strcmp(name, "bool_or") != 0;

		COL(c1, "boolean", psprintf("pg_catalog.%s(%s)%s", isand ? "bool_and" : "bool_or", arg, filter),
			NULLS_SKIPPED_MERGE(c1, isand ? "AND" : "OR"), isand ? "pg_catalog.bool_and" : "pg_catalog.bool_or");
		p->final = psprintf("m.%s", c1);
	}
	else if (strcmp(name, "avg") == 0 && argtype == INTERVALOID)
	{
		/* as interval_avg: the sum divided by the count as a float */
		COL(c1, "interval", psprintf("pg_catalog.sum(%s)%s", arg, filter), SUM_MERGE(c1), "pg_catalog.sum");
		COL(c2, "bigint", psprintf("pg_catalog.count(%s)%s", arg, filter),
			psprintf("m.%s + excluded.%s", c2, c2), "pg_catalog.sum");
		p->final = psprintf("(m.%s / NULLIF(m.%s, 0)::double precision)", c1, c2);
	}
	else if (strcmp(name, "avg") == 0 && (isfloat || isexact))
	{
		COL(c1, isfloat ? "double precision" : "numeric",
			psprintf("pg_catalog.sum((%s)::%s)%s", arg, isfloat ? "double precision" : "numeric", filter),
			SUM_MERGE(c1), "pg_catalog.sum");
		COL(c2, "bigint", psprintf("pg_catalog.count(%s)%s", arg, filter),
			psprintf("m.%s + excluded.%s", c2, c2), "pg_catalog.sum");
		p->final = psprintf("(m.%s / NULLIF(m.%s, 0)::%s)", c1, c2,
							isfloat ? "double precision" : "numeric");
	}
	else if ((strncmp(name, "stddev", 6) == 0 || strncmp(name, "var", 3) == 0) &&
			 (isfloat || isexact))
		plan_variance(p, name, arg, filter, isfloat, c1, c2, c3);
	else if (is_regr(name))
		plan_regr(p, name, arg, ssp_deparse(b, (Node *) ((TargetEntry *) lsecond(agg->args))->expr),
				  filter, c1);
	else if ((strcmp(name, "array_agg") == 0 || strcmp(name, "string_agg") == 0 ||
			  strcmp(name, "json_agg") == 0 || strcmp(name, "jsonb_agg") == 0) && !agg->aggorder)
		plan_concat(b, agg, p, name, arg, filter, c1);
	else if ((strcmp(name, "bit_and") == 0 || strcmp(name, "bit_or") == 0 ||
			  strcmp(name, "bit_xor") == 0) && agg->aggtype == argtype)
	{
		const char *op = name[4] == 'a' ? "&" : name[4] == 'o' ? "|" : "#";

		COL(c1, aggtype, psprintf("pg_catalog.%s(%s)%s", name, arg, filter),
			NULLS_SKIPPED_MERGE(c1, op), psprintf("pg_catalog.%s", name));
		p->final = psprintf("m.%s", c1);
	}
	else
		return plan_generic(b, agg, p, n, c1);
	return p;
}

bool
ssp_collect_aggs(Node *node, Build *b)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		ListCell   *lc;

		foreach(lc, b->aggs)
			if (equal(lfirst(lc), node))
				return false;
		b->aggs = lappend(b->aggs, node);
		b->plans = lappend(b->plans, plan_agg(b, (Aggref *) node, list_length(b->aggs)));
		return false;
	}
	return expression_tree_walker(node, ssp_collect_aggs, b);
}

/*
 * to_final: the expression with each aggregate and group key replaced by a
 * Param that stands for its finished value (resolved in final_sql).
 */
static Node *
to_final(Node *node, Build *b)
{
	ListCell   *lc;
	int			i = 0;

	if (node == NULL)
		return NULL;
	foreach(lc, b->group_exprs)
	{
		i++;
		if (equal(lfirst(lc), node))
		{
			Param	   *p = makeNode(Param);

			p->paramkind = PARAM_EXTERN;
			p->paramid = 100000 + i;
			p->paramtype = exprType(node);
			p->paramtypmod = exprTypmod(node);
			p->paramcollid = exprCollation(node);
			p->location = -1;
			return (Node *) p;
		}
	}
	if (IsA(node, Aggref))
	{
		i = 0;
		foreach(lc, b->aggs)
		{
			i++;
			if (equal(lfirst(lc), node))
			{
				Param	   *p = makeNode(Param);

				p->paramkind = PARAM_EXTERN;
				p->paramid = i;
				p->paramtype = exprType(node);
				p->paramtypmod = -1;
				p->paramcollid = exprCollation(node);
				p->location = -1;
				return (Node *) p;
			}
		}
	}
	return expression_tree_mutator(node, to_final, b);
}

/*
 * ssp_put_params: text (deparsed SQL) with each $N outside quotes replaced
 * by sql(N, arg).  Expressions are rewritten with Params standing for what
 * they read, deparsed, then given the SQL of each.
 */
char *
ssp_put_params(const char *text, char *(*sql) (long id, void *arg), void *arg)
{
	StringInfoData out;
	const char *p;
	char		quote = 0;

	initStringInfo(&out);
	for (p = text; *p; p++)
	{
		if (quote)
		{
			if (*p == quote)
				quote = 0;
			appendStringInfoChar(&out, *p);
		}
		else if (*p == '\'' || *p == '"')
		{
			quote = *p;
			appendStringInfoChar(&out, *p);
		}
		else if (*p == '$' && isdigit((unsigned char) p[1]))
		{
			char	   *end;
			long		id = strtol(p + 1, &end, 10);

			appendStringInfoString(&out, sql(id, arg));
			p = end - 1;
		}
		else
			appendStringInfoChar(&out, *p);
	}
	return out.data;
}

/* final_param: what $N of to_final stands for */
static char *
final_param(long id, void *arg)
{
	Build	   *b = arg;

	if (id > 100000)
		return psprintf("m.%s", quote_identifier(list_nth(b->group_cols, id - 100001)));
	return ((AggPlan *) list_nth(b->plans, id - 1))->final;
}

/*
 * final_sql: deparse an expression over finished values, each aggregate
 * and group key given the SQL of its finished value.
 */
char *
ssp_final_sql(Build *b, Node *expr)
{
	return ssp_put_params(ssp_deparse(b, to_final(copyObject(expr), b)), final_param, b);
}
