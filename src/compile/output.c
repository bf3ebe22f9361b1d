/*-------------------------------------------------------------------------
 *
 * output.c
 *	  ssp.output_topic: what keeps a view's published changes whole.
 *
 * A view's changes reach its output topic through its outbox (outbox.c),
 * which three statement triggers on its table fill in the batch's
 * transaction (viewsql.c).  A batch applied without them would publish
 * nothing of itself, and say nothing: so a user's DDL may not drop,
 * replace or rename them or their function (utility.c asks
 * ssp_changes_trigger_view and ssp_changes_function_view), and a worker
 * refuses to run a view whose triggers are missing or disabled
 * (ssp_view_check_changes), as a restore may leave them for a while.
 *
 * Each change carries a number (_seq, the header ssp-seq), and a consumer
 * drops a record whose number is not above the highest it has seen in the
 * record's partition (doc/outputs.md).  So the numbers in each partition
 * must only grow, whichever view wrote them: only one continuous view of
 * the database may publish to a topic (ssp_output_check_topic), and a new
 * view numbers its changes from above the highest number at the end of
 * each partition of its topic, and above the microseconds since
 * 2000-01-01 by the server's clock, which covers what the end of the
 * topic no longer shows (records deleted by retention, a view of another
 * cluster): ssp_output_start.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "kafka/kafka.h"
#include "compile/view.h"

/* the last messages of each partition read for the numbers there */
/* the numbers a view's output needs left above the topic's tail */
#define SSP_OUTPUT_NUMBERS_LEFT ((int64) 1 << 40)
#define SSP_OUTPUT_TAIL 64

/* the triggers that fill a view's outbox (viewsql.c), and their events */
static const struct
{
	const char *name;
	int16		event;
}			changes_triggers[] = {
	{"ssp_changes_insert", TRIGGER_TYPE_INSERT},
	{"ssp_changes_update", TRIGGER_TYPE_UPDATE},
	{"ssp_changes_delete", TRIGGER_TYPE_DELETE},
};

/* find_trigger: the pg_trigger row of trigger name on relid, copied, or NULL */
static HeapTuple
find_trigger(Oid relid, const char *name)
{
	Relation	rel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(name));
	scan = systable_beginscan(rel, TriggerRelidNameIndexId, true, NULL, 2, key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		tup = heap_copytuple(tup);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return tup;
}

/*
 * ssp_changes_function_view: the continuous view whose outbox's trigger
 * function funcid is (the function depends on the view, AUTO, as CREATE
 * VIEW and a restored view's first load make it), or InvalidOid.
 */
Oid
ssp_changes_function_view(Oid funcid)
{
	Relation	depend;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			view = InvalidOid;

	if (!OidIsValid(funcid))
		return InvalidOid;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ProcedureRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(funcid));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);

		if (d->deptype == DEPENDENCY_AUTO && d->refclassid == RelationRelationId &&
			ssp_is_continuous_view(d->refobjid))
		{
			view = d->refobjid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return view;
}

/*
 * ssp_changes_trigger_view: the continuous view whose outbox trigger
 * (ssp_changes_insert, _update or _delete on its table, calling its
 * function) the trigger name on relid is, or InvalidOid.
 */
Oid
ssp_changes_trigger_view(Oid relid, const char *name)
{
	HeapTuple	tup;
	Oid			view;
	int			i;

	if (!OidIsValid(relid) || name == NULL)
		return InvalidOid;
	for (i = 0; i < lengthof(changes_triggers); i++)
		if (strcmp(name, changes_triggers[i].name) == 0)
			break;
	if (i == lengthof(changes_triggers) || (tup = find_trigger(relid, name)) == NULL)
		return InvalidOid;
	view = ssp_changes_function_view(((Form_pg_trigger) GETSTRUCT(tup))->tgfoid);
	heap_freetuple(tup);
	return OidIsValid(view) && ssp_continuous_view_mrel(view) == relid ? view : InvalidOid;
}

/* changes_lost: the error of a view whose trigger name cannot fill its outbox */
static void
changes_lost(SspView *v, const char *name, const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("continuous view \"%s\" cannot publish its changes: trigger \"%s\" on its table \"%s\" %s",
					v->name, name, get_rel_name(v->mrel), what),
			 errdetail("The triggers ssp_changes_insert, ssp_changes_update and ssp_changes_delete on its table put its changes in its outbox, published to topic \"%s\"; without them its batches would lose their changes.",
					   v->output_topic),
			 errhint("%s", hint)));
}

/*
 * ssp_view_check_changes: refuse to apply a view with ssp.output_topic
 * (its changes, not its closed windows) unless the three triggers that
 * fill its outbox are on its table as CREATE VIEW made them (statement
 * triggers AFTER their event, calling the view's function) and fire in
 * the workers' sessions (enabled, or ALWAYS; session_replication_role is
 * origin there).  A restore makes the triggers after the tables' rows,
 * and makes a trigger disabled in the dump disabled; the error fails the
 * view for now, and the scheduler tries it again.  Needs a transaction.
 */
void
ssp_view_check_changes(SspView *v)
{
	int			i;

	if (!OidIsValid(v->outbox) || v->outbox_final_sql != NULL)
		return;
	for (i = 0; i < lengthof(changes_triggers); i++)
	{
		const char *name = changes_triggers[i].name;
		HeapTuple	tup = find_trigger(v->mrel, name);
		Form_pg_trigger t;

		if (tup == NULL)
			changes_lost(v, name, "is missing",
						 "A restore makes the triggers after the tables' rows: the view goes on by itself once it has.  Otherwise drop the view and create it again.");
		t = (Form_pg_trigger) GETSTRUCT(tup);
		if (t->tgfoid != v->changes || !SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(t->tgfoid)) ||
			(t->tgtype & (TRIGGER_TYPE_ROW | TRIGGER_TYPE_TIMING_MASK)) != TRIGGER_TYPE_AFTER ||
			(t->tgtype & changes_triggers[i].event) == 0)
			changes_lost(v, name, "is not the one ssp made",
						 "Drop the view and create it again.");
		if (t->tgenabled != TRIGGER_FIRES_ON_ORIGIN && t->tgenabled != TRIGGER_FIRES_ALWAYS)
			changes_lost(v, name, "is disabled",
						 psprintf("Enable it with ALTER TABLE %s ENABLE TRIGGER %s: the view then goes on by itself.",
								  quote_qualified_identifier(get_namespace_name(get_rel_namespace(v->mrel)),
															 get_rel_name(v->mrel)),
								  quote_identifier(name)));
		heap_freetuple(tup);
	}
}

/*
 * ssp_output_check_topic: refuse a new continuous view with output topic
 * topic on server serverid if another view of the database publishes to a
 * topic of that name, on any server: their changes would be numbered
 * apart, in one partition, and a consumer would drop those of one of them
 * as repeats.  Two servers may reach one cluster (the same brokers, or
 * other names of them), which nothing here can tell for sure.  Serialized
 * by an advisory lock held to the end of the transaction, and read with
 * the latest snapshot, so that two such views created at once, or in a
 * transaction that began before the other committed, cannot both pass.  A
 * view that is being dropped in a transaction not yet committed still
 * counts.
 */
void
ssp_output_check_topic(Oid serverid, const char *topic)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(topic)};
	Oid			locktype = INT8OID;
	Datum		lockkey = Int64GetDatum(SSP_OUTPUT_LOCK_CLASS << 32);
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	if (ssp_spi_catalog("SELECT pg_catalog.pg_advisory_xact_lock($1)", 1, &locktype, &lockkey,
						NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not lock the output topics");
	PushActiveSnapshot(GetLatestSnapshot());
	rc = ssp_spi_catalog("SELECT c.view, s.srvname, f.ftserver FROM ssp.continuous_views c "
						 "JOIN pg_catalog.pg_foreign_table f ON f.ftrelid = c.streams[1] "
						 "JOIN pg_catalog.pg_foreign_server s ON s.oid = f.ftserver "
						 "WHERE c.output_topic = $1 "
						 "ORDER BY c.view::pg_catalog.text LIMIT 1",
						 1, argtypes, args, NULL, true, 1);
	PopActiveSnapshot();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read ssp.continuous_views");
	/* the view, a regclass: SPI_getvalue names it as the user's path shows it */
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			other = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));

		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("continuous view %s publishes to topic \"%s\" already",
						SPI_getvalue(tup, desc, 1), topic),
				 other == serverid ?
				 errdetail("The changes of two views in one topic would be numbered apart, and a consumer that drops the records whose _seq is not above the highest it has seen would drop some of them.") :
				 errdetail("It publishes through server \"%s\", which may reach the same brokers.  The changes of two views in one topic would be numbered apart, and a consumer that drops the records whose _seq is not above the highest it has seen would drop some of them.",
						   SPI_getvalue(tup, desc, 2)),
				 errhint("Give the view an output topic of its own, or drop the other view first.")));
	}
	SPI_finish();
}

/*
 * ssp_output_start: number a new view's changes, in its outbox's identity
 * column, from above anything an earlier view could have published to
 * its output topic: above the highest ssp-seq header among the last
 * SSP_OUTPUT_TAIL messages of each partition of the topic (read as the
 * current user, the view's owner), and above the microseconds since
 * 2000-01-01 by the server's clock, which an earlier view's numbers, from
 * its own creation on, could outrun only by publishing more than a
 * million changes a second.  A topic the owner may not read (an ACL that
 * lets it write only) leaves the clock alone, with a notice.  Needs a
 * transaction.
 */
void
ssp_output_start(Oid outbox, Oid serverid, const char *topic)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "ssp output start",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	SspKafka   *kafka = ssp_kafka_consumer(serverid, GetUserId(), topic, NULL);
	int64		tail = 0;
	int64		start = Max(GetCurrentTimestamp(), 1);
	bool		readable;
	Oid			seq;

	readable = ssp_kafka_tail_number(kafka, "ssp-seq", SSP_OUTPUT_TAIL, &tail);
	ssp_kafka_close(kafka);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	if (!readable)
		ereport(NOTICE,
				(errmsg("could not read the end of topic \"%s\"", topic),
				 errdetail("The brokers of server \"%s\" do not let role \"%s\" read it.",
						   GetForeignServer(serverid)->servername, GetUserNameFromId(GetUserId(), false)),
				 errhint("The view's changes are numbered from the server's clock alone.  Grant the role's principal DESCRIBE and READ on the topic to have them numbered above those at its end too.")));
	/*
	 * Each change takes a number: a view numbered above a tail near the
	 * highest number would run out of them (its changes then failed as
	 * dead letters, every one)
	 */
	if (tail > PG_INT64_MAX - SSP_OUTPUT_NUMBERS_LEFT)
		ereport(ERROR,
				(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
				 errmsg("topic \"%s\" holds a change numbered %lld, too near the highest a number may be (%lld)",
						topic, (long long) tail, (long long) PG_INT64_MAX),
				 errdetail("A view numbers its changes above the header ssp-seq of the topic's last messages, and needs room for 2^40 of them."),
				 errhint("Give the view another output topic.")));
	start = Max(start, tail + 1);
	seq = getIdentitySequence(outbox, get_attnum(outbox, "seq"), false);
	(void) DirectFunctionCall3(setval3_oid, ObjectIdGetDatum(seq), Int64GetDatum(start),
							   BoolGetDatum(false));
}
