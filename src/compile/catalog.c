/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reading and writing ssp's catalog tables (ssp.continuous_views,
 *	  ssp.offsets) for backends and workers.
 *
 * All functions need a transaction and use SPI, connecting themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "rewrite/rewriteSupport.h"
#include "utils/resowner.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "compile/build.h"
#include "compile/view.h"
#include "runtime/batch.h"

/* ssp_parse_on_error: the value of ssp.on_error; errors if unrecognized. */
SspOnError
ssp_parse_on_error(const char *value)
{
	if (strcmp(value, "dead_letter") == 0)
		return SSP_ON_ERROR_DEAD_LETTER;
	if (strcmp(value, "skip") == 0)
		return SSP_ON_ERROR_SKIP;
	if (strcmp(value, "stop") == 0)
		return SSP_ON_ERROR_STOP;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized value \"%s\" for ssp.on_error", value),
			 errhint("Valid values are dead_letter, skip and stop.")));
	return SSP_ON_ERROR_DEAD_LETTER;	/* keep compiler quiet */
}

/* ssp_check_start: error unless a start is earliest, latest or a timestamp. */
void
ssp_check_start(const char *start)
{
	if (strcmp(start, "earliest") != 0 && strcmp(start, "latest") != 0)
		(void) DirectFunctionCall3(timestamptz_in, CStringGetDatum(start),
								   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* text_list: a text[] as a List of strings */
static List *
text_list(Datum array, bool isnull)
{
	List	   *result = NIL;
	Datum	   *elems;
	int			n;
	int			i;

	if (isnull)
		return NIL;
	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
	for (i = 0; i < n; i++)
		result = lappend(result, TextDatumGetCString(elems[i]));
	return result;
}

/*
 * The columns ssp_view_load reads, in the order of its SELECT: named, so
 * that a column added to ssp.continuous_views by an upgrade moves nothing.
 */
enum
{
	CV_MREL = 1,
	CV_STREAMS,
	CV_TOPICS,
	CV_APPLY_SQL,
	CV_COMMIT_INTERVAL_MS,
	CV_BATCH_SIZE,
	CV_ON_ERROR,
	CV_PAUSED,
	CV_GENERATION,
	CV_LATE_SQL,
	CV_RETENTION_SQL,
	CV_GRACE,
	CV_IDLE_MS,
	CV_WATERMARK,
	CV_COLUMNS,
	CV_BUFFERS,
	CV_PARALLELISM,
	CV_OUTPUT_TOPIC,
	CV_OUTBOX,
	CV_OUTBOX_FINAL_SQL,
	CV_QUERY,
	CV_NAMES,
	CV_OPTIONS,
	CV_CHANGES,					/* the outbox's trigger function, from pg_trigger */
	CV_SHARD_STATUS,
	CV_SHARD_VIEW
};

/*
 * ssp_extension_version: the version of ssp installed in this database
 * (palloc'd), or NULL if none is.
 */
char *
ssp_extension_version(void)
{
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("ssp"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * ssp_check_extension_version: error unless the ssp installed in this
 * database (if any) is the version of this library: between installing a
 * new version's files (and restarting) and ALTER EXTENSION ssp UPDATE, the
 * catalog is the old version's, and nothing reads or writes it.
 */
void
ssp_check_extension_version(void)
{
	char	   *version = ssp_extension_version();

	if (version != NULL && strcmp(version, SSP_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the ssp library is version %s, but the extension in this database is version %s",
						SSP_VERSION, version),
				 errhint("Run ALTER EXTENSION ssp UPDATE in this database (or install ssp %s and restart the server).",
						 version)));
}

/* invalid_row: the error of a catalog row CREATE VIEW could not have written */
static void
invalid_row(SspView *v, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("continuous view \"%s\" has an invalid row in ssp.continuous_views", v->name),
			 errdetail("%s", detail),
			 errhint("Restore the row as it was, or drop the view and create it again.")));
}

/*
 * check_part: relation rel, named by v's row as one of its parts (what,
 * "table", "query" ...), must be the view owner's: the parts follow the
 * view's owner, are made part of it (dropped with it) by a repair that a
 * superuser runs, and change owner with it without a privilege check.
 */
static void
check_part(SspView *v, Oid owner, Oid rel, const char *what)
{
	HeapTuple	tup;
	Oid			relowner;

	if (!OidIsValid(rel))
		return;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
	if (!HeapTupleIsValid(tup))
		invalid_row(v, psprintf("Its %s, relation %u, does not exist.", what, rel));
	relowner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	if (relowner != owner)
		invalid_row(v, psprintf("Its %s, \"%s\", is not owned by the view's owner.",
								what, get_rel_name(rel)));
}

/*
 * check_row: a view's owner may write its catalog row (a restore does), so
 * the numbers the worker sizes its arrays and loops by are checked against
 * what CREATE VIEW accepts, and the relations it names as the view's parts
 * must be the view owner's: a row outside them fails the view, with a
 * message, rather than the process, and acts on no one else's relation.
 */
static void
check_row(SspView *v)
{
	const char *what = NULL;
	int64		value = 0;
	Oid			owner = ssp_rel_owner(v->view);
	ListCell   *lc;
	int			i;

	/* parallelism 0: a view over shards, which no worker runs */
	if (v->parallelism < 0 || v->parallelism > SSP_MAX_PARALLELISM)
		what = "parallelism", value = v->parallelism;
	else if (v->parallelism > 0 && (v->nsources < 1 || v->nsources > SSP_MAX_STREAMS))
		what = "streams", value = v->nsources;
	else if (v->batch_size < 1 || v->batch_size > SSP_MAX_BATCH_SIZE)
		what = "batch_size", value = v->batch_size;
	else if (v->commit_interval_ms < 1 || v->commit_interval_ms > SSP_MAX_COMMIT_INTERVAL_MS)
		what = "commit_interval_ms", value = v->commit_interval_ms;
	if (what)
		invalid_row(v, psprintf("Its %s is %lld, which CREATE VIEW does not accept.",
								what, (long long) value));

	check_part(v, owner, v->mrel, "table");
	check_part(v, owner, v->query, "query");
	check_part(v, owner, v->outbox, "outbox");
	check_part(v, owner, v->shard_status, "table of shards");
	foreach(lc, v->buffers)
		check_part(v, owner, lfirst_oid(lc), "buffer");
	if (OidIsValid(v->changes))
	{
		HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(v->changes));
		Oid			proowner;

		if (!HeapTupleIsValid(tup))
			invalid_row(v, psprintf("Its trigger function %u does not exist.", v->changes));
		proowner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
		ReleaseSysCache(tup);
		if (proowner != owner)
			invalid_row(v, psprintf("Its trigger function %s is not owned by the view's owner.",
									format_procedure(v->changes)));
	}
	/* the view depends on its streams: foreign tables, as CREATE VIEW took */
	for (i = 0; i < v->nsources; i++)
		if (get_rel_relkind(v->streams[i]) != RELKIND_FOREIGN_TABLE)
			invalid_row(v, psprintf("Its stream %u is not a foreign table.", v->streams[i]));
}

/*
 * ssp_view_load: the catalog row of a continuous view, allocated in the
 * caller's memory context; NULL if there is none and missing_ok.
 */
SspView *
ssp_view_load(Oid view, bool missing_ok)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(view)};
	SspView    *v = NULL;
	bool		isnull;

	ssp_check_extension_version();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("SELECT mrel::oid, streams::oid[], topics, apply_sql, commit_interval_ms, "
							  "batch_size, on_error, paused, generation, late_sql, retention_sql, grace, "
							  "(extract(epoch FROM idle_timeout) * 1000)::bigint, watermark, columns, buffers::oid[], parallelism, "
							  "output_topic, outbox::oid, outbox_final_sql, query::oid, names, options, "
							  "(SELECT t.tgfoid FROM pg_catalog.pg_trigger t "
							  " WHERE t.tgrelid OPERATOR(pg_catalog.=) mrel AND t.tgname OPERATOR(pg_catalog.=) 'ssp_changes_insert'), "
							  "shard_status::oid, shard_view "
							  "FROM ssp.continuous_views WHERE view OPERATOR(pg_catalog.=) $1::oid::regclass",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		v = palloc0(sizeof(SspView));
		v->view = view;
		v->name = get_rel_name(view);
		v->mrel = DatumGetObjectId(SPI_getbinval(tup, desc, CV_MREL, &isnull));
		/* a view made before names were chosen by ssp may have none */
		if (!OidIsValid(v->mrel) || get_rel_name(v->mrel) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("continuous view \"%s\" has lost its table", v->name),
					 errhint("Drop the view and create it again.")));
		{
			Datum	   *elems;
			int			n;
			int			i;

			deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, CV_STREAMS, &isnull)),
							  OIDOID, 4, true, TYPALIGN_INT, &elems, NULL, &n);
			v->nsources = n;
			v->streams = palloc(sizeof(Oid) * n);
			for (i = 0; i < n; i++)
				v->streams[i] = DatumGetObjectId(elems[i]);
			deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, CV_TOPICS, &isnull)),
							  TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
			if (n != v->nsources)
				elog(ERROR, "ssp: continuous view %u has %d streams but %d topics", view, v->nsources, n);
			v->topics = palloc(sizeof(char *) * n);
			for (i = 0; i < n; i++)
				v->topics[i] = TextDatumGetCString(elems[i]);
		}
		v->apply_sql = TextDatumGetCString(SPI_getbinval(tup, desc, CV_APPLY_SQL, &isnull));
		v->commit_interval_ms = DatumGetInt32(SPI_getbinval(tup, desc, CV_COMMIT_INTERVAL_MS, &isnull));
		v->batch_size = DatumGetInt32(SPI_getbinval(tup, desc, CV_BATCH_SIZE, &isnull));
		v->parallelism = DatumGetInt32(SPI_getbinval(tup, desc, CV_PARALLELISM, &isnull));
		v->output_topic = SPI_getvalue(tup, desc, CV_OUTPUT_TOPIC);
		v->outbox = DatumGetObjectId(SPI_getbinval(tup, desc, CV_OUTBOX, &isnull));
		if (isnull)
			v->outbox = InvalidOid;
		v->outbox_final_sql = SPI_getvalue(tup, desc, CV_OUTBOX_FINAL_SQL);
		v->query = DatumGetObjectId(SPI_getbinval(tup, desc, CV_QUERY, &isnull));
		if (isnull)
			v->query = InvalidOid;
		v->names = text_list(SPI_getbinval(tup, desc, CV_NAMES, &isnull), isnull);
		v->options = text_list(SPI_getbinval(tup, desc, CV_OPTIONS, &isnull), isnull);
		v->shard_count = 0;
		{
			ListCell   *lc;

			foreach(lc, v->options)
			{
				if (strncmp(lfirst(lc), "shard=", 6) == 0)
					ssp_parse_shard((char *) lfirst(lc) + 6, &v->shard_index, &v->shard_count);
				if (strncmp(lfirst(lc), "retention=", 10) == 0)
					v->retention = DatumGetIntervalP(DirectFunctionCall3(interval_in,
																		 CStringGetDatum((char *) lfirst(lc) + 10),
																		 ObjectIdGetDatum(InvalidOid),
																		 Int32GetDatum(-1)));
			}
		}
		v->changes = DatumGetObjectId(SPI_getbinval(tup, desc, CV_CHANGES, &isnull));
		if (isnull)
			v->changes = InvalidOid;
		v->shard_status = DatumGetObjectId(SPI_getbinval(tup, desc, CV_SHARD_STATUS, &isnull));
		if (isnull)
			v->shard_status = InvalidOid;
		v->shard_view = SPI_getvalue(tup, desc, CV_SHARD_VIEW);
		v->on_error = ssp_parse_on_error(TextDatumGetCString(SPI_getbinval(tup, desc, CV_ON_ERROR, &isnull)));
		v->paused = DatumGetBool(SPI_getbinval(tup, desc, CV_PAUSED, &isnull));
		v->generation = DatumGetInt32(SPI_getbinval(tup, desc, CV_GENERATION, &isnull));
		v->late_sql = SPI_getvalue(tup, desc, CV_LATE_SQL);
		v->retention_sql = SPI_getvalue(tup, desc, CV_RETENTION_SQL);
		v->grace = DatumGetIntervalP(datumCopy(SPI_getbinval(tup, desc, CV_GRACE, &isnull), false, sizeof(Interval)));
		v->idle_ms = DatumGetInt64(SPI_getbinval(tup, desc, CV_IDLE_MS, &isnull));
		v->watermark = DatumGetTimestampTz(SPI_getbinval(tup, desc, CV_WATERMARK, &isnull));
		if (isnull)
			v->watermark = DT_NOBEGIN;
		{
			Datum		d = SPI_getbinval(tup, desc, CV_COLUMNS, &isnull);

			if (!isnull)
			{
				Datum	   *elems;
				int			nelems;
				int			i;

				v->some_columns = true;
				deconstruct_array(DatumGetArrayTypeP(d), INT2OID, 2, true, TYPALIGN_SHORT,
								  &elems, NULL, &nelems);
				for (i = 0; i < nelems; i++)
					v->columns = lappend_int(v->columns, DatumGetInt16(elems[i]));
			}
			d = SPI_getbinval(tup, desc, CV_BUFFERS, &isnull);
			if (!isnull)
			{
				Datum	   *elems;
				int			nelems;
				int			i;

				deconstruct_array(DatumGetArrayTypeP(d), OIDOID, 4, true, TYPALIGN_INT,
								  &elems, NULL, &nelems);
				for (i = 0; i < nelems; i++)
					v->buffers = lappend_oid(v->buffers, DatumGetObjectId(elems[i]));
			}
		}
		MemoryContextSwitchTo(old);
		check_row(v);
	}
	SPI_finish();
	/* a row the role may not read (row security): not a lie that there is none */
	if (v == NULL && !missing_ok &&
		pg_class_aclcheck(view, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		ssp_is_continuous_view(view))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for continuous view \"%s\"", get_rel_name(view)),
				 errdetail("Only roles that may read a continuous view may see or operate it.")));
	if (v == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", get_rel_name(view) ? get_rel_name(view) : "?")));
	return v;
}

/*
 * store_start: where a new (or reset) view starts reading one topic:
 * nothing stored means the oldest retained message; 'latest' and a
 * timestamp store each partition's offset now, as the current user.
 */
static void
store_start(Oid view, Oid stream, const char *topic, const char *start)
{
	SspStream  *s;
	SspKafka   *kafka;
	int			nparts;
	int64	   *low;
	int64	   *high;
	int64	   *times = NULL;
	int			p;
	int64		ts_ms = -1;
	MemoryContext cxt;
	MemoryContext old;

	if (strcmp(start, "latest") != 0)
		ts_ms = ssp_timestamptz_to_ms(DirectFunctionCall3(timestamptz_in, CStringGetDatum(start),
														  ObjectIdGetDatum(InvalidOid),
														  Int32GetDatum(-1)));

	cxt = AllocSetContextCreate(CurrentMemoryContext, "ssp start offsets", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	s = ssp_stream_open(stream);
	kafka = ssp_kafka_consumer(s->serverid, GetUserId(), topic, NULL);
	nparts = ssp_kafka_partition_count(kafka);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	low = palloc(sizeof(int64) * Max(nparts, 1));
	high = palloc(sizeof(int64) * Max(nparts, 1));
	ssp_kafka_watermarks_all(kafka, nparts, low, high);
	if (ts_ms >= 0)
	{
		times = palloc(sizeof(int64) * Max(nparts, 1));
		ssp_kafka_offsets_for_time(kafka, nparts, ts_ms, times, true);
	}
	for (p = 0; p < nparts; p++)
	{
		int64		offset;
		Oid			argtypes[4] = {OIDOID, TEXTOID, INT4OID, INT8OID};
		Datum		args[4];

		offset = high[p];
		/* -1: no message that late, or a broker that does not say */
		if (ts_ms >= 0)
			offset = times[p] >= 0 ? Max(times[p], low[p]) : high[p];
		args[0] = ObjectIdGetDatum(view);
		args[1] = CStringGetTextDatum(topic);
		args[2] = Int32GetDatum(p);
		args[3] = Int64GetDatum(offset);
		if (ssp_spi_catalog("INSERT INTO ssp.offsets (view, topic, partition, next_offset) "
								  "VALUES ($1::regclass, $2, $3, $4)",
								  4, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "ssp: could not store offsets");
	}
	SPI_finish();
	ssp_kafka_close(kafka);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* ssp_store_start_offsets: where a new (or reset) view starts, per topic. */
void
ssp_store_start_offsets(Oid view, int nsources, const Oid *streams,
						char *const *topics, const char *start)
{
	int			i;

	if (strcmp(start, "earliest") == 0)
		return;
	for (i = 0; i < nsources; i++)
		store_start(view, streams[i], topics[i], start);
}

/* has_index: has rel had an index (pg_class.relhasindex)? */
static bool
has_index(Oid rel)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_class) GETSTRUCT(tup))->relhasindex;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * ssp_view_check_whole: refuse to apply a view whose restore has not
 * finished (has_offsets: the view has a row in ssp.offsets for a topic it
 * reads).  A restore from a plain dump commits each table's rows on its
 * own, while the scheduler already runs: ssp.continuous_views before
 * ssp.offsets, a view's tables before or after both, as their schemas
 * sort, and every index at the end.  A view started in between read from
 * ssp.start again into its restored rows (every message counted twice),
 * or merged new groups into its table before the table's rows came, and
 * had two rows for them.  So: a view's table that CREATE VIEW indexes (an
 * aggregating, keyed or session view's), a join's buffers and an outbox
 * must have their indexes, and a view that has counted messages, or
 * starts anywhere but at the oldest message, must have its offsets.  A
 * restore of the data alone, into tables a restore of the schema made
 * with their indexes, loads the catalog and the offsets before those
 * tables too: a view just restored (restored: its tie to its table was
 * missing) that has counted messages into a table CREATE VIEW indexes
 * must find rows there.  Needs ssp_view_generate first.  The error fails
 * the view for now; the scheduler tries it again.
 */
void
ssp_view_check_whole(SspView *v, bool has_offsets, bool restored)
{
	Oid			missing = InvalidOid;
	ListCell   *lc;
	int64		counted = 0;
	char	   *start = NULL;
	bool		empty = false;

	if (!has_offsets || (restored && v->mrel_indexed))
	{
		Oid			argtype = OIDOID;
		Datum		arg = ObjectIdGetDatum(v->view);

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "ssp: SPI_connect failed");
		if (SPI_execute_with_args("SELECT processed + dead_letters, start FROM ssp.continuous_views "
								  "WHERE view OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
								  1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "ssp: could not read ssp.continuous_views");
		if (SPI_processed == 1)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
				counted = DatumGetInt64(d);
			start = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
			if (start)
				start = MemoryContextStrdup(TopTransactionContext, start);
		}
		if (restored && v->mrel_indexed && counted > 0)
		{
			if (SPI_execute(psprintf("SELECT FROM %s LIMIT 1",
									 quote_qualified_identifier(get_namespace_name(get_rel_namespace(v->mrel)),
																get_rel_name(v->mrel))),
							true, 1) != SPI_OK_SELECT)
				elog(ERROR, "ssp: could not read the table of view \"%s\"", v->name);
			empty = SPI_processed == 0;
		}
		SPI_finish();
	}
	if (!has_offsets)
	{
		if (counted > 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("continuous view \"%s\" has counted %lld messages but has no offsets in ssp.offsets",
							v->name, (long long) counted),
					 errdetail("A restore loads ssp.offsets after ssp.continuous_views; reading from ssp.start again would count those messages twice."),
					 errhint("The view goes on by itself once its offsets are restored; if they are lost, ssp.reset rebuilds it from its stream.")));
		/* CREATE VIEW and ssp.reset store where any other start is */
		if (start && strcmp(start, "earliest") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("continuous view \"%s\" starts at ssp.start = '%s' but has no offsets in ssp.offsets",
							v->name, start),
					 errdetail("A restore loads ssp.offsets after ssp.continuous_views; reading from the oldest message would count what the view never had."),
					 errhint("The view goes on by itself once its offsets are restored; if they are lost, ssp.reset sets where it starts again.")));
	}
	/* as the view's SQL, built again, says (ssp_view_generate) */
	if (v->mrel_indexed && !has_index(v->mrel))
		missing = v->mrel;
	foreach(lc, v->buffers)
		if (!OidIsValid(missing) && !has_index(lfirst_oid(lc)))
			missing = lfirst_oid(lc);
	if (!OidIsValid(missing) && OidIsValid(v->outbox) && !has_index(v->outbox))
		missing = v->outbox;
	if (OidIsValid(missing))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" is not whole: its table \"%s\" has no index",
						v->name, get_rel_name(missing)),
				 errdetail("A restore makes the indexes after the rows of every table; rows applied before the table's own were counted twice."),
				 errhint("The view goes on by itself once the restore has made the indexes; ssp.reset rebuilds it from its stream.")));
	if (empty)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" is not whole: it has counted %lld messages but its table \"%s\" has no rows",
						v->name, (long long) counted, get_rel_name(v->mrel)),
				 errdetail("A restore of data alone loads ssp.continuous_views and ssp.offsets before the tables of views in schemas that sort after \"ssp\"; groups merged into the empty table would make the restore of its rows fail, and the view lose what it had counted."),
				 errhint("The view goes on by itself once the restore has loaded the table's rows; if it has none to load (the view left out every message, or deleted every group), ssp.reset rebuilds it from its stream.")));
}

/*
 * ssp_view_repair_dependencies: after pg_dump and restore (or pg_upgrade)
 * the view and its materialisation table, query, buffers, outbox and the
 * outbox's trigger function are plain objects again: make
 * them part of the view and the view depend on its streams, if they are
 * not.  (The query, NAME_query, depends on what it reads as any view
 * does.)  Needs a transaction.
 */
bool
ssp_view_repair_dependencies(SspView *v)
{
	ObjectAddress viewaddr,
				mreladdr,
				streamaddr;
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(v->mrel), ObjectIdGetDatum(v->view)};
	bool		repaired;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/* one at a time: a view's parallel workers start together */
	if (ssp_spi_catalog("SELECT 1 FROM ssp.continuous_views WHERE view OPERATOR(pg_catalog.=) $2::regclass FOR NO KEY UPDATE",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not lock the view's catalog row");
	if (ssp_spi_catalog("SELECT 1 FROM pg_catalog.pg_depend WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND objid = $1 AND refobjid = $2 AND deptype = 'i'",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read pg_depend");
	repaired = SPI_processed == 0;
	if (repaired)
	{
		ListCell   *lc;
		int			i;

		ObjectAddressSet(viewaddr, RelationRelationId, v->view);
		ObjectAddressSet(mreladdr, RelationRelationId, v->mrel);
		recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
		if (OidIsValid(v->query))
		{
			ObjectAddressSet(mreladdr, RelationRelationId, v->query);
			recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
		}
		foreach(lc, v->buffers)
		{
			ObjectAddressSet(mreladdr, RelationRelationId, lfirst_oid(lc));
			recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
		}
		if (OidIsValid(v->outbox))
		{
			ObjectAddressSet(mreladdr, RelationRelationId, v->outbox);
			recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_INTERNAL);
		}
		if (OidIsValid(v->changes))
		{
			/* AUTO, as record_view makes it (view.c) */
			ObjectAddressSet(mreladdr, ProcedureRelationId, v->changes);
			recordDependencyOn(&mreladdr, &viewaddr, DEPENDENCY_AUTO);
		}
		for (i = 0; i < v->nsources; i++)
		{
			/* as CREATE VIEW asks, for a view to depend on what it reads */
			if (!ssp_may_read_stream(v, v->streams[i], ssp_rel_owner(v->view)))
				aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FOREIGN_TABLE, get_rel_name(v->streams[i]));
			ObjectAddressSet(streamaddr, RelationRelationId, v->streams[i]);
			recordDependencyOn(&viewaddr, &streamaddr, DEPENDENCY_NORMAL);
		}
		/* a view over shards: its table of them, and the foreign tables */
		if (OidIsValid(v->shard_status))
			ssp_shard_depend(v->view, v->shard_status);
		/*
		 * A join's buffered rows carry the transaction that added them
		 * (join.c); in a restored cluster that number may come again, so
		 * mark them as from no transaction.  (A changelog's versions and
		 * a table of distinct values carry none.)
		 */
		foreach(lc, v->buffers)
		{
			Oid			rel = lfirst_oid(lc);

			if (get_attnum(rel, "_ssp_xact") == InvalidAttrNumber)
				continue;
			if (SPI_execute(psprintf("UPDATE %s SET _ssp_xact = '0' WHERE _ssp_xact OPERATOR(pg_catalog.<>) '0'",
									 quote_qualified_identifier(get_namespace_name(get_rel_namespace(rel)),
																get_rel_name(rel))),
							false, 0) != SPI_OK_UPDATE)
				elog(ERROR, "ssp: could not update the buffers of view \"%s\"", v->name);
		}
		CommandCounterIncrement();
	}
	SPI_finish();
	return repaired;
}

/* ssp_rel_owner: the owner of relation relid */
Oid
ssp_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}
