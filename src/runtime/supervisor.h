/*-------------------------------------------------------------------------
 *
 * supervisor.h
 *	  The launcher and the per-database schedulers (supervisor.c) that keep
 *	  every continuous view applied: by a worker of its own (worker.c), or
 *	  by its streams' reader (reader.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_SUPERVISOR_H
#define SSP_SUPERVISOR_H

/* What a view's worker is told, in bgw_extra. */
typedef struct SspWorkerArgs
{
	Oid			dboid;
	Oid			owner;
	int			part;			/* which of the view's workers */
} SspWorkerArgs;

/* the fourth field of the advisory lock tags of ssp's processes */
#define SSP_LOCK_WORKER		0x5350
#define SSP_LOCK_SCHEDULER	0x5351

extern void ssp_supervisor_init(void);
extern bool ssp_lock_process(uint16 kind, Oid id, int part);
extern void ssp_unlock_process(uint16 kind, Oid id, int part);
extern void ssp_bgworker_session(void);
extern bool ssp_hold_database(Oid dboid);
extern bool ssp_clear_database(Oid dboid);
extern void ssp_release_database(Oid dboid);
extern bool ssp_database_held(Oid dboid);

#endif							/* SSP_SUPERVISOR_H */
