/*-------------------------------------------------------------------------
 *
 * rows.c
 *	  A batch's decoded messages in memory, and the scan that reads them.
 *
 * A batch is decoded once into rows of Datums (SspRows), and every view of
 * the reader reads it with its own apply statement.  The statement names
 * the batch as an ephemeral relation (ssp_batch); the relation stays, so
 * that the statement parses as before, but while a batch is published the
 * planner reads it through "SspBatchScan", a custom scan that hands the
 * rows to the executor as they are, instead of through a tuplestore that
 * each row would be written to and deformed from again.
 *
 * The one thing the scan does not produce is a whole row of the relation
 * (a Var of attribute 0, as in to_jsonb(b)).  A statement that needs one
 * reads the relation's tuplestore after all: its rows are written to it
 * then, once a batch.  Either way counts as a scan of the rows, and the
 * caller checks that its statement planned one (a batch that no scan
 * read would otherwise be lost without a word).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/typcache.h"

#include "runtime/rows.h"

/* values by reference are copied into blocks of this size (or their own) */
#define ROWS_BLOCK (256 * 1024)

/*
 * The groups of a batch of at least GROUPS_ESTIMATE_FROM rows are
 * estimated from about GROUPS_SAMPLE of its rows (see estimate_groups).
 */
#define GROUPS_ESTIMATE_FROM 10000
#define GROUPS_SAMPLE 2000

/* the rows the statement being run may read, by relation name */
static SspRows **published = NULL;
static int	npublished = 0;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static Plan *plan_batch_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							 List *tlist, List *clauses, List *custom_plans);
static Node *create_batch_scan_state(CustomScan *cscan);
static void begin_batch_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_batch_scan(CustomScanState *node);
static void end_batch_scan(CustomScanState *node);
static void rescan_batch_scan(CustomScanState *node);

static const CustomPathMethods batch_path_methods = {
	.CustomName = "SspBatchScan",
	.PlanCustomPath = plan_batch_scan,
};

static const CustomScanMethods batch_scan_methods = {
	.CustomName = "SspBatchScan",
	.CreateCustomScanState = create_batch_scan_state,
};

static const CustomExecMethods batch_exec_methods = {
	.CustomName = "SspBatchScan",
	.BeginCustomScan = begin_batch_scan,
	.ExecCustomScan = exec_batch_scan,
	.EndCustomScan = end_batch_scan,
	.ReScanCustomScan = rescan_batch_scan,
};

typedef struct BatchScanState
{
	CustomScanState css;
	SspRows    *rows;
	int			next;			/* the row to return next */
	int			n;				/* rows to return: rows->n, or 0 */
	int			ncols;			/* the scan tuple's columns */
	int		   *cols;			/* for each, its column of the batch (0-based) */
} BatchScanState;

/*
 * ssp_rows_create: no rows yet, of the columns desc, read as the relation
 * name; in a context of its own under parent.
 */
SspRows *
ssp_rows_create(const char *name, TupleDesc desc, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "ssp batch rows", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	SspRows    *rows = palloc0(sizeof(SspRows));

	rows->name = name;
	rows->desc = desc;
	rows->natts = desc->natts;
	rows->hasnull = palloc0(sizeof(bool) * Max(desc->natts, 1));
	rows->cxt = cxt;
	/* kept across the transactions of a reader's views, as the rows are */
	rows->ts = tuplestore_begin_heap(false, true, work_mem);
	MemoryContextSwitchTo(old);
	return rows;
}

/* copy_value: a value by reference, into the rows' blocks */
static Datum
copy_value(SspRows *rows, Datum value, Form_pg_attribute att)
{
	Size		size;
	char	   *to;

	if (att->attlen == -1 && VARATT_IS_EXTENDED(DatumGetPointer(value)) &&
		!VARATT_IS_SHORT(DatumGetPointer(value)))
	{
		/* toasted or expanded: flattened, in a chunk of its own */
		MemoryContext old = MemoryContextSwitchTo(rows->cxt);

		value = PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
		MemoryContextSwitchTo(old);
		return value;
	}
	size = datumGetSize(value, false, att->attlen);
	if (size > ROWS_BLOCK / 4)
		to = MemoryContextAlloc(rows->cxt, size);
	else
	{
		if (MAXALIGN(size) > rows->left)
		{
			rows->block = MemoryContextAlloc(rows->cxt, ROWS_BLOCK);
			rows->left = ROWS_BLOCK;
		}
		to = rows->block;
		rows->block += MAXALIGN(size);
		rows->left -= MAXALIGN(size);
	}
	memcpy(to, DatumGetPointer(value), size);
	return PointerGetDatum(to);
}

/*
 * ssp_rows_reserve: room for at least n rows in all, so that adding that
 * many moves none of them.
 */
void
ssp_rows_reserve(SspRows *rows, int n)
{
	if (n <= rows->cap)
		return;
	if (rows->values == NULL)
	{
		rows->values = MemoryContextAllocHuge(rows->cxt, sizeof(Datum) * rows->natts * (Size) n);
		rows->nulls = MemoryContextAllocHuge(rows->cxt, sizeof(bool) * rows->natts * (Size) n);
	}
	else
	{
		rows->values = repalloc_huge(rows->values, sizeof(Datum) * rows->natts * (Size) n);
		rows->nulls = repalloc_huge(rows->nulls, sizeof(bool) * rows->natts * (Size) n);
	}
	rows->cap = n;
}

/* ssp_rows_add: one more row; its values by reference are copied */
void
ssp_rows_add(SspRows *rows, const Datum *values, const bool *nulls)
{
	Datum	   *v;
	bool	   *isnull;
	int			i;

	if (rows->n == rows->cap)
		ssp_rows_reserve(rows, Max(1024, rows->cap * 2));
	v = rows->values + (Size) rows->n * rows->natts;
	isnull = rows->nulls + (Size) rows->n * rows->natts;
	for (i = 0; i < rows->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rows->desc, i);

		isnull[i] = nulls[i] || att->attisdropped;
		if (isnull[i])
		{
			v[i] = (Datum) 0;
			rows->hasnull[i] = true;
		}
		else if (att->attbyval)
			v[i] = values[i];
		else
			v[i] = copy_value(rows, values[i], att);
	}
	rows->n++;
}

/* ssp_rows_free: the rows and all they hold */
void
ssp_rows_free(SspRows *rows)
{
	if (rows == NULL)
		return;
	tuplestore_end(rows->ts);
	MemoryContextDelete(rows->cxt);
}

/*
 * ssp_rows_publish: the statements planned from now on read these rows
 * through SspBatchScan, each by its relation's name; until
 * ssp_rows_withdraw.
 */
void
ssp_rows_publish(SspRows **rows, int n)
{
	int			i;

	published = rows;
	npublished = n;
	for (i = 0; i < n; i++)
		rows[i]->scans = 0;
}

void
ssp_rows_withdraw(void)
{
	published = NULL;
	npublished = 0;
}

/* published_rows: the published rows read as relation name, or NULL */
static SspRows *
published_rows(const char *name)
{
	int			i;

	for (i = 0; i < npublished; i++)
		if (name && strcmp(published[i]->name, name) == 0)
			return published[i];
	return NULL;
}

/* store_rows: the rows written to their relation's tuplestore, once */
static void
store_rows(SspRows *rows)
{
	MemoryContext old;
	int			i;

	if (rows->stored)
		return;
	old = MemoryContextSwitchTo(rows->cxt);
	for (i = 0; i < rows->n; i++)
		tuplestore_putvalues(rows->ts, rows->desc,
							 rows->values + (Size) i * rows->natts,
							 rows->nulls + (Size) i * rows->natts);
	MemoryContextSwitchTo(old);
	rows->stored = true;
}

/* needs_whole_row: does the query read rel's rows as a whole (attribute 0)? */
static bool
needs_whole_row(RelOptInfo *rel)
{
	Bitmapset  *attrs = NULL;
	ListCell   *lc;

	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause, rel->relid, &attrs);
	return bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
}

/*
 * ssp_rows_fit: are the rows of the columns of desc (their number, types
 * and dropped columns)?
 */
bool
ssp_rows_fit(SspRows *rows, TupleDesc desc)
{
	int			i;

	if (rows->natts != desc->natts)
		return false;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(rows->desc, i);
		Form_pg_attribute b = TupleDescAttr(desc, i);

		if (a->attisdropped != b->attisdropped ||
			(!a->attisdropped && (a->atttypid != b->atttypid || a->atttypmod != b->atttypmod)))
			return false;
	}
	return true;
}

/*
 * same_columns: has the ephemeral relation of rte the columns of rows?  A
 * relation of another statement by the same name (a trigger's transition
 * table named so, planned while a batch is published) is not the batch.
 */
static bool
same_columns(RangeTblEntry *rte, SspRows *rows)
{
	ListCell   *lc;
	int			i = 0;

	if (list_length(rte->coltypes) != rows->natts)
		return false;
	foreach(lc, rte->coltypes)
	{
		Form_pg_attribute att = TupleDescAttr(rows->desc, i++);

		if (lfirst_oid(lc) != (att->attisdropped ? InvalidOid : att->atttypid))
			return false;
	}
	return true;
}

/*
 * set_batch_pathlist: a scan of a published batch relation becomes an
 * SspBatchScan, at the cost the planner gave the tuplestore's scan.
 */
static void
set_batch_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	SspRows    *rows;
	Path	   *scan;
	CustomPath *cpath;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (npublished == 0 || rte->rtekind != RTE_NAMEDTUPLESTORE || rel->pathlist == NIL ||
		(rows = published_rows(rte->enrname)) == NULL || !same_columns(rte, rows))
		return;
	rows->scans++;
	if (needs_whole_row(rel))
	{
		store_rows(rows);
		return;
	}
	scan = linitial(rel->pathlist);
	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = scan->param_info;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = scan->rows;
	cpath->path.startup_cost = scan->startup_cost;
	cpath->path.total_cost = scan->total_cost;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_private = list_make1(makeString(pstrdup(rte->enrname)));
	cpath->methods = &batch_path_methods;
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	add_path(rel, &cpath->path);
}

/*
 * no_null_there: is node an IS NULL test of a column of rel that no row
 * of the batch has a null in?  Then no row passes it.
 */
static bool
no_null_there(SspRows *rows, RelOptInfo *rel, Node *node)
{
	NullTest   *test = (NullTest *) node;
	Var		   *var;

	if (!IsA(test, NullTest) || test->nulltesttype != IS_NULL || test->argisrow ||
		!IsA(test->arg, Var))
		return false;
	var = (Var *) test->arg;
	return var->varno == rel->relid && var->varlevelsup == 0 &&
		var->varattno >= 1 && var->varattno <= rows->natts &&
		!rows->hasnull[var->varattno - 1];
}

/*
 * no_row_passes: does a qual ask for a null in a column where no row of
 * the batch has one, or in any of several such columns?  Then the scan
 * returns nothing without reading a row: an aggregating view's statement
 * for the groups of a null key (viewsql.c: one key, or an OR over its
 * keys) reads the batch for nothing when, as nearly always, it has none.
 */
static bool
no_row_passes(SspRows *rows, RelOptInfo *rel, List *quals)
{
	ListCell   *lc;

	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);
		ListCell   *arm;
		bool		none = true;

		if (no_null_there(rows, rel, qual))
			return true;
		if (!is_orclause(qual))
			continue;
		foreach(arm, ((BoolExpr *) qual)->args)
			none = none && no_null_there(rows, rel, lfirst(arm));
		if (none)
			return true;
	}
	return false;
}

/*
 * scan_columns: the columns of the batch relation (1-based) that the
 * targetlist and the quals read, those of the targetlist first and in its
 * order: as the scan tuple, a targetlist of plain columns then needs no
 * projection, a row's columns are copied straight into the slot.  NIL
 * with *all set if something reads more than plain columns of the
 * relation (then the scan tuple is every column).
 */
static List *
scan_columns(RelOptInfo *rel, List *tlist, List *quals, bool *all)
{
	List	   *vars = pull_var_clause((Node *) list_concat_copy(tlist, quals),
									   PVC_RECURSE_PLACEHOLDERS);
	List	   *cols = NIL;
	ListCell   *lc;

	*all = false;
	foreach(lc, vars)
	{
		Var		   *var = lfirst(lc);

		if (var->varno != rel->relid || var->varlevelsup != 0 || var->varattno <= 0)
		{
			*all = true;
			return NIL;
		}
		cols = list_append_unique_int(cols, var->varattno);
	}
	return cols;
}

/*
 * plan_batch_scan: a CustomScan with no relation of its own (scanrelid 0):
 * its scan tuple is the columns of the batch relation the targetlist and
 * quals read (scan_columns), or every column in order, which the
 * planner's setrefs makes the targetlist and quals refer to.
 */
static Plan *
plan_batch_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	SspRows    *rows = published_rows(strVal(linitial(best_path->custom_private)));
	List	   *quals = extract_actual_clauses(clauses, false);
	List	   *scan_tlist = NIL;
	List	   *cols;
	bool		all;
	ListCell   *lc;
	int			i;

	if (rows == NULL)
		elog(ERROR, "ssp: batch relation \"%s\" is not there to plan",
			 strVal(linitial(best_path->custom_private)));
	cols = scan_columns(rel, tlist, quals, &all);
	if (all)
		for (i = 0; i < rows->natts; i++)
			cols = lappend_int(cols, i + 1);
	foreach(lc, cols)
	{
		Form_pg_attribute att = TupleDescAttr(rows->desc, lfirst_int(lc) - 1);
		Expr	   *expr;

		if (att->attisdropped)
			expr = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
		else
			expr = (Expr *) makeVar(rel->relid, lfirst_int(lc), att->atttypid, att->atttypmod,
									att->attcollation, 0);
		scan_tlist = lappend(scan_tlist, makeTargetEntry(expr, list_length(scan_tlist) + 1, NULL, false));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = quals;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_make_singleton(rel->relid);
	cscan->custom_private = list_make3(linitial(best_path->custom_private),
									   makeBoolean(no_row_passes(rows, rel, quals)),
									   cols);
	cscan->methods = &batch_scan_methods;
	return &cscan->scan.plan;
}

static Node *
create_batch_scan_state(CustomScan *cscan)
{
	BatchScanState *state = palloc0(sizeof(BatchScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &batch_exec_methods;
	return (Node *) state;
}

static void
begin_batch_scan(CustomScanState *node, EState *estate, int eflags)
{
	BatchScanState *state = (BatchScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	const char *name = strVal(linitial(cscan->custom_private));
	EphemeralNamedRelation enr = estate->es_queryEnv ? get_ENR(estate->es_queryEnv, name) : NULL;
	List	   *cols = lthird(cscan->custom_private);
	ListCell   *lc;
	int			i = 0;

	state->rows = published_rows(name);
	if (state->rows == NULL || enr == NULL || enr->reldata != state->rows->ts)
		elog(ERROR, "ssp: batch relation \"%s\" is not there to read", name);
	state->ncols = list_length(cols);
	state->cols = palloc(sizeof(int) * Max(state->ncols, 1));
	if (node->ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts != state->ncols)
		elog(ERROR, "ssp: the scan of batch relation \"%s\" has %d columns, not %d", name,
			 node->ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts, state->ncols);
	foreach(lc, cols)
	{
		if (lfirst_int(lc) < 1 || lfirst_int(lc) > state->rows->natts)
			elog(ERROR, "ssp: batch relation \"%s\" has no column %d", name, lfirst_int(lc));
		state->cols[i++] = lfirst_int(lc) - 1;
	}
	state->next = 0;
	state->n = boolVal(lsecond(cscan->custom_private)) ? 0 : state->rows->n;
}

/* next_row: the scan's columns of the next row into the scan slot */
static TupleTableSlot *
next_row(ScanState *ss)
{
	BatchScanState *state = (BatchScanState *) ss;
	SspRows    *rows = state->rows;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	Datum	   *values;
	bool	   *nulls;
	int			i;

	CHECK_FOR_INTERRUPTS();
	ExecClearTuple(slot);
	if (state->next >= state->n)
		return slot;
	values = rows->values + (Size) state->next * rows->natts;
	nulls = rows->nulls + (Size) state->next * rows->natts;
	for (i = 0; i < state->ncols; i++)
	{
		slot->tts_values[i] = values[state->cols[i]];
		slot->tts_isnull[i] = nulls[state->cols[i]];
	}
	state->next++;
	return ExecStoreVirtualTuple(slot);
}

static bool
recheck_row(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/*
 * exec_batch_scan: with nothing to test or compute per row (the common
 * case: the statement's aggregate reads the columns as they are), the row
 * itself, without ExecScan's per-row reset of an expression context that
 * nothing uses; else, or under EvalPlanQual, through ExecScan.
 */
static TupleTableSlot *
exec_batch_scan(CustomScanState *node)
{
	if (node->ss.ps.qual == NULL && node->ss.ps.ps_ProjInfo == NULL &&
		node->ss.ps.state->es_epq_active == NULL)
		return next_row(&node->ss);
	return ExecScan(&node->ss, next_row, recheck_row);
}

static void
end_batch_scan(CustomScanState *node)
{
}

static void
rescan_batch_scan(CustomScanState *node)
{
	((BatchScanState *) node)->next = 0;
	ExecScanReScan(&node->ss);
}

/*
 * evaluable: can exprs be computed on a row of rel alone, at plan time?
 * Not with a subplan, a parameter (a custom plan has the statement's own
 * as constants already; a generic plan has no values for them), a
 * volatile function, or a column that is not one of rel's.
 */
static bool
evaluable_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		return var->varno != *(Index *) context || var->varlevelsup != 0 || var->varattno <= 0;
	}
	return expression_tree_walker(node, evaluable_walker, context);
}

static bool
evaluable(List *exprs, Index relid)
{
	return !contain_subplans((Node *) exprs) && !contain_volatile_functions((Node *) exprs) &&
		!evaluable_walker((Node *) exprs, &relid);
}

static int
compare_keys(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

static int
compare_ints(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return x < y ? -1 : x > y;
}

/*
 * sample_rows: the indexes, in order, of up to GROUPS_SAMPLE rows of n
 * (all of them, or drawn at random: not every k-th row, which rows in
 * the order of a key would make look all distinct, or all the same); as
 * many as it returns.  The draw is seeded by n, so that a batch plans
 * the same each time it is applied.
 */
static int
sample_rows(int n, int **picks)
{
	pg_prng_state prng;
	int			k = 0;
	int			i;

	*picks = palloc(sizeof(int) * Min(n, GROUPS_SAMPLE));
	if (n <= GROUPS_SAMPLE)
	{
		for (i = 0; i < n; i++)
			(*picks)[i] = i;
		return n;
	}
	pg_prng_seed(&prng, (uint64) n);
	for (i = 0; i < GROUPS_SAMPLE; i++)
		(*picks)[i] = (int) pg_prng_uint64_range(&prng, 0, n - 1);
	qsort(*picks, GROUPS_SAMPLE, sizeof(int), compare_ints);
	for (i = 0; i < GROUPS_SAMPLE; i++)
		if (k == 0 || (*picks)[i] != (*picks)[k - 1])
			(*picks)[k++] = (*picks)[i];
	return k;
}

/*
 * sample_groups: the groups of exprs in the rows of rel, estimated from a
 * sample of the rows that pass rel's quals, as ANALYZE estimates a
 * column's distinct values (Haas and Stokes' Duj1: n d / (n - f1 + f1 n
 * / N), of n rows sampled from N, with d distinct keys of which f1 seen
 * once); -1 when they cannot be computed here.
 */
static double
sample_groups(RelOptInfo *rel, SspRows *rows, List *exprs)
{
	List	   *quals = extract_actual_clauses(rel->baserestrictinfo, false);
	int			nexprs = list_length(exprs);
	MemoryContext cxt;
	MemoryContext old;
	ExprState **states;
	FmgrInfo  **hashes;
	Oid		   *colls;
	ExprState  *qual;
	ExprContext *econtext;
	TupleTableSlot *slot;
	uint64	   *keys;
	int		   *picks;
	int			sampled;
	int			n = 0;
	int			d = 0;
	int			f1 = 0;
	int			i;
	int			r;
	ListCell   *lc;
	double		passing;
	double		groups = -1;

	if (nexprs == 0 || !evaluable(exprs, rel->relid) || !evaluable(quals, rel->relid))
		return -1;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "ssp batch groups", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	states = palloc(sizeof(ExprState *) * nexprs);
	hashes = palloc(sizeof(FmgrInfo *) * nexprs);
	colls = palloc(sizeof(Oid) * nexprs);
	i = 0;
	foreach(lc, exprs)
	{
		TypeCacheEntry *tc = lookup_type_cache(exprType(lfirst(lc)), TYPECACHE_HASH_PROC_FINFO);

		if (!OidIsValid(tc->hash_proc))
			goto done;
		hashes[i] = &tc->hash_proc_finfo;
		colls[i] = exprCollation(lfirst(lc));
		states[i++] = ExecInitExpr(lfirst(lc), NULL);
	}
	qual = ExecInitQual(quals, NULL);
	econtext = CreateStandaloneExprContext();
	slot = MakeSingleTupleTableSlot(rows->desc, &TTSOpsVirtual);
	econtext->ecxt_scantuple = slot;
	sampled = sample_rows(rows->n, &picks);
	keys = palloc(sizeof(uint64) * sampled);
	for (r = 0; r < sampled; r++)
	{
		int			row = picks[r];
		uint64		key = 0;

		ExecClearTuple(slot);
		memcpy(slot->tts_values, rows->values + (Size) row * rows->natts, sizeof(Datum) * rows->natts);
		memcpy(slot->tts_isnull, rows->nulls + (Size) row * rows->natts, sizeof(bool) * rows->natts);
		ExecStoreVirtualTuple(slot);
		ResetExprContext(econtext);
		if (!ExecQual(qual, econtext))
			continue;
		for (i = 0; i < nexprs; i++)
		{
			bool		isnull;
			Datum		value = ExecEvalExprSwitchContext(states[i], econtext, &isnull);
			uint32		h = isnull ? 0x9e3779b9 :
				DatumGetUInt32(FunctionCall1Coll(hashes[i], colls[i], value));

			key = hash_combine64(key, h);
		}
		keys[n++] = key;
	}
	ExecDropSingleTupleTableSlot(slot);
	FreeExprContext(econtext, true);
	if (n == 0)
		goto done;
	qsort(keys, n, sizeof(uint64), compare_keys);
	for (r = 0; r < n; r = i)
	{
		for (i = r + 1; i < n && keys[i] == keys[r]; i++)
			;
		d++;
		f1 += (i - r == 1);
	}
	/* the rows that pass the quals, of which n were sampled */
	passing = (double) rows->n * n / sampled;
	if (sampled == rows->n)
		groups = d;
	else
		groups = Min(passing, Max(d, n * (double) d / (n - f1 + f1 * n / passing)));
done:
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return groups;
}

/*
 * estimate_groups: the groups of a statement that groups a batch's rows
 * alone, counted on a sample of them.  Left to the planner, a batch's
 * columns have no statistics, and its groups are at most a tenth of its
 * rows: a batch of 200,000 new groups merged into a view of a million
 * planned as 20,000 index probes, and ran 200,000 of them.  Only the
 * number of rows the grouping gives is set, which is what the plan above
 * it (the merge's join) is chosen by.
 */
static void
estimate_groups(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
				RelOptInfo *output_rel, void *extra)
{
	GroupPathExtraData *group = extra;
	RangeTblEntry *rte;
	SspRows    *rows;
	double		groups;
	ListCell   *lc;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || npublished == 0 || input_rel->reloptkind != RELOPT_BASEREL ||
		root->parse->groupClause == NIL || root->parse->groupingSets != NIL)
		return;
	rte = root->simple_rte_array[input_rel->relid];
	if (rte->rtekind != RTE_NAMEDTUPLESTORE || (rows = published_rows(rte->enrname)) == NULL ||
		!same_columns(rte, rows) || rows->n < GROUPS_ESTIMATE_FROM)
		return;
	groups = sample_groups(input_rel, rows,
						   get_sortgrouplist_exprs(root->parse->groupClause, group->targetList));
	if (groups < 1)
		return;
	output_rel->rows = groups;
	foreach(lc, output_rel->pathlist)
		((Path *) lfirst(lc))->rows = groups;
}

/* ssp_rows_init: the planner's hooks and the scan's methods; from _PG_init */
void
ssp_rows_init(void)
{
	RegisterCustomScanMethods(&batch_scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = set_batch_pathlist;
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = estimate_groups;
}
