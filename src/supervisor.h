/*-------------------------------------------------------------------------
 *
 * supervisor.h
 *	  The launcher and the per-database schedulers (supervisor.c) that keep
 *	  one worker (worker.c) running per continuous view.
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

extern void ssp_supervisor_init(void);
extern void ssp_bgworker_session(void);

#endif							/* SSP_SUPERVISOR_H */
