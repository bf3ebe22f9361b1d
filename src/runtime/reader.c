/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  One reader per stream: the views a worker process applies, and how
 *	  the views of the same streams come to share one process, with one
 *	  consumer and one decoding of each message.
 *
 * A worker starts for one view (worker.c).  If no reader applies the views
 * of its key (owner, streams, part, batch settings) it becomes that
 * reader; otherwise, once it has applied a batch and is near the reader's
 * position, it hands its view over: the reader names itself in the view's
 * slot, the worker exits, the reader takes the view's process lock and
 * loads it.  A view leaves the reader alone: dropped, paused, reset,
 * failed, or waiting for a lock, while the reader goes on with the others.
 * Each view's batches stay its own transactions, fenced by its offsets
 * (batch.c): sharing a reader changes who reads, not what commits.
 * doc/internals.md, One reader per stream, tells the whole of it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "compile/window.h"
#include "kafka/kafka.h"
#include "runtime/outbox.h"
#include "runtime/reader.h"
#include "runtime/supervisor.h"

/*
 * ssp_error_text: an error as ssp.views.last_error shows it, its detail
 * included (the cause of a broker error is there; ssp's details never show
 * a secret).
 */
const char *
ssp_error_text(ErrorData *edata)
{
	return edata->detail ? psprintf("%s: %s", edata->message, edata->detail) : edata->message;
}

static void set_lock_timeout(SspWorker *w);

/* open_view_stream: a stream of the view, decoding what the view reads. */
static SspStream *
open_view_stream(SspView *view, int i)
{
	SspStream  *stream = ssp_stream_open(view->streams[i]);

	/*
	 * A view reads the topic it was made with, and its offsets are that
	 * topic's.  ALTER FOREIGN TABLE refuses a new topic while views read
	 * the stream, but a view restored paused has no dependency on its
	 * stream until a worker loads it: a topic changed meanwhile stops the
	 * view here, rather than have it count a topic the stream no longer
	 * names.
	 */
	if (strcmp(stream->topic, view->topics[i]) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" reads topic \"%s\", but its stream \"%s\" now names topic \"%s\"",
						view->name, view->topics[i], get_rel_name(view->streams[i]), stream->topic),
				 errhint("Set the stream's topic back, or drop the view and create it again.")));
	/* in the transaction that opened it: ssp_reader_union_streams compares it */
	stream->signature = ssp_stream_signature(stream->relid);
	if (view->some_columns)
	{
		int			c;

		stream->needed = palloc0(sizeof(bool) * Max(stream->ncolumns, 1));
		for (c = 0; c < stream->ncolumns; c++)
			stream->needed[c] = list_member_int(view->columns, stream->columns[c].attnum);
	}
	ssp_check_stream_acl(view, stream);
	return stream;
}

/* view_owner: the owner of a relation. */
static Oid
view_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * caught_error: in a PG_CATCH, the error (in old, the context before the
 * PG_TRY), with the transaction it broke rolled back.
 */
static ErrorData *
caught_error(MemoryContext old)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(old);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	return edata;
}

/* reader_key: the views a reader of view's part may apply with it */
static void
reader_key(SspView *view, int part, SspReaderKey *key)
{
	int			i;

	memset(key, 0, sizeof(SspReaderKey));
	key->dboid = MyDatabaseId;
	key->owner = view_owner(view->view);
	key->nsources = Min(view->nsources, SSP_READER_MAX_SOURCES);
	for (i = 0; i < key->nsources; i++)
		key->streams[i] = view->streams[i];
	key->shard_index = view->shard_index;
	key->shard_count = view->shard_count;
	key->parallelism = view->parallelism;
	key->part = part;
	key->batch_size = view->batch_size;
	key->commit_interval_ms = view->commit_interval_ms;
}

/*
 * ssp_view_reader_key: for the scheduler, before it starts a worker for a
 * view's part: the key of the reader that may apply it, and the view's
 * position (the sum of its stored next offsets on the partitions of its
 * part, as a reader counts its own).  In a transaction of its own; false
 * if the view cannot be loaded now (dropped, paused, or an error, which a
 * worker of its own then reports).
 */
bool
ssp_view_reader_key(Oid viewoid, int part, SspReaderKey *key, int64 *position)
{
	MemoryContext old = CurrentMemoryContext;
	volatile bool ok = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		SspView    *view = ssp_view_load(viewoid, true);
		Datum		arg = ObjectIdGetDatum(viewoid);
		Oid			argtype = OIDOID;
		uint64		r;

		if (view != NULL && !view->paused && part < view->parallelism)
		{
			reader_key(view, part, key);
			*position = 0;
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "ssp: SPI_connect failed");
			if (SPI_execute_with_args("SELECT partition, next_offset, topic FROM ssp.offsets WHERE view = $1::regclass",
									  1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT)
				elog(ERROR, "ssp: could not read ssp.offsets");
			for (r = 0; r < SPI_processed; r++)
			{
				bool		isnull;
				int32		p = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
				int64		next = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));
				char	   *topic = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 3);
				bool		reads = false;
				int			i;

				/* as stored_position counts: the topics the view still reads */
				for (i = 0; i < view->nsources; i++)
					reads |= strcmp(topic, view->topics[i]) == 0;
				if (reads && next > 0 &&
					ssp_reads_partition(p, key->shard_index, key->shard_count, key->parallelism, part))
					*position += next;
			}
			SPI_finish();
			ok = true;
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata = caught_error(old);

		/* a worker of its own says it where users look */
		ereport(DEBUG1,
				(errmsg("ssp: the scheduler could not load continuous view %u: %s",
						viewoid, edata->message)));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return ok;
}

/* load_served: ssp_served_load's work, into s (and s->cxt) */
/*
 * lock_streams_of: AccessShareLock on the streams the catalog says view
 * reads, before the view itself is locked (load_served).
 */
static void
lock_streams_of(Oid view)
{
	Oid			argtype = OIDOID;
	Datum		arg = ObjectIdGetDatum(view);
	uint64		r;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (SPI_execute_with_args("SELECT pg_catalog.unnest(streams)::pg_catalog.oid FROM ssp.continuous_views "
							  "WHERE view OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
							  1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			LockRelationOid(DatumGetObjectId(d), AccessShareLock);
	}
	SPI_finish();
}

static SspServed *
load_served(SspServed *s, Oid viewoid, int part, SspReaderKey *key)
{
	MemoryContext cxt = s->cxt;
	SspWorkerSlot *slot = s->slot;
	MemoryContext old;
	MemoryContext spi;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewoid)};
	uint64		r;
	bool		restored;
	int			i;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	old = MemoryContextSwitchTo(cxt);
	/* a database made read-only: said as such, not as the first write refused */
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("continuous view \"%s\" cannot be applied in a read-only transaction",
						get_rel_name(viewoid)),
				 errdetail("default_transaction_read_only is on for database \"%s\", or for the role ssp's processes connect as.",
						   get_database_name(MyDatabaseId)),
				 errhint("The view goes on by itself once it is off.")));
	/*
	 * Its streams before the view, and the view before its catalog row
	 * (which ssp_view_repair_dependencies locks), as a batch takes them,
	 * DROP of a stream CASCADE the first two and DROP VIEW the last two:
	 * another order deadlocks with a DROP that holds one and waits for
	 * the other.
	 */
	lock_streams_of(viewoid);
	LockRelationOid(viewoid, AccessShareLock);
	s->view = ssp_view_load(viewoid, true);
	if (s->view == NULL || s->view->paused || part >= s->view->parallelism)
	{
		MemoryContextSwitchTo(old);
		PopActiveSnapshot();
		CommitTransactionCommand();
		MemoryContextDelete(cxt);
		return NULL;
	}
	s->view->part = part;
	/* ssp.views tells a process that has not seen an ssp.reset yet */
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->generation = s->view->generation;
	LWLockRelease(ssp_shared->lock);
	restored = ssp_view_repair_dependencies(s->view);
	ssp_view_generate(s->view);
	s->src.n = s->view->nsources;
	s->src.streams = palloc0(sizeof(SspStream *) * s->src.n);
	for (i = 0; i < s->src.n; i++)
		s->src.streams[i] = open_view_stream(s->view, i);

	reader_key(s->view, part, key);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (SPI_execute_with_args("SELECT topic, partition, next_offset, max_event_time, last_event_at "
							  "FROM ssp.offsets WHERE view = $1::regclass",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.offsets");
	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *topic = SPI_getvalue(tup, desc, 1);
		/* in the view's memory: SPI's goes at SPI_finish */
		StoredOffset *so = MemoryContextAlloc(cxt, sizeof(StoredOffset));
		bool		isnull;
		Datum		d;

		so->source = -1;
		for (i = 0; i < s->src.n; i++)
			if (strcmp(topic, s->view->topics[i]) == 0)
				so->source = i;
		if (so->source < 0)
			continue;			/* a topic the view no longer reads */
		so->partition = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		so->next = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		/* written by the view's owner, maybe: it sizes and indexes arrays */
		if (so->partition < 0 || so->partition >= SSP_MAX_PARTITIONS || so->next < -1)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("continuous view \"%s\" has an invalid row in ssp.offsets", s->view->name),
					 errdetail("Partition %d of topic \"%s\" is at offset %lld.",
							   so->partition, topic, (long long) so->next),
					 errhint("Partitions are numbered from 0 (up to %d here), and offsets from 0 (-1: nothing read yet).",
							 SSP_MAX_PARTITIONS - 1)));
		d = SPI_getbinval(tup, desc, 4, &isnull);
		so->maxev = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
		d = SPI_getbinval(tup, desc, 5, &isnull);
		so->seen_at = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
		spi = MemoryContextSwitchTo(cxt);
		s->stored = lappend(s->stored, so);
		MemoryContextSwitchTo(spi);
	}
	s->et.watermark = s->view->watermark;
	s->et.began = DT_NOBEGIN;
	SPI_finish();
	ssp_view_check_whole(s->view, s->stored != NIL, restored);
	MemoryContextSwitchTo(old);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return s;
}

/*
 * ssp_served_load: a view, its streams and its stored offsets, in a transaction,
 * into memory of its own; NULL if the view no longer wants this part's
 * worker (dropped, paused, fewer parts).  Sets key to the views a reader
 * of it may apply.
 */
SspServed *
ssp_served_load(Oid viewoid, int part, SspWorkerSlot *slot, SspReaderKey *key)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "ssp view",
											  ALLOCSET_DEFAULT_SIZES);
	SspServed  *s = MemoryContextAllocZero(cxt, sizeof(SspServed));
	SspServed  *volatile loaded = NULL;

	s->cxt = cxt;
	s->part = part;
	s->slot = slot;
	s->rate = -1;
	PG_TRY();
	{
		loaded = load_served(s, viewoid, part, key);
	}
	PG_CATCH();
	{
		/*
		 * nothing of it stays in a process that goes on (a reader): its
		 * memory, and the watch on its SQL's relations
		 */
		MemoryContextSwitchTo(caller);
		if (s->view)
			ssp_view_unwatch(s->view);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return loaded;
}

/*
 * ssp_reader_union_streams: the process's own stream objects, decoding every column
 * that any of its views reads (and the event time), opened again whenever
 * its views change.
 */
void
ssp_reader_union_streams(SspWorker *w)
{
	MemoryContext old;
	ListCell   *lc;
	bool		stale = false;
	char	   *altered = NULL;
	int			i;

	if (w->streams_cxt)
		MemoryContextDelete(w->streams_cxt);
	w->streams_cxt = AllocSetContextCreate(TopMemoryContext, "ssp reader streams",
										   ALLOCSET_DEFAULT_SIZES);
	ssp_reader_stream_locks(w, true);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	old = MemoryContextSwitchTo(w->streams_cxt);
	w->src.streams = palloc0(sizeof(SspStream *) * w->src.n);
	w->definition = palloc0(sizeof(char *) * w->src.n);
	for (i = 0; i < w->src.n; i++)
	{
		SspStream  *stream = ssp_stream_open(((SspServed *) linitial(w->served))->view->streams[i]);
		bool		all = false;
		int			c;

		/* in the transaction that opened it: config_changed compares it */
		w->definition[i] = ssp_stream_signature(stream->relid);

		stream->needed = palloc0(sizeof(bool) * Max(stream->ncolumns, 1));
		foreach(lc, w->served)
		{
			SspStream  *vs = ((SspServed *) lfirst(lc))->src.streams[i];

			/*
			 * A view decodes for itself as its stream was when it was
			 * loaded (behind the reader, a batch split after a bad
			 * message): an ALTER since, which this transaction takes in
			 * before config_changed could see it, restarts the process
			 * here instead, or that view would read what INSERT now
			 * writes elsewhere as nulls.
			 */
			if (vs->signature && strcmp(vs->signature, w->definition[i]) != 0)
				altered = stream->relname;
			if (vs->needed == NULL)
				all = true;
			else
				for (c = 0; c < stream->ncolumns && c < vs->ncolumns; c++)
					stream->needed[c] |= vs->needed[c];
		}
		for (c = 0; c < stream->ncolumns; c++)
			if (stream->columns[c].attnum == stream->timestamp_attnum)
				stream->needed[c] = true;
		if (all)
			stream->needed = NULL;
		w->src.streams[i] = stream;

		/*
		 * The streams (and the schema registry they read) are opened here,
		 * in a later transaction than the signature config_changed compares
		 * (open_sources): a server altered in between would leave this
		 * process reading an old registry URL while its signature matched
		 * the new options, and no invalidation would come again to tell.
		 */
		if (w->signature &&
			strcmp(w->signature[i], ssp_server_kafka_signature(stream->serverid, GetUserId())) != 0)
			stale = true;
	}
	MemoryContextSwitchTo(old);
	CommitTransactionCommand();
	ssp_reader_stream_locks(w, false);
	if (stale)
	{
		ereport(LOG,
				(errmsg("ssp: the Kafka properties of the streams of continuous view \"%s\" changed while its worker started; its worker starts again",
						((SspServed *) linitial(w->served))->view->name)));
		proc_exit(0);
	}
	if (altered)
	{
		ereport(LOG,
				(errmsg("ssp: stream \"%s\" of continuous view \"%s\" was altered; its worker starts again",
						altered, ((SspServed *) linitial(w->served))->view->name)));
		proc_exit(0);
	}
}

/*
 * ssp_served_set_offsets: a view's per-slot state from its stored offsets; false if
 * it stored offsets for partitions this process does not read.
 */
bool
ssp_served_set_offsets(SspWorker *w, SspServed *s)
{
	SspSources *src = &w->src;
	int			n = Max(src->nslots, 1);
	ListCell   *lc;
	int			p;

	s->src.base = src->base;
	s->src.nparts = src->nparts;
	s->src.nslots = src->nslots;
	s->committed = MemoryContextAlloc(s->cxt, sizeof(int64) * n);
	s->et.maxev = MemoryContextAlloc(s->cxt, sizeof(TimestampTz) * n);
	s->et.seen_at = MemoryContextAlloc(s->cxt, sizeof(TimestampTz) * n);
	s->et.lagging = w->lagging;
	s->et.nparts = src->nslots;
	for (p = 0; p < src->nslots; p++)
	{
		s->committed[p] = -1;
		s->et.maxev[p] = DT_NOBEGIN;
		s->et.seen_at[p] = DT_NOBEGIN;
	}
	foreach(lc, s->stored)
	{
		StoredOffset *so = lfirst(lc);

		if (so->partition >= src->nparts[so->source])
			return false;
		p = src->base[so->source] + so->partition;
		s->committed[p] = so->next;
		s->et.maxev[p] = so->maxev;
		s->et.seen_at[p] = so->seen_at;
	}
	/*
	 * a partition with nothing applied yet is watched from now on; one the
	 * process does not read never counts (the watermark is over its own)
	 */
	for (p = 0; p < src->nslots; p++)
	{
		if (!ssp_worker_reads(w, p))
			s->et.maxev[p] = s->et.seen_at[p] = DT_NOBEGIN;
		else if (s->et.seen_at[p] == DT_NOBEGIN)
			s->et.seen_at[p] = GetCurrentTimestamp();
	}
	return true;
}

/*
 * ssp_worker_reads: does this process read the slot (its server's shard,
 * and its part of the view's ssp.parallelism)?
 */
bool
ssp_worker_reads(SspWorker *w, int slot)
{
	int			i = 0;

	while (slot >= w->src.base[i] + w->src.nparts[i])
		i++;
	return ssp_reads_partition(slot - w->src.base[i], w->key.shard_index, w->key.shard_count,
							   w->key.parallelism, w->key.part);
}

/* resident_memory: the resident memory of this process, in bytes; -1: unknown */
static int64
resident_memory(void)
{
	FILE	   *f = fopen("/proc/self/statm", "r");
	long		size,
				resident = -1;

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : (int64) resident * sysconf(_SC_PAGESIZE);
}

/* position: the sum of the next offsets of the slots it reads (-1 as 0). */
static int64
position(SspWorker *w, const int64 *next)
{
	int64		sum = 0;
	int			p;

	for (p = 0; p < w->src.nslots; p++)
		if (ssp_worker_reads(w, p) && next[p] > 0)
			sum += next[p];
	return sum;
}

/*
 * stored_position: position() of a view from the offsets it was loaded
 * with, before the worker has a consumer (-1 as 0).
 */
static int64
stored_position(SspWorker *w, SspServed *s)
{
	int64		sum = 0;
	ListCell   *lc;

	foreach(lc, s->stored)
	{
		StoredOffset *so = lfirst(lc);

		if (ssp_reads_partition(so->partition, w->key.shard_index, w->key.shard_count,
								w->key.parallelism, w->key.part) &&
			so->next > 0)
			sum += so->next;
	}
	return sum;
}

/* ssp_reader_report: what ssp.readers shows of this process, if a reader */
void
ssp_reader_report(SspWorker *w, int64 lag)
{
	int			p;
	int			nparts = 0;

	if (w->reader == NULL)
		return;
	for (p = 0; p < w->src.nslots; p++)
		if (ssp_worker_reads(w, p))
			nparts++;
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (w->reader->pid == MyProcPid)
	{
		w->reader->nviews = list_length(w->served);
		w->reader->npartitions = nparts;
		/* before it has a consumer: where its first view stands */
		w->reader->position = w->src.nslots > 0 || w->served == NIL ? position(w, w->next) :
			stored_position(w, linitial(w->served));
		w->reader->lag = lag;
		w->reader->rate = Max(w->rate, 0);
		w->reader->rate_at = w->rate_at;
		w->reader->memory = resident_memory();
	}
	LWLockRelease(ssp_shared->lock);
}

/* ssp_reader_requests_waiting: has a view asked to join this reader, or to leave? */
bool
ssp_reader_requests_waiting(SspWorker *w)
{
	bool		found = false;
	int			i;

	if (w->reader == NULL)
		return false;
	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	for (i = 0; i < ssp_shared->nworkers && !found; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];

		found = s->in_use && ((s->handover_to == MyProcPid) ||
							  (s->pid == MyProcPid && s->detach));
	}
	LWLockRelease(ssp_shared->lock);
	return found;
}

/*
 * ssp_reader_stream_locks: with waiting, until called again without, the
 * process waits for a lock as long as it takes: while it opens its streams,
 * whose locks are every view's of the process alike (an ALTER FOREIGN TABLE
 * in progress); giving up on one after ssp.attached_lock_timeout, which is
 * for a view's own table, failed them all.  (Not SET LOCAL: a value set
 * from PGC_S_OVERRIDE replaces the one a transaction's end restores.)
 */
void
ssp_reader_stream_locks(SspWorker *w, bool waiting)
{
	if (waiting)
		SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	else
		set_lock_timeout(w);
}

/*
 * set_lock_timeout: a reader applying several views waits at most
 * ssp.attached_lock_timeout for a lock, so that a view whose table is
 * locked leaves the reader (to wait on its own) instead of holding up the
 * others; alone, a view waits as long as it takes.
 */
static void
set_lock_timeout(SspWorker *w)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), "%d", list_length(w->served) > 1 ? ssp_attached_lock_timeout : 0);
	SetConfigOption("lock_timeout", buf, PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * mark_failed: with ssp's lock held, the slot of a view that failed in
 * this process, with error: the scheduler starts a worker of its own for
 * it after a backoff.
 */
static void
mark_failed(SspWorkerSlot *slot, const char *error)
{
	slot->failed = true;
	slot->reader_failures++;
	strlcpy(slot->status, "failed", SSP_STATUS_LEN);
	strlcpy(slot->last_error, error, SSP_ERROR_LEN);
}

/* Why a view leaves a reader to go on alone (leave) */
typedef enum
{
	ALONE_NO,					/* it does not: it is done, or failed */
	ALONE_LOCK,					/* it waits for a lock */
	ALONE_PUBLISH				/* it waits for its changes' acknowledgement */
} LeaveAlone;

/*
 * leave: ssp_served_leave, where alone says whether the view goes on alone,
 * after failure (not counted as a failure: it waited longer than a view
 * may hold up the others, and waits again alone, at once).
 */
static void
leave(SspWorker *w, SspServed *s, ErrorData *failure, LeaveAlone alone)
{
	const char *error;

	if (alone == ALONE_LOCK)
		ereport(LOG,
				(errmsg("ssp: continuous view \"%s\" leaves the reader of its streams to wait for a lock alone",
						s->view->name),
				 errdetail("%s", ssp_error_text(failure))));
	else if (alone == ALONE_PUBLISH)
		ereport(LOG,
				(errmsg("ssp: continuous view \"%s\" leaves the reader of its streams to publish its changes alone",
						s->view->name),
				 errdetail("%s", ssp_error_text(failure))));
	else if (failure && w->reader == NULL)
		ereport(LOG,
				(errmsg("ssp: continuous view \"%s\" failed in its worker: %s",
						s->view->name, ssp_error_text(failure)),
				 failure->hint ? errhint("%s", failure->hint) : 0));
	else if (failure)
		ereport(LOG,
				(errmsg("ssp: continuous view \"%s\" failed in the reader of its streams and leaves it: %s",
						s->view->name, ssp_error_text(failure)),
				 failure->hint ? errhint("%s", failure->hint) : 0));
	if (alone != ALONE_NO)
		failure = NULL;
	ssp_unlock_process(SSP_LOCK_WORKER, s->view->view, s->part);
	/* formatted before the lock: nothing may fail while it is held */
	error = failure ? ssp_error_text(failure) : NULL;
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (s->slot->pid == MyProcPid)
	{
		s->slot->pid = 0;
		s->slot->attached = false;
		s->slot->detach = false;
		s->slot->wait_alone = alone != ALONE_NO;
		if (failure)
			mark_failed(s->slot, error);
		else
		{
			/* the scheduler starts a worker for it */
			strlcpy(s->slot->status, "starting", SSP_STATUS_LEN);
			s->slot->lag = -1;
		}
	}
	LWLockRelease(ssp_shared->lock);
	w->served = list_delete_ptr(w->served, s);
	if (s->own)
		w->own_left = true;
	ssp_view_unwatch(s->view);
	MemoryContextDelete(s->cxt);
	if (w->served)
	{
		ssp_reader_union_streams(w);
		set_lock_timeout(w);
	}
}

/*
 * ssp_served_leave: a view leaves this process: dropped, paused or reset (failure
 * NULL), or failed.  Its process lock and its slot are free, and the
 * scheduler starts a worker of its own for it where it still wants one
 * (after a backoff if it failed).  Its offsets stay as its last batch
 * committed them.  A lock it could not get soon (ssp.attached_lock_timeout)
 * is waited for alone: not a failure.
 */
void
ssp_served_leave(SspWorker *w, SspServed *s, ErrorData *failure)
{
	leave(w, s, failure,
		  failure && failure->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ? ALONE_LOCK : ALONE_NO);
}

/*
 * ssp_served_record_lost: ssp_record_lost for view s of this process,
 * which leaves the process if it was dropped, paused or reset meanwhile,
 * or if recording fails (a lock not had in time, a fence): alone, as when
 * its batch fails, not with every view of the process.  False if it left.
 */
bool
ssp_served_record_lost(SspWorker *w, SspServed *s, int source, int32 partition,
					   int64 stored, int64 from, int64 to)
{
	MemoryContext old = CurrentMemoryContext;
	ErrorData  *volatile failure = NULL;
	volatile bool kept = false;

	PG_TRY();
	{
		kept = ssp_record_lost(s->view, source, partition, stored, from, to);
	}
	PG_CATCH();
	{
		failure = caught_error(old);
	}
	PG_END_TRY();
	if (!kept)
		ssp_served_leave(w, s, failure);
	if (failure)
		FreeErrorData(failure);
	return kept;
}

/*
 * ssp_served_publish: the changes in the view's outbox to its output
 * topic (ssp_outbox_publish), between batches.  A view alone in its
 * process waits ssp.broker_timeout for their acknowledgement; if that
 * fails (the topic refused, the broker down), it fails and leaves the
 * process, as if its batch had failed, and its next worker publishes them
 * after the backoff.  The views of a reader wait for one of them at most
 * SSP_PUBLISH_SHARED_MS (a broker that acknowledges nothing would have
 * held them all for ssp.broker_timeout): past that, or on any error, the
 * view leaves to publish alone, in a worker of its own that waits
 * ssp.broker_timeout and decides whether the view failed.
 */
void
ssp_served_publish(SspWorker *w, SspServed *s)
{
	MemoryContext old = CurrentMemoryContext;
	volatile bool shared = list_length(w->served) > 1 &&
		SSP_PUBLISH_SHARED_MS < ssp_broker_timeout;

	if (s->view->output_topic == NULL)
		return;
	PG_TRY();
	{
		ssp_outbox_publish(s->view, shared ? SSP_PUBLISH_SHARED_MS : ssp_broker_timeout);
	}
	PG_CATCH();
	{
		ErrorData  *edata = caught_error(old);

		leave(w, s, edata, shared ? ALONE_PUBLISH : ALONE_NO);
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * mark_attached: the slots of the process's views say they share its
 * reader, and ssp.readers how many it applies (which ssp.views.attached
 * reads), at once rather than after its next batch.
 */
static void
mark_attached(SspWorker *w)
{
	ListCell   *lc;
	bool		shared = list_length(w->served) > 1;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (w->reader && w->reader->pid == MyProcPid)
		w->reader->nviews = list_length(w->served);
	foreach(lc, w->served)
	{
		SspServed  *s = lfirst(lc);

		if (s->slot->pid == MyProcPid)
			s->slot->attached = shared;
	}
	LWLockRelease(ssp_shared->lock);
}

/*
 * try_load: ssp_served_load for a view handed over; NULL if it cannot be
 * loaded (its error goes to its slot, and the scheduler starts a worker of
 * its own for it after a backoff): the reader goes on with its views.
 */
static SspServed *
try_load(SspWorkerSlot *slot, SspReaderKey *key)
{
	MemoryContext old = CurrentMemoryContext;
	SspServed  *volatile s = NULL;

	PG_TRY();
	{
		s = ssp_served_load(slot->view, slot->part, slot, key);
	}
	PG_CATCH();
	{
		ErrorData  *edata = caught_error(old);
		const char *error = ssp_error_text(edata);

		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		/* a lock it could not get soon is waited for alone: not a failure */
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			slot->wait_alone = true;
			strlcpy(slot->last_error, error, SSP_ERROR_LEN);
		}
		else
			mark_failed(slot, error);
		LWLockRelease(ssp_shared->lock);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return s;
}

/*
 * claim: the first step of taking over a view whose worker asked this
 * reader to (its slot's handover_to is this process): the slot names this
 * process at once, so the scheduler starts nothing, and the worker is
 * woken to see it and exit.  False if it no longer asks.  The views that
 * asked are all claimed before any is adopted, so that their workers exit
 * together rather than one after the other.
 */
static bool
claim(SspWorkerSlot *slot)
{
	int			worker;
	PGPROC	   *proc;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (slot->handover_to != MyProcPid)
	{
		LWLockRelease(ssp_shared->lock);
		return false;
	}
	worker = slot->pid;
	slot->handover_to = 0;
	slot->pid = MyProcPid;
	slot->attached = true;
	LWLockRelease(ssp_shared->lock);
	/* a process gone meanwhile, or another in its place, wakes for nothing */
	proc = worker != 0 ? BackendPidGetProc(worker) : NULL;
	if (proc)
		SetLatch(&proc->procLatch);
	return true;
}

/* has_offset: has one of the process's views an offset on the slot? */
static bool
has_offset(SspWorker *w, int slot)
{
	ListCell   *lc;

	foreach(lc, w->served)
		if (((SspServed *) lfirst(lc))->committed[slot] >= 0)
			return true;
	return false;
}

/*
 * adopt: take over a view this process claimed: once its worker has
 * exited, take its lock, load it, and read from the smaller of its
 * offsets and the view's on each partition (the views already there skip
 * what they have applied).  Refused (the slot free again) when the view
 * is not one this reader may apply, or its worker has not exited by
 * exit_by (a worker stopped, SIGSTOP: the views of one answer wait for
 * their workers together, not one after the other).
 */
static void
adopt(SspWorker *w, SspWorkerSlot *slot, TimestampTz exit_by)
{
	SspServed  *s = NULL;
	SspReaderKey key;
	bool		locked = false;
	bool		moved = false;
	bool		ours = true;
	ListCell   *lc;
	int			p;

	/* already one of its views (its process lock would seem free to take) */
	foreach(lc, w->served)
		if (((SspServed *) lfirst(lc))->view->view == slot->view &&
			((SspServed *) lfirst(lc))->part == slot->part)
			return;
	/*
	 * Its worker, if it had one, leaves as soon as it sees the slot is
	 * ours; a worker that took the slot back meanwhile (one the scheduler
	 * started) keeps it.
	 */
	for (;;)
	{
		locked = ssp_lock_process(SSP_LOCK_WORKER, slot->view, slot->part);
		LWLockAcquire(ssp_shared->lock, LW_SHARED);
		ours = slot->pid == MyProcPid;
		LWLockRelease(ssp_shared->lock);
		if (locked || !ours || GetCurrentTimestamp() >= exit_by)
			break;
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	if (locked && ours)
		s = try_load(slot, &key);
	if (s == NULL || memcmp(&key, &w->key, sizeof(key)) != 0 || !ssp_served_set_offsets(w, s))
	{
		if (locked)
			ssp_unlock_process(SSP_LOCK_WORKER, slot->view, slot->part);
		if (s)
		{
			ssp_view_unwatch(s->view);
			MemoryContextDelete(s->cxt);
		}
		/* the scheduler gives it a worker of its own, not this reader again */
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		if (slot->pid == MyProcPid)
		{
			slot->pid = 0;
			slot->attached = false;
			slot->refused = true;
		}
		LWLockRelease(ssp_shared->lock);
		return;
	}
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->refused = false;
	slot->wait_alone = false;	/* it has joined again */
	LWLockRelease(ssp_shared->lock);
	/* read again what the view has not applied yet */
	for (p = 0; p < w->src.nslots; p++)
		if (ssp_worker_reads(w, p) && s->committed[p] < w->next[p])
		{
			w->next[p] = s->committed[p];
			w->eof[p] = -1;
			moved = true;
		}
	if (moved)
	{
		int			i;

		for (i = 0; i < w->src.n; i++)
			ssp_kafka_assign_at(w->kafka[i], w->src.nparts[i], w->next + w->src.base[i]);
	}
	s->rate_at = GetCurrentTimestamp();
	w->served = lappend(w->served, s);
	/*
	 * Where the process reads from the oldest message there is (its views
	 * there were all new, or this one is), a view with an offset would
	 * skip without a word what the broker deleted past it: no fetch at
	 * its offset ever fails.  The worker asks the broker where the
	 * partition starts (recover_lost) before it reads on.
	 */
	for (p = 0; p < w->src.nslots; p++)
		if (ssp_worker_reads(w, p) && w->next[p] < 0 && has_offset(w, p))
			w->lost[p] = true;
	ssp_reader_union_streams(w);
	set_lock_timeout(w);
	mark_attached(w);
	ssp_slot_set_error(slot, "");
	ereport(DEBUG1,
			(errmsg("ssp: continuous view \"%s\" joins the reader of its streams (%d views)",
					s->view->name, list_length(w->served))));
	/* last: a view that fails to publish leaves at once (s is freed) */
	ssp_served_publish(w, s);
}

/* ssp_reader_answer_requests: views that asked to join this reader, or to leave. */
void
ssp_reader_answer_requests(SspWorker *w)
{
	List	   *claimed = NIL;
	ListCell   *lc;
	TimestampTz exit_by;
	int			i;

	w->requests = false;
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *slot = &ssp_shared->workers[i];
		bool		join;

		LWLockAcquire(ssp_shared->lock, LW_SHARED);
		join = slot->in_use && slot->dboid == MyDatabaseId && slot->handover_to == MyProcPid;
		LWLockRelease(ssp_shared->lock);
		if (join && claim(slot))
			claimed = lappend(claimed, slot);
	}
	/*
	 * The views it has are shared from now on: a stop of one of them while
	 * the others are adopted (each may take seconds) asks it to leave,
	 * rather than ending the process with the views just claimed.
	 */
	if (claimed != NIL)
	{
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		foreach(lc, w->served)
		{
			SspServed  *s = lfirst(lc);

			if (s->slot->pid == MyProcPid)
				s->slot->attached = true;
		}
		LWLockRelease(ssp_shared->lock);
	}
	exit_by = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SSP_ADOPT_WAIT_MS);
	foreach(lc, claimed)
		adopt(w, lfirst(lc), exit_by);
	list_free(claimed);
	for (;;)
	{
		SspServed  *gone = NULL;

		foreach(lc, w->served)
			if (((SspServed *) lfirst(lc))->slot->detach)
				gone = lfirst(lc);
		if (gone == NULL)
			break;
		ssp_served_leave(w, gone, NULL);
	}
	mark_attached(w);
}

/*
 * ssp_reader_near: are two positions (sums of next offsets) within what a
 * reader reads again for a view that joins it behind, with batches of
 * batch_size?  Farther apart, the one behind would hold the other up.
 */
bool
ssp_reader_near(int batch_size, int64 a, int64 b)
{
	return Abs(a - b) <= Max(batch_size, SSP_CATCHING_UP);
}

/* live: a reader slot of a key, in use by a live process other than this one */
static bool
live(SspReaderSlot *r, const SspReaderKey *key)
{
	return r->in_use && r->pid != 0 && r->pid != MyProcPid && r->latch != NULL &&
		memcmp(&r->key, key, sizeof(SspReaderKey)) == 0 &&
		BackendPidGetProc(r->pid) != NULL;
}

/*
 * nearest: under the lock, the live reader of a key nearest to a position,
 * within ssp_reader_near of it and not handing its views away; or NULL.
 */
static SspReaderSlot *
nearest(const SspReaderKey *key, int64 position)
{
	SspReaderSlot *best = NULL;
	int			i;

	for (i = 0; i < ssp_shared->nreaders; i++)
	{
		SspReaderSlot *r = &ssp_shared->readers[i];

		if (live(r, key) && !r->leaving &&
			ssp_reader_near(key->batch_size, r->position, position) &&
			(best == NULL || Abs(r->position - position) < Abs(best->position - position)))
			best = r;
	}
	return best;
}

/*
 * ssp_reader_find: the live reader of a key near a position (the sum of a
 * view's next offsets), the nearest if several; NULL if none is near.
 * *pid and *latch are its, read under the lock, and *theirs its position.
 */
bool
ssp_reader_find(const SspReaderKey *key, int64 position, int *pid, Latch **latch, int64 *theirs)
{
	SspReaderSlot *r;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	r = nearest(key, position);
	if (r)
	{
		*pid = r->pid;
		*latch = r->latch;
		*theirs = r->position;
	}
	LWLockRelease(ssp_shared->lock);
	return r != NULL;
}

/* ssp_reader_registered: is process pid a live reader of some key? */
bool
ssp_reader_registered(int pid)
{
	bool		found = false;
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	for (i = 0; i < ssp_shared->nreaders && !found; i++)
		found = ssp_shared->readers[i].in_use && ssp_shared->readers[i].pid == pid;
	LWLockRelease(ssp_shared->lock);
	return found;
}

/*
 * register_reader: make this process a reader of its key's views, at a
 * position, unless a live reader of the key is near it (under the lock: of
 * two workers near each other, one registers); NULL then, or when there is
 * no room.  Readers of one key far apart (a reader at the end of its
 * topic, another catching up views made since from the start of it) each
 * take the views near them, and the one behind hands its views to the
 * other once near it (ssp_reader_merge).
 */
static SspReaderSlot *
register_reader(const SspReaderKey *key, int64 position)
{
	SspReaderSlot *result = NULL;
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (nearest(key, position) == NULL)
	{
		for (i = 0; i < ssp_shared->nreaders && result == NULL; i++)
		{
			SspReaderSlot *r = &ssp_shared->readers[i];

			if (!r->in_use || r->pid == 0 || BackendPidGetProc(r->pid) == NULL)
				result = r;
		}
		if (result)
		{
			memset(result, 0, sizeof(SspReaderSlot));
			result->in_use = true;
			result->key = *key;
			result->pid = MyProcPid;
			result->latch = MyLatch;
			result->position = position;
			result->lag = -1;
		}
	}
	LWLockRelease(ssp_shared->lock);
	return result;
}

/*
 * finishing_alone: is the process one batch from the end of a catch-up?
 * It applies that batch itself, from the messages its consumer has
 * fetched already, before it hands its views to a reader (or merges with
 * one): the reader would read them again from the broker, and hold its
 * own views up meanwhile.  A process further behind hands over or merges
 * as soon as it is near a reader, so that two do not read a long way
 * side by side.
 */
static bool
finishing_alone(SspWorker *w)
{
	return w->catching_up && w->batch_lag >= 0 && w->batch_lag <= w->batch_size;
}

/* how often a worker alone looks for a reader near it */
#define HAND_OVER_INTERVAL_MS 1000
/* after a reader did not answer a hand-over, the worker asks again this much later */
#define HAND_OVER_BACKOFF_MS 10000

/*
 * ssp_reader_hand_over: a worker applying its one view alone, near enough to its
 * streams' reader, asks the reader to take the view over; true if it
 * did (this worker then exits).  With no reader near, this worker
 * becomes one.  Between batches only: nothing of the view is in flight.
 * Waits up to SSP_HAND_OVER_ANSWER_MS for the answer, and sets when the
 * worker may ask again: in HAND_OVER_INTERVAL_MS, or after a reader that
 * did not answer (busy, or a process stopped) in HAND_OVER_BACKOFF_MS, so
 * that the view is not held up before each of its batches waiting on it.
 */
bool
ssp_reader_hand_over(SspWorker *w)
{
	SspServed  *s = linitial(w->served);
	int			pid;
	Latch	   *latch;
	int64		theirs;
	int64		mine = w->src.nslots > 0 ? position(w, s->committed) : stored_position(w, s);
	TimestampTz deadline;
	bool		taken;
	bool		refused;

	if (w->reader || list_length(w->served) != 1 || !ssp_shared_readers ||
		finishing_alone(w))
		return false;
	w->handover_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HAND_OVER_INTERVAL_MS);
	/* read once: the view's last reader refused it (adopt) */
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	refused = w->slot->refused;
	w->slot->refused = false;
	LWLockRelease(ssp_shared->lock);
	if (!ssp_reader_find(&w->key, mine, &pid, &latch, &theirs))
	{
		/*
		 * No reader near: this worker becomes one, for the views near it,
		 * unless its view left a reader to wait alone (for a lock, for the
		 * broker: a reader's views would wait too).
		 */
		if (!(w->slot->wait_alone && w->applied_batches == 0))
			w->reader = register_reader(&w->key, mine);
		ssp_reader_report(w, -1);
		/* the scheduler may have views waiting to be handed to it */
		if (w->reader)
			ssp_wake_scheduler(MyDatabaseId);
		return false;
	}
	/*
	 * A reader claimed the view from its last worker and did not take it:
	 * this worker, started for it, asks again only after the backoff, not
	 * every second (each ask that is refused costs a worker).
	 */
	if (refused)
	{
		w->handover_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HAND_OVER_BACKOFF_MS);
		return false;
	}
	/*
	 * A view that left a reader to wait alone (for a lock, or for its
	 * changes' acknowledgement) joins again only once a batch of its own
	 * went through (and was published), instead of holding the reader up
	 * again.
	 */
	if (w->slot->wait_alone && w->applied_batches == 0)
		return false;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	w->slot->handover_to = pid;
	LWLockRelease(ssp_shared->lock);
	SetLatch(latch);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SSP_HAND_OVER_ANSWER_MS);
	while (GetCurrentTimestamp() < deadline)
	{
		LWLockAcquire(ssp_shared->lock, LW_SHARED);
		taken = w->slot->pid != MyProcPid;
		refused = w->slot->handover_to == 0;
		LWLockRelease(ssp_shared->lock);
		if (taken)
			return true;
		if (refused)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	/* no answer: go on alone, unless it took the view meanwhile */
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	w->slot->handover_to = 0;
	taken = w->slot->pid != MyProcPid;
	LWLockRelease(ssp_shared->lock);
	w->handover_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HAND_OVER_BACKOFF_MS);
	return taken;
}

/*
 * merge_target: under the lock, another reader of this reader's key near
 * its position and ahead of it (or level with it and in an earlier slot),
 * not itself handing its views away; or NULL.  Of two readers near each
 * other, only the one behind finds the other.
 */
static SspReaderSlot *
merge_target(SspWorker *w, int64 mine)
{
	int			i;

	for (i = 0; i < ssp_shared->nreaders; i++)
	{
		SspReaderSlot *r = &ssp_shared->readers[i];

		if (r != w->reader && live(r, &w->key) && !r->leaving &&
			ssp_reader_near(w->key.batch_size, r->position, mine) &&
			(r->position > mine || (r->position == mine && r < w->reader)))
			return r;
	}
	return NULL;
}

/* ssp_reader_merge_due: is this reader to look for another to hand its views to? */
bool
ssp_reader_merge_due(SspWorker *w)
{
	bool		due;

	if (w->reader == NULL || w->served == NIL || !ssp_shared_readers ||
		GetCurrentTimestamp() < w->handover_at || finishing_alone(w))
		return false;
	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	due = merge_target(w, position(w, w->next)) != NULL;
	LWLockRelease(ssp_shared->lock);
	return due;
}

/*
 * let_go: the views of this process that another has claimed (or claimed
 * and refused) leave it, their process locks released for the other to
 * take; true if one of the others is still asked of pid and not answered.
 */
static bool
let_go(SspWorker *w, int pid)
{
	List	   *gone = NIL;
	bool		pending = false;
	ListCell   *lc;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	foreach(lc, w->served)
	{
		SspServed  *s = lfirst(lc);

		if (s->slot->pid != MyProcPid)
			gone = lappend(gone, s);
		else if (s->slot->handover_to == pid)
			pending = true;
	}
	LWLockRelease(ssp_shared->lock);
	foreach(lc, gone)
		ssp_served_leave(w, lfirst(lc), NULL);
	list_free(gone);
	return pending;
}

/*
 * ssp_reader_merge: a reader near another reader of its key, one ahead of
 * it, hands that one all its views, as a worker hands over its one view;
 * true if none is left (the process then exits).  So readers of one key
 * meet: one that caught up views made behind a reader at the end of its
 * topic joins it once near, and the other reads again, for those views
 * only, what they have not applied yet (adopt).  Between batches only.
 * The reader handing over is marked leaving, under the lock, before it
 * asks: no view is handed to it meanwhile, and the other never finds it
 * to hand back to.  Views not taken within SSP_HAND_OVER_ANSWER_MS stay,
 * and it asks again after HAND_OVER_BACKOFF_MS; a view the scheduler asks
 * to let go (detach) is not handed on.
 */
bool
ssp_reader_merge(SspWorker *w)
{
	SspReaderSlot *target;
	int64		mine;
	int			pid = 0;
	Latch	   *latch = NULL;
	TimestampTz deadline;
	bool		pending;
	int			n = list_length(w->served);
	ListCell   *lc;

	if (w->reader == NULL || w->served == NIL || !ssp_shared_readers ||
		finishing_alone(w))
		return false;
	w->handover_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HAND_OVER_INTERVAL_MS);
	mine = position(w, w->next);
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	target = merge_target(w, mine);
	if (target && w->reader->pid == MyProcPid)
	{
		pid = target->pid;
		latch = target->latch;
		w->reader->leaving = true;
		foreach(lc, w->served)
		{
			SspServed  *s = lfirst(lc);

			if (s->slot->pid == MyProcPid && !s->slot->detach)
				s->slot->handover_to = pid;
		}
	}
	LWLockRelease(ssp_shared->lock);
	if (pid == 0)
		return false;
	ereport(DEBUG1,
			(errmsg("ssp: a reader of %d views hands them to the reader of the same streams near it (pid %d)",
					n, pid)));
	SetLatch(latch);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SSP_HAND_OVER_ANSWER_MS);
	while ((pending = let_go(w, pid)) && GetCurrentTimestamp() < deadline)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	/* what was not taken in time is withdrawn, and stays */
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	foreach(lc, w->served)
	{
		SspServed  *s = lfirst(lc);

		if (s->slot->pid == MyProcPid && s->slot->handover_to == pid)
			s->slot->handover_to = 0;
	}
	w->reader->leaving = false;
	LWLockRelease(ssp_shared->lock);
	(void) let_go(w, pid);
	if (w->served == NIL)
		return true;
	if (pending)
		w->handover_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HAND_OVER_BACKOFF_MS);
	mark_attached(w);
	ssp_reader_report(w, -1);
	return false;
}

/*
 * ssp_smooth_rate: a rate of messages a second, smoothed over about the last
 * SSP_RATE_SECONDS (an exponential average of each batch's rate, weighted
 * by the time since the last one): with the lag, ssp.views tells how long
 * a catch-up has left.  While no batch comes, ssp.worker_status() decays
 * it the same way.
 */
void
ssp_smooth_rate(double *rate, TimestampTz *at, int n, TimestampTz now)
{
	double		dt = (double) (now - *at) / USECS_PER_SEC;
	double		r;

	if (dt <= 0)
		return;
	r = n / dt;
	*rate = *rate < 0 ? r : *rate + (r - *rate) * (1 - exp(-dt / SSP_RATE_SECONDS));
	*at = now;
}

/*
 * try_apply: ssp_apply_batch for one view.  Alone, in a transaction of its
 * own, and a failure is the worker's, as it always was.  In a group, in a
 * subtransaction of the group's transaction: if it fails, only it is
 * rolled back, and *failure says why.
 */
static bool
try_apply(SspServed *s, SspMessage *msgs, int n, const SspSpan *span, const int64 *next,
		  SspDecoded *decoded, bool grouped, ErrorData **failure, MemoryContext keep)
{
	MemoryContext old = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = false;

	*failure = NULL;
	if (!grouped)
		return ssp_apply_batch(s->view, &s->src, msgs, n, span, s->committed, next, &s->et,
							   decoded, false);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(old);
	PG_TRY();
	{
		ok = ssp_apply_batch(s->view, &s->src, msgs, n, span, s->committed, next, &s->et,
							 decoded, true);
		if (ok)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		/* kept past the group's commit */
		MemoryContextSwitchTo(keep);
		*failure = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	CurrentResourceOwner = owner;
	return ok;
}

/* What a view's part of a batch came to. */
typedef struct Applied
{
	SspServed  *s;
	int			n;				/* messages applied */
	int64	   *next;			/* per slot: its offsets now, -1: unchanged */
	bool		left;			/* dropped, paused, reset or failed */
	ErrorData  *failure;
} Applied;

/* at_reader: is the view at the reader's offsets on every partition it reads? */
static bool
at_reader(SspWorker *w, SspServed *s)
{
	int			p;

	for (p = 0; p < w->src.nslots; p++)
		if (s->committed[p] != w->next[p] && ssp_worker_reads(w, p))
			return false;
	return true;
}

/*
 * apply_view: apply a batch to one view, from the offsets it has on each
 * partition (the messages it has applied already are left out), alone or
 * in a group's transaction.  What it came to goes into *a; its offsets
 * move once the transaction has committed (done_view).
 */
static void
apply_view(SspWorker *w, Applied *a, int n, const SspSpan *span, const int64 *next,
		   SspDecoded *decoded, bool grouped, MemoryContext keep)
{
	SspServed  *s = a->s;
	SspMessage *msgs = w->msgs;
	bool		any = false;
	int			vn = n;
	int			p;
	int			i;

	a->next = MemoryContextAlloc(keep, sizeof(int64) * Max(w->src.nslots, 1));
	a->n = 0;
	for (p = 0; p < w->src.nslots; p++)
	{
		a->next[p] = next[p] >= 0 && next[p] > s->committed[p] ? next[p] : -1;
		any |= a->next[p] >= 0;
	}
	if (!at_reader(w, s))
	{
		/* the messages past the view's own offsets */
		if (w->vmsgs == NULL)
			w->vmsgs = MemoryContextAlloc(TopMemoryContext, sizeof(SspMessage) * w->batch_size);
		vn = 0;
		for (i = 0; i < n; i++)
		{
			SspMessage *m = &w->msgs[i];

			if (m->partition < w->src.nparts[m->source] &&
				m->offset < s->committed[SSP_SLOT(&w->src, m)])
				continue;
			w->vmsgs[vn++] = *m;
		}
		msgs = w->vmsgs;
		decoded = NULL;
		span = NULL;
	}
	if (vn == 0 && !any && !ssp_batch_due(s->view, &s->et, w->lagging, w->src.nslots))
	{
		for (p = 0; p < w->src.nslots; p++)
			a->next[p] = -1;
		return;					/* nothing for it */
	}
	a->left = !try_apply(s, msgs, vn, span, a->next, decoded, grouped, &a->failure, keep);
	if (!a->left)
		a->n = vn;
}

/*
 * done_view: after the transaction of a view's batch committed, its
 * offsets move; a view that failed, or was dropped, paused or reset,
 * leaves this process (not before: leaving runs transactions of its own).
 */
static void
done_view(SspWorker *w, Applied *a)
{
	SspServed  *s = a->s;
	int			p;

	if (a->left)
	{
		ssp_served_leave(w, s, a->failure);
		if (a->failure)
			FreeErrorData(a->failure);
		return;
	}
	for (p = 0; p < w->src.nslots; p++)
		if (a->next[p] >= 0)
			s->committed[p] = a->next[p];
	if (a->n > 0)
		w->applied_batches++;
	/* a batch went through: the last worker's error is over */
	ssp_slot_set_error(s->slot, "");
	ssp_smooth_rate(&s->rate, &s->rate_at, a->n, GetCurrentTimestamp());
	ssp_slot_set_rate(s->slot, Max(s->rate, 0), s->rate_at);
}

/*
 * The views of a reader commit a batch in groups: one transaction for up
 * to this many views, each in a subtransaction of its own (a failing view
 * rolls back alone).  One commit, one WAL flush, for the group rather than
 * one per view; few enough subtransactions (a view's batch takes two or
 * three) to stay within what a backend caches (PGPROC_MAX_CACHED_SUBXIDS),
 * past which every snapshot of the server gets slower.
 */
#define SSP_GROUP_VIEWS 16

/* by_view_oid: qsort order of Applied by the view's oid */
static int
by_view_oid(const void *a, const void *b)
{
	Oid			x = ((const Applied *) a)->s->view->view;
	Oid			y = ((const Applied *) b)->s->view->view;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * ssp_reader_apply: apply a batch to every view of the process; alone, in its
 * own transaction, else in groups (SSP_GROUP_VIEWS).  In order of the views'
 * oids: the parallel parts of two views, in two processes, that wait for
 * each other's rows (a table of distinct values, viewsql.c) then wait in
 * one order, never in a cycle.
 */
void
ssp_reader_apply(SspWorker *w, int n, const int64 *next, SspDecoded *decoded)
{
	MemoryContext keep = CurrentMemoryContext;	/* outlives the transactions */
	int			nviews = list_length(w->served);
	Applied    *applied = palloc0(sizeof(Applied) * Max(nviews, 1));
	bool		grouped = nviews > 1;
	SspSpan		span;
	int			first;
	int			i;

	/* where the batch's messages lie, once for the views that take it whole */
	span.lowest = palloc(sizeof(int64) * Max(w->src.nslots, 1));
	span.highest = palloc(sizeof(int64) * Max(w->src.nslots, 1));
	ssp_batch_span(&w->src, w->msgs, n, &span);
	for (i = 0; i < nviews; i++)
	{
		applied[i].s = list_nth(w->served, i);
		/* views that take the batch whole and reduce it alike reduce it once */
		if (at_reader(w, applied[i].s))
			ssp_share_note(decoded, applied[i].s->view);
	}
	if (nviews > 1)
		qsort(applied, nviews, sizeof(Applied), by_view_oid);
	for (first = 0; first < nviews; first += SSP_GROUP_VIEWS)
	{
		int			last = Min(nviews, first + SSP_GROUP_VIEWS);

		if (grouped)
		{
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
		}
		for (i = first; i < last; i++)
			apply_view(w, &applied[i], n, &span, next, decoded, grouped, keep);
		if (grouped)
			CommitTransactionCommand();
	}
	for (i = 0; i < nviews; i++)
	{
		done_view(w, &applied[i]);
		pfree(applied[i].next);
	}
	i = ssp_share_used(decoded);
	if (i != w->shared_groups)
		ereport(DEBUG1,
				(errmsg_internal("a reader of %d views reduces each batch to its groups once for %d of them, which group it alike",
								 nviews, i)));
	w->shared_groups = i;
	pfree(applied);
	pfree(span.lowest);
	pfree(span.highest);
}
