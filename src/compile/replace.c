/*-------------------------------------------------------------------------
 *
 * replace.c
 *	  CREATE OR REPLACE VIEW ... WITH (ssp.continuous): a continuous view's
 *	  query changed without a gap.
 *
 * The new definition is built beside the old one, as a continuous view of
 * its own named NAME_next, which catches up from the log (ssp.start,
 * earliest by default) while the old one keeps serving.  Once it has caught
 * up, the scheduler swaps them in one transaction (ssp_replace_swap): the
 * view NAME reads the new definition's table, the new definition's catalog
 * row, offsets and parts become NAME's, and the old definition's parts are
 * dropped.  Readers of NAME see the old rows until that transaction
 * commits and the new ones after: never a missing relation or an empty
 * view.  doc/views.md, Changing a view's query, tells the user's side.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "compile/view.h"
#include "compile/build.h"

/*
 * view_row: the catalog row of continuous view relid, if it is one: its
 * table into *mrel, and whether this transaction wrote the row (made,
 * reset, paused or resumed the view) into *here.  Read from the catalog
 * table itself, whoever asks (its row-level security would hide the views
 * of others).  Needs a transaction.
 */
static bool
view_row(Oid relid, Oid *mrel, bool *here)
{
	Oid			nspid;
	Oid			cv;
	Relation	rel;
	TableScanDesc scan;
	ScanKeyData key;
	Snapshot	snapshot;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(relid) || !OidIsValid(get_extension_oid("ssp", true)))
		return false;
	nspid = get_namespace_oid("ssp", true);
	cv = OidIsValid(nspid) ? get_relname_relid("continuous_views", nspid) : InvalidOid;
	if (!OidIsValid(cv))
		return false;
	/* the column view (regclass, stored as an oid) is the first, mrel the second */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	rel = table_open(cv, AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 1, &key);
	if ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, 2, RelationGetDescr(rel), &isnull);

		found = true;
		*mrel = isnull ? InvalidOid : DatumGetObjectId(d);
		*here = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetRawXmin(tup->t_data));
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * ssp_continuous_view_mrel: the table of continuous view relid, or
 * InvalidOid; its catalog row is all that ties a view to its table after
 * a restore, until its worker has run.
 */
Oid
ssp_continuous_view_mrel(Oid relid)
{
	Oid			mrel = InvalidOid;
	bool		here;

	return view_row(relid, &mrel, &here) ? mrel : InvalidOid;
}

/* ssp_is_continuous_view: is the relation a continuous view? */
bool
ssp_is_continuous_view(Oid relid)
{
	Oid			mrel;
	bool		here;

	return view_row(relid, &mrel, &here);
}

/*
 * ssp_continuous_view_changed_here: did this transaction write the
 * catalog row of continuous view relid (make, reset, pause, resume or
 * alter it)?  Its worker sees none of that, and cannot write the row
 * itself, until the transaction ends.
 */
bool
ssp_continuous_view_changed_here(Oid relid)
{
	Oid			mrel;
	bool		here = false;

	return view_row(relid, &mrel, &here) && here;
}

/*
 * check_columns: the new definition's columns must be the old one's, with
 * more only at the end, as CREATE OR REPLACE VIEW asks of any view (other
 * views and users' queries may depend on them).
 */
static void
check_columns(Oid oldrel, Oid newrel)
{
	Relation	o = relation_open(oldrel, AccessShareLock);
	Relation	n = relation_open(newrel, AccessShareLock);
	TupleDesc	od = RelationGetDescr(o);
	TupleDesc	nd = RelationGetDescr(n);
	int			i;

	if (nd->natts < od->natts)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("cannot drop columns from continuous view \"%s\"", RelationGetRelationName(o)),
				 errhint("A continuous view replaced keeps its columns, and may add new ones at the end; or drop it and create it again.")));
	for (i = 0; i < od->natts; i++)
	{
		Form_pg_attribute oa = TupleDescAttr(od, i);
		Form_pg_attribute na = TupleDescAttr(nd, i);

		if (strcmp(NameStr(oa->attname), NameStr(na->attname)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("cannot change name of column \"%s\" of continuous view \"%s\" to \"%s\"",
							NameStr(oa->attname), RelationGetRelationName(o), NameStr(na->attname)),
					 errhint("A continuous view replaced keeps its columns, and may add new ones at the end; or drop it and create it again.")));
		if (oa->atttypid != na->atttypid || oa->atttypmod != na->atttypmod)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("cannot change data type of column \"%s\" of continuous view \"%s\" from %s to %s",
							NameStr(oa->attname), RelationGetRelationName(o),
							format_type_with_typemod(oa->atttypid, oa->atttypmod),
							format_type_with_typemod(na->atttypid, na->atttypmod)),
					 errhint("A continuous view replaced keeps its columns, and may add new ones at the end; or drop it and create it again.")));
	}
	relation_close(n, AccessShareLock);
	relation_close(o, AccessShareLock);
}

/*
 * check_output_replace: an output topic is for a view's life.  Replacing
 * a view that has one, both definitions would publish their changes to
 * it while the new one catches up, numbered apart; a new definition that
 * adds one would publish the changes of its catch-up.  Checked before the
 * new definition is built.
 */
static void
check_output_replace(Oid viewoid, ViewStmt *stmt, const char *name)
{
	Oid			argtype = OIDOID;
	Datum		arg = ObjectIdGetDatum(viewoid);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("SELECT 1 FROM ssp.continuous_views WHERE view OPERATOR(pg_catalog.=) $1::regclass "
						"AND output_topic IS NOT NULL",
						1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot replace continuous view \"%s\": it has ssp.output_topic", name),
				 errdetail("Both definitions would publish their changes to the topic while the new one catches up."),
				 errhint("Create the new definition as a view of its own, with an output topic of its own.")));
	SPI_finish();
	if (ssp_parse_view_options(stmt->options).output_topic)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot replace continuous view \"%s\" with a definition that has ssp.output_topic", name),
				 errdetail("The new definition would publish the changes of its catch-up, before it takes the old one's place."),
				 errhint("Drop the view and create it again with ssp.output_topic, or create the new definition as a view of its own.")));
}

/*
 * check_replaceable: what a replacement cannot carry over: a view that
 * reads the old definition's table itself (a rollup) would lose it at
 * the swap.
 */
static void
check_replaceable(Oid viewoid, Oid shadowoid, const char *name)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(viewoid), ObjectIdGetDatum(shadowoid)};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("SELECT r.ev_class::regclass::text FROM pg_catalog.pg_depend d "
							  "JOIN pg_catalog.pg_rewrite r ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass "
							  "AND d.objid = r.oid "
							  "JOIN ssp.continuous_views c ON c.view OPERATOR(pg_catalog.=) $1::regclass AND d.refobjid OPERATOR(pg_catalog.=) c.mrel "
							  "WHERE d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND r.ev_class <> $1",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read pg_depend");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot replace continuous view \"%s\": view %s reads its table",
						name, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Drop that view (a rollup, say) first, and create it again after the replacement.")));
	SPI_finish();
}

/* start_given: did CREATE VIEW say ssp.start? */
static bool
start_given(List *options)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (def->defnamespace && strcmp(def->defnamespace, "ssp") == 0 &&
			strcmp(def->defname, "start") == 0)
			return true;
	}
	return false;
}

/*
 * check_log_holds: the new definition starts from the log's beginning
 * without the user saying so: refuse if the broker has deleted messages
 * of a topic it reads (retention), which the old definition may have
 * counted and the new one never could.
 */
static void
check_log_holds(Oid shadow, const char *name)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(shadow)};
	Datum	   *streams;
	Oid		   *oids;
	int			nstreams;
	bool		isnull;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("SELECT streams::oid[] FROM ssp.continuous_views WHERE view OPERATOR(pg_catalog.=) $1::regclass",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)),
					  OIDOID, sizeof(Oid), true, TYPALIGN_INT, &streams, NULL, &nstreams);
	/* copied out of SPI's memory, which SPI_finish frees */
	oids = SPI_palloc(sizeof(Oid) * Max(nstreams, 1));
	for (i = 0; i < nstreams; i++)
		oids[i] = DatumGetObjectId(streams[i]);
	SPI_finish();
	for (i = 0; i < nstreams; i++)
	{
		SspStream  *s = ssp_stream_open(oids[i]);
		SspKafka   *kafka = ssp_kafka_consumer(s->serverid, GetUserId(), s->topic, NULL);
		int			nparts = ssp_kafka_partition_count(kafka);
		int64	   *low = palloc(sizeof(int64) * Max(nparts, 1));
		int64	   *high = palloc(sizeof(int64) * Max(nparts, 1));
		int			p;

		ssp_kafka_watermarks_all(kafka, nparts, low, high);
		for (p = 0; p < nparts; p++)
		{
			if (low[p] > 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("cannot replace continuous view \"%s\": topic \"%s\" no longer holds all its messages",
								name, s->topic),
						 errdetail("Partition %d starts at offset %lld: the broker has deleted the messages before it, which the old definition may have counted and the new one could not.",
								   p, (long long) low[p]),
						 errhint("Say where the new definition starts: ssp.start = 'earliest' takes what the log holds, or give a timestamp or 'latest'.")));
		}
		ssp_kafka_close(kafka);
	}
}

/*
 * ssp_replace_continuous_view: CREATE OR REPLACE VIEW of the continuous
 * view viewoid.  Builds the new definition as the continuous view
 * NAME_next (replacing one still pending), which the old one keeps
 * serving until it has caught up; the scheduler then swaps them.
 */
void
ssp_replace_continuous_view(ViewStmt *stmt, const char *queryString, Oid viewoid)
{
	Oid			nspid = get_rel_namespace(viewoid);
	char	   *nspname = get_namespace_name(nspid);
	char	   *name = get_rel_name(viewoid);
	char	   *shadowname;
	ViewStmt   *shadow;
	Oid			shadowoid;
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2];
	ObjectAddress shadowaddr,
				viewaddr;
	uint64		i;

	if (!pg_class_ownercheck(viewoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_VIEW, name);
	/* a view over shards keeps nothing of its own to serve meanwhile */
	if (ssp_parse_view_options(stmt->options).shard_servers != NIL ||
		ssp_view_load(viewoid, false)->parallelism == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CREATE OR REPLACE VIEW cannot make or change a view over shards"),
				 errdetail("A view over shards reads its shards' tables; it has no rows of its own to keep serving."),
				 errhint("Replace the view on each shard's server, then drop the view over shards and create it again.")));
	/* one replacement at a time; the view keeps serving meanwhile */
	LockRelationOid(viewoid, ShareUpdateExclusiveLock);
	check_output_replace(viewoid, stmt, name);

	args[0] = ObjectIdGetDatum(viewoid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/*
	 * a new definition still catching up is not a view to replace: its own
	 * replacement took its place and left the view it was for as it was
	 */
	if (ssp_spi_catalog("SELECT replaces::oid FROM ssp.continuous_views "
						"WHERE view OPERATOR(pg_catalog.=) $1::regclass AND replaces IS NOT NULL",
						1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	if (SPI_processed > 0)
	{
		bool		isnull;
		Oid			replaced = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
															  SPI_tuptable->tupdesc, 1, &isnull));

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" is the new definition of \"%s\", still catching up",
						name, get_rel_name(replaced)),
				 errhint("Replace \"%s\" itself: its pending new definition is dropped for the newer one.",
						 get_rel_name(replaced))));
	}

	/* a replacement still catching up is replaced in turn */
	if (ssp_spi_catalog("SELECT view::oid FROM ssp.continuous_views WHERE replaces OPERATOR(pg_catalog.=) $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			pending = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
															 SPI_tuptable->tupdesc, 1, &isnull));

		ssp_spi_exec(psprintf("DROP VIEW %s",
							  quote_qualified_identifier(get_namespace_name(get_rel_namespace(pending)),
														 get_rel_name(pending))));
	}
	SPI_finish();
	CommandCounterIncrement();

	/* the new definition, as a continuous view of its own */
	shadowname = ChooseRelationName(name, NULL, "next", nspid, false);
	shadow = copyObject(stmt);
	shadow->view = makeRangeVar(nspname, shadowname, -1);
	shadow->replace = false;
	ssp_create_continuous_view(shadow, queryString);
	CommandCounterIncrement();
	shadowoid = get_relname_relid(shadowname, nspid);
	/* the view's owner's, as its parts will be, whoever replaces it */
	if (ssp_rel_owner(shadowoid) != ssp_rel_owner(viewoid))
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "ssp: SPI_connect failed");
		ssp_spi_exec(psprintf("ALTER VIEW %s OWNER TO %s",
							  quote_qualified_identifier(nspname, shadowname),
							  quote_identifier(GetUserNameFromId(ssp_rel_owner(viewoid), false))));
		SPI_finish();
		CommandCounterIncrement();
	}
	check_columns(viewoid, shadowoid);
	check_replaceable(viewoid, shadowoid, name);
	if (!start_given(stmt->options))
		check_log_holds(shadowoid, name);

	/* it goes with the view it replaces, if that is dropped first */
	ObjectAddressSet(shadowaddr, RelationRelationId, shadowoid);
	ObjectAddressSet(viewaddr, RelationRelationId, viewoid);
	recordDependencyOn(&shadowaddr, &viewaddr, DEPENDENCY_AUTO);
	args[0] = ObjectIdGetDatum(shadowoid);
	args[1] = ObjectIdGetDatum(viewoid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("UPDATE ssp.continuous_views SET replaces = $2::regclass WHERE view OPERATOR(pg_catalog.=) $1::regclass",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "ssp: could not record the replacement of continuous view \"%s\"", name);
	SPI_finish();
	ereport(NOTICE,
			(errmsg("continuous view \"%s\" keeps its definition until its new one, \"%s\", has caught up",
					name, shadowname),
			 errdetail("Then the new definition takes its place in one transaction.")));
}

/* internals: the relations (and function) that are parts of a view */
typedef struct Parts
{
	Oid			view;
	Oid			mrel;
	Oid			changes;		/* the outbox's trigger function, or InvalidOid */
	List	   *rels;			/* Oid: mrel, query, outbox, buffers */
	int			generation;
} Parts;

/*
 * read_parts: the parts of view, from its catalog row: those that are
 * parts of it in pg_depend (CREATE VIEW, or a repair, made them so) or
 * are owner's, and its outbox's trigger function if it depends on the
 * view or is owner's.  The row is its owner's to write, and the callers
 * change owners and move dependencies without a privilege check: nothing
 * else it names is taken.
 */
static void
read_parts(Oid view, Oid owner, Parts *parts)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(view)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	memset(parts, 0, sizeof(*parts));
	parts->view = view;
	if (ssp_spi_catalog("SELECT mrel::oid, query::oid, outbox::oid, buffers::oid[], generation "
							  "FROM ssp.continuous_views WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "ssp: continuous view %u is gone", view);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	parts->mrel = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	parts->rels = lappend_oid(parts->rels, parts->mrel);
	d = SPI_getbinval(tup, desc, 2, &isnull);
	if (!isnull)
		parts->rels = lappend_oid(parts->rels, DatumGetObjectId(d));
	d = SPI_getbinval(tup, desc, 3, &isnull);
	if (!isnull)
		parts->rels = lappend_oid(parts->rels, DatumGetObjectId(d));
	d = SPI_getbinval(tup, desc, 4, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		int			n;
		int			i;

		deconstruct_array(DatumGetArrayTypeP(d), OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &elems, NULL, &n);
		for (i = 0; i < n; i++)
			parts->rels = lappend_oid(parts->rels, DatumGetObjectId(elems[i]));
	}
	parts->generation = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));

	{
		List	   *rels = parts->rels;
		ListCell   *lc;

		parts->rels = NIL;
		foreach(lc, rels)
		{
			args[0] = ObjectIdGetDatum(lfirst_oid(lc));
			if (ssp_spi_catalog("SELECT 1 FROM pg_catalog.pg_depend WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
									  "AND objid OPERATOR(pg_catalog.=) $1 AND refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass "
									  "AND refobjid OPERATOR(pg_catalog.=) $2 AND deptype OPERATOR(pg_catalog.=) 'i'",
									  2, (Oid[]) {OIDOID, OIDOID}, (Datum[]) {args[0], ObjectIdGetDatum(view)},
									  NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "ssp: could not read pg_depend");
			if (SPI_processed == 1 || ssp_rel_owner(lfirst_oid(lc)) == owner)
				parts->rels = lappend_oid(parts->rels, lfirst_oid(lc));
			else if (lfirst_oid(lc) == parts->mrel)
				parts->mrel = InvalidOid;
		}
	}
	if (!OidIsValid(parts->mrel))
		return;
	args[0] = ObjectIdGetDatum(parts->mrel);
	if (ssp_spi_catalog("SELECT p.oid FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p "
							  "ON p.oid OPERATOR(pg_catalog.=) t.tgfoid WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 "
							  "AND t.tgname OPERATOR(pg_catalog.=) 'ssp_changes_insert' "
							  "AND (p.proowner OPERATOR(pg_catalog.=) $2 OR EXISTS (SELECT FROM pg_catalog.pg_depend d "
							  "WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass "
							  "AND d.objid OPERATOR(pg_catalog.=) p.oid AND d.refobjid OPERATOR(pg_catalog.=) $3 "
							  "AND d.deptype OPERATOR(pg_catalog.=) 'a'))",
							  3, (Oid[]) {OIDOID, OIDOID, OIDOID},
							  (Datum[]) {args[0], ObjectIdGetDatum(owner), ObjectIdGetDatum(view)},
							  NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read pg_trigger");
	if (SPI_processed == 1)
		parts->changes = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * ssp_continuous_view_owner_changed: ALTER VIEW ... OWNER TO of continuous
 * view view, which Postgres carried out on the view alone.  Its parts
 * (its table, which queries of the view read; its query, outbox, buffers
 * and the outbox's trigger function) and a replacement still catching up
 * go to the new owner too, and its workers start again, as that owner (a
 * new generation, which fences what ran as the old one).
 */
void
ssp_continuous_view_owner_changed(Oid view, Oid owner_before)
{
	Oid			owner = ssp_rel_owner(view);
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(view)};
	Parts		parts;
	List	   *pending = NIL;
	ListCell   *lc;
	uint64		i;
	int			level = ssp_pin_search_path();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	read_parts(view, owner_before, &parts);
	foreach(lc, parts.rels)
		if (ssp_rel_owner(lfirst_oid(lc)) != owner)
			ATExecChangeOwner(lfirst_oid(lc), owner, true, AccessExclusiveLock);
	if (OidIsValid(parts.changes))
		ssp_spi_exec(psprintf("ALTER FUNCTION %s() OWNER TO %s",
							  quote_qualified_identifier(get_namespace_name(get_func_namespace(parts.changes)),
														 get_func_name(parts.changes)),
							  quote_identifier(GetUserNameFromId(owner, false))));
	if (ssp_spi_catalog("UPDATE ssp.continuous_views SET generation = generation + 1 "
							  "WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	/*
	 * its replacements still catching up: those CREATE OR REPLACE made (it
	 * tied each to the view), or of the view's owner before; a view of
	 * another role's whose row names this one is no replacement of it
	 */
	if (ssp_spi_catalog("SELECT c.view::oid FROM ssp.continuous_views c "
							  "WHERE c.replaces OPERATOR(pg_catalog.=) $1::regclass "
							  "AND (EXISTS (SELECT FROM pg_catalog.pg_depend d "
							  "WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND d.objid OPERATOR(pg_catalog.=) c.view::oid AND d.refobjid OPERATOR(pg_catalog.=) $1 "
							  "AND d.deptype OPERATOR(pg_catalog.=) 'a') "
							  "OR (SELECT r.relowner FROM pg_catalog.pg_class r "
							  "WHERE r.oid OPERATOR(pg_catalog.=) c.view::oid) OPERATOR(pg_catalog.=) $2)",
							  2, (Oid[]) {OIDOID, OIDOID}, (Datum[]) {args[0], ObjectIdGetDatum(owner_before)},
							  NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		pending = lappend_oid(pending, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																	  SPI_tuptable->tupdesc, 1, &isnull)));
	}
	/* this function again, for each, through the utility hook */
	foreach(lc, pending)
		if (ssp_rel_owner(lfirst_oid(lc)) != owner)
			ssp_spi_exec(psprintf("ALTER VIEW %s OWNER TO %s",
								  quote_qualified_identifier(get_namespace_name(get_rel_namespace(lfirst_oid(lc))),
															 get_rel_name(lfirst_oid(lc))),
								  quote_identifier(GetUserNameFromId(owner, false))));
	SPI_finish();
	AtEOXact_GUC(true, level);
	ssp_wake_scheduler_at_commit();
}

/*
 * ssp_continuous_views_reassigned: after REASSIGN OWNED ... TO owner, which
 * changed the owner of views and their parts alike: the workers of the
 * continuous views owner now has start again, as owner (those it had
 * before too, which costs a restart each).
 */
void
ssp_continuous_views_reassigned(Oid owner)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(owner)};
	int			level;

	if (!OidIsValid(get_extension_oid("ssp", true)))
		return;
	level = ssp_pin_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("UPDATE ssp.continuous_views c SET generation = c.generation + 1 "
							  "FROM pg_catalog.pg_class r WHERE r.oid = c.view AND r.relowner = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	if (SPI_processed > 0)
		ssp_wake_scheduler_at_commit();
	SPI_finish();
	AtEOXact_GUC(true, level);
}

/* oid_array: an oid[] of a list */
static Datum
oid_array(List *oids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	ListCell   *lc;

	foreach(lc, oids)
		elems[foreach_current_index(lc)] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(elems, list_length(oids), OIDOID, sizeof(Oid),
										   true, TYPALIGN_INT));
}

/* move_parts: make a view's parts (its relations and function) parts of another */
static void
move_parts(Parts *parts, Oid to)
{
	Oid			argtypes[4] = {OIDOID, OIDOID, OIDARRAYOID, OIDOID};
	Datum		args[4];
	char		nulls[4] = "    ";

	args[0] = ObjectIdGetDatum(parts->view);
	args[1] = ObjectIdGetDatum(to);
	args[2] = oid_array(parts->rels);
	args[3] = ObjectIdGetDatum(parts->changes);
	if (ssp_spi_catalog("UPDATE pg_catalog.pg_depend SET refobjid = $2 "
							  "WHERE refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND refobjid = $1 "
							  "AND deptype IN ('i', 'a') AND ((classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND objid = ANY ($3)) OR (classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND objid = $4))",
							  4, argtypes, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not move the parts of a continuous view");
}

/*
 * rename_part: give a part of the view shadowname the name it would have
 * as name's, in the part's schema (where the new definition was made:
 * the view may have moved since)
 */
static void
rename_part(Oid relid, const char *shadowname, const char *name)
{
	Oid			nspid = get_rel_namespace(relid);
	char	   *relname = get_rel_name(relid);
	size_t		len = strlen(shadowname);
	char	   *newname;
	char		relkind = get_rel_relkind(relid);

	if (relname == NULL || strncmp(relname, shadowname, len) != 0 || relname[len] != '_')
		return;					/* named otherwise (clipped): left as it is */
	newname = ChooseRelationName(name, NULL, relname + len + 1, nspid, false);
	ssp_spi_exec(psprintf("ALTER %s %s RENAME TO %s",
						  relkind == RELKIND_VIEW ? "VIEW" : "TABLE",
						  quote_qualified_identifier(get_namespace_name(nspid), relname),
						  quote_identifier(newname)));
}

/*
 * ssp_replace_swap: the new definition shadow has caught up: make it the
 * view's, in the caller's transaction.  False, doing nothing, when either
 * view is locked by someone else (a batch, a user's query: the scheduler
 * tries again), or when the new definition has not yet applied every
 * message the old one has (readers would see the view go back).  Runs as
 * a superuser (the scheduler).
 */
bool
ssp_replace_swap(Oid shadow, Oid view)
{
	Oid			nspid = get_rel_namespace(view);
	char	   *nspname = get_namespace_name(nspid);
	char	   *name = get_rel_name(view);
	char	   *shadowname = get_rel_name(shadow);
	char	   *shadownsp = get_namespace_name(get_rel_namespace(shadow));
	Parts		old,
				new;
	Oid			argtypes[3] = {OIDOID, OIDOID, INT4OID};
	Datum		args[3];
	char	   *def;
	bool		isnull;
	ListCell   *lc;
	int			save_nestlevel;

	if (name == NULL || shadowname == NULL || shadownsp == NULL)
		return false;
	if (!ConditionalLockRelationOid(view, AccessExclusiveLock))
		return false;
	if (!ConditionalLockRelationOid(shadow, AccessExclusiveLock))
		return false;

	/*
	 * CREATE OR REPLACE VIEW gives the new definition the view's owner, and
	 * the two change owner together.  The row that names the view it
	 * replaces is its owner's to write: one that names another role's
	 * view would hand that view, as a superuser, to the row's owner.
	 */
	if (ssp_rel_owner(shadow) != ssp_rel_owner(view))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("continuous view \"%s\" does not have the owner of the view it replaces, \"%s\"",
						shadowname, name)));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	args[0] = ObjectIdGetDatum(view);
	args[1] = ObjectIdGetDatum(shadow);
	/*
	 * behind the old definition on some partition: not yet.  No row is
	 * offset 0: a partition that has had no message has a row only in
	 * some views (the old one's 0 kept the pair apart for good)
	 */
	if (ssp_spi_catalog("SELECT 1 FROM ssp.offsets o LEFT JOIN ssp.offsets n "
							  "ON n.view = $2::regclass AND n.topic = o.topic AND n.partition = o.partition "
							  "WHERE o.view = $1::regclass AND COALESCE(n.next_offset, 0) < o.next_offset",
							  2, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.offsets");
	if (SPI_processed > 0)
	{
		SPI_finish();
		return false;
	}
	read_parts(view, ssp_rel_owner(view), &old);
	read_parts(shadow, ssp_rel_owner(view), &new);

	/* the parts change hands; the view reads what its new query reads */
	move_parts(&old, shadow);
	move_parts(&new, view);
	if (ssp_spi_catalog("DELETE FROM pg_catalog.pg_depend WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND objid = $1 AND refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND deptype = 'n'",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
		ssp_spi_catalog("UPDATE pg_catalog.pg_depend SET objid = $1 WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND objid = $2 AND refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND deptype = 'n' "
							  "AND refobjid <> $1",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not move the dependencies of continuous view \"%s\"", name);
	CommandCounterIncrement();

	/*
	 * The old definition's catalog row, offsets and dead letters go; first,
	 * as utility.c keeps a continuous view from being replaced as a plain one.
	 */
	args[2] = Int32GetDatum(Max(old.generation, new.generation) + 1);
	if (ssp_spi_catalog("DELETE FROM ssp.continuous_views WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
		ssp_spi_catalog("DELETE FROM ssp.offsets WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
		ssp_spi_catalog("DELETE FROM ssp.dead_letters WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "ssp: could not delete the catalog rows of continuous view \"%s\"", name);

	/* the view shows the new definition's table */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (ssp_spi_catalog("SELECT pg_catalog.pg_get_viewdef($2)", 2, argtypes, args, NULL,
							  false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "ssp: could not read the definition of \"%s\"", shadowname);
	def = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	ssp_spi_exec(psprintf("CREATE OR REPLACE VIEW %s AS %s",
						  quote_qualified_identifier(nspname, name), def));
	AtEOXact_GUC(true, save_nestlevel);

	/* the new definition's become the view's */
	if (ssp_spi_catalog("UPDATE ssp.continuous_views SET view = $1::regclass, replaces = NULL, "
							  "generation = $3 WHERE view = $2::regclass",
							  3, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE ||
		ssp_spi_catalog("UPDATE ssp.offsets SET view = $1::regclass WHERE view = $2::regclass",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE ||
		ssp_spi_catalog("UPDATE ssp.dead_letters SET view = $1::regclass WHERE view = $2::regclass",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not move the catalog rows of continuous view \"%s\"", name);
	ssp_wake_scheduler_at_commit();

	/* the old definition goes, with its parts */
	ssp_spi_exec(psprintf("DROP VIEW %s", quote_qualified_identifier(shadownsp, shadowname)));
	CommandCounterIncrement();
	/* and the new one's parts take the old names */
	foreach(lc, new.rels)
		rename_part(lfirst_oid(lc), shadowname, name);
	if (OidIsValid(new.changes))
	{
		char	   *fname = get_func_name(new.changes);
		Oid			fnsp = get_func_namespace(new.changes);
		size_t		len = strlen(shadowname);

		if (fname && strncmp(fname, shadowname, len) == 0 && fname[len] == '_')
			ssp_spi_exec(psprintf("ALTER FUNCTION %s() RENAME TO %s",
								  quote_qualified_identifier(get_namespace_name(fnsp), fname),
								  quote_identifier(ssp_choose_function_name(name, fname + len + 1, fnsp))));
	}
	SPI_finish();
	ereport(LOG,
			(errmsg("ssp: continuous view \"%s\" now shows its new definition", name)));
	return true;
}
