/*-------------------------------------------------------------------------
 *
 * update.c
 *	  What ALTER EXTENSION ssp UPDATE calls in C: the scripts in sql/ call
 *	  these functions for each view, and drop them once done.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/tablespace.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "ssp.h"
#include "compile/build.h"
#include "compile/view.h"
#include "runtime/batch.h"

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

/*
 * ssp_update_seed(view): the update to 0.3 gives a view of one group
 * (aggregates without GROUP BY) that has no row yet, having applied no
 * batch, the row CREATE VIEW gives one now (ssp_view_seed): its query's
 * over no rows.  Its worker waits for the update (a library newer than
 * the extension applies nothing), and a batch in flight would end first.
 */
PG_FUNCTION_INFO_V1(ssp_update_seed);
Datum
ssp_update_seed(PG_FUNCTION_ARGS)
{
	Oid			view = PG_GETARG_OID(0);
	SspView    *v = ssp_view_load(view, true);
	const char *apply;
	char	   *mrel;

	/* (a view over shards, parallelism 0, reads its shards' tables) */
	if (v == NULL || !OidIsValid(v->mrel) || v->parallelism == 0 ||
		!ssp_view_one_group(v->mrel, v->nsources))
		PG_RETURN_VOID();
	/* its stream first, as its worker, DROP and ssp.reset take them */
	LockRelationOid(v->streams[0], AccessShareLock);
	apply = ssp_view_build(v)->apply_sql;
	mrel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(v->mrel)),
									  get_rel_name(v->mrel));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	ssp_wait_for_batches(view);
	if (SPI_execute(psprintf("SELECT 1 FROM %s LIMIT 1", mrel), true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read the table of continuous view \"%s\"", v->name);
	if (SPI_processed == 0)
		ssp_view_seed(v->mrel, v->nsources, v->streams[0], apply);
	SPI_finish();
	PG_RETURN_VOID();
}
