/*-------------------------------------------------------------------------
 *
 * modify.c
 *	  Writing to a stream: INSERT and COPY FROM produce one message per
 *	  row, and return once the broker has acknowledged them all.
 *
 * Messages are queued as rows arrive and flushed when the statement ends;
 * a broker that does not acknowledge within ssp.broker_timeout, or refuses
 * a message, fails the statement.  Kafka has no rollback: messages the
 * broker acknowledged before a failure stay in the topic (doc/streams.md,
 * Inserts).
 * Streams are append-only; UPDATE and DELETE are refused by Postgres
 * itself, since the wrapper reports only INSERT as supported.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "fdw/fdw.h"
#include "stream/stream.h"
#include "kafka/kafka.h"

typedef struct SspModifyState
{
	SspStream  *stream;
	SspKafka   *producer;
	SspFailures failed_before;	/* its delivery failures when this began */
	MemoryContext rowcxt;
} SspModifyState;

List *
ssp_modify_plan(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
				int subplan_index)
{
	return NIL;
}

static SspModifyState *
begin(EState *estate, ResultRelInfo *rinfo)
{
	SspModifyState *state = palloc0(sizeof(SspModifyState));
	Oid			userid = GetUserId();
	Index		rti = rinfo->ri_RangeTableIndex;

	/*
	 * The user mapping of whoever the statement checks privileges as (a
	 * view's owner, through a view).  A partition that a row was routed to
	 * has no entry of its own: its root's says (as postgres_fdw reads it).
	 */
	if (rti == 0 && rinfo->ri_RootResultRelInfo != NULL)
		rti = rinfo->ri_RootResultRelInfo->ri_RangeTableIndex;
	if (rti > 0)
	{
		RangeTblEntry *rte = exec_rt_fetch(rti, estate);

		if (OidIsValid(rte->checkAsUser))
			userid = rte->checkAsUser;
	}
	state->stream = ssp_stream_open(RelationGetRelid(rinfo->ri_RelationDesc));
	ssp_encode_check(state->stream);
	state->producer = ssp_kafka_producer(state->stream->serverid, userid);
	state->failed_before = ssp_kafka_failures(state->producer);
	state->rowcxt = AllocSetContextCreate(estate->es_query_cxt, "ssp insert row",
										  ALLOCSET_DEFAULT_SIZES);
	rinfo->ri_FdwState = state;
	return state;
}

/* ssp_modify_begin: start an INSERT into a stream. */
void
ssp_modify_begin(ModifyTableState *mtstate, ResultRelInfo *rinfo,
				 List *fdw_private, int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	begin(mtstate->ps.state, rinfo);
}

/* ssp_insert_begin: start a COPY FROM into a stream. */
void
ssp_insert_begin(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	begin(mtstate->ps.state, rinfo);
}

/* ssp_modify_insert: encode the row and queue it for the broker. */
TupleTableSlot *
ssp_modify_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
				  TupleTableSlot *planSlot)
{
	SspModifyState *state = rinfo->ri_FdwState;
	MemoryContext old;
	SspOutMessage out;

	slot_getallattrs(slot);
	MemoryContextReset(state->rowcxt);
	old = MemoryContextSwitchTo(state->rowcxt);
	ssp_encode_row(state->stream, slot->tts_values, slot->tts_isnull, &out);
	ssp_kafka_produce(state->producer, state->stream->topic, &out);
	MemoryContextSwitchTo(old);
	return slot;
}

/* ssp_modify_end: wait for the broker to acknowledge every message. */
void
ssp_modify_end(EState *estate, ResultRelInfo *rinfo)
{
	SspModifyState *state = rinfo->ri_FdwState;

	if (state == NULL)
		return;
	ssp_kafka_flush(state->producer, state->stream->topic, ssp_broker_timeout, state->failed_before);
}

void
ssp_insert_end(EState *estate, ResultRelInfo *rinfo)
{
	ssp_modify_end(estate, rinfo);
}
