/*-------------------------------------------------------------------------
 *
 * supervisor.c
 *	  Keeping a worker running for every continuous view of every
 *	  database with ssp.
 *
 * The launcher, a static background worker started once recovery is over
 * (so never on a standby), lists the databases every few seconds and
 * starts a scheduler in each that has none.  A scheduler that finds no ssp
 * extension in its database exits at once, and the launcher checks that
 * database again later (at once after CREATE EXTENSION ssp commits).  A
 * scheduler that finds ssp stays, reads ssp.continuous_views four times a
 * second, starts a worker per view that is not paused, stops the workers of
 * views paused, reset or dropped, and restarts failed workers with
 * exponential backoff (1 s, 2 s, 4 s ... up to a minute).
 *
 * Whatever ends or restarts (a terminated launcher or scheduler is started
 * again, and knows nothing of the processes its predecessor started), each
 * scheduler and each view's worker holds a session lock of its own
 * (ssp_lock_process) for its whole life, taken before it does anything: a
 * second one exits at once.  The launcher and schedulers also look at the
 * pids in shared memory, and adopt a live predecessor's processes instead
 * of starting more.  The last fence is in batch.c: a batch commits only if
 * ssp.offsets still holds the offsets it started from.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "compile/view.h"
#include "runtime/reader.h"
#include "runtime/shmem.h"
#include "runtime/supervisor.h"

PGDLLEXPORT void ssp_launcher_main(Datum arg);
PGDLLEXPORT void ssp_scheduler_main(Datum arg);

#define LAUNCHER_NAPTIME_MS 2000
#define RECHECK_NO_EXTENSION_MS 10000
#define SCHEDULER_NAPTIME_MS 250
#define MAX_BACKOFF_MS 60000
/* what ssp.views.last_error of a view waiting for ALTER EXTENSION UPDATE begins with */
#define UPDATE_WAIT "the ssp library is version "

/* A database as the launcher knows it. */
typedef struct LauncherDb
{
	Oid			dboid;
	BackgroundWorkerHandle *handle;
	TimestampTz last_start;
} LauncherDb;

/* A view as its scheduler knows it. */
typedef struct SchedView
{
	Oid			view;
	int			part;			/* which of its workers (ssp.parallelism) */
	Oid			owner;
	int			generation;
	bool		wanted;			/* in the catalog and not paused */
	bool		seen;			/* in the catalog at the last look */
	BackgroundWorkerHandle *handle;
	TimestampTz started;
	TimestampTz next_start;
	int			failures;
	uint32		reader_failures;	/* its slot's, as last seen */
	/* handed to its streams' reader rather than started (to_reader) */
	bool		key_known;
	SspReaderKey key;			/* the reader that may apply it */
	int64		position;		/* its stored offsets, summed */
	int			handed_to;		/* the reader asked to take it, or 0 */
	TimestampTz wait_until;		/* until when it waits for a reader */
} SchedView;

static void
init_worker(BackgroundWorker *w, const char *function, const char *name)
{
	memset(w, 0, sizeof(*w));
	w->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w->bgw_start_time = BgWorkerStart_RecoveryFinished;
	w->bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(w->bgw_library_name, BGW_MAXLEN, "ssp");
	snprintf(w->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(w->bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(w->bgw_type, BGW_MAXLEN, "%s", name);
}

/*
 * ssp_lock_process: take the session lock that makes this process the only
 * one of its kind (SSP_LOCK_*) for id and part in this database, for the
 * rest of its life; false if another process holds it.  Never waits.
 */
bool
ssp_lock_process(uint16 kind, Oid id, int part)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, id, (uint32) part, kind);
	return LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* ssp_unlock_process: give up a lock ssp_lock_process took (a view leaving a reader). */
void
ssp_unlock_process(uint16 kind, Oid id, int part)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, id, (uint32) part, kind);
	(void) LockRelease(&tag, ExclusiveLock, true);
}

/* alive: is pid a live backend or background worker of this server? */
static bool
alive(int pid)
{
	return pid != 0 && BackendPidGetProc(pid) != NULL;
}

/*
 * held: is the database held off for statements that need it to themselves
 * (ssp_hold_database)?  Its scheduler is not started, and one or a worker
 * started just before leaves.
 */
static bool
held(SspDbSlot *slot)
{
	bool		result;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	result = slot->holds > 0;
	LWLockRelease(ssp_shared->lock);
	return result;
}

/* ssp_database_held: held(), for a process of database dboid */
bool
ssp_database_held(Oid dboid)
{
	SspDbSlot  *slot = ssp_db_slot(dboid, false);

	return slot != NULL && held(slot);
}

/*
 * terminate_processes_in: send SIGTERM to each of ssp's processes
 * connected to database dboid but this one (its scheduler and its
 * workers, wherever their pids are kept); how many.  The pids read
 * without a lock are hints, each checked again: a pid of shared memory may
 * be of a process that has exited, and taken since by another.
 */
static int
terminate_processes_in(Oid dboid)
{
	int			n = 0;
	int			i;

	for (i = 0; i < ProcGlobal->allProcCount; i++)
	{
		PGPROC	   *hint = &ProcGlobal->allProcs[i];
		int			pid = hint->pid;
		PGPROC	   *proc;
		const char *type;

		if (pid <= 0 || pid == MyProcPid || hint->databaseId != dboid || !hint->isBackgroundWorker)
			continue;
		proc = BackendPidGetProc(pid);
		if (proc == NULL || !proc->isBackgroundWorker || proc->databaseId != dboid)
			continue;
		type = GetBackgroundWorkerTypeByPid(pid);
		if (type == NULL || strncmp(type, "ssp ", 4) != 0)
			continue;
		(void) kill(pid, SIGTERM);
		n++;
	}
	return n;
}

/*
 * ssp_hold_database: keep ssp's processes out of database dboid until
 * ssp_release_database (at the end of the transaction), for a statement
 * that needs it to itself: DROP DATABASE, ALTER DATABASE ... RENAME TO or
 * SET TABLESPACE, CREATE DATABASE ... TEMPLATE.  Each would otherwise fail
 * ("database is being accessed by other users"), as a scheduler and the
 * views' workers stay connected.  Several statements may hold a database
 * at once (two copies of one template).  False: no slot in shared memory
 * to hold it with (then nothing is held).  ssp_clear_database then makes
 * the processes there leave.
 */
bool
ssp_hold_database(Oid dboid)
{
	SspDbSlot  *slot = ssp_db_slot(dboid, true);

	if (slot == NULL)
		return false;
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->holds++;
	LWLockRelease(ssp_shared->lock);
	return true;
}

/*
 * ssp_clear_database: terminate ssp's processes in database dboid, which
 * this process holds, and wait up to SSP_HOLD_WAIT_MS for them to exit;
 * false if some are still there (the statement then fails as it would
 * have).  A worker stopped mid-batch leaves nothing of it (its transaction
 * aborts), and the views go on from their offsets once the database is
 * released.  (A scheduler or worker that connects after this finds the
 * database held, and leaves.)
 */
#define SSP_HOLD_WAIT_MS 30000

bool
ssp_clear_database(Oid dboid)
{
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	while (terminate_processes_in(dboid) > 0)
	{
		instr_time	now;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (INSTR_TIME_GET_MILLISEC(now) > SSP_HOLD_WAIT_MS)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 20, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

/*
 * ssp_release_database: a transaction that held dboid is over: once no
 * other holds it, the launcher starts its scheduler again now (if the
 * database is still there).
 */
void
ssp_release_database(Oid dboid)
{
	SspDbSlot  *slot = ssp_db_slot(dboid, false);
	Latch	   *latch;

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	if (slot && slot->dboid == dboid && slot->holds > 0)
	{
		slot->holds--;
		slot->look_now = true;
	}
	latch = ssp_shared->launcher_latch;
	LWLockRelease(ssp_shared->lock);
	if (latch)
		SetLatch(latch);
}

/* ssp_supervisor_init: register the launcher (from _PG_init). */
void
ssp_supervisor_init(void)
{
	BackgroundWorker w;

	init_worker(&w, "ssp_launcher_main", "ssp launcher");
	w.bgw_restart_time = 5;
	RegisterBackgroundWorker(&w);
}

static bool
worker_running(BackgroundWorkerHandle *handle)
{
	pid_t		pid;

	return handle != NULL && GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED;
}

/* list_databases: the oids of the databases that accept connections. */
static List *
list_databases(void)
{
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext cxt = CurrentMemoryContext;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (db->datallowconn && !db->datistemplate)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			result = lappend_oid(result, db->oid);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

static void
launch_scheduler(LauncherDb *ldb)
{
	BackgroundWorker w;

	init_worker(&w, "ssp_scheduler_main", "ssp scheduler");
	w.bgw_main_arg = ObjectIdGetDatum(ldb->dboid);
	w.bgw_notify_pid = MyProcPid;
	ldb->last_start = GetCurrentTimestamp();
	if (!RegisterDynamicBackgroundWorker(&w, &ldb->handle))
	{
		ldb->handle = NULL;
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("ssp could not start a scheduler for database %u: no background worker slot free",
						ldb->dboid),
				 errhint("Raise max_worker_processes.")));
	}
}

/*
 * ssp_bgworker_session: settings for the session of an ssp background
 * worker, after it connects.  Settings meant for users' sessions
 * (postgresql.conf, ALTER DATABASE, ALTER ROLE) are not all for these: a
 * lock_timeout would fail a batch whenever a user holds a lock on the
 * view's table, where it should be waited out (ssp.views then says
 * "waiting for a lock"), and SERIALIZABLE by default would add
 * serialization failures that nothing retries.  Two would change what a
 * view writes without a word: session_replication_role = replica fires no
 * trigger, so a view with ssp.output_topic would apply its batches and put
 * none of its changes in its outbox; and extra_float_digits below 1 rounds
 * the floats of the changes it publishes as JSON; and array_nulls = off
 * reads the NULL of an array constant in a view's SQL (deparsed as
 * '{x,NULL}') as the text 'NULL'.  JIT compiles each statement anew, as
 * each batch plans it anew: over batches split to find a poison message,
 * again and again (minutes, with low jit_*_above_cost).  (synchronous_commit =
 * off may stay: the outbox flushes the WAL before it publishes, outbox.c.
 * statement_timeout and idle_in_transaction_session_timeout are armed for
 * client statements only.  A view reads event times of type timestamp in
 * its database's TimeZone, as documented.)
 */
void
ssp_bgworker_session(void)
{
	/*
	 * Whoever may create objects in a schema of the database's search_path
	 * could otherwise put an operator or function there that the SQL these
	 * processes run finds first (an exact "=" for oid and regclass), and
	 * have it run as the scheduler's superuser or a view's owner: only
	 * pg_catalog, as Postgres's own maintenance commands do.  The SQL of a
	 * view is written with every other name qualified.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("session_replication_role", "origin", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("extra_float_digits", "1", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("array_nulls", "on", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("jit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * What a view computes and publishes (a date as text, an output
	 * topic's keys) in one form, whatever the database's settings say or
	 * become: ISO dates.  The order of their fields, which reading them
	 * takes, stays the database's (as it was when the worker started).
	 * Not IntervalStyle: it changes how an interval's text is read too
	 * ('-1 2:00:00' is -26 hours in sql_standard, -22 in postgres), and a
	 * view must read a message as a session of its database does.
	 */
	SetConfigOption("DateStyle", "ISO", PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * ssp_launcher_main: the launcher's loop.  Connected to no database, it
 * reads pg_database only.
 */
void
ssp_launcher_main(Datum arg)
{
	List	   *dbs = NIL;		/* LauncherDb */

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	ssp_bgworker_session();

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	ssp_shared->launcher_latch = MyLatch;
	LWLockRelease(ssp_shared->lock);

	for (;;)
	{
		List	   *oids = list_databases();
		ListCell   *lc;
		TimestampTz now = GetCurrentTimestamp();

		foreach(lc, oids)
		{
			Oid			dboid = lfirst_oid(lc);
			LauncherDb *ldb = NULL;
			ListCell   *dc;
			SspDbSlot  *slot;
			bool		asked = false;

			foreach(dc, dbs)
				if (((LauncherDb *) lfirst(dc))->dboid == dboid)
					ldb = lfirst(dc);
			if (ldb == NULL)
			{
				ldb = MemoryContextAllocZero(TopMemoryContext, sizeof(LauncherDb));
				ldb->dboid = dboid;
				dbs = lappend(dbs, ldb);
			}
			if (worker_running(ldb->handle))
				continue;
			slot = ssp_db_slot(dboid, true);
			/* a scheduler started by a launcher before this one */
			if (slot && alive(slot->pid))
				continue;
			/* a statement needs the database to itself */
			if (slot && held(slot))
				continue;
			/*
			 * A database without ssp is looked at again now and then, or at
			 * once after CREATE EXTENSION ssp there (ssp_wake_launcher).  The
			 * latch is no sign of that: the postmaster sets it too, when a
			 * scheduler ends (bgw_notify_pid), and so for each that found no
			 * ssp, which would start the next at once, forever.
			 */
			if (slot)
			{
				LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
				asked = slot->look_now;
				slot->look_now = false;
				LWLockRelease(ssp_shared->lock);
			}
			if (slot && slot->no_extension && !asked &&
				!TimestampDifferenceExceeds(ldb->last_start, now, RECHECK_NO_EXTENSION_MS))
				continue;
			launch_scheduler(ldb);
		}
		ssp_shmem_forget_databases(oids);
		list_free(oids);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LAUNCHER_NAPTIME_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}

static void
scheduler_exit(int code, Datum arg)
{
	SspDbSlot  *slot = (SspDbSlot *) DatumGetPointer(arg);

	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->pid = 0;
	slot->latch = NULL;
	LWLockRelease(ssp_shared->lock);
}

/*
 * adopted_pid: the pid of a live worker of the view's part that this
 * scheduler did not start (a predecessor's), or 0.
 */
static int
adopted_pid(SchedView *sv)
{
	SspWorkerSlot *slot;
	int			pid;

	if (sv->handle)
		return 0;
	slot = ssp_worker_slot(MyDatabaseId, sv->view, sv->part, false);
	if (slot == NULL)
		return 0;
	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	pid = slot->pid;
	LWLockRelease(ssp_shared->lock);
	return alive(pid) ? pid : 0;
}

/*
 * stop_view_worker: ask the worker of a view's part to stop, ours or
 * adopted.  A view applied by its stream's reader together with others is
 * asked to leave it instead: the reader goes on for the others.
 */
static void
stop_view_worker(SchedView *sv)
{
	SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, sv->view, sv->part, false);
	int			pid = 0;
	bool		attached = false;

	if (slot)
	{
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		pid = slot->pid;
		attached = slot->attached && alive(pid);
		if (attached)
			slot->detach = true;
		/* handed to a reader that has not taken it: no longer */
		if (sv->handed_to != 0 && slot->handover_to == sv->handed_to && slot->pid == 0)
			slot->handover_to = 0;
		LWLockRelease(ssp_shared->lock);
	}
	sv->handed_to = 0;
	sv->wait_until = 0;
	if (attached)
	{
		PGPROC	   *proc = BackendPidGetProc(pid);

		if (proc)
			SetLatch(&proc->procLatch);
		/* that process is no longer this view's worker, whatever it goes on with */
		if (sv->handle)
		{
			pfree(sv->handle);
			sv->handle = NULL;
		}
		return;
	}
	pid = adopted_pid(sv);
	if (sv->handle)
		TerminateBackgroundWorker(sv->handle);
	else if (pid != 0)
		(void) kill(pid, SIGTERM);
}

/*
 * adopt_slots: a new scheduler takes on the views that its database's
 * worker slots name (its predecessor's): one dropped while no scheduler
 * ran is then a view not seen, whose process is stopped and slot freed,
 * where it ran on, holding its consumer, until a message came.
 */
static List *
adopt_slots(Oid dboid)
{
	List	   *views = NIL;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];
		SchedView  *sv;

		if (!s->in_use || s->dboid != dboid)
			continue;
		sv = palloc0(sizeof(SchedView));
		sv->view = s->view;
		sv->part = s->part;
		sv->reader_failures = s->reader_failures;
		views = lappend(views, sv);
	}
	LWLockRelease(ssp_shared->lock);
	MemoryContextSwitchTo(old);
	return views;
}

/*
 * loaded_generation: the ssp.reset generation of the view that the process
 * applying its part loaded; 0 if none has.
 */
static int
loaded_generation(Oid view, int part)
{
	SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, view, part, false);
	int			generation = 0;

	if (slot)
	{
		LWLockAcquire(ssp_shared->lock, LW_SHARED);
		generation = slot->generation;
		LWLockRelease(ssp_shared->lock);
	}
	return generation;
}

/* backoff: a view's worker failed: start it again after 1 s, 2 s, 4 s ... */
static void
backoff(SchedView *sv, TimestampTz now)
{
	if (TimestampDifferenceExceeds(sv->started, now, MAX_BACKOFF_MS))
		sv->failures = 0;
	sv->failures++;
	sv->next_start = TimestampTzPlusMilliseconds(now,
												 Min(MAX_BACKOFF_MS, 1000 << Min(sv->failures - 1, 6)));
}

/*
 * version_waits: the reason the views of this database wait, or NULL: the
 * installed ssp (version) is not the library's version (a new version
 * installed, ALTER EXTENSION ssp UPDATE not yet run).  Then no worker runs;
 * each view says why in ssp.views, and the log says it once.
 */
static char *
version_waits(const char *version)
{
	static char *warned = NULL;

	if (strcmp(version, SSP_VERSION) == 0)
	{
		if (warned)
			pfree(warned);
		warned = NULL;
		return NULL;
	}
	if (warned == NULL || strcmp(warned, version) != 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ssp: continuous views of database \"%s\" wait: the ssp library is version %s, but the extension there is version %s",
						get_database_name(MyDatabaseId), SSP_VERSION, version),
				 errhint("Run ALTER EXTENSION ssp UPDATE in that database.")));
		if (warned)
			pfree(warned);
		warned = MemoryContextStrdup(TopMemoryContext, version);
	}
	return psprintf(UPDATE_WAIT "%s, but the extension in this database is version %s: run ALTER EXTENSION ssp UPDATE",
					SSP_VERSION, version);
}

/*
 * caught_up: does every part of a view run, with few messages left?  From
 * its worker slots (a view being replaced is swapped once its new
 * definition has caught up).
 */
static bool
caught_up(Oid view, int parallelism)
{
	int			running = 0;
	int			i;

	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *s = &ssp_shared->workers[i];

		if (s->in_use && s->dboid == MyDatabaseId && s->view == view && s->pid != 0 &&
			strcmp(s->status, "running") == 0 && s->lag >= 0 && s->lag <= SSP_CATCHING_UP)
			running++;
	}
	LWLockRelease(ssp_shared->lock);
	return running >= parallelism;
}

/*
 * try_swap: ssp_replace_swap in a subtransaction; false if it failed.  One
 * that did nothing (a view locked by someone else, or not caught up) is
 * rolled back, so the locks it took do not wait for the caller's commit.
 */
static bool
try_swap(Oid shadow, Oid view)
{
	MemoryContext old = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;
	volatile bool swapped = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(old);
	PG_TRY();
	{
		swapped = ssp_replace_swap(shadow, view);
		if (swapped)
			ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		SspWorkerSlot *slot;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ereport(WARNING,
				(errmsg("ssp: continuous view %u could not take its new definition: %s",
						view, edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0));
		slot = ssp_worker_slot(MyDatabaseId, view, 0, false);
		if (slot)
			ssp_slot_set_error(slot, psprintf("could not take the new definition: %s", edata->message));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	if (ok && !swapped)
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(old);
	CurrentResourceOwner = owner;
	return ok;
}

/*
 * swap_replacements: the views whose new definition (CREATE OR REPLACE
 * VIEW) has caught up take it, each in a subtransaction of the caller's
 * transaction (replace.c); one that cannot says why in its slot, and is
 * tried again 10 s later.  Needs SPI.
 */
static void
swap_replacements(void)
{
	static TimestampTz failed_at = 0;
	List	   *shadows = NIL;
	List	   *views = NIL;
	ListCell   *lc,
			   *lc2;
	uint64		i;

	if (failed_at != 0 &&
		!TimestampDifferenceExceeds(failed_at, GetCurrentTimestamp(), 10000))
		return;
	if (SPI_execute("SELECT view::oid, replaces::oid, parallelism FROM ssp.continuous_views "
					"WHERE replaces IS NOT NULL AND NOT paused", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		HeapTuple	tup = SPI_tuptable->vals[i];
		Oid			shadow = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));

		if (!caught_up(shadow, DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull))))
			continue;
		shadows = lappend_oid(shadows, shadow);
		views = lappend_oid(views, DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull)));
	}
	forboth(lc, shadows, lc2, views)
		if (!try_swap(lfirst_oid(lc), lfirst_oid(lc2)))
			failed_at = GetCurrentTimestamp();
}

/*
 * try_repair: a view over shards made whole again, in a subtransaction: a
 * catalog row its owner wrote wrong (ssp_view_load refuses it) is said
 * once, as a WARNING, rather than end the scheduler at each round, which
 * then started no worker in the database.  As the view's owner, as its
 * worker repairs other views: the repair writes to the owner's tables,
 * whose triggers must not run as the scheduler's superuser.
 */
static void
try_repair(Oid view)
{
	static List *warned = NIL;
	MemoryContext old = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Oid			save_userid;
	int			save_sec;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(old);
	PG_TRY();
	{
		SspView    *v;

		/* the view before its catalog row, as DROP VIEW takes them */
		LockRelationOid(view, AccessShareLock);
		v = ssp_view_load(view, true);
		if (v)
		{
			SetUserIdAndSecContext(ssp_rel_owner(view), save_sec | SECURITY_LOCAL_USERID_CHANGE |
								   SECURITY_RESTRICTED_OPERATION);
			ssp_view_repair_dependencies(v);
			SetUserIdAndSecContext(save_userid, save_sec);
		}
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		if (!list_member_oid(warned, view))
		{
			MemoryContext top = MemoryContextSwitchTo(TopMemoryContext);

			warned = lappend_oid(warned, view);
			MemoryContextSwitchTo(top);
			ereport(WARNING,
					(errmsg("ssp: continuous view %u over shards could not be repaired: %s",
							view, edata->message),
					 edata->detail ? errdetail("%s", edata->detail) : 0));
		}
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	CurrentResourceOwner = owner;
}

/*
 * repair_views_over_shards: a view over shards (ssp.shards) has no worker
 * to make its tables part of it again after pg_dump and restore or
 * pg_upgrade, as a worker does for its view when it loads it: the
 * scheduler does, for those whose table is not part of them.
 */
static void
repair_views_over_shards(void)
{
	List	   *views = NIL;
	ListCell   *lc;
	uint64		i;

	if (SPI_execute("SELECT c.view::oid FROM ssp.continuous_views c "
					"JOIN pg_catalog.pg_class r ON r.oid = c.view AND r.relkind = 'v' "
					"WHERE c.parallelism = 0 AND NOT EXISTS ("
					"SELECT FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
					"AND d.objid = c.mrel AND d.refobjid = c.view AND d.deptype = 'i')", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		views = lappend_oid(views, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																  SPI_tuptable->tupdesc, 1, &isnull)));
	}
	foreach(lc, views)
		try_repair(lfirst_oid(lc));
}

/* read_views: update the scheduler's list from the catalog; false if ssp is gone. */
static bool
read_views(List **views)
{
	ListCell   *lc;
	uint64		i;
	char	   *version;
	bool		have_ext;
	char	   *why = NULL;

	foreach(lc, *views)
		((SchedView *) lfirst(lc))->seen = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	version = ssp_extension_version();
	have_ext = version != NULL;
	if (have_ext)
	{
		why = version_waits(version);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "ssp: SPI_connect failed");
		/*
		 * a row's owner may have written it (a restore does): only rows of
		 * views, and at most as many workers as CREATE VIEW allows, whose
		 * view then fails saying what is wrong (ssp_view_load), rather than
		 * a series of billions here; none for parallelism 0, a view over
		 * shards
		 */
		if (SPI_execute("SELECT c.view::oid, r.relowner, c.paused, c.generation, part "
						"FROM ssp.continuous_views c JOIN pg_catalog.pg_class r ON r.oid = c.view "
						"AND r.relkind = 'v', "
						"pg_catalog.generate_series(0, LEAST(c.parallelism, "
						CppAsString2(SSP_MAX_PARALLELISM) ") - 1) part",
						true, 0) != SPI_OK_SELECT)
			elog(ERROR, "ssp: could not read ssp.continuous_views");
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			Oid			view = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
			int			part = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));
			SchedView  *sv = NULL;
			int			generation;

			foreach(lc, *views)
				if (((SchedView *) lfirst(lc))->view == view && ((SchedView *) lfirst(lc))->part == part)
					sv = lfirst(lc);
			if (sv == NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

				/* the list outlives the transaction */
				sv = palloc0(sizeof(SchedView));
				sv->view = view;
				sv->part = part;
				*views = lappend(*views, sv);
				{
					SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, view, part, false);

					if (slot)
						sv->reader_failures = slot->reader_failures;
				}
				MemoryContextSwitchTo(old);
			}
			sv->seen = true;
			sv->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
			sv->wanted = !DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)) && why == NULL;
			if (why)
			{
				SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, view, part, true);

				if (slot)
				{
					ssp_slot_set_status(slot, "waiting for extension update", -1);
					ssp_slot_set_error(slot, why);
				}
			}
			else
			{
				/* updated: the wait's error goes, though no batch comes */
				SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, view, part, false);

				if (slot)
					ssp_slot_clear_error(slot, UPDATE_WAIT);
			}
			generation = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
			/*
			 * A reset: a process that loaded the view before it holds stale
			 * offsets, and is stopped (its batches are fenced meanwhile).
			 * One that has loaded the view since runs on.
			 */
			{
				int			loaded = loaded_generation(view, part);

				/*
				 * A scheduler's first look (generation 0) compares with
				 * what the process loaded: a reset committed while no
				 * scheduler ran left the view to its old process for good.
				 */
				if (loaded != 0 && loaded != generation &&
					(sv->generation == 0 || sv->generation != generation))
					stop_view_worker(sv);
			}
			sv->generation = generation;
		}
		if (why == NULL)
		{
			swap_replacements();
			repair_views_over_shards();
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	return have_ext;
}

static void
start_view_worker(SchedView *sv)
{
	BackgroundWorker w;
	SspWorkerArgs args = {MyDatabaseId, sv->owner, sv->part};

	SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, sv->view, sv->part, true);

	/* a worker that dies before it says it runs has failed */
	if (slot)
	{
		int			pid;

		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		pid = slot->pid;
		/* asked of a reader that did not take it (or a predecessor's ask) */
		if (pid == 0)
			slot->handover_to = 0;
		slot->confirmed = false;
		LWLockRelease(ssp_shared->lock);
		/* a reader claimed it since the scheduler looked */
		if (pid != 0 && alive(pid))
			return;
	}
	sv->handed_to = 0;
	sv->wait_until = 0;
	init_worker(&w, "ssp_worker_main", "ssp worker");
	if (sv->part == 0)
		snprintf(w.bgw_name, BGW_MAXLEN, "ssp worker for view %u", sv->view);
	else
		snprintf(w.bgw_name, BGW_MAXLEN, "ssp worker for view %u, part %d", sv->view, sv->part);
	w.bgw_main_arg = ObjectIdGetDatum(sv->view);
	memcpy(w.bgw_extra, &args, sizeof(args));
	w.bgw_notify_pid = MyProcPid;
	sv->started = GetCurrentTimestamp();
	if (!RegisterDynamicBackgroundWorker(&w, &sv->handle))
	{
		sv->handle = NULL;
		sv->next_start = TimestampTzPlusMilliseconds(sv->started, 1000);
		if (slot)
		{
			ssp_slot_set_status(slot, "failed", -1);
			ssp_slot_set_error(slot, "could not start a worker: no background worker slot free; raise max_worker_processes");
		}
	}
}

/*
 * How long a view waits for its streams' reader to take it over (it
 * answers between two batches), or for the worker started for another
 * view of its key to become that reader, before it gets a worker of its
 * own.
 */
#define READER_START_WAIT_MS 2000

/*
 * waits_for_broker: does reader pid wait for its brokers (a view it
 * applies, or its own, says so)?  Then slot, of a view handed to it, shows
 * the same status and error.  The caller holds ssp_shared->lock
 * exclusively.
 */
static bool
waits_for_broker(int pid, SspWorkerSlot *slot)
{
	int			i;

	for (i = 0; i < ssp_shared->nworkers; i++)
	{
		SspWorkerSlot *theirs = &ssp_shared->workers[i];

		if (theirs->in_use && theirs->dboid == MyDatabaseId && theirs->pid == pid &&
			strcmp(theirs->status, SSP_WAITING_FOR_BROKER) == 0)
		{
			strlcpy(slot->status, theirs->status, SSP_STATUS_LEN);
			strlcpy(slot->last_error, theirs->last_error, SSP_ERROR_LEN);
			return true;
		}
	}
	return false;
}

/*
 * to_reader: instead of starting a worker for a view, hand it to the live
 * reader of its streams near it (One reader per stream, in
 * doc/internals.md), as a worker would once started, without the process:
 * true while the view is handed or waits for a reader, false to start a
 * worker.  Views created together, or left by a reader that ended, then
 * cost one process start per reader, not one per view: the first view's
 * worker becomes a reader and the others near it wait for it
 * (READER_START_WAIT_MS), though a reader far from them runs already.  A
 * view that failed, or waits alone (for a lock, for the broker), gets a
 * worker of its own, as does one the reader does not take in time; the
 * reader's adopt() fences the view as for any hand-over.
 */
static bool
to_reader(SchedView *sv, List *views, TimestampTz now)
{
	SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, sv->view, sv->part, true);
	ListCell   *lc;
	int			pid = 0;
	Latch	   *latch = NULL;
	int64		theirs = 0;
	bool		asked;
	bool		waiting;

	if (slot == NULL)
		return false;
	if (sv->handed_to != 0)
	{
		bool		pending;
		int			holder;

		/* asked, and not answered yet: wait, up to a point */
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		holder = slot->pid;
		pending = slot->handover_to == sv->handed_to && holder == 0;

		/*
		 * A reader that waits for its brokers cannot answer before they do:
		 * the view waits with it, saying so.  A worker of its own would wait
		 * the same way, in a background worker slot (max_worker_processes,
		 * which parallel queries share): with the brokers down, one each
		 * for every view of the stream.
		 */
		if (pending && now >= sv->wait_until && waits_for_broker(sv->handed_to, slot))
			sv->wait_until = TimestampTzPlusMilliseconds(now, READER_START_WAIT_MS);
		if (pending && now >= sv->wait_until)
			slot->handover_to = 0;	/* no answer in time: withdrawn */
		LWLockRelease(ssp_shared->lock);
		/* claimed (the next round sees it served), or still asked */
		if ((holder != 0 && alive(holder)) || (pending && now < sv->wait_until && alive(sv->handed_to)))
			return true;
		/* no answer, or refused: a worker of its own */
		sv->handed_to = 0;
		sv->wait_until = 0;
		sv->key_known = false;
		return false;
	}
	LWLockAcquire(ssp_shared->lock, LW_SHARED);
	asked = slot->failed || slot->wait_alone || slot->refused || slot->handover_to != 0;
	pid = slot->pid;
	LWLockRelease(ssp_shared->lock);
	/* a process took it since the caller looked (a reader's claim) */
	if (pid != 0 && alive(pid))
		return true;
	pid = 0;
	if (asked || !ssp_shared_readers)
	{
		sv->wait_until = 0;
		sv->key_known = false;
		return false;
	}
	/* a new decision, unless it waits for a reader: where the view stands now */
	waiting = sv->wait_until != 0 && now < sv->wait_until;
	if (!waiting)
	{
		sv->wait_until = 0;
		sv->key_known = ssp_view_reader_key(sv->view, sv->part, &sv->key, &sv->position);
	}
	if (!sv->key_known)
		return false;

	if (ssp_reader_find(&sv->key, sv->position, &pid, &latch, &theirs))
	{
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		asked = slot->pid == 0 && slot->handover_to == 0;
		if (asked)
		{
			slot->handover_to = pid;
			slot->attached = false;
			slot->detach = false;
			slot->generation = 0;
		}
		LWLockRelease(ssp_shared->lock);
		if (!asked)
			return false;
		ssp_slot_set_status(slot, "starting", -1);
		SetLatch(latch);
		sv->handed_to = pid;
		sv->wait_until = TimestampTzPlusMilliseconds(now, SSP_HAND_OVER_ANSWER_MS);
		ereport(DEBUG1,
				(errmsg("ssp: continuous view %u (part %d) handed to the reader of its streams (pid %d)",
						sv->view, sv->part, pid)));
		return true;
	}
	if (waiting)
		return true;
	/*
	 * No reader near (none yet, or one far from the view: views made since
	 * it read to the end of its topic): the worker just started for a view
	 * of its key near this one becomes a reader, and takes this one too.
	 */
	foreach(lc, views)
	{
		SchedView  *other = lfirst(lc);
		pid_t		opid;

		/*
		 * Not one whose worker is a reader already: it would have been found
		 * near, so it is far (its position here is the one it started at).
		 */
		if (other != sv && other->handle != NULL && other->key_known &&
			memcmp(&other->key, &sv->key, sizeof(SspReaderKey)) == 0 &&
			ssp_reader_near(sv->key.batch_size, other->position, sv->position) &&
			!TimestampDifferenceExceeds(other->started, now, READER_START_WAIT_MS) &&
			!(GetBackgroundWorkerPid(other->handle, &opid) == BGWH_STARTED &&
			  ssp_reader_registered(opid)))
		{
			sv->wait_until = TimestampTzPlusMilliseconds(other->started, READER_START_WAIT_MS);
			ssp_slot_set_status(slot, "starting", -1);
			return true;
		}
	}
	return false;
}

/* reconcile: start, restart and stop workers to match the catalog. */
static void
reconcile(List **views)
{
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

	foreach(lc, *views)
	{
		SchedView  *sv = lfirst(lc);

		SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, sv->view, sv->part, false);
		pid_t		hpid = 0;

		if (sv->handle && GetBackgroundWorkerPid(sv->handle, &hpid) == BGWH_STARTED &&
			slot && slot->confirmed && slot->pid != hpid)
		{
			/*
			 * Its worker runs, but no longer for this view: it handed the
			 * view over to its stream's reader, or it is that reader and the
			 * view left it (failed: back off).
			 */
			pfree(sv->handle);
			sv->handle = NULL;
			if (slot->failed)
				backoff(sv, now);
			else
				sv->next_start = now;
		}
		else if (sv->handle && !worker_running(sv->handle))
		{
			/* the worker exited: on an error, back off */
			pfree(sv->handle);
			sv->handle = NULL;
			if (slot == NULL || slot->failed || !slot->confirmed)
				backoff(sv, now);
			else
				sv->next_start = now;
		}
		/* it failed inside its stream's reader, which went on without it */
		if (slot && slot->reader_failures != sv->reader_failures)
		{
			sv->reader_failures = slot->reader_failures;
			backoff(sv, now);
		}
		if (!sv->seen || !sv->wanted)
		{
			stop_view_worker(sv);
			continue;
		}
		/* its streams' reader took it: that hand-over is done */
		if (sv->handed_to != 0 && adopted_pid(sv) != 0)
		{
			sv->handed_to = 0;
			sv->wait_until = 0;
		}
		if (sv->handle == NULL && now >= sv->next_start && adopted_pid(sv) == 0 &&
			!to_reader(sv, *views, now))
			start_view_worker(sv);
	}

	/* forget dropped views once their worker is gone */
	foreach(lc, *views)
	{
		SchedView  *sv = lfirst(lc);

		if (!sv->seen && sv->handle == NULL && adopted_pid(sv) == 0)
		{
			SspWorkerSlot *slot = ssp_worker_slot(MyDatabaseId, sv->view, sv->part, false);

			if (slot)
			{
				LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
				slot->in_use = false;
				LWLockRelease(ssp_shared->lock);
			}
			*views = foreach_delete_current(*views, lc);
			pfree(sv);
		}
	}
}

/*
 * ssp_scheduler_main: the scheduler of one database (the argument); exits
 * at once if ssp is not installed there.
 */
void
ssp_scheduler_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	SspDbSlot  *slot;
	List	   *views = NIL;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* started just before a statement held the database: not now */
	slot = ssp_db_slot(dboid, true);
	if (slot == NULL || held(slot))
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	ssp_bgworker_session();

	if (!ssp_lock_process(SSP_LOCK_SCHEDULER, InvalidOid, 0))
	{
		ereport(LOG,
				(errmsg("ssp: another scheduler already runs in database %u; this one exits",
						dboid)));
		proc_exit(0);
	}

	views = adopt_slots(dboid);
	if (!read_views(&views))
	{
		LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
		slot->no_extension = true;
		LWLockRelease(ssp_shared->lock);
		proc_exit(0);
	}
	LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
	slot->no_extension = false;
	slot->pid = MyProcPid;
	slot->latch = MyLatch;
	LWLockRelease(ssp_shared->lock);
	before_shmem_exit(scheduler_exit, PointerGetDatum(slot));

	for (;;)
	{
		if (held(slot))
		{
			ListCell   *lc;

			/* workers not started yet too */
			foreach(lc, views)
				if (((SchedView *) lfirst(lc))->handle)
					TerminateBackgroundWorker(((SchedView *) lfirst(lc))->handle);
			(void) terminate_processes_in(dboid);
			proc_exit(0);
		}
		reconcile(&views);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 SCHEDULER_NAPTIME_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!read_views(&views))
		{
			ListCell   *lc;

			/* DROP EXTENSION: stop every worker */
			foreach(lc, views)
				stop_view_worker(lfirst(lc));
			LWLockAcquire(ssp_shared->lock, LW_EXCLUSIVE);
			slot->no_extension = true;
			LWLockRelease(ssp_shared->lock);
			proc_exit(0);
		}
	}
}
