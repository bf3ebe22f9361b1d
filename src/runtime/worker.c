/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The background worker of one continuous view: consume its streams'
 *	  topics (one, or two for a join of streams) from the offsets stored in
 *	  Postgres, and apply them batch by batch (batch.c), each batch one
 *	  transaction with its offsets.
 *
 * The worker runs as the view's owner.  It waits on its latch and on the
 * pipes that librdkafka writes when messages arrive; it never sleeps.  A
 * batch closes at ssp.batch_size messages or ssp.commit_interval after its
 * first message.  On an error it records it in shared memory (ssp.views)
 * and exits; the scheduler restarts it with backoff.  It exits cleanly
 * when its view is dropped, paused or reset, and the scheduler starts a
 * fresh one where needed.  It also exits, to be started again at once,
 * when the Kafka properties of its streams' servers (the server's options,
 * the owner's user mapping, whether their writers are superusers) change:
 * a new broker list or a rotated password takes effect within seconds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "compile/window.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "runtime/outbox.h"
#include "runtime/batch.h"
#include "runtime/shmem.h"
#include "runtime/supervisor.h"
#include "compile/view.h"

PGDLLEXPORT void ssp_worker_main(Datum arg);

typedef struct Worker
{
	SspView    *view;
	SspSources	src;			/* the view's streams and their partitions */
	SspKafka  **kafka;			/* per source: its consumer */
	SspWorkerSlot *slot;
	List	   *stored;			/* StoredOffset, as load() read them */
	int64	   *next;			/* per slot: next offset, -1: oldest */
	int64	   *committed;		/* per slot: its offset in ssp.offsets, -1: none */
	SspEventTime et;			/* per slot: event times (windows, joins) */
	int64	   *eof;			/* per slot: end seen, -1: none */
	bool	   *lost;			/* per slot: next offset deleted */
	SspMessage *msgs;
	int			part;			/* which of the view's workers (ssp.parallelism) */
	char	  **signature;		/* per source: its client's properties */
	bool		restart;		/* they changed: start a fresh worker */
	double		rate;			/* messages applied a second, lately; -1: none yet */
	TimestampTz rate_at;		/* when rate was last updated */
} Worker;

/* A row of ssp.offsets. */
typedef struct StoredOffset
{
	int			source;
	int32		partition;
	int64		next;
	TimestampTz maxev;
	TimestampTz seen_at;
} StoredOffset;

/*
 * take_in_invalidations: take in the invalidations sent since, outside a
 * transaction, by running an empty one (relcache callbacks need one).
 */
static void
take_in_invalidations(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	CommitTransactionCommand();
}

/* bumped by a change of any server, user mapping or role */
static uint64 config_changes = 0;

static void
config_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	config_changes++;
}

static void
worker_exit(int code, Datum arg)
{
	SspWorkerSlot *slot = (SspWorkerSlot *) DatumGetPointer(arg);

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->pid = 0;
	LWLockRelease(ssp_shared->lock);
}

/* open_source: a stream of the view and its consumer, checked. */
static void
open_source(Worker *w, int i)
{
	SspStream  *stream = ssp_stream_open(w->view->streams[i]);

	if (w->view->some_columns)
	{
		int			c;

		/* decode only what the view reads */
		stream->needed = palloc0(sizeof(bool) * Max(stream->ncolumns, 1));
		for (c = 0; c < stream->ncolumns; c++)
			stream->needed[c] = list_member_int(w->view->columns, stream->columns[c].attnum);
	}
	if (pg_class_aclcheck(stream->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for stream \"%s\"", stream->relname),
				 errdetail("The worker of continuous view \"%s\" runs as its owner, who cannot read the stream.",
						   w->view->name)));
	w->src.streams[i] = stream;
	w->signature[i] = ssp_server_kafka_signature(stream->serverid, GetUserId());
	w->kafka[i] = ssp_kafka_consumer(stream->serverid, GetUserId(), w->view->topics[i],
									 psprintf("ssp.%s.%u", get_database_name(MyDatabaseId), w->view->view));
}

/*
 * config_changed: have the Kafka properties of a source's server changed
 * since the worker built its consumers?  If there were invalidations since
 * the last look (taken in by each batch's transaction, or by a transaction
 * of its own when take_in), builds the properties again to compare;
 * errors if they are no longer allowed.
 */
static bool
config_changed(Worker *w, bool take_in)
{
	static uint64 seen = 0;
	bool		changed = false;
	int			i;

	if (take_in)
		take_in_invalidations();
	if (config_changes == seen)
		return false;
	seen = config_changes;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	for (i = 0; i < w->src.n && !changed; i++)
		changed = strcmp(w->signature[i],
						 ssp_server_kafka_signature(w->src.streams[i]->serverid,
													GetUserId())) != 0;
	CommitTransactionCommand();
	if (changed)
		ereport(LOG,
				(errmsg("ssp: the Kafka properties of continuous view \"%s\" changed; its worker starts again",
						w->view->name)));
	return changed;
}

/*
 * error_text: an error as ssp.views.last_error shows it, its detail
 * included (the cause of a broker error is there; ssp's details never show
 * a secret).
 */
static const char *
error_text(ErrorData *edata)
{
	return edata->detail ? psprintf("%s: %s", edata->message, edata->detail) : edata->message;
}

/* load: the view, its streams and its stored offsets, in a transaction. */
static bool
load(Worker *w, Oid viewoid, MemoryContext cxt)
{
	MemoryContext old;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewoid)};
	uint64		r;
	int			i;
	bool		ok = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	old = MemoryContextSwitchTo(cxt);
	w->view = ssp_view_load(viewoid, true);
	if (w->view == NULL || w->view->paused || w->part >= w->view->parallelism)
		ok = false;
	else
	{
		w->view->part = w->part;
		ssp_view_repair_dependencies(w->view);
		ssp_view_generate(w->view);
		w->src.n = w->view->nsources;
		w->src.streams = palloc0(sizeof(SspStream *) * w->src.n);
		w->src.base = palloc0(sizeof(int) * w->src.n);
		w->src.nparts = palloc0(sizeof(int) * w->src.n);
		w->kafka = palloc0(sizeof(SspKafka *) * w->src.n);
		w->signature = palloc0(sizeof(char *) * w->src.n);
		for (i = 0; i < w->src.n; i++)
			open_source(w, i);
	}

	if (ok)
	{
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
			StoredOffset *so = palloc(sizeof(StoredOffset));
			bool		isnull;
			Datum		d;

			so->source = -1;
			for (i = 0; i < w->src.n; i++)
				if (strcmp(topic, w->view->topics[i]) == 0)
					so->source = i;
			if (so->source < 0)
				continue;		/* a topic the view no longer reads */
			so->partition = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
			so->next = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
			d = SPI_getbinval(tup, desc, 4, &isnull);
			so->maxev = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
			d = SPI_getbinval(tup, desc, 5, &isnull);
			so->seen_at = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
			w->stored = lappend(w->stored, so);
		}
		w->et.watermark = w->view->watermark;
		SPI_finish();
	}
	MemoryContextSwitchTo(old);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return ok;
}

/*
 * partition_count: how many partitions a source's topic has; waits
 * (status "waiting for broker") while the broker cannot say.
 */
static int
partition_count(Worker *w, int i)
{
	volatile int n = -1;

	while (n < 0)
	{
		MemoryContext old = CurrentMemoryContext;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PG_TRY();
		{
			n = ssp_kafka_partition_count(w->kafka[i]);
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(old);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			ssp_slot_set_error(w->slot, error_text(edata));
			ssp_slot_set_status(w->slot, "waiting for broker", -1);
			FreeErrorData(edata);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 1000, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			/* told of other brokers meanwhile: a fresh worker for them */
			if (config_changed(w, true))
				proc_exit(0);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	return n;
}

/*
 * connect_topics: number the partitions of every topic as slots (those
 * the broker has, and any more that offsets were stored for), set each
 * slot's state from the stored offsets, and assign them.
 */
static void
connect_topics(Worker *w, MemoryContext cxt)
{
	SspSources *src = &w->src;
	ListCell   *lc;
	int			n;
	int			i;
	int			p;

	for (i = 0; i < src->n; i++)
		src->nparts[i] = partition_count(w, i);
	foreach(lc, w->stored)
	{
		StoredOffset *so = lfirst(lc);

		src->nparts[so->source] = Max(src->nparts[so->source], so->partition + 1);
	}
	src->nslots = 0;
	for (i = 0; i < src->n; i++)
	{
		src->base[i] = src->nslots;
		src->nslots += src->nparts[i];
	}
	n = Max(src->nslots, 1);
	w->next = MemoryContextAlloc(cxt, sizeof(int64) * n);
	w->committed = MemoryContextAlloc(cxt, sizeof(int64) * n);
	w->et.maxev = MemoryContextAlloc(cxt, sizeof(TimestampTz) * n);
	w->et.seen_at = MemoryContextAlloc(cxt, sizeof(TimestampTz) * n);
	w->et.lagging = MemoryContextAlloc(cxt, sizeof(bool) * n);
	w->et.nparts = src->nslots;
	w->eof = MemoryContextAlloc(cxt, sizeof(int64) * n);
	w->lost = MemoryContextAllocZero(cxt, sizeof(bool) * n);
	for (p = 0; p < src->nslots; p++)
	{
		w->next[p] = -1;
		w->committed[p] = -1;
		w->et.maxev[p] = DT_NOBEGIN;
		w->et.seen_at[p] = DT_NOBEGIN;
		w->et.lagging[p] = true;
		w->eof[p] = -1;
	}
	foreach(lc, w->stored)
	{
		StoredOffset *so = lfirst(lc);

		p = src->base[so->source] + so->partition;
		w->next[p] = so->next;
		w->committed[p] = so->next;
		w->et.maxev[p] = so->maxev;
		w->et.seen_at[p] = so->seen_at;
	}
	/* a partition with nothing applied yet is watched from now on */
	for (p = 0; p < src->nslots; p++)
		if (w->et.seen_at[p] == DT_NOBEGIN)
			w->et.seen_at[p] = GetCurrentTimestamp();
	/* with ssp.parallelism, the other workers read the other partitions */
	if (w->view->parallelism > 1)
		for (i = 0; i < src->n; i++)
			for (p = 0; p < src->nparts[i]; p++)
				if (p % w->view->parallelism != w->part)
					w->next[src->base[i] + p] = SSP_OFFSET_NOT_OURS;
	for (i = 0; i < src->n; i++)
		ssp_kafka_assign_at(w->kafka[i], src->nparts[i], w->next + src->base[i]);
}

/*
 * lag: messages not yet applied past next[] (per slot), over every topic;
 * sets lagging per slot if not NULL.
 */
static int64
lag(Worker *w, const int64 *next, bool *lagging)
{
	int64		total = -1;
	int			i;

	for (i = 0; i < w->src.n; i++)
	{
		int64		l = ssp_kafka_lag(w->kafka[i], w->src.nparts[i], next + w->src.base[i],
									  lagging ? lagging + w->src.base[i] : NULL);

		if (l >= 0)
			total = Max(total, 0) + l;
	}
	return total;
}

/*
 * update_rate: the messages applied a second, smoothed over about the last
 * SSP_RATE_SECONDS (an exponential average of each batch's rate, weighted
 * by the time since the last one): with the lag, ssp.views tells how long
 * a catch-up has left.  While no batch comes, ssp.worker_status() decays
 * it the same way.
 */
static void
update_rate(Worker *w, int n)
{
	TimestampTz now = GetCurrentTimestamp();
	double		dt = (double) (now - w->rate_at) / USECS_PER_SEC;
	double		r;

	if (dt <= 0)
		return;
	r = n / dt;
	w->rate = w->rate < 0 ? r : w->rate + (r - w->rate) * (1 - exp(-dt / SSP_RATE_SECONDS));
	w->rate_at = now;
	ssp_slot_set_rate(w->slot, w->rate, now);
}

/* more messages than this waiting (or a batch's worth) is "catching up" */
#define SSP_CATCHING_UP 20000

/* report_status: the worker's state and lag (messages not yet applied). */
static void
report_status(Worker *w, int64 lag)
{
	const char *trouble = NULL;
	int			i;

	for (i = 0; i < w->src.n && trouble == NULL; i++)
		trouble = ssp_kafka_trouble(w->kafka[i]);
	if (trouble)
	{
		ssp_slot_set_error(w->slot, trouble);
		ssp_slot_set_status(w->slot, "waiting for broker", lag);
	}
	else
		ssp_slot_set_status(w->slot, lag > Min(w->view->batch_size, SSP_CATCHING_UP) ?
							"catching up" : "running", lag);
}

/* how often a worker asks whether its topics have more partitions */
#define SSP_PARTITION_CHECK_MS 5000

/*
 * partitions_added: has a source's topic more partitions than the worker
 * reads (kafka-topics --alter --partitions)?  Asked every few seconds, busy
 * or idle; then a fresh worker reads them all, the new ones from their
 * start.  A broker that does not answer says nothing.
 */
static bool
partitions_added(Worker *w)
{
	static TimestampTz checked = 0;
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	if (checked == 0)
		checked = now;
	if (!TimestampDifferenceExceeds(checked, now, SSP_PARTITION_CHECK_MS))
		return false;
	checked = now;
	for (i = 0; i < w->src.n; i++)
	{
		int			n = ssp_kafka_partition_count_try(w->kafka[i], 1000);

		if (n > w->src.nparts[i])
		{
			ereport(LOG,
					(errmsg("topic \"%s\" of continuous view \"%s\" has %d partitions, %d more than its worker reads; the worker starts again to read them",
							w->view->topics[i], w->view->name, n, n - w->src.nparts[i])));
			return true;
		}
	}
	return false;
}

/*
 * collect: poll messages from every topic until the batch is full or its
 * time is up; returns how many, and sets *dirty if a partition's end moved
 * past its offset.
 */
static int
collect(Worker *w, WaitEventSet *wait, bool *dirty)
{
	SspSources *src = &w->src;
	int			n = 0;
	TimestampTz deadline = 0;
	TimestampTz last_report = GetCurrentTimestamp();
	int			p;
	int			i;

	*dirty = false;
	for (;;)
	{
		TimestampTz now;
		long		timeout;
		WaitEvent	event;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		for (i = 0; i < src->n; i++)
		{
			int			got = ssp_kafka_poll_batch(w->kafka[i], w->msgs + n, w->view->batch_size - n,
												   w->eof + src->base[i], w->lost + src->base[i],
												   src->nparts[i]);
			int			m;

			for (m = n; m < n + got; m++)
				w->msgs[m].source = i;
			n += got;
		}
		for (p = 0; p < src->nslots; p++)
		{
			if (w->eof[p] > w->next[p] && w->eof[p] >= 0)
				*dirty = true;
			if (w->lost[p])
				return n;		/* apply what there is, then recover */
		}

		now = GetCurrentTimestamp();
		if ((n > 0 || *dirty) && deadline == 0)
			deadline = TimestampTzPlusMilliseconds(now, w->view->commit_interval_ms);
		if (n >= w->view->batch_size || (deadline != 0 && now >= deadline))
			return n;
		if (TimestampDifferenceExceeds(last_report, now, 1000))
		{
			if (config_changed(w, true) || partitions_added(w))
			{
				w->restart = true;
				return 0;
			}
			/* quiet partitions went idle: a batch of nothing moves the watermark */
			if (w->view->late_sql && n == 0 &&
				ssp_watermark(w->et.maxev, w->et.seen_at, w->et.lagging, src->nslots,
							  w->et.watermark, w->view->idle_ms, w->view->grace) != w->et.watermark)
			{
				*dirty = true;
				return 0;
			}
			report_status(w, lag(w, w->next, NULL));
			/* what the last batches wrote, if it waited (pgstat_report_stat) */
			pgstat_report_stat(false);
			last_report = now;
		}
		timeout = deadline ? TimestampDifferenceMilliseconds(now, deadline) : 1000;
		(void) WaitEventSetWait(wait, Max(timeout, 1), &event, 1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		for (i = 0; i < src->n; i++)
			ssp_kafka_drain_fd(w->kafka[i]);
	}
}

/*
 * recover_lost: for each partition whose next offset the broker no longer
 * has, record the loss and go on from the oldest message there is.
 * Returns false if the view no longer wants this worker.
 */
static bool
recover_lost(Worker *w)
{
	SspSources *src = &w->src;
	int			i;

	for (i = 0; i < src->n; i++)
	{
		bool		reassign = false;
		int			p;

		for (p = 0; p < src->nparts[i]; p++)
		{
			int			slot = src->base[i] + p;
			int64		low,
						high,
						from = Max(w->next[slot], 0);

			if (!w->lost[slot])
				continue;
			w->lost[slot] = false;
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			ssp_kafka_watermarks(w->kafka[i], p, &low, &high);
			CommitTransactionCommand();
			if (from < low)
			{
				/* deleted by retention before the view read them */
				if (!ssp_record_lost(w->view, i, p, w->committed[slot], from, low))
					return false;
				w->committed[slot] = low;
			}
			else
				ereport(WARNING,
						(errmsg("continuous view \"%s\": offset %lld of partition %d of topic \"%s\" is past its end (%lld); reading from %lld",
								w->view->name, (long long) from, p, w->view->topics[i],
								(long long) high, (long long) low),
						 errdetail("The topic may have been deleted and created again.")));
			w->next[slot] = low;
			w->eof[slot] = -1;	/* the end seen was the old topic's */
			reassign = true;
		}
		if (reassign)
			ssp_kafka_assign_at(w->kafka[i], src->nparts[i], w->next + src->base[i]);
	}
	return true;
}

/* release_messages: the messages of the batch, applied or not. */
static void
release_messages(Worker *w)
{
	int			i;

	for (i = 0; i < w->src.n; i++)
		ssp_kafka_release(w->kafka[i]);
}

/* run: the worker's life; returns when the view no longer wants it. */
static void
run(Worker *w, Oid viewoid)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "ssp worker",
											  ALLOCSET_DEFAULT_SIZES);
	WaitEventSet *wait;
	int			nslots;
	int			i;

	if (!load(w, viewoid, cxt))
		return;
	connect_topics(w, cxt);
	nslots = w->src.nslots;
	/* wake on the latch, and when librdkafka has messages for any topic */
	wait = CreateWaitEventSet(cxt, 2 + w->src.n);
	AddWaitEventToSet(wait, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wait, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (i = 0; i < w->src.n; i++)
		AddWaitEventToSet(wait, WL_SOCKET_READABLE, ssp_kafka_event_fd(w->kafka[i]), NULL, NULL);
	w->msgs = MemoryContextAlloc(cxt, sizeof(SspMessage) * w->view->batch_size);
	ssp_slot_set_status(w->slot, "running", -1);
	w->rate_at = GetCurrentTimestamp();
	w->rate = -1;
	ssp_slot_set_rate(w->slot, 0, w->rate_at);
	/* what a worker before this one committed but did not publish */
	ssp_outbox_publish(w->view);

	for (;;)
	{
		bool		dirty;
		int			n;
		int64	   *next;
		int64		batch_lag;
		int			p;

		if (partitions_added(w))
			return;				/* a fresh worker reads them all */
		n = collect(w, wait, &dirty);
		if (w->restart)
		{
			release_messages(w);
			return;				/* nothing applied: a fresh worker reads it */
		}
		next = palloc(sizeof(int64) * Max(nslots, 1));

		/* the offsets this batch moves to */
		for (p = 0; p < nslots; p++)
			next[p] = w->eof[p] > w->next[p] ? w->eof[p] : -1;
		for (i = 0; i < n; i++)
		{
			SspMessage *m = &w->msgs[i];

			if (m->partition < w->src.nparts[m->source])
			{
				p = SSP_SLOT(&w->src, m);
				if (m->offset + 1 > Max(next[p], w->next[p]))
					next[p] = m->offset + 1;
			}
		}

		/* which partitions still have messages beyond this batch */
		{
			int64	   *after = palloc(sizeof(int64) * Max(nslots, 1));

			for (p = 0; p < nslots; p++)
				after[p] = next[p] >= 0 ? next[p] : w->next[p];
			batch_lag = lag(w, after, w->et.lagging);
			pfree(after);
		}
		pgstat_report_activity(STATE_RUNNING, "applying a batch");
		if (!ssp_apply_batch(w->view, &w->src, w->msgs, n, w->committed, next, &w->et))
		{
			release_messages(w);
			return;				/* dropped, paused or reset */
		}
		pgstat_report_activity(STATE_IDLE, NULL);
		/* the batch's writes, for autovacuum and autoanalyze of the view's tables */
		pgstat_report_stat(false);
		release_messages(w);
		/* a batch went through: the last worker's error is over */
		ssp_slot_set_error(w->slot, "");
		for (p = 0; p < nslots; p++)
			if (next[p] >= 0)
				w->next[p] = w->committed[p] = next[p];
		/* for lag tools: the consumer group ssp.DB.OID */
		for (i = 0; i < w->src.n; i++)
			ssp_kafka_commit(w->kafka[i], w->src.nparts[i], next + w->src.base[i]);
		pfree(next);
		if (!recover_lost(w))
			return;
		update_rate(w, n);
		report_status(w, batch_lag);
		ssp_outbox_publish(w->view);
		if (config_changed(w, false))
			return;
	}
}

/*
 * ssp_worker_main: entry point of a view's worker; the view's oid is the
 * argument, the database and owner are in bgw_extra.
 */
void
ssp_worker_main(Datum arg)
{
	Oid			viewoid = DatumGetObjectId(arg);
	SspWorkerArgs wargs;
	Worker		w;

	memcpy(&wargs, MyBgworkerEntry->bgw_extra, sizeof(wargs));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/*
	 * Connect as the bootstrap superuser, then act as the view's owner for
	 * everything, as REFRESH MATERIALIZED VIEW does: the owner need not be
	 * able to log in, can do no more than it may, and (a security-restricted
	 * operation) cannot SET ROLE back to the session's superuser.
	 */
	BackgroundWorkerInitializeConnectionByOid(wargs.dboid, InvalidOid, 0);

	ssp_bgworker_session();
	SetUserIdAndSecContext(wargs.owner,
						   SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);

	/*
	 * One worker per view and part, however many were started: a second
	 * one leaves before it touches anything.
	 */
	if (!ssp_lock_process(SSP_LOCK_WORKER, viewoid, wargs.part))
	{
		ereport(LOG,
				(errmsg("ssp: another worker already runs continuous view %u (part %d); this one exits",
						viewoid, wargs.part)));
		proc_exit(0);
	}

	memset(&w, 0, sizeof(w));
	w.part = wargs.part;
	w.slot = ssp_worker_slot(wargs.dboid, viewoid, wargs.part, true);
	if (w.slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no room in shared memory for the worker of view %u", viewoid)));
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	w.slot->pid = MyProcPid;
	w.slot->failed = false;
	w.slot->confirmed = true;
	LWLockRelease(ssp_shared->lock);
	ssp_slot_set_status(w.slot, "starting", -1);
	before_shmem_exit(worker_exit, PointerGetDatum(w.slot));
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, config_invalidate, 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, config_invalidate, 0);
	CacheRegisterSyscacheCallback(AUTHOID, config_invalidate, 0);

	PG_TRY();
	{
		run(&w, viewoid);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		ssp_slot_set_error(w.slot, error_text(edata));
		ssp_slot_set_status(w.slot, "failed", -1);
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		w.slot->failed = true;
		LWLockRelease(ssp_shared->lock);
		FlushErrorState();
		RESUME_INTERRUPTS();
		ReThrowError(edata);
	}
	PG_END_TRY();
	proc_exit(0);
}
