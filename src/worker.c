/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The background worker of one continuous view: consume its stream's
 *	  topic from the offsets stored in Postgres, and apply it batch by
 *	  batch (batch.c), each batch one transaction with its offsets.
 *
 * The worker runs as the view's owner.  It waits on its latch and on a
 * pipe that librdkafka writes when messages arrive; it never sleeps.  A
 * batch closes at ssp.batch_size messages or ssp.commit_interval after its
 * first message.  On an error it records it in shared memory (ssp.views)
 * and exits; the scheduler restarts it with backoff.  It exits cleanly
 * when its view is dropped, paused or reset, and the scheduler starts a
 * fresh one where needed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
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
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "window.h"

#include "ssp.h"
#include "batch.h"
#include "shmem.h"
#include "supervisor.h"

PGDLLEXPORT void ssp_worker_main(Datum arg);

typedef struct Worker
{
	SspView    *view;
	SspStream  *stream;
	SspKafka   *kafka;
	SspWorkerSlot *slot;
	int			nparts;
	int64	   *next;			/* per partition: next offset, -1: oldest */
	SspEventTime et;			/* per partition: event times (windows) */
	int64	   *eof;			/* per partition: end seen, -1: none */
	bool	   *lost;			/* per partition: next offset deleted */
	SspMessage *msgs;
} Worker;

static void
worker_exit(int code, Datum arg)
{
	SspWorkerSlot *slot = (SspWorkerSlot *) DatumGetPointer(arg);

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->pid = 0;
	LWLockRelease(ssp_shared->lock);
}

/* grow_partitions: room for n partitions, the new ones unread. */
static void
grow_partitions(Worker *w, int n, MemoryContext cxt)
{
	int			p;

	if (w->next == NULL)
	{
		w->next = MemoryContextAlloc(cxt, sizeof(int64) * n);
		w->et.maxev = MemoryContextAlloc(cxt, sizeof(TimestampTz) * n);
		w->et.seen_at = MemoryContextAlloc(cxt, sizeof(TimestampTz) * n);
		w->et.lagging = MemoryContextAlloc(cxt, sizeof(bool) * n);
	}
	else
	{
		w->next = repalloc(w->next, sizeof(int64) * n);
		w->et.maxev = repalloc(w->et.maxev, sizeof(TimestampTz) * n);
		w->et.seen_at = repalloc(w->et.seen_at, sizeof(TimestampTz) * n);
		w->et.lagging = repalloc(w->et.lagging, sizeof(bool) * n);
	}
	for (p = w->nparts; p < n; p++)
	{
		w->next[p] = -1;
		w->et.maxev[p] = DT_NOBEGIN;
		w->et.seen_at[p] = DT_NOBEGIN;
		w->et.lagging[p] = true;
	}
	w->nparts = n;
	w->et.nparts = n;
}

/* load: the view, its stream and its stored offsets, in a transaction. */
static bool
load(Worker *w, Oid viewoid, MemoryContext cxt)
{
	MemoryContext old;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewoid)};
	uint64		i;
	bool		ok = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	old = MemoryContextSwitchTo(cxt);
	w->view = ssp_view_load(viewoid, true);
	if (w->view == NULL || w->view->paused)
		ok = false;
	else
	{
		ssp_view_repair_dependencies(w->view);
		w->stream = ssp_stream_open(w->view->stream);
		if (w->view->some_columns)
		{
			int			i;

			/* decode only what the view reads */
			w->stream->needed = palloc0(sizeof(bool) * Max(w->stream->ncolumns, 1));
			for (i = 0; i < w->stream->ncolumns; i++)
				w->stream->needed[i] = list_member_int(w->view->columns,
													   w->stream->columns[i].attnum);
		}
		if (pg_class_aclcheck(w->stream->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for stream \"%s\"", w->stream->relname),
					 errdetail("The worker of continuous view \"%s\" runs as its owner, who cannot read the stream.",
							   w->view->name)));
		w->kafka = ssp_kafka_consumer(w->stream->serverid, GetUserId(), w->view->topic, true);
	}
	MemoryContextSwitchTo(old);

	if (ok)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "ssp: SPI_connect failed");
		if (SPI_execute_with_args("SELECT partition, next_offset, max_event_time, last_event_at "
								  "FROM ssp.offsets WHERE view = $1::regclass",
								  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "ssp: could not read ssp.offsets");
		w->nparts = 0;
		grow_partitions(w, 1, cxt);
		w->nparts = w->et.nparts = 0;
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			int			p = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
			Datum		d;

			if (p >= w->nparts)
				grow_partitions(w, p + 1, cxt);
			w->next[p] = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
			d = SPI_getbinval(tup, desc, 3, &isnull);
			w->et.maxev[p] = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
			d = SPI_getbinval(tup, desc, 4, &isnull);
			w->et.seen_at[p] = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
		}
		w->et.watermark = w->view->watermark;
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	return ok;
}

/*
 * connect_topic: the topic's partitions, assigned at the stored offsets;
 * waits (status "waiting for broker") while the broker cannot say.
 */
static void
connect_topic(Worker *w, MemoryContext cxt)
{
	volatile int n = -1;

	while (n < 0)
	{
		MemoryContext old = CurrentMemoryContext;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PG_TRY();
		{
			n = ssp_kafka_partition_count(w->kafka);
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(old);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			ssp_slot_set_error(w->slot, edata->message);
			ssp_slot_set_status(w->slot, "waiting for broker", -1);
			FreeErrorData(edata);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 1000, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	if (n > w->nparts)
		grow_partitions(w, n, cxt);
	w->eof = MemoryContextAlloc(cxt, sizeof(int64) * Max(w->nparts, 1));
	memset(w->eof, 0xff, sizeof(int64) * Max(w->nparts, 1));	/* all -1 */
	w->lost = MemoryContextAllocZero(cxt, sizeof(bool) * Max(w->nparts, 1));
	ssp_kafka_assign_at(w->kafka, w->nparts, w->next);
}

/* report_status: the worker's state and lag (messages not yet applied). */
static void
report_status(Worker *w, int64 lag)
{
	const char *trouble = ssp_kafka_trouble(w->kafka);

	if (trouble)
	{
		ssp_slot_set_error(w->slot, trouble);
		ssp_slot_set_status(w->slot, "waiting for broker", lag);
	}
	else
		ssp_slot_set_status(w->slot, lag > w->view->batch_size ? "catching up" : "running", lag);
}

/*
 * collect: poll messages until the batch is full or its time is up; returns
 * how many, and sets *dirty if a partition's end moved past its offset.
 */
static int
collect(Worker *w, int fd, bool *dirty)
{
	int			n = 0;
	TimestampTz deadline = 0;
	TimestampTz last_report = GetCurrentTimestamp();
	int			p;

	*dirty = false;
	for (;;)
	{
		TimestampTz now;
		long		timeout;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		n += ssp_kafka_poll_batch(w->kafka, w->msgs + n, w->view->batch_size - n,
								  w->eof, w->lost, w->nparts);
		for (p = 0; p < w->nparts; p++)
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
			report_status(w, ssp_kafka_lag(w->kafka, w->nparts, w->next, NULL));
			last_report = now;
		}
		timeout = deadline ? TimestampDifferenceMilliseconds(now, deadline) : 1000;
		(void) WaitLatchOrSocket(MyLatch,
								 WL_LATCH_SET | WL_SOCKET_READABLE | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 fd, Max(timeout, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		ssp_kafka_drain_fd(w->kafka);
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
	bool		reassign = false;
	int			p;

	for (p = 0; p < w->nparts; p++)
	{
		int64		low,
					high,
					from = Max(w->next[p], 0);

		if (!w->lost[p])
			continue;
		w->lost[p] = false;
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		ssp_kafka_watermarks(w->kafka, p, &low, &high);
		CommitTransactionCommand();
		if (from < low)
		{
			/* deleted by retention before the view read them */
			if (!ssp_record_lost(w->view, p, from, low))
				return false;
		}
		else
			ereport(WARNING,
					(errmsg("continuous view \"%s\": offset %lld of partition %d of topic \"%s\" is past its end (%lld); reading from %lld",
							w->view->name, (long long) from, p, w->view->topic,
							(long long) high, (long long) low),
					 errdetail("The topic may have been deleted and created again.")));
		w->next[p] = low;
		reassign = true;
	}
	if (reassign)
		ssp_kafka_assign_at(w->kafka, w->nparts, w->next);
	return true;
}

/* run: the worker's life; returns when the view no longer wants it. */
static void
run(Worker *w, Oid viewoid)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "ssp worker",
											  ALLOCSET_DEFAULT_SIZES);
	int			fd;

	if (!load(w, viewoid, cxt))
		return;
	connect_topic(w, cxt);
	fd = ssp_kafka_event_fd(w->kafka);
	w->msgs = MemoryContextAlloc(cxt, sizeof(SspMessage) * w->view->batch_size);
	ssp_slot_set_status(w->slot, "running", -1);

	for (;;)
	{
		bool		dirty;
		int			n = collect(w, fd, &dirty);
		int64	   *next = palloc(sizeof(int64) * w->nparts);
		int64		lag;
		int			i,
					p;

		/* the offsets this batch moves to */
		for (p = 0; p < w->nparts; p++)
			next[p] = w->eof[p] > w->next[p] ? w->eof[p] : -1;
		for (i = 0; i < n; i++)
		{
			p = w->msgs[i].partition;
			if (p < w->nparts && w->msgs[i].offset + 1 > Max(next[p], w->next[p]))
				next[p] = w->msgs[i].offset + 1;
		}

		/* which partitions still have messages beyond this batch */
		{
			int64	   *after = palloc(sizeof(int64) * w->nparts);

			for (p = 0; p < w->nparts; p++)
				after[p] = next[p] >= 0 ? next[p] : w->next[p];
			lag = ssp_kafka_lag(w->kafka, w->nparts, after, w->et.lagging);
			pfree(after);
		}
		pgstat_report_activity(STATE_RUNNING, "applying a batch");
		if (!ssp_apply_batch(w->view, w->stream, w->msgs, n, w->nparts, next,
							 &w->et))
		{
			ssp_kafka_release(w->kafka);
			return;				/* dropped, paused or reset */
		}
		pgstat_report_activity(STATE_IDLE, NULL);
		ssp_kafka_release(w->kafka);
		/* a batch went through: the last worker's error is over */
		ssp_slot_set_error(w->slot, "");
		for (p = 0; p < w->nparts; p++)
			if (next[p] >= 0)
				w->next[p] = next[p];
		pfree(next);
		if (!recover_lost(w))
			return;
		report_status(w, lag);
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
	SetUserIdAndSecContext(wargs.owner,
						   SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);

	memset(&w, 0, sizeof(w));
	w.slot = ssp_worker_slot(wargs.dboid, viewoid, true);
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
		ssp_slot_set_error(w.slot, edata->message);
		ssp_slot_set_status(w.slot, "failed", -1);
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		w.slot->failed = true;
		LWLockRelease(ssp_shared->lock);
		RESUME_INTERRUPTS();
		PG_RE_THROW();
	}
	PG_END_TRY();
	proc_exit(0);
}
