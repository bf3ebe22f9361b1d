/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Windows on event time: ssp.tumble(), ssp.tumble_end() and
 *	  ssp.hop_windows() (on a time zone's clocks, or lengths of time),
 *	  finding the window of a continuous view's query and keeping its
 *	  origins, and the watermark.
 *
 * Window arithmetic is in microseconds, checked for overflow: a window
 * that would start before the first timestamp or end after the last is an
 * error (for a view's event, a dead letter), never a wrapped value.
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

#include <ctype.h>
#include <limits.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/scansup.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "stream/stream.h"
#include "compile/window.h"

PG_FUNCTION_INFO_V1(ssp_tumble);
PG_FUNCTION_INFO_V1(ssp_tumble_end);
PG_FUNCTION_INFO_V1(ssp_hop);
PG_FUNCTION_INFO_V1(ssp_hop_windows);
PG_FUNCTION_INFO_V1(ssp_session);

/* seconds from 1970-01-01 (pg_time_t's epoch) to 2000-01-01 (Postgres's) */
#define SSP_EPOCH_SECS ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/* more than any zone's offset from UTC, or change of it */
#define SSP_ZONE_REACH (2 * USECS_PER_DAY)

/* the windows of a hopping window an event may be in: a row to write each */
#define SSP_MAX_HOP_WINDOWS 100000

/*
 * A window's origin: an instant, or a local time in a time zone, whose
 * local time then aligns the windows.
 */
typedef struct SspOrigin
{
	pg_tz	   *zone;			/* NULL: at is an instant */
	int64		at;				/* the instant, or the zone's local time */
} SspOrigin;

/*
 * split_zone: if origin ends with the name of a time zone ("2000-01-01
 * 00:00 Europe/Paris", "... CET", "... EST5EDT"), cut it off origin and
 * return the zone; else NULL.  A name is any that SET timezone takes,
 * even where the same letters are an abbreviation too (CET is Central
 * European Time, summer time included); a numeric offset ("+02") or an
 * abbreviation that names no zone (CEST) is not one: timestamptz_in reads
 * those as a fixed offset.  Nor is a word of the date (BC, PM).
 */
static pg_tz *
split_zone(char *origin)
{
	char	   *space = strrchr(origin, ' ');
	char	   *zone;
	char	   *lower;
	int			val;
	pg_tz	   *tz;

	if (space == NULL)
		return NULL;
	zone = space + 1;
	if (!isalpha((unsigned char) zone[0]) || strlen(zone) > TZ_STRLEN_MAX)
		return NULL;
	lower = downcase_truncate_identifier(zone, strlen(zone), false);
	if (DecodeSpecial(0, lower, &val) != UNKNOWN_FIELD)
		return NULL;
	tz = pg_tzset(zone);
	if (tz == NULL || !pg_tz_acceptable(tz))
		return NULL;
	*space = '\0';
	return tz;
}

/*
 * ssp_window_zone: the time zone a window's origin names (windows aligned
 * on its local time, whose length is local too), or NULL.
 */
char *
ssp_window_zone(Node *origin)
{
	Const	   *c = (Const *) origin;
	pg_tz	   *tz;

	if (origin == NULL || !IsA(origin, Const) || c->constisnull || c->consttype != TEXTOID)
		return NULL;
	tz = split_zone(TextDatumGetCString(c->constvalue));
	return tz ? pstrdup(pg_get_timezone_name(tz)) : NULL;
}

static void
origin_out_of_range(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("origin out of range")));
}

/*
 * parse_origin: a window's origin from its text: with a zone name, the
 * local time before it; else an instant, read in this session's TimeZone
 * (a continuous view keeps its origins with an offset: ssp_resolve_origins).
 */
static void
parse_origin(const char *text, SspOrigin *o)
{
	char	   *copy = pstrdup(text);

	o->zone = split_zone(copy);
	if (o->zone)
		o->at = DatumGetTimestamp(DirectFunctionCall3(timestamp_in, CStringGetDatum(copy),
													  ObjectIdGetDatum(InvalidOid),
													  Int32GetDatum(-1)));
	else
		o->at = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in, CStringGetDatum(copy),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	if (TIMESTAMP_NOT_FINITE(o->at))
		origin_out_of_range();
	pfree(copy);
}

/*
 * The origin of a window function's argument argno (none: 2000-01-01
 * 00:00 UTC), parsed once per call site while its text stays the same.
 */
typedef struct OriginCache
{
	SspOrigin	origin;
	int			len;
	char		text[FLEXIBLE_ARRAY_MEMBER];
} OriginCache;

static void
get_origin(FunctionCallInfo fcinfo, int argno, SspOrigin *o)
{
	text	   *t;
	OriginCache *c = (OriginCache *) fcinfo->flinfo->fn_extra;
	int			len;

	o->zone = NULL;
	o->at = 0;
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return;
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	if (c == NULL || c->len != len || memcmp(c->text, VARDATA_ANY(t), len) != 0)
	{
		SspOrigin	parsed;

		parse_origin(text_to_cstring(t), &parsed);
		c = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, offsetof(OriginCache, text) + len);
		c->origin = parsed;
		c->len = len;
		memcpy(c->text, VARDATA_ANY(t), len);
		if (fcinfo->flinfo->fn_extra)
			pfree(fcinfo->flinfo->fn_extra);
		fcinfo->flinfo->fn_extra = c;
	}
	*o = c->origin;
}

/*
 * ssp_window_length: the length of a window (its size, slide or gap) in
 * microseconds, a day being 24 hours (a zone's local ones where the
 * origin names one): '1 day -23 hours' is an hour, as date_bin() takes it.
 * Errors unless it is positive, without months.
 */
int64
ssp_window_length(Interval *iv)
{
	int64		us;

	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window sizes in months or years are not supported"),
				 errhint("Use days, as in '30 days'.")));
	if (pg_mul_s64_overflow(iv->day, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, iv->time, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("window size out of range")));
	if (us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window size must be positive")));
	return us;
}

/* floor_mod: a modulo m (m > 0), from 0 to m - 1 */
static int64
floor_mod(int64 a, int64 m)
{
	int64		r = a % m;

	return r < 0 ? r + m : r;
}

/*
 * bin_start: the start of the bin of size that holds t, bins aligned on
 * origin (t less (t - origin) modulo size, which cannot overflow where
 * t - origin could); false if it is past int64.
 */
static bool
bin_start(int64 t, int64 origin, int64 size, int64 *start)
{
	int64		m = floor_mod(t, size) - floor_mod(origin, size);

	if (m < 0)
		m += size;
	return !pg_sub_s64_overflow(t, m, start);
}

static void
start_out_of_range(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of range")));
}

/*
 * end_out_of_range: the window that holds t would end after the last
 * timestamp: such an event is in no window (a continuous view makes it a
 * dead letter, saying so, rather than hold a window that cannot close).
 */
static void
end_out_of_range(TimestampTz t)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("the window that holds %s ends after the last timestamp",
					DatumGetCString(DirectFunctionCall1(timestamptz_out, TimestampTzGetDatum(t)))),
			 errdetail("Timestamps end with 294276-12-31 23:59:59.999999 UTC.")));
}

/* unix_seconds: the pg_time_t second that holds t */
static pg_time_t
unix_seconds(TimestampTz t)
{
	return (t - floor_mod(t, USECS_PER_SEC)) / USECS_PER_SEC + SSP_EPOCH_SECS;
}

/* zone_offset: tz's offset from UTC at t (local time less UTC), in us */
static int64
zone_offset(pg_tz *tz, TimestampTz t)
{
	pg_time_t	s = unix_seconds(t);
	struct pg_tm *tm = pg_localtime(&s, tz);

	if (tm == NULL)
		start_out_of_range();
	return (int64) tm->tm_gmtoff * USECS_PER_SEC;
}

/*
 * zone_change: the first change of tz's offset after t: when, and the
 * offsets before and after it; false if there is none before the last
 * timestamp.
 */
static bool
zone_change(pg_tz *tz, TimestampTz t, TimestampTz *at, int64 *before, int64 *after)
{
	pg_time_t	s = unix_seconds(t);
	pg_time_t	boundary;
	long int	before_off;
	long int	after_off;
	int			before_dst;
	int			after_dst;

	if (pg_next_dst_boundary(&s, &before_off, &before_dst, &boundary,
							 &after_off, &after_dst, tz) != 1 ||
		boundary - SSP_EPOCH_SECS >= END_TIMESTAMP / USECS_PER_SEC)
		return false;
	*at = (boundary - SSP_EPOCH_SECS) * USECS_PER_SEC;
	*before = (int64) before_off * USECS_PER_SEC;
	*after = (int64) after_off * USECS_PER_SEC;
	return true;
}

typedef struct ZoneChange
{
	TimestampTz at;
	int64		before;			/* the offset before it */
} ZoneChange;

/*
 * zone_start: the start of the window of local bins [lo, hi) that holds t,
 * where the offset is off: the instant the clocks last showed lo, unless
 * they jumped into the bin from another since.  The changes of offset
 * since before the earliest instant whose local time may be lo are listed,
 * then walked back from t while the clocks stay in the bin.
 */
static TimestampTz
zone_start(pg_tz *tz, int64 lo, int64 hi, TimestampTz t, int64 off)
{
	ZoneChange *changes = NULL;
	int			n = 0;
	int			room = 0;
	TimestampTz from;
	TimestampTz at;
	TimestampTz here;
	int64		before;
	int64		after;

	if (pg_sub_s64_overflow(lo, SSP_ZONE_REACH, &from) ||
		from < MIN_TIMESTAMP - SSP_ZONE_REACH)
		from = MIN_TIMESTAMP - SSP_ZONE_REACH;
	while (zone_change(tz, from, &at, &before, &after) && at <= t)
	{
		if (n == room)
		{
			room = room ? room * 2 : 4;
			changes = changes ? repalloc(changes, sizeof(ZoneChange) * room) :
				palloc(sizeof(ZoneChange) * room);
		}
		changes[n].at = at;
		changes[n].before = before;
		n++;
		from = at;
	}
	for (;;)
	{
		int64		just_before;

		/* where the clocks showed lo at this offset */
		if (pg_sub_s64_overflow(lo, off, &here))
			here = PG_INT64_MIN;
		if (n == 0 || here >= changes[n - 1].at)
			break;
		/* they jumped past lo: into this bin from another? */
		here = changes[n - 1].at;
		just_before = here - 1 + changes[n - 1].before;
		if (just_before < lo || just_before >= hi)
			break;
		off = changes[n - 1].before;
		n--;
	}
	if (changes)
		pfree(changes);
	if (!IS_VALID_TIMESTAMP(here))
		start_out_of_range();
	return here;
}

/*
 * zone_end: the end of the window of local bins [lo, hi) of size,
 * aligned on origin, that holds t, where the offset is off: the instant the clocks
 * show hi, unless they show the start of a bin, or another bin, before.
 */
static TimestampTz
zone_end(pg_tz *tz, int64 origin, int64 size, int64 lo, int64 hi,
		 TimestampTz t, int64 off)
{
	TimestampTz cur = t;
	TimestampTz here;
	TimestampTz at;
	int64		before;
	int64		after;

	for (;;)
	{
		/* where the clocks show hi at this offset */
		if (hi == PG_INT64_MAX || pg_sub_s64_overflow(hi, off, &here))
			end_out_of_range(t);
		if (!zone_change(tz, cur, &at, &before, &after) || here < at)
			break;
		/* after the change, do they show a bin's start, or another bin? */
		if (at + after < lo || at + after >= hi ||
			floor_mod(at + after, size) == floor_mod(origin, size))
		{
			here = at;
			break;
		}
		cur = at;
		off = after;
	}
	if (!IS_VALID_TIMESTAMP(here))
		end_out_of_range(t);
	return here;
}

/*
 * zone_window: the window of local bins of size, aligned on the local
 * time origin of tz, that holds t.  A window starts whenever the zone's
 * clocks show the start of a bin, and where they jump from one bin into
 * another without showing its start (spring: 01:59:59 to 03:00 starts the
 * window of 02:00 or 03:00, whichever bin 03:00 is in); it ends where the
 * next starts.  So windows tile time with neither gap nor overlap, and each
 * starts at or before its events: a bin the clocks skip is no window; one
 * whose start they show twice (autumn, 02:00) is two windows, an hour each
 * for '1 hour'; a day, whose midnight they show once, lasts 25 hours.
 * (Taking the local start back to UTC, as timezone() does, put an event of
 * the first 02:30 in a window that began after it, at the second 02:00.)
 * start and end may be NULL.
 */
static void
zone_window(pg_tz *tz, int64 origin, int64 size, TimestampTz t,
			TimestampTz *start, TimestampTz *end)
{
	int64		off = zone_offset(tz, t);
	int64		lo;
	int64		hi;

	if (!bin_start(t + off, origin, size, &lo))
		start_out_of_range();
	if (pg_add_s64_overflow(lo, size, &hi))
		hi = PG_INT64_MAX;
	if (start)
		*start = zone_start(tz, lo, hi, t, off);
	if (end)
		*end = zone_end(tz, origin, size, lo, hi, t, off);
}

/*
 * window_of: the window of size (us), aligned on origin, that holds t (a
 * finite time): its start and end, either NULL if not wanted.  Errors if
 * it starts before the first timestamp, or ends after the last, even if
 * end is NULL.
 */
static void
window_of(TimestampTz t, int64 size, SspOrigin *origin,
		  TimestampTz *start, TimestampTz *end)
{
	TimestampTz s;
	TimestampTz e;
	int64		far;

	/* far from the end of time, its window ends within it */
	if (end == NULL &&
		(pg_add_s64_overflow(size, SSP_ZONE_REACH, &far) ||
		 pg_add_s64_overflow(t, far, &far) || far >= END_TIMESTAMP))
		end = &e;
	if (origin->zone)
	{
		zone_window(origin->zone, origin->at, size, t, start, end);
		return;
	}
	if (!bin_start(t, origin->at, size, &s) || !IS_VALID_TIMESTAMP(s))
		start_out_of_range();
	if (start)
		*start = s;
	if (end && (pg_add_s64_overflow(s, size, end) || !IS_VALID_TIMESTAMP(*end)))
		end_out_of_range(t);
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
	TimestampTz ts;
	TimestampTz start;
	int64		size;
	SspOrigin	origin;

	/* not STRICT, for the origin that defaults to NULL */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	ts = PG_GETARG_TIMESTAMPTZ(0);
	size = ssp_window_length(PG_GETARG_INTERVAL_P(1));
	get_origin(fcinfo, 2, &origin);
	if (TIMESTAMP_NOT_FINITE(ts))
		PG_RETURN_TIMESTAMPTZ(ts);
	window_of(ts, size, &origin, &start, NULL);
	PG_RETURN_TIMESTAMPTZ(start);
}

/*
 * ssp.tumble_end(ts, size [, origin]): the end of ssp.tumble's window that
 * holds ts: the start of the next one (with an origin in a time zone, not
 * always the start plus size: a day may last 23 or 25 hours).
 */
Datum
ssp_tumble_end(PG_FUNCTION_ARGS)
{
	TimestampTz ts;
	TimestampTz end;
	int64		size;
	SspOrigin	origin;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	ts = PG_GETARG_TIMESTAMPTZ(0);
	size = ssp_window_length(PG_GETARG_INTERVAL_P(1));
	get_origin(fcinfo, 2, &origin);
	if (TIMESTAMP_NOT_FINITE(ts))
		PG_RETURN_TIMESTAMPTZ(ts);
	window_of(ts, size, &origin, NULL, &end);
	PG_RETURN_TIMESTAMPTZ(end);
}

/*
 * ssp_hop_count: the windows of size sliding by slide that hold an event,
 * at most: size over slide, rounded up.  Errors as CREATE VIEW does for
 * ssp.hop() unless the slide is at most the size, and the windows at most
 * SSP_MAX_HOP_WINDOWS (each a row to write, or to list).
 */
int
ssp_hop_count(Interval *size, Interval *slide)
{
	int64		size_us = ssp_window_length(size);
	int64		slide_us = ssp_window_length(slide);
	int64		n;

	/* any size: windows start every slide, each size long */
	if (slide_us > size_us)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the slide of a hopping window must not be longer than its size"),
				 errhint("Events between two windows would belong to none; use ssp.tumble for windows that do not overlap.")));
	n = size_us / slide_us + (size_us % slide_us != 0);
	if (n > SSP_MAX_HOP_WINDOWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a hopping window of %s sliding by %s puts each event in more than %d windows",
						DatumGetCString(DirectFunctionCall1(interval_out, PointerGetDatum(size))),
						DatumGetCString(DirectFunctionCall1(interval_out, PointerGetDatum(slide))),
						SSP_MAX_HOP_WINDOWS),
				 errhint("For the aggregates over the last span of time, updated often, use ssp.sliding; or make the slide longer.")));
	return (int) n;
}

typedef struct HopWindows
{
	TimestampTz next;			/* the next window's start */
	int64		slide;
	int			left;			/* windows still to return */
} HopWindows;

/*
 * ssp.hop_windows(ts, size, slide [, origin]): the starts of the windows
 * of size, every slide, that hold ts, earliest first: the last starts at
 * ssp.tumble(ts, slide, origin), and the others whole slides (of
 * absolute time) before it, as long as they hold ts; each lasts size (a
 * day being 24 hours).  A continuous view's ssp.hop() puts each event in
 * these.  None for a null argument or for either infinity (a series of
 * windows that would never end); the same limits as ssp.hop() in a view.
 */
Datum
ssp_hop_windows(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;
	HopWindows *hw;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;

		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		hw = palloc0(sizeof(HopWindows));
		fctx->user_fctx = hw;
		if (!PG_ARGISNULL(0) && !PG_ARGISNULL(1) && !PG_ARGISNULL(2))
		{
			TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
			int			n = ssp_hop_count(PG_GETARG_INTERVAL_P(1), PG_GETARG_INTERVAL_P(2));
			int64		size = ssp_window_length(PG_GETARG_INTERVAL_P(1));
			int64		slide = ssp_window_length(PG_GETARG_INTERVAL_P(2));
			SspOrigin	origin = {NULL, 0};
			TimestampTz last;
			TimestampTz first;
			int64		back;

			if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
				parse_origin(text_to_cstring(PG_GETARG_TEXT_PP(3)), &origin);
			if (!TIMESTAMP_NOT_FINITE(ts))
			{
				window_of(ts, slide, &origin, &last, NULL);
				if (pg_add_s64_overflow(last, size, &first) || !IS_VALID_TIMESTAMP(first))
					end_out_of_range(ts);
				/* the first that holds ts: back while start + size > ts */
				back = size - (ts - last);	/* > 0: last holds ts */
				n = Min(n, (int) ((back - 1) / slide + 1));
				if (pg_mul_s64_overflow(n - 1, slide, &back) ||
					pg_sub_s64_overflow(last, back, &first) || !IS_VALID_TIMESTAMP(first))
					start_out_of_range();
				hw->next = first;
				hw->slide = slide;
				hw->left = n;
			}
		}
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	hw = fctx->user_fctx;
	if (hw->left > 0)
	{
		TimestampTz w = hw->next;

		hw->next += hw->slide;
		hw->left--;
		SRF_RETURN_NEXT(fctx, TimestampTzGetDatum(w));
	}
	SRF_RETURN_DONE(fctx);
}

/*
 * resolved_origin: an origin as a continuous view keeps it, read now, in
 * this session's TimeZone, as the one who wrote it meant it: an instant
 * with its offset ("2000-01-01 00:00:00+01"), or a local time and its
 * zone ("2000-01-01 00:00:00 Europe/Paris"), both in ISO form.  Its worker
 * reads it the same in any TimeZone and DateStyle: read there, an origin
 * without a zone moved with ALTER DATABASE ... SET timezone.
 */
static char *
resolved_origin(const char *text)
{
	SspOrigin	o;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	char		buf[MAXDATELEN + 1];

	parse_origin(text, &o);
	if (o.zone)
	{
		if (timestamp2tm(o.at, NULL, &tm, &fsec, NULL, NULL) != 0)
			origin_out_of_range();
		EncodeDateTime(&tm, fsec, false, 0, NULL, USE_ISO_DATES, buf);
		return psprintf("%s %s", buf, pg_get_timezone_name(o.zone));
	}
	if (timestamp2tm(o.at, &tz, &tm, &fsec, NULL, NULL) != 0)
		origin_out_of_range();
	EncodeDateTime(&tm, fsec, true, tz, NULL, USE_ISO_DATES, buf);
	return pstrdup(buf);
}

static bool
resolve_origins_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, resolve_origins_walker, context, 0);
	if (IsA(node, FuncExpr) &&
		get_func_namespace(((FuncExpr *) node)->funcid) == get_namespace_oid("ssp", false))
	{
		FuncExpr   *f = (FuncExpr *) node;
		char	   *name = get_func_name(f->funcid);
		int			argno = -1;
		Const	   *c;

		if (strcmp(name, "tumble") == 0 || strcmp(name, "tumble_end") == 0)
			argno = 2;
		else if (strcmp(name, "hop") == 0 || strcmp(name, "hop_windows") == 0)
			argno = 3;
		c = argno >= 0 && list_length(f->args) > argno ? list_nth(f->args, argno) : NULL;
		if (c && IsA(c, Const) && !c->constisnull && c->consttype == TEXTOID)
			c->constvalue = CStringGetTextDatum(resolved_origin(TextDatumGetCString(c->constvalue)));
	}
	return expression_tree_walker(node, resolve_origins_walker, context);
}

/*
 * ssp_resolve_origins: at CREATE VIEW, the origins of the windows of a
 * continuous view's query as it keeps them (resolved_origin), in place.
 */
void
ssp_resolve_origins(Query *q)
{
	(void) query_tree_walker(q, resolve_origins_walker, NULL, 0);
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

/* WindowCalls: what window_calls_walker walks the query with */
typedef struct WindowCalls
{
	Query	   *top;
	bool		in_agg;
} WindowCalls;

/* is_key_call: is node one of the query's keys itself, outside an aggregate? */
static bool
is_key_call(Node *node, WindowCalls *w)
{
	ListCell   *lc;

	if (w->in_agg)
		return false;
	foreach(lc, w->top->targetList)
	{
		TargetEntry *te = lfirst(lc);

		if (te->ressortgroupref != 0 && equal(te->expr, node))
			return true;
	}
	return false;
}

/* window_calls_walker: refuse a call of ssp.hop or ssp.session but a key */
static bool
window_calls_walker(Node *node, WindowCalls *w)
{
	const char *fn;

	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, window_calls_walker, w, 0);
	if (IsA(node, Aggref))
	{
		bool		in_agg = w->in_agg;
		bool		found;

		w->in_agg = true;
		found = expression_tree_walker(node, window_calls_walker, w);
		w->in_agg = in_agg;
		return found;
	}
	fn = window_function(node);
	if (fn && strcmp(fn, "tumble") != 0 && !is_key_call(node, w))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.%s() can only be a GROUP BY key of a continuous view", fn),
				 errdetail("Each event goes into %s; it is no value of its own to compute in an expression.",
						   strcmp(fn, "hop") == 0 ? "every window that holds it" : "the session of its group"),
				 errhint("Group by the call itself: GROUP BY ssp.%s(...), then compute over the view's column.", fn)));
	return expression_tree_walker(node, window_calls_walker, w);
}

/*
 * ssp_check_window_calls: refuse ssp.hop and ssp.session anywhere in a
 * continuous view's query but as one of its GROUP BY (or DISTINCT) keys,
 * itself: elsewhere (in WHERE, an aggregate, an expression over it) each
 * event failed as the worker computed it, a dead letter.
 */
void
ssp_check_window_calls(Query *q)
{
	WindowCalls w = {q, false};
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *te = lfirst(lc);

		/* a key that is the call itself: its arguments are the time and constants */
		if (te->ressortgroupref != 0 && window_function((Node *) te->expr))
			continue;
		(void) window_calls_walker((Node *) te->expr, &w);
	}
	(void) window_calls_walker((Node *) q->jointree, &w);
	(void) window_calls_walker(q->havingQual, &w);
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_SUBQUERY)
			(void) window_calls_walker((Node *) rte->subquery, &w);
	}
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
						 IsA(list_nth(f->args, j), Const) ?
						 errmsg("the size, slide and origin of a window cannot be null") :
						 errmsg("the size, slide and origin of a window must be constants")));
		spec->size = DatumGetIntervalP(((Const *) lsecond(f->args))->constvalue);
		(void) ssp_window_length(spec->size);
		if (spec->hop)
		{
			spec->slide = DatumGetIntervalP(((Const *) lthird(f->args))->constvalue);
			(void) ssp_hop_count(spec->size, spec->slide);
		}
		if (list_length(f->args) > nconst)
		{
			SspOrigin	origin;

			spec->origin = list_nth(f->args, nconst);
			/* an origin that cannot be read fails CREATE VIEW, not each batch */
			if (exprType(spec->origin) == TEXTOID)
				parse_origin(TextDatumGetCString(((Const *) spec->origin)->constvalue), &origin);
		}

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
 * ssp_minus_fits: is w less iv (not negative) surely a timestamp?  An
 * event time a stream takes may be days from the ends of the range (4714
 * BC), and the subtraction, outside any message's subtransaction, failed
 * the batch for good.  A month is at most 31 days, a day 25 hours.  (This
 * once subtracted MIN_TIMESTAMP from w, which overflowed past the year
 * 287,000: the watermark then stayed where it was for good.)
 */
bool
ssp_minus_fits(TimestampTz w, Interval *iv)
{
	const int64 day = USECS_PER_DAY + USECS_PER_HOUR;
	int64		span;
	int64		m = iv->month;
	int64		d = iv->day;
	int64		t = iv->time;
	int64		dspan;
	int64		lowest;

	if (pg_mul_s64_overflow(m < 0 ? -m : m, 31 * day, &span) ||
		pg_mul_s64_overflow(d < 0 ? -d : d, day, &dspan) ||
		pg_add_s64_overflow(span, dspan, &span) ||
		t == PG_INT64_MIN ||
		pg_add_s64_overflow(span, t < 0 ? -t : t, &span))
		return false;
	return !TIMESTAMP_NOT_FINITE(w) && !pg_sub_s64_overflow(w, span, &lowest) &&
		lowest >= MIN_TIMESTAMP;
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
	if (w == DT_NOBEGIN || !ssp_minus_fits(w, grace))
		return previous;
	/* in UTC: a day of grace is 24 hours, whatever the worker's TimeZone */
	w = DatumGetTimestamp(DirectFunctionCall2(timestamp_mi_interval,
											  TimestampGetDatum(w),
											  PointerGetDatum(grace)));
	return previous == DT_NOBEGIN ? w : Max(previous, w);
}
