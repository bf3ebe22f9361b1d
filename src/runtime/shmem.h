/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Shared state of ssp's background workers (shmem.c): the launcher,
 *	  one scheduler per database with ssp, and one slot per view worker,
 *	  which ssp.views reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_SHMEM_H
#define SSP_SHMEM_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "compile/view.h"

#define SSP_STATUS_LEN 32
#define SSP_ERROR_LEN 512
/* the status of a view whose worker cannot reach its brokers (ssp.views) */
#define SSP_WAITING_FOR_BROKER "waiting for broker"
/* the rate of a worker is smoothed over about this many seconds */
#define SSP_RATE_SECONDS 5.0
/* worker slots: a view part each, whether it has a process of its own or not */
#define SSP_WORKER_SLOTS Max(max_worker_processes, 1024)

typedef struct SspWorkerSlot
{
	bool		in_use;
	Oid			dboid;
	Oid			view;
	int			part;			/* which of the view's workers (ssp.parallelism) */
	int			pid;			/* 0 when no worker runs */
	bool		failed;			/* the last worker exited on an error */
	bool		confirmed;		/* the last worker started was seen to run */
	char		status[SSP_STATUS_LEN];
	int			generation;		/* its process's ssp.reset generation, 0: not loaded */
	int64		lag;			/* -1: unknown */
	double		rate;			/* messages applied a second, lately, */
	TimestampTz rate_at;		/* as of then (it decays while idle) */
	char		last_error[SSP_ERROR_LEN];
	/* its stream's reader (worker.c, One reader per stream) */
	bool		attached;		/* pid is a reader that applies other views too */
	int			handover_to;	/* a reader asked to take the view over, or 0 */
	bool		detach;			/* the scheduler asks the reader to let it go */
	bool		wait_alone;		/* it left a reader to wait alone: for a lock,
								 * or for the broker to acknowledge its output */
	bool		refused;		/* a reader claimed it and did not take it */
	uint32		reader_failures;	/* failures of the view inside a reader */
} SspWorkerSlot;

/*
 * The views a reader may apply: those of one owner over the same streams,
 * in the same shard (ssp.shard), in the same part of the same
 * ssp.parallelism, with the same batch settings.
 */
#define SSP_READER_MAX_SOURCES SSP_MAX_STREAMS
typedef struct SspReaderKey
{
	Oid			dboid;
	Oid			owner;
	int			nsources;
	Oid			streams[SSP_READER_MAX_SOURCES];
	int			shard_index;
	int			shard_count;
	int			parallelism;
	int			part;
	int			batch_size;
	int			commit_interval_ms;
} SspReaderKey;

/*
 * A reader: one consumer and one decode for several views (ssp.readers).
 * A key has more than one where its views stand far apart (reader.c).
 */
typedef struct SspReaderSlot
{
	bool		in_use;
	SspReaderKey key;
	int			pid;
	Latch	   *latch;
	bool		leaving;		/* handing its views to another reader of its key */
	int			nviews;			/* views it applies */
	int			npartitions;	/* partitions it reads */
	int64		position;		/* sum of its partitions' next offsets */
	int64		lag;			/* messages not read yet, -1: unknown */
	double		rate;			/* messages read a second, lately */
	TimestampTz rate_at;
	int64		memory;			/* resident memory of its process, bytes */
} SspReaderSlot;

typedef struct SspDbSlot
{
	Oid			dboid;
	int			pid;			/* the scheduler, 0 if none */
	bool		no_extension;	/* its last check found no ssp there */
	bool		look_now;		/* CREATE EXTENSION ssp committed there since */
	int			holds;			/* statements that need the database to
								 * themselves (ssp_hold_database) */
	Latch	   *latch;
} SspDbSlot;

typedef struct SspShared
{
	LWLock	   *lock;
	Latch	   *launcher_latch;
	int			nworkers;
	int			ndbs;
	SspDbSlot  *dbs;
	int			nreaders;
	SspReaderSlot *readers;
	SspWorkerSlot workers[FLEXIBLE_ARRAY_MEMBER];
} SspShared;

extern SspShared *ssp_shared;

extern void ssp_shmem_init(void);
extern SspWorkerSlot *ssp_worker_slot(Oid dboid, Oid view, int part, bool create);
extern void ssp_slot_set_status(SspWorkerSlot *slot, const char *status, int64 lag);
extern void ssp_slot_set_error(SspWorkerSlot *slot, const char *error);
extern void ssp_slot_clear_error(SspWorkerSlot *slot, const char *prefix);
extern void ssp_slot_set_rate(SspWorkerSlot *slot, double rate, TimestampTz at);
extern SspDbSlot *ssp_db_slot(Oid dboid, bool create);
extern void ssp_wake_launcher(void);
extern void ssp_wake_scheduler(Oid dboid);
extern void ssp_shmem_forget_databases(List *live);

#endif							/* SSP_SHMEM_H */
