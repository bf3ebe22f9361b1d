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

#define SSP_STATUS_LEN 32
#define SSP_ERROR_LEN 512
/* the rate of a worker is smoothed over about this many seconds */
#define SSP_RATE_SECONDS 5.0

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
	int64		lag;			/* -1: unknown */
	double		rate;			/* messages applied a second, lately, */
	TimestampTz rate_at;		/* as of then (it decays while idle) */
	char		last_error[SSP_ERROR_LEN];
} SspWorkerSlot;

typedef struct SspDbSlot
{
	Oid			dboid;
	int			pid;			/* the scheduler, 0 if none */
	bool		no_extension;	/* its last check found no ssp there */
	Latch	   *latch;
} SspDbSlot;

typedef struct SspShared
{
	LWLock	   *lock;
	Latch	   *launcher_latch;
	int			nworkers;
	int			ndbs;
	SspDbSlot  *dbs;
	SspWorkerSlot workers[FLEXIBLE_ARRAY_MEMBER];
} SspShared;

extern SspShared *ssp_shared;

extern void ssp_shmem_init(void);
extern SspWorkerSlot *ssp_worker_slot(Oid dboid, Oid view, int part, bool create);
extern void ssp_slot_set_status(SspWorkerSlot *slot, const char *status, int64 lag);
extern void ssp_slot_set_error(SspWorkerSlot *slot, const char *error);
extern void ssp_slot_set_rate(SspWorkerSlot *slot, double rate, TimestampTz at);
extern SspDbSlot *ssp_db_slot(Oid dboid, bool create);
extern void ssp_wake_launcher(void);
extern void ssp_shmem_forget_databases(List *live);

#endif							/* SSP_SHMEM_H */
