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
#include "common/int.h"
#include "nodes/nodeFuncs.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "compile/window.h"

PG_FUNCTION_INFO_V1(ssp_tumble);
PG_FUNCTION_INFO_V1(ssp_hop);
PG_FUNCTION_INFO_V1(ssp_session);

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
 * ssp_window_zone: the time zone a window's origin names (windows aligned
 * on its local time, whose length is local too), or NULL.
 */
char *
ssp_window_zone(Node *origin)
{
	Const	   *c = (Const *) origin;

	if (origin == NULL || !IsA(origin, Const) || c->constisnull || c->consttype != TEXTOID)
		return NULL;
	return split_zone(TextDatumGetCString(c->constvalue));
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
	Datum		ts;
	Interval   *size;
	char	   *origin;
	char	   *zone;

	/* not STRICT, for the origin that defaults to NULL */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	ts = PG_GETARG_DATUM(0);
	size = PG_GETARG_INTERVAL_P(1);
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

/*
 * ssp.hop(ts, size, slide [, origin]): only a GROUP BY key of a continuous
 * view, where each event goes into every window that holds it; in a query,
 * FROM ..., ssp.hop_windows(ts, size, slide) lists those windows.
 */
Datum
ssp_hop(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("ssp.hop() can only be a GROUP BY key of a continuous view"),
			 errhint("In a query, list the windows of an event with FROM ..., ssp.hop_windows(ts, size, slide).")));
	PG_RETURN_NULL();
}

/*
 * ssp.session(ts, gap): only a GROUP BY key of a continuous view: the start
 * of the burst of events (per group) with no silence longer than gap.
 */
Datum
ssp_session(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("ssp.session() can only be a GROUP BY key of a continuous view")));
	PG_RETURN_NULL();
}

/* window_function: "tumble", "hop" or "session" if node calls ssp's. */
static const char *
window_function(Node *node)
{
	FuncExpr   *f;
	char	   *name;

	if (!IsA(node, FuncExpr))
		return NULL;
	f = (FuncExpr *) node;
	name = get_func_name(f->funcid);
	if (name == NULL || get_func_namespace(f->funcid) != get_namespace_oid("ssp", false))
		return NULL;
	if (strcmp(name, "tumble") == 0 || strcmp(name, "hop") == 0 ||
		strcmp(name, "session") == 0)
		return name;
	return NULL;
}

/* the windows of a hopping window an event may be in: a row to write each */
#define SSP_MAX_HOP_WINDOWS 100000

static int64
interval_us(Interval *iv)
{
	return iv->time + (int64) iv->day * USECS_PER_DAY;
}

/*
 * ssp_find_window: the window of a query, from its group keys, into spec
 * (index -1 if none).  Errors if the window is not over the stream's event
 * time (the stream's, at range-table index rtindex; stream NULL: a join's,
 * not checked here), its size, slide and origin are not constants, or
 * there are two.
 */
void
ssp_find_window(SspStream *stream, int rtindex, List *group_exprs, SspWindowSpec *spec)
{
	ListCell   *lc;
	int			i = -1;

	memset(spec, 0, sizeof(*spec));
	spec->index = -1;
	foreach(lc, group_exprs)
	{
		Node	   *e = lfirst(lc);
		const char *fn = window_function(e);
		FuncExpr   *f;
		int			j;
		int			nconst;
		bool		ok = false;

		i++;
		if (fn == NULL)
			continue;
		if (spec->index >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a continuous view can group by one window only")));
		f = (FuncExpr *) e;
		spec->index = i;
		spec->hop = strcmp(fn, "hop") == 0;
		spec->session = strcmp(fn, "session") == 0;
		spec->ts = linitial(f->args);
		nconst = spec->hop ? 3 : 2;
		for (j = 1; j < list_length(f->args); j++)
			if (!IsA(list_nth(f->args, j), Const) || ((Const *) list_nth(f->args, j))->constisnull)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("the size, slide and origin of a window must be constants")));
		spec->size = DatumGetIntervalP(((Const *) lsecond(f->args))->constvalue);
		(void) DirectFunctionCall2(ssp_tumble, TimestampTzGetDatum(0), PointerGetDatum(spec->size));
		if (spec->hop)
		{
			spec->slide = DatumGetIntervalP(((Const *) lthird(f->args))->constvalue);
			(void) DirectFunctionCall2(ssp_tumble, TimestampTzGetDatum(0), PointerGetDatum(spec->slide));
			/* any size: windows start every slide, each size long */
			if (interval_us(spec->slide) > interval_us(spec->size))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("the slide of a hopping window must not be longer than its size"),
						 errhint("Events between two windows would belong to none; use ssp.tumble for windows that do not overlap.")));
			/* each event is a row of each of its windows */
			if (interval_us(spec->size) / interval_us(spec->slide) +
				(interval_us(spec->size) % interval_us(spec->slide) != 0) > SSP_MAX_HOP_WINDOWS)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("a hopping window of %s sliding by %s puts each event in more than %d windows",
								DatumGetCString(DirectFunctionCall1(interval_out, PointerGetDatum(spec->size))),
								DatumGetCString(DirectFunctionCall1(interval_out, PointerGetDatum(spec->slide))),
								SSP_MAX_HOP_WINDOWS),
						 errhint("For the aggregates over the last span of time, updated often, use ssp.sliding; or make the slide longer.")));
		}
		if (list_length(f->args) > nconst)
			spec->origin = list_nth(f->args, nconst);

		if (stream == NULL)
			continue;			/* over a join: join.c checks the time */
		if (IsA(spec->ts, Var) && ((Var *) spec->ts)->varno == rtindex &&
			((Var *) spec->ts)->varlevelsup == 0)
			ok = ssp_is_event_time(stream, ((Var *) spec->ts)->varattno);
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a window must be over the event time of stream \"%s\"", stream->relname),
					 errdetail("%s", ssp_event_time_detail(stream)),
					 errhint("Windows close as event time passes; they need the time the watermark follows.")));
	}
}

/*
 * ssp_is_event_time: is this column of the stream its event time: the
 * column of option timestamp, or else one with meta 'timestamp'?
 */
bool
ssp_is_event_time(SspStream *stream, AttrNumber attnum)
{
	int			j;

	for (j = 0; j < stream->ncolumns; j++)
		if (stream->columns[j].attnum == attnum)
			return stream->timestamp_attnum > 0 ?
				attnum == stream->timestamp_attnum :
				stream->columns[j].source == SSP_SRC_TIMESTAMP;
	return false;
}

/* ssp_event_time_detail: where a stream's event time is, for a message. */
char *
ssp_event_time_detail(SspStream *stream)
{
	if (stream->timestamp_attnum > 0)
		return psprintf("The event time of stream \"%s\" is column \"%s\" (option timestamp).",
						stream->relname, get_attname(stream->relid, stream->timestamp_attnum, false));
	return psprintf("Stream \"%s\" has no option timestamp, so its event time is the Kafka timestamp, in a column with OPTIONS (meta 'timestamp').",
					stream->relname);
}

/*
 * ssp_event_time: the event time of a decoded message: its timestamp
 * column, else the Kafka timestamp; DT_NOBEGIN if it has none.  A
 * timestamp without time zone is the instant Postgres casts it to in this
 * process's TimeZone: a join's SQL compares such a column with the
 * watermark ($1, a timestamptz) through that cast.  Read as UTC, it made
 * events on time east of UTC late, and dropped their pairs.
 */
TimestampTz
ssp_event_time(SspStream *stream, SspMessage *msg, Datum *values, bool *nulls)
{
	if (stream->timestamp_attnum > 0)
	{
		Datum		v = values[stream->timestamp_attnum - 1];
		int			overflow = 0;
		TimestampTz t;

		if (nulls[stream->timestamp_attnum - 1])
			return DT_NOBEGIN;
		if (stream->timestamp_typid != TIMESTAMPOID)
			return DatumGetTimestampTz(v);
		t = timestamp2timestamptz_opt_overflow(DatumGetTimestamp(v), &overflow);
		/* past either end once moved by the zone: as far as it goes */
		return overflow < 0 ? MIN_TIMESTAMP : overflow > 0 ? END_TIMESTAMP - 1 : t;
	}
	if (msg->timestamp_ms < 0)
		return DT_NOBEGIN;
	return DatumGetTimestampTz(ssp_ms_to_timestamptz(msg->timestamp_ms));
}

/*
 * grace_fits: is w less grace a timestamp?  An event time a stream takes
 * may be days from the ends of the range (4714 BC), and the subtraction,
 * outside any message's subtransaction, failed the batch for good.  A
 * month is at most 31 days, a day 25 hours.
 */
static bool
grace_fits(TimestampTz w, Interval *grace)
{
	const int64 day = USECS_PER_DAY + USECS_PER_HOUR;
	int64		span;
	int64		m = grace->month;
	int64		d = grace->day;
	int64		t = grace->time;

	int64		dspan;

	if (pg_mul_s64_overflow(m < 0 ? -m : m, 31 * day, &span) ||
		pg_mul_s64_overflow(d < 0 ? -d : d, day, &dspan) ||
		pg_add_s64_overflow(span, dspan, &span) ||
		t == PG_INT64_MIN ||
		pg_add_s64_overflow(span, t < 0 ? -t : t, &span))
		return false;
	return w - MIN_TIMESTAMP > span && END_TIMESTAMP - w > span;
}

/*
 * ssp_watermark: the view's watermark, less grace, never below the
 * previous one.  One rule for every view, as Flink's with idleness: it is
 * the smallest latest-event-time over the partitions that count.  A
 * partition with messages not read yet always counts; if it has none
 * seen yet, it holds the watermark where it is (messages of unknown time
 * may come).  A partition with no message yet, or read to its end, counts
 * until it has been idle for idle_ms (seen_at: when a message of it was
 * last applied, or when the worker started watching it), so that events
 * are not late merely because another partition was read first; the
 * client's view of a partition's end may be older than its first
 * messages.  If none counts, the largest latest-event-time.
 */
TimestampTz
ssp_watermark(const TimestampTz *maxev, const TimestampTz *seen_at,
			  const bool *lagging, int nparts,
			  TimestampTz previous, int64 idle_ms, Interval *grace)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz active = DT_NOEND;
	TimestampTz any = DT_NOBEGIN;
	TimestampTz w;
	int			p;

	for (p = 0; p < nparts; p++)
	{
		bool		idle = seen_at[p] == DT_NOBEGIN ||
			TimestampDifferenceExceeds(seen_at[p], now, (int) Min(idle_ms, INT_MAX));

		if (maxev[p] == DT_NOBEGIN)
		{
			if (lagging[p] || !idle)
				return previous;	/* messages of unknown time may come */
			continue;			/* empty and idle: not counted */
		}
		any = Max(any, maxev[p]);
		if (lagging[p] || !idle)
			active = Min(active, maxev[p]);
	}
	w = active != DT_NOEND ? active : any;
	if (w == DT_NOBEGIN || !grace_fits(w, grace))
		return previous;
	w = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												TimestampTzGetDatum(w),
												PointerGetDatum(grace)));
	return previous == DT_NOBEGIN ? w : Max(previous, w);
}
