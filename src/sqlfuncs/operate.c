/*-------------------------------------------------------------------------
 *
 * operate.c
 *	  The SQL functions for operating continuous views: ssp.wait,
 *	  ssp.pause, ssp.resume, ssp.reset, and the shared-memory status behind
 *	  ssp.views.
 *
 * pause, resume and reset change ssp.continuous_views in the caller's
 * transaction; the view's scheduler and worker act once it commits (the
 * worker checks its row, under lock, in every batch).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "runtime/batch.h"
#include "runtime/shmem.h"
#include "compile/view.h"
#include "compile/build.h"

PG_FUNCTION_INFO_V1(ssp_worker_status);
PG_FUNCTION_INFO_V1(ssp_reader_status);
PG_FUNCTION_INFO_V1(ssp_wait);
PG_FUNCTION_INFO_V1(ssp_pause);
PG_FUNCTION_INFO_V1(ssp_resume);
PG_FUNCTION_INFO_V1(ssp_reset);
PG_FUNCTION_INFO_V1(ssp_may_read_messages);

/*
 * may_see_view: may the current user see how the view's workers are doing?
 * As pg_stat_activity does for sessions: if it may read the view, or is a
 * member of pg_read_all_stats.
 */
static bool
may_see_view(Oid view)
{
	bool		missing = false;

	return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ||
		(pg_class_aclcheck_ext(view, GetUserId(), ACL_SELECT, &missing) == ACLCHECK_OK &&
		 !missing);
}

typedef struct ViewGeneration
{
	Oid			view;
	int			generation;
} ViewGeneration;

/*
 * view_generations: the ssp.reset generation of each continuous view of
 * the database that the current user may read in ssp.continuous_views.
 */
static HTAB *
view_generations(void)
{
	HASHCTL		ctl;
	HTAB	   *result;
	uint64		i;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(ViewGeneration);
	ctl.hcxt = CurrentMemoryContext;
	result = hash_create("ssp view generations", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (SPI_execute("SELECT view::oid, generation FROM ssp.continuous_views", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			view = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		ViewGeneration *g = hash_search(result, &view, HASH_ENTER, NULL);

		g->generation = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	return result;
}

/*
 * ssp_worker_status: one row per worker slot of this database; the status,
 * lag, error and rate of the workers of a view that the current user may
 * not see are null.
 */
Datum
ssp_worker_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;
	HTAB	   *generations = view_generations();

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot s;
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};
		ViewGeneration *g;

		LWLockAcquire(ssp_shared->lock, LW_SHARED);
		s = ssp_shared->workers[i];
		LWLockRelease(ssp_shared->lock);
		if (!s.in_use || s.dboid != MyDatabaseId)
			continue;
		values[0] = ObjectIdGetDatum(s.view);
		values[1] = Int32GetDatum(s.pid);
		nulls[1] = s.pid == 0;
		values[5] = Int32GetDatum(s.part);
		if (!may_see_view(s.view))
		{
			nulls[2] = nulls[3] = nulls[4] = nulls[6] = true;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			continue;
		}
		/* reset since its process loaded it: that process stops, a new one starts */
		g = hash_search(generations, &s.view, HASH_FIND, NULL);
		if (g && s.generation != 0 && s.generation != g->generation)
		{
			strlcpy(s.status, "starting", SSP_STATUS_LEN);
			s.lag = -1;
			s.failed = false;
		}
		values[2] = CStringGetTextDatum(s.pid == 0 && s.failed ? "failed" :
										s.status[0] ? s.status : "starting");
		values[3] = Int64GetDatum(s.lag);
		nulls[3] = s.lag < 0;
		values[4] = CStringGetTextDatum(s.last_error);
		nulls[4] = s.last_error[0] == '\0';
		/* no batch since: nothing applied since, as the average counts it */
		values[6] = Float8GetDatum(s.rate *
								   exp(-(double) (GetCurrentTimestamp() - s.rate_at) /
									   USECS_PER_SEC / SSP_RATE_SECONDS));
		nulls[6] = s.pid == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ssp_reader_status: one row per reader of this database (worker.c, One
 * reader per stream); what it reads and how fast are null for a role that
 * is not its views' owner (nor a member of it, nor of pg_read_all_stats).
 */
Datum
ssp_reader_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < ssp_shared->nreaders; i++)
	{
		SspReaderSlot r;
		Datum		values[10];
		bool		nulls[10];
		Datum		streams[SSP_READER_MAX_SOURCES];
		int			j;

		LWLockAcquire(ssp_shared->lock, LW_SHARED);
		r = ssp_shared->readers[i];
		LWLockRelease(ssp_shared->lock);
		if (!r.in_use || r.pid == 0 || r.key.dboid != MyDatabaseId)
			continue;
		memset(nulls, false, sizeof(nulls));
		values[0] = Int32GetDatum(r.pid);
		for (j = 0; j < r.key.nsources; j++)
			streams[j] = ObjectIdGetDatum(r.key.streams[j]);
		values[1] = PointerGetDatum(construct_array(streams, r.key.nsources, REGCLASSOID,
													sizeof(Oid), true, TYPALIGN_INT));
		values[2] = Int32GetDatum(r.key.part);
		values[3] = Int32GetDatum(r.key.parallelism);
		values[4] = Int32GetDatum(r.nviews);
		values[5] = Int32GetDatum(r.npartitions);
		values[6] = Int64GetDatum(r.position);
		values[7] = Int64GetDatum(r.lag);
		nulls[7] = r.lag < 0;
		/* no batch since: nothing read since, as the average counts it */
		values[8] = Float8GetDatum(r.rate *
								   exp(-(double) (GetCurrentTimestamp() - r.rate_at) /
									   USECS_PER_SEC / SSP_RATE_SECONDS));
		values[9] = Int64GetDatum(r.memory);
		nulls[9] = r.memory < 0;
		if (!has_privs_of_role(GetUserId(), r.key.owner) &&
			!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
			for (j = 1; j < 10; j++)
				nulls[j] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static void
check_owner(Oid view)
{
	if (!pg_class_ownercheck(view, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of continuous view \"%s\"", get_rel_name(view))));
}

/* check_reads: a view over shards reads nothing itself (ssp.shards) */
static void
check_reads(SspView *v, const char *func)
{
	if (v->parallelism == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" is a view over shards", v->name),
				 errdetail("Its shards' servers read the stream; it reads their tables."),
				 errhint("Call ssp.%s on the view on each shard's server.", func)));
}

static void
set_paused(Oid view, bool paused)
{
	Oid			argtypes[2] = {OIDOID, BOOLOID};
	Datum		args[2] = {ObjectIdGetDatum(view), BoolGetDatum(paused)};

	check_reads(ssp_view_load(view, false), paused ? "pause" : "resume");
	check_owner(view);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/* a shard that handed its partitions over waits for its new shard */
	if (!paused)
	{
		bool		isnull;

		if (SPI_execute_with_args("SELECT resharding FROM ssp.continuous_views WHERE view = $1::regclass",
								  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "ssp: could not read ssp.continuous_views");
		if (SPI_processed > 0 &&
			DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("continuous view \"%s\" has handed its partitions over", get_rel_name(view)),
					 errhint("Give it its new shard with ssp.reshard first.")));
	}
	if (SPI_execute_with_args("UPDATE ssp.continuous_views SET paused = $2 WHERE view = $1::regclass",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	SPI_finish();
	ssp_wake_scheduler_at_commit();
}

/* ssp.pause(view): stop applying; the worker stops after its batch. */
Datum
ssp_pause(PG_FUNCTION_ARGS)
{
	set_paused(PG_GETARG_OID(0), true);
	PG_RETURN_VOID();
}

/* ssp.resume(view): start applying again from the stored offsets. */
Datum
ssp_resume(PG_FUNCTION_ARGS)
{
	set_paused(PG_GETARG_OID(0), false);
	PG_RETURN_VOID();
}

/* empty_table: empty one of the view's tables. */
static void
empty_table(Oid rel)
{
	ssp_spi_exec(psprintf("TRUNCATE %s",
						  quote_qualified_identifier(get_namespace_name(get_rel_namespace(rel)),
													 get_rel_name(rel))));
}

/*
 * ssp.reset(view, start): empty the view (and a join's buffers) and rewind
 * its offsets, in the caller's transaction: rewind and replay.
 */
Datum
ssp_reset(PG_FUNCTION_ARGS)
{
	Oid			view = PG_GETARG_OID(0);
	char	   *start = text_to_cstring(PG_GETARG_TEXT_PP(1));
	SspView    *v = ssp_view_load(view, false);
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2] = {ObjectIdGetDatum(view), CStringGetTextDatum(start)};
	ListCell   *lc;
	char	   *apply = NULL;

	check_reads(v, "reset");
	check_owner(view);
	ssp_check_start(start);
	/* its streams first, as its worker and DROP take them */
	for (int i = 0; i < v->nsources; i++)
		LockRelationOid(v->streams[i], AccessShareLock);
	/* the statement the view's worker runs now (v->apply_sql: at CREATE VIEW) */
	if (ssp_view_one_group(v->mrel, v->nsources))
		apply = ssp_view_build(v)->apply_sql;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/* a batch in flight ends first; the next one fails */
	ssp_wait_for_batches(view);
	if (SPI_execute_with_args("UPDATE ssp.continuous_views SET generation = generation + 1, "
							  "processed = 0, dead_letters = 0, late_events = 0, watermark = NULL, batch_watermark = NULL, "
							  "start = $2, last_commit = NULL "
							  "WHERE view = $1::regclass",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	empty_table(v->mrel);
	foreach(lc, v->buffers)
		empty_table(lfirst_oid(lc));
	ssp_view_seed(v->mrel, v->nsources, v->streams[0], apply);
	if (SPI_execute_with_args("DELETE FROM ssp.offsets WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("DELETE FROM ssp.dead_letters WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "ssp: could not rewind the offsets");
	SPI_finish();
	ssp_store_start_offsets(view, v->nsources, v->streams, v->topics, start);
	ssp_wake_scheduler_at_commit();
	PG_RETURN_VOID();
}

/*
 * reached: has the view consumed each partition (topics[i], parts[i]) up
 * to highs[i]?
 */
static bool
reached(Oid view, Datum topics, Datum parts, Datum highs)
{
	Oid			argtypes[4] = {OIDOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID};
	Datum		args[4] = {ObjectIdGetDatum(view), topics, parts, highs};
	bool		isnull;
	bool		result;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/* not read-only: each look takes a new snapshot, to see new commits */
	if (SPI_execute_with_args("SELECT NOT EXISTS (SELECT FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), "
							  "pg_catalog.unnest($4)) AS t(topic, p, high) "
							  "LEFT JOIN ssp.offsets o ON o.view = $1::regclass AND o.topic = t.topic AND o.partition = t.p "
							  "WHERE COALESCE(o.next_offset, -1) < t.high)",
							  4, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.offsets");
	result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return result;
}

/*
 * topic_ends: where view v's topics end, the partitions that hold messages
 * (topics, parts and their ends, highs); false if the brokers did not say
 * within timeout_ms.  A request waits for the brokers up to
 * ssp.broker_timeout: here up to the timeout, if that is sooner, and its
 * failure then is ssp.wait's false, as its doc says, not an error.  Any
 * other failure is the error it is.
 */
static bool
topic_ends(SspView *v, int64 timeout_ms, ArrayBuildState *topics, ArrayBuildState *parts,
		   ArrayBuildState *highs)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	int			save_timeout = ssp_broker_timeout;
	TimestampTz start = GetCurrentTimestamp();
	volatile bool timed_out = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		ssp_broker_timeout = (int) Max(Min(timeout_ms, (int64) save_timeout), 1);
		for (int i = 0; i < v->nsources; i++)
		{
			SspStream  *s = ssp_stream_open(v->streams[i]);
			SspKafka   *kafka = ssp_kafka_consumer(s->serverid, GetUserId(), v->topics[i], NULL);
			/* a topic not made yet holds nothing to wait for */
			int			nparts = ssp_kafka_partition_count_ext(kafka, true);
			int64	   *low = palloc(sizeof(int64) * Max(nparts, 1));
			int64	   *high = palloc(sizeof(int64) * Max(nparts, 1));

			ssp_kafka_watermarks_all(kafka, nparts, low, high);
			for (int p = 0; p < nparts; p++)
			{
				/* a shard's server reads only the shard's partitions */
				if (!ssp_reads_partition(p, v->shard_index, v->shard_count, 1, 0))
					continue;
				if (high[p] > low[p])
				{
					accumArrayResult(topics, CStringGetTextDatum(v->topics[i]), false, TEXTOID, cxt);
					accumArrayResult(parts, Int32GetDatum(p), false, INT4OID, cxt);
					accumArrayResult(highs, Int64GetDatum(high[p]), false, INT8OID, cxt);
				}
			}
			ssp_kafka_close(kafka);
		}
		ssp_broker_timeout = save_timeout;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		ssp_broker_timeout = save_timeout;
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		/* the brokers did not answer in time (a cancel is no timeout) */
		timed_out = timeout_ms < save_timeout && edata->sqlerrcode != ERRCODE_QUERY_CANCELED &&
			TimestampDifferenceExceeds(start, GetCurrentTimestamp(), (int) Max(timeout_ms - 50, 0));
		if (!timed_out)
			ReThrowError(edata);
	}
	PG_END_TRY();
	return !timed_out;
}

/*
 * ssp.wait(view, timeout): true once the view has applied every message
 * that was in its topics when the call began; false at the timeout.
 * Asks the broker for the high watermarks, as the caller.
 */
Datum
ssp_wait(PG_FUNCTION_ARGS)
{
	Oid			view = PG_GETARG_OID(0);
	Interval   *timeout = PG_GETARG_INTERVAL_P(1);
	/* in double: 1000000 years overflowed int64 to a negative timeout */
	double		ms = ((double) timeout->time + (double) timeout->day * USECS_PER_DAY +
					  (double) timeout->month * 30 * USECS_PER_DAY) / 1000;
	int64		timeout_ms = (int64) Max(Min(ms, (double) PG_INT32_MAX), (double) PG_INT32_MIN);
	SspView    *v = ssp_view_load(view, false);
	ArrayBuildState *topics = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	ArrayBuildState *parts = initArrayResult(INT4OID, CurrentMemoryContext, false);
	ArrayBuildState *highs = initArrayResult(INT8OID, CurrentMemoryContext, false);
	Datum		topicsd,
				partsd,
				highsd;
	TimestampTz start = GetCurrentTimestamp();

	check_reads(v, "wait");
	if (!topic_ends(v, timeout_ms, topics, parts, highs))
		PG_RETURN_BOOL(false);
	topicsd = makeArrayResult(topics, CurrentMemoryContext);
	partsd = makeArrayResult(parts, CurrentMemoryContext);
	highsd = makeArrayResult(highs, CurrentMemoryContext);

	/* what would make the wait endless is checked once, when it would begin */
	if (reached(view, topicsd, partsd, highsd))
		PG_RETURN_BOOL(true);
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ssp.wait cannot wait in a %s transaction",
						IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("View \"%s\" has not applied every message yet, and the transaction's snapshot would never see it do so.",
						   v->name),
				 errhint("Call ssp.wait in a READ COMMITTED transaction.")));
	if (ssp_continuous_view_changed_here(view))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ssp.wait cannot wait for view \"%s\" in a transaction that changed it", v->name),
				 errdetail("This transaction made, reset, resumed, paused or altered the view; its worker goes on only once the transaction ends."),
				 errhint("Commit first, then call ssp.wait.")));
	for (;;)
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), (int) Min(timeout_ms, INT_MAX)))
			PG_RETURN_BOOL(false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 20, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (reached(view, topicsd, partsd, highsd))
			PG_RETURN_BOOL(true);
	}
}

/* the answers of ssp.may_read_messages in a query, for the last views asked of */
#define MAY_READ_CACHED 16
typedef struct MayReadCache
{
	Oid			role;
	int			filled;			/* entries filled */
	int			next;			/* the entry the next answer takes */
	Oid			view[MAY_READ_CACHED];
	bool		result[MAY_READ_CACHED];
} MayReadCache;

/*
 * may_read_messages: may role read the messages of view's dead letters?
 * They hold whole messages, and their errors quote them: its owner may
 * (it kept them only if it may read every column), and a role that may
 * read the view and every column of each of its streams, who may read
 * those messages anyway.  Not a role that may read the view alone: the
 * messages have columns the view does not show, and rows its WHERE left
 * out.
 */
static bool
may_read_messages(Oid view, Oid role)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(view)};
	bool		is_missing = false;
	bool		result = true;
	uint64		i;

	if (pg_class_aclcheck_ext(view, role, ACL_SELECT, &is_missing) != ACLCHECK_OK)
		return false;
	if (pg_class_ownercheck(view, role))
		return true;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (SPI_execute_with_args("SELECT s FROM ssp.continuous_views, pg_catalog.unnest(streams::pg_catalog.oid[]) s "
							  "WHERE view OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (i = 0; i < SPI_processed && result; i++)
	{
		bool		isnull;
		Oid			stream = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));

		result = !isnull && ssp_may_read_all_columns(stream, role);
	}
	SPI_finish();
	return result;
}

/*
 * ssp.may_read_messages(view): the read policy of ssp.dead_letters
 * (may_read_messages), asked once per view in a query (of the last
 * MAY_READ_CACHED views: rows of several views come mixed).
 */
Datum
ssp_may_read_messages(PG_FUNCTION_ARGS)
{
	Oid			view = PG_GETARG_OID(0);
	Oid			role = GetUserId();
	MayReadCache *cache = fcinfo->flinfo->fn_extra;
	int			i;
	bool		result;

	if (cache == NULL || cache->role != role)
	{
		if (cache == NULL)
			cache = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(MayReadCache));
		cache->role = role;
		cache->filled = 0;
		cache->next = 0;
		fcinfo->flinfo->fn_extra = cache;
	}
	for (i = 0; i < cache->filled; i++)
		if (cache->view[i] == view)
			PG_RETURN_BOOL(cache->result[i]);
	result = may_read_messages(view, role);
	cache->view[cache->next] = view;
	cache->result[cache->next] = result;
	cache->next = (cache->next + 1) % MAY_READ_CACHED;
	cache->filled = Min(cache->filled + 1, MAY_READ_CACHED);
	PG_RETURN_BOOL(result);
}
