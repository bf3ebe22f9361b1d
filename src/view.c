/*-------------------------------------------------------------------------
 *
 * view.c
 *	  CREATE VIEW ... WITH (ssp.continuous): what a continuous view may
 *	  contain, and what it becomes.
 *
 * The query is analysed once, here.  What cannot be maintained
 * incrementally is refused with a message that says what and why.  What
 * can becomes three things, made through SPI in the creating transaction:
 *
 *	- the materialisation table NAME_mrel: the group keys, and for each
 *	  aggregate a state that merges (count; sum; avg as sum and count; min;
 *	  max; the variance family as n, sum and sum of squares, or Postgres's
 *	  own float8 transition array);
 *	- the view NAME that users query: it finalises the states (avg = sum /
 *	  count), computes the select list and applies HAVING;
 *	- the apply statement, kept in ssp.continuous_views: one INSERT ... ON
 *	  CONFLICT DO UPDATE that reads the batch (the ephemeral relation
 *	  ssp_batch, with the stream's columns), reduces it to one row per group
 *	  and merges those rows into NAME_mrel.  An append-only view (no
 *	  aggregates) just inserts its rows.
 *
 * Expressions are deparsed with search_path set to pg_catalog alone, so the
 * generated SQL names every object in full and means the same in a worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_type.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "ssp.h"
#include "view.h"
#include "window.h"

/* Options of a continuous view (WITH (ssp.x = ...)). */
typedef struct SspViewOptions
{
	char	   *start;
	int			commit_interval_ms;
	int			batch_size;
	char	   *on_error;
	/* windowed views */
	char	   *grace;
	char	   *retention;
	char	   *idle_timeout;
	bool		emit_final;
	/* sliding windows */
	char	   *sliding;
	char	   *step;
	/* tables from compacted topics */
	List	   *primary_key;	/* column names */
} SspViewOptions;

/* What one aggregate of the query becomes. */
typedef struct AggPlan
{
	List	   *cols;			/* state column names */
	List	   *types;			/* their SQL types */
	List	   *partials;		/* per column: the partial aggregate over a batch */
	List	   *merges;			/* per column: merge of m.col and excluded.col */
	List	   *readaggs;		/* per column: the aggregate that merges many */
	char	   *final;			/* the finished value, over m.cols */
} AggPlan;

/* The parts of the SQL being built. */
typedef struct Build
{
	Query	   *query;
	List	   *dpcontext;		/* deparse context: the stream as "b" */
	char	   *from;			/* FROM clause over the batch and joined tables */
	List	   *group_exprs;	/* Node */
	List	   *group_cols;		/* char * column names in the mrel */
	List	   *aggs;			/* Aggref, in order of first appearance */
	List	   *plans;			/* AggPlan, parallel to aggs */
	SspStream  *stream;
	SspViewOptions *opts;
	/* a windowed view: the window key and what it adds */
	int			window;			/* index in group_exprs, or -1 */
	SspWindowSpec spec;
	char	   *window_start;	/* SQL over the batch: a window's start */
	char	   *window_end;		/* SQL over the batch: the window's end */
	char	   *window_from;	/* extra FROM for hopping windows */
	char	   *sizesql;
	/* a sliding view: steps of event time, combined when read */
	char	   *step_expr;		/* SQL over the batch: an event's step */
	char	   *in_range;		/* SQL: a step m._step still in the range */
	char	   *late_sql;
	char	   *retention_sql;
} Build;

static const char *const refuse_hint =
"A continuous view reads one stream, with WHERE, GROUP BY, HAVING and the aggregates count, sum, avg, min, max, bool_and, bool_or, every, stddev, variance and their _samp and _pop forms.";

/*
 * ssp_is_continuous_stmt: does CREATE VIEW carry the option ssp.continuous?
 */
bool
ssp_is_continuous_stmt(ViewStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);

		if (def->defnamespace && strcmp(def->defnamespace, "ssp") == 0 &&
			strcmp(def->defname, "continuous") == 0)
			return def->arg == NULL || defGetBoolean(def);
	}
	return false;
}

static int
interval_ms(DefElem *def)
{
	char	   *val = defGetString(def);
	Interval   *iv;
	int64		us;

	iv = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(val),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
	us = iv->time + (int64) iv->day * USECS_PER_DAY +
		(int64) iv->month * 30 * USECS_PER_DAY;
	if (us < 1000 || us > (int64) 3600 * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ssp.%s must be between 1 millisecond and 1 hour, not \"%s\"",
						def->defname, val)));
	return (int) (us / 1000);
}

/* interval_option: an interval option's value, checked, as text. */
static char *
interval_option(DefElem *def, bool positive)
{
	char	   *val = defGetString(def);
	Interval   *iv = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(val),
														   ObjectIdGetDatum(InvalidOid),
														   Int32GetDatum(-1)));

	if (iv->month < 0 || iv->day < 0 || iv->time < 0 ||
		(positive && iv->month == 0 && iv->day == 0 && iv->time == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ssp.%s must be %s, not \"%s\"", def->defname,
						positive ? "positive" : "zero or positive", val)));
	return val;
}

static SspViewOptions
parse_options(ViewStmt *stmt)
{
	SspViewOptions opts = {pstrdup("earliest"), SSP_DEFAULT_COMMIT_INTERVAL_MS,
	SSP_DEFAULT_BATCH_SIZE, pstrdup("dead_letter"), NULL, NULL, NULL, false, NULL, NULL, NIL};
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);
		const char *n = def->defname;

		if (!def->defnamespace || strcmp(def->defnamespace, "ssp") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("option \"%s\" cannot be used with ssp.continuous", n)));
		if (strcmp(n, "continuous") == 0)
			continue;
		if (strcmp(n, "start") == 0)
		{
			opts.start = defGetString(def);
			ssp_check_start(opts.start);
		}
		else if (strcmp(n, "commit_interval") == 0)
			opts.commit_interval_ms = interval_ms(def);
		else if (strcmp(n, "batch_size") == 0)
		{
			int64		v = defGetInt64(def);

			if (v < 1 || v > 10000000)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("ssp.batch_size must be between 1 and 10000000, not %lld",
								(long long) v)));
			opts.batch_size = (int) v;
		}
		else if (strcmp(n, "on_error") == 0)
		{
			opts.on_error = defGetString(def);
			(void) ssp_parse_on_error(opts.on_error);
		}
		else if (strcmp(n, "grace") == 0)
			opts.grace = interval_option(def, false);
		else if (strcmp(n, "retention") == 0)
			opts.retention = interval_option(def, true);
		else if (strcmp(n, "idle_timeout") == 0)
			opts.idle_timeout = interval_option(def, true);
		else if (strcmp(n, "emit") == 0)
		{
			char	   *v = defGetString(def);

			if (strcmp(v, "final") != 0 && strcmp(v, "changes") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unrecognized value \"%s\" for ssp.emit", v),
						 errhint("Valid values are changes and final.")));
			opts.emit_final = strcmp(v, "final") == 0;
		}
		else if (strcmp(n, "sliding") == 0)
			opts.sliding = interval_option(def, true);
		else if (strcmp(n, "step") == 0)
			opts.step = interval_option(def, true);
		else if (strcmp(n, "primary_key") == 0)
		{
			if (!SplitIdentifierString(pstrdup(defGetString(def)), ',', &opts.primary_key) ||
				opts.primary_key == NIL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid column list \"%s\" for ssp.primary_key", defGetString(def))));
		}
		else if (strcmp(n, "parallelism") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("option \"ssp.%s\" is not supported yet", n),
					 errdetail("Parallel workers are not implemented in this version.")));
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized continuous view option \"ssp.%s\"", n),
					 errhint("Valid options are ssp.start, ssp.commit_interval, ssp.batch_size, ssp.on_error, ssp.grace, ssp.retention, ssp.idle_timeout, ssp.emit, ssp.sliding, ssp.step and ssp.primary_key.")));
	}
	if (opts.step && !opts.sliding)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ssp.step needs ssp.sliding")));
	if (opts.sliding && !opts.step)
		opts.step = DatumGetCString(DirectFunctionCall1(interval_out,
														DirectFunctionCall2(interval_div,
																			DirectFunctionCall3(interval_in, CStringGetDatum(opts.sliding),
																								ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)),
																			Float8GetDatum(60.0))));
	return opts;
}

static void
refuse(const char *what, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("continuous views cannot contain %s", what),
			 errdetail("%s", why),
			 errhint("%s", refuse_hint)));
}

/* check_query: refuse what ssp cannot maintain; returns the stream. */
static Oid
check_query(Query *q)
{
	RangeTblEntry *rte;
	ListCell   *lc;
	int			nstreams = 0;
	Oid			stream = InvalidOid;

	if (q->commandType != CMD_SELECT || q->utilityStmt)
		refuse("anything but a SELECT", "A continuous view is defined by a query.");
	if (q->setOperations)
		refuse("UNION, INTERSECT or EXCEPT", "Each branch would need its own state.");
	if (q->cteList)
		refuse("WITH queries", "Common table expressions are not maintained incrementally.");
	if (q->hasWindowFuncs)
		refuse("window functions", "A window function depends on rows of other batches; use GROUP BY, or ORDER BY when querying the view.");
	if (q->distinctClause)
		refuse("DISTINCT", "Removing duplicates needs every row seen so far; query the view with DISTINCT instead.");
	if (q->sortClause)
		refuse("ORDER BY", "A view's rows have no order; put ORDER BY in the queries that read it.");
	if (q->limitCount || q->limitOffset)
		refuse("LIMIT or OFFSET", "A limit over an unbounded stream changes as rows arrive; put it in the queries that read the view.");
	if (q->hasSubLinks)
		refuse("subqueries", "Subqueries are not maintained incrementally.");
	if (q->groupingSets)
		refuse("GROUPING SETS, ROLLUP or CUBE", "Each grouping set would need its own state.");
	if (q->hasTargetSRFs)
		refuse("set-returning functions in the select list", "They are not maintained incrementally.");
	if (q->rowMarks)
		refuse("FOR UPDATE or FOR SHARE", "Stream rows cannot be locked.");

	foreach(lc, q->rtable)
	{
		rte = lfirst(lc);
		if (rte->rtekind == RTE_RELATION && ssp_is_stream(rte->relid))
		{
			nstreams++;
			stream = rte->relid;
		}
		else if (rte->rtekind == RTE_SUBQUERY || rte->rtekind == RTE_FUNCTION ||
				 rte->rtekind == RTE_VALUES || rte->rtekind == RTE_TABLEFUNC)
			refuse("subqueries, functions or VALUES in FROM", "A continuous view joins its stream with tables and views only.");
		if (rte->tablesample)
			refuse("TABLESAMPLE", "A continuous view reads every row.");
	}
	if (nstreams == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view must read a stream"),
				 errdetail("A stream is a foreign table of a server of foreign-data wrapper ssp_kafka.")));
	if (nstreams > 1)
		refuse("more than one stream", "Joins of two streams are not supported yet; join a stream with tables.");
	return stream;
}

/* deparse: an expression of the query as SQL over the batch "b". */
static char *
deparse(Build *b, Node *expr)
{
	return deparse_expression(expr, b->dpcontext, true, false);
}

static const char *
aggname(Aggref *agg)
{
	return get_func_name(agg->aggfnoid);
}

/* COL: add a state column to AggPlan p: name, SQL type, partial, merge */
#define COL(name, type, partial, merge, readagg) \
	(p->cols = lappend(p->cols, (name)), \
	 p->types = lappend(p->types, (type)), \
	 p->partials = lappend(p->partials, (partial)), \
	 p->merges = lappend(p->merges, (merge)), \
	 p->readaggs = lappend(p->readaggs, (readagg)))
#define SUM_MERGE(c) psprintf("COALESCE(m.%s + excluded.%s, m.%s, excluded.%s)", c, c, c, c)

/* check_agg: refuse an aggregate that cannot be kept as mergeable state. */
static void
check_agg(Aggref *agg)
{
	const char *name = aggname(agg);

	if (get_func_namespace(agg->aggfnoid) != PG_CATALOG_NAMESPACE || agg->aggkind != AGGKIND_NORMAL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errhint("%s", refuse_hint)));
	if (agg->aggdistinct)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside aggregate %s is not supported in a continuous view", name),
				 errdetail("Counting distinct values exactly needs every value seen so far."),
				 errhint("Keep the values as a GROUP BY key and count the view's rows, or use an approximate count when hll support arrives.")));
	if (agg->aggorder)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ORDER BY inside aggregate %s is not supported in a continuous view", name)));
	if (list_length(agg->args) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errhint("%s", refuse_hint)));
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

	check_agg(agg);
	if (agg->args)
		arg = deparse(b, (Node *) ((TargetEntry *) linitial(agg->args))->expr);
	if (agg->aggfilter)
		filter = psprintf(" FILTER (WHERE %s)", deparse(b, (Node *) agg->aggfilter));

	if (strcmp(name, "count") == 0)
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
		/* LEAST and GREATEST order as min and max do, and skip NULLs */
		COL(c1, aggtype, psprintf("pg_catalog.%s(%s)%s", name, arg, filter),
			psprintf("%s(m.%s, excluded.%s)", name[1] == 'i' ? "LEAST" : "GREATEST", c1, c1), name[1] == 'i' ? "pg_catalog.min" : "pg_catalog.max");
		p->final = psprintf("m.%s", c1);
	}
	else if (strcmp(name, "bool_and") == 0 || strcmp(name, "every") == 0 ||
			 strcmp(name, "bool_or") == 0)
	{
		bool		isand = strcmp(name, "bool_or") != 0;

		COL(c1, "boolean", psprintf("pg_catalog.%s(%s)%s", isand ? "bool_and" : "bool_or", arg, filter),
			psprintf("CASE WHEN m.%s IS NULL THEN excluded.%s WHEN excluded.%s IS NULL THEN m.%s ELSE m.%s %s excluded.%s END",
					 c1, c1, c1, c1, c1, isand ? "AND" : "OR", c1), isand ? "pg_catalog.bool_and" : "pg_catalog.bool_or");
		p->final = psprintf("m.%s", c1);
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
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is not supported in a continuous view",
						format_procedure(agg->aggfnoid)),
				 errhint("%s", refuse_hint)));
	return p;
}

static bool
collect_aggs(Node *node, Build *b)
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
	return expression_tree_walker(node, collect_aggs, b);
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
 * final_sql: deparse an expression over finished values, replacing each
 * $N outside quotes by the SQL of what it stands for.
 */
static char *
final_sql(Build *b, Node *expr)
{
	char	   *text = deparse(b, to_final(copyObject(expr), b));
	StringInfoData out;
	char	   *p;
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
			long		id = strtol(p + 1, &p, 10);

			p--;
			if (id > 100000)
				appendStringInfo(&out, "m.%s",
								 quote_identifier(list_nth(b->group_cols, id - 100001)));
			else
				appendStringInfoString(&out,
									   ((AggPlan *) list_nth(b->plans, id - 1))->final);
		}
		else
			appendStringInfoChar(&out, *p);
	}
	return out.data;
}

static void
spi_exec(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "ssp: SPI_execute failed (%s): %s", SPI_result_code_string(rc), sql);
}

/* target_names: the output column names, from the query or CREATE VIEW v (a, b). */
static List *
target_names(Query *q, List *aliases)
{
	List	   *names = NIL;
	ListCell   *lc;
	ListCell   *alc = list_head(aliases);

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (alc)
		{
			names = lappend(names, strVal(lfirst(alc)));
			alc = lnext(aliases, alc);
		}
		else
			names = lappend(names, tle->resname ? tle->resname : "?column?");
	}
	if (alc)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("CREATE VIEW specifies more column names than columns")));
	return names;
}

static char *
interval_sql(Interval *iv)
{
	return psprintf("%s::interval",
					quote_literal_cstr(DatumGetCString(DirectFunctionCall1(interval_out,
																		   PointerGetDatum(iv)))));
}

/*
 * find_window: if a group key is ssp.tumble() or ssp.hop() over the event
 * time, make the view windowed: the SQL of a window's start and end over
 * the batch (for ssp.hop, each event joins every window that holds it), the
 * statement that counts late events (for ssp.hop, events whose every
 * window is closed), and the one that applies retention.
 */
static void
find_window(Build *b, const char *mrel)
{
	SspWindowSpec *w = &b->spec;
	char	   *quals;
	char	   *last_end;

	ssp_find_window(b->stream, b->group_exprs, w);
	b->window = w->index;
	if (b->window < 0)
		return;
	b->sizesql = interval_sql(w->size);
	if (w->session)
	{
		/* an event is late once no open session could take it */
		char	   *ts = deparse(b, w->ts);

		quals = b->query->jointree->quals ? deparse(b, b->query->jointree->quals) : "true";
		b->window_start = ts;
		if (list_length(b->query->rtable) > 1)
			refuse("a join with a session window", "Session windows read the stream alone for now.");
		b->late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE (%s) AND NOT %s + %s > COALESCE($1, '-infinity')",
							   b->from, quals, ts, b->sizesql);
		if (b->opts->retention)
			b->retention_sql = psprintf("DELETE FROM %s m WHERE m._session_end + %s < $1 - %s::interval",
										mrel, b->sizesql, quote_literal_cstr(b->opts->retention));
		return;
	}
	if (w->hop)
	{
		char	   *ts = deparse(b, w->ts);
		char	   *origin = w->origin ? deparse(b, w->origin) : "NULL";

		b->window_from = psprintf(" CROSS JOIN LATERAL ssp.hop_windows(%s, %s, %s, %s) AS hw(w)",
								  ts, b->sizesql, interval_sql(w->slide), origin);
		b->window_start = "hw.w";
		/* the last window that holds an event starts at its slide */
		last_end = psprintf("(ssp.tumble(%s, %s, %s) + %s)", ts, interval_sql(w->slide),
							origin, b->sizesql);
	}
	else
	{
		b->window_from = "";
		b->window_start = deparse(b, list_nth(b->group_exprs, b->window));
		last_end = psprintf("(%s + %s)", b->window_start, b->sizesql);
	}
	b->window_end = psprintf("(%s + %s)", b->window_start, b->sizesql);
	quals = b->query->jointree->quals ? deparse(b, b->query->jointree->quals) : "true";
	b->late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE (%s) AND NOT %s > COALESCE($1, '-infinity')",
						   b->from, quals, last_end);
	if (b->opts->retention)
		b->retention_sql = psprintf("DELETE FROM %s m WHERE m.%s + %s < $1 - %s::interval",
									mrel, quote_identifier(list_nth(b->group_cols, b->window)),
									b->sizesql, quote_literal_cstr(b->opts->retention));
}

/*
 * find_sliding: for ssp.sliding, the hidden step key (ssp.tumble of the
 * event time by ssp.step), the late count (events already out of the range)
 * and the deletion of steps that left it.
 */
static void
find_sliding(Build *b, const char *mrel)
{
	SspStream  *s = b->stream;
	AttrNumber	evatt = s->timestamp_attnum;
	char	   *step = quote_literal_cstr(b->opts->step);
	char	   *sliding = quote_literal_cstr(b->opts->sliding);
	char	   *quals;
	int			i;

	if (b->window >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.sliding cannot be combined with ssp.tumble or ssp.hop")));
	for (i = 0; evatt == 0 && i < s->ncolumns; i++)
		if (s->columns[i].source == SSP_SRC_TIMESTAMP)
			evatt = s->columns[i].attnum;
	if (evatt == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a sliding window needs the event time of stream \"%s\"", s->relname),
				 errhint("Give the stream option timestamp, or a column with OPTIONS (meta 'timestamp').")));
	b->step_expr = psprintf("ssp.tumble(b.%s, %s::interval)",
							quote_identifier(get_attname(s->relid, evatt, false)), step);
	b->in_range = psprintf("m._step + %s::interval > pg_catalog.now() - %s::interval", step, sliding);
	quals = b->query->jointree->quals ? deparse(b, b->query->jointree->quals) : "true";
	b->late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE (%s) AND NOT "
						   "%s + %s::interval > pg_catalog.now() - %s::interval",
						   b->from, quals, b->step_expr, step, sliding);
	b->retention_sql = psprintf("DELETE FROM %s m WHERE NOT (%s)", mrel, b->in_range);
}

/*
 * sliding_view: the view of a sliding window: the states of the steps in
 * range merged per group, then finished.
 */
static void
sliding_view(Build *b, List *names, const char *mrel, const char *view, StringInfo viewsql)
{
	StringInfoData keys;
	StringInfoData merged;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&keys);
	initStringInfo(&merged);
	foreach(lc, b->group_cols)
		appendStringInfo(&keys, "%sm.%s", keys.len ? ", " : "", quote_identifier(lfirst(lc)));
	if (b->group_cols == NIL)
		appendStringInfoString(&keys, "m._g0");
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *c,
				   *t,
				   *r;

		forthree(c, p->cols, t, p->types, r, p->readaggs)
			appendStringInfo(&merged, ", %s(m.%s)::%s AS %s", (char *) lfirst(r),
							 (char *) lfirst(c), (char *) lfirst(t), (char *) lfirst(c));
	}
	appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT ", view);
	foreach(lc, b->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		appendStringInfo(viewsql, "%s%s AS %s", i ? ", " : "",
						 final_sql(b, (Node *) tle->expr),
						 quote_identifier(list_nth(names, i)));
		i++;
	}
	appendStringInfo(viewsql, " FROM (SELECT %s%s FROM %s m WHERE %s GROUP BY %s) m",
					 keys.data, merged.data, mrel, b->in_range, keys.data);
	if (b->query->havingQual)
		appendStringInfo(viewsql, " WHERE %s", final_sql(b, b->query->havingQual));
}

/*
 * aggregating_view: the view users query: finish each output column, apply
 * HAVING, and for ssp.emit = 'final' show closed windows only.
 */
static void
aggregating_view(Build *b, List *names, const char *mrel, const char *view,
				 StringInfo viewsql)
{
	Query	   *q = b->query;
	ListCell   *lc;
	int			i = 0;

	if (b->step_expr)
	{
		sliding_view(b, names, mrel, view, viewsql);
		return;
	}

	appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT ", view);
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		appendStringInfo(viewsql, "%s%s AS %s", i ? ", " : "",
						 final_sql(b, (Node *) tle->expr),
						 quote_identifier(list_nth(names, i)));
		i++;
	}
	appendStringInfo(viewsql, " FROM %s m", mrel);
	if (q->havingQual)
		appendStringInfo(viewsql, " WHERE %s", final_sql(b, q->havingQual));
	if (b->opts->emit_final)
	{
		/* only windows the watermark has closed */
		appendStringInfo(viewsql, " %s m.%s + %s <= "
						 "(SELECT c.watermark FROM ssp.continuous_views c WHERE c.mrel = %s::regclass)",
						 q->havingQual ? "AND" : "WHERE",
						 b->spec.session ? "_session_end" :
						 quote_identifier(list_nth(b->group_cols, b->window)),
						 b->sizesql, quote_literal_cstr(mrel));
	}
}

/*
 * build_session: the mrel and apply statement of a view grouped by
 * ssp.session().  A session is a row: the other group keys, its start (the
 * key), its last event time (_session_end) and the aggregate states.  A
 * batch is cut into sessions per group (gaps and islands over event time);
 * each is merged with the stored sessions it touches (within the gap),
 * which it may bridge: those are deleted and the islands of all of them are
 * inserted with their states merged.
 */
static void
build_session(Build *b, const char *mrel, StringInfo create, StringInfo apply)
{
	Query	   *q = b->query;
	StringInfoData keys;		/* _k1, ... the other group keys */
	StringInfoData keysel;		/* their expressions AS _k1, ... */
	StringInfoData mkeys;		/* their columns in the mrel */
	StringInfoData match;		/* stored session of the same group */
	StringInfoData partials,
				merged,
				statecols,
				mstates;
	char	   *gap = b->sizesql;
	char	   *ts = b->window_start;
	const char *wcol = quote_identifier(list_nth(b->group_cols, b->window));
	ListCell   *lc;
	int			i = 0;
	int			n = 0;

	initStringInfo(&keys);
	initStringInfo(&keysel);
	initStringInfo(&mkeys);
	initStringInfo(&match);
	initStringInfo(&partials);
	initStringInfo(&merged);
	initStringInfo(&statecols);
	initStringInfo(&mstates);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);
		const char *col = quote_identifier(list_nth(b->group_cols, i));

		appendStringInfo(create, "%s %s, ", col,
						 format_type_with_typemod(exprType(e), exprTypmod(e)));
		if (i != b->window)
		{
			n++;
			appendStringInfo(&keys, "_k%d, ", n);
			appendStringInfo(&keysel, "%s AS _k%d, ", deparse(b, e), n);
			appendStringInfo(&mkeys, "%s, ", col);
			appendStringInfo(&match, "m.%s IS NOT DISTINCT FROM s._k%d AND ", col, n);
		}
		i++;
	}
	appendStringInfoString(create, "_session_end timestamp with time zone");
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *c,
				   *t,
				   *pa,
				   *r;

		forfour(c, p->cols, t, p->types, pa, p->partials, r, p->readaggs)
		{
			appendStringInfo(create, ", %s %s", (char *) lfirst(c), (char *) lfirst(t));
			appendStringInfo(&partials, ", %s AS %s", (char *) lfirst(pa), (char *) lfirst(c));
			appendStringInfo(&merged, ", %s(%s)::%s", (char *) lfirst(r), (char *) lfirst(c), (char *) lfirst(t));
			appendStringInfo(&statecols, ", %s", (char *) lfirst(c));
			appendStringInfo(&mstates, ", m.%s", (char *) lfirst(c));
		}
	}
	appendStringInfo(create, ");\nCREATE INDEX ON %s (%s%s)", mrel, mkeys.data, wcol);

	/* the batch's events of open sessions, cut into sessions per group */
	appendStringInfo(apply,
					 "WITH e AS (SELECT %s%s AS _ts, b.* FROM ssp_batch b WHERE (%s) AND %s + %s > COALESCE($1, '-infinity')), "
					 "c AS (SELECT e.*, CASE WHEN _ts - pg_catalog.lag(_ts) OVER (PARTITION BY %s true ORDER BY _ts) <= %s "
					 "THEN 0 ELSE 1 END AS _new FROM e), "
					 "n AS (SELECT c.*, pg_catalog.sum(_new) OVER (PARTITION BY %s true ORDER BY _ts ROWS UNBOUNDED PRECEDING) AS _sid FROM c), "
					 "s AS (SELECT %s pg_catalog.min(_ts) AS _s, pg_catalog.max(_ts) AS _e%s FROM n b GROUP BY %s _sid), ",
					 keysel.data, ts, q->jointree->quals ? deparse(b, q->jointree->quals) : "true", ts, gap,
					 keys.data, gap, keys.data, keys.data, partials.data, keys.data);
	/* the stored sessions they touch, taken out */
	appendStringInfo(apply,
					 "t AS (DELETE FROM %s m USING s WHERE %s m.%s - %s <= s._e AND m._session_end + %s >= s._s "
					 "RETURNING %s m.%s AS _s, m._session_end AS _e%s), ",
					 mrel, match.data, wcol, gap, gap, mkeys.data, wcol, mstates.data);
	/* all of them, as islands: a new one where the gap is passed */
	appendStringInfo(apply,
					 "a AS (SELECT %s _s, _e%s FROM s UNION ALL SELECT * FROM t), "
					 "g AS (SELECT a.*, CASE WHEN _s <= pg_catalog.max(_e) OVER (PARTITION BY %s true ORDER BY _s "
					 "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) + %s THEN 0 ELSE 1 END AS _new FROM a), "
					 "i AS (SELECT g.*, pg_catalog.sum(_new) OVER (PARTITION BY %s true ORDER BY _s ROWS UNBOUNDED PRECEDING) AS _iid FROM g) ",
					 keys.data, statecols.data, keys.data, gap, keys.data);
	appendStringInfo(apply,
					 "INSERT INTO %s (%s%s, _session_end%s) "
					 "SELECT %s pg_catalog.min(_s), pg_catalog.max(_e)%s FROM i GROUP BY %s _iid",
					 mrel, mkeys.data, wcol, statecols.data, keys.data, merged.data, keys.data);
}

/*
 * build_aggregating: the mrel, view and apply SQL of a view with GROUP BY
 * or aggregates.
 */
static void
build_aggregating(Build *b, List *names, const char *mrel, const char *view,
				  StringInfo create, StringInfo viewsql, StringInfo apply)
{
	Query	   *q = b->query;
	ListCell   *lc;
	StringInfoData cols;
	StringInfoData sel;
	StringInfoData set;
	StringInfoData keys;
	int			i = 0;

	/* group keys: named after the select-list entry that is the key, if any */
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);
		char	   *name = psprintf("_g%d", ++i);

		b->group_exprs = lappend(b->group_exprs, tle->expr);
		if (!tle->resjunk && tle->resname)
			name = tle->resname;
		b->group_cols = lappend(b->group_cols, name);
	}
	collect_aggs((Node *) q->targetList, b);
	collect_aggs(q->havingQual, b);
	find_window(b, mrel);
	if (b->opts->sliding)
		find_sliding(b, mrel);
	if (b->window >= 0 && b->spec.session)
	{
		build_session(b, mrel, create, apply);
		aggregating_view(b, names, mrel, view, viewsql);
		return;
	}

	initStringInfo(&cols);
	initStringInfo(&sel);
	initStringInfo(&set);
	initStringInfo(&keys);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	i = 0;
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);
		const char *col = quote_identifier(list_nth(b->group_cols, i));

		appendStringInfo(create, "%s%s %s", i ? ", " : "", col,
						 format_type_with_typemod(exprType(e), exprTypmod(e)));
		appendStringInfo(&cols, "%s%s", i ? ", " : "", col);
		appendStringInfo(&keys, "%s%s", i ? ", " : "", col);
		appendStringInfo(&sel, "%s%s", i ? ", " : "",
						 i == b->window ? b->window_start : deparse(b, e));
		i++;
	}
	if (b->step_expr)
	{
		appendStringInfo(create, "%s_step timestamp with time zone", i ? ", " : "");
		appendStringInfo(&cols, "%s_step", i ? ", " : "");
		appendStringInfo(&keys, "%s_step", i ? ", " : "");
		appendStringInfo(&sel, "%s%s", i ? ", " : "", b->step_expr);
	}
	if (b->group_exprs == NIL)
	{
		/* one group: a constant key, so ON CONFLICT has something to match */
		const char *sep = b->step_expr ? ", " : "";

		appendStringInfo(create, "%s_g0 boolean NOT NULL DEFAULT true", sep);
		appendStringInfo(&cols, "%s_g0", sep);
		appendStringInfo(&keys, "%s_g0", sep);
		appendStringInfo(&sel, "%strue", sep);
		i = 1;
	}
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *c,
				   *t,
				   *pa,
				   *m;

		forfour(c, p->cols, t, p->types, pa, p->partials, m, p->merges)
		{
			appendStringInfo(create, ", %s %s", (char *) lfirst(c), (char *) lfirst(t));
			appendStringInfo(&cols, ", %s", (char *) lfirst(c));
			appendStringInfo(&sel, ", %s", (char *) lfirst(pa));
			appendStringInfo(&set, "%s%s = %s", set.len ? ", " : "",
							 (char *) lfirst(c), (char *) lfirst(m));
		}
	}
	appendStringInfo(create, ");\nCREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT", mrel, keys.data);
	if (b->window >= 0)
		appendStringInfo(create, ";\nCREATE INDEX ON %s (%s)", mrel,
						 quote_identifier(list_nth(b->group_cols, b->window)));

	/* the apply statement: reduce the batch to its groups, merge them */
	appendStringInfo(apply, "INSERT INTO %s AS m (%s) SELECT %s FROM %s%s",
					 mrel, cols.data, sel.data, b->from, b->window >= 0 ? b->window_from : "");
	{
		/* the view's WHERE; open windows only; steps still in range only */
		List	   *conds = NIL;
		int			ngroup = list_length(b->group_exprs) + (b->step_expr ? 1 : 0);

		if (q->jointree->quals)
			conds = lappend(conds, psprintf("(%s)", deparse(b, q->jointree->quals)));
		if (b->window_end)
			conds = lappend(conds, psprintf("%s > COALESCE($1, '-infinity')", b->window_end));
		if (b->step_expr)
			conds = lappend(conds, psprintf("%s + %s::interval > pg_catalog.now() - %s::interval",
											b->step_expr, quote_literal_cstr(b->opts->step),
											quote_literal_cstr(b->opts->sliding)));
		for (i = 0; i < list_length(conds); i++)
			appendStringInfo(apply, " %s %s", i ? "AND" : "WHERE", (char *) list_nth(conds, i));
		for (i = 1; i <= ngroup; i++)
			appendStringInfo(apply, "%s%d", i > 1 ? ", " : " GROUP BY ", i);
	}
	appendStringInfo(apply, " ON CONFLICT (%s) DO %s", keys.data,
					 set.len ? psprintf("UPDATE SET %s", set.data) : "NOTHING");

	aggregating_view(b, names, mrel, view, viewsql);
}

/*
 * build_keyed: a view without aggregates but with ssp.primary_key, kept
 * from a compacted topic: per key, the latest message of the batch (in
 * offset order) is upserted if it is a row that passes the WHERE, and
 * deletes the key if it is a tombstone (a null value) or does not pass.
 */
static void
build_keyed(Build *b, List *names, const char *mrel, StringInfo create, StringInfo apply)
{
	StringInfoData sel,
				cols,
				pk,
				pkexprs,
				match,
				set;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&sel);
	initStringInfo(&cols);
	initStringInfo(&pk);
	initStringInfo(&pkexprs);
	initStringInfo(&match);
	initStringInfo(&set);
	foreach(lc, b->opts->primary_key)
	{
		char	   *name = lfirst(lc);
		bool		found = false;
		ListCell   *tc;
		int			j = 0;

		foreach(tc, b->query->targetList)
		{
			TargetEntry *tle = lfirst(tc);

			if (tle->resjunk)
				continue;
			if (strcmp(list_nth(names, j), name) == 0)
			{
				appendStringInfo(&pkexprs, "%s%s", pkexprs.len ? ", " : "", deparse(b, (Node *) tle->expr));
				found = true;
			}
			j++;
		}
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("ssp.primary_key names \"%s\", which is not a column of the view", name)));
		appendStringInfo(&pk, "%s%s", pk.len ? ", " : "", quote_identifier(name));
		appendStringInfo(&match, " AND m.%s = l.%s", quote_identifier(name), quote_identifier(name));
	}
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	foreach(lc, b->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *e = (Node *) tle->expr;
		const char *col;

		if (tle->resjunk)
			continue;
		col = quote_identifier(list_nth(names, i));
		appendStringInfo(create, "%s %s, ", col, format_type_with_typemod(exprType(e), exprTypmod(e)));
		appendStringInfo(&sel, "%s AS %s, ", deparse(b, e), col);
		appendStringInfo(&cols, "%s%s", i ? ", " : "", col);
		{
			ListCell   *kc;
			bool		is_key = false;

			foreach(kc, b->opts->primary_key)
				if (strcmp(lfirst(kc), list_nth(names, i)) == 0)
					is_key = true;
			if (!is_key)
				appendStringInfo(&set, "%s%s = excluded.%s", set.len ? ", " : "", col, col);
		}
		i++;
	}
	appendStringInfo(create, "PRIMARY KEY (%s))", pk.data);
	appendStringInfo(apply,
					 "WITH l AS (SELECT DISTINCT ON (%s) %sNOT b._ssp_tombstone AND (%s) IS TRUE AS _ssp_keep "
					 "FROM %s ORDER BY %s, b._ssp_partition DESC, b._ssp_offset DESC), "
					 "d AS (DELETE FROM %s m USING l WHERE NOT l._ssp_keep%s) "
					 "INSERT INTO %s AS m (%s) SELECT %s FROM l WHERE l._ssp_keep ON CONFLICT (%s) DO %s",
					 pkexprs.data, sel.data,
					 b->query->jointree->quals ? deparse(b, b->query->jointree->quals) : "true",
					 b->from, pkexprs.data, mrel, match.data, mrel, cols.data, cols.data, pk.data,
					 set.len ? psprintf("UPDATE SET %s", set.data) : "NOTHING");
}

/* build_append_only: the same for a view without aggregates. */
static void
build_append_only(Build *b, List *names, const char *mrel, const char *view,
				  StringInfo create, StringInfo viewsql, StringInfo apply)
{
	ListCell   *lc;
	int			i = 0;
	StringInfoData sel;

	if (b->opts->primary_key)
	{
		build_keyed(b, names, mrel, create, apply);
		appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT * FROM %s", view, mrel);
		return;
	}
	initStringInfo(&sel);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	foreach(lc, b->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *e = (Node *) tle->expr;

		if (tle->resjunk)
			continue;
		appendStringInfo(create, "%s%s %s", i ? ", " : "",
						 quote_identifier(list_nth(names, i)),
						 format_type_with_typemod(exprType(e), exprTypmod(e)));
		appendStringInfo(&sel, "%s%s", i ? ", " : "", deparse(b, e));
		i++;
	}
	appendStringInfoString(create, ")");
	appendStringInfo(apply, "INSERT INTO %s SELECT %s FROM %s", mrel, sel.data, b->from);
	if (b->query->jointree->quals)
		appendStringInfo(apply, " WHERE %s", deparse(b, b->query->jointree->quals));
	appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT * FROM %s", view, mrel);
}

/*
 * record_view: make the materialisation table part of the view, the view
 * depend on its stream, and add the catalog row.  Needs SPI connected.
 */
static void
record_view(Oid viewoid, Oid mreloid, Oid stream, const char *topic,
			const char *apply_sql, Build *b)
{
	SspViewOptions *opts = b->opts;
	ListCell   *lc;
	ObjectAddress viewaddr,
				mreladdr,
				streamaddr;
	Datum		args[14];
	char		nulls[14] = "              ";
	Oid			argtypes[14] = {OIDOID, OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID, TEXTOID,
	TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};

	ObjectAddressSet(viewaddr, RelationRelationId, viewoid);
	ObjectAddressSet(mreladdr, RelationRelationId, mreloid);
	ObjectAddressSet(streamaddr, RelationRelationId, stream);
	/* the mrel is part of the view; the view reads the stream and tables */
	recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
	recordDependencyOn(&viewaddr, &streamaddr, DEPENDENCY_NORMAL);
	foreach(lc, b->query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		ObjectAddress reladdr;

		if (rte->rtekind != RTE_RELATION || rte->relid == stream)
			continue;
		ObjectAddressSet(reladdr, RelationRelationId, rte->relid);
		recordDependencyOn(&viewaddr, &reladdr, DEPENDENCY_NORMAL);
	}

	args[0] = ObjectIdGetDatum(viewoid);
	args[1] = ObjectIdGetDatum(mreloid);
	args[2] = ObjectIdGetDatum(stream);
	args[3] = CStringGetTextDatum(topic);
	args[4] = CStringGetTextDatum(apply_sql);
	args[5] = CStringGetTextDatum(opts->start);
	args[6] = Int32GetDatum(opts->commit_interval_ms);
	args[7] = Int32GetDatum(opts->batch_size);
	args[8] = CStringGetTextDatum(opts->on_error);
	args[9] = b->late_sql ? CStringGetTextDatum(b->late_sql) : (Datum) 0;
	nulls[9] = b->late_sql ? ' ' : 'n';
	args[10] = b->retention_sql ? CStringGetTextDatum(b->retention_sql) : (Datum) 0;
	nulls[10] = b->retention_sql ? ' ' : 'n';
	args[11] = CStringGetTextDatum(opts->grace ? opts->grace : "0");
	args[12] = CStringGetTextDatum(opts->idle_timeout ? opts->idle_timeout : "1 minute");
	args[13] = CStringGetTextDatum(opts->emit_final ? "final" : "changes");
	if (SPI_execute_with_args("INSERT INTO ssp.continuous_views (view, mrel, stream, topic, apply_sql, start, "
							  "commit_interval_ms, batch_size, on_error, late_sql, retention_sql, grace, idle_timeout, emit) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::interval, $13::interval, $14)",
							  14, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "ssp: could not record the continuous view");
}

static bool
is_stream_rte(Query *q, int rtindex)
{
	RangeTblEntry *rte = rt_fetch(rtindex, q->rtable);

	return rte->rtekind == RTE_RELATION && ssp_is_stream(rte->relid);
}

/* join_has_stream: is the stream under this part of the join tree? */
static bool
join_has_stream(Query *q, Node *node)
{
	if (IsA(node, RangeTblRef))
		return is_stream_rte(q, ((RangeTblRef *) node)->rtindex);
	if (IsA(node, JoinExpr))
		return join_has_stream(q, ((JoinExpr *) node)->larg) ||
			join_has_stream(q, ((JoinExpr *) node)->rarg);
	return false;
}

/*
 * from_sql: a FROM item of the query as SQL, the stream being the batch
 * "b"; joins must keep every stream row on their stream side.
 */
static char *
from_sql(Build *b, List *names, Node *node)
{
	Query	   *q = b->query;

	if (IsA(node, RangeTblRef))
	{
		int			rtindex = ((RangeTblRef *) node)->rtindex;
		RangeTblEntry *rte = rt_fetch(rtindex, q->rtable);

		if (is_stream_rte(q, rtindex))
			return "ssp_batch b";
		return psprintf("%s %s",
						quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
												   get_rel_name(rte->relid)),
						quote_identifier(list_nth(names, rtindex - 1)));
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;
		const char *kind;

		if (j->usingClause || j->isNatural)
			refuse("JOIN ... USING or NATURAL JOIN", "Write the join condition with ON.");
		if (j->jointype == JOIN_INNER)
			kind = j->quals ? "JOIN" : "CROSS JOIN";
		else if (j->jointype == JOIN_LEFT && join_has_stream(q, j->larg))
			kind = "LEFT JOIN";
		else if (j->jointype == JOIN_RIGHT && join_has_stream(q, j->rarg))
			kind = "RIGHT JOIN";
		else
			refuse("an outer join that keeps table rows without the stream",
				   "Rows of a table with no matching event would have to be taken back when one comes; use an inner join, or a left join with the stream on the left.");
		return psprintf("(%s %s %s%s%s)", from_sql(b, names, j->larg), kind,
						from_sql(b, names, j->rarg), j->quals ? " ON " : "",
						j->quals ? deparse(b, j->quals) : "");
	}
	elog(ERROR, "ssp: unexpected FROM item %d", (int) nodeTag(node));
	return NULL;
}

/*
 * setup_deparse: name the stream "b", set up the deparse context over
 * every relation of the query, and write its FROM clause.
 */
static void
setup_deparse(Build *b, Oid stream)
{
	Query	   *q = b->query;
	ListCell   *lc;
	Bitmapset  *rels = NULL;
	List	   *names;
	PlannedStmt *ps;
	StringInfoData from;
	int			i = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		i++;
		if (rte->rtekind == RTE_RELATION && rte->relid == stream)
		{
			rte->alias = makeAlias("b", NIL);
			rte->eref->aliasname = "b";
		}
		else if (strcmp(rte->eref->aliasname, "b") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the name \"b\" is kept for the stream in a continuous view"),
					 errhint("Give the other relation another alias.")));
		rels = bms_add_member(rels, i);
	}
	if (list_length(q->rtable) == 1)
	{
		b->dpcontext = deparse_context_for("b", stream);
		b->from = "ssp_batch b";
		return;
	}
	ps = makeNode(PlannedStmt);
	ps->rtable = q->rtable;
	names = select_rtable_names_for_explain(q->rtable, rels);
	b->dpcontext = deparse_context_for_plan_tree(ps, names);
	initStringInfo(&from);
	foreach(lc, q->jointree->fromlist)
		appendStringInfo(&from, "%s%s", from.len ? ", " : "", from_sql(b, names, lfirst(lc)));
	b->from = from.data;
}

/*
 * ssp_create_continuous_view: carry out CREATE VIEW ... WITH
 * (ssp.continuous) in place of Postgres.  Needs a transaction; creates
 * objects as the current user.
 */
void
ssp_create_continuous_view(ViewStmt *stmt, const char *queryString)
{
	SspViewOptions opts = parse_options(stmt);
	RawStmt    *raw = makeNode(RawStmt);
	Query	   *q;
	Oid			stream;
	Oid			nspid;
	char	   *nspname;
	char	   *mrel;
	char	   *view;
	List	   *names;
	Build		b;
	StringInfoData create,
				viewsql,
				apply;
	int			save_nestlevel;
	Oid			viewoid;
	SspStream  *s;

	if (stmt->replace)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CREATE OR REPLACE is not supported for continuous views"),
				 errhint("Create a new continuous view (and ssp.reset it to replay the stream), then drop the old one.")));
	if (stmt->view->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous views cannot be temporary or unlogged")));
	if (stmt->withCheckOption != NO_CHECK_OPTION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("WITH CHECK OPTION is not supported for continuous views")));

	raw->stmt = copyObject(stmt->query);
	raw->stmt_location = -1;
	q = parse_analyze_fixedparams(raw, queryString, NULL, 0, NULL);
	stream = check_query(q);
	s = ssp_stream_open(stream);
	names = target_names(q, stmt->aliases);

	nspid = RangeVarGetCreationNamespace(stmt->view);
	nspname = get_namespace_name(nspid);
	view = quote_qualified_identifier(nspname, stmt->view->relname);
	mrel = quote_qualified_identifier(nspname, psprintf("%s_mrel", stmt->view->relname));

	/* deparse with every name qualified */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	memset(&b, 0, sizeof(b));
	b.query = q;
	setup_deparse(&b, stream);
	b.stream = s;
	b.opts = &opts;
	b.window = -1;
	initStringInfo(&create);
	initStringInfo(&viewsql);
	initStringInfo(&apply);
	if (q->hasAggs || q->groupClause)
		build_aggregating(&b, names, mrel, view, &create, &viewsql, &apply);
	else
		build_append_only(&b, names, mrel, view, &create, &viewsql, &apply);
	AtEOXact_GUC(true, save_nestlevel);
	if (opts.primary_key && (q->hasAggs || q->groupClause))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.primary_key applies to views without aggregates"),
				 errdetail("It keeps the latest row per key, as a table kept from a compacted topic.")));
	if (opts.sliding && !b.step_expr)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.sliding needs aggregates"),
				 errdetail("A sliding window combines aggregates over the last stretch of time; a view without them just keeps its rows.")));
	if (b.window < 0 && (opts.grace || opts.retention || opts.idle_timeout || opts.emit_final))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("options ssp.grace, ssp.retention, ssp.idle_timeout and ssp.emit need a window"),
				 errhint("Group by a window over the event time, as in GROUP BY ssp.tumble(ts, '1 minute').")));

	elog(DEBUG1, "ssp: continuous view %s: %s; %s; %s", view, create.data, viewsql.data, apply.data);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	spi_exec(create.data);
	spi_exec(viewsql.data);
	CommandCounterIncrement();

	viewoid = RangeVarGetRelid(stmt->view, NoLock, false);
	record_view(viewoid, get_relname_relid(psprintf("%s_mrel", stmt->view->relname), nspid),
				stream, s->topic, apply.data, &b);
	SPI_finish();

	ssp_store_start_offsets(viewoid, stream, s->topic, opts.start);
}
