/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  Applying a batch of messages to a continuous view (batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_BATCH_H
#define SSP_BATCH_H

#include "ssp.h"
#include "view.h"

/* Event time per partition, for a windowed view's watermark. */
typedef struct SspEventTime
{
	int			nparts;
	TimestampTz *maxev;			/* latest event time seen; DT_NOBEGIN: none */
	TimestampTz *seen_at;		/* when a message of it was last applied */
	bool	   *lagging;		/* has messages not read yet (set by caller) */
	TimestampTz watermark;		/* DT_NOBEGIN: none yet */
} SspEventTime;

extern bool ssp_apply_batch(SspView *view, SspStream *stream, SspMessage *msgs,
							int n, int nparts, const int64 *next,
							SspEventTime *et);
extern bool ssp_record_lost(SspView *view, int32 partition, int64 from, int64 to);

#endif							/* SSP_BATCH_H */
