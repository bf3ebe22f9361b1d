/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Windows on event time: ssp.tumble(), and finding the window of a
 *	  continuous view's query.
 *
 * A view is windowed when one of its GROUP BY keys is ssp.tumble() over
 * the stream's event time (its "timestamp" column, or a meta 'timestamp'
 * column for the Kafka timestamp).  Its worker then keeps, per partition,
 * the latest event time seen; the watermark is the smallest of those over
 * the partitions that are not idle, less ssp.grace; an event whose window
 * ended at or before the watermark when its batch began is late: counted,
 * not applied.  See batch.c and worker.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "window.h"

PG_FUNCTION_INFO_V1(ssp_tumble);

/*
 * split_zone: if origin ends with a time zone name ("2000-01-01 00:00
 * Europe/Paris"), return the zone and cut it off origin; else NULL.
 */
static char *
split_zone(char *origin)
{
	char	   *space = strrchr(origin, ' ');
	char	   *zone;

	if (space == NULL)
		return NULL;
	zone = space + 1;
	if (strchr(zone, '/') == NULL && strcmp(zone, "UTC") != 0)
		return NULL;
	if (pg_tzset(zone) == NULL)
		return NULL;
	*space = '\0';
	return zone;
}

/*
 * ssp.tumble(ts, size [, origin]): the start of the window of the given
 * size that holds ts; windows are aligned on origin (default 2000-01-01
 * 00:00 UTC).  An origin with a time zone name aligns windows on that
 * zone's local time, so '1 day' windows start at its midnight, DST or not.
 */
Datum
ssp_tumble(PG_FUNCTION_ARGS)
{
	Datum		ts = PG_GETARG_DATUM(0);
	Interval   *size = PG_GETARG_INTERVAL_P(1);
	char	   *origin;
	char	   *zone;

	if (size->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window sizes in months or years are not supported"),
				 errhint("Use days, as in '30 days'.")));
	if (size->day < 0 || size->time < 0 || (size->day == 0 && size->time == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window size must be positive")));
	if (PG_NARGS() < 3 || PG_ARGISNULL(2))
		return DirectFunctionCall3(timestamptz_bin, PointerGetDatum(size), ts,
								   TimestampTzGetDatum(0));

	origin = text_to_cstring(PG_GETARG_TEXT_PP(2));
	zone = split_zone(origin);
	if (zone)
	{
		Datum		zonename = CStringGetTextDatum(zone);
		Datum		local_origin = DirectFunctionCall3(timestamp_in, CStringGetDatum(origin),
													   ObjectIdGetDatum(InvalidOid),
													   Int32GetDatum(-1));
		Datum		local = DirectFunctionCall2(timestamptz_zone, zonename, ts);
		Datum		bin = DirectFunctionCall3(timestamp_bin, PointerGetDatum(size),
											  local, local_origin);

		return DirectFunctionCall2(timestamp_zone, zonename, bin);
	}
	return DirectFunctionCall3(timestamptz_bin, PointerGetDatum(size), ts,
							   DirectFunctionCall3(timestamptz_in, CStringGetDatum(origin),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
}

static bool
is_tumble(Node *node)
{
	FuncExpr   *f;
	char	   *name;

	if (!IsA(node, FuncExpr))
		return false;
	f = (FuncExpr *) node;
	name = get_func_name(f->funcid);
	return name && strcmp(name, "tumble") == 0 &&
		get_func_namespace(f->funcid) == get_namespace_oid("ssp", false);
}

/*
 * ssp_find_window: the window of a query, from its group keys: the index
 * of the key that is ssp.tumble() (or -1 if none) and its size.  Errors if
 * the window is not over the stream's event time or its size and origin
 * are not constants.
 */
int
ssp_find_window(SspStream *stream, List *group_exprs, Interval **size)
{
	ListCell   *lc;
	int			i = 0;
	int			found = -1;

	foreach(lc, group_exprs)
	{
		Node	   *e = lfirst(lc);
		FuncExpr   *f;
		Node	   *ts;
		int			j;
		bool		ok = false;

		if (!is_tumble(e))
		{
			i++;
			continue;
		}
		if (found >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a continuous view can group by one window only")));
		f = (FuncExpr *) e;
		ts = linitial(f->args);
		for (j = 1; j < list_length(f->args); j++)
			if (!IsA(list_nth(f->args, j), Const))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("the size and origin of ssp.tumble() must be constants")));
		if (((Const *) lsecond(f->args))->constisnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("window size must not be NULL")));
		*size = DatumGetIntervalP(((Const *) lsecond(f->args))->constvalue);
		(void) DirectFunctionCall2(ssp_tumble, TimestampTzGetDatum(0), PointerGetDatum(*size));

		if (IsA(ts, Var))
		{
			SspColumn  *col = NULL;

			for (j = 0; j < stream->ncolumns; j++)
				if (stream->columns[j].attnum == ((Var *) ts)->varattno)
					col = &stream->columns[j];
			ok = col && (stream->timestamp_attnum > 0 ?
						 col->attnum == stream->timestamp_attnum :
						 col->source == SSP_SRC_TIMESTAMP);
		}
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a window must be over the event time of stream \"%s\"", stream->relname),
					 errdetail("%s", stream->timestamp_attnum > 0 ?
							   psprintf("Its event time is column \"%s\" (option timestamp).",
										get_attname(stream->relid, stream->timestamp_attnum, false)) :
							   "It has no option timestamp, so its event time is the Kafka timestamp, in a column with OPTIONS (meta 'timestamp')."),
					 errhint("Windows close as event time passes; they need the time the watermark follows.")));
		found = i;
		i++;
	}
	return found;
}

/*
 * ssp_event_time: the event time of a decoded message: its timestamp
 * column, else the Kafka timestamp; DT_NOBEGIN if it has none.
 */
TimestampTz
ssp_event_time(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls)
{
	if (stream->timestamp_attnum > 0)
		return nulls[stream->timestamp_attnum - 1] ? DT_NOBEGIN :
			DatumGetTimestampTz(values[stream->timestamp_attnum - 1]);
	if (msg->timestamp_ms < 0)
		return DT_NOBEGIN;
	return DatumGetTimestampTz(ssp_ms_to_timestamptz(msg->timestamp_ms));
}

/*
 * ssp_watermark: the view's watermark, less grace, never below the
 * previous one.  It is the smallest latest-event-time over the partitions
 * that count: one with messages not read yet always counts (one that has
 * none seen yet holds the watermark where it is: events are not late
 * merely because another partition was read first); one read to its end
 * counts unless idle for idle_ms.  If none counts, the largest
 * latest-event-time.
 */
TimestampTz
ssp_watermark(const TimestampTz *maxev, const TimestampTz *seen_at,
			  const bool *lagging, int nparts, TimestampTz previous,
			  int64 idle_ms, Interval *grace)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz active = DT_NOEND;
	TimestampTz any = DT_NOBEGIN;
	TimestampTz w;
	int			p;

	for (p = 0; p < nparts; p++)
	{
		bool		idle;

		if (maxev[p] == DT_NOBEGIN)
		{
			if (lagging[p])
				return previous;	/* unread messages of unknown time */
			continue;			/* empty so far: not counted */
		}
		any = Max(any, maxev[p]);
		idle = seen_at[p] == DT_NOBEGIN ||
			TimestampDifferenceExceeds(seen_at[p], now, (int) Min(idle_ms, INT_MAX));
		if (lagging[p] || !idle)
			active = Min(active, maxev[p]);
	}
	w = active != DT_NOEND ? active : any;
	if (w == DT_NOBEGIN)
		return previous;
	w = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												TimestampTzGetDatum(w),
												PointerGetDatum(grace)));
	return previous == DT_NOBEGIN ? w : Max(previous, w);
}
