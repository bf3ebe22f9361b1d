/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The ssp_kafka foreign-data wrapper's handler and planning: paths,
 *	  plans, EXPLAIN, and which predicates are pushed down to Kafka.
 *
 * A scan of a stream reads each partition from its oldest retained offset
 * to its high watermark at scan start.  Predicates on the partition, offset
 * and timestamp metadata columns narrow that range before anything is
 * read; they stay in the plan's quals as well, so the pushdown only ever
 * saves work and never changes a result.  The executor side is in scan.c,
 * inserts are in modify.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/sysattr.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "ssp.h"
#include "stream/stream.h"
#include "fdw/fdw.h"

PG_FUNCTION_INFO_V1(ssp_kafka_fdw_handler);

/* rows a stream is assumed to hold, for costing */
#define SSP_DEFAULT_ROWS 100000

static void
get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	baserel->rows = SSP_DEFAULT_ROWS;
	/* pushed-down predicates still count as selective */
	baserel->rows = clamp_row_est(baserel->rows *
								  clauselist_selectivity(root, baserel->baserestrictinfo,
														 0, JOIN_INNER, NULL));
}

static void
get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Cost		startup = 10;
	Cost		total = startup + SSP_DEFAULT_ROWS * cpu_tuple_cost * 2;

	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup, total, NIL, NULL, NULL, NIL));
}

/* strip_relabel: look through binary-compatible casts. */
static Node *
strip_relabel(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

/* meta_column: the metadata source of a Var of this rel, or SSP_SRC_VALUE. */
static SspSource
meta_column(SspStream *stream, RelOptInfo *baserel, Node *node)
{
	Var		   *var;
	int			i;

	node = strip_relabel(node);
	if (!node || !IsA(node, Var))
		return SSP_SRC_VALUE;
	var = (Var *) node;
	if (var->varno != baserel->relid || var->varlevelsup != 0 || var->varattno <= 0)
		return SSP_SRC_VALUE;
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		if (col->attnum != var->varattno)
			continue;
		if (col->source == SSP_SRC_PARTITION || col->source == SSP_SRC_OFFSET ||
			(col->source == SSP_SRC_TIMESTAMP && col->typid == TIMESTAMPTZOID))
			return col->source;
	}
	return SSP_SRC_VALUE;
}

static bool
pushable_value(Node *node, SspSource source)
{
	Oid			type = exprType(node);

	if (contain_var_clause(node) || contain_volatile_functions(node))
		return false;
	if (source == SSP_SRC_TIMESTAMP)
		return type == TIMESTAMPTZOID;
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* btree_strategy: the strategy of opno on the column type, or 0. */
static int
btree_strategy(Oid opno, Oid coltype)
{
	Oid			opclass = GetDefaultOpClass(coltype, BTREE_AM_OID);

	if (!OidIsValid(opclass))
		return 0;
	return get_op_opfamily_strategy(opno, get_opclass_family(opclass));
}

static char *
describe(SspStream *stream, Node *var, const char *op, Node *value)
{
	const char *colname = get_attname(stream->relid, ((Var *) strip_relabel(var))->varattno, false);
	char	   *valtext;

	value = strip_relabel(value);
	if (IsA(value, Const) && !((Const *) value)->constisnull)
	{
		Oid			out;
		bool		isvarlena;

		getTypeOutputInfo(((Const *) value)->consttype, &out, &isvarlena);
		valtext = quote_literal_cstr(OidOutputFunctionCall(out, ((Const *) value)->constvalue));
	}
	else
		valtext = "(expression)";
	return psprintf("%s %s %s", quote_identifier(colname), op, valtext);
}

/*
 * classify: if clause narrows the range to read, append what it pushes
 * down to the lists (the value to compare with, its source, strategy and
 * a description for EXPLAIN).
 */
static void
classify(SspStream *stream, RelOptInfo *baserel, Expr *clause, SspPushdown *pd)
{
	static const char *const opnames[] = {"", "<", "<=", "=", ">=", ">"};

	if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) clause;
		Node	   *left = linitial(op->args);
		Node	   *right = lsecond(op->args);
		SspSource	source;
		int			strategy;
		bool		commuted = false;

		source = meta_column(stream, baserel, left);
		if (source == SSP_SRC_VALUE)
		{
			source = meta_column(stream, baserel, right);
			commuted = true;
			left = right;
			right = linitial(op->args);
		}
		if (source == SSP_SRC_VALUE || !pushable_value(right, source))
			return;
		strategy = btree_strategy(op->opno, exprType(strip_relabel(left)));
		if (strategy == 0 && commuted)
			return;
		if (strategy == 0)
			return;
		if (commuted)
			strategy = BTMaxStrategyNumber + 1 - strategy;	/* a < b is b > a */
		pd->values = lappend(pd->values, right);
		pd->sources = lappend_int(pd->sources, source);
		pd->strategies = lappend_int(pd->strategies, strategy);
		pd->descriptions = lappend(pd->descriptions,
								   makeString(describe(stream, left, opnames[strategy], right)));
	}
	else if (IsA(clause, ScalarArrayOpExpr))
	{
		ScalarArrayOpExpr *op = (ScalarArrayOpExpr *) clause;
		Node	   *left = linitial(op->args);
		Node	   *right = lsecond(op->args);

		if (!op->useOr || meta_column(stream, baserel, left) != SSP_SRC_PARTITION ||
			contain_var_clause(right) || contain_volatile_functions(right) ||
			btree_strategy(op->opno, exprType(strip_relabel(left))) != BTEqualStrategyNumber)
			return;
		if (exprType(right) != INT2ARRAYOID && exprType(right) != INT4ARRAYOID &&
			exprType(right) != INT8ARRAYOID)
			return;
		pd->values = lappend(pd->values, right);
		pd->sources = lappend_int(pd->sources, SSP_SRC_PARTITION);
		pd->strategies = lappend_int(pd->strategies, SSP_STRATEGY_IN);
		pd->descriptions = lappend(pd->descriptions,
								   makeString(describe(stream, left, "= ANY", right)));
	}
}

/*
 * used_columns: the attnums of the stream's columns that the query reads
 * of this scan, as postgres_fdw works out what to fetch: those of the
 * rel's targetlist (what the plan above the scan uses) and of the clauses
 * the scan checks itself; a whole-row reference reads them all.  The scan
 * decodes only these (scan.c), so a column the query does not name is
 * never converted: its value can neither fail the scan nor show in an
 * error to a role granted SELECT on other columns only, and costs no time.
 */
static List *
used_columns(SspStream *stream, RelOptInfo *baserel, List *scan_clauses)
{
	Bitmapset  *attrs = NULL;
	bool		whole_row;
	List	   *attnums = NIL;
	ListCell   *lc;
	int			i;

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(lc, scan_clauses)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   baserel->relid, &attrs);
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
	for (i = 0; i < stream->ncolumns; i++)
	{
		AttrNumber	attnum = stream->columns[i].attnum;

		if (whole_row ||
			bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, attrs))
			attnums = lappend_int(attnums, attnum);
	}
	return attnums;
}

/*
 * get_plan: the scan's plan.  fdw_private is a list of: the pushed-down
 * values' sources, their strategies, their descriptions for EXPLAIN (the
 * values themselves are fdw_exprs), and the attnums of the columns to
 * decode.
 */
static ForeignScan *
get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
		 ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	SspStream  *stream = ssp_stream_open(foreigntableid);
	SspPushdown pd;
	List	   *attnums = used_columns(stream, baserel, scan_clauses);
	ListCell   *lc;

	memset(&pd, 0, sizeof(pd));
	foreach(lc, scan_clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (!ri->pseudoconstant)
			classify(stream, baserel, ri->clause, &pd);
	}

	/* every clause is also checked locally */
	scan_clauses = extract_actual_clauses(scan_clauses, false);

	return make_foreignscan(tlist, scan_clauses, baserel->relid,
							pd.values,
							list_make4(pd.sources, pd.strategies, pd.descriptions,
									   attnums),
							NIL, NIL, outer_plan);
}

static void
explain_scan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	List	   *descriptions = lthird(plan->fdw_private);
	SspScanState *state = node->fdw_state;

	ExplainPropertyText("Kafka Topic", state->stream->topic, es);
	if (descriptions != NIL)
	{
		StringInfoData buf;
		ListCell   *lc;

		initStringInfo(&buf);
		foreach(lc, descriptions)
		{
			if (buf.len > 0)
				appendStringInfoString(&buf, " AND ");
			appendStringInfoString(&buf, strVal(lfirst(lc)));
		}
		ExplainPropertyText("Kafka Pushdown", buf.data, es);
	}
	if (es->analyze)
		ExplainPropertyInteger("Kafka Messages Read", NULL, state->nread, es);
}

static int
is_updatable(Relation rel)
{
	return 1 << CMD_INSERT;
}

/*
 * ssp_kafka_fdw_handler: the routines of the ssp_kafka wrapper.
 */
Datum
ssp_kafka_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = get_rel_size;
	routine->GetForeignPaths = get_paths;
	routine->GetForeignPlan = get_plan;
	routine->BeginForeignScan = ssp_scan_begin;
	routine->IterateForeignScan = ssp_scan_next;
	routine->ReScanForeignScan = ssp_scan_rescan;
	routine->EndForeignScan = ssp_scan_end;
	routine->ExplainForeignScan = explain_scan;

	routine->IsForeignRelUpdatable = is_updatable;
	routine->PlanForeignModify = ssp_modify_plan;
	routine->BeginForeignModify = ssp_modify_begin;
	routine->ExecForeignInsert = ssp_modify_insert;
	routine->EndForeignModify = ssp_modify_end;
	routine->BeginForeignInsert = ssp_insert_begin;
	routine->EndForeignInsert = ssp_insert_end;

	PG_RETURN_POINTER(routine);
}
