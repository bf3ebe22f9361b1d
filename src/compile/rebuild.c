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

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/tablespace.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rewriteManip.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

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

/*
 * index_columns: an index's key columns, quoted and comma-separated as
 * index_keys in viewsql.c writes them; NULL unless a plain btree index of
 * columns (no expression, no predicate).
 */
static char *
index_columns(Relation index)
{
	StringInfoData cols;
	int			i;

	if (index->rd_rel->relam != BTREE_AM_OID || RelationGetIndexExpressions(index) != NIL ||
		RelationGetIndexPredicate(index) != NIL)
		return NULL;
	initStringInfo(&cols);
	for (i = 0; i < index->rd_index->indnkeyatts; i++)
		appendStringInfo(&cols, "%s%s", i ? ", " : "",
						 quote_identifier(get_attname(index->rd_index->indrelid,
													  index->rd_index->indkey.values[i], false)));
	return cols.data;
}

/* same_columns: do two lists of index_columns hold the same columns? */
static bool
same_columns(const char *a, const char *b)
{
	List	   *la = NIL;
	List	   *lb = NIL;
	ListCell   *lc;

	if (!SplitIdentifierString(pstrdup(a), ',', &la) ||
		!SplitIdentifierString(pstrdup(b), ',', &lb) ||
		list_length(la) != list_length(lb))
		return false;
	foreach(lc, la)
	{
		ListCell   *c;
		bool		found = false;

		foreach(c, lb)
			found |= strcmp(lfirst(c), lfirst(lc)) == 0;
		if (!found)
			return false;
	}
	return true;
}

/*
 * index_options: " WITH (...)" and " TABLESPACE ..." for an index made in
 * place of index, with the settings it had.
 */
static char *
index_options(Oid index)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(index));
	StringInfoData opts;
	Datum		reloptions;
	bool		isnull;
	Oid			spc;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", index);
	initStringInfo(&opts);
	reloptions = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		int			n,
					i;

		deconstruct_array(DatumGetArrayTypeP(reloptions), TEXTOID, -1, false,
						  TYPALIGN_INT, &elems, NULL, &n);
		for (i = 0; i < n; i++)
		{
			char	   *opt = TextDatumGetCString(elems[i]);
			char	   *eq = strchr(opt, '=');

			if (eq == NULL)
				continue;
			*eq = '\0';
			appendStringInfo(&opts, "%s%s = %s", opts.len ? ", " : " WITH (",
							 quote_identifier(opt), quote_literal_cstr(eq + 1));
		}
		if (opts.len)
			appendStringInfoChar(&opts, ')');
	}
	spc = ((Form_pg_class) GETSTRUCT(tup))->reltablespace;
	ReleaseSysCache(tup);
	if (OidIsValid(spc))
		appendStringInfo(&opts, " TABLESPACE %s", quote_identifier(get_tablespace_name(spc)));
	return opts.data;
}

/*
 * ssp_update_mrel_index(view): the update to 0.3 (ALTER EXTENSION ssp
 * UPDATE) gives the table of an aggregating view made before it the index
 * a view made now has: its unique index with a window's start and other
 * times first (viewsql.c, index_keys), made anew if its columns were in
 * another order, with the settings it had (its storage parameters, its
 * tablespace, CLUSTER ON), and no index of the window's own.  ssp's own
 * indexes are the first of their kind: CREATE VIEW made them with the
 * table, before any of the user's; other indexes, and views of other
 * kinds, are left as they are.
 */
PG_FUNCTION_INFO_V1(ssp_update_mrel_index);
Datum
ssp_update_mrel_index(PG_FUNCTION_ARGS)
{
	SspView    *v = ssp_view_load(PG_GETARG_OID(0), true);
	Build	   *b;
	Relation	rel;
	ListCell   *lc;
	Oid			unique = InvalidOid;	/* the unique index, in another order */
	Oid			in_order = InvalidOid;	/* one in the order of now */
	Oid			window = InvalidOid;	/* the window's own index */
	bool		clustered = false;
	char	   *mrel;

	if (v == NULL || !OidIsValid(v->mrel))
		PG_RETURN_VOID();
	b = ssp_view_build(v);
	if (b->mrel_index_keys == NULL)
		PG_RETURN_VOID();
	rel = table_open(v->mrel, ShareLock);
	mrel = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
	/* in the order of their oids: made first, first */
	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		char	   *cols = index_columns(index);
		Form_pg_index ind = index->rd_index;

		if (cols && ind->indisunique && ind->indnullsnotdistinct &&
			same_columns(cols, b->mrel_index_keys))
		{
			if (strcmp(cols, b->mrel_index_keys) != 0)
			{
				if (!OidIsValid(unique))
				{
					unique = lfirst_oid(lc);
					clustered |= ind->indisclustered;
				}
			}
			else if (!OidIsValid(in_order))
				in_order = lfirst_oid(lc);
		}
		else if (cols && !ind->indisunique && b->window_col &&
				 strcmp(cols, b->window_col) == 0 && !OidIsValid(window))
		{
			window = lfirst_oid(lc);
			clustered |= ind->indisclustered;
		}
		index_close(index, AccessShareLock);
	}
	table_close(rel, NoLock);
	if (!OidIsValid(unique) && !OidIsValid(in_order))
		PG_RETURN_VOID();		/* not a table CREATE VIEW indexed */

	SPI_connect();
	if (!OidIsValid(in_order))
	{
		ssp_spi_exec(psprintf("CREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT%s",
							  mrel, b->mrel_index_keys, index_options(unique)));
		/* the index just made: the last of that order */
		rel = table_open(v->mrel, NoLock);
		foreach(lc, RelationGetIndexList(rel))
		{
			Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
			char	   *cols = index_columns(index);

			if (cols && index->rd_index->indisunique && strcmp(cols, b->mrel_index_keys) == 0)
				in_order = lfirst_oid(lc);
			index_close(index, AccessShareLock);
		}
		table_close(rel, NoLock);
	}
	if (clustered)
		ssp_spi_exec(psprintf("ALTER TABLE %s CLUSTER ON %s", mrel,
							  quote_identifier(get_rel_name(in_order))));
	if (OidIsValid(unique))
		ssp_spi_exec(psprintf("DROP INDEX %s",
							  quote_qualified_identifier(get_namespace_name(get_rel_namespace(unique)),
														 get_rel_name(unique))));
	if (OidIsValid(window))
		ssp_spi_exec(psprintf("DROP INDEX %s",
							  quote_qualified_identifier(get_namespace_name(get_rel_namespace(window)),
														 get_rel_name(window))));
	SPI_finish();
	PG_RETURN_VOID();
}
