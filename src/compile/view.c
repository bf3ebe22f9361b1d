/*-------------------------------------------------------------------------
 *
 * view.c
 *	  CREATE VIEW ... WITH (ssp.continuous): what a continuous view may
 *	  contain, its creation, and its SQL built again for its worker.
 *
 * What cannot be maintained incrementally is refused with a message that
 * says what and why.  What can becomes four things (built by viewsql.c and
 * aggregate.c), made through SPI in the creating transaction:
 *
 *	- the materialisation table NAME_mrel: the rows, or the group keys and
 *	  each aggregate's state that merges;
 *	- the view NAME that users query, which finishes the states;
 *	- the plain view NAME_query: the query itself, kept by Postgres by oid;
 *	- the apply statement that a worker runs on each batch: the batch is
 *	  the ephemeral relation ssp_batch (the stream's columns, then
 *	  _ssp_partition, _ssp_offset, _ssp_tombstone), named "b" in the query;
 *	  other relations of the query keep theirs.
 *
 * The apply statement (and the rest a worker runs) names objects, so it is
 * built again, by ssp_build_view as at CREATE VIEW, from NAME_query and the
 * view's options (rebuild.c): renames are harmless.
 *
 * Expressions are deparsed with search_path set to pg_catalog alone, so the
 * generated SQL names every object in full and means the same in a worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/analyze.h"
#include "parser/parse_agg.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "parser/parse_type.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/varlena.h"

#include "ssp.h"
#include "stream/stream.h"
#include "compile/view.h"
#include "compile/window.h"
#include "compile/build.h"

/*
 * ssp_view_flag: does CREATE VIEW carry the option ssp.name (true, or
 * without a value)?
 */
bool
ssp_view_flag(ViewStmt *stmt, const char *name)
{
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);

		if (def->defnamespace && strcmp(def->defnamespace, "ssp") == 0 &&
			strcmp(def->defname, name) == 0)
			return def->arg == NULL || defGetBoolean(def);
	}
	return false;
}

static Interval *
parse_interval(const char *val)
{
	return DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(val),
												 ObjectIdGetDatum(InvalidOid),
												 Int32GetDatum(-1)));
}

/*
 * interval_length: iv in microseconds, a month being 30 days and a day 24
 * hours; false if that is past int64.
 */
static bool
interval_length(Interval *iv, int64 *us)
{
	int64		days;

	return !(pg_mul_s64_overflow(iv->month, DAYS_PER_MONTH, &days) ||
			 pg_add_s64_overflow(days, iv->day, &days) ||
			 pg_mul_s64_overflow(days, USECS_PER_DAY, us) ||
			 pg_add_s64_overflow(*us, iv->time, us));
}

/* length_text: a length of time in microseconds as an interval's text */
static char *
length_text(int64 us)
{
	Interval	iv = {.time = us};

	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(&iv)));
}

static int
interval_ms(DefElem *def)
{
	char	   *val = defGetString(def);
	int64		us;

	if (!interval_length(parse_interval(val), &us) ||
		us < 1000 || us > (int64) 3600 * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ssp.%s must be between 1 millisecond and 1 hour, not \"%s\"",
						def->defname, val)));
	return (int) (us / 1000);
}

/*
 * int_option: an integer option's value.  Options are kept as text
 * (ssp.continuous_views.options) and parsed again when the view's SQL is
 * built, so a string of digits is an integer too.
 */
static int64
int_option(DefElem *def)
{
	if (def->arg && IsA(def->arg, String))
		return pg_strtoint64(strVal(def->arg));
	return defGetInt64(def);
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

/*
 * ssp_parse_shard: the value of ssp.shard, "k/N": this server is shard k
 * of N, and reads the partitions p with p % N == k.
 */
void
ssp_parse_shard(const char *val, int *index, int *count)
{
	int			k,
				n,
				len = -1;

	if (sscanf(val, " %d / %d %n", &k, &n, &len) != 2 || len != (int) strlen(val))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value \"%s\" for ssp.shard", val),
				 errhint("Give the shard as k/N: of N servers, this one reads the partitions p with p %% N = k, as in ssp.shard = '0/3'.")));
	if (n < 1 || n > SSP_MAX_SHARDS || k < 0 || k >= n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value \"%s\" for ssp.shard", val),
				 errdetail("N must be between 1 and %d, and k between 0 and N - 1.", SSP_MAX_SHARDS)));
	*index = k;
	*count = n;
}

/*
 * length_of_time: an option's interval as a length of time (a day being 24
 * hours), unless it has months: windows and steps are lengths of time,
 * and timestamptz + '1 day' is not one where the worker's TimeZone
 * changes its clocks.
 */
static char *
length_of_time(char *val, const char *option)
{
	Interval   *iv = parse_interval(val);
	int64		us;

	if (iv->month != 0)
		return val;
	if (!interval_length(iv, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s out of range: \"%s\"", option, val)));
	return length_text(us);
}

/*
 * sliding_step: the step of a sliding window, checked here rather than by
 * each batch that failed for good: ssp.step, or by default a sixtieth of
 * ssp.sliding (a month being 30 days, as interval / 60 has it: a sliding
 * of five years stepped by '1 mon', which no window may be), as a length
 * of time; and ssp.sliding as one, unless it has months (then "the last
 * month" is one of the calendar's, back from now()).
 */
static void
sliding_step(SspViewOptions *opts)
{
	Interval   *step;
	int64		us;

	if (opts->step)
	{
		step = parse_interval(opts->step);
		if (step->month != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ssp.step cannot be in months or years, not \"%s\"", opts->step),
					 errhint("A step is a length of time: use days, as in '30 days'.")));
	}
	else
		step = DatumGetIntervalP(DirectFunctionCall2(interval_div,
													 IntervalPGetDatum(parse_interval(opts->sliding)),
													 Float8GetDatum(60.0)));
	if (!interval_length(step, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("ssp.step out of range: \"%s\"", opts->step ? opts->step : opts->sliding)));
	if (us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ssp.sliding \"%s\" is too short for a step of a sixtieth of it", opts->sliding),
				 errhint("Give ssp.step.")));
	opts->step = length_text(us);
	opts->sliding = length_of_time(opts->sliding, "ssp.sliding");
}

SspViewOptions
ssp_parse_view_options(List *options)
{
	SspViewOptions opts = {
		.start = pstrdup("earliest"),
		.commit_interval_ms = SSP_DEFAULT_COMMIT_INTERVAL_MS,
		.batch_size = SSP_DEFAULT_BATCH_SIZE,
		.on_error = pstrdup("dead_letter"),
		.parallelism = 1,
		.fast_path = ssp_aggregate_fast_path
	};
	ListCell   *lc;

	foreach(lc, options)
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
			int64		v = int_option(def);

			if (v < 1 || v > SSP_MAX_BATCH_SIZE)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("ssp.batch_size must be between 1 and %d, not %lld",
								SSP_MAX_BATCH_SIZE, (long long) v)));
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
		else if (strcmp(n, "output_topic") == 0)
		{
			const char *t = defGetString(def);

			ssp_check_topic_name(t, "ssp.output_topic");
			opts.output_topic = pstrdup(t);
		}
		else if (strcmp(n, "aggregate_fast_path") == 0)
			opts.fast_path = defGetBoolean(def);	/* kept by options_text */
		else if (strcmp(n, "parallelism") == 0)
		{
			int64		v = int_option(def);

			if (v < 1 || v > SSP_MAX_PARALLELISM)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("ssp.parallelism must be between 1 and %d, not %lld",
								SSP_MAX_PARALLELISM, (long long) v)));
			opts.parallelism = (int) v;
		}
		else if (strcmp(n, "shard") == 0)
			ssp_parse_shard(defGetString(def), &opts.shard_index, &opts.shard_count);
		else if (strcmp(n, "shards") == 0)
		{
			if (!SplitIdentifierString(pstrdup(defGetString(def)), ',', &opts.shard_servers) ||
				opts.shard_servers == NIL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid server list \"%s\" for ssp.shards", defGetString(def)),
						 errhint("Name the postgres_fdw servers of the shards in order, shard 0 first, as in ssp.shards = 'shard0, shard1, shard2'.")));
			if (list_length(opts.shard_servers) > SSP_MAX_SHARDS)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("ssp.shards can name at most %d servers, not %d",
								SSP_MAX_SHARDS, list_length(opts.shard_servers))));
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized continuous view option \"ssp.%s\"", n),
					 errhint("Valid options are ssp.start, ssp.commit_interval, ssp.batch_size, ssp.on_error, ssp.grace, ssp.retention, ssp.idle_timeout, ssp.emit, ssp.sliding, ssp.step, ssp.primary_key, ssp.parallelism, ssp.shard, ssp.shards and ssp.output_topic.")));
	}
	if (opts.shard_servers != NIL)
	{
		if (opts.shard_count > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ssp.shard and ssp.shards cannot be used together"),
					 errdetail("ssp.shard makes a view one shard of a view; ssp.shards makes it the view over all of them, read from their servers.")));
		opts.shard_count = list_length(opts.shard_servers);
	}
	if (opts.step && !opts.sliding)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ssp.step needs ssp.sliding")));
	if (opts.sliding)
		sliding_step(&opts);
	if (opts.retention)
		opts.retention = length_of_time(opts.retention, "ssp.retention");
	return opts;
}

/*
 * reads_stream_walker: does a query (or expression) read a stream, at any
 * depth?  Subqueries over tables are read in each batch's snapshot, as the
 * tables the stream is joined with; one over a stream would scan the topic.
 */
static bool
reads_stream_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		return rte->rtekind == RTE_RELATION && ssp_is_stream(rte->relid);
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, reads_stream_walker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, reads_stream_walker, context);
}

/* WholeRows: what whole_rows_mutator walks the query with */
typedef struct WholeRows
{
	Bitmapset  *streams;		/* the streams' range-table indexes */
	int			level;			/* of the query being walked: 0 at the top */
	bool		found;			/* a whole row was read */
	Bitmapset  *grouped;		/* the streams whose whole row the top query
								 * groups by */
	bool		grouped_part;	/* walking what the top query computes over
								 * its groups: its select list, HAVING */
	int			aggs;			/* how many aggregates' arguments we are in */
} WholeRows;

/* is_whole_row: is node a whole-row Var of a stream, at w's level? */
static bool
is_whole_row(Node *node, WholeRows *w)
{
	Var		   *var = (Var *) node;

	return node && IsA(node, Var) && var->varattno == InvalidAttrNumber &&
		var->varlevelsup == w->level && bms_is_member(var->varno, w->streams) &&
		var->vartype != RECORDOID;
}

/*
 * whole_rows_mutator: a whole-row reference to a stream (SELECT s,
 * row_to_json(s), s IS NULL, array_agg(s)) as the ROW of its columns, of
 * its type.  The batch a view reads in its place has ssp's columns too
 * (_ssp_partition, _ssp_offset, _ssp_tombstone), which its whole row
 * would have held.
 */
static Node *
whole_rows_mutator(Node *node, WholeRows *w)
{
	if (node == NULL)
		return NULL;

	/*
	 * s IS [NOT] NULL: each of its columns' values is [not] null, as
	 * Postgres tests a row's fields.  (Over a ROW holding a dropped
	 * column's null, the planner would take IS NOT NULL for false.)  Not
	 * where the query groups by s and the test is of the group (in its
	 * select list or HAVING, outside an aggregate's arguments): it is of
	 * the group's key, computed over the view's table, which holds s whole.
	 */
	if (IsA(node, NullTest) && ((NullTest *) node)->argisrow &&
		is_whole_row((Node *) ((NullTest *) node)->arg, w) &&
		!(w->grouped_part && w->aggs == 0 &&
		  bms_is_member(((Var *) ((NullTest *) node)->arg)->varno, w->grouped)))
	{
		NullTest   *test = (NullTest *) node;
		Var		   *var = (Var *) test->arg;
		TupleDesc	desc = lookup_rowtype_tupdesc(var->vartype, -1);
		List	   *tests = NIL;

		w->found = true;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);
			NullTest   *t;

			if (att->attisdropped)
				continue;
			t = makeNode(NullTest);
			t->arg = (Expr *) makeVar(var->varno, att->attnum, att->atttypid, att->atttypmod,
									  att->attcollation, var->varlevelsup);
			t->nulltesttype = test->nulltesttype;
			t->argisrow = false;	/* a composite field: its value, not its fields */
			t->location = test->location;
			tests = lappend(tests, t);
		}
		ReleaseTupleDesc(desc);
		if (tests == NIL)
			return makeBoolConst(true, false);
		return list_length(tests) == 1 ? linitial(tests) :
			(Node *) makeBoolExpr(AND_EXPR, tests, test->location);
	}
	if (is_whole_row(node, w))
	{
		Var		   *var = (Var *) node;
		RowExpr    *row;
		TupleDesc	desc;

		w->found = true;
		desc = lookup_rowtype_tupdesc(var->vartype, -1);
		row = makeNode(RowExpr);
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			/* a dropped column: a null, as the rewriter expands a whole row */
			row->args = lappend(row->args, att->attisdropped ?
								(Node *) makeNullConst(INT4OID, -1, InvalidOid) :
								(Node *) makeVar(var->varno, att->attnum, att->atttypid, att->atttypmod,
												 att->attcollation, var->varlevelsup));
			row->colnames = lappend(row->colnames,
									makeString(pstrdup(att->attisdropped ? "" : NameStr(att->attname))));
		}
		ReleaseTupleDesc(desc);
		row->row_typeid = var->vartype;
		row->row_format = COERCE_EXPLICIT_CAST;
		row->location = var->location;
		return (Node *) row;
	}
	if (IsA(node, Query) && w->level < 0)
	{
		/*
		 * The top query: its select list and HAVING apart, which it
		 * computes over its groups; the rest (WHERE, ON) over rows.
		 */
		Query	   *q = (Query *) node;
		Query	   *result;
		List	   *tlist = q->targetList;
		Node	   *having = q->havingQual;
		ListCell   *lc;

		w->level++;
		foreach(lc, q->groupClause)
		{
			Node	   *e = get_sortgroupclause_expr(lfirst(lc), q->targetList);

			if (is_whole_row(e, w))
				w->grouped = bms_add_member(w->grouped, ((Var *) e)->varno);
		}
		q->targetList = NIL;
		q->havingQual = NULL;
		result = query_tree_mutator(q, whole_rows_mutator, w, 0);
		q->targetList = tlist;
		q->havingQual = having;
		w->grouped_part = true;
		result->targetList = (List *) expression_tree_mutator((Node *) tlist, whole_rows_mutator, w);
		result->havingQual = expression_tree_mutator(having, whole_rows_mutator, w);
		w->grouped_part = false;
		w->level--;
		return (Node *) result;
	}
	if (IsA(node, Query))
	{
		Node	   *result;

		w->level++;
		result = (Node *) query_tree_mutator((Query *) node, whole_rows_mutator, w, 0);
		w->level--;
		return result;
	}
	if (IsA(node, Aggref))
	{
		Node	   *result;

		w->aggs++;
		result = expression_tree_mutator(node, whole_rows_mutator, w);
		w->aggs--;
		return result;
	}
	return expression_tree_mutator(node, whole_rows_mutator, w);
}

/* check_query: refuse what ssp cannot maintain; returns the streams. */
static List *
check_query(Query *q)
{
	RangeTblEntry *rte;
	ListCell   *lc;
	List	   *streams = NIL;
	bool		empty_set = false;

	if (q->commandType != CMD_SELECT || q->utilityStmt)
		ssp_refuse("anything but a SELECT", "A continuous view is defined by a query.");
	if (q->setOperations)
		ssp_refuse("UNION, INTERSECT or EXCEPT", "Each branch would need its own state.");
	if (q->cteList)
		ssp_refuse("WITH queries", "Common table expressions are not maintained incrementally.");
	if (q->hasWindowFuncs)
		ssp_refuse("window functions", "A window function depends on rows of other batches; use GROUP BY, or ORDER BY when querying the view.");
	if (q->hasDistinctOn)
		ssp_refuse("DISTINCT ON", "It keeps one row of each key, whichever comes first in an order a stream does not have; use GROUP BY with min() or max().");
	if (q->distinctClause && (q->hasAggs || q->groupClause))
		ssp_refuse("DISTINCT over aggregates", "Each batch changes the aggregates, and with them which rows are duplicates; query the view with DISTINCT instead.");
	if (q->sortClause)
		ssp_refuse("ORDER BY", "A view's rows have no order; put ORDER BY in the queries that read it.");
	/* (it failed later, naming an internal view, from inside SPI) */
	if (isQueryUsingTempRelation(q))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view cannot read a temporary table"),
				 errdetail("Its worker runs in a session of its own, which cannot see this session's temporary tables.")));
	if (q->limitCount || q->limitOffset)
		ssp_refuse("LIMIT or OFFSET", "A limit over an unbounded stream changes as rows arrive; put it in the queries that read the view.");
	/* (it failed in the CREATE TABLE of the view's table, from inside SPI) */
	foreach(lc, q->targetList)
	{
		TargetEntry *te = lfirst(lc);

		/* a column, or a GROUP BY key it does not show */
		if ((!te->resjunk || te->ressortgroupref != 0) &&
			get_typtype(exprType((Node *) te->expr)) == TYPTYPE_PSEUDO)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 te->resjunk || te->resname == NULL ?
					 errmsg("a GROUP BY key of a continuous view cannot be of type %s",
							format_type_be(exprType((Node *) te->expr))) :
					 errmsg("column \"%s\" of a continuous view cannot be of type %s",
							te->resname, format_type_be(exprType((Node *) te->expr))),
					 errdetail("A continuous view keeps its rows in a table, which cannot have a column of that type."),
					 errhint("Keep the fields as columns of their own, or make the value of a named composite type (CREATE TYPE).")));
	}
	if (q->hasSubLinks &&
		query_tree_walker(q, reads_stream_walker, NULL, QTW_IGNORE_RANGE_TABLE))
		ssp_refuse("a subquery that reads a stream", "Join the two streams with ON and a bound between their event times; subqueries may read tables and views.");
	/*
	 * GROUP BY () (or GROUPING SETS (()), GROUP BY (), ()) groups as no
	 * GROUP BY does, over aggregates: taken as that.  (Postgres's analysis
	 * already takes one set of columns, GROUPING SETS ((a, b)), for GROUP
	 * BY a, b.)
	 */
	if (q->groupingSets)
	{
		List	   *sets = expand_grouping_sets(q->groupingSets, q->groupDistinct, 2);

		if (list_length(sets) != 1)
			ssp_refuse("GROUPING SETS, ROLLUP or CUBE", "Each grouping set would need its own state.");
		empty_set = linitial(sets) == NIL;
		q->groupingSets = NIL;
		q->groupDistinct = false;
	}
	/* (it was taken for a query without aggregates: a row per message) */
	if ((empty_set || q->havingQual) && !q->hasAggs && q->groupClause == NIL)
		ssp_refuse("GROUP BY () or HAVING without an aggregate",
				   "Its query has one row however many messages come, or none, and no aggregate to keep; add one, such as count(*).");
	ssp_check_window_calls(q);
	if (q->hasTargetSRFs)
		ssp_refuse("set-returning functions in the select list", "They are not maintained incrementally.");
	if (q->rowMarks)
		ssp_refuse("FOR UPDATE or FOR SHARE", "Stream rows cannot be locked.");

	foreach(lc, q->rtable)
	{
		rte = lfirst(lc);
		if (rte->rtekind == RTE_RELATION && ssp_is_stream(rte->relid))
			streams = lappend_oid(streams, rte->relid);
		else if (rte->rtekind == RTE_SUBQUERY)
		{
			if (rte->lateral)
				ssp_refuse("a LATERAL subquery", "A subquery in FROM is read as a table in each batch's snapshot; move what it takes from the stream into the join's ON.");
			if (reads_stream_walker((Node *) rte->subquery, NULL))
				ssp_refuse("a subquery that reads a stream", "Join the two streams with ON and a bound between their event times; subqueries may read tables and views.");
			{
				ListCell   *a,
						   *c;

				foreach(a, rte->eref->colnames)
					for_each_cell(c, rte->eref->colnames, lnext(rte->eref->colnames, a))
						if (strcmp(strVal(lfirst(a)), strVal(lfirst(c))) == 0)
							ssp_refuse("a subquery in FROM with two columns of one name", "Give its columns distinct names, as in (SELECT a.id AS a_id, b.id AS b_id ...).");
			}
		}
		else if (rte->rtekind == RTE_FUNCTION || rte->rtekind == RTE_VALUES ||
				 rte->rtekind == RTE_TABLEFUNC)
			ssp_refuse("functions or VALUES in FROM", "A continuous view joins its stream with tables, views and subqueries over them only.");
		if (rte->tablesample)
			ssp_refuse("TABLESAMPLE", "A continuous view reads every row.");
	}
	if (streams == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view must read a stream"),
				 errdetail("A stream is a foreign table of a server of foreign-data wrapper ssp_kafka.")));
	if (list_length(streams) > SSP_MAX_STREAMS)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view can join at most %d streams", SSP_MAX_STREAMS),
				 errdetail("It reads %d.", list_length(streams)),
				 errhint("Join some of them in a view with ssp.output_topic, and read its topic as a stream.")));
	return streams;
}

void
ssp_spi_exec(const char *sql)
{
	int			rc;

	/* ssp's own statements may change the parts of views (utility.c) */
	ssp_own_ddl++;
	PG_TRY();
	{
		/* built with every name qualified against this path */
		int			level = ssp_pin_search_path();

		rc = SPI_execute(sql, false, 0);
		AtEOXact_GUC(true, level);
	}
	PG_FINALLY();
	{
		ssp_own_ddl--;
	}
	PG_END_TRY();
	if (rc < 0)
		elog(ERROR, "ssp: SPI_execute failed (%s): %s", SPI_result_code_string(rc), sql);
}

/*
 * ssp_view_one_group: is the view whose table is mrel, over nsources
 * streams, one of one group (aggregates without GROUP BY, over one stream:
 * its table has the key _g0), which ssp_view_seed gives its row?
 */
bool
ssp_view_one_group(Oid mrel, int nsources)
{
	return nsources == 1 && get_attnum(mrel, "_g0") != InvalidAttrNumber;
}

/*
 * ssp_view_seed: give a view of one group (aggregates without GROUP BY,
 * over one stream: its table has the key _g0) the row its query has over
 * no rows, as Postgres gives one (count 0, sum NULL...): its apply
 * statement over an empty batch, run as the view's owner runs it in its
 * worker.  Until its first batch it had none.  For CREATE VIEW and
 * ssp.reset; needs SPI.  (Over a changelog, or with ssp.sliding, the
 * statement makes no row of an empty batch: the first batch makes it.)
 */
void
ssp_view_seed(Oid mrel, int nsources, Oid stream, const char *apply_sql)
{
	Relation	rel;
	TupleDesc	desc;
	EphemeralNamedRelation enr;
	Oid			argtypes[3] = {TIMESTAMPTZOID, INT4OID, INT4OID};
	Datum		args[3] = {0, Int32GetDatum(0), Int32GetDatum(0)};
	volatile int rc = 0;
	Oid			save_userid;
	int			save_sec;

	if (apply_sql == NULL || !ssp_view_one_group(mrel, nsources))
		return;
	/* the batch's columns, as the worker gives them (batch.c) */
	rel = relation_open(stream, AccessShareLock);
	desc = ssp_batch_tupdesc(RelationGetDescr(rel));
	relation_close(rel, NoLock);

	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = (char *) SSP_BATCH_RELATION(0);
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = 0;
	enr->reldata = tuplestore_begin_heap(false, false, work_mem);
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "ssp: could not register the batch relation");
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(ssp_rel_owner(mrel),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		int			level = ssp_pin_search_path();

		/* no watermark yet, the first run, part 0 */
		rc = SPI_execute_with_args(apply_sql, 3, argtypes, args, "n  ", false, 0);
		AtEOXact_GUC(true, level);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec);
		SPI_unregister_relation(SSP_BATCH_RELATION(0));
	}
	PG_END_TRY();
	if (rc < 0)
		elog(ERROR, "ssp: the apply statement failed over an empty batch (%s)", SPI_result_code_string(rc));
}

/* ssp_target_names: the output column names, from the query or CREATE VIEW v (a, b). */
List *
ssp_target_names(Query *q, List *aliases)
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

/* text_array: a List of strings as a text[] */
static Datum
text_array(List *strings)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(strings), 1));
	ListCell   *lc;

	foreach(lc, strings)
		elems[foreach_current_index(lc)] = CStringGetTextDatum(lfirst(lc));
	return PointerGetDatum(construct_array(elems, list_length(strings), TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * record_view: make the materialisation table, the view's query and the
 * other tables part of the view, the view depend on its streams and
 * tables, and add the catalog row.  Needs SPI connected.
 */
static void
record_view(Oid viewoid, Oid mreloid, Oid queryoid, Oid nspid, List *names,
			List *options, const char *apply_sql, Build *b)
{
	SspViewOptions *opts = b->opts;
	int			nstreams = b->nstreams;
	ListCell   *lc;
	ObjectAddress viewaddr,
				mreladdr;
	Datum		args[27];
	char		nulls[27] = "                           ";
	Oid			argtypes[28] = {OIDOID, OIDOID, OIDARRAYOID, TEXTARRAYOID, TEXTOID, TEXTOID, INT4OID, INT4OID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, OIDARRAYOID, INT4OID,
		TEXTOID, TEXTOID, TEXTARRAYOID, BOOLARRAYOID, TEXTOID, OIDOID, TEXTOID, OIDOID,
	TEXTARRAYOID, TEXTARRAYOID};
	Datum	   *elems = palloc(sizeof(Datum) * Max(nstreams, list_length(b->buffer_names)));
	Oid		   *buffers = palloc(sizeof(Oid) * Max(list_length(b->buffer_names), 1));
	Oid			changes = InvalidOid;
	Oid			outbox = InvalidOid;
	int			nbuffers = 0;
	int			i;

	ObjectAddressSet(viewaddr, RelationRelationId, viewoid);
	ObjectAddressSet(mreladdr, RelationRelationId, mreloid);
	/* the mrel, the query and the buffers are part of the view */
	recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
	ObjectAddressSet(mreladdr, RelationRelationId, queryoid);
	recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
	foreach(lc, b->buffer_names)
	{
		buffers[nbuffers] = get_relname_relid(lfirst(lc), nspid);
		ObjectAddressSet(mreladdr, RelationRelationId, buffers[nbuffers]);
		recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
		nbuffers++;
	}
	/* it reads streams and tables (the query depends on their columns) */
	foreach(lc, b->query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		ObjectAddress reladdr;

		if (rte->rtekind != RTE_RELATION)
			continue;
		ObjectAddressSet(reladdr, RelationRelationId, rte->relid);
		recordDependencyOn(&viewaddr, &reladdr, DEPENDENCY_NORMAL);
	}

	args[0] = ObjectIdGetDatum(viewoid);
	args[1] = ObjectIdGetDatum(mreloid);
	for (i = 0; i < nstreams; i++)
		elems[i] = ObjectIdGetDatum(b->stream_oids[i]);
	args[2] = PointerGetDatum(construct_array(elems, nstreams, OIDOID, 4, true, TYPALIGN_INT));
	for (i = 0; i < nstreams; i++)
		elems[i] = CStringGetTextDatum(b->topics[i]);
	args[3] = PointerGetDatum(construct_array(elems, nstreams, TEXTOID, -1, false, TYPALIGN_INT));
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
	args[14] = b->columns ? CStringGetTextDatum(b->columns) : (Datum) 0;
	nulls[14] = b->columns ? ' ' : 'n';
	for (i = 0; i < nbuffers; i++)
		elems[i] = ObjectIdGetDatum(buffers[i]);
	args[15] = PointerGetDatum(construct_array(elems, nbuffers, OIDOID, 4, true, TYPALIGN_INT));
	nulls[15] = nbuffers ? ' ' : 'n';
	/* a view over shards runs no worker */
	args[16] = Int32GetDatum(opts->shard_servers ? 0 : opts->parallelism);
	/* what a rollup reads: aggregating views only */
	if (b->rollup_from)
	{
		int			ncols = list_length(b->rollup_columns);
		Datum	   *combinable = palloc(sizeof(Datum) * ncols);

		for (i = 0; i < ncols; i++)
			combinable[i] = BoolGetDatum(list_nth_int(b->rollup_combinable, i) != 0);
		args[17] = CStringGetTextDatum(b->rollup_from);
		args[18] = CStringGetTextDatum(b->rollup_states);
		args[19] = text_array(b->rollup_columns);
		args[20] = PointerGetDatum(construct_array(combinable, ncols, BOOLOID, 1, true, TYPALIGN_CHAR));
	}
	else
		memset(nulls + 17, 'n', 4);
	/* ssp.output_topic: the outbox, and its function and table part of the view */
	if (opts->output_topic)
	{
		ObjectAddress addr;

		outbox = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(b->outbox)),
								  NoLock, false);
		ObjectAddressSet(addr, RelationRelationId, outbox);
		recordDependencyOn(&addr, &viewaddr, DEPENDENCY_INTERNAL);
		if (!b->outbox_final_sql)
		{
			/*
			 * Dropped with the view, but an AUTO dependency: pg_dump (and
			 * so pg_upgrade) leaves out the functions that are INTERNAL
			 * parts of another object, and the mrel's triggers call it.
			 */
			changes = LookupFuncName(stringToQualifiedNameList(b->changes_fn), 0, NULL, false);
			ObjectAddressSet(addr, ProcedureRelationId, changes);
			recordDependencyOn(&addr, &viewaddr, DEPENDENCY_AUTO);
		}
		args[21] = CStringGetTextDatum(opts->output_topic);
		args[23] = b->outbox_final_sql ? CStringGetTextDatum(b->outbox_final_sql) : (Datum) 0;
		nulls[23] = b->outbox_final_sql ? ' ' : 'n';
	}
	else
		memset(nulls + 21, 'n', 3);
	args[22] = ObjectIdGetDatum(outbox);
	nulls[22] = OidIsValid(outbox) ? ' ' : 'n';
	args[24] = ObjectIdGetDatum(queryoid);
	args[25] = text_array(names);
	args[26] = text_array(options);
	if (ssp_spi_catalog("INSERT INTO ssp.continuous_views (view, mrel, streams, topics, apply_sql, start, "
							  "commit_interval_ms, batch_size, on_error, late_sql, retention_sql, grace, idle_timeout, emit, columns, buffers, "
							  "parallelism, rollup_from, rollup_states, rollup_columns, rollup_combinable, "
							  "output_topic, outbox, outbox_final_sql, query, names, options) "
							  "VALUES ($1, $2, $3::regclass[], $4, $5, $6, $7, $8, $9, $10, $11, $12::interval, $13::interval, $14, "
							  "$15::smallint[], $16::regclass[], $17, $18, $19, $20, $21, $22, $23::regclass, $24, $25, $26, $27)",
							  27, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "ssp: could not record the continuous view");
	ssp_wake_scheduler_at_commit();
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
			return psprintf("%s b", b->batch);
		if (rte->rtekind == RTE_SUBQUERY)
		{
			/* a subquery over tables, named with its columns as the query names them */
			StringInfoData sub;
			ListCell   *lc;

			initStringInfo(&sub);
			appendStringInfo(&sub, "(%s) %s(", pg_get_querydef(rte->subquery, false),
							 quote_identifier(list_nth(names, rtindex - 1)));
			foreach(lc, rte->eref->colnames)
				appendStringInfo(&sub, "%s%s", foreach_current_index(lc) ? ", " : "",
								 quote_identifier(strVal(lfirst(lc))));
			appendStringInfoChar(&sub, ')');
			return sub.data;
		}
		return psprintf("%s %s",
						quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
												   get_rel_name(rte->relid)),
						quote_identifier(list_nth(names, rtindex - 1)));
	}
	if (IsA(node, JoinExpr) && node == (Node *) b->stream_join)
		return psprintf("(%s)", b->join_from);
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;
		const char *kind;

		/*
		 * USING and NATURAL: parse analysis made their equalities the join's
		 * quals, written here as ON; a merged column's Var deparses as the
		 * input column it stands for (an unnamed join's alias variable)
		 */
		if (j->usingClause || j->isNatural)
		{
			RangeTblEntry *jrte = rt_fetch(j->rtindex, q->rtable);
			int			k;

			if (j->alias || j->join_using_alias)
				ssp_refuse("a named JOIN ... USING", "Leave the join unnamed, or write the join condition with ON.");
			for (k = 0; k < jrte->joinmergedcols; k++)
				if (!IsA(list_nth(jrte->joinaliasvars, k), Var))
					ssp_refuse("JOIN ... USING of columns of two types",
							   "Write the join condition with ON, casting one side.");
		}
		if (j->jointype == JOIN_INNER)
			kind = j->quals ? "JOIN" : "CROSS JOIN";
		else if (j->jointype == JOIN_LEFT && join_has_stream(q, j->larg))
			kind = "LEFT JOIN";
		else if (j->jointype == JOIN_RIGHT && join_has_stream(q, j->rarg))
			kind = "RIGHT JOIN";
		else
			ssp_refuse("an outer join that keeps table rows without the stream",
				   "Rows of a table with no matching event would have to be taken back when one comes; use an inner join, or a left join with the stream on the left.");
		return psprintf("(%s %s %s%s%s)", from_sql(b, names, j->larg), kind,
						from_sql(b, names, j->rarg), j->quals ? " ON " : "",
						j->quals ? ssp_deparse(b, j->quals) : "");
	}
	elog(ERROR, "ssp: unexpected FROM item %d", (int) nodeTag(node));
	return NULL;
}

/*
 * setup_deparse: name the stream "b" (unless two are joined: they keep
 * their names), and set up the deparse context over every relation of the
 * query.
 */
static void
setup_deparse(Build *b, Oid stream)
{
	Query	   *q = b->query;
	ListCell   *lc;
	Bitmapset  *rels = NULL;
	PlannedStmt *ps;
	int			i = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		i++;
		if (b->stream_join)
			;
		else if (rte->rtekind == RTE_RELATION && rte->relid == stream)
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
		return;
	}
	ps = makeNode(PlannedStmt);
	ps->rtable = q->rtable;
	b->rtnames = select_rtable_names_for_explain(q->rtable, rels);
	b->dpcontext = deparse_context_for_plan_tree(ps, b->rtnames);
}

/* ssp_stream_rtindex: the range-table index of the (first) stream of b's query. */
int
ssp_stream_rtindex(Build *b)
{
	ListCell   *lc;

	foreach(lc, b->query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relid == b->stream_oids[0])
			return foreach_current_index(lc) + 1;
	}
	return 0;
}

/*
 * check_changelog: refuse what a view over a changelog cannot keep.  Its
 * aggregates retract a key's old version when a new one comes
 * (viewsql.c); a view without aggregates keeps the latest row per key.
 */
static void
check_changelog(Build *b, SspStream *s)
{
	Query	   *q = b->query;

	if (b->nstreams > 2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("changelog \"%s\" cannot be read in a join of more than two streams", s->relname),
				 errdetail("A changelog is joined with one stream, each row with the version of its key current at its event time."),
				 errhint("Keep the changelog in a view with ssp.primary_key and join that view.")));
	/* a stream joined with a changelog reads it as of its rows' times (join.c) */
	if (b->nstreams == 2 && s == b->streams[1])
		return;
	if (b->nstreams == 2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("changelog \"%s\" must be the right side of a join with a stream", s->relname),
				 errdetail("Each row of the stream on the left is joined with the version of its key current at its event time."),
				 errhint("Write FROM stream s [LEFT] JOIN changelog c ON c.key = s.key AND c.ts <= s.ts.")));
	if (!(q->hasAggs || q->groupClause) && b->opts->primary_key == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view of changelog \"%s\" without aggregates needs ssp.primary_key", s->relname),
				 errdetail("Each message is the new version of its key's row: the view keeps the latest row per key."),
				 errhint("Add ssp.primary_key = '...' naming the output columns of the key.")));
	/* the latest row per key: a delete names only the key columns */
	if (!(q->hasAggs || q->groupClause))
	{
		int			rtindex = ssp_stream_rtindex(b);
		int			keys = 0;
		int			matched = 0;
		int			i;
		ListCell   *lc;

		for (i = 0; i < s->ncolumns; i++)
			keys += s->columns[i].source == SSP_SRC_KEY || s->columns[i].source == SSP_SRC_RAWKEY;
		foreach(lc, b->opts->primary_key)
		{
			ListCell   *tc;

			foreach(tc, q->targetList)
			{
				TargetEntry *tle = lfirst(tc);
				Var		   *v = (Var *) tle->expr;

				if (tle->resjunk || tle->resname == NULL || strcmp(tle->resname, lfirst(lc)) != 0)
					continue;
				for (i = 0; IsA(v, Var) && v->varno == rtindex && v->varlevelsup == 0 && i < s->ncolumns; i++)
					if (s->columns[i].attnum == v->varattno &&
						(s->columns[i].source == SSP_SRC_KEY || s->columns[i].source == SSP_SRC_RAWKEY))
						matched++;
			}
		}
		if (matched != keys || list_length(b->opts->primary_key) != keys)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ssp.primary_key of a view of changelog \"%s\" must be its key columns", s->relname),
					 errdetail("A message replaces or deletes the row of its key; a delete carries nothing else."),
					 errhint("Select the stream's key columns and name those in ssp.primary_key.")));
	}
	if (b->opts->sliding || b->opts->parallelism > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.sliding and ssp.parallelism cannot be used over changelog \"%s\"", s->relname),
				 errdetail("A key's versions are kept in one place, and a version counts until the next one replaces it.")));
}

/* setup_from: the FROM clause of the apply statement. */
static void
setup_from(Build *b)
{
	StringInfoData from;
	ListCell   *lc;

	if (list_length(b->query->rtable) == 1)
	{
		b->from = psprintf("%s b", b->batch);
		return;
	}
	initStringInfo(&from);
	foreach(lc, b->query->jointree->fromlist)
		appendStringInfo(&from, "%s%s", from.len ? ", " : "", from_sql(b, b->rtnames, lfirst(lc)));
	b->from = from.data;
}

/*
 * needed_columns: the stream columns the view reads, as an int2[] literal,
 * or NULL for all (a whole-row reference).  Others are not decoded.
 */
static char *
needed_columns(Build *b, Oid stream)
{
	Query	   *q = b->query;
	Bitmapset  *attrs = NULL;
	StringInfoData buf;
	ListCell   *lc;
	int			rtindex = 0;
	int			i = 0;
	int			x = -1;

	if (b->stream_join)
		return NULL;			/* the buffers keep every column */
	if (b->whole_row)
		return NULL;			/* and those added to the stream after */
	if (q->hasSubLinks)
		return NULL;			/* a subquery may read any column */
	/* a changelog's key columns say which row a message replaces */
	if (b->stream->changelog)
	{
		int			c;

		for (c = 0; c < b->stream->ncolumns; c++)
			if (b->stream->columns[c].source == SSP_SRC_KEY ||
				b->stream->columns[c].source == SSP_SRC_RAWKEY)
				attrs = bms_add_member(attrs, b->stream->columns[c].attnum - FirstLowInvalidHeapAttributeNumber);
	}

	foreach(lc, q->rtable)
	{
		i++;
		if (((RangeTblEntry *) lfirst(lc))->rtekind == RTE_RELATION &&
			((RangeTblEntry *) lfirst(lc))->relid == stream)
			rtindex = i;
	}
	pull_varattnos((Node *) q->targetList, rtindex, &attrs);
	pull_varattnos((Node *) q->jointree, rtindex, &attrs);
	pull_varattnos(q->havingQual, rtindex, &attrs);
	if (bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs))
		return NULL;
	/* the event time of a window moves the watermark */
	if (b->late_sql && b->stream->timestamp_attnum > 0)
		attrs = bms_add_member(attrs, b->stream->timestamp_attnum - FirstLowInvalidHeapAttributeNumber);
	/* a sliding window's step is computed from its event-time column, a meta one too */
	if (b->step_attnum > 0)
		attrs = bms_add_member(attrs, b->step_attnum - FirstLowInvalidHeapAttributeNumber);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	while ((x = bms_next_member(attrs, x)) >= 0)
		appendStringInfo(&buf, "%s%d", buf.len > 1 ? "," : "", x + FirstLowInvalidHeapAttributeNumber);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/*
 * ssp_choose_function_name: NAME_label for a function without arguments in
 * namespace nspid, clipped to NAMEDATALEN as ChooseRelationName does, with
 * a number added (label1, label2...) while one by that name exists.
 */
char *
ssp_choose_function_name(const char *name, const char *label, Oid nspid)
{
	oidvector  *noargs = buildoidvector(NULL, 0);
	int			pass;

	for (pass = 0;; pass++)
	{
		char	   *fname = makeObjectName(name, NULL,
										   pass == 0 ? label : psprintf("%s%d", label, pass));

		if (!SearchSysCacheExists3(PROCNAMEARGSNSP, CStringGetDatum(fname),
								   PointerGetDatum(noargs), ObjectIdGetDatum(nspid)))
			return fname;
	}
}

/*
 * build_view: the SQL of a continuous view from its analysed query, output
 * column names and options: the DDL of its objects (create, viewsql) and
 * what its worker runs (apply, and the rest in b).  The objects are named
 * as b says (view, mrel, b->outbox, b->changes_fn, b->buffers); a join's
 * buffers are chosen here if b names none.  Refuses what cannot be
 * maintained.  Run at CREATE VIEW and again each time a worker loads the
 * view (rebuild.c), so the names in the SQL are always the current ones.
 */
void
ssp_build_view(Build *b, List *names, const char *view, const char *mrel,
			   StringInfo create, StringInfo viewsql, StringInfo apply)
{
	Query	   *q = b->query;
	SspViewOptions *opts = b->opts;
	List	   *streamlist;
	int			save_nestlevel;
	int			i;

	streamlist = check_query(q);
	b->analysed = copyObject(q);
	/*
	 * A stream's whole row, over one stream (a join of streams reads its
	 * rows from its buffers, whose columns are those the stream had at
	 * CREATE VIEW: refused there).
	 */
	{
		WholeRows	w = {NULL, -1, false, NULL, false, 0};
		ListCell   *lc;

		foreach(lc, q->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);

			if (rte->rtekind == RTE_RELATION && ssp_is_stream(rte->relid))
				w.streams = bms_add_member(w.streams, foreach_current_index(lc) + 1);
		}
		/* in place: the callers hold q */
		if (list_length(streamlist) == 1)
		{
			*q = *(Query *) whole_rows_mutator((Node *) q, &w);
			b->whole_row = w.found;
		}
		else if (!b->rebuilding)
		{
			(void) whole_rows_mutator((Node *) copyObject(q), &w);
			if (w.found)
				ssp_refuse("a whole-row reference to a stream in a join of streams",
						   "The rows of a join of streams wait in buffers of the columns the streams have now; name the columns, as in to_jsonb(ROW(o.id, o.amount)).");
		}
	}
	/*
	 * SELECT DISTINCT a, b keeps the rows of GROUP BY a, b: it is built as
	 * that (its definition, kept in NAME_query, still says DISTINCT).
	 */
	if (q->distinctClause)
	{
		q->groupClause = q->distinctClause;
		q->distinctClause = NIL;
	}
	b->nstreams = list_length(streamlist);
	if (b->nstreams > 1)
	{
		ListCell   *lc;
		int			k;

		foreach(lc, q->jointree->fromlist)
			if (b->stream_join == NULL)
				b->stream_join = ssp_find_stream_join(b, lfirst(lc));
		if (b->stream_join == NULL)
			ssp_refuse(b->nstreams == 2 ? "two streams that are not joined with JOIN ... ON" :
					   "streams that are not joined with each other with JOIN ... ON",
					   b->nstreams == 2 ? "Join two streams directly, with ON and a bound between their event times, as in FROM orders o JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'." :
					   "Join the streams with each other first, each with ON and a bound between event times, as in FROM orders o JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day' JOIN shipments s ON ..., then the tables.");
		for (i = 0; i < b->nstreams; i++)
		{
			b->stream_oids[i] = rt_fetch(b->join_rtindex[i], q->rtable)->relid;
			b->streams[i] = ssp_stream_open(b->stream_oids[i]);
			b->topics[i] = b->streams[i]->topic;
			/* a view keeps one offset per topic and partition */
			for (k = 0; k < i; k++)
				if (strcmp(b->streams[k]->topic, b->streams[i]->topic) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("a join of streams cannot read topic \"%s\" twice", b->streams[i]->topic),
							 errdetail("A continuous view keeps one offset per topic and partition.")));
		}
	}
	else
		b->stream_oids[0] = linitial_oid(streamlist);
	b->stream = ssp_stream_open(b->stream_oids[0]);
	b->topics[0] = b->stream->topic;

	/* deparse with every name qualified */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	b->definition = pg_get_querydef(b->analysed, false);
	setup_deparse(b, b->stream_oids[0]);
	b->window = -1;
	b->batch = "ssp_batch";
	for (i = 0; i < b->nstreams; i++)
		if (b->nstreams == 1 ? b->stream->changelog : b->streams[i]->changelog)
		{
			check_changelog(b, b->nstreams == 1 ? b->stream : b->streams[i]);
			break;
		}
	if (b->stream->changelog && (q->hasAggs || q->groupClause))
		b->batch = "_ssp_latest";
	if (b->stream_join)
	{
		if (opts->primary_key)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ssp.primary_key cannot be used with a join of streams"),
					 errdetail("A pair of rows is not the latest version of a key.")));
		ssp_build_stream_join(b, b->stream_join, b->rtnames, create);
	}
	setup_from(b);
	if (q->hasAggs || q->groupClause)
		ssp_build_aggregating(b, names, mrel, view, create, viewsql, apply);
	else
		ssp_build_append_only(b, names, mrel, view, create, viewsql, apply);
	AtEOXact_GUC(true, save_nestlevel);
	if (opts->primary_key && (q->hasAggs || q->groupClause))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.primary_key applies to views without aggregates"),
				 errdetail("It keeps the latest row per key, as a table kept from a compacted topic.")));
	if (opts->parallelism > 1 && (b->stream_join || b->window >= 0 || opts->sliding || opts->primary_key))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.parallelism cannot be used with windows, ssp.sliding, ssp.primary_key or a join of streams"),
				 errdetail("Each worker reads only its share of the partitions, and these need the event times, or the order of the messages, of all of them.")));
	if (opts->shard_count > 0)
		ssp_shard_check(b, mrel, create);
	if (opts->output_topic && (!(q->hasAggs || q->groupClause) || opts->parallelism > 1 || opts->sliding))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.output_topic applies to views with aggregates, without ssp.parallelism or ssp.sliding"),
				 errdetail("Their changes are those of one row per group; with several workers or a sliding window a group's row is merged when read.")));
	/* the changes go to the first stream's server: not into what it reads */
	for (i = 0; opts->output_topic && i < b->nstreams; i++)
	{
		/* a join's are in streams; stream is the first (or only) one */
		SspStream  *s = i == 0 ? b->stream : b->streams[i];

		if (s->serverid == b->stream->serverid && strcmp(s->topic, opts->output_topic) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("ssp.output_topic \"%s\" is the topic of stream \"%s\", which the view reads",
							opts->output_topic, s->relname),
					 errdetail("The view would count its own changes, again and again.")));
	}
	if (b->window < 0 && (opts->retention || opts->emit_final ||
						  (!b->stream_join && (opts->grace || opts->idle_timeout))))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("options ssp.grace, ssp.retention, ssp.idle_timeout and ssp.emit need a window"),
				 errhint("Group by a window over the event time, as in GROUP BY ssp.tumble(ts, '1 minute').")));
	b->columns = needed_columns(b, b->stream_oids[0]);
}

/*
 * options_text: a view's options as text[] elements "name=value", and
 * the setting of ssp.aggregate_fast_path it was created with: its SQL is
 * built again from them.
 */
static List *
options_text(List *options, SspViewOptions *opts)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "continuous") == 0 ||
			strcmp(def->defname, "aggregate_fast_path") == 0)
			continue;
		/* as ssp.shard_views reads it */
		if (strcmp(def->defname, "shard") == 0)
		{
			result = lappend(result, psprintf("shard=%d/%d", opts->shard_index, opts->shard_count));
			continue;
		}
		result = lappend(result, psprintf("%s=%s", def->defname, defGetString(def)));
	}
	return lappend(result, psprintf("aggregate_fast_path=%s", opts->fast_path ? "on" : "off"));
}

/*
 * check_idle_timeout: ssp.idle_timeout, in milliseconds (as the worker
 * reads it), fits an int, which the worker's timing takes (a longer one
 * was taken as 24 days 20:31:23.647, silently).  At CREATE VIEW only: a
 * view made before goes on as it did.
 */
static void
check_idle_timeout(SspViewOptions *opts)
{
	if (opts->idle_timeout &&
		DatumGetFloat8(DirectFunctionCall2(interval_part, CStringGetTextDatum("epoch"),
										   IntervalPGetDatum(parse_interval(opts->idle_timeout)))) * 1000 > INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 /* INT_MAX milliseconds */
				 errmsg("ssp.idle_timeout must be at most 24 days 20:31:23.647, not \"%s\"",
						opts->idle_timeout)));
}

/*
 * ssp_create_continuous_view: carry out CREATE VIEW ... WITH
 * (ssp.continuous) in place of Postgres.  Needs a transaction; creates
 * objects as the current user.
 */
void
ssp_create_continuous_view(ViewStmt *stmt, const char *queryString)
{
	SspViewOptions opts = ssp_parse_view_options(stmt->options);
	RawStmt    *raw = makeNode(RawStmt);
	Oid			nspid;
	char	   *nspname;
	char	   *mrel;
	char	   *mrelname;
	char	   *queryname;
	char	   *view;
	List	   *names;
	Build		b;
	StringInfoData create,
				viewsql,
				apply,
				querysql;
	Oid			viewoid;
	ListCell   *lc;

	if (stmt->view->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous views cannot be temporary or unlogged")));
	if (stmt->withCheckOption != NO_CHECK_OPTION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("WITH CHECK OPTION is not supported for continuous views")));

	check_idle_timeout(&opts);
	raw->stmt = copyObject(stmt->query);
	raw->stmt_location = -1;
	memset(&b, 0, sizeof(b));
	b.query = parse_analyze_fixedparams(raw, queryString, NULL, 0, NULL);
	/* window origins as this session reads them, whatever the worker's TimeZone */
	ssp_resolve_origins(b.query);
	b.opts = &opts;
	names = ssp_target_names(b.query, stmt->aliases);
	/* a change published adds these fields to the row's: they would replace a column's */
	foreach(lc, names)
		if (opts.output_topic &&
			(strcmp(lfirst(lc), "_op") == 0 || strcmp(lfirst(lc), "_before") == 0 ||
			 strcmp(lfirst(lc), "_seq") == 0))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("a view with ssp.output_topic cannot have a column named \"%s\"",
							(char *) lfirst(lc)),
					 errdetail("Each change published adds the fields _op, _before and _seq to the row's."),
					 errhint("Give the column another name with AS.")));
	/* output columns named as the query NAME_query keeps them */
	{
		ListCell   *nlc = list_head(names);

		foreach(lc, b.query->targetList)
		{
			TargetEntry *tle = lfirst(lc);

			if (tle->resjunk)
				continue;
			tle->resname = lfirst(nlc);
			nlc = lnext(names, nlc);
		}
	}

	nspid = RangeVarGetCreationNamespace(stmt->view);
	nspname = get_namespace_name(nspid);
	view = quote_qualified_identifier(nspname, stmt->view->relname);
	/* as CREATE VIEW says it, before anything is made */
	if (OidIsValid(get_relname_relid(stmt->view->relname, nspid)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", stmt->view->relname)));
	/*
	 * The view's own objects are named NAME_mrel, NAME_outbox... as
	 * Postgres names an index: NAME clipped (at a character boundary) so
	 * that the whole fits in NAMEDATALEN, and a number added if the name
	 * is taken.  They are recorded by oid, never looked up by name again.
	 */
	mrelname = ChooseRelationName(stmt->view->relname, NULL, "mrel", nspid, false);
	mrel = quote_qualified_identifier(nspname, mrelname);
	if (opts.output_topic)
	{
		b.outbox = quote_qualified_identifier(nspname,
											  ChooseRelationName(stmt->view->relname, NULL, "outbox",
																 nspid, false));
		b.changes_fn = quote_qualified_identifier(nspname,
												  ssp_choose_function_name(stmt->view->relname,
																		   "changes", nspid));
	}
	b.nspid = nspid;
	b.relname = stmt->view->relname;
	if (opts.shard_servers)
		ssp_shard_prepare(&b, nspid, stmt->view->relname);
	initStringInfo(&create);
	initStringInfo(&viewsql);
	initStringInfo(&apply);
	ssp_build_view(&b, names, view, mrel, &create, &viewsql, &apply);

	elog(DEBUG1, "ssp: continuous view %s: %s; %s; %s", view, create.data, viewsql.data, apply.data);

	/* an output topic no other view publishes to (a replacement has none) */
	if (opts.output_topic)
		ssp_output_check_topic(b.stream->serverid, opts.output_topic);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	ssp_spi_exec(create.data);
	if (opts.shard_servers)
		ssp_shard_create(&b, mrelname, nspid);
	ssp_spi_exec(viewsql.data);

	/*
	 * The query itself is kept as Postgres keeps a view's, by oid, in the
	 * plain view NAME_query: it depends on what the query reads (dropping
	 * or retyping a column it reads is refused), follows every rename, is
	 * dumped with the names of the day, and is what the SQL is built from
	 * again when a worker loads the view.
	 */
	queryname = ChooseRelationName(stmt->view->relname, NULL, "query", nspid, false);
	initStringInfo(&querysql);
	appendStringInfo(&querysql, "CREATE VIEW %s (", quote_qualified_identifier(nspname, queryname));
	foreach(lc, names)
		appendStringInfo(&querysql, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(lfirst(lc)));
	appendStringInfo(&querysql, ") AS %s", b.definition);
	{
		int			save_nestlevel = NewGUCNestLevel();

		(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		ssp_spi_exec(querysql.data);
		AtEOXact_GUC(true, save_nestlevel);
	}
	CommandCounterIncrement();

	viewoid = RangeVarGetRelid(stmt->view, NoLock, false);
	record_view(viewoid, get_relname_relid(mrelname, nspid), get_relname_relid(queryname, nspid),
				nspid, names, options_text(stmt->options, &opts), apply.data, &b);
	if (opts.shard_servers)
		ssp_shard_record(&b, viewoid);
	SPI_finish();

	/* a view over shards reads no stream itself: its shards do */
	if (!opts.shard_servers)
		ssp_store_start_offsets(viewoid, b.nstreams, b.stream_oids, b.topics, opts.start);
	/* its changes numbered above those its output topic holds */
	if (opts.output_topic)
		ssp_output_start(RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(b.outbox)),
										  NoLock, false),
						 b.stream->serverid, opts.output_topic);
	/* a view of one group has its row from the start */
	if (!opts.shard_servers)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "ssp: SPI_connect failed");
		ssp_view_seed(get_relname_relid(mrelname, nspid), b.nstreams, b.stream_oids[0], apply.data);
		SPI_finish();
	}
}
