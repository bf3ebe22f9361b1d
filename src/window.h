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

extern int	ssp_find_window(SspStream *stream, List *group_exprs, Interval **size);
extern TimestampTz ssp_watermark(const TimestampTz *maxev, const TimestampTz *seen_at,
								 const bool *lagging, int nparts, TimestampTz previous,
								 int64 idle_ms, Interval *grace);
extern TimestampTz ssp_event_time(SspStream *stream, SspMessage *msg,
								  Datum *values, bool *nulls);

#endif							/* SSP_WINDOW_H */
