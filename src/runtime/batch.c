/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Applying a batch of messages to a continuous view, exactly once.
 *
 * One transaction per batch: check that the view is still the one the
 * worker started for (not dropped, paused or reset since), decode the
 * messages into rows in memory, read by SQL as the ephemeral relation
 * ssp_batch (and ssp_batch_2 for the second stream of a join; rows.c), run the
 * view's apply statement, store dead letters, and
 * upsert the partitions' next offsets into ssp.offsets; then commit.  The
 * rows and the offsets that produced them commit together or not at all.
 *
 * The offsets are the fence: each is written only if ssp.offsets still
 * holds the offset the worker's batch began from (a compare-and-set).  Any
 * other writer (a second worker, however it came to run) makes the
 * batch fail and roll back, rows and all, and its worker stop.
 *
 * Poison messages: the batch runs in a subtransaction.  If it fails with an
 * error about the data (SQLSTATE classes 22 and 23, and a few more, such as
 * the stack depth a deeply nested JSON message exhausts), it is
 * split in halves and each half retried, down to the single messages that
 * fail, which go to ssp.dead_letters (or are skipped, or stop the view, as
 * ssp.on_error says).  A bad message costs O(log n) retries; other errors
 * (a lock timeout, a full disk) fail the whole batch, which is retried when
 * the worker restarts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "ssp.h"
#include "stream/stream.h"
#include "runtime/batch.h"
#include "runtime/rows.h"
#include "compile/window.h"

typedef struct BatchState
{
	SspView    *view;
	SspSources *src;
	TupleDesc  *tupdescs;		/* per source: its batch relation's columns */
	SspMessage *msgs;
	int64		applied;
	int64		dead;
	int64		late;
	Datum	   *values;
	bool	   *nulls;
	SspEventTime *et;			/* NULL unless the view is windowed */
	TimestampTz *maxev;			/* per slot: this batch's latest event times */
	bool	   *touched;		/* per slot: partitions with messages applied */
	int			n;				/* messages in the batch */
	SspDecoded *shared;			/* the batch decoded by the reader, or NULL */
	bool		let_go_alone;	/* a join's waiting rows were applied alone,
								 * without messages (apply_range) */
	bool		nothing;		/* apply_range: run on no message too */
} BatchState;

/*
 * A batch's groups as views reduce it alike (SspShare: the same keys, FROM,
 * WHERE and GROUP BY), reduced once, by the first of them to apply the
 * batch, for every state column any of them keeps; each then merges them
 * into its own table, in its own transaction, with its own offsets.  The
 * reduction reads nothing but the batch, through nothing that may differ
 * between two statements, so it is the same in every view's transaction;
 * a reader's views have one owner, whose rights it runs with.
 */
typedef struct SspGroups
{
	const char *keys;			/* SspShare's keys and rest */
	const char *rest;
	Oid			user;
	int			views;			/* views of the batch that reduce it so */
	bool		clash;			/* two expressions hashed to one name */
	List	   *cols;			/* char *: every such view's state columns */
	List	   *exprs;			/* char *: and their expressions */
	int			used;			/* views that merged them */
	bool		tried;			/* reduced, or failed to be */
	Tuplestorestate *ts;		/* the groups (NULL: failed) */
	TupleDesc	desc;
	uint64		ntuples;
	Datum		watermark;		/* the parameters they were reduced with */
	bool		no_watermark;
	int32		part;
} SspGroups;

/*
 * batch_tupdesc: the columns of ssp_batch (ssp_batch_tupdesc), made once
 * per stream.  Needs a transaction the first time.
 */
static TupleDesc
batch_tupdesc(SspStream *stream)
{
	MemoryContext old;

	if (stream->batch_desc)
		return stream->batch_desc;
	/* the stream as it was opened, as decode_row fills it (not as now) */
	old = MemoryContextSwitchTo(stream->cxt);
	stream->batch_desc = ssp_batch_tupdesc(stream->desc);
	MemoryContextSwitchTo(old);
	return stream->batch_desc;
}

/*
 * ssp_may_read_stream: may user read stream relid as view reads it: all of
 * it, or (SELECT on columns) the columns the view reads, as its query may?
 * (A view that decodes every column, over a join of streams or a whole
 * row, needs them all.)
 */
bool
ssp_may_read_stream(SspView *view, Oid relid, Oid user)
{
	ListCell   *lc;

	if (!view->some_columns)
		return ssp_may_read_all_columns(relid, user);
	if (pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK)
		return true;
	/* none (count(*)): some column, as Postgres asks of such a query */
	if (view->columns == NIL)
		return pg_attribute_aclcheck_all(relid, user, ACL_SELECT, ACLMASK_ANY) == ACLCHECK_OK;
	foreach(lc, view->columns)
		if (pg_attribute_aclcheck(relid, (AttrNumber) lfirst_int(lc), user, ACL_SELECT) != ACLCHECK_OK)
			return false;
	return true;
}

/*
 * ssp_check_stream_acl: may the view's owner (the current user, in its
 * worker) read the stream?
 */
void
ssp_check_stream_acl(SspView *view, SspStream *stream)
{
	if (!ssp_may_read_stream(view, stream->relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for stream \"%s\"", stream->relname),
				 errdetail("The worker of continuous view \"%s\" runs as its owner, who cannot read the stream, or the columns of it that the view reads.",
						   view->name)));
}

/* Is this error about a message's data, rather than about the system? */
static bool
is_data_error(int sqlerrcode)
{
	int			class = ERRCODE_TO_CATEGORY(sqlerrcode);

	/* a sequence used up (the outbox's numbers) is no message's fault */
	if (sqlerrcode == ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED)
		return false;
	return class == ERRCODE_TO_CATEGORY(ERRCODE_DATA_EXCEPTION) ||
		class == ERRCODE_TO_CATEGORY(ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION) ||
		sqlerrcode == ERRCODE_PROGRAM_LIMIT_EXCEEDED ||
		sqlerrcode == ERRCODE_STATEMENT_TOO_COMPLEX ||	/* JSON nested too deep */
		sqlerrcode == ERRCODE_DATATYPE_MISMATCH ||
		sqlerrcode == ERRCODE_INVALID_TEXT_REPRESENTATION ||
		/* NaN or infinity cast to an integer: Postgres's "not supported" */
		sqlerrcode == ERRCODE_FEATURE_NOT_SUPPORTED ||
		/* a scalar subquery of more than one row, for this message's key */
		sqlerrcode == ERRCODE_CARDINALITY_VIOLATION ||
		/* PL/pgSQL's: RAISE, ASSERT, STRICT INTO, in a user's function */
		class == ERRCODE_TO_CATEGORY(ERRCODE_PLPGSQL_ERROR);
}

/*
 * decode_row: a message into values and nulls: its stream's columns, then
 * the hidden ones (where the message is, and if it is a tombstone); its
 * event time raises maxev of its slot, unless maxev is NULL.
 */
static void
decode_row(SspSources *src, SspMessage *msg, Datum *values, bool *nulls, TimestampTz *maxev)
{
	SspStream  *stream = src->streams[msg->source];

	ssp_decode_message(stream, msg, values, nulls);
	values[stream->natts] = Int32GetDatum(msg->partition);
	values[stream->natts + 1] = Int64GetDatum(msg->offset);
	values[stream->natts + 2] = BoolGetDatum(msg->value == NULL || stream->deleted);
	memset(nulls + stream->natts, false, SSP_BATCH_EXTRA);
	if (maxev && msg->partition < src->nparts[msg->source])
	{
		TimestampTz t = ssp_event_time(stream, msg, values, nulls);
		int			slot = SSP_SLOT(src, msg);
		int			a = stream->timestamp_attnum - 1;

		/*
		 * An event at 'infinity' would close every window for good, and
		 * neither infinity has windows of its own (ssp.hop_windows lists
		 * them forever): a dead letter.  (A Kafka timestamp is finite.)
		 */
		if (a >= 0 && !nulls[a] && TIMESTAMP_NOT_FINITE(DatumGetTimestampTz(values[a])))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("the event time of a message cannot be infinite"),
					 errdetail("%s", ssp_event_time_detail(stream))));

		/*
		 * Nor is an event without a time in any window (it was neither
		 * applied, nor late, nor a dead letter).  A join of streams
		 * (several sources) keeps such a row, as its query would: it
		 * meets no other row's time.
		 */
		if (t == DT_NOBEGIN && src->n == 1)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a message has no event time"),
					 errdetail("%s", ssp_event_time_detail(stream))));

		maxev[slot] = Max(maxev[slot], t);
	}
}

/*
 * reserve_rows: room in the rows of each source for its messages among
 * msgs[lo, hi), so that decoding them moves no row; at least twice the
 * room there was when it must grow, where more are to come.
 */
static void
reserve_rows(SspRows **rows, int nsrc, const SspMessage *msgs, int lo, int hi, bool more)
{
	int		   *count = palloc0(sizeof(int) * nsrc);
	int			i;

	for (i = lo; i < hi; i++)
		count[msgs[i].source]++;
	for (i = 0; i < nsrc; i++)
	{
		int			need = rows[i]->n + count[i];

		if (need > rows[i]->cap)
			ssp_rows_reserve(rows[i], more ? Max(need, rows[i]->cap * 2) : need);
	}
	pfree(count);
}

/* share_find: d's groups reduced as share says, or NULL. */
static SspGroups *
share_find(SspDecoded *d, SspShare *share)
{
	ListCell   *lc;

	foreach(lc, d->groups)
	{
		SspGroups  *g = lfirst(lc);

		if (g->user == GetUserId() && strcmp(g->keys, share->keys) == 0 &&
			strcmp(g->rest, share->rest) == 0)
			return g;
	}
	return NULL;
}

/*
 * ssp_share_note: view will apply the batch d; its groups, if it may
 * share them, are to be reduced with its state columns too.
 */
void
ssp_share_note(SspDecoded *d, SspView *view)
{
	SspShare   *share = view->share;
	MemoryContext old;
	SspGroups  *g;
	ListCell   *c;
	ListCell   *e;

	if (share == NULL || d == NULL || d->failed)
		return;
	old = MemoryContextSwitchTo(d->cxt);
	g = share_find(d, share);
	if (g == NULL)
	{
		g = palloc0(sizeof(SspGroups));
		g->keys = pstrdup(share->keys);
		g->rest = pstrdup(share->rest);
		g->user = GetUserId();
		d->groups = lappend(d->groups, g);
	}
	g->views++;
	forboth(c, share->cols, e, share->exprs)
	{
		ListCell   *gc;
		ListCell   *ge;
		bool		found = false;

		forboth(gc, g->cols, ge, g->exprs)
		{
			if (strcmp(lfirst(gc), lfirst(c)) != 0)
				continue;
			found = true;
			g->clash |= strcmp(lfirst(ge), lfirst(e)) != 0;
			break;
		}
		if (!found)
		{
			g->cols = lappend(g->cols, pstrdup(lfirst(c)));
			g->exprs = lappend(g->exprs, pstrdup(lfirst(e)));
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * A receiver of a reduction's groups: straight into a tuplestore that
 * outlives the transaction (held once, spilled past work_mem), keeping
 * their descriptor.
 */
typedef struct GroupsReceiver
{
	DestReceiver pub;
	Tuplestorestate *ts;
	MemoryContext cxt;			/* of the descriptor */
	TupleDesc	desc;
} GroupsReceiver;

static void
groups_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	GroupsReceiver *r = (GroupsReceiver *) self;
	MemoryContext old = MemoryContextSwitchTo(r->cxt);

	r->desc = CreateTupleDescCopy(typeinfo);
	MemoryContextSwitchTo(old);
}

static bool
groups_receive(TupleTableSlot *slot, DestReceiver *self)
{
	tuplestore_puttupleslot(((GroupsReceiver *) self)->ts, slot);
	return true;
}

static void
groups_nothing(DestReceiver *self)
{
}

/*
 * shared_groups: the groups of the batch for bs's view, reduced now if
 * this is the first view to read them; NULL where it reduces the batch
 * alone (no other view reduces it alike, its SQL was built again since
 * it was noted, or the reduction failed: the view's own statement then
 * finds the message to blame).  args as for the apply statement; rows,
 * the published batch.
 */
static SspGroups *
shared_groups(BatchState *bs, Oid *argtypes, Datum *args, char *nulls, SspRows **rows)
{
	SspShare   *share = bs->view->share;
	SspGroups  *g;
	ListCell   *c;
	ListCell   *e;
	StringInfoData sql;
	MemoryContext old;
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	GroupsReceiver receiver;
	SPIExecuteOptions options;
	ParamListInfo params;
	uint64		i;

	if (share == NULL || bs->shared == NULL || (g = share_find(bs->shared, share)) == NULL ||
		g->views < 2 || g->clash)
		return NULL;
	foreach(c, share->cols)
	{
		bool		found = false;

		foreach(e, g->cols)
			if ((found = strcmp(lfirst(e), lfirst(c)) == 0))
				break;
		if (!found)
			return NULL;
	}
	if (g->tried)
	{
		if (g->ts == NULL || g->part != DatumGetInt32(args[2]) ||
			g->no_watermark != (nulls[0] == 'n') ||
			(!g->no_watermark && g->watermark != args[0]))
			return NULL;
		g->used++;
		return g;
	}
	g->tried = true;			/* failed, unless it comes through */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s", g->keys);
	forboth(c, g->cols, e, g->exprs)
		appendStringInfo(&sql, ", %s AS %s", (char *) lfirst(e), (char *) lfirst(c));
	appendStringInfo(&sql, " %s", g->rest);
	params = makeParamList(3);
	for (i = 0; i < 3; i++)
	{
		params->params[i].value = args[i];
		params->params[i].isnull = nulls[i] == 'n';
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = argtypes[i];
	}
	memset(&receiver, 0, sizeof(receiver));
	receiver.pub.receiveSlot = groups_receive;
	receiver.pub.rStartup = groups_startup;
	receiver.pub.rShutdown = groups_nothing;
	receiver.pub.rDestroy = groups_nothing;
	receiver.pub.mydest = DestTuplestore;
	receiver.cxt = bs->shared->cxt;
	memset(&options, 0, sizeof(options));
	options.params = params;
	options.read_only = true;
	options.dest = &receiver.pub;
	/* read by the views' transactions after this one */
	old = MemoryContextSwitchTo(bs->shared->cxt);
	receiver.ts = tuplestore_begin_heap(false, true, work_mem);
	MemoryContextSwitchTo(old);

	/*
	 * In a subtransaction of its own: it computes other views' columns too,
	 * and what fails in them (any error, not only one of the data) must not
	 * fail this view, which then reduces the batch alone.
	 */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		if (SPI_execute_extended(sql.data, &options) != SPI_OK_SELECT || receiver.desc == NULL)
			elog(ERROR, "ssp: could not reduce the batch of continuous view \"%s\" to its groups",
				 bs->view->name);
		for (i = 0; i < (uint64) bs->src->n; i++)
			if (rows[i]->n > 0 && rows[i]->scans == 0)
				elog(ERROR, "ssp: the groups of continuous view \"%s\" were not read from its batch relation %s",
					 bs->view->name, rows[i]->name);
		g->ntuples = SPI_processed;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		tuplestore_end(receiver.ts);
		/* a cancel or a shutdown is the process's, not the reduction's */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(edata);
		return NULL;
	}
	PG_END_TRY();
	g->desc = receiver.desc;
	g->ts = receiver.ts;
	g->watermark = args[0];
	g->no_watermark = nulls[0] == 'n';
	g->part = DatumGetInt32(args[2]);
	g->used++;
	return g;
}

/*
 * ssp_share_used: how many views merged groups of d that they shared with
 * another (counted as they were read, whether or not the view's
 * transaction then committed).
 */
int
ssp_share_used(SspDecoded *d)
{
	ListCell   *lc;
	int			n = 0;

	if (d == NULL)
		return 0;
	foreach(lc, d->groups)
	{
		SspGroups  *g = lfirst(lc);

		if (g->used > 1)
			n += g->used;
	}
	return n;
}

/*
 * run_apply: decode msgs[lo, hi) into the batch relations of their
 * sources, and run the apply statement over them, with the watermark as
 * $1, the run as $2 (a number new in the transaction, by which a join
 * tells the rows this run buffered) and the worker's part as $3 (its rows,
 * with ssp.parallelism); *late gets the late events among them
 * and maxev their latest event time per slot.
 */
static void
run_apply(BatchState *bs, int lo, int hi, int64 *late, TimestampTz *maxev)
{
	static uint32 run = 0;
	Oid			argtypes[3] = {TIMESTAMPTZOID, INT4OID, INT4OID};
	Datum		args[3];
	char		nulls[3] = "   ";
	int			nsrc = bs->src->n;
	SspRows   **rows = palloc(sizeof(SspRows *) * nsrc);
	bool		own = !(bs->shared && lo == 0 && hi == bs->n);
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "ssp decode",
												 ALLOCSET_DEFAULT_SIZES);
	SspGroups  *volatile groups = NULL;
	int			i;
	int			rc;

	if (!own)
	{
		/* decoded once for every view of the reader */
		memcpy(rows, bs->shared->rows, sizeof(SspRows *) * nsrc);
		if (bs->et && bs->shared->maxev)
			memcpy(maxev, bs->shared->maxev, sizeof(TimestampTz) * bs->src->nslots);
		lo = hi;
	}
	else
	{
		for (i = 0; i < nsrc; i++)
			rows[i] = ssp_rows_create(SSP_BATCH_RELATION(i), bs->tupdescs[i], CurrentMemoryContext);
		reserve_rows(rows, nsrc, bs->msgs, lo, hi, false);
	}
	for (i = lo; i < hi; i++)
	{
		SspMessage *msg = &bs->msgs[i];
		MemoryContext old = MemoryContextSwitchTo(rowcxt);

		decode_row(bs->src, msg, bs->values, bs->nulls, bs->et ? maxev : NULL);
		MemoryContextSwitchTo(old);
		ssp_rows_add(rows[msg->source], bs->values, bs->nulls);
		MemoryContextReset(rowcxt);
	}
	MemoryContextDelete(rowcxt);

	for (i = 0; i < nsrc; i++)
	{
		EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));

		enr->md.name = (char *) SSP_BATCH_RELATION(i);
		enr->md.reliddesc = InvalidOid;
		enr->md.tupdesc = bs->tupdescs[i];
		enr->md.enrtype = ENR_NAMED_TUPLESTORE;
		enr->md.enrtuples = rows[i]->n;
		enr->reldata = rows[i]->ts;
		if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
			elog(ERROR, "ssp: could not register the batch relation");
	}
	ssp_rows_publish(rows, nsrc);
	PG_TRY();
	{
		args[0] = TimestampTzGetDatum(bs->et ? bs->et->watermark : 0);
		nulls[0] = bs->et && bs->et->watermark != DT_NOBEGIN ? ' ' : 'n';
		args[1] = Int32GetDatum((int32) ++run);
		args[2] = Int32GetDatum(bs->view->part);
		groups = own ? NULL : shared_groups(bs, argtypes, args, nulls, rows);
		if (groups)
		{
			EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));

			enr->md.name = SSP_GROUPS_RELATION;
			enr->md.reliddesc = InvalidOid;
			enr->md.tupdesc = groups->desc;
			enr->md.enrtype = ENR_NAMED_TUPLESTORE;
			enr->md.enrtuples = groups->ntuples;
			enr->reldata = groups->ts;
			if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
				elog(ERROR, "ssp: could not register the batch's groups");
		}
		rc = SPI_execute_with_args(groups ? bs->view->share->apply_sql : bs->view->apply_sql,
								   3, argtypes, args, nulls, false, 0);
		if (rc != SPI_OK_INSERT && rc != SPI_OK_MERGE && rc != SPI_OK_DELETE && rc != SPI_OK_UPDATE)
			elog(ERROR, "ssp: apply statement of view \"%s\" failed: %s",
				 bs->view->name, SPI_result_code_string(rc));
		/* a batch no scan read would be lost (the groups' was checked) */
		for (i = 0; i < nsrc && groups == NULL; i++)
			if (rows[i]->n > 0 && rows[i]->scans == 0)
				elog(ERROR, "ssp: the apply statement of view \"%s\" did not read its batch relation %s",
					 bs->view->name, rows[i]->name);
		*late = 0;
		if (bs->view->late_sql)
		{
			bool		isnull;

			if (SPI_execute_with_args(bs->view->late_sql, 3, argtypes, args, nulls, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "ssp: could not count late events");
			*late = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	PG_FINALLY();
	{
		if (groups)
			SPI_unregister_relation(SSP_GROUPS_RELATION);
		ssp_rows_withdraw();
		for (i = 0; i < nsrc; i++)
		{
			SPI_unregister_relation(SSP_BATCH_RELATION(i));
			if (own)
				ssp_rows_free(rows[i]);
		}
	}
	PG_END_TRY();
}

/*
 * may_keep_message: may a dead letter keep its message (key and payload),
 * and an error's context, which can quote them?  Only where the view's
 * owner (the worker's user) may read every column of the message's stream:
 * a role granted some columns would read the others there.
 */
static bool
may_keep_message(BatchState *bs, SspMessage *msg)
{
	return ssp_may_read_all_columns(bs->view->streams[msg->source], GetUserId());
}

/* dead_letter: msg to ssp.dead_letters, with its key and payload if keep */
static void
dead_letter(BatchState *bs, SspMessage *msg, const char *error, bool keep)
{
	Oid			argtypes[7] = {OIDOID, TEXTOID, INT4OID, INT8OID, BYTEAOID, BYTEAOID, TEXTOID};
	Datum		args[7];
	char		nulls[7] = "       ";
	bytea	   *key = NULL;
	bytea	   *payload = NULL;

	if (msg->key && keep)
	{
		key = palloc(VARHDRSZ + msg->key_len);
		SET_VARSIZE(key, VARHDRSZ + msg->key_len);
		memcpy(VARDATA(key), msg->key, msg->key_len);
	}
	if (msg->value && keep)
	{
		payload = palloc(VARHDRSZ + msg->value_len);
		SET_VARSIZE(payload, VARHDRSZ + msg->value_len);
		memcpy(VARDATA(payload), msg->value, msg->value_len);
	}
	args[0] = ObjectIdGetDatum(bs->view->view);
	args[1] = CStringGetTextDatum(bs->view->topics[msg->source]);
	args[2] = Int32GetDatum(msg->partition);
	args[3] = Int64GetDatum(msg->offset);
	args[4] = PointerGetDatum(key);
	args[5] = PointerGetDatum(payload);
	args[6] = CStringGetTextDatum(error);
	if (!key)
		nulls[4] = 'n';
	if (!payload)
		nulls[5] = 'n';
	if (SPI_execute_with_args("INSERT INTO ssp.dead_letters (view, topic, partition, \"offset\", key, payload, error) "
							  "VALUES ($1::regclass, $2, $3, $4, $5, $6, $7)",
							  7, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "ssp: could not store a dead letter");
}

/*
 * forget_batch_relations: the batch's relations out of the worker's SPI
 * connection, after a failed run_apply's subtransaction is rolled back.
 * run_apply unregisters them as it leaves, but from the connection then
 * current: an error raised under a nested one (a PL/pgSQL function of the
 * view's query) leaves that one current until the rollback pops it, and
 * the relations stayed registered in the worker's, refusing the next
 * try's.  Those not registered are passed over.
 */
static void
forget_batch_relations(BatchState *bs)
{
	int			i;

	SPI_unregister_relation(SSP_GROUPS_RELATION);
	for (i = 0; i < bs->src->n; i++)
		SPI_unregister_relation(SSP_BATCH_RELATION(i));
}

/*
 * apply_range: apply msgs[lo, hi) in a subtransaction; on a data error,
 * split and retry, down to single messages.
 */
static void
apply_range(BatchState *bs, int lo, int hi)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;
	int64		late = 0;
	int			nparts = bs->et ? bs->src->nslots : 0;
	TimestampTz *maxev = palloc(sizeof(TimestampTz) * Max(nparts, 1));
	int			p;

	/* a join of streams runs on nothing too: the watermark lets rows go */
	if (lo >= hi && !bs->nothing && (bs->n > 0 || bs->view->buffers == NIL || bs->et == NULL))
		return;
	for (p = 0; p < nparts; p++)
		maxev[p] = DT_NOBEGIN;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		run_apply(bs, lo, hi, &late, maxev);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		forget_batch_relations(bs);
	}
	PG_END_TRY();

	if (edata == NULL)
	{
		int			i;

		bs->applied += hi - lo - late;
		bs->late += late;
		for (p = 0; p < nparts; p++)
			bs->maxev[p] = Max(bs->maxev[p], maxev[p]);
		/* only the watermark reads which partitions had messages */
		if (bs->et)
			for (i = lo; i < hi; i++)
				if (bs->msgs[i].partition < bs->src->nparts[bs->msgs[i].source])
					bs->touched[SSP_SLOT(bs->src, &bs->msgs[i])] = true;
		return;
	}
	if (!is_data_error(edata->sqlerrcode))
		ReThrowError(edata);
	if (bs->shared)
	{
		/* find the message with the view's own decoding, halving */
		bs->shared = NULL;
		apply_range(bs, lo, hi);
		return;
	}
	if (hi - lo > 1)
	{
		int			mid = lo + (hi - lo) / 2;

		apply_range(bs, lo, mid);
		apply_range(bs, mid, hi);
		return;
	}

	/*
	 * A join of streams applies, with any messages, the rows its buffers
	 * let go as the watermark moves (a left join's unmatched rows, a
	 * temporal join's rows): one of those may be what fails, and then no
	 * message is to blame.  Before one message is, those rows are applied
	 * alone, without messages; if that fails too, the batch fails, saying
	 * so: nothing is dead-lettered or lost, and the view retries.
	 */
	if (lo < hi && bs->view->nsources > 1 && !bs->let_go_alone)
	{
		bs->let_go_alone = true;
		bs->nothing = true;
		apply_range(bs, lo, lo);
		bs->nothing = false;
		apply_range(bs, lo, hi);
		return;
	}

	/* one message that cannot be applied */
	{
		StringInfoData msg;
		bool		keep = lo >= hi || may_keep_message(bs, &bs->msgs[lo]);

		initStringInfo(&msg);
		appendStringInfoString(&msg, edata->message);
		/* where in the message, not the apply statement's text */
		if (edata->context && strncmp(edata->context, "SQL statement", 13) != 0 && keep)
			appendStringInfo(&msg, " (%s)", edata->context);
		if (!keep)
			appendStringInfo(&msg, " (the message is not kept: the owner of the view may not read every column of stream \"%s\")",
							 get_rel_name(bs->view->streams[bs->msgs[lo].source]));
		if (lo >= hi)
			ereport(ERROR,
					(errcode(edata->sqlerrcode),
					 errmsg("continuous view \"%s\" cannot apply a row that waited in its join of streams",
							bs->view->name),
					 errdetail("%s", msg.data),
					 errhint("No message is to blame, so none goes to the dead letters: the view tries again. "
							 "Change its query to take the row (CREATE OR REPLACE VIEW).")));
		switch (bs->view->on_error)
		{
			case SSP_ON_ERROR_DEAD_LETTER:
				dead_letter(bs, &bs->msgs[lo], msg.data, keep);
				bs->dead++;
				break;
			case SSP_ON_ERROR_SKIP:
				bs->dead++;
				break;
			case SSP_ON_ERROR_STOP:
				/*
				 * Without the context, which can quote the message: the
				 * error is the view's last_error, which whoever may read
				 * the view reads (the message is at the offset named)
				 */
				ereport(ERROR,
						(errcode(edata->sqlerrcode),
						 errmsg("continuous view \"%s\" stopped at partition %d, offset %lld of topic \"%s\"",
								bs->view->name, bs->msgs[lo].partition,
								(long long) bs->msgs[lo].offset, bs->view->topics[bs->msgs[lo].source]),
						 errdetail("%s", edata->message),
						 errhint("ssp.on_error is stop: fix the cause, or ssp.reset the view to a later start.")));
		}
	}
}

/*
 * The fixed statements of every batch (its claim, its offsets, its
 * counters) are planned once in the process and kept (the plan cache
 * plans them again if what they read changes); a reader runs them for
 * each of its views at every batch.
 */
typedef enum KeptPlan
{
	PLAN_LOCK_SHARED,
	PLAN_CLAIM,
	PLAN_CLAIM_SHARED,
	PLAN_STORE_OFFSETS,
	PLAN_COUNTERS,
	NUM_KEPT_PLANS
} KeptPlan;

static SPIPlanPtr kept_plans[NUM_KEPT_PLANS];

/* kept_plan: the kept plan of a fixed statement, prepared the first time */
static SPIPlanPtr
kept_plan(KeptPlan which, const char *sql, int nargs, Oid *argtypes)
{
	if (kept_plans[which] == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "ssp: could not prepare a statement: %s", SPI_result_code_string(SPI_result));
		kept_plans[which] = plan;
	}
	return kept_plans[which];
}

/*
 * claim_view: hold off ssp.reset until the batch ends; false if the view
 * was dropped, paused, reset or handed over (ssp.handover).  One worker
 * locks the view's row; the workers of a view with ssp.parallelism share
 * an advisory lock, which ssp.reset takes exclusively (ssp_view_lock_key),
 * so that their batches run at once.
 */
static bool
claim_view(SspView *view)
{
	Oid			argtypes[2] = {OIDOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(view->view), Int32GetDatum(view->generation)};
	Oid			keytype = INT8OID;
	Datum		key = Int64GetDatum(ssp_view_lock_key(view->view));

	if (view->parallelism > 1 &&
		SPI_execute_plan(kept_plan(PLAN_LOCK_SHARED, "SELECT pg_catalog.pg_advisory_xact_lock_shared($1)",
								   1, &keytype),
						 &key, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not lock continuous view \"%s\"", view->name);
	if (SPI_execute_plan(view->parallelism > 1 ?
						 kept_plan(PLAN_CLAIM_SHARED,
								   "SELECT 1 FROM ssp.continuous_views WHERE view = $1::regclass "
								   "AND generation = $2 AND NOT paused AND NOT resharding", 2, argtypes) :
						 kept_plan(PLAN_CLAIM,
								   "SELECT 1 FROM ssp.continuous_views WHERE view = $1::regclass "
								   "AND generation = $2 AND NOT paused AND NOT resharding FOR NO KEY UPDATE", 2, argtypes),
						 args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	return SPI_processed == 1;
}

/*
 * ssp_wait_for_batches: in a backend changing a view under its workers
 * (ssp.reset, ssp.handover, ssp.reshard), wait for a batch in flight to
 * end, as claim_view makes it wait: one worker's batch holds the view's
 * row, parallel workers' share the advisory lock.  The caller's change
 * then makes the next claim fail.  Needs SPI connected.
 */
void
ssp_wait_for_batches(Oid view)
{
	if (SPI_execute_with_args("SELECT pg_catalog.pg_advisory_xact_lock($1)", 1,
							  (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(ssp_view_lock_key(view))},
							  NULL, false, 0) != SPI_OK_SELECT ||
		SPI_execute_with_args("SELECT 1 FROM ssp.continuous_views WHERE view = $1::regclass FOR UPDATE", 1,
							  (Oid[]) {OIDOID}, (Datum[]) {ObjectIdGetDatum(view)},
							  NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not lock continuous view \"%s\"", get_rel_name(view));
}

/*
 * begin_view_xact: start a transaction as a worker does, connect SPI and
 * lock the view's row; false if the view was dropped, paused or reset.
 */
static bool
begin_view_xact(SspView *view, bool nested)
{
	int			i;

	if (!nested)
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
	}
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/*
	 * Its streams, then the view, as DROP of a stream (CASCADE) locks the
	 * stream before the views that read it: a batch holding the view
	 * while it waits for a stream would deadlock with it.  The view
	 * before its tables and its catalog row, as DROP VIEW locks them: a
	 * batch holding the row while it waits for a table would deadlock
	 * with a DROP holding the table while it waits for the row.  (So
	 * DROP, ALTER and RENAME of the view or its streams wait for a batch.)
	 */
	for (i = 0; i < view->nsources; i++)
		LockRelationOid(view->streams[i], AccessShareLock);
	LockRelationOid(view->view, AccessShareLock);
	if (!claim_view(view))
		return false;
	/* something the view's SQL names was renamed: build it again */
	ssp_view_refresh(view);
	return true;
}

/*
 * end_view_xact: commit what begin_view_xact started, or roll it back;
 * nested, the caller's (sub)transaction does.
 */
static void
end_view_xact(bool commit, bool nested)
{
	SPI_finish();
	PopActiveSnapshot();
	if (nested)
		return;
	if (commit)
		CommitTransactionCommand();
	else
		AbortCurrentTransaction();
}

/*
 * The offsets of a batch, compare-and-set: rows whose offset is still the
 * one the batch began from ($7, NULL: none stored) are updated, the others
 * inserted if still absent; the count says whether every one was.
 */
#define STORE_OFFSETS_SQL \
	"WITH u AS (SELECT * FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), " \
	"pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6), pg_catalog.unnest($7)) " \
	"AS u(t, p, n, e, s, f)), " \
	"upd AS (UPDATE ssp.offsets o SET next_offset = u.n, max_event_time = u.e, last_event_at = u.s " \
	"FROM u WHERE o.view = $1::regclass AND o.topic = u.t AND o.partition = u.p " \
	"AND o.next_offset OPERATOR(pg_catalog.=) u.f RETURNING 1), " \
	"ins AS (INSERT INTO ssp.offsets (view, topic, partition, next_offset, max_event_time, last_event_at) " \
	"SELECT $1::regclass, u.t, u.p, u.n, u.e, u.s FROM u WHERE u.f IS NULL " \
	"ON CONFLICT (view, topic, partition) DO NOTHING RETURNING 1) " \
	"SELECT (SELECT pg_catalog.count(*) FROM upd) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ins)"

/* fenced: another process moved the view's offsets under this batch */
static void
fenced(SspView *view)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("continuous view \"%s\" was written by another process", view->name),
			 errdetail("ssp.offsets no longer holds the offsets this batch began from; the batch was rolled back."),
			 errhint("Only one worker may apply a view's partitions; this one stops and a fresh one resumes from ssp.offsets.")));
}

/*
 * store_progress: the partitions' next offsets (and for a windowed view
 * their event times), compare-and-set against from (the offsets the batch
 * began from; -1: none stored), the counters and the watermark (and the one
 * the batch began with, by which a left join of streams closes windows), in
 * the batch's transaction.
 */
static void
store_progress(BatchState *bs, const int64 *from, const int64 *next,
			   TimestampTz watermark)
{
	SspSources *src = bs->src;
	int			nparts = src->nslots;
	Oid			argtypes[9] = {OIDOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID,
	TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID, INT8OID};
	Datum		args[9];
	char		nulls[9] = "         ";
	TimestampTz before = bs->et ? bs->et->watermark : DT_NOBEGIN;
	Datum	   *expect = palloc(sizeof(Datum) * Max(nparts, 1));
	bool	   *expect_null = palloc(sizeof(bool) * Max(nparts, 1));
	Datum	   *topics = palloc(sizeof(Datum) * Max(nparts, 1));
	Datum	   *parts = palloc(sizeof(Datum) * Max(nparts, 1));
	Datum	   *offs = palloc(sizeof(Datum) * Max(nparts, 1));
	Datum	   *maxev = palloc(sizeof(Datum) * Max(nparts, 1));
	Datum	   *seen = palloc(sizeof(Datum) * Max(nparts, 1));
	bool	   *maxev_null = palloc(sizeof(bool) * Max(nparts, 1));
	bool	   *seen_null = palloc(sizeof(bool) * Max(nparts, 1));
	int			dims[1];
	int			lbs[1] = {1};
	int			n = 0;
	int			p;
	int			source = 0;

	for (p = 0; p < nparts; p++)
	{
		while (p >= src->base[source] + src->nparts[source])
			source++;
		if (next[p] < 0)
			continue;
		topics[n] = CStringGetTextDatum(bs->view->topics[source]);
		parts[n] = Int32GetDatum(p - src->base[source]);
		offs[n] = Int64GetDatum(next[p]);
		maxev_null[n] = bs->et == NULL || bs->et->maxev[p] == DT_NOBEGIN;
		maxev[n] = maxev_null[n] ? (Datum) 0 : TimestampTzGetDatum(bs->et->maxev[p]);
		seen_null[n] = bs->et == NULL || bs->et->seen_at[p] == DT_NOBEGIN;
		seen[n] = seen_null[n] ? (Datum) 0 : TimestampTzGetDatum(bs->et->seen_at[p]);
		expect_null[n] = from[p] < 0;
		expect[n] = Int64GetDatum(from[p]);
		n++;
	}
	dims[0] = n;
	args[0] = ObjectIdGetDatum(bs->view->view);
	args[1] = PointerGetDatum(construct_array(topics, n, TEXTOID, -1, false, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(parts, n, INT4OID, 4, true, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_array(offs, n, INT8OID, 8, true, TYPALIGN_DOUBLE));
	args[4] = PointerGetDatum(construct_md_array(maxev, maxev_null, 1, dims, lbs,
												 TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE));
	args[5] = PointerGetDatum(construct_md_array(seen, seen_null, 1, dims, lbs,
												 TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE));
	args[6] = PointerGetDatum(construct_md_array(expect, expect_null, 1, dims, lbs,
												 INT8OID, 8, true, TYPALIGN_DOUBLE));
	if (n > 0)
	{
		bool		isnull;

		if (SPI_execute_plan(kept_plan(PLAN_STORE_OFFSETS, STORE_OFFSETS_SQL, 7, argtypes),
							 args, nulls, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "ssp: could not store offsets");
		if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										1, &isnull)) != n)
			fenced(bs->view);
	}
	/*
	 * ssp.emit = 'final' with ssp.output_topic: the windows this batch
	 * closes, before the watermarks that closed the last ones are replaced
	 */
	if (bs->view->outbox_final_sql)
	{
		Oid			wtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
		Datum		wargs[2];
		char		wnulls[2] = "  ";

		wargs[0] = TimestampTzGetDatum(before);
		wnulls[0] = before == DT_NOBEGIN ? 'n' : ' ';
		wargs[1] = TimestampTzGetDatum(watermark);
		wnulls[1] = watermark == DT_NOBEGIN ? 'n' : ' ';
		if (SPI_execute_with_args(bs->view->outbox_final_sql, 2, wtypes, wargs, wnulls,
								  false, 0) != SPI_OK_INSERT)
			elog(ERROR, "ssp: could not add the closed windows to the outbox");
	}
	argtypes[6] = INT8OID;
	args[6] = Int64GetDatum(bs->applied);
	args[7] = Int64GetDatum(bs->dead);
	args[1] = Int64GetDatum(bs->late);
	argtypes[1] = INT8OID;
	args[2] = TimestampTzGetDatum(watermark);
	argtypes[2] = TIMESTAMPTZOID;
	nulls[2] = watermark == DT_NOBEGIN ? 'n' : ' ';
	argtypes[8] = TIMESTAMPTZOID;
	args[8] = TimestampTzGetDatum(before);
	nulls[8] = before == DT_NOBEGIN ? 'n' : ' ';
	if (SPI_execute_plan(kept_plan(PLAN_COUNTERS,
								   "UPDATE ssp.continuous_views SET processed = processed + $7, "
								   "dead_letters = dead_letters + $8, late_events = late_events + $2, "
								   "watermark = $3, batch_watermark = $9, last_commit = pg_catalog.now() "
								   "WHERE view = $1::regclass", 9, argtypes),
						 args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "ssp: could not update ssp.continuous_views");
	/*
	 * With no watermark yet, $1 is NULL and nothing is deleted; nor is
	 * anything when the watermark is too near the first timestamp to take
	 * ssp.retention from (the statement failed, and the batch for good).
	 * A left join of streams deletes by the watermark its batch began with.
	 */
	if (bs->view->retention_sql &&
		(bs->view->retention == NULL ||
		 (ssp_minus_fits(watermark, bs->view->retention) &&
		  (before == DT_NOBEGIN || ssp_minus_fits(before, bs->view->retention)))) &&
		SPI_execute_with_args(bs->view->retention_sql, 1, &argtypes[2], &args[2], nulls + 2,
							  false, 0) != SPI_OK_DELETE)
		elog(ERROR, "ssp: could not delete windows past retention");
}

/*
 * ssp_batch_span: per slot of src, the lowest and highest offset among
 * msgs[0, n) into span's arrays (src->nslots each), -1 for none.
 */
void
ssp_batch_span(SspSources *src, SspMessage *msgs, int n, SspSpan *span)
{
	int			p;
	int			i;

	for (p = 0; p < src->nslots; p++)
		span->lowest[p] = span->highest[p] = -1;
	for (i = 0; i < n; i++)
	{
		if (msgs[i].partition >= src->nparts[msgs[i].source])
			continue;
		p = SSP_SLOT(src, &msgs[i]);
		if (span->lowest[p] < 0 || msgs[i].offset < span->lowest[p])
			span->lowest[p] = msgs[i].offset;
		if (msgs[i].offset > span->highest[p])
			span->highest[p] = msgs[i].offset;
	}
}

/*
 * ssp_apply_batch: apply msgs[0, n) and store next (per slot: the next
 * offset to read, or -1 to leave it) in one transaction, if ssp.offsets
 * still holds from (per slot: the offsets the batch began from, -1: none
 * stored), else fail.  span, if not NULL, is ssp_batch_span of msgs[0, n)
 * (a reader's, once for the views it gives the same batch); else it is
 * found here.  shared, if not NULL, is msgs[0, n) decoded by
 * ssp_decode_more with every column the view reads.  nested: inside the
 * caller's transaction (a subtransaction of a reader's group), which
 * commits or rolls back; else in a transaction of its own.  Returns false,
 * committing nothing, if the view was dropped, paused or reset since the
 * worker loaded it.  Must be called outside a transaction.
 */
bool
ssp_apply_batch(SspView *view, SspSources *src, SspMessage *msgs, int n,
				const SspSpan *span, const int64 *from, const int64 *next,
				SspEventTime *et, SspDecoded *shared, bool nested)
{
	BatchState	bs;
	SspSpan		own;
	bool		ok;
	TimestampTz watermark = DT_NOBEGIN;
	int			nparts = src->nslots;
	int			maxatts = 0;
	int			p;
	int			i;

	/*
	 * Every message past the offset the batch begins from, and before the
	 * one it moves to: the compare-and-set fences other processes, this
	 * fences the caller (a reader giving a view what it already has).
	 */
	if (span == NULL)
	{
		own.lowest = palloc(sizeof(int64) * Max(nparts, 1));
		own.highest = palloc(sizeof(int64) * Max(nparts, 1));
		ssp_batch_span(src, msgs, n, &own);
		span = &own;
	}
	for (p = 0, i = 0; p < nparts; p++)
	{
		while (p >= src->base[i] + src->nparts[i])
			i++;
		if (span->lowest[p] < 0)
			continue;
		if ((from[p] >= 0 && span->lowest[p] < from[p]) || next[p] < 0 || span->highest[p] >= next[p])
			elog(ERROR, "ssp: a batch of continuous view \"%s\" holds offsets %lld to %lld of partition %d of topic \"%s\", outside what it moves (%lld to %lld)",
				 view->name, (long long) span->lowest[p], (long long) span->highest[p],
				 p - src->base[i], view->topics[i], (long long) from[p], (long long) next[p]);
	}

	ok = begin_view_xact(view, nested);
	if (ok)
	{
		memset(&bs, 0, sizeof(bs));
		bs.tupdescs = palloc(sizeof(TupleDesc) * src->n);
		for (i = 0; i < src->n; i++)
		{
			SspStream  *stream = src->streams[i];

			/* the owner may have lost the right to read the stream */
			ssp_check_stream_acl(view, stream);
			bs.tupdescs[i] = batch_tupdesc(stream);
			maxatts = Max(maxatts, stream->natts);
			/*
			 * The reader decoded the stream as it is now; a view that has
			 * kept the stream's columns from before an ALTER FOREIGN TABLE
			 * decodes the batch itself, as it knows the stream.
			 */
			if (shared && !ssp_rows_fit(shared->rows[i], bs.tupdescs[i]))
				shared = NULL;
		}
		bs.view = view;
		bs.src = src;
		bs.msgs = msgs;
		bs.n = n;
		bs.shared = shared;
		bs.values = palloc(sizeof(Datum) * (maxatts + SSP_BATCH_EXTRA));
		bs.nulls = palloc(sizeof(bool) * (maxatts + SSP_BATCH_EXTRA));
		bs.et = view->late_sql ? et : NULL;
		bs.maxev = palloc(sizeof(TimestampTz) * Max(nparts, 1));
		bs.touched = palloc0(sizeof(bool) * Max(nparts, 1));
		for (p = 0; p < nparts; p++)
			bs.maxev[p] = DT_NOBEGIN;

		apply_range(&bs, 0, n);

		/* the batch's event times move the watermark for the next batch */
		if (bs.et)
		{
			TimestampTz now = GetCurrentTimestamp();

			for (p = 0; p < nparts; p++)
			{
				et->maxev[p] = Max(et->maxev[p], bs.maxev[p]);
				if (bs.touched[p])
					et->seen_at[p] = now;
			}
			watermark = ssp_watermark(et->maxev, et->seen_at, et->lagging, nparts,
									  et->watermark, view->idle_ms, view->grace);
		}
		store_progress(&bs, from, next, watermark);
		if (bs.et)
		{
			et->began = et->watermark;
			et->watermark = watermark;
		}
	}

	end_view_xact(ok, nested);
	return ok;
}

/*
 * ssp_batch_due: would a batch of no messages change the view now?  It
 * would if quiet partitions went idle and move its watermark, or, for a
 * join of streams, if the watermark its last batch stored has passed
 * buffered rows' bounds: the next batch lets them go (emitting a left
 * join's unmatched rows), and for a left join closes windows.
 */
bool
ssp_batch_due(SspView *view, SspEventTime *et, const bool *lagging, int nslots)
{
	if (view->late_sql == NULL)
		return false;
	if (view->buffers != NIL && et->began != et->watermark)
		return true;
	return ssp_watermark(et->maxev, et->seen_at, lagging, nslots, et->watermark,
						 view->idle_ms, view->grace) != et->watermark;
}

/*
 * ssp_record_lost: messages from..to-1 of a partition of a source's topic
 * were deleted by the broker before the view read them.  Say so in
 * ssp.dead_letters (one row for the range, without key or payload), count
 * them, and move the partition's offset to "to" if it still is stored (-1:
 * none stored), in one transaction; with from == to, only move it (the
 * topic was created again, and is read from its start).  Returns false if
 * the view was
 * dropped, paused or reset.  Must be called outside a transaction.
 */
bool
ssp_record_lost(SspView *view, int source, int32 partition, int64 stored,
				int64 from, int64 to)
{
	Oid			argtypes[6] = {OIDOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID};
	Datum		args[6];
	char		nulls[6] = "      ";
	bool		ok;

	ok = begin_view_xact(view, false);
	if (ok)
	{
		args[0] = ObjectIdGetDatum(view->view);
		args[1] = CStringGetTextDatum(view->topics[source]);
		args[2] = Int32GetDatum(partition);
		args[3] = Int64GetDatum(from);
		args[4] = Int64GetDatum(to);
		args[5] = Int64GetDatum(stored);
		nulls[5] = stored < 0 ? 'n' : ' ';
		if (SPI_execute_with_args(stored < 0 ?
								  "INSERT INTO ssp.offsets (view, topic, partition, next_offset) "
								  "VALUES ($1::regclass, $2, $3, $5) ON CONFLICT (view, topic, partition) DO NOTHING "
								  "RETURNING 1" :
								  "UPDATE ssp.offsets SET next_offset = $5 WHERE view = $1::regclass "
								  "AND topic = $2 AND partition = $3 AND next_offset OPERATOR(pg_catalog.=) $6 "
								  "RETURNING 1",
								  6, argtypes, args, nulls, false, 0) < 0)
			elog(ERROR, "ssp: could not store offsets");
		if (SPI_processed != 1)
			fenced(view);
		/* from == to: nothing lost, the offset only moves */
		if (from < to &&
			(SPI_execute_with_args("INSERT INTO ssp.dead_letters (view, topic, partition, \"offset\", error) "
								  "VALUES ($1::regclass, $2, $3, $4, pg_catalog.format("
								  "'messages at offsets %s to %s were deleted by the broker before the view read them', $4, $5 - 1))",
								  5, argtypes, args, NULL, false, 0) != SPI_OK_INSERT ||
			 SPI_execute_with_args("UPDATE ssp.continuous_views SET dead_letters = dead_letters + ($5 - $4) "
								  "WHERE view = $1::regclass",
								  5, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE))
			elog(ERROR, "ssp: could not record lost messages");
		if (from < to)
			ereport(WARNING,
					(errmsg("continuous view \"%s\" lost messages %lld to %lld of partition %d of topic \"%s\"",
							view->name, (long long) from, (long long) to - 1, partition, view->topics[source]),
					 errdetail("The broker deleted them (retention) before the view read them."),
					 errhint("They are recorded in ssp.dead_letters.  Keep the view running, or raise the topic's retention.")));
	}
	end_view_xact(ok, false);
	return ok;
}

/* decoded_create: a batch decoded for every view, with no message yet. */
static SspDecoded *
decoded_create(SspSources *src, bool event_times, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	SspDecoded *d = palloc0(sizeof(SspDecoded));
	int			maxatts = 0;
	int			i;

	d->nsources = src->n;
	d->cxt = cxt;
	d->rows = palloc0(sizeof(SspRows *) * src->n);
	for (i = 0; i < src->n; i++)
		maxatts = Max(maxatts, src->streams[i]->natts);
	d->values = palloc(sizeof(Datum) * (maxatts + SSP_BATCH_EXTRA));
	d->nulls = palloc(sizeof(bool) * (maxatts + SSP_BATCH_EXTRA));
	if (event_times)
	{
		d->maxev = palloc(sizeof(TimestampTz) * Max(src->nslots, 1));
		for (i = 0; i < src->nslots; i++)
			d->maxev[i] = DT_NOBEGIN;
	}
	MemoryContextSwitchTo(old);
	return d;
}

/*
 * ssp_decode_more: msgs[from, to) decoded once into the rows of each
 * source, for every view of the process (src's streams decode the columns
 * any of them reads), with each slot's latest event time if event_times.
 * The first call (*dp NULL) makes *dp in cxt; later calls add the messages
 * that came since, so that a worker decodes a batch while it waits for the
 * rest of it.  In a transaction of its own; the rows live in cxt, across
 * the views' transactions.  A message that cannot be decoded marks it
 * failed, and no more is decoded: each view then decodes the batch itself,
 * and sends that message to its dead letters.
 */
void
ssp_decode_more(SspDecoded **dp, SspSources *src, SspMessage *msgs, int from, int to,
				bool event_times, MemoryContext cxt)
{
	SspDecoded *volatile d = *dp ? *dp : (*dp = decoded_create(src, event_times, cxt));
	MemoryContext old = CurrentMemoryContext;
	MemoryContext rowcxt;
	int			i;

	Assert(from == d->n);
	if (d->failed || from >= to)
		return;
	rowcxt = AllocSetContextCreate(cxt, "ssp decode", ALLOCSET_DEFAULT_SIZES);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		for (i = 0; i < src->n; i++)
			if (d->rows[i] == NULL)
				d->rows[i] = ssp_rows_create(SSP_BATCH_RELATION(i), batch_tupdesc(src->streams[i]), cxt);
		reserve_rows(d->rows, src->n, msgs, from, to, true);
		for (i = from; i < to; i++)
		{
			SspMessage *msg = &msgs[i];
			MemoryContext prev = MemoryContextSwitchTo(rowcxt);

			decode_row(src, msg, d->values, d->nulls, d->maxev);
			MemoryContextSwitchTo(prev);
			ssp_rows_add(d->rows[msg->source], d->values, d->nulls);
			MemoryContextReset(rowcxt);
		}
		d->n = to;
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		AbortCurrentTransaction();
		d->failed = true;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(rowcxt);
}

/* ssp_decoded_free: what ssp_decode_more made. */
void
ssp_decoded_free(SspDecoded *d)
{
	int			i;

	ListCell   *lc;

	if (d == NULL)
		return;
	foreach(lc, d->groups)
	{
		SspGroups  *g = lfirst(lc);

		if (g->ts)
			tuplestore_end(g->ts);
	}
	for (i = 0; i < d->nsources; i++)
		ssp_rows_free(d->rows[i]);
	if (d->maxev)
		pfree(d->maxev);
	pfree(d->values);
	pfree(d->nulls);
	pfree(d->rows);
	pfree(d);
}
