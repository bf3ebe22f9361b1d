/*-------------------------------------------------------------------------
 *
 * ssp.c
 *	  Module entry point: load checks, GUCs and hook installation.
 *
 * ssp must be loaded through shared_preload_libraries: its background
 * workers and shared memory can only be set up at server start, so
 * _PG_init refuses any other way of loading it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "ssp.h"
#include "runtime/rows.h"
#include "runtime/shmem.h"
#include "runtime/supervisor.h"

PG_MODULE_MAGIC;

/* ssp.broker_timeout: longest wait for the broker in a backend, in ms */
int			ssp_broker_timeout = 30000;

/* ssp.aggregate_fast_path: built-in aggregates kept in plain SQL states */
bool		ssp_aggregate_fast_path = true;

/* ssp.attached_lock_timeout: how long a view of a reader waits for a lock, ms */
int			ssp_attached_lock_timeout = 1000;

/* ssp.shared_readers: views of the same streams share a reader */
bool		ssp_shared_readers = true;

/* ssp.reader_buffer: messages a reader's consumer prefetches, in kB */
int			ssp_reader_buffer = 65536;

/* ssp.work_mem: work_mem of the workers, in kB; -1 for the server's */
int			ssp_work_mem = 32768;

/* ssp.library_version: read only, for the install and upgrade scripts */
static char *ssp_library_version = NULL;

void		_PG_init(void);

/* ssp.work_mem is -1 or at least work_mem's least, 64 kB */
static bool
check_work_mem(int *newval, void **extra, GucSource source)
{
	if (*newval == -1 || *newval >= 64)
		return true;
	GUC_check_errdetail("ssp.work_mem must be -1 (work_mem) or at least 64kB.");
	return false;
}

/*
 * _PG_init: define GUCs and install hooks; only at postmaster start.
 */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ssp must be loaded via shared_preload_libraries"),
				 errhint("Add ssp to shared_preload_libraries in postgresql.conf and restart the server.")));

	DefineCustomIntVariable("ssp.broker_timeout",
							"Longest time a statement waits for the Kafka broker.",
							"Bounds metadata requests, scans that receive nothing, "
							"and the acknowledgement of produced messages.",
							&ssp_broker_timeout,
							30000, 100, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("ssp.aggregate_fast_path",
							 "Keeps built-in aggregates of new continuous views in plain SQL states.",
							 "Off: they are kept through their own transition and combine "
							 "functions, as any other aggregate is (for testing and comparison).",
							 &ssp_aggregate_fast_path,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("ssp.attached_lock_timeout",
							"Longest wait for a lock by a view that shares its stream's reader.",
							"A view whose table stays locked longer leaves the reader, "
							"so that the other views of the stream do not wait, and waits "
							"for the lock with a worker of its own.",
							&ssp_attached_lock_timeout,
							1000, 1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("ssp.shared_readers",
							 "Lets the continuous views of the same streams share one reader.",
							 "Off: each view has a consumer of its own and decodes every "
							 "message itself, as before 0.3 (for comparison; views already "
							 "sharing a reader go on sharing it).",
							 &ssp_shared_readers,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("ssp.reader_buffer",
							"Memory for the messages a stream's reader prefetches from Kafka.",
							"One buffer per reader (per stream and part), whatever the "
							"number of views that read the stream: librdkafka's "
							"queued.max.messages.kbytes, which a server option overrides.",
							&ssp_reader_buffer,
							65536, 1024, 2097151,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("ssp.work_mem",
							"Memory for each sort and hash of the statements that apply a batch.",
							"The work_mem of the workers of continuous views (-1: work_mem). "
							"A batch of up to ssp.batch_size messages is aggregated and "
							"joined at once; with less memory, its hash tables spill to disk.",
							&ssp_work_mem,
							32768, -1, MAX_KILOBYTES,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							check_work_mem, NULL, NULL);

	DefineCustomBoolVariable("ssp.allow_kinit_cmd",
							 "Lets superusers set the Kafka property sasl.kerberos.kinit.cmd.",
							 "Off: it is refused, and Kerberos tickets are not refreshed by "
							 "librdkafka (no kinit command runs); keep a ticket cache current "
							 "outside Postgres.",
							 &ssp_allow_kinit_cmd,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("ssp.library_version",
							   "The version of the ssp library the server has loaded.",
							   "CREATE EXTENSION and ALTER EXTENSION ssp UPDATE check that it "
							   "is the version of their script.",
							   &ssp_library_version,
							   SSP_VERSION,
							   PGC_INTERNAL,
							   GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved("ssp");

	ssp_utility_init();
	ssp_shmem_init();
	ssp_rows_init();

	/*
	 * pg_upgrade runs both clusters in binary-upgrade mode while it copies
	 * the schema: no worker may run then (its connections would hold the
	 * databases that pg_upgrade restores, and nothing is to be consumed).
	 */
	if (!IsBinaryUpgrade)
		ssp_supervisor_init();
}

/*
 * ssp_pin_search_path: only pg_catalog on the search path until
 * AtEOXact_GUC(true, the level returned), for SQL that ssp runs in a
 * user's session over objects it already resolved: whoever may create
 * objects in a schema on the user's path could otherwise have an exact
 * "=" of theirs (for oid and regclass) run, as the user, in its place.
 */
int
ssp_pin_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * ssp_spi_catalog: SPI_execute_with_args with the search path pinned
 * (ssp_pin_search_path), for ssp's own statements on its catalog and
 * Postgres's in a user's session (DDL, the utility hook): their "=" of
 * regclass and oid has no exact operator in pg_catalog, and would
 * otherwise take one from a schema on the user's path.
 */
int
ssp_spi_catalog(const char *sql, int nargs, Oid *argtypes, Datum *values,
				const char *nulls, bool read_only, long count)
{
	int			level = ssp_pin_search_path();
	int			rc;

	rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, read_only, count);
	AtEOXact_GUC(true, level);
	return rc;
}
