/*-------------------------------------------------------------------------
 *
 * window.h
 *	  Windows on event time (window.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_WINDOW_H
#define SSP_WINDOW_H

#include "datatype/timestamp.h"

#include "ssp.h"

/* The window of a continuous view (ssp_find_window). */
typedef struct SspWindowSpec
{
	int			index;			/* group key that is the window; -1: none */
	bool		hop;			/* ssp.hop rather than ssp.tumble */
	bool		session;		/* ssp.session: size is the gap */
	Interval   *size;
	Interval   *slide;			/* hop only */
	Node	   *ts;				/* the event time argument */
	Node	   *origin;			/* the origin argument, or NULL */
} SspWindowSpec;

extern void ssp_find_window(SspStream *stream, int rtindex, List *group_exprs, SspWindowSpec *spec);
extern TimestampTz ssp_watermark(const TimestampTz *maxev, const TimestampTz *seen_at,
								 const bool *lagging, int nparts,
								 TimestampTz previous, int64 idle_ms, Interval *grace);
extern char *ssp_window_zone(Node *origin);
extern int64 ssp_window_length(Interval *iv);
extern int	ssp_hop_count(Interval *size, Interval *slide);
extern bool ssp_minus_fits(TimestampTz w, Interval *iv);
extern void ssp_resolve_origins(Query *q);
extern void ssp_check_window_calls(Query *q);
extern bool ssp_is_event_time(SspStream *stream, AttrNumber attnum);
extern char *ssp_event_time_detail(SspStream *stream);
extern TimestampTz ssp_event_time(SspStream *stream, SspMessage *msg,
								  Datum *values, bool *nulls);

#endif							/* SSP_WINDOW_H */
