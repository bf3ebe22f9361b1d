/*-------------------------------------------------------------------------
 *
 * reader.h
 *	  The views a worker process applies, and how the views of a stream
 *	  come to share one process, its reader (reader.c); the process itself
 *	  is worker.c's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_READER_H
#define SSP_READER_H

#include "ssp.h"
#include "compile/view.h"
#include "kafka/kafka.h"
#include "runtime/batch.h"
#include "runtime/shmem.h"

/* A view this process applies. */
typedef struct SspServed
{
	SspView    *view;
	SspSources	src;			/* the process's slots, the view's own streams */
	SspWorkerSlot *slot;
	int			part;
	bool		own;			/* the view this process was started for */
	List	   *stored;			/* StoredOffset, as it was loaded */
	int64	   *committed;		/* per slot: its offset in ssp.offsets, -1: none */
	SspEventTime et;			/* per slot: event times (windows, joins) */
	double		rate;			/* messages applied a second, lately; -1: none yet */
	TimestampTz rate_at;
	MemoryContext cxt;			/* all of the above; deleted when it leaves */
} SspServed;

/*
 * A worker: one consumer per stream, and the views it applies.  Started
 * for one view; it becomes a reader of its streams, or hands its view over
 * to the reader near it; a reader near another, behind it, hands it all its
 * views (One reader per stream, in doc/internals.md).
 */
typedef struct SspWorker
{
	List	   *served;			/* SspServed; empty: the process is done */
	SspWorkerSlot *slot;		/* the slot of the view it was started for */
	SspReaderKey key;			/* which views it may apply */
	SspReaderSlot *reader;		/* registered as a reader of its key, or NULL */
	SspSources	src;			/* slots, and streams decoding what any view reads */
	MemoryContext streams_cxt;	/* src.streams' */
	SspKafka  **kafka;			/* per source: its consumer */
	char	  **signature;		/* per source: its client's properties */
	char	  **definition;		/* per source: its stream's, as src.streams
								 * opened it (ssp_stream_signature) */
	int64	   *next;			/* per slot: next offset to read, -1: oldest */
	int64	   *eof;			/* per slot: end seen, -1: none */
	bool	   *lost;			/* per slot: next offset deleted */
	bool	   *lagging;		/* per slot: messages wait there */
	SspMessage *msgs;
	SspDecoded *decoded;		/* msgs[0, decoded->n) decoded for every view */
	MemoryContext batch_cxt;	/* decoded's, reset after each batch */
	int			fetched;		/* msgs[0, fetched): their schemas fetched */
	int			schema_retries;	/* unknown schema ids asked again since: */
	TimestampTz schema_retry_since;
	int64	   *upto;			/* per slot: past the batch's messages, while collected */
	bool		catching_up;	/* the last batch left many messages waiting */
	int64		batch_lag;		/* messages past the last batch; -1: not known */
	SspMessage *vmsgs;			/* the messages of a view not at the reader's offsets */
	int			batch_size;
	int			commit_interval_ms;
	bool		restart;		/* the properties changed: start a fresh worker */
	bool		requests;		/* a view asked to join or to leave */
	bool		own_left;		/* the view it was started for left it */
	int64		applied_batches;	/* batches with messages that went through */
	int64		untrimmed;		/* messages applied since memory last went back */
	TimestampTz handover_at;	/* when it may next look for a reader */
	int			shared_groups;	/* views that read their groups of the last
								 * batch from another's reduction */
	double		rate;			/* messages read a second, lately; -1: none yet */
	TimestampTz rate_at;
} SspWorker;

/* A row of ssp.offsets. */
typedef struct StoredOffset
{
	int			source;
	int32		partition;
	int64		next;
	TimestampTz maxev;
	TimestampTz seen_at;
} StoredOffset;

/* more messages than this waiting (or a batch's worth) is "catching up" */
#define SSP_CATCHING_UP 20000
/* how long a reader has to take a view it was asked to, by a worker or the scheduler */
#define SSP_HAND_OVER_ANSWER_MS 5000
/* longest a reader waits for the workers of the views it claimed to exit */
#define SSP_ADOPT_WAIT_MS 10000
/* longest a reader's views wait for one of them to publish its changes */
#define SSP_PUBLISH_SHARED_MS 1000

extern const char *ssp_error_text(ErrorData *edata);
extern SspServed *ssp_served_load(Oid viewoid, int part, SspWorkerSlot *slot,
								  SspReaderKey *key);
extern bool ssp_served_set_offsets(SspWorker *w, SspServed *s);
extern void ssp_served_leave(SspWorker *w, SspServed *s, ErrorData *failure);
extern void ssp_served_publish(SspWorker *w, SspServed *s);
extern bool ssp_served_record_lost(SspWorker *w, SspServed *s, int source,
								   int32 partition, int64 stored, int64 from, int64 to);
extern bool ssp_worker_reads(SspWorker *w, int slot);
extern void ssp_reader_union_streams(SspWorker *w);
extern void ssp_reader_stream_locks(SspWorker *w, bool waiting);
extern void ssp_reader_report(SspWorker *w, int64 lag);
extern bool ssp_reader_requests_waiting(SspWorker *w);
extern void ssp_reader_answer_requests(SspWorker *w);
extern bool ssp_reader_hand_over(SspWorker *w);
extern bool ssp_reader_merge_due(SspWorker *w);
extern bool ssp_reader_merge(SspWorker *w);
extern bool ssp_reader_near(int batch_size, int64 a, int64 b);
extern bool ssp_reader_registered(int pid);
extern bool ssp_reader_find(const SspReaderKey *key, int64 position, int *pid, Latch **latch,
							int64 *theirs);
extern bool ssp_view_reader_key(Oid viewoid, int part, SspReaderKey *key, int64 *position);
extern void ssp_reader_apply(SspWorker *w, int n, const int64 *next, SspDecoded *decoded);
extern void ssp_smooth_rate(double *rate, TimestampTz *at, int n, TimestampTz now);

#endif							/* SSP_READER_H */
