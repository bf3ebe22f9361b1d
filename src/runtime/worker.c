/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  A worker process: started for one continuous view, it consumes the
 *	  view's streams' topics (one, or two for a join of streams) from the
 *	  offsets stored in Postgres and applies them batch by batch (batch.c),
 *	  each view's batch with its offsets; as its streams' reader it applies
 *	  the other views of those streams too (reader.c).
 *
 * The worker runs as its views' owner.  It waits on its latch and on the
 * pipes that librdkafka writes when messages arrive; it never sleeps.  A
 * batch closes at ssp.batch_size messages or ssp.commit_interval after its
 * first message.  On an error it records it in shared memory (ssp.views)
 * and exits; the scheduler restarts it with backoff.  A view dropped,
 * paused or reset leaves it, and it exits when it has no view left; the
 * scheduler starts a fresh one where needed.  It also exits, to be started
 * again at once, when the Kafka properties of its streams' servers (the
 * server's options, the owner's user mapping, whether their writers are
 * superusers) change: a new broker list or a rotated password takes effect
 * within seconds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <malloc.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "portability/instr_time.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
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
#include "registry/registry.h"
#include "runtime/reader.h"
#include "runtime/shmem.h"
#include "runtime/supervisor.h"
#include "compile/view.h"

/*
 * While a batch fills, collect decodes what it has in chunks of at least
 * this many messages (each chunk a transaction) rather than wait.
 */
#define SSP_DECODE_AHEAD 4096

/* how long a worker's first question to its brokers goes unseen */
#define SSP_BROKER_FIRST_MS 1000

PGDLLEXPORT void ssp_worker_main(Datum arg);




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

/* bumped by a change of any server, user mapping or role, or relation */
static uint64 config_changes = 0;

static void
config_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	config_changes++;
}

/* and by a change of any relation: a stream, perhaps (config_changed) */
static void
stream_invalidate(Datum arg, Oid relid)
{
	config_changes++;
}

/*
 * worker_exit: the slots of the views this process applied, and its
 * reader's, are free again; the scheduler starts a worker for each of its
 * views that still wants one.
 */
static void
worker_exit(int code, Datum arg)
{
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];

		if (s->in_use && s->pid == MyProcPid)
		{
			s->pid = 0;
			s->attached = false;
			s->detach = false;
			/* not failed: stopped (ssp.reset, new options), to be started again */
			if (!s->failed)
			{
				strlcpy(s->status, "starting", SSP_STATUS_LEN);
				s->lag = -1;
			}
		}
		if (s->in_use && s->handover_to == MyProcPid)
			s->handover_to = 0;
	}
	for (i = 0; i < ssp_shared->nreaders; i++)
	{
		SspReaderSlot *r = &ssp_shared->readers[i];

		if (r->in_use && r->pid == MyProcPid)
		{
			r->in_use = false;
			r->pid = 0;
			r->latch = NULL;
		}
	}
	LWLockRelease(ssp_shared->lock);
}

/*
 * open_sources: the process's streams and consumers, from its first view:
 * the consumers are that view's owner's (every view of a reader has that
 * owner).
 */
static void
open_sources(SspWorker *w, SspServed *s, MemoryContext cxt)
{
	MemoryContext old;
	int			i;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	old = MemoryContextSwitchTo(cxt);
	w->src.n = s->src.n;
	w->src.base = palloc0(sizeof(int) * w->src.n);
	w->src.nparts = palloc0(sizeof(int) * w->src.n);
	w->kafka = palloc0(sizeof(SspKafka *) * w->src.n);
	w->signature = palloc0(sizeof(char *) * w->src.n);
	for (i = 0; i < w->src.n; i++)
	{
		SspStream  *stream = s->src.streams[i];

		w->signature[i] = ssp_server_kafka_signature(stream->serverid, GetUserId());
		w->kafka[i] = ssp_kafka_consumer(stream->serverid, GetUserId(), s->view->topics[i],
										 psprintf("ssp.%s.%u", get_database_name(MyDatabaseId),
												  s->view->view));
	}
	MemoryContextSwitchTo(old);
	CommitTransactionCommand();
}

/*
 * config_changed: have the Kafka properties of a source's server changed
 * since the worker built its consumers?  If there were invalidations since
 * the last look (taken in by each batch's transaction, or by a transaction
 * of its own when take_in), builds the properties again to compare;
 * errors if they are no longer allowed.
 */
static bool
config_changed(SspWorker *w, bool take_in)
{
	static uint64 seen = 0;
	bool		changed = false;
	int			i;

	if (take_in)
		take_in_invalidations();
	/* the requests a reader answered may have taken its last view */
	if (config_changes == seen || w->served == NIL)
		return false;
	seen = config_changes;
	ssp_reader_stream_locks(w, true);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	for (i = 0; i < w->src.n && !changed; i++)
		changed = strcmp(w->signature[i],
						 ssp_server_kafka_signature(w->src.streams[i]->serverid,
													GetUserId())) != 0;
	if (changed)
		ereport(LOG,
				(errmsg("ssp: the Kafka properties of the streams of continuous view \"%s\" changed; its worker starts again",
						((SspServed *) linitial(w->served))->view->name)));
	/*
	 * A stream altered (a column's field, a column added): its views'
	 * decoding follows the stream as it was opened, so a fresh worker opens
	 * it again; decoding the old way would read what INSERT now writes
	 * elsewhere as nulls.
	 */
	for (i = 0; i < w->src.n && !changed; i++)
		if (w->definition && strcmp(w->definition[i], ssp_stream_signature(w->src.streams[i]->relid)) != 0)
		{
			changed = true;
			ereport(LOG,
					(errmsg("ssp: stream \"%s\" of continuous view \"%s\" was altered; its worker starts again",
							w->src.streams[i]->relname,
							((SspServed *) linitial(w->served))->view->name)));
		}
	CommitTransactionCommand();
	ssp_reader_stream_locks(w, false);
	return changed;
}

/*
 * wait_out: in a PG_CATCH, an error the worker waits out rather than fails
 * on (a broker or a schema registry that cannot answer): the transaction
 * aborted, each of its views shows the status and the error, then a second
 * passes; if the server's options changed meanwhile, a fresh worker takes
 * over.  Leaves CurrentMemoryContext at cxt.
 */
static void
wait_out(SspWorker *w, MemoryContext cxt, const char *status)
{
	ErrorData  *edata;
	ListCell   *lc;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	foreach(lc, w->served)
	{
		SspServed  *s = lfirst(lc);

		ssp_slot_set_error(s->slot, ssp_error_text(edata));
		ssp_slot_set_status(s->slot, status, -1);
	}
	FreeErrorData(edata);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 1000, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	if (config_changed(w, true))
		proc_exit(0);
}

/*
 * partition_count: how many partitions a source's topic has; waits
 * (status "waiting for broker") while the broker cannot say.  Brokers that
 * do not answer within a second (down, or behind a firewall that drops
 * rather than refuses) show at once, not after ssp.broker_timeout; the
 * scheduler then keeps the other views of the stream from starting a
 * worker each to wait the same way (supervisor.c, to_reader).
 */
static int
partition_count(SspWorker *w, int i)
{
	volatile int n;
	ListCell   *lc;
	instr_time	asked;
	instr_time	answered;

	INSTR_TIME_SET_CURRENT(asked);
	n = ssp_kafka_partition_count_try(w->kafka[i], SSP_BROKER_FIRST_MS);
	INSTR_TIME_SET_CURRENT(answered);
	INSTR_TIME_SUBTRACT(answered, asked);

	/*
	 * Silent for the whole second; an error that came sooner (a refused
	 * connection, a failed authentication) is the full request's to tell.
	 */
	if (n < 0 && INSTR_TIME_GET_MILLISEC(answered) >= SSP_BROKER_FIRST_MS - 50)
		foreach(lc, w->served)
		{
			SspServed  *s = lfirst(lc);
			char	   *error = psprintf("the brokers of stream \"%s\" have not answered yet",
										 w->src.streams[i]->relname);

			ssp_slot_set_error(s->slot, error);
			ssp_slot_set_status(s->slot, SSP_WAITING_FOR_BROKER, -1);
			pfree(error);
		}
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
			/* told of other brokers meanwhile: a fresh worker for them */
			wait_out(w, old, SSP_WAITING_FOR_BROKER);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	return n;
}

/*
 * may_ask_again: may the process wait a second to ask the registry again
 * for an id it said it does not know?  Twice in any 10 s: messages naming
 * unknown ids, which anyone who may write the topic can send, held every
 * view of the process up two seconds for each.
 */
static bool
may_ask_again(SspWorker *w)
{
	TimestampTz now = GetCurrentTimestamp();

	if (TimestampDifferenceExceeds(w->schema_retry_since, now, 10000))
	{
		w->schema_retry_since = now;
		w->schema_retries = 0;
	}
	return w->schema_retries++ < 2;
}

/*
 * fetch_schema: the schema a framed value or key names, into this process's
 * cache (registry.c), in a transaction of its own; an id the registry does
 * not know, once it said so three times, a second apart, where
 * may_ask_again lets it, else once.  While the registry
 * cannot give it, every view of the process waits, with status "waiting for
 * schema registry" and the registry's error, and tries again each second;
 * a change of the server's options meanwhile starts a fresh worker.
 */
static void
fetch_schema(SspWorker *w, SspRegistry *reg, const char *data, size_t len)
{
	volatile bool done = false;
	volatile int unknown = 0;
	int32		id;

	if (!ssp_registry_framed(data, len, &id) || ssp_registry_cached(reg, id))
		return;
	while (!done)
	{
		MemoryContext old = CurrentMemoryContext;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PG_TRY();
		{
			SspSchema  *schema = ssp_registry_schema(reg, id);

			/*
			 * An id it does not know: asked again twice, a second apart (a
			 * follower may not have the schema its leader just gave), before
			 * its messages go to the dead letters.
			 */
			if (schema->missing && schema->text == NULL && ++unknown < 3 &&
				may_ask_again(w))
			{
				ssp_registry_forget(reg, id);
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 1000, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
			}
			else
				done = true;
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			wait_out(w, old, "waiting for schema registry");
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
}

/*
 * fetch_schemas: every schema msgs[from, to) name, before they are
 * decoded, so that decoding never waits on the registry: a
 * registry down holds the views up, and never turns a message into a dead
 * letter.  An id the registry does not know is cached as such; its
 * messages go to the dead letters when decoded.
 */
static void
fetch_schemas(SspWorker *w, int from, int to)
{
	int			i;

	for (i = from; i < to; i++)
	{
		SspMessage *msg = &w->msgs[i];
		SspStream  *stream = w->src.streams[msg->source];

		if (stream->registry == NULL)
			continue;
		if ((stream->format == SSP_FORMAT_AVRO && stream->avro_writer == NULL) ||
			stream->format == SSP_FORMAT_JSONSCHEMA || stream->format == SSP_FORMAT_PROTOBUF)
			fetch_schema(w, stream->registry, msg->value, msg->value_len);
		if (stream->nkey > 0 &&
			(stream->key_format == SSP_FORMAT_AVRO || stream->key_format == SSP_FORMAT_JSONSCHEMA ||
			 stream->key_format == SSP_FORMAT_PROTOBUF))
			fetch_schema(w, stream->registry, msg->key, msg->key_len);
	}
}

/*
 * connect_topics: number the partitions of every topic as slots (those
 * the broker has, and any more that the first view stored offsets for),
 * set that view's state from its stored offsets, and assign them.
 */
static void
connect_topics(SspWorker *w, SspServed *s, MemoryContext cxt)
{
	SspSources *src = &w->src;
	ListCell   *lc;
	int			n;
	int			i;
	int			p;

	for (i = 0; i < src->n; i++)
		src->nparts[i] = partition_count(w, i);
	foreach(lc, s->stored)
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
	w->eof = MemoryContextAlloc(cxt, sizeof(int64) * n);
	w->lost = MemoryContextAllocZero(cxt, sizeof(bool) * n);
	w->lagging = MemoryContextAlloc(cxt, sizeof(bool) * n);
	w->upto = MemoryContextAlloc(cxt, sizeof(int64) * n);
	(void) ssp_served_set_offsets(w, s);
	for (p = 0; p < src->nslots; p++)
	{
		w->lagging[p] = ssp_worker_reads(w, p);
		w->eof[p] = -1;
		/* with ssp.parallelism, the other workers read the other partitions */
		w->next[p] = ssp_worker_reads(w, p) ? s->committed[p] : SSP_OFFSET_NOT_OURS;
	}
	for (i = 0; i < src->n; i++)
		ssp_kafka_assign_at(w->kafka[i], src->nparts[i], w->next + src->base[i]);
}

/*
 * lag: messages not yet applied past next[] (per slot), over every topic;
 * -1 while the end of a partition is not known.  Sets lagging per slot if
 * not NULL.
 */
static int64
lag(SspWorker *w, const int64 *next, bool *lagging)
{
	int64		total = 0;
	int			i;

	for (i = 0; i < w->src.n; i++)
	{
		int64		l = ssp_kafka_lag(w->kafka[i], w->src.nparts[i], next + w->src.base[i],
									  lagging ? lagging + w->src.base[i] : NULL);

		if (l < 0 || total < 0)
			total = -1;
		else
			total += l;
	}
	return total;
}

/* view_lag: the messages a view has not applied yet. */
static int64
view_lag(SspWorker *w, SspServed *s)
{
	int64	   *at = palloc(sizeof(int64) * Max(w->src.nslots, 1));
	int64		l;
	int			p;

	for (p = 0; p < w->src.nslots; p++)
		at[p] = ssp_worker_reads(w, p) ? s->committed[p] : SSP_OFFSET_NOT_OURS;
	l = lag(w, at, NULL);
	pfree(at);
	return l;
}

/* report_status: a view's state and lag (messages not yet applied). */
static void
report_status(SspWorker *w, SspServed *s, int64 lag)
{
	const char *trouble = NULL;
	int			i;

	for (i = 0; i < w->src.n && trouble == NULL; i++)
		trouble = ssp_kafka_trouble(w->kafka[i]);
	if (trouble)
	{
		ssp_slot_set_error(s->slot, trouble);
		ssp_slot_set_status(s->slot, SSP_WAITING_FOR_BROKER, lag);
	}
	else
		ssp_slot_set_status(s->slot, lag > Min(w->batch_size, SSP_CATCHING_UP) ?
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
partitions_added(SspWorker *w)
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
							((SspServed *) linitial(w->served))->view->topics[i],
							((SspServed *) linitial(w->served))->view->name,
							n, n - w->src.nparts[i])));
			return true;
		}
	}
	return false;
}

/* batch_due: would a batch of nothing change a view now (ssp_batch_due)? */
static bool
batch_due(SspWorker *w)
{
	ListCell   *lc;

	foreach(lc, w->served)
	{
		SspServed  *s = lfirst(lc);

		if (ssp_batch_due(s->view, &s->et, w->lagging, w->src.nslots))
			return true;
	}
	return false;
}

/*
 * event_times: does a view of the process read its batches' event times?
 */
static bool
event_times(SspWorker *w)
{
	ListCell   *lc;

	foreach(lc, w->served)
		if (((SspServed *) lfirst(lc))->view->late_sql != NULL)
			return true;
	return false;
}

/*
 * keep_freed_memory: malloc keeps the memory freed in the worker for the
 * next batch, rather than return it to the system and fault it in again.
 * A batch allocates and frees a few hundred MB (the messages, on
 * librdkafka's threads, their decoded rows and the statements' hash
 * tables); with glibc's defaults its arenas shrank and grew again on every
 * batch, and the page faults, mprotect and madvise calls that took cost
 * the worker about a tenth of its time in a catch-up.  Up to 64 MB free at
 * the top of an arena stay; blocks under 32 MB (glibc's own upper bound
 * for its sliding threshold) come from the arenas, not from mmap.  (With
 * 16 MB kept, the catch-up was as slow as with the defaults.)  What is
 * kept goes back once the worker waits (give_back_memory).
 */
static void
keep_freed_memory(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
#endif
}

/*
 * give_back_memory: once the worker has found nothing to apply for a
 * second, after batches of SSP_DECODE_AHEAD messages or more, the memory
 * it kept for them goes back to the system (malloc_trim, every arena):
 * kept while it is busy, not while it waits.  Not between the batches of
 * a live stream: trimming there, every few batches, coincided with
 * latencies of a second in make bench freshness.
 */
static void
give_back_memory(SspWorker *w)
{
	if (w->untrimmed < SSP_DECODE_AHEAD)
		return;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	w->untrimmed = 0;
}

/*
 * set_work_mem: the worker's work_mem is ssp.work_mem, or the server's if
 * that is -1: a batch is aggregated and joined whole, and with a query's
 * usual work_mem its hash tables would spill to disk.  At start and after
 * each reload of the configuration; as a SET would, so that nothing but
 * ssp.work_mem changes it.
 */
static void
set_work_mem(void)
{
	char		kb[32];

	snprintf(kb, sizeof(kb), "%d", ssp_work_mem);
	SetConfigOption("work_mem", ssp_work_mem < 0 ? NULL : kb, PGC_USERSET, PGC_S_SESSION);
}

/*
 * to_decode: how many of the batch's first n messages are still to be
 * decoded for every view; none once one of them could not be.
 */
static int
to_decode(SspWorker *w, int n)
{
	if (w->decoded == NULL)
		return n;
	return w->decoded->failed ? 0 : n - w->decoded->n;
}

/*
 * decode_ahead: the batch's messages up to msgs[upto] decoded for every
 * view (ssp_decode_more), the schemas they name fetched first.
 */
static void
decode_ahead(SspWorker *w, int upto)
{
	int			from = upto - to_decode(w, upto);

	if (from >= upto)
		return;
	fetch_schemas(w, w->fetched, upto);
	w->fetched = upto;
	ssp_decode_more(&w->decoded, &w->src, w->msgs, from, upto, event_times(w), w->batch_cxt);
}

/* forget_decoded: the batch's decoded rows, applied or not. */
static void
forget_decoded(SspWorker *w)
{
	ssp_decoded_free(w->decoded);
	w->decoded = NULL;
	w->fetched = 0;
	MemoryContextReset(w->batch_cxt);
}

/*
 * all_at_end: has every partition the worker reads reported its end past
 * the messages of the batch?
 */
static bool
all_at_end(SspWorker *w)
{
	int			p;

	for (p = 0; p < w->src.nslots; p++)
		if (ssp_worker_reads(w, p) && (w->eof[p] < 0 || w->eof[p] < w->upto[p]))
			return false;
	return true;
}

/*
 * collect: poll messages from every topic until the batch is full or its
 * time is up; returns how many, and sets *dirty if a partition's end moved
 * past its offset.  Returns early when a view asks to join or leave, and
 * when a catch-up reaches the end of every partition.  While it waits for
 * more, it decodes what it has.
 */
static int
collect(SspWorker *w, WaitEventSet *wait, bool *dirty)
{
	SspSources *src = &w->src;
	int			n = 0;
	TimestampTz deadline = 0;
	TimestampTz last_report = GetCurrentTimestamp();
	int			p;
	int			i;

	*dirty = false;
	for (p = 0; p < src->nslots; p++)
		w->upto[p] = w->next[p];
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
			set_work_mem();
		}
		for (i = 0; i < src->n; i++)
		{
			int			got = ssp_kafka_poll_batch(w->kafka[i], w->msgs + n, w->batch_size - n,
												   w->eof + src->base[i], w->lost + src->base[i],
												   src->nparts[i]);
			int			m;

			for (m = n; m < n + got; m++)
			{
				SspMessage *msg = &w->msgs[m];

				msg->source = i;
				if (msg->partition < src->nparts[i])
				{
					p = SSP_SLOT(src, msg);
					w->upto[p] = Max(w->upto[p], msg->offset + 1);
				}
			}
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
			deadline = TimestampTzPlusMilliseconds(now, w->commit_interval_ms);
		if (n >= w->batch_size || (deadline != 0 && now >= deadline))
			return n;
		/* the rest of a catch-up: nothing more to wait for */
		if (n > 0 && w->catching_up && all_at_end(w))
			return n;
		if (ssp_reader_requests_waiting(w))
		{
			w->requests = true;
			return n;
		}
		if (TimestampDifferenceExceeds(last_report, now, 1000))
		{
			ListCell   *lc;

			if (config_changed(w, true) || partitions_added(w))
			{
				w->restart = true;
				return 0;
			}
			/* a batch of nothing moves the watermark, or lets a join's rows go */
			if (n == 0 && batch_due(w))
			{
				*dirty = true;
				return 0;
			}
			/* a second with nothing to apply: what it kept goes back */
			if (n == 0 && !*dirty)
				give_back_memory(w);
			foreach(lc, w->served)
				report_status(w, lfirst(lc), view_lag(w, lfirst(lc)));
			ssp_reader_report(w, lag(w, w->next, NULL));
			/* what the last batches wrote, if it waited (pgstat_report_stat) */
			pgstat_report_stat(false);
			last_report = now;
			/* a solo worker looks for its streams' reader now and then */
			if (w->reader == NULL)
				return n;
			/* a reader near another of its key, behind it, joins it */
			if (ssp_reader_merge_due(w))
				return n;
		}
		/* rather than wait, decode what there is; then look again */
		if (to_decode(w, n) >= SSP_DECODE_AHEAD)
		{
			decode_ahead(w, n);
			continue;
		}
		timeout = deadline ? TimestampDifferenceMilliseconds(now, deadline) : 1000;
		(void) WaitEventSetWait(wait, Max(timeout, 1), &event, 1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		for (i = 0; i < src->n; i++)
			ssp_kafka_drain_fd(w->kafka[i]);
	}
}

/*
 * watermarks: the oldest and the next offset of partition p of source i.
 * While the brokers cannot say, every view of the process waits (status
 * "waiting for broker"), reading nothing, and asks again each second: a
 * view at an offset the broker may have deleted must not read on from
 * the oldest message before its loss is known.
 */
static void
watermarks(SspWorker *w, int i, int32 p, int64 *low, int64 *high)
{
	volatile bool done = false;

	while (!done)
	{
		MemoryContext old = CurrentMemoryContext;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PG_TRY();
		{
			ssp_kafka_watermarks(w->kafka[i], p, low, high);
			CommitTransactionCommand();
			done = true;
		}
		PG_CATCH();
		{
			wait_out(w, old, SSP_WAITING_FOR_BROKER);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
}

/*
 * recover_lost: for each partition whose next offset the broker no longer
 * has, or that the process reads from its oldest message while a view has
 * an offset there (adopt), record the loss for each view that had not
 * read it and go on from the oldest message there is; views whose offsets
 * the broker still has stay where they are.  A view that no longer wants
 * this worker is left out of its views.
 */
static void
recover_lost(SspWorker *w)
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
						from = w->next[slot];	/* -1: from the oldest */
			ListCell   *lc;
			List	   *views;

			if (!w->lost[slot])
				continue;
			if (w->served == NIL)
				return;			/* the last view left: nothing to read on for */
			w->lost[slot] = false;
			watermarks(w, i, p, &low, &high);
			if (from > high)
				ereport(WARNING,
						(errmsg("continuous view \"%s\": offset %lld of partition %d of topic \"%s\" is past its end (%lld); reading from %lld",
								((SspServed *) linitial(w->served))->view->name, (long long) from, p,
								((SspServed *) linitial(w->served))->view->topics[i],
								(long long) high, (long long) low),
						 errdetail("The topic may have been deleted and created again.")));

			/*
			 * Between the oldest message and the end by now: the broker's
			 * report was of an offset read before the process moved, or of
			 * a topic created again that has grown past it since; which,
			 * the process cannot tell.  It reads from the oldest message
			 * again: a view that has those messages skips them.
			 */
			else if (from >= low)
				ereport(WARNING,
						(errmsg("continuous view \"%s\": offset %lld of partition %d of topic \"%s\" was reported out of range, and the partition now holds offsets %lld to %lld; reading from %lld",
								((SspServed *) linitial(w->served))->view->name, (long long) from, p,
								((SspServed *) linitial(w->served))->view->topics[i],
								(long long) low, (long long) high - 1, (long long) low),
						 errdetail("The topic may have been deleted and created again; the views that have read these messages skip them.")));
			views = list_copy(w->served);	/* a view may leave meanwhile */
			foreach(lc, views)
			{
				SspServed  *s = lfirst(lc);
				int64		vfrom = Max(s->committed[slot], 0);

				/*
				 * A view between the oldest message and the end lost
				 * nothing: it stays.  A reader reads behind the views it
				 * has (adopt moves it back to a view that joins behind),
				 * and only the one behind lost messages; moving the others
				 * back too would apply theirs again.  Nor did a view that
				 * has read nothing of the partition yet (a new view, its
				 * ssp.start 'earliest'): it starts at the oldest message
				 * there is, whatever the broker deleted before.
				 */
				if ((vfrom >= low && vfrom <= high) || s->committed[slot] < 0)
					continue;

				/*
				 * deleted by retention before the view read them; or a
				 * topic created again, read from its start: either way
				 * the view's offset moves to the oldest message there is
				 */
				if (!ssp_served_record_lost(w, s, i, p, s->committed[slot],
											vfrom < low ? vfrom : low, low))
					continue;	/* it left */
				s->committed[slot] = low;
			}
			list_free(views);
			w->next[slot] = low;
			w->eof[slot] = -1;	/* the end seen was the old topic's */
			reassign = true;
		}
		if (reassign)
			ssp_kafka_assign_at(w->kafka[i], src->nparts[i], w->next + src->base[i]);
	}
}

/* release_messages: the messages of the batch, applied or not. */
static void
release_messages(SspWorker *w)
{
	int			i;

	for (i = 0; i < w->src.n; i++)
		ssp_kafka_release(w->kafka[i]);
}

/*
 * batch_offsets: the offsets (per slot) a batch of n messages moves to, -1
 * where it moves none; *batch_lag gets the messages left past them.
 * Allocated in the current memory context.
 */
static int64 *
batch_offsets(SspWorker *w, int n, int64 *batch_lag)
{
	int			nslots = w->src.nslots;
	int64	   *next = palloc(sizeof(int64) * Max(nslots, 1));
	int64	   *after = palloc(sizeof(int64) * Max(nslots, 1));
	int			p;
	int			i;

	/* a partition's end moved past its offset: offsets of markers, say */
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
	for (p = 0; p < nslots; p++)
		after[p] = next[p] >= 0 ? next[p] : w->next[p];
	*batch_lag = lag(w, after, w->lagging);
	pfree(after);
	return next;
}

/*
 * apply_batch: the batch applied to every view of the process (reader.c),
 * decoded once for them all if several views read it or collect began to
 * decode it; else a single view decodes it in its own transaction.
 */
static void
apply_batch(SspWorker *w, int n, const int64 *next)
{
	SspDecoded *decoded = NULL;

	if (n > 0 && (w->decoded != NULL || list_length(w->served) > 1))
		decode_ahead(w, n);
	/* the schemas of what was not decoded ahead: the views decode it */
	fetch_schemas(w, w->fetched, n);
	w->fetched = n;
	if (w->decoded && !w->decoded->failed)
		decoded = w->decoded;
	ssp_reader_apply(w, n, next, decoded);
	forget_decoded(w);
}

/*
 * after_batch: what a batch's commit lets the process say and do: its rate,
 * each view's status and lag, the outboxes published, ssp.readers, and the
 * views that asked to join or leave.
 */
static void
after_batch(SspWorker *w, int n, int64 batch_lag)
{
	ListCell   *lc;
	List	   *views = list_copy(w->served);	/* a view may leave */

	ssp_smooth_rate(&w->rate, &w->rate_at, n, GetCurrentTimestamp());
	foreach(lc, views)
	{
		SspServed  *s = lfirst(lc);

		report_status(w, s, view_lag(w, s));
		ssp_served_publish(w, s);
	}
	list_free(views);
	ssp_reader_report(w, batch_lag);
	if (w->requests || ssp_reader_requests_waiting(w))
		ssp_reader_answer_requests(w);
}

/* run: the worker's life; returns when no view wants it. */
static void
run(SspWorker *w, Oid viewoid, int part)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "ssp worker",
											  ALLOCSET_DEFAULT_SIZES);
	WaitEventSet *wait;
	SspServed  *first;
	int			nslots;
	int			i;

	w->batch_cxt = AllocSetContextCreate(TopMemoryContext, "ssp batch", ALLOCSET_DEFAULT_SIZES);
	first = ssp_served_load(viewoid, part, w->slot, &w->key);
	if (first == NULL)
		return;
	first->own = true;
	first->rate_at = GetCurrentTimestamp();
	w->served = list_make1(first);
	w->batch_size = first->view->batch_size;
	w->commit_interval_ms = first->view->commit_interval_ms;
	/*
	 * What a worker before this one committed but did not publish, first,
	 * alone: a view whose output topic fails stays here, not in a reader.
	 */
	ssp_served_publish(w, first);
	if (w->served == NIL)
		return;
	/* a reader near the view's offsets takes it at once: no consumer of its own */
	if (ssp_reader_hand_over(w))
		return;
	open_sources(w, first, cxt);
	ssp_reader_union_streams(w);
	connect_topics(w, first, cxt);
	nslots = w->src.nslots;
	/* wake on the latch, and when librdkafka has messages for any topic */
	wait = CreateWaitEventSet(cxt, 2 + w->src.n);
	AddWaitEventToSet(wait, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wait, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (i = 0; i < w->src.n; i++)
		AddWaitEventToSet(wait, WL_SOCKET_READABLE, ssp_kafka_event_fd(w->kafka[i]), NULL, NULL);
	w->msgs = MemoryContextAlloc(cxt, sizeof(SspMessage) * w->batch_size);
	ssp_slot_set_status(w->slot, "running", -1);
	w->rate_at = GetCurrentTimestamp();
	w->rate = -1;
	ssp_slot_set_rate(w->slot, 0, w->rate_at);

	while (w->served != NIL)
	{
		bool		dirty;
		int			n;
		int64	   *next;
		int64		batch_lag;
		int			p;

		/* alone, near its streams' reader: the reader takes the view over */
		if (w->reader == NULL && GetCurrentTimestamp() >= w->handover_at)
		{
			if (ssp_reader_hand_over(w))
				return;
		}
		/* a reader near another of its key, behind it: that one takes its views */
		else if (w->reader != NULL && GetCurrentTimestamp() >= w->handover_at)
		{
			if (ssp_reader_merge(w))
				return;
		}
		if (partitions_added(w))
			return;				/* a fresh worker reads them all */
		n = collect(w, wait, &dirty);
		/*
		 * A stream altered before the batch's messages were written, perhaps
		 * (INSERT writes them as the altered stream says): the batch is
		 * not applied as decoded the old way.
		 */
		if (n > 0 && !w->restart && config_changed(w, true))
			w->restart = true;
		if (w->restart)
		{
			forget_decoded(w);
			release_messages(w);
			return;				/* nothing applied: a fresh worker reads it */
		}
		next = batch_offsets(w, n, &batch_lag);
		pgstat_report_activity(STATE_RUNNING, "applying a batch");
		apply_batch(w, n, next);
		w->untrimmed += n;
		pgstat_report_activity(STATE_IDLE, NULL);
		/* the batch's writes, for autovacuum and autoanalyze of the view's tables */
		pgstat_report_stat(false);
		release_messages(w);
		if (w->served == NIL)
		{
			pfree(next);
			return;
		}
		for (p = 0; p < nslots; p++)
			if (next[p] >= 0)
				w->next[p] = next[p];
		/* for lag tools: the consumer group ssp.DB.OID of its first view */
		for (i = 0; i < w->src.n; i++)
			ssp_kafka_commit(w->kafka[i], w->src.nparts[i], next + w->src.base[i]);
		pfree(next);
		w->catching_up = batch_lag > Min(w->batch_size, SSP_CATCHING_UP);
		w->batch_lag = batch_lag;
		after_batch(w, n, batch_lag);
		/* last: a view that joined may have flagged a partition (adopt) */
		recover_lost(w);
		if (config_changed(w, false))
			return;
	}
}

/*
 * fail_all: the process failed: each view it applied says so, and the
 * scheduler restarts each after a backoff.
 */
static void
fail_all(SspWorker *w, const char *error)
{
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];

		bool		own = s == w->slot && !w->own_left;

		/* not its own slot once a reader took the view from it (claim) */
		if (!s->in_use || (s->pid != MyProcPid && !(own && s->pid == 0)))
			continue;
		s->failed = true;
		strlcpy(s->status, "failed", SSP_STATUS_LEN);
		strlcpy(s->last_error, error, SSP_ERROR_LEN);
		/* a view it took over has no worker of its own for the scheduler to see fail */
		if (!own)
			s->reader_failures++;
	}
	LWLockRelease(ssp_shared->lock);
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
	SspWorker		w;

	memcpy(&wargs, MyBgworkerEntry->bgw_extra, sizeof(wargs));
	keep_freed_memory();
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
	/* started just before a statement that needs the database to itself */
	if (ssp_database_held(wargs.dboid))
		proc_exit(0);

	ssp_bgworker_session();
	set_work_mem();
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
	w.slot = ssp_worker_slot(wargs.dboid, viewoid, wargs.part, true);
	if (w.slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no room in shared memory for the worker of view %u", viewoid)));
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	w.slot->pid = MyProcPid;
	w.slot->failed = false;
	w.slot->generation = 0;
	w.slot->confirmed = true;
	w.slot->attached = false;
	w.slot->detach = false;
	w.slot->handover_to = 0;
	/* slot->refused stays: ssp_reader_hand_over backs off on it */
	LWLockRelease(ssp_shared->lock);
	ssp_slot_set_status(w.slot, "starting", -1);
	before_shmem_exit(worker_exit, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, config_invalidate, 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, config_invalidate, 0);
	CacheRegisterSyscacheCallback(AUTHOID, config_invalidate, 0);
	/* a stream altered (config_changed compares its definition) */
	CacheRegisterRelcacheCallback(stream_invalidate, (Datum) 0);

	PG_TRY();
	{
		run(&w, viewoid, wargs.part);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		/* an error while it held ssp's lock: fail_all takes it again */
		LWLockReleaseAll();
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		fail_all(&w, ssp_error_text(edata));
		FlushErrorState();
		RESUME_INTERRUPTS();
		ReThrowError(edata);
	}
	PG_END_TRY();
	proc_exit(0);
}
