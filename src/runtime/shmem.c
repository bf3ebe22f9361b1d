/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  ssp's shared memory: worker and database slots, under one LWLock.
 *
 * Slots are few (max_worker_processes of each) and looked up by linear
 * search.  A worker slot outlives its worker, so that ssp.views can show
 * the last error of a worker that is waiting to be restarted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "runtime/shmem.h"

SspShared  *ssp_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
shared_size(void)
{
	Size		size = offsetof(SspShared, workers);

	size = add_size(size, mul_size(SSP_WORKER_SLOTS, sizeof(SspWorkerSlot)));
	size = add_size(size, mul_size(max_worker_processes, sizeof(SspDbSlot)));
	size = add_size(size, mul_size(max_worker_processes, sizeof(SspReaderSlot)));
	return size;
}

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("ssp", 1);
}

static void
shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ssp_shared = ShmemInitStruct("ssp", shared_size(), &found);
	if (!found)
	{
		memset(ssp_shared, 0, shared_size());
		ssp_shared->lock = &(GetNamedLWLockTranche("ssp"))->lock;
		ssp_shared->nworkers = SSP_WORKER_SLOTS;
		ssp_shared->ndbs = max_worker_processes;
		ssp_shared->nreaders = max_worker_processes;
	}
	ssp_shared->dbs = (SspDbSlot *) &ssp_shared->workers[ssp_shared->nworkers];
	ssp_shared->readers = (SspReaderSlot *) &ssp_shared->dbs[ssp_shared->ndbs];
	LWLockRelease(AddinShmemInitLock);
}

/* ssp_shmem_init: install the hooks (from _PG_init). */
void
ssp_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
}

/*
 * ssp_worker_slot: the slot of a view's worker (part: which of them, with
 * ssp.parallelism), created if asked; NULL if there is none (or no room).
 */
SspWorkerSlot *
ssp_worker_slot(Oid dboid, Oid view, int part, bool create)
{
	SspWorkerSlot *free_slot = NULL;
	SspWorkerSlot *result = NULL;
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];

		if (s->in_use && s->dboid == dboid && s->view == view && s->part == part)
		{
			result = s;
			break;
		}
		if (!s->in_use && free_slot == NULL)
			free_slot = s;
	}
	if (result == NULL && create && free_slot)
	{
		memset(free_slot, 0, sizeof(SspWorkerSlot));
		free_slot->in_use = true;
		free_slot->dboid = dboid;
		free_slot->view = view;
		free_slot->part = part;
		free_slot->lag = -1;
		result = free_slot;
	}
	LWLockRelease(ssp_shared->lock);
	return result;
}

void
ssp_slot_set_status(SspWorkerSlot *slot, const char *status, int64 lag)
{
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	strlcpy(slot->status, status, SSP_STATUS_LEN);
	if (lag >= 0)
		slot->lag = lag;
	LWLockRelease(ssp_shared->lock);
}

void
ssp_slot_set_error(SspWorkerSlot *slot, const char *error)
{
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	strlcpy(slot->last_error, error ? error : "", SSP_ERROR_LEN);
	LWLockRelease(ssp_shared->lock);
}

/* ssp_slot_clear_error: clear slot's last error if it begins with prefix */
void
ssp_slot_clear_error(SspWorkerSlot *slot, const char *prefix)
{
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (strncmp(slot->last_error, prefix, strlen(prefix)) == 0)
		slot->last_error[0] = '\0';
	LWLockRelease(ssp_shared->lock);
}

void
ssp_slot_set_rate(SspWorkerSlot *slot, double rate, TimestampTz at)
{
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->rate = rate;
	slot->rate_at = at;
	LWLockRelease(ssp_shared->lock);
}

/* ssp_db_slot: the slot of a database, created if asked. */
SspDbSlot *
ssp_db_slot(Oid dboid, bool create)
{
	SspDbSlot  *free_slot = NULL;
	SspDbSlot  *result = NULL;
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < ssp_shared->ndbs; i++)
	{
		SspDbSlot  *s = &ssp_shared->dbs[i];

		if (s->dboid == dboid)
		{
			result = s;
			break;
		}
		if (s->dboid == InvalidOid && free_slot == NULL)
			free_slot = s;
	}
	if (result == NULL && create && free_slot)
	{
		memset(free_slot, 0, sizeof(SspDbSlot));
		free_slot->dboid = dboid;
		result = free_slot;
	}
	LWLockRelease(ssp_shared->lock);
	return result;
}

/*
 * ssp_wake_launcher: have the launcher start a scheduler for this database
 * now, though the last one found no ssp here (after CREATE EXTENSION ssp).
 */
void
ssp_wake_launcher(void)
{
	SspDbSlot  *slot = ssp_db_slot(MyDatabaseId, true);
	Latch	   *latch;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (slot)
		slot->look_now = true;
	latch = ssp_shared->launcher_latch;
	LWLockRelease(ssp_shared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * ssp_wake_scheduler: set the latch of the database's scheduler, if it
 * runs, so that it looks at the views now rather than at its next round.
 */
void
ssp_wake_scheduler(Oid dboid)
{
	Latch	   *latch = NULL;
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	for (i = 0; i < ssp_shared->ndbs; i++)
		if (ssp_shared->dbs[i].dboid == dboid)
		{
			latch = ssp_shared->dbs[i].latch;
			break;
		}
	LWLockRelease(ssp_shared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * ssp_shmem_forget_databases: free the slots of databases not in live
 * (dropped ones, or ones that no longer take connections) once nothing
 * runs there: no scheduler would ever free them.
 */
void
ssp_shmem_forget_databases(List *live)
{
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];

		if (s->in_use && s->pid == 0 && !list_member_oid(live, s->dboid))
			s->in_use = false;
	}
	for (i = 0; i < ssp_shared->ndbs; i++)
	{
		SspDbSlot  *s = &ssp_shared->dbs[i];

		if (OidIsValid(s->dboid) && s->pid == 0 && !list_member_oid(live, s->dboid))
			s->dboid = InvalidOid;
	}
	LWLockRelease(ssp_shared->lock);
}
