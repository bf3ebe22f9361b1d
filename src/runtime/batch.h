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
#include "compile/view.h"

/* Event time per partition (slot), for a view's watermark. */
typedef struct SspEventTime
{
	int			nparts;
	TimestampTz *maxev;			/* latest event time seen; DT_NOBEGIN: none */
	TimestampTz *seen_at;		/* when a message of it was last applied, or
								 * when the worker started watching it */
	bool	   *lagging;		/* has messages not read yet (set by caller) */
	TimestampTz watermark;		/* DT_NOBEGIN: none yet */
	TimestampTz began;			/* the one the last batch began with */
} SspEventTime;

/*
 * The topics a view's worker reads (one, or several for a join of streams).
 * Their partitions are numbered as one range of slots: partition p of
 * source i is slot base[i] + p; per-partition arrays are indexed by slot.
 */
typedef struct SspSources
{
	int			n;
	SspStream **streams;
	int		   *base;			/* the first slot of each */
	int		   *nparts;			/* partitions of each */
	int			nslots;
} SspSources;

#define SSP_SLOT(src, msg) ((src)->base[(msg)->source] + (msg)->partition)

/* A batch decoded once for the views of a process (ssp_decode_more). */
typedef struct SspDecoded
{
	int			n;				/* messages decoded */
	bool		failed;			/* one could not be: the views decode */
	int			nsources;
	struct SspRows **rows;		/* per source: the rows of ssp_batch ... */
	TimestampTz *maxev;			/* per slot: latest event time, or NULL */
	Datum	   *values;			/* a message's, as it is decoded */
	bool	   *nulls;
	MemoryContext cxt;			/* where it lives, until ssp_decoded_free */
	List	   *groups;			/* SspGroups: reduced once for the views that
								 * reduce the batch alike (ssp_share_note) */
} SspDecoded;

/* Per slot, the lowest and highest offset of a batch's messages (-1: none). */
typedef struct SspSpan
{
	int64	   *lowest;
	int64	   *highest;
} SspSpan;

extern void ssp_batch_span(SspSources *src, SspMessage *msgs, int n, SspSpan *span);
extern bool ssp_apply_batch(SspView *view, SspSources *src, SspMessage *msgs,
							int n, const SspSpan *span, const int64 *from,
							const int64 *next, SspEventTime *et,
							SspDecoded *shared, bool nested);
extern bool ssp_batch_due(SspView *view, SspEventTime *et, const bool *lagging, int nslots);
extern void ssp_decode_more(SspDecoded **dp, SspSources *src, SspMessage *msgs,
							int from, int to, bool event_times, MemoryContext cxt);
extern void ssp_decoded_free(SspDecoded *d);
extern void ssp_share_note(SspDecoded *d, SspView *view);
extern int	ssp_share_used(SspDecoded *d);
extern bool ssp_may_read_stream(SspView *view, Oid relid, Oid user);
extern void ssp_check_stream_acl(SspView *view, SspStream *stream);
extern void ssp_wait_for_batches(Oid view);
extern bool ssp_record_lost(SspView *view, int source, int32 partition,
							int64 stored, int64 from, int64 to);

#endif							/* SSP_BATCH_H */
