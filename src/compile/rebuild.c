/*-------------------------------------------------------------------------
 *
 * rebuild.c
 *	  A continuous view's SQL built again for its worker, so that it names
 *	  every object as it is named now.
 *
 * A view keeps its query as the plain view NAME_query (by oid, as Postgres
 * keeps any view) and the options it was created with.  From those,
 * ssp_view_build makes the SQL again with the same code as CREATE VIEW
 * (ssp_build_view, view.c): when a worker loads the view
 * (ssp_view_generate), and before a batch whenever an invalidation has
 * touched a relation, schema, function or type the SQL names
 * (ssp_view_refresh).  Renaming what a view reads, or its own objects, is
 * harmless.  The outbox's trigger function names the outbox in its body,
 * so it is written again when its body would differ.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "compile/view.h"
#include "compile/build.h"

/* qualified_name: a relation's name, qualified, as it is now */
static char *
qualified_name(SspView *v, Oid rel)
{
	char	   *name = get_rel_name(rel);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("continuous view \"%s\" has lost one of its tables", v->name),
				 errhint("Drop the view and create it again.")));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(rel)), name);
}

/*
 * view_query: the query that the view NAME_query keeps, as parse analysis
 * made it.  Postgres 15 puts the view itself first in a view's range
 * table, twice (as OLD and NEW): they go, and the rest move up.
 */
static Query *
view_query(SspView *v)
{
	Relation	rel;
	Query	   *q;

	if (!OidIsValid(v->query) || get_rel_name(v->query) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("continuous view \"%s\" has lost its query", v->name),
				 errhint("Drop the view and create it again.")));
	rel = relation_open(v->query, AccessShareLock);
	q = copyObject(get_view_query(rel));
	relation_close(rel, NoLock);
#if PG_VERSION_NUM < 160000
	if (list_length(q->rtable) >= 2 &&
		rt_fetch(1, q->rtable)->relid == v->query &&
		rt_fetch(2, q->rtable)->relid == v->query)
	{
		q->rtable = list_copy_tail(q->rtable, 2);
		OffsetVarNodes((Node *) q, -2, 0);
	}
#endif
	return q;
}

/*
 * ssp_view_build: the view's SQL built again, from the query NAME_query
 * keeps and the options it was created with, naming every object as it is
 * named now: so renaming what a view reads, or its own objects, is
 * harmless.  Needs a transaction.
 */
Build *
ssp_view_build(SspView *v)
{
	Build	   *b = palloc0(sizeof(Build));
	List	   *defs = NIL;
	ListCell   *lc;
	StringInfoData create,
				viewsql,
				apply;
	int			i;

	foreach(lc, v->options)
	{
		char	   *opt = pstrdup(lfirst(lc));
		char	   *eq = strchr(opt, '=');

		if (eq == NULL)
			elog(ERROR, "ssp: continuous view %u has a malformed option \"%s\"", v->view, opt);
		*eq = '\0';
		defs = lappend(defs, makeDefElemExtended("ssp", opt, (Node *) makeString(eq + 1),
												 DEFELEM_UNSPEC, -1));
	}
	b->opts = palloc(sizeof(SspViewOptions));
	*b->opts = ssp_parse_view_options(defs);
	b->query = view_query(v);
	if (OidIsValid(v->outbox))
	{
		b->outbox = qualified_name(v, v->outbox);
		if (OidIsValid(v->changes))
		{
			char	   *fn = get_func_name(v->changes);

			/* dropped since the view was loaded */
			if (fn == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_FUNCTION),
						 errmsg("continuous view \"%s\" has lost its trigger function", v->name),
						 errhint("Drop the view and create it again.")));
			b->changes_fn = quote_qualified_identifier(get_namespace_name(get_func_namespace(v->changes)),
													   fn);
		}
	}
	for (i = 0; i < list_length(v->buffers) && i < lengthof(b->buffers); i++)
	{
		b->buffers[i] = qualified_name(v, list_nth_oid(v->buffers, i));
		b->buffer_oids[i] = list_nth_oid(v->buffers, i);
	}
	b->rebuilding = true;
	b->mrel_oid = v->mrel;
	b->relname = get_rel_name(v->view);
	if (b->opts->shard_servers)
		ssp_shard_rebuild(b, v);
	initStringInfo(&create);
	initStringInfo(&viewsql);
	initStringInfo(&apply);
	ssp_build_view(b, v->names, qualified_name(v, v->view), qualified_name(v, v->mrel),
			   &create, &viewsql, &apply);
	b->apply_sql = apply.data;
	return b;
}

/*
 * A worker's SQL names the relations below, schemas, functions and types:
 * an invalidation of any of them (a rename, say) makes it stale, and it is
 * built again before the next batch (ssp_view_refresh).
 */
static List *watching = NIL;	/* SspView: the views whose SQL this process runs */
static bool callbacks = false;

static void
relation_changed(Datum arg, Oid relid)
{
	ListCell   *lc;

	foreach(lc, watching)
	{
		SspView    *v = lfirst(lc);
		int			i;

		if (!OidIsValid(relid) || v->nwatched >= SSP_MAX_WATCHED)
			v->sql_stale = true;
		for (i = 0; i < v->nwatched && !v->sql_stale; i++)
			if (v->watched[i] == relid)
				v->sql_stale = true;
	}
}

static void
catalog_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	ListCell   *lc;

	foreach(lc, watching)
		((SspView *) lfirst(lc))->sql_stale = true;
}

/* watch_relations: watch each relation the query reads, in subqueries too. */
static bool
watch_relations(Node *node, void *arg)
{
	SspView    *v = arg;

	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
		{
			if (v->nwatched < SSP_MAX_WATCHED)
				v->watched[v->nwatched++] = rte->relid;
			else
				v->nwatched = SSP_MAX_WATCHED + 1;	/* any relation, then */
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, watch_relations, arg, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, watch_relations, arg);
}

/* watch: the relations of the view and of its query */
static void
watch(SspView *v, Query *q)
{
	ListCell   *lc;

	if (!callbacks)
	{
		CacheRegisterRelcacheCallback(relation_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, catalog_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, catalog_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, catalog_changed, (Datum) 0);
		callbacks = true;
	}
	if (!list_member_ptr(watching, v))
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		watching = lappend(watching, v);
		MemoryContextSwitchTo(old);
	}
	v->nwatched = 0;
	v->watched[v->nwatched++] = v->mrel;
	v->watched[v->nwatched++] = v->query;
	if (OidIsValid(v->outbox))
		v->watched[v->nwatched++] = v->outbox;
	foreach(lc, v->buffers)
		if (v->nwatched < SSP_MAX_WATCHED)
			v->watched[v->nwatched++] = lfirst_oid(lc);
	(void) watch_relations((Node *) q, v);
}

/*
 * ssp_view_unwatch: the process no longer runs the view's SQL (it left
 * the process's reader): stop watching, and free the SQL.
 */
void
ssp_view_unwatch(SspView *v)
{
	watching = list_delete_ptr(watching, v);
	if (v->sql_cxt)
		MemoryContextDelete(v->sql_cxt);
	v->sql_cxt = NULL;
}

/*
 * sync_changes_function: an outbox's trigger function names the outbox in
 * its body: replace the body if it is not the one built now.
 */
static void
sync_changes_function(SspView *v, Build *b)
{
	HeapTuple	tup;
	bool		isnull;
	bool		same;
	ObjectAddress fn,
				viewaddr;

	if (!OidIsValid(v->changes) || b->changes_body == NULL || b->changes_fn == NULL)
		return;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(v->changes));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("continuous view \"%s\" has lost its trigger function", v->name),
				 errhint("Drop the view and create it again.")));
	same = strcmp(TextDatumGetCString(SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull)),
				  b->changes_body) == 0;
	ReleaseSysCache(tup);
	if (same)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	ssp_spi_exec(ssp_changes_function_sql(b, true));
	SPI_finish();
	/* CREATE OR REPLACE records the function's dependencies anew */
	ObjectAddressSet(fn, ProcedureRelationId, v->changes);
	ObjectAddressSet(viewaddr, RelationRelationId, v->view);
	recordDependencyOn(&fn, &viewaddr, DEPENDENCY_AUTO);
	CommandCounterIncrement();
}

/*
 * ssp_view_generate: the SQL a worker runs, built again (ssp_view_build),
 * into memory of its own; from then on, watched for renames.  Errors if
 * the triggers of the view's outbox are not all there and enabled
 * (ssp_view_check_changes), whenever the view's table changed.  Needs a
 * transaction.
 */
void
ssp_view_generate(SspView *v)
{
	MemoryContext cxt;
	MemoryContext old;
	Build	   *b;

	/* its changes would be lost without the triggers of its outbox */
	ssp_view_check_changes(v);
	cxt = AllocSetContextCreate(TopMemoryContext, "ssp view SQL", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	v->sql_stale = false;
	b = ssp_view_build(v);
	v->apply_sql = b->apply_sql;
	v->mrel_indexed = b->mrel_indexed;
	v->share = b->share;
	v->late_sql = b->late_sql;
	v->retention_sql = b->retention_sql;
	v->outbox_final_sql = b->outbox_final_sql;
	watch(v, b->query);
	sync_changes_function(v, b);
	MemoryContextSwitchTo(old);
	if (v->sql_cxt)
		MemoryContextDelete(v->sql_cxt);
	v->sql_cxt = cxt;
}

/*
 * ssp_view_refresh: build a worker's SQL again if something it names has
 * changed since it was built.  Needs a transaction.
 */
void
ssp_view_refresh(SspView *v)
{
	AcceptInvalidationMessages();
	if (v->sql_stale)
		ssp_view_generate(v);
}
