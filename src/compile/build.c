/*-------------------------------------------------------------------------
 *
 * build.c
 *	  What every part of the view compiler shares: refusing a query with
 *	  the reason, and an expression of the query as SQL over the batch.
 *
 * view.c analyses a query and drives the build; viewsql.c, aggregate.c and
 * join.c write the SQL of each kind; all of them call these, and these
 * call none of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "compile/build.h"

const char *const ssp_refuse_hint =
"A continuous view reads one stream (joined with tables, or with one or two more streams on time bounds), with WHERE, GROUP BY, HAVING and any aggregate with a combine function: the built-in ones, those of hll and tdigest, or your own.";

/* ssp_refuse: error: continuous views cannot contain what, because why. */
void
ssp_refuse(const char *what, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("continuous views cannot contain %s", what),
			 errdetail("%s", why),
			 errhint("%s", ssp_refuse_hint)));
}

/* ssp_deparse: an expression of the query as SQL over the batch "b". */
char *
ssp_deparse(Build *b, Node *expr)
{
	return deparse_expression(expr, b->dpcontext, true, false);
}

/*
 * ssp_column_type_sql: the SQL type of a column that holds expr's values,
 * with expr's collation where it is not the type's own ("" after the type
 * for none).  base: a domain's base type instead (a column that may hold
 * NULLs where the domain may not).
 */
char *
ssp_column_type_sql(Node *expr, bool base)
{
	Oid			type = exprType(expr);
	int32		typmod = exprTypmod(expr);
	Oid			coll = exprCollation(expr);

	if (base)
		type = getBaseTypeAndTypmod(type, &typmod);
	if (OidIsValid(coll) && coll != get_typcollation(type))
		return psprintf("%s COLLATE %s", format_type_with_typemod(type, typmod),
						generate_collation_name(coll));
	return format_type_with_typemod(type, typmod);
}

/* ssp_interval_sql: an interval as an SQL literal. */
char *
ssp_interval_sql(Interval *iv)
{
	return psprintf("%s::interval",
					quote_literal_cstr(DatumGetCString(DirectFunctionCall1(interval_out,
																		   PointerGetDatum(iv)))));
}
