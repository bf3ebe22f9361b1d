/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  The ProcessUtility hook: DDL on streams, servers and user mappings is
 *	  checked as it happens.
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

#include "access/xact.h"
#include "catalog/namespace.h"
#include "foreign/foreign.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"

#include "ssp.h"
#include "shmem.h"
#include "view.h"

static ProcessUtility_hook_type prev_utility_hook = NULL;
static bool wake_launcher_at_commit = false;

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

static void
ssp_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	/* CREATE VIEW ... WITH (ssp.continuous) or (ssp.rollup): ours to carry out */
	if (IsA(parsetree, ViewStmt) && ssp_view_flag((ViewStmt *) parsetree, "continuous"))
	{
		if (ssp_view_flag((ViewStmt *) parsetree, "rollup"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a view cannot be both ssp.continuous and ssp.rollup"),
					 errdetail("A continuous view reads a stream; a rollup reads a continuous view.")));
		ssp_create_continuous_view((ViewStmt *) parsetree, queryString);
		return;
	}
	if (IsA(parsetree, ViewStmt) && ssp_view_flag((ViewStmt *) parsetree, "rollup"))
	{
		ssp_create_rollup((ViewStmt *) parsetree, queryString);
		return;
	}

	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
						  queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

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
		case T_CreateExtensionStmt:
			if (strcmp(((CreateExtensionStmt *) parsetree)->extname, "ssp") == 0)
				wake_launcher_at_commit = true;
			break;
		default:
			break;
	}
}

/* After CREATE EXTENSION ssp commits, the launcher starts a scheduler. */
static void
xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_launcher_at_commit)
		ssp_wake_launcher();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_launcher_at_commit = false;
}

/* ssp_utility_init: install the hook (from _PG_init). */
void
ssp_utility_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = ssp_process_utility;
	RegisterXactCallback(xact_callback, NULL);
}
