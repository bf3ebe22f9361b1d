/*-------------------------------------------------------------------------
 *
 * shard.c
 *	  A view's partitions shared by several Postgres servers, and one view
 *	  over all of them.
 *
 * On each of N servers, the same continuous view with ssp.shard = 'k/N'
 * reads the partitions p with p % N == k (runtime: ssp_reads_partition),
 * and commits its own rows with its own offsets, exactly once as any
 * view.  Its table has one more column, _shard = k.
 *
 * On a coordinator, the same CREATE VIEW with ssp.shards = 'srv0, srv1,
 * ...' (postgres_fdw servers, shard 0 first) is compiled as any view, but
 * runs no worker (parallelism 0 in ssp.continuous_views).  Its table is
 * partitioned by _shard, each partition a foreign table over a shard's
 * table (async_capable: scanned at once), and its view merges the shards'
 * rows of a group with the same merges as parallel workers' rows
 * (viewsql.c, merged_source): so an average is the shards' sums over their
 * counts.  A second partitioned table, NAME_shards, reads each server's
 * ssp.shard_views: where each shard's table is, and its watermark, whose
 * least closes the windows of ssp.emit = 'final'.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "utils/regproc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "ssp.h"
#include "compile/build.h"
#include "compile/view.h"

/*
 * ssp_shard_check: refuse what a shard of a view (ssp.shard), or a view over
 * shards (ssp.shards), cannot give as one server would; add the column
 * _shard to its table, the shard's number, by which a view over shards
 * partitions the shards' rows.
 */
void
ssp_shard_check(Build *b, const char *mrel, StringInfo create)
{
	SspViewOptions *opts = b->opts;
	const char *what = opts->shard_servers ? "ssp.shards" : "ssp.shard";
	ListCell   *lc;
	int			i;

	if (b->stream_join)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used with a join of streams", what),
				 errdetail("Each server reads only its share of the partitions, and the rows of a pair may be in partitions of different servers.")));
	if (opts->primary_key)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used with ssp.primary_key", what),
				 errdetail("The versions of a key may be in partitions of different servers.")));
	for (i = 0; i < b->nstreams; i++)
		if (b->nstreams == 1 ? b->stream->changelog : b->streams[i]->changelog)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s cannot be used over a changelog", what),
					 errdetail("The versions of a key may be in partitions of different servers.")));
	if (b->window >= 0 && b->spec.session)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used with session windows", what),
				 errdetail("The events of one session may be in partitions of different servers.")));
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);

		if (p->distinct_arg || p->ordered)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s cannot be used with DISTINCT aggregates, array_agg, string_agg, json_agg or jsonb_agg", what),
					 errdetail("Their states are not merged from the states of the shards.")));
	}
	if (opts->output_topic)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used with ssp.output_topic", what),
				 errdetail("A shard's changes are those of its own rows, not of the view's.")));
	if (opts->shard_servers && opts->parallelism > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.parallelism cannot be used with ssp.shards"),
				 errdetail("A view over shards runs no worker: its shards' servers read the stream."),
				 errhint("Give ssp.parallelism to the views on the shards.")));
	if (!b->rebuilding)
		appendStringInfo(create, ";\nALTER TABLE %s ADD COLUMN _shard smallint NOT NULL DEFAULT %d",
						 mrel, opts->shard_index);
}

/*
 * ssp_shard_prepare: check the servers of ssp.shards (postgres_fdw servers
 * the user may use), and name the view's table of its shards.  Before the
 * view is built: its SQL reads that table.
 */
void
ssp_shard_prepare(Build *b, Oid nspid, const char *relname)
{
	ListCell   *lc;

	foreach(lc, b->opts->shard_servers)
	{
		ForeignServer *srv = GetForeignServerByName(lfirst(lc), false);
		ForeignDataWrapper *fdw = GetForeignDataWrapper(srv->fdwid);

		if (strcmp(fdw->fdwname, "postgres_fdw") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("server \"%s\" of ssp.shards is not a postgres_fdw server", srv->servername),
					 errhint("Name servers of the foreign-data wrapper postgres_fdw, one for each shard's database.")));
	}
	b->shard_view_schema = get_namespace_name(nspid);
	b->shard_view_name = pstrdup(relname);
	b->shard_status = quote_qualified_identifier(b->shard_view_schema,
												 ChooseRelationName(relname, NULL, "shards", nspid, false));
}

/* partition_name: a new name for partition k of table base, in nspid */
static char *
partition_name(const char *base, int k, Oid nspid)
{
	return ChooseRelationName(base, NULL, psprintf("%d", k), nspid, false);
}

/*
 * ssp_shard_create: once the view's table is made, make it a table
 * partitioned by _shard, with a foreign table over each shard's own, and
 * make the table of the shards' ssp.shard_views, checking that each
 * server has the view, as shard k of N.  Needs SPI connected.
 */
void
ssp_shard_create(Build *b, const char *mrelname, Oid nspid)
{
	const char *nsp = b->shard_view_schema;
	const char *mrel = quote_qualified_identifier(nsp, mrelname);
	char	   *status_name = strVal(llast(stringToQualifiedNameList(b->shard_status)));
	char	   *tmp;
	int			n = list_length(b->opts->shard_servers);
	char	  **remote_schema = palloc(sizeof(char *) * n);
	char	  **remote_mrel = palloc(sizeof(char *) * n);
	ListCell   *lc;

	ssp_spi_exec(psprintf("CREATE TABLE %s (shard int NOT NULL, shards int, view_schema text, view_name text, "
						  "mrel_schema text, mrel_name text, watermark timestamptz) PARTITION BY LIST (shard)",
						  b->shard_status));
	foreach(lc, b->opts->shard_servers)
	{
		int			k = foreach_current_index(lc);
		char	   *part = quote_qualified_identifier(nsp, partition_name(status_name, k, nspid));
		Oid			argtypes[2] = {TEXTOID, TEXTOID};
		Datum		args[2] = {CStringGetTextDatum(nsp), CStringGetTextDatum(b->shard_view_name)};
		bool		isnull;
		int			shard,
					shards;

		ssp_spi_exec(psprintf("CREATE FOREIGN TABLE %s PARTITION OF %s FOR VALUES IN (%d) SERVER %s "
							  "OPTIONS (schema_name 'ssp', table_name 'shard_views', async_capable 'true')",
							  part, b->shard_status, k, quote_identifier(lfirst(lc))));
		if (ssp_spi_catalog(psprintf("SELECT shard, shards, mrel_schema, mrel_name FROM %s "
										   "WHERE view_schema = $1 AND view_name = $2", part),
								  2, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "ssp: could not read ssp.shard_views of server \"%s\"", (char *) lfirst(lc));
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("server \"%s\" has no continuous view %s", (char *) lfirst(lc),
							quote_qualified_identifier(nsp, b->shard_view_name)),
					 errhint("Create the view on each shard's server first, with the same name and ssp.shard = '%d/%d' on this one.",
							 k, n)));
		shard = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		if (isnull)
			shard = -1;
		shards = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		if (isnull)
			shards = 1;
		if (shard != k || shards != n)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("continuous view %s on server \"%s\" is not shard %d/%d",
							quote_qualified_identifier(nsp, b->shard_view_name), (char *) lfirst(lc), k, n),
					 shard < 0 ? errdetail("It is not sharded.") :
					 errdetail("It is shard %d/%d.", shard, shards),
					 errhint("ssp.shards names the servers in the order of their shards, shard 0 first.")));
		remote_schema[k] = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		remote_mrel[k] = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);
		if (remote_schema[k] == NULL || remote_mrel[k] == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("server \"%s\" does not say where the table of continuous view %s is",
							(char *) lfirst(lc), quote_qualified_identifier(nsp, b->shard_view_name))));
	}

	/* the table, made as any view's, becomes the parent of the shards' */
	tmp = ChooseRelationName(mrelname, NULL, "tmp", nspid, false);
	ssp_spi_exec(psprintf("ALTER TABLE %s RENAME TO %s", mrel, quote_identifier(tmp)));
	ssp_spi_exec(psprintf("CREATE TABLE %s (LIKE %s) PARTITION BY LIST (_shard)",
						  mrel, quote_qualified_identifier(nsp, tmp)));
	ssp_spi_exec(psprintf("DROP TABLE %s", quote_qualified_identifier(nsp, tmp)));
	foreach(lc, b->opts->shard_servers)
	{
		int			k = foreach_current_index(lc);
		char	   *part = quote_qualified_identifier(nsp, partition_name(mrelname, k, nspid));

		ssp_spi_exec(psprintf("CREATE FOREIGN TABLE %s PARTITION OF %s FOR VALUES IN (%d) SERVER %s "
							  "OPTIONS (schema_name %s, table_name %s, async_capable 'true')",
							  part, mrel, k, quote_identifier(lfirst(lc)),
							  quote_literal_cstr(remote_schema[k]), quote_literal_cstr(remote_mrel[k])));
		/* every column is there (a shard of another query has others) */
		ssp_spi_exec(psprintf("SELECT FROM (SELECT * FROM %s LIMIT 1) s", part));
	}
}

/*
 * ssp_shard_depend: a view over shards' table of its shards, and the
 * foreign tables over the shards (partitions of it and of the view's own
 * table), are parts of the view: dropped with it, and DROP SERVER ...
 * CASCADE drops the whole view rather than a shard's rows from under it.
 * Needs SPI connected.
 */
void
ssp_shard_depend(Oid viewoid, Oid status)
{
	ObjectAddress viewaddr,
				addr;
	uint64		i;

	ObjectAddressSet(viewaddr, RelationRelationId, viewoid);
	ObjectAddressSet(addr, RelationRelationId, status);
	recordDependencyOn(&addr, &viewaddr, DEPENDENCY_INTERNAL);
	if (ssp_spi_catalog("SELECT i.inhrelid FROM pg_catalog.pg_inherits i "
							  "WHERE i.inhparent IN ($1, (SELECT c.mrel FROM ssp.continuous_views c WHERE c.view OPERATOR(pg_catalog.=) $2::regclass))",
							  2, (Oid[]) {OIDOID, OIDOID}, (Datum[]) {ObjectIdGetDatum(status), ObjectIdGetDatum(viewoid)},
							  NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read pg_inherits");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		ObjectAddressSet(addr, RelationRelationId,
						 DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull)));
		recordDependencyOn(&addr, &viewaddr, DEPENDENCY_INTERNAL);
	}
}

/*
 * ssp_shard_record: the view's parts over its shards, and the catalog's
 * servers, table of the shards and name of the view there.  Needs SPI
 * connected.
 */
void
ssp_shard_record(Build *b, Oid viewoid)
{
	Oid			status = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(b->shard_status)),
										  NoLock, false);
	Oid			argtypes[4] = {OIDOID, TEXTARRAYOID, OIDOID, TEXTOID};
	Datum		args[4];
	Datum	   *elems = palloc(sizeof(Datum) * list_length(b->opts->shard_servers));
	ListCell   *lc;

	foreach(lc, b->opts->shard_servers)
		elems[foreach_current_index(lc)] = CStringGetTextDatum(lfirst(lc));
	args[0] = ObjectIdGetDatum(viewoid);
	args[1] = PointerGetDatum(construct_array(elems, list_length(b->opts->shard_servers),
											  TEXTOID, -1, false, TYPALIGN_INT));
	args[2] = ObjectIdGetDatum(status);
	args[3] = CStringGetTextDatum(quote_qualified_identifier(b->shard_view_schema, b->shard_view_name));
	if (ssp_spi_catalog("UPDATE ssp.continuous_views SET shards = $2, shard_status = $3, shard_view = $4 "
							  "WHERE view OPERATOR(pg_catalog.=) $1", 4, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not record the shards of a view");
	ssp_shard_depend(viewoid, status);
}

/*
 * ssp_shard_rebuild: what a view over shards' SQL needs when it is built
 * again (a rollup of it): its table of the shards, and its name there.
 */
void
ssp_shard_rebuild(Build *b, SspView *v)
{
	List	   *names;

	if (!OidIsValid(v->shard_status) || v->shard_view == NULL)
		elog(ERROR, "ssp: view over shards \"%s\" has lost its table of the shards", v->name);
	names = stringToQualifiedNameList(v->shard_view);
	b->shard_view_schema = strVal(linitial(names));
	b->shard_view_name = strVal(llast(names));
	b->shard_status = quote_qualified_identifier(get_namespace_name(get_rel_namespace(v->shard_status)),
												 get_rel_name(v->shard_status));
}
