/*-------------------------------------------------------------------------
 *
 * reshard.c
 *	  Moving partitions between the shards of a view (ssp.shard = 'k/N'):
 *	  ssp.handover and ssp.reshard.
 *
 * A partition changes hands at an exact offset.  Every shard of the view
 * is paused first (ssp.pause: no batch can claim the view until it is
 * resumed), and ssp.handover waits for a batch still in flight, as
 * ssp.reset does, so each shard's offsets are final.  ssp.handover(view) on each gives its partitions' next offsets
 * and latest event times, and marks the view as handed over: it cannot be
 * resumed under its old shard.  ssp.reshard(view, 'k/M', handovers) on
 * each server of the new layout (a new server's view created and paused
 * in one transaction) gives it its new shard: each partition it takes
 * over starts at the offset its old owner stopped at.  The old owner's
 * rows stay where they are, and a view over the shards reads them with
 * the new owner's, so every message is counted once, by one shard.
 *
 * The new owner's watermark goes back to at most what the partitions it
 * takes over allow (their latest event time, less ssp.grace): their next
 * events are then on time there as they were with their old owner.  A
 * view over the shards shows windows by the least watermark of all the
 * shards, which was at most that already, so no window it has shown
 * opens again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "compile/build.h"
#include "compile/view.h"
#include "runtime/batch.h"

PG_FUNCTION_INFO_V1(ssp_handover);
PG_FUNCTION_INFO_V1(ssp_reshard);

/*
 * load_shard: the view, checked: a shard of a view (not a view over
 * shards), the caller its owner, paused.
 */
static SspView *
load_shard(Oid view, const char *func)
{
	SspView    *v = ssp_view_load(view, false);

	if (!pg_class_ownercheck(view, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of continuous view \"%s\"", v->name)));
	if (v->shard_count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" is not a shard", v->name),
				 v->parallelism == 0 ?
				 errhint("Call ssp.%s on the view on each shard's server.", func) :
				 errhint("A view is a shard of a view read by several servers when it has ssp.shard = 'k/N'.")));
	if (!v->paused)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" must be paused", v->name),
				 errdetail("Partitions change hands at the offsets a paused view stopped at."),
				 errhint("Call ssp.pause on every shard of the view first.")));
	return v;
}

/* topic_partitions: the number of partitions of the view's topic, from its broker */
static int
topic_partitions(SspView *v)
{
	SspStream  *s = ssp_stream_open(v->streams[0]);
	SspKafka   *kafka = ssp_kafka_consumer(s->serverid, GetUserId(), v->topics[0], NULL);
	int			n = ssp_kafka_partition_count(kafka);

	ssp_kafka_close(kafka);
	return n;
}

/*
 * ssp.handover(view): the next offset and latest event time of each
 * partition the paused shard reads, as a jsonb array of {topic,
 * partition, next_offset, max_event_time} (next_offset -1: nothing read
 * yet, from the earliest); the view is marked as handed over.
 */
Datum
ssp_handover(PG_FUNCTION_ARGS)
{
	Oid			view = PG_GETARG_OID(0);
	SspView    *v = load_shard(view, "handover");
	int			nparts = topic_partitions(v);
	Datum	   *parts = palloc(sizeof(Datum) * Max(nparts, 1));
	int			nmine = 0;
	int			p;
	Oid			argtypes[3] = {OIDOID, TEXTOID, INT4ARRAYOID};
	Datum		args[3];
	bool		isnull;
	Datum		result;

	for (p = 0; p < nparts; p++)
		if (ssp_reads_partition(p, v->shard_index, v->shard_count, 1, 0))
			parts[nmine++] = Int32GetDatum(p);
	args[0] = ObjectIdGetDatum(view);
	args[1] = CStringGetTextDatum(v->topics[0]);
	args[2] = PointerGetDatum(construct_array(parts, nmine, INT4OID, 4, true, TYPALIGN_INT));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	ssp_wait_for_batches(view);
	if (SPI_execute_with_args("UPDATE ssp.continuous_views SET resharding = true WHERE view = $1::regclass",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	if (SPI_execute_with_args("SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
							  "'topic', $2, 'partition', p, 'next_offset', COALESCE(o.next_offset, -1), "
							  "'max_event_time', o.max_event_time) ORDER BY p) "
							  "FROM pg_catalog.unnest($3) p "
							  "LEFT JOIN ssp.offsets o ON o.view = $1::regclass AND o.topic = $2 AND o.partition = p",
							  3, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.offsets");
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		result = DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
	result = SPI_datumTransfer(result, false, -1);
	SPI_finish();
	PG_RETURN_DATUM(result);
}

/*
 * ssp.reshard(view, shard, handovers): give the paused shard its new shard
 * 'k/M'; each partition it takes over starts where handovers (the
 * concatenated ssp.handover of every old shard) say its old owner
 * stopped.  The partitions it keeps go on from its own offsets.
 */
Datum
ssp_reshard(PG_FUNCTION_ARGS)
{
	Oid			view = PG_GETARG_OID(0);
	char	   *shard = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Jsonb	   *handovers = PG_GETARG_JSONB_P(2);
	SspView    *v = load_shard(view, "reshard");
	int			nparts = topic_partitions(v);
	int			k,
				m;
	int			p;
	int64	   *next = palloc(sizeof(int64) * Max(nparts, 1));
	TimestampTz *maxev = palloc(sizeof(TimestampTz) * Max(nparts, 1));
	bool	   *given = palloc0(sizeof(bool) * Max(nparts, 1));
	TimestampTz lowest = DT_NOEND;
	Oid			argtypes[6] = {OIDOID, TEXTOID, INT4OID, INT8OID, TIMESTAMPTZOID, TEXTOID};
	Datum		args[6];
	char		nulls[6] = "      ";
	uint64		r;

	ssp_parse_shard(shard, &k, &m);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	ssp_wait_for_batches(view);

	/* the hand-overs, one entry per partition of the view's topic */
	args[0] = JsonbPGetDatum(handovers);
	if (SPI_execute_with_args("SELECT e->>'topic', (e->>'partition')::int, (e->>'next_offset')::bigint, "
							  "(e->>'max_event_time')::timestamptz "
							  "FROM pg_catalog.jsonb_array_elements($1) e",
							  1, (Oid[]) {JSONBOID}, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read the hand-overs");
	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *topic = SPI_getvalue(tup, desc, 1);
		bool		isnull;
		Datum		d;

		if (topic == NULL || strcmp(topic, v->topics[0]) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a hand-over names topic \"%s\", not the view's topic \"%s\"",
							topic ? topic : "", v->topics[0])));
		d = SPI_getbinval(tup, desc, 2, &isnull);
		p = isnull ? -1 : DatumGetInt32(d);
		if (p < 0 || p >= nparts)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a hand-over names partition %d of topic \"%s\", which has %d", p,
							v->topics[0], nparts)));
		if (given[p])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the hand-overs name partition %d of topic \"%s\" twice", p, v->topics[0]),
					 errhint("Give each old shard's ssp.handover once.")));
		d = SPI_getbinval(tup, desc, 3, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the hand-over of partition %d of topic \"%s\" has no next_offset", p, v->topics[0])));
		given[p] = true;
		next[p] = DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 4, &isnull);
		maxev[p] = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
	}

	/*
	 * Each partition it reads as shard k/M starts where its old owner
	 * stopped.  One it read before and has read from stays where it is:
	 * the hand-overs must say so (or they are not this round's).
	 */
	args[0] = ObjectIdGetDatum(view);
	args[1] = CStringGetTextDatum(v->topics[0]);
	for (p = 0; p < nparts; p++)
	{
		if (!ssp_reads_partition(p, k, m, 1, 0))
			continue;
		if (!given[p])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the hand-overs have no offset for partition %d of topic \"%s\"", p, v->topics[0]),
					 errdetail("As shard %d/%d, continuous view \"%s\" reads that partition.", k, m, v->name),
					 errhint("Give the hand-overs of every old shard, concatenated: ssp.handover(view) on each, joined with ||.")));
		args[2] = Int32GetDatum(p);
		if (ssp_reads_partition(p, v->shard_index, v->shard_count, 1, 0))
		{
			if (SPI_execute_with_args("SELECT next_offset FROM ssp.offsets WHERE view = $1::regclass AND topic = $2 "
									  "AND partition = $3", 3, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "ssp: could not read ssp.offsets");
			if (SPI_processed > 0)
			{
				bool		isnull;
				int64		own = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

				if (own != next[p])
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("the hand-over of partition %d of topic \"%s\" says offset %lld, but continuous view \"%s\" stopped at %lld",
									p, v->topics[0], (long long) next[p], v->name, (long long) own),
							 errhint("Give the hand-overs of this round: every shard paused, then ssp.handover on each.")));
				continue;
			}
		}
		args[3] = Int64GetDatum(next[p]);
		args[4] = TimestampTzGetDatum(maxev[p]);
		nulls[4] = maxev[p] == DT_NOBEGIN ? 'n' : ' ';
		if (SPI_execute_with_args("INSERT INTO ssp.offsets AS o (view, topic, partition, next_offset, max_event_time) "
								  "VALUES ($1::regclass, $2, $3, $4, $5) "
								  "ON CONFLICT (view, topic, partition) DO UPDATE SET next_offset = $4, "
								  "max_event_time = $5, last_event_at = NULL",
								  5, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "ssp: could not store the offsets handed over");
		if (maxev[p] != DT_NOBEGIN)
			lowest = Min(lowest, maxev[p]);
	}

	/*
	 * Its new shard; its watermark back to what the partitions it takes
	 * over allow; its table's rows to come marked with its new number.
	 */
	args[2] = Int32GetDatum(k);
	args[3] = Int64GetDatum(0);
	args[4] = TimestampTzGetDatum(lowest);
	nulls[4] = lowest == DT_NOEND ? 'n' : ' ';
	args[5] = CStringGetTextDatum(psprintf("shard=%d/%d", k, m));
	nulls[2] = nulls[3] = 'n';
	if (SPI_execute_with_args("UPDATE ssp.continuous_views SET resharding = false, generation = generation + 1, "
							  "options = ARRAY(SELECT CASE WHEN o OPERATOR(pg_catalog.~~) 'shard=%' THEN $6 ELSE o END "
							  "FROM pg_catalog.unnest(options) WITH ORDINALITY u(o, i) ORDER BY i), "
							  "watermark = LEAST(watermark, $5 - grace) WHERE view = $1::regclass",
							  6, argtypes, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	ssp_wake_scheduler_at_commit();
	ssp_spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN _shard SET DEFAULT %d",
						  quote_qualified_identifier(get_namespace_name(get_rel_namespace(v->mrel)),
													 get_rel_name(v->mrel)), k));
	SPI_finish();
	PG_RETURN_VOID();
}
