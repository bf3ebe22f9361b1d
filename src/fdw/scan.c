/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  Reading a stream: a bounded scan of its topic, from each partition's
 *	  oldest retained message to its high watermark when the scan starts.
 *
 * Nothing is asked of the broker until the first row is wanted, so EXPLAIN
 * and scans that are never run cost nothing.  Predicates pushed down by
 * fdw.c narrow the partitions and offsets to read.  Only the columns the
 * query reads (fdw.c works them out) are decoded; the others are NULL in
 * the scanned rows, and a value of theirs is never converted, so it can
 * neither fail the scan nor show in an error to a role that may not read
 * it.  A message that cannot be decoded fails the scan (its error names
 * the topic, partition, offset and column), unless the stream has
 * on_error 'null'.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "fdw/fdw.h"
#include "stream/stream.h"
#include "kafka/kafka.h"

/* The range to read, from the pushed-down predicates. */
typedef struct ScanBounds
{
	bool		empty;			/* a predicate can never be true */
	int64		part_lo;
	int64		part_hi;
	List	   *part_in;		/* int64 partitions, or NIL: no list */
	bool		have_in;
	int64		off_lo;
	int64		off_hi;			/* inclusive */
	int64		ts_lo;			/* milliseconds, or -1 */
} ScanBounds;

/*
 * needed_columns: per column of the stream, whether its attnum is in
 * attnums (the plan's columns to decode); in CurrentMemoryContext.
 */
static bool *
needed_columns(SspStream *stream, List *attnums)
{
	bool	   *needed = palloc0(sizeof(bool) * Max(stream->ncolumns, 1));
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
		needed[i] = list_member_int(attnums, stream->columns[i].attnum);
	return needed;
}

/*
 * ssp_scan_begin: set up the scan; no broker contact.  The stream is the
 * scan's own: it decodes only the plan's columns.
 */
void
ssp_scan_begin(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	SspScanState *state = palloc0(sizeof(SspScanState));
	RangeTblEntry *rte;

	node->fdw_state = state;
	state->stream = ssp_stream_open(RelationGetRelid(node->ss.ss_currentRelation));
	rte = exec_rt_fetch(plan->scan.scanrelid, estate);
	state->userid = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	state->some_columns = !ssp_may_read_all_columns(state->stream->relid, state->userid);
	state->stream->unquoted = state->some_columns;

	state->values = ExecInitExprList(plan->fdw_exprs, (PlanState *) node);
	state->sources = linitial(plan->fdw_private);
	state->strategies = lsecond(plan->fdw_private);
	state->stream->needed = needed_columns(state->stream, lfourth(plan->fdw_private));
	state->scancxt = AllocSetContextCreate(estate->es_query_cxt, "ssp scan",
										   ALLOCSET_DEFAULT_SIZES);
	state->rowcxt = AllocSetContextCreate(estate->es_query_cxt, "ssp row",
										  ALLOCSET_DEFAULT_SIZES);
}

static int64
int_value(Datum d, Oid type)
{
	if (type == INT2OID)
		return DatumGetInt16(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	return DatumGetInt64(d);
}

/* apply_int: narrow [lo, hi] by "column <strategy> v". */
static void
apply_int(int64 *lo, int64 *hi, int strategy, int64 v, bool *empty)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			if (v == PG_INT64_MIN)
				*empty = true;
			else
				*hi = Min(*hi, v - 1);
			break;
		case BTLessEqualStrategyNumber:
			*hi = Min(*hi, v);
			break;
		case BTEqualStrategyNumber:
			*lo = Max(*lo, v);
			*hi = Min(*hi, v);
			break;
		case BTGreaterEqualStrategyNumber:
			*lo = Max(*lo, v);
			break;
		case BTGreaterStrategyNumber:
			if (v == PG_INT64_MAX)
				*empty = true;
			else
				*lo = Max(*lo, v + 1);
			break;
	}
	if (*lo > *hi)
		*empty = true;
}

/* apply_in: keep only the partitions of the array. */
static void
apply_in(ScanBounds *b, Datum array)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	List	   *in = NIL;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		int64		p;
		ListCell   *lc;
		bool		keep = !b->have_in;

		if (nulls[i])
			continue;
		p = int_value(elems[i], elemtype);
		foreach(lc, b->part_in)
			if (*(int64 *) lfirst(lc) == p)
				keep = true;
		if (keep)
		{
			int64	   *v = palloc(sizeof(int64));

			*v = p;
			in = lappend(in, v);
		}
	}
	b->part_in = in;
	b->have_in = true;
	if (in == NIL)
		b->empty = true;
}

/* eval_bounds: evaluate the pushed-down values (at scan start). */
/*
 * rounding_ms: how many milliseconds before a bound a message timestamp
 * may be and still be read at or after it, once rounded to the precision
 * of a timestamp column of the stream (timestamptz(0): 500; from 3 on,
 * Kafka's milliseconds are exact).
 */
static int64
rounding_ms(SspStream *stream)
{
	int64		ms = 0;
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		if (col->source == SSP_SRC_TIMESTAMP && col->typmod >= 0 && col->typmod < 3)
			ms = Max(ms, col->typmod == 0 ? 500 : col->typmod == 1 ? 50 : 5);
	}
	return ms;
}

static void
eval_bounds(ForeignScanState *node, ScanBounds *b)
{
	SspScanState *state = node->fdw_state;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	ListCell   *v,
			   *s,
			   *t;

	memset(b, 0, sizeof(*b));
	b->part_hi = PG_INT32_MAX;
	b->off_hi = PG_INT64_MAX;
	b->ts_lo = -1;

	forthree(v, state->values, s, state->sources, t, state->strategies)
	{
		ExprState  *es = lfirst(v);
		Oid			type = exprType((Node *) es->expr);
		int			strategy = lfirst_int(t);
		bool		isnull;
		Datum		d;

		d = ExecEvalExpr(es, econtext, &isnull);
		if (isnull)
		{
			b->empty = true;	/* a comparison with NULL is never true */
			continue;
		}
		switch ((SspSource) lfirst_int(s))
		{
			case SSP_SRC_PARTITION:
				if (strategy == SSP_STRATEGY_IN)
					apply_in(b, d);
				else
					apply_int(&b->part_lo, &b->part_hi, strategy,
							  int_value(d, type), &b->empty);
				break;
			case SSP_SRC_OFFSET:
				apply_int(&b->off_lo, &b->off_hi, strategy, int_value(d, type),
						  &b->empty);
				break;
			case SSP_SRC_TIMESTAMP:
				/* only a lower bound helps: timestamps need not increase */
				if (strategy == BTGreaterStrategyNumber ||
					strategy == BTGreaterEqualStrategyNumber ||
					strategy == BTEqualStrategyNumber)
					b->ts_lo = Max(b->ts_lo, ssp_timestamptz_to_ms(d) - 1 - rounding_ms(state->stream));
				break;
			default:
				elog(ERROR, "unexpected pushed-down column source %d", lfirst_int(s));
		}
	}
}

static bool
partition_wanted(ScanBounds *b, int32 p)
{
	ListCell   *lc;

	if (p < b->part_lo || p > b->part_hi)
		return false;
	if (!b->have_in)
		return true;
	foreach(lc, b->part_in)
		if (*(int64 *) lfirst(lc) == p)
			return true;
	return false;
}

/*
 * none_that_late: where the broker gave no offset for the time (-1), did it
 * have none that late, or does it not say (a broker without a time index,
 * the test broker among them)?  Asked again for the time 0, a broker with
 * an index gives the first offset of a partition that has messages: then
 * none was that late, and the partition is read from its end (from its
 * start, a bound later than every message read the whole topic).
 */
static void
none_that_late(SspKafka *kafka, int nparts, const int64 *low, const int64 *high, int64 *times)
{
	int64	   *first;
	int			p;

	for (p = 0; p < nparts; p++)
		if (times[p] < 0 && low[p] < high[p])
			break;
	if (p == nparts)
		return;
	first = palloc(sizeof(int64) * nparts);
	ssp_kafka_offsets_for_time(kafka, nparts, 0, first, false);
	for (p = 0; p < nparts; p++)
		if (times[p] < 0 && first[p] >= 0)
			times[p] = high[p];
	pfree(first);
}

/* start_scan: find the range of every wanted partition and start reading. */
static void
start_scan(ForeignScanState *node)
{
	SspScanState *state = node->fdw_state;
	MemoryContext old = MemoryContextSwitchTo(state->scancxt);
	ScanBounds	b;
	SspPartitionRange *ranges;
	int64	   *low;
	int64	   *high;
	int64	   *times;
	int			nparts;
	int			n = 0;
	int			p;

	eval_bounds(node, &b);
	state->kafka = ssp_kafka_consumer(state->stream->serverid, state->userid,
									  state->stream->topic, NULL);
	nparts = ssp_kafka_partition_count(state->kafka);
	ranges = palloc0(sizeof(SspPartitionRange) * Max(nparts, 1));
	low = palloc(sizeof(int64) * Max(nparts, 1));
	high = palloc(sizeof(int64) * Max(nparts, 1));
	times = palloc(sizeof(int64) * Max(nparts, 1));
	if (!b.empty)
		ssp_kafka_watermarks_all(state->kafka, nparts, low, high);
	/* a broker that does not say reads from the start: the rows are the same */
	if (!b.empty && b.ts_lo >= 0)
	{
		ssp_kafka_offsets_for_time(state->kafka, nparts, b.ts_lo, times, false);
		none_that_late(state->kafka, nparts, low, high, times);
	}
	for (p = 0; p < nparts && !b.empty; p++)
	{
		SspPartitionRange *r = &ranges[n];

		if (!partition_wanted(&b, p))
			continue;
		r->partition = p;
		r->start = Max(low[p], b.off_lo);
		r->end = b.off_hi == PG_INT64_MAX ? high[p] : Min(high[p], b.off_hi + 1);
		if (b.ts_lo >= 0 && times[p] >= 0)
			r->start = Max(r->start, times[p]);
		if (r->start < r->end)
			n++;
	}
	ssp_kafka_assign(state->kafka, ranges, n);
	MemoryContextSwitchTo(old);
}

/*
 * decode_unquoted: decode msg as ssp_scan_next does, for a user who may
 * read only some of the stream's columns.  Postgres's JSON parser quotes
 * the message in its errors (the token in the detail, the line up to it
 * in the context), values of columns the user may not read among them:
 * its errors go on without the quotes.
 */
static void
decode_unquoted(SspScanState *state, SspMessage *msg, TupleTableSlot *slot)
{
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		ssp_decode_message(state->stream, msg, slot->tts_values, slot->tts_isnull);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		StringInfoData context;
		char	   *line;
		char	   *rest = NULL;
		bool		quoted = false;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		initStringInfo(&context);
		for (line = edata->context ? strtok_r(edata->context, "\n", &rest) : NULL; line;
			 line = strtok_r(NULL, "\n", &rest))
		{
			if (strncmp(line, "JSON data, line ", 16) == 0)
			{
				quoted = true;
				continue;
			}
			appendStringInfo(&context, "%s%s", context.len ? "\n" : "", line);
		}
		if (quoted)
		{
			edata->context = context.len ? context.data : NULL;
			edata->detail = pstrdup("The parser's quote of the message is not shown to a role that may read only some of the stream's columns.");
		}
		ReThrowError(edata);
	}
	PG_END_TRY();
}

/*
 * ssp_scan_next: the next message of the topic as a row; an empty slot at
 * the end of every partition's range.
 */
TupleTableSlot *
ssp_scan_next(ForeignScanState *node)
{
	SspScanState *state = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	SspMessage	msg;
	MemoryContext old;

	ExecClearTuple(slot);
	if (state->kafka == NULL)
		start_scan(node);

	MemoryContextReset(state->rowcxt);
	if (!ssp_kafka_next(state->kafka, &msg))
		return slot;
	state->nread++;

	old = MemoryContextSwitchTo(state->rowcxt);
	if (state->stream->on_error_null)
		ssp_decode_message_lenient(state->stream, &msg, slot->tts_values,
								   slot->tts_isnull);
	else if (state->some_columns)
		decode_unquoted(state, &msg, slot);
	else
		ssp_decode_message(state->stream, &msg, slot->tts_values,
						   slot->tts_isnull);
	MemoryContextSwitchTo(old);
	ExecStoreVirtualTuple(slot);
	return slot;
}

/* ssp_scan_rescan: read again from the start, re-evaluating the bounds. */
void
ssp_scan_rescan(ForeignScanState *node)
{
	SspScanState *state = node->fdw_state;

	if (state->kafka)
		ssp_kafka_close(state->kafka);
	state->kafka = NULL;
	MemoryContextReset(state->scancxt);
}

/* ssp_scan_end: release the consumer now rather than with the query. */
void
ssp_scan_end(ForeignScanState *node)
{
	SspScanState *state = node->fdw_state;

	if (state && state->kafka)
		ssp_kafka_close(state->kafka);
}
