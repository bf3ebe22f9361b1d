/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  The ProcessUtility hook: DDL on streams, servers and user mappings is
 *	  checked as it happens; and the post-parse-analysis hook, which
 *	  refuses to write into a continuous view.
 *
 * CREATE VIEW ... WITH (ssp.continuous) is carried out by view.c instead
 * of Postgres.  CREATE EXTENSION ssp wakes the launcher once it commits.
 *
 * The option validator sees one option list at a time; whether a stream's
 * options fit its columns (the event-time column exists, a text stream has
 * one value column...) can only be seen once the table exists.  So after
 * CREATE FOREIGN TABLE, ALTER FOREIGN TABLE and column renames on a stream,
 * the stream is opened, which runs every check and fails the statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "runtime/shmem.h"
#include "runtime/supervisor.h"
#include "compile/view.h"

static ProcessUtility_hook_type prev_utility_hook = NULL;
static post_parse_analyze_hook_type prev_analyze_hook = NULL;
static bool wake_launcher_at_commit = false;
static bool wake_scheduler_at_commit = false;
/* databases ssp's processes are kept out of until the transaction ends */
static List *held_databases = NIL;

/* statements of ssp's own on the parts of views (ssp_spi_exec) under way */
int			ssp_own_ddl = 0;

/*
 * check_server: after DDL on a server of ours or on one of its user
 * mappings, check the properties changed as a client would (property.c):
 * a superuser's mapping for another role, or a server given to a role that
 * is not a superuser, can hold what that role may not set.  user is the
 * mapping's role (NULL: the server's own options); all_mappings after a
 * change of owner.
 */
static void
check_server(const char *servername, RoleSpec *user, bool all_mappings)
{
	ForeignServer *server = GetForeignServerByName(servername, true);
	Oid			umuser = InvalidOid;

	if (server == NULL || !ssp_is_kafka_server(server->serverid))
		return;
	if (user && user->roletype != ROLESPEC_PUBLIC)
		umuser = get_rolespec_oid(user, false);
	CommandCounterIncrement();
	ssp_check_server_properties(server->serverid, user == NULL, user != NULL,
								umuser, all_mappings);
}

/* check_stream: open the stream named rv, if it is one, to check it. */
static void
check_stream(RangeVar *rv)
{
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);

	if (!OidIsValid(relid))
		return;
	CommandCounterIncrement();
	if (ssp_is_stream(relid))
		(void) ssp_stream_open(relid);
}

/*
 * check_column_rename: a continuous view's SQL is built again after any
 * rename, but two kinds of column keep their names: those of a view's own
 * tables (its table, outbox and join buffers: a table that is part of a
 * view, by an internal dependency, is one), and those of a stream that a
 * join of two streams reads, whose buffers hold its columns by name.
 */
static void
check_column_rename(RenameStmt *stmt)
{
	Oid			relid;
	Oid			argtype = OIDOID;
	Datum		arg;
	bool		internal;

	if (stmt->renameType != OBJECT_COLUMN || stmt->relation == NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return;
	arg = ObjectIdGetDatum(relid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/* the view, a regclass: SPI_getvalue names it as the user's path shows it */
	if (ssp_spi_catalog("SELECT v.oid::pg_catalog.regclass, d.deptype = 'i' "
							  "FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class v ON v.oid = "
							  "CASE d.deptype WHEN 'i' THEN d.refobjid ELSE d.objid END "
							  "WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND v.relkind = 'v' "
							  "AND ((d.deptype = 'i' AND d.objid = $1) OR (d.deptype = 'n' AND d.refobjid = $1 "
							  "AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_depend s "
							  "JOIN pg_catalog.pg_foreign_table f ON f.ftrelid = s.refobjid "
							  "JOIN pg_catalog.pg_foreign_server fs ON fs.oid = f.ftserver "
							  "JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = fs.srvfdw AND w.fdwname = 'ssp_kafka' "
							  "WHERE s.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND s.objid = v.oid "
							  "AND s.deptype = 'n') = 2)) LIMIT 1",
							  1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read pg_depend");
	if (SPI_processed == 0)
	{
		SPI_finish();
		return;
	}
	internal = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &internal));
	if (internal)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot rename a column of \"%s\"", stmt->relation->relname),
				 errdetail("It is part of continuous view %s, whose SQL names its columns.",
						   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Rename the columns of the view itself (ALTER VIEW ... RENAME COLUMN).")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot rename a column of stream \"%s\"", stmt->relation->relname),
			 errdetail("Continuous view %s joins it with another stream, and buffers its rows in a table with its columns.",
					   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
			 errhint("Drop the view, rename the column, and create the view again.")));
}

/*
 * check_ssp_reloptions: ALTER VIEW ... SET (ssp.x = ...) or RESET
 * (ssp.x): a continuous view's options are its definition's, changed by
 * CREATE OR REPLACE VIEW (which builds it again beside the old one); say
 * so, rather than Postgres's "unrecognized parameter namespace".
 */
static void
check_ssp_reloptions(AlterTableStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		ListCell   *o;

		if (cmd->subtype != AT_SetRelOptions && cmd->subtype != AT_ResetRelOptions)
			continue;
		foreach(o, (List *) cmd->def)
		{
			DefElem    *def = lfirst(o);

			if (def->defnamespace && strcmp(def->defnamespace, "ssp") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot %s option \"ssp.%s\" with ALTER", cmd->subtype == AT_SetRelOptions ? "set" : "reset",
								def->defname),
						 errdetail("The ssp options of a continuous view are part of its definition."),
						 errhint("Change them with CREATE OR REPLACE VIEW %s WITH (ssp.continuous, ...) AS ..., which builds the view again beside the old one (a view with ssp.output_topic is dropped and created again instead).",
								 quote_identifier(stmt->relation->relname))));
		}
	}
}

/*
 * check_topic_change: ALTER FOREIGN TABLE stream OPTIONS (SET topic ...)
 * while continuous views read the stream.  A view keeps the topic it was
 * made with (its offsets are that topic's), so it would go on counting the
 * old topic while inserts and scans of the stream use the new one:
 * refused, naming a view.
 */
static void
check_topic_change(AlterTableStmt *stmt)
{
	Oid			relid;
	Oid			argtype = OIDOID;
	Datum		arg;
	ListCell   *lc;
	const char *topic = NULL;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		ListCell   *o;

		if (cmd->subtype != AT_GenericOptions)
			continue;
		foreach(o, (List *) cmd->def)
		{
			DefElem    *def = lfirst(o);

			if (strcmp(def->defname, "topic") == 0 && def->defaction != DEFELEM_DROP && def->arg)
				topic = defGetString(def);
		}
	}
	if (topic == NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid) || !ssp_is_stream(relid))
		return;
	foreach(lc, GetForeignTable(relid)->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "topic") == 0 && strcmp(defGetString(def), topic) == 0)
			return;				/* the same topic */
	}
	arg = ObjectIdGetDatum(relid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	/* ssp records a continuous view's dependency on its streams itself */
	if (ssp_spi_catalog("SELECT v.oid::pg_catalog.regclass FROM pg_catalog.pg_depend d "
							  "JOIN pg_catalog.pg_class v ON v.oid = d.objid "
							  "WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND d.refobjid = $1 AND d.deptype = 'n' AND v.relkind = 'v' "
							  "ORDER BY v.oid::pg_catalog.regclass::pg_catalog.text LIMIT 1",
							  1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read pg_depend");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot change the topic of stream \"%s\" while continuous views read it",
						stmt->relation->relname),
				 errdetail("Continuous view %s reads it, and would go on reading the topic it was made with.",
						   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Create a stream for the other topic, and views over it.")));
	SPI_finish();
}

/*
 * view_of_part: the continuous view that relid is a part of (its table,
 * query, outbox, a join's buffers, a coordinator's shards: a relation
 * with an internal dependency on the view), or InvalidOid.
 */
static Oid
view_of_part(Oid relid)
{
	Relation	depend;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			view = InvalidOid;

	if (!OidIsValid(relid))
		return InvalidOid;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);

		if (d->deptype == DEPENDENCY_INTERNAL && d->refclassid == RelationRelationId &&
			get_rel_relkind(d->refobjid) == RELKIND_VIEW)
		{
			view = d->refobjid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return OidIsValid(view) && ssp_is_continuous_view(view) ? view : InvalidOid;
}

/*
 * arbiter_form: what makes index tup one the view's INSERT ... ON CONFLICT
 * and MERGE can stand on (unique, valid, whole, of plain columns): its
 * columns with their collations and operator classes, in column order, as
 * text; else NULL.  *nulls_equal: does it take two NULL keys for the same
 * (NULLS NOT DISTINCT, as ssp makes it)?
 */
static char *
arbiter_form(HeapTuple tup, bool *nulls_equal)
{
	Form_pg_index index = (Form_pg_index) GETSTRUCT(tup);
	oidvector  *collations;
	oidvector  *classes;
	bool		isnull;
	int			order[INDEX_MAX_KEYS];
	StringInfoData form;

	*nulls_equal = index->indnullsnotdistinct;
	if (!index->indisunique || !index->indisvalid ||
		!heap_attisnull(tup, Anum_pg_index_indpred, NULL) ||
		!heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
		return NULL;
	collations = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tup,
															   Anum_pg_index_indcollation, &isnull));
	classes = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tup,
															Anum_pg_index_indclass, &isnull));
	/* the key columns in column order: the arbiter is a set of columns */
	for (int i = 0; i < index->indnkeyatts; i++)
	{
		int			j = i;

		while (j > 0 && index->indkey.values[order[j - 1]] > index->indkey.values[i])
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	initStringInfo(&form);
	for (int i = 0; i < index->indnkeyatts; i++)
		appendStringInfo(&form, "%d %u %u,", index->indkey.values[order[i]],
						 collations->values[order[i]], classes->values[order[i]]);
	return form.data;
}

/*
 * index_needed: does continuous view view need index (of one of its
 * parts)?  Every index of its buffers and outbox.  On its table: those
 * over ssp's own columns; the unique index on the group keys, unless
 * another stays that stands in for it (on the same columns, collations
 * and operator classes, taking NULL keys as it does); and the last index
 * of a session window's table, which its statements read and without
 * which it is not whole (catalog.c).  "Stays": is not one of dropped, the
 * indexes the statement drops.  The user's own indexes on the table are
 * the user's to drop.
 */
static bool
index_needed(Oid index, Oid view, List *dropped)
{
	Oid			table = IndexGetRelation(index, false);
	HeapTuple	tup;
	char	   *form;
	bool		nulls_equal;
	bool		other_nulls_equal;
	bool		session;
	Relation	rel;
	ListCell   *lc;
	bool		needed = true;
	bool		others = false;

	if (table != ssp_continuous_view_mrel(view))
		return true;
	/*
	 * Kept to the end of the transaction, as DROP INDEX takes it (and
	 * stronger): of two DROP INDEX CONCURRENTLY, each of one stand-in, the
	 * second sees the first's index invalid.
	 */
	rel = table_open(table, ShareUpdateExclusiveLock);
	session = get_attnum(table, "_session_end") != InvalidAttrNumber;
	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tup))
	{
		table_close(rel, NoLock);
		return false;
	}
	/* one over ssp's own columns (_ssp_rows: the groups to delete) */
	for (int i = 0; i < ((Form_pg_index) GETSTRUCT(tup))->indnkeyatts; i++)
	{
		AttrNumber	att = ((Form_pg_index) GETSTRUCT(tup))->indkey.values[i];
		char	   *name = att > 0 ? get_attname(table, att, true) : NULL;

		if (name && strncmp(name, "_ssp_", 5) == 0)
		{
			ReleaseSysCache(tup);
			table_close(rel, NoLock);
			return true;
		}
	}
	form = arbiter_form(tup, &nulls_equal);
	ReleaseSysCache(tup);
	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			other = lfirst_oid(lc);
		char	   *other_form;

		if (list_member_oid(dropped, other))
			continue;
		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(other));
		if (!HeapTupleIsValid(tup))
			continue;
		others |= ((Form_pg_index) GETSTRUCT(tup))->indisvalid;
		other_form = arbiter_form(tup, &other_nulls_equal);
		if (form && other_form && strcmp(form, other_form) == 0 &&
			(other_nulls_equal || !nulls_equal))
			needed = false;
		ReleaseSysCache(tup);
	}
	table_close(rel, NoLock);
	if (form == NULL)
		return session && !others;
	return needed;
}

/* view_name: a continuous view's name (or its table's), as regclass shows it */
static char *
view_name(Oid view)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(view)));
}

/* part_refused: refuse to do what with rel, a part of view */
static void
part_refused(const char *what, const char *rel, Oid view)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s \"%s\"", what, rel),
			 errdetail("It is part of continuous view %s, which ssp keeps in step with its stream.",
					   view_name(view)),
			 errhint("Change the view with CREATE OR REPLACE VIEW ... WITH (ssp.continuous), rebuild it from its stream with ssp.reset, or drop it.")));
}

/*
 * changes_refused: refuse to do what ("drop trigger t on table m", ...)
 * to a trigger of a view's outbox, or to their function (output.c): the
 * view would go on applying its batches, and publish none of their
 * changes.
 */
static void
changes_refused(const char *what, Oid view, bool drop)
{
	ereport(ERROR,
			(errcode(drop ? ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST : ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s because continuous view %s requires it", what, view_name(view)),
			 errdetail("It puts the changes of the view in its outbox, from which they are published to its ssp.output_topic; without it they would be lost."),
			 errhint("Drop the view instead.")));
}

/*
 * check_changes_function: DROP FUNCTION (or ROUTINE) of the function of a
 * view's outbox triggers, even with CASCADE, which would drop them too.
 */
static void
check_changes_function(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_FUNCTION && stmt->removeType != OBJECT_ROUTINE)
		return;
	foreach(lc, stmt->objects)
	{
		Oid			funcid = LookupFuncWithArgs(stmt->removeType, lfirst(lc), true);
		Oid			view = ssp_changes_function_view(funcid);

		if (OidIsValid(view))
			changes_refused(psprintf("drop function %s", format_procedure(funcid)), view, true);
	}
}

/*
 * check_changes_trigger: DROP TRIGGER, CREATE OR REPLACE TRIGGER, ALTER
 * TRIGGER ... RENAME and ... DEPENDS ON EXTENSION of a trigger of a view's
 * outbox: "verb trigger name on table rv tail".
 */
static void
check_changes_trigger(const char *verb, RangeVar *rv, const char *name, const char *tail)
{
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);
	Oid			view = ssp_changes_trigger_view(relid, name);

	if (OidIsValid(view))
		changes_refused(psprintf("%s trigger %s on table %s%s", verb, quote_identifier(name),
								 rv->relname, tail),
						view, strcmp(verb, "drop") == 0);
}

/*
 * view_refused: refuse to do what with rv if it is a continuous view: a
 * rule or a trigger on it.  Its rows are written to its table, never
 * through it, and it takes no writes (refuse_view_writes), so neither
 * would ever fire; a rule ON SELECT (CREATE OR REPLACE RULE "_RETURN")
 * would show other rows than those ssp keeps, as the view's.  Postgres
 * refuses both on a materialized view alike.
 */
static void
view_refused(const char *what, RangeVar *rv)
{
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);
	char	   *mrel;

	if (!ssp_is_continuous_view(relid))
		return;
	mrel = view_name(ssp_continuous_view_mrel(relid));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("cannot %s continuous view \"%s\"", what, get_rel_name(relid)),
			 errdetail("ssp writes the rows of a continuous view to its table %s, never through the view.", mrel),
			 errhint("Create an AFTER trigger on %s to act on the view's changes, or name an ssp.output_topic; change the view's query with CREATE OR REPLACE VIEW ... WITH (ssp.continuous).",
					 mrel)));
}

/* reads_relation: does a query (node) read relation *(Oid *) context? */
static bool
reads_relation(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
		return ((RangeTblEntry *) node)->rtekind == RTE_RELATION &&
			((RangeTblEntry *) node)->relid == *(Oid *) context;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, reads_relation, context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, reads_relation, context);
}

/*
 * check_plain_replace: after a plain CREATE OR REPLACE VIEW (no
 * ssp.continuous) of continuous view relid, its new query must read its
 * table.  pg_dump's scripts restore a continuous view's query so (its
 * SELECT over name_mrel, after a placeholder); a query of anything else, a
 * stream read at each query or rows of its own, would be a view that
 * shows other rows than those ssp goes on keeping for it, the likely slip
 * being a new query without WITH (ssp.continuous).
 */
static void
check_plain_replace(Oid relid)
{
	Oid			mrel = ssp_continuous_view_mrel(relid);
	Relation	rel;
	bool		reads;

	if (!OidIsValid(mrel))
		return;
	CommandCounterIncrement();
	rel = relation_open(relid, AccessShareLock);
	reads = reads_relation((Node *) get_view_query(rel), &mrel);
	relation_close(rel, AccessShareLock);
	if (!reads)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a continuous view", get_rel_name(relid)),
				 errdetail("A plain CREATE OR REPLACE VIEW of a continuous view must read its table %s, as its definition does.",
						   view_name(mrel)),
				 errhint("Change what it counts with CREATE OR REPLACE VIEW ... WITH (ssp.continuous), or drop it first.")));
}

/*
 * check_part_change: the parts of a continuous view are ssp's to change.
 * A user's DDL that would make its worker fail or its rows wrong is
 * refused: DROP INDEX of a part's index (the unique index is what its
 * statements' ON CONFLICT needs), TRUNCATE of a part (its offsets would
 * stay, and what it had counted be lost), ALTER TABLE of a part but for
 * its storage settings and turning triggers on (a column, a constraint, a
 * trigger turned off, the table unlogged, its owner or row security), a
 * BEFORE trigger or a rule on a part (either may change or drop the rows
 * the view writes), a table that inherits from a part or is a partition
 * of one, foreign or not (its rows would be read as the view's), a new
 * definition of the view's query, and dropping, replacing or renaming the
 * triggers that fill a view's outbox or their function (its changes would
 * be lost: output.c).  Renames, a new schema and AFTER triggers of the
 * user's are allowed.  Statements of ssp's own (ssp_spi_exec) pass.
 * Dropping the view drops them all (DROP VIEW, DROP SCHEMA ... CASCADE,
 * DROP OWNED, DROP EXTENSION), which no statement here names.
 */
static void
check_part_change(Node *parsetree)
{
	ListCell   *lc;
	Oid			relid;
	Oid			view;

	switch (nodeTag(parsetree))
	{
		case T_DropStmt:
			{
				DropStmt   *stmt = (DropStmt *) parsetree;
				List	   *dropped = NIL;

				check_changes_function(stmt);
				if (stmt->removeType == OBJECT_TRIGGER)
				{
					foreach(lc, stmt->objects)
					{
						List	   *names = lfirst(lc);

						check_changes_trigger("drop",
											  makeRangeVarFromNameList(list_copy_head(names, list_length(names) - 1)),
											  strVal(llast(names)), "");
					}
					return;
				}
				if (stmt->removeType != OBJECT_INDEX)
					return;
				/* each index a stand-in for another only if it stays */
				foreach(lc, stmt->objects)
					dropped = lappend_oid(dropped, RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)),
																	NoLock, true));
				foreach(lc, stmt->objects)
				{
					RangeVar   *rv = makeRangeVarFromNameList(lfirst(lc));

					relid = RangeVarGetRelid(rv, NoLock, true);
					if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_INDEX)
						continue;
					view = view_of_part(IndexGetRelation(relid, true));
					if (OidIsValid(view) && index_needed(relid, view, dropped))
						ereport(ERROR,
								(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
								 errmsg("cannot drop index %s because continuous view %s requires it",
										rv->relname, view_name(view)),
								 errhint("Drop the view instead, or change it with CREATE OR REPLACE VIEW ... WITH (ssp.continuous).")));
				}
				return;
			}
		case T_TruncateStmt:
			foreach(lc, ((TruncateStmt *) parsetree)->relations)
			{
				RangeVar   *rv = lfirst(lc);

				view = view_of_part(RangeVarGetRelid(rv, NoLock, true));
				if (OidIsValid(view))
					part_refused("truncate", rv->relname, view);
			}
			return;
		case T_CreateStmt:
		case T_CreateForeignTableStmt:
			/* a child's rows, or a partition's, would be read as the view's */
			foreach(lc, ((CreateStmt *) parsetree)->inhRelations)
			{
				RangeVar   *rv = lfirst(lc);

				view = view_of_part(RangeVarGetRelid(rv, NoLock, true));
				if (OidIsValid(view))
					part_refused(((CreateStmt *) parsetree)->partbound ? "create a partition of" : "inherit from",
								 rv->relname, view);
			}
			return;
		case T_AlterTableStmt:
			{
				AlterTableStmt *stmt = (AlterTableStmt *) parsetree;

				/* a part's owner is its view's: ALTER VIEW may not change the query's */
				if (stmt->objtype == OBJECT_VIEW)
				{
					foreach(lc, stmt->cmds)
						if (((AlterTableCmd *) lfirst(lc))->subtype == AT_ChangeOwner &&
							OidIsValid(view = view_of_part(RangeVarGetRelid(stmt->relation, NoLock, true))))
							part_refused("alter view", stmt->relation->relname, view);
					return;
				}
				if (stmt->objtype != OBJECT_TABLE)
					return;
				foreach(lc, stmt->cmds)
				{
					AlterTableCmd *cmd = lfirst(lc);

					if (cmd->subtype == AT_AddInherit &&
						OidIsValid(view = view_of_part(RangeVarGetRelid((RangeVar *) cmd->def, NoLock, true))))
						part_refused("inherit from", ((RangeVar *) cmd->def)->relname, view);
				}
				view = view_of_part(RangeVarGetRelid(stmt->relation, NoLock, true));
				if (!OidIsValid(view))
					return;
				foreach(lc, stmt->cmds)
				{
					switch (((AlterTableCmd *) lfirst(lc))->subtype)
					{
						case AT_EnableTrig:
						case AT_EnableAlwaysTrig:
						case AT_EnableTrigAll:
						case AT_EnableTrigUser:
						case AT_SetRelOptions:
						case AT_ResetRelOptions:
						case AT_SetStatistics:
						case AT_SetStorage:
						case AT_SetCompression:
						case AT_ClusterOn:
						case AT_DropCluster:
						case AT_SetTableSpace:
							break;
						default:
							part_refused("alter table", stmt->relation->relname, view);
					}
				}
				return;
			}
		case T_CreateTrigStmt:
			{
				CreateTrigStmt *stmt = (CreateTrigStmt *) parsetree;

				view_refused("create a trigger on", stmt->relation);
				if (stmt->replace)
					check_changes_trigger("replace", stmt->relation, stmt->trigname, "");
				if (!stmt->row || TRIGGER_FOR_AFTER(stmt->timing))
					return;
				view = view_of_part(RangeVarGetRelid(stmt->relation, NoLock, true));
				if (OidIsValid(view))
					part_refused("create a BEFORE trigger on", stmt->relation->relname, view);
				return;
			}
		case T_IndexStmt:
			{
				IndexStmt  *stmt = (IndexStmt *) parsetree;
				Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);

				/* (Postgres said only "cannot create index on relation") */
				if (ssp_is_continuous_view(relid))
				{
					char	   *mrel = view_name(ssp_continuous_view_mrel(relid));

					ereport(ERROR,
							(errcode(ERRCODE_WRONG_OBJECT_TYPE),
							 errmsg("cannot create an index on continuous view \"%s\"", get_rel_name(relid)),
							 errdetail("Its rows are in its table %s.", mrel),
							 errhint("Create the index on %s; queries of the view use it.", mrel)));
				}
				return;
			}
		case T_RuleStmt:
			{
				RuleStmt   *stmt = (RuleStmt *) parsetree;

				view_refused("create a rule on", stmt->relation);
				view = view_of_part(RangeVarGetRelid(stmt->relation, NoLock, true));
				if (OidIsValid(view))
					part_refused("create a rule on", stmt->relation->relname, view);
				return;
			}
		case T_RenameStmt:
			{
				RenameStmt *stmt = (RenameStmt *) parsetree;

				if (stmt->renameType == OBJECT_TRIGGER)
					check_changes_trigger("rename", stmt->relation, stmt->subname, "");
				return;
			}
		case T_CreateFunctionStmt:
			{
				CreateFunctionStmt *stmt = (CreateFunctionStmt *) parsetree;
				Oid			funcid;

				/* the function takes no argument; ssp's own replace passes (ssp_own_ddl) */
				if (!stmt->replace || stmt->parameters != NIL)
					return;
				funcid = LookupFuncName(stmt->funcname, 0, NULL, true);
				view = ssp_changes_function_view(funcid);
				if (OidIsValid(view))
					changes_refused(psprintf("replace function %s", format_procedure(funcid)), view, false);
				return;
			}
		case T_AlterObjectDependsStmt:
			{
				AlterObjectDependsStmt *stmt = (AlterObjectDependsStmt *) parsetree;

				/* dropped with the extension, and the triggers with it */
				if (stmt->objectType == OBJECT_TRIGGER)
					check_changes_trigger("make", stmt->relation,
										  strVal(linitial((List *) stmt->object)),
										  " depend on an extension");
				else if (stmt->objectType == OBJECT_FUNCTION || stmt->objectType == OBJECT_ROUTINE)
				{
					Oid			funcid = LookupFuncWithArgs(stmt->objectType,
															(ObjectWithArgs *) stmt->object, true);

					view = ssp_changes_function_view(funcid);
					if (OidIsValid(view))
						changes_refused(psprintf("make function %s depend on an extension", format_procedure(funcid)),
										view, false);
				}
				return;
			}
		case T_ViewStmt:
			{
				ViewStmt   *stmt = (ViewStmt *) parsetree;

				if (!stmt->replace)
					return;
				view = view_of_part(RangeVarGetRelid(stmt->view, NoLock, true));
				if (OidIsValid(view))
					part_refused("replace view", stmt->view->relname, view);
				return;
			}
		default:
			return;
	}
}

/*
 * owned_view: the continuous view ALTER VIEW (or TABLE) ... OWNER TO
 * changes the owner of, or InvalidOid.
 */
static Oid
owned_view(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			relid;

	foreach(lc, stmt->cmds)
		if (((AlterTableCmd *) lfirst(lc))->subtype == AT_ChangeOwner)
			break;
	if (lc == NULL)
		return InvalidOid;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	return OidIsValid(relid) && ssp_is_continuous_view(relid) ? relid : InvalidOid;
}

/* may_create_databases: has the current user CREATEDB (or superuser)? */
static bool
may_create_databases(void)
{
	HeapTuple	tup;
	bool		result;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	result = HeapTupleIsValid(tup) && ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
	if (HeapTupleIsValid(tup))
		ReleaseSysCache(tup);
	return result;
}

/*
 * database_to_hold: the database a statement needs to itself, with no
 * other process connected, and that ssp's processes must leave first
 * (ssp_hold_database): that of DROP DATABASE, of ALTER DATABASE ...
 * RENAME TO or SET TABLESPACE, and the template of CREATE DATABASE.  Only
 * for its owner (or a superuser), who may drop it anyway: another role's
 * statement fails as Postgres says, and stops no view.  InvalidOid: none.
 */
static Oid
database_to_hold(Node *parsetree, bool toplevel)
{
	const char *name = NULL;
	ListCell   *lc;
	Oid			dboid;
	HeapTuple	tup;
	Oid			owner;

	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			name = ((DropdbStmt *) parsetree)->dbname;
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				name = ((RenameStmt *) parsetree)->subname;
			break;
		case T_AlterDatabaseStmt:
			foreach(lc, ((AlterDatabaseStmt *) parsetree)->options)
				if (strcmp(((DefElem *) lfirst(lc))->defname, "tablespace") == 0)
					name = ((AlterDatabaseStmt *) parsetree)->dbname;
			break;
		case T_CreatedbStmt:
			foreach(lc, ((CreatedbStmt *) parsetree)->options)
			{
				DefElem    *def = lfirst(lc);

				if (strcmp(def->defname, "template") == 0 && def->arg != NULL)
					name = defGetString(def);
			}
			break;
		default:
			break;
	}
	if (name == NULL || ssp_shared == NULL)
		return InvalidOid;
	dboid = get_database_oid(name, true);
	if (!OidIsValid(dboid) || dboid == MyDatabaseId)
		return InvalidOid;
	/* (dropped since, by a statement beside this one: Postgres says so) */
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	owner = ((Form_pg_database) GETSTRUCT(tup))->datdba;
	ReleaseSysCache(tup);
	if (!has_privs_of_role(GetUserId(), owner))
		return InvalidOid;

	/*
	 * What Postgres refuses before it looks at who is connected stops no
	 * view either: DROP, CREATE and SET TABLESPACE in a transaction block
	 * or a function, a rename to a name taken, a rename or a copy without
	 * CREATEDB.
	 */
	if (!IsA(parsetree, RenameStmt) && (!toplevel || IsTransactionBlock()))
		return InvalidOid;
	if (IsA(parsetree, RenameStmt) &&
		OidIsValid(get_database_oid(((RenameStmt *) parsetree)->newname, true)))
		return InvalidOid;
	if ((IsA(parsetree, RenameStmt) || IsA(parsetree, CreatedbStmt)) && !may_create_databases())
		return InvalidOid;
	return dboid;
}

/* next_utility: what runs a statement after ssp's hook */
static void
next_utility(PlannedStmt *pstmt, const char *queryString,
			 bool readOnlyTree, ProcessUtilityContext context,
			 ParamListInfo params, QueryEnvironment *queryEnv,
			 DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
						  queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

static void
ssp_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			replaced = InvalidOid;
	Oid			owned = InvalidOid;	/* a continuous view given a new owner */
	Oid			owner_before = InvalidOid;	/* and its owner before */
	Oid			held;

	/* CREATE VIEW ... WITH (ssp.continuous) or (ssp.rollup): ours to carry out */
	if (IsA(parsetree, ViewStmt) && ssp_view_flag((ViewStmt *) parsetree, "continuous"))
	{
		if (ssp_view_flag((ViewStmt *) parsetree, "rollup"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a view cannot be both ssp.continuous and ssp.rollup"),
					 errdetail("A continuous view reads a stream; a rollup reads a continuous view.")));
		ssp_check_extension_version();
		if (((ViewStmt *) parsetree)->replace)
		{
			ViewStmt   *stmt = (ViewStmt *) parsetree;
			Oid			relid = RangeVarGetRelid(stmt->view, NoLock, true);

			if (ssp_is_continuous_view(relid))
			{
				ssp_replace_continuous_view(stmt, queryString, relid);
				return;
			}
			if (OidIsValid(relid))
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("\"%s\" is not a continuous view", stmt->view->relname),
						 errhint("Drop it first, or give the continuous view another name.")));
		}
		ssp_create_continuous_view((ViewStmt *) parsetree, queryString);
		return;
	}
	/*
	 * A plain CREATE OR REPLACE VIEW of a continuous view stays Postgres's:
	 * pg_dump's scripts restore a view's SELECT over its table that way
	 * (check_plain_replace).
	 */
	if (IsA(parsetree, ViewStmt) && ssp_view_flag((ViewStmt *) parsetree, "rollup"))
	{
		ssp_check_extension_version();
		ssp_create_rollup((ViewStmt *) parsetree, queryString);
		return;
	}

	if (ssp_own_ddl == 0)
		check_part_change(parsetree);
	if (ssp_own_ddl == 0 && IsA(parsetree, ViewStmt) && ((ViewStmt *) parsetree)->replace)
	{
		replaced = RangeVarGetRelid(((ViewStmt *) parsetree)->view, NoLock, true);
		if (!ssp_is_continuous_view(replaced))
			replaced = InvalidOid;
	}
	if (IsA(parsetree, RenameStmt))
		check_column_rename((RenameStmt *) parsetree);
	if (IsA(parsetree, AlterTableStmt))
	{
		check_ssp_reloptions((AlterTableStmt *) parsetree);
		if (((AlterTableStmt *) parsetree)->objtype == OBJECT_FOREIGN_TABLE)
			check_topic_change((AlterTableStmt *) parsetree);
		else if (context != PROCESS_UTILITY_SUBCOMMAND &&
				 OidIsValid(owned = owned_view((AlterTableStmt *) parsetree)))
			owner_before = ssp_rel_owner(owned);
	}

	/*
	 * Held until the transaction ends, when the launcher would see it done
	 * (listed first: an error while the processes leave releases it too).
	 * SET TABLESPACE commits halfway and goes on under a session lock, which
	 * a scheduler started then waits for as it connects.
	 */
	held = database_to_hold(parsetree, context == PROCESS_UTILITY_TOPLEVEL);
	if (OidIsValid(held))
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		held_databases = lappend_oid(held_databases, held);
		MemoryContextSwitchTo(old);
		if (ssp_hold_database(held))
			(void) ssp_clear_database(held);
		else
			held_databases = list_delete_last(held_databases);
	}
	next_utility(pstmt, queryString, readOnlyTree, context, params,
				 queryEnv, dest, qc);

	if (OidIsValid(replaced))
		check_plain_replace(replaced);

	/*
	 * CREATE FOREIGN TABLE applies each column's options as an ALTER
	 * subcommand; the stream is whole, and checked, only after the last.
	 */
	if (context == PROCESS_UTILITY_SUBCOMMAND)
		return;

	switch (nodeTag(parsetree))
	{
		case T_CreateForeignTableStmt:
			check_stream(((CreateForeignTableStmt *) parsetree)->base.relation);
			break;
		case T_AlterTableStmt:
			if (((AlterTableStmt *) parsetree)->objtype == OBJECT_FOREIGN_TABLE)
				check_stream(((AlterTableStmt *) parsetree)->relation);
			else if (OidIsValid(owned))
				ssp_continuous_view_owner_changed(owned, owner_before);
			break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN &&
				((RenameStmt *) parsetree)->relationType == OBJECT_FOREIGN_TABLE)
				check_stream(((RenameStmt *) parsetree)->relation);
			break;
		case T_CreateForeignServerStmt:
			check_server(((CreateForeignServerStmt *) parsetree)->servername, NULL, false);
			break;
		case T_AlterForeignServerStmt:
			check_server(((AlterForeignServerStmt *) parsetree)->servername, NULL, false);
			break;
		case T_CreateUserMappingStmt:
			check_server(((CreateUserMappingStmt *) parsetree)->servername,
						 ((CreateUserMappingStmt *) parsetree)->user, false);
			break;
		case T_AlterUserMappingStmt:
			check_server(((AlterUserMappingStmt *) parsetree)->servername,
						 ((AlterUserMappingStmt *) parsetree)->user, false);
			break;
		case T_AlterOwnerStmt:
			if (((AlterOwnerStmt *) parsetree)->objectType == OBJECT_FOREIGN_SERVER)
				check_server(strVal(((AlterOwnerStmt *) parsetree)->object), NULL, true);
			break;
		case T_ReassignOwnedStmt:
			ssp_continuous_views_reassigned(get_rolespec_oid(((ReassignOwnedStmt *) parsetree)->newrole,
															 false));
			break;
		case T_CreateExtensionStmt:
			if (strcmp(((CreateExtensionStmt *) parsetree)->extname, "ssp") == 0)
				wake_launcher_at_commit = true;
			break;
		default:
			break;
	}
}

/*
 * After CREATE EXTENSION ssp commits, the launcher starts a scheduler;
 * after a transaction that made, replaced, paused, resumed or reset a
 * continuous view commits, the database's scheduler looks at once (it
 * would at its next round, up to SCHEDULER_NAPTIME_MS later).  Databases
 * held for the transaction's statements (database_to_hold) are released
 * however it ends.
 */
static void
xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_launcher_at_commit)
		ssp_wake_launcher();
	if (event == XACT_EVENT_COMMIT && wake_scheduler_at_commit)
		ssp_wake_scheduler(MyDatabaseId);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_launcher_at_commit = wake_scheduler_at_commit = false;
	if ((event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		 event == XACT_EVENT_PREPARE) && held_databases != NIL)
	{
		ListCell   *lc;

		foreach(lc, held_databases)
			ssp_release_database(lfirst_oid(lc));
		list_free(held_databases);
		held_databases = NIL;
	}
}

/* ssp_wake_scheduler_at_commit: the scheduler has work once this commits */
void
ssp_wake_scheduler_at_commit(void)
{
	wake_scheduler_at_commit = true;
}

/*
 * refuse_view_writes: refuse an INSERT, UPDATE, DELETE or MERGE into a
 * continuous view, in the query or in one of its WITH queries.  The view
 * is a plain view of name_mrel, so Postgres would write its rows through
 * it: a count set by hand, a group deleted or added, that the view's next
 * batches would add to as if they were its stream's.
 */
static bool
refuse_view_writes(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;

		if (query->commandType != CMD_SELECT && query->resultRelation > 0)
		{
			RangeTblEntry *rte = rt_fetch(query->resultRelation, query->rtable);

			if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_VIEW &&
				ssp_is_continuous_view(rte->relid))
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("cannot change continuous view \"%s\"", get_rel_name(rte->relid)),
						 errdetail("Its rows are what ssp has applied of its streams, each message once."),
						 errhint("To count its streams again from the start, use ssp.reset; to change what it "
								 "counts, CREATE OR REPLACE VIEW ... WITH (ssp.continuous).")));
		}
		return query_tree_walker(query, refuse_view_writes, context, 0);
	}
	return expression_tree_walker(node, refuse_view_writes, context);
}

static void
ssp_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_analyze_hook)
		prev_analyze_hook(pstate, query, jstate);
	if (query->commandType != CMD_UTILITY &&
		(query->commandType != CMD_SELECT || query->hasModifyingCTE))
		refuse_view_writes((Node *) query, NULL);
}

/* ssp_utility_init: install the hooks (from _PG_init). */
void
ssp_utility_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = ssp_process_utility;
	prev_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = ssp_post_parse_analyze;
	RegisterXactCallback(xact_callback, NULL);
}
