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
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "compile/view.h"

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
