/*-------------------------------------------------------------------------
 *
 * rollup.c
 *	  Rollups: a continuous view's stored aggregate states combined over
 *	  coarser groups when read.
 *
 *	  CREATE VIEW hourly WITH (ssp.rollup) AS
 *	    SELECT date_trunc('hour', minute) AS hour, region,
 *	           ssp.combine(avg_amount) AS avg_amount
 *	    FROM per_minute GROUP BY 1, 2;
 *
 * becomes a plain view over the continuous view's materialisation table:
 * the rows the view shows (with their states, rollup_from), grouped by the
 * new keys with each state merged as for parallel workers (rollup_states),
 * and each ssp.combine(column) finished from the merged states as the
 * view finishes that column (rollup_columns).  So an average is the sum of
 * the sums over the sum of the counts, not an average of averages, and an
 * hll or tdigest the union of the sketches.  These three are recorded in
 * ssp.continuous_views when the continuous view is made (viewsql.c).
 *
 * The query is rewritten through Params, as ssp_final_sql does: each
 * ssp.combine(column) becomes $k, each grouped expression $(100000 + j),
 * each other column of the view $(200000 + k); the deparsed text then
 * gets each one's SQL.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "compile/build.h"
#include "compile/view.h"

#define COMBINE_PARAM 0			/* $k: ssp.combine(column k) */
#define KEY_PARAM 100000		/* $(100000 + j): the j-th grouped expression */
#define COLUMN_PARAM 200000		/* $(200000 + k): column k of the view, per row */

/* The continuous view a rollup reads, and its query being rewritten. */
typedef struct Rollup
{
	Query	   *query;
	Oid			source;			/* the continuous view */
	char	   *source_name;
	char	   *from;			/* rollup_from */
	char	   *states;			/* rollup_states */
	char	  **columns;		/* rollup_columns, by attnum - 1 */
	int		   *combinable;	/* as Build's rollup_combinable */
	int			ncolumns;
	List	   *keys;			/* Node: the grouped expressions */
	bool		in_keys;		/* rewriting the keys themselves */
} Rollup;

static void
refuse(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a rollup cannot contain %s", what),
			 errhint("A rollup is SELECT, over one continuous view, of grouped expressions of its columns and "
					 "ssp.combine(column) of its aggregate columns, with WHERE, GROUP BY and HAVING.")));
}

static bool
is_combine(Oid fnoid)
{
	char	   *nsp = get_namespace_name(get_func_namespace(fnoid));

	return nsp && strcmp(nsp, "ssp") == 0 && strcmp(get_func_name(fnoid), "combine") == 0;
}

/* load_source: what the continuous view of the rollup's FROM is built of */
static void
load_source(Rollup *r)
{
	Query	   *q = r->query;
	RangeTblEntry *rte;
	SspView    *v;
	Build	   *b;
	int			i;

	if (list_length(q->jointree->fromlist) != 1 ||
		!IsA(linitial(q->jointree->fromlist), RangeTblRef))
		refuse("anything but one continuous view in FROM");
	rte = rt_fetch(((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex, q->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_VIEW)
		refuse("anything but one continuous view in FROM");
	r->source = rte->relid;
	r->source_name = get_rel_name(rte->relid);

	/* what the view's SQL is built from, as it is named now */
	v = ssp_view_load(r->source, true);
	if (v == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", r->source_name),
				 errdetail("A rollup combines the aggregate states that a continuous view keeps.")));
	b = ssp_view_build(v);
	if (b->rollup_from == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" has no aggregates to combine", r->source_name),
				 errhint("Group its rows with a plain query instead.")));
	{
		ListCell   *lc;

		foreach(lc, b->plans)
			if (((AggPlan *) lfirst(lc))->ordered)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("continuous view \"%s\" keeps array_agg, string_agg, json_agg or jsonb_agg, which a rollup cannot combine",
								r->source_name),
						 errdetail("Their values are in arrival order; a rollup would merge groups in no order.")));
	}
	r->from = b->rollup_from;
	r->states = b->rollup_states;
	r->ncolumns = list_length(b->rollup_columns);
	r->columns = palloc(sizeof(char *) * r->ncolumns);
	r->combinable = palloc(sizeof(int) * r->ncolumns);
	for (i = 0; i < r->ncolumns; i++)
	{
		r->columns[i] = list_nth(b->rollup_columns, i);
		r->combinable[i] = list_nth_int(b->rollup_combinable, i);
	}
}

static Param *
make_param(int id, Node *like)
{
	Param	   *p = makeNode(Param);

	p->paramkind = PARAM_EXTERN;
	p->paramid = id;
	p->paramtype = exprType(like);
	p->paramtypmod = exprTypmod(like);
	p->paramcollid = exprCollation(like);
	p->location = -1;
	return p;
}

/* column_name: the name of column attno of the continuous view */
static char *
column_name(Rollup *r, AttrNumber attno)
{
	return get_attname(r->source, attno, false);
}

/* to_params: the expression with the view's columns and aggregates as Params */
static Node *
to_params(Node *node, Rollup *r)
{
	ListCell   *lc;
	int			j = 0;

	if (node == NULL)
		return NULL;
	if (!r->in_keys)
		foreach(lc, r->keys)
		{
			j++;
			if (equal(lfirst(lc), node))
				return (Node *) make_param(KEY_PARAM + j, node);
		}
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		Node	   *arg;
		Var		   *var;

		if (!is_combine(agg->aggfnoid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a rollup combines aggregates with ssp.combine(), not %s()",
							get_func_name(agg->aggfnoid)),
					 errdetail("An aggregate over the view's finished values need not give the result at the "
							   "coarser grain: an average of averages is not the average.")));
		if (agg->aggdistinct || agg->aggorder || agg->aggfilter)
			refuse("DISTINCT, ORDER BY or FILTER in ssp.combine()");
		arg = (Node *) ((TargetEntry *) linitial(agg->args))->expr;
		if (!IsA(arg, Var) || ((Var *) arg)->varlevelsup != 0 || ((Var *) arg)->varattno <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ssp.combine() takes a column of the continuous view"),
					 errhint("Write ssp.combine(column); apply functions to its result.")));
		var = (Var *) arg;
		if (var->varattno <= r->ncolumns && r->combinable[var->varattno - 1] == ROLLUP_DISTINCT)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of continuous view \"%s\" reads an aggregate over DISTINCT values, which a rollup cannot combine",
							column_name(r, var->varattno), r->source_name),
					 errdetail("The distinct values of two groups may overlap."),
					 errhint("Create a continuous view over the stream grouped at the coarser grain.")));
		if (var->varattno > r->ncolumns || !r->combinable[var->varattno - 1])
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of continuous view \"%s\" is not made of aggregates only",
							column_name(r, var->varattno), r->source_name),
					 errdetail("ssp.combine() merges the states of the aggregates a column is made of."),
					 errhint("Group by a column that is a group key of the view.")));
		return (Node *) make_param(COMBINE_PARAM + var->varattno, node);
	}
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varlevelsup != 0 || var->varattno <= 0 || var->varattno > r->ncolumns)
			refuse("system columns or outer references");
		return (Node *) make_param(COLUMN_PARAM + var->varattno, node);
	}
	return expression_tree_mutator(node, to_params, r);
}

/* rollup_param: what $N of to_params stands for */
static char *
rollup_param(long id, void *arg)
{
	Rollup	   *r = arg;

	if (id > COLUMN_PARAM)
		return psprintf("(%s)", r->columns[id - COLUMN_PARAM - 1]);
	if (id > KEY_PARAM)
		return psprintf("m._k%ld", id - KEY_PARAM);
	return psprintf("(%s)", r->columns[id - COMBINE_PARAM - 1]);
}

/* rollup_sql: expr as SQL over the view's table or the merged states */
static char *
rollup_sql(Rollup *r, Node *expr)
{
	return ssp_put_params(deparse_expression(to_params(copyObject(expr), r), NIL, false, false),
						  rollup_param, r);
}

/* check_query: what a rollup's query may hold */
static void
check_query(Query *q)
{
	if (q->commandType != CMD_SELECT || q->utilityStmt)
		refuse("anything but a SELECT");
	if (q->setOperations)
		refuse("UNION, INTERSECT or EXCEPT");
	if (q->cteList)
		refuse("WITH");
	if (q->hasWindowFuncs)
		refuse("window functions");
	if (q->hasSubLinks)
		refuse("subqueries");
	if (q->hasTargetSRFs)
		refuse("set-returning functions");
	if (q->distinctClause)
		refuse("DISTINCT");
	if (q->sortClause || q->limitCount || q->limitOffset)
		refuse("ORDER BY, LIMIT or OFFSET");
	if (q->groupingSets)
		refuse("GROUPING SETS, ROLLUP or CUBE");
	if (q->rowMarks)
		refuse("FOR UPDATE or FOR SHARE");
}

/*
 * ssp_create_rollup: CREATE VIEW name WITH (ssp.rollup) AS SELECT ...
 * FROM a continuous view: a plain view of the SQL described above.
 */
void
ssp_create_rollup(ViewStmt *stmt, const char *queryString)
{
	RawStmt    *raw = makeNode(RawStmt);
	Rollup		r;
	Query	   *q;
	List	   *names;
	ListCell   *lc;
	StringInfoData inner;
	StringInfoData outer;
	Oid			nspid;
	int			save_nestlevel;
	int			rc;
	int			i;
	AclResult	aclresult;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);

		if (!def->defnamespace || strcmp(def->defnamespace, "ssp") != 0 ||
			strcmp(def->defname, "rollup") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("option \"%s%s%s\" cannot be used with ssp.rollup",
							def->defnamespace ? def->defnamespace : "",
							def->defnamespace ? "." : "", def->defname)));
	}
	if (stmt->view->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rollups cannot be temporary")));
	if (stmt->withCheckOption != NO_CHECK_OPTION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("WITH CHECK OPTION is not supported for rollups")));

	raw->stmt = copyObject(stmt->query);
	raw->stmt_location = -1;
	q = parse_analyze_fixedparams(raw, queryString, NULL, 0, NULL);
	check_query(q);
	if (!q->hasAggs)
		refuse("no ssp.combine()");
	names = ssp_target_names(q, stmt->aliases);

	memset(&r, 0, sizeof(r));
	r.query = q;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	load_source(&r);

	/*
	 * What the rollup embeds was recorded with the view, in a catalog row its
	 * owner can change: only the owner's roles may build on it (superusers
	 * included only as members, so none runs SQL another role wrote).
	 */
	if (!is_member_of_role_nosuper(GetUserId(), ssp_rel_owner(r.source)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only the owner of continuous view \"%s\" may make rollups of it", r.source_name),
				 errdetail("A rollup is made from what ssp recorded about the view, which its owner can change."),
				 errhint("Ask its owner to create the rollup and grant you SELECT on it.")));
	aclresult = pg_class_aclcheck(r.source, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_VIEW, r.source_name);
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);

		r.keys = lappend(r.keys, get_sortgroupclause_tle(sgc, q->targetList)->expr);
	}

	nspid = RangeVarGetCreationNamespace(stmt->view);
	/* every name qualified, as in a continuous view */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

	/* the view's rows grouped by the new keys, their states merged */
	initStringInfo(&inner);
	appendStringInfoString(&inner, "SELECT ");
	r.in_keys = true;
	i = 0;
	foreach(lc, r.keys)
	{
		i++;
		appendStringInfo(&inner, "%s%s AS _k%d", i > 1 ? ", " : "", rollup_sql(&r, lfirst(lc)), i);
	}
	if (r.keys == NIL)
		appendStringInfoString(&inner, "true AS _k0");
	appendStringInfo(&inner, "%s FROM %s", r.states, r.from);
	if (q->jointree->quals)
		appendStringInfo(&inner, " WHERE %s", rollup_sql(&r, q->jointree->quals));
	for (i = 1; i <= list_length(r.keys); i++)
		appendStringInfo(&inner, "%s%d", i > 1 ? ", " : " GROUP BY ", i);
	r.in_keys = false;

	/* each output column from the merged states and the keys */
	initStringInfo(&outer);
	appendStringInfo(&outer, "CREATE %sVIEW %s AS SELECT ", stmt->replace ? "OR REPLACE " : "",
					 quote_qualified_identifier(get_namespace_name(nspid),
												stmt->view->relname));
	i = 0;
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		appendStringInfo(&outer, "%s%s AS %s", i ? ", " : "", rollup_sql(&r, (Node *) tle->expr),
						 quote_identifier(list_nth(names, i)));
		i++;
	}
	appendStringInfo(&outer, " FROM (%s) m", inner.data);
	if (q->havingQual)
		appendStringInfo(&outer, " WHERE %s", rollup_sql(&r, q->havingQual));
	AtEOXact_GUC(true, save_nestlevel);

	elog(DEBUG1, "ssp: rollup: %s", outer.data);
	/* built with every name qualified against this path */
	save_nestlevel = ssp_pin_search_path();
	rc = SPI_execute(outer.data, false, 0);
	AtEOXact_GUC(true, save_nestlevel);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "ssp: could not create the rollup: %s", outer.data);
	SPI_finish();
}
