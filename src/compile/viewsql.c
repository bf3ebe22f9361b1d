/*-------------------------------------------------------------------------
 *
 * viewsql.c
 *	  The SQL a continuous view becomes, by kind: the materialisation table,
 *	  the apply statement run on each batch (ssp_batch, the stream as "b"),
 *	  and the view users query.
 *
 *	- aggregating views: one row per group and window, merged with MERGE
 *	  (INSERT ... ON CONFLICT DO UPDATE over a join of streams); tumbling
 *	  and hopping windows,
 *	  sliding windows (steps merged at read time), session windows (merged
 *	  by gaps and islands);
 *	- views without aggregates: append-only, or keyed by ssp.primary_key
 *	  (the latest row per key; tombstones delete).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "compile/build.h"
#include "compile/view.h"
#include "compile/window.h"

/*
 * find_window: if a group key is ssp.tumble() or ssp.hop() over the event
 * time, make the view windowed: the SQL of a window's start and end over
 * the batch (for ssp.hop, each event joins every window that holds it), the
 * statement that counts late events (for ssp.hop, events whose every
 * window is closed), and the one that applies retention.
 */
/*
 * closes: SQL, the event time by which the watermark closes a window that
 * ends at end: end itself, or over a join of streams that much later.
 */
static char *
closes(Build *b, const char *end)
{
	if (b->window_delay == NULL)
		return pstrdup(end);
	return psprintf("(%s + %s)", end, b->window_delay);
}

/*
 * watermark_of: SQL, the watermark that has closed a view's windows as of
 * its last commit (a left join of streams: the one its last batch began
 * with, whose unmatched rows that batch's successor emits).
 */
static char *
watermark_of(Build *b, const char *mrel)
{
	/* over shards: the least of theirs, once every shard has one */
	if (b->shard_status)
		return psprintf("(SELECT CASE WHEN pg_catalog.count(s.watermark) OPERATOR(pg_catalog.=) %d THEN pg_catalog.min(s.watermark) END "
						"FROM %s s WHERE s.view_schema OPERATOR(pg_catalog.=) %s AND s.view_name OPERATOR(pg_catalog.=) %s)",
						b->opts->shard_count, b->shard_status,
						quote_literal_cstr(b->shard_view_schema), quote_literal_cstr(b->shard_view_name));
	return psprintf("(SELECT c.%s FROM ssp.continuous_views c WHERE c.mrel OPERATOR(pg_catalog.=) %s::pg_catalog.regclass)",
					SSP_JOIN_EMITS_LATE(b) ? "batch_watermark" : "watermark", quote_literal_cstr(mrel));
}

/*
 * window_end: SQL, the end of the window that starts at start: start plus
 * its size, or for a tumbling window aligned on a time zone's local time,
 * the start of the next (a day lasts 23 or 25 hours when the clocks
 * change: ssp.tumble_end).  A hopping window lasts its size of absolute
 * time, as ssp.hop_windows lists it, whatever its origin.
 */
static char *
window_end(Build *b, const char *start)
{
	if (b->window_origin == NULL || b->spec.hop)
		return psprintf("(%s + %s)", start, b->sizesql);
	return psprintf("ssp.tumble_end(%s, %s, %s)", start, b->sizesql, b->window_origin);
}

/*
 * absolute_interval_sql: iv (no months) as hours, minutes and seconds: a
 * window's size is a length of time (ssp.tumble bins by it so), which
 * timestamptz + '1 day' is not where the session's TimeZone changes clocks.
 */
static char *
absolute_interval_sql(Interval *iv)
{
	Interval	abs = {.time = ssp_window_length(iv)};

	return ssp_interval_sql(&abs);
}

static void
find_window(Build *b, const char *mrel)
{
	SspWindowSpec *w = &b->spec;
	char	   *quals;
	char	   *last_end;

	ssp_find_window(b->stream_join ? NULL : b->stream, ssp_stream_rtindex(b), b->group_exprs, w);
	b->window = w->index;
	if (b->window < 0)
		return;
	b->sizesql = absolute_interval_sql(w->size);
	if (!w->session && ssp_window_zone(w->origin))
		b->window_origin = ssp_deparse(b, w->origin);
	b->window_base = "$1";
	if (w->session)
	{
		/* an event is late once no open session could take it */
		char	   *ts = ssp_deparse(b, w->ts);

		quals = b->query->jointree->quals ? ssp_deparse(b, b->query->jointree->quals) : "true";
		b->window_start = ts;
		if (list_length(b->query->rtable) > 1)
			ssp_refuse("a join with a session window", "Session windows read the stream alone for now.");
		b->late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE (%s) AND NOT %s + %s > COALESCE($1, '-infinity')",
							   b->from, quals, ts, b->sizesql);
		if (b->opts->retention)
			b->retention_sql = psprintf("DELETE FROM %s m WHERE m._session_end + %s + %s < $1 - %s::interval",
										mrel, b->sizesql, b->sizesql, quote_literal_cstr(b->opts->retention));
		return;
	}
	if (b->stream_join)
	{
		b->window_delay = ssp_join_window_delay(b, w->ts);
		if (SSP_JOIN_EMITS_LATE(b))
			b->window_base = watermark_of(b, mrel);
	}
	if (w->hop)
	{
		char	   *ts = ssp_deparse(b, w->ts);
		char	   *origin = w->origin ? ssp_deparse(b, w->origin) : "NULL";

		b->window_from = psprintf(" CROSS JOIN LATERAL ssp.hop_windows(%s, %s, %s, %s) AS hw(w)",
								  ts, b->sizesql, absolute_interval_sql(w->slide), origin);
		b->window_start = "hw.w";
		/* the last window that holds an event starts at its slide */
		last_end = window_end(b, psprintf("ssp.tumble(%s, %s, %s)", ts, absolute_interval_sql(w->slide),
										  origin));
	}
	else
	{
		b->window_from = "";
		b->window_start = ssp_deparse(b, list_nth(b->group_exprs, b->window));
		last_end = window_end(b, b->window_start);
	}
	b->window_end = window_end(b, b->window_start);
	quals = b->query->jointree->quals ? ssp_deparse(b, b->query->jointree->quals) : "true";
	/* a join's pairs are never late (join.c), only its streams' rows */
	if (!b->stream_join)
		b->late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE (%s) AND NOT %s > COALESCE($1, '-infinity')",
							   b->from, quals, last_end);
	if (b->opts->retention)
		b->retention_sql = psprintf("DELETE FROM %s m WHERE %s < %s - %s::interval", mrel,
									closes(b, window_end(b, psprintf("m.%s",
																	 quote_identifier(list_nth(b->group_cols, b->window))))),
									b->window_base, quote_literal_cstr(b->opts->retention));
}

/*
 * find_sliding: for ssp.sliding, the hidden step key (ssp.tumble of the
 * event time by ssp.step), the late count (events already out of the range)
 * and the deletion of steps that left it.
 */
static void
find_sliding(Build *b, const char *mrel)
{
	SspStream  *s = b->stream;
	AttrNumber	evatt = s->timestamp_attnum;
	char	   *step = quote_literal_cstr(b->opts->step);
	char	   *sliding = quote_literal_cstr(b->opts->sliding);
	char	   *quals;
	int			i;

	if (b->window >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ssp.sliding cannot be combined with ssp.tumble or ssp.hop")));
	b->in_range = psprintf("m._step + %s::interval > pg_catalog.now() - %s::interval", step, sliding);
	b->retention_sql = psprintf("DELETE FROM %s m WHERE NOT (%s)", mrel, b->in_range);
	if (b->stream_join)
	{
		/*
		 * A pair's time is the later of its two (a left row emitted
		 * unmatched: its own).  Its streams' late rows are counted as in
		 * any join; a pair out of the range is not kept, and not counted:
		 * pairs are read once.
		 */
		b->step_expr = psprintf("ssp.tumble(%s, %s::interval)", b->join_time, step);
		return;
	}
	for (i = 0; evatt == 0 && i < s->ncolumns; i++)
		if (s->columns[i].source == SSP_SRC_TIMESTAMP)
			evatt = s->columns[i].attnum;
	if (evatt == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a sliding window needs the event time of stream \"%s\"", s->relname),
				 errhint("Give the stream option timestamp, or a column with OPTIONS (meta 'timestamp').")));
	b->step_expr = psprintf("ssp.tumble(b.%s, %s::interval)",
							quote_identifier(get_attname(s->relid, evatt, false)), step);
	b->step_attnum = evatt;
	quals = b->query->jointree->quals ? ssp_deparse(b, b->query->jointree->quals) : "true";
	b->late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE (%s) AND NOT "
						   "%s + %s::interval > pg_catalog.now() - %s::interval",
						   b->from, quals, b->step_expr, step, sliding);
}

/*
 * merged_states: each state column merged over many rows, as
 * ", merge(m.col)::type AS col".
 */
static char *
merged_states(Build *b)
{
	StringInfoData merged;
	ListCell   *lc;

	initStringInfo(&merged);
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *c,
				   *t,
				   *r;

		forthree(c, p->cols, t, p->types, r, p->readaggs)
			appendStringInfo(&merged, ", %s::%s AS %s",
							 ssp_merge_many(p, lfirst(r), psprintf("m.%s", (char *) lfirst(c))),
							 (char *) lfirst(t), (char *) lfirst(c));
	}
	return merged.data;
}

/*
 * merged_source: what the view reads when a group has several rows in the
 * mrel, merged per group (as "m", like the table itself): a sliding
 * window's steps in range (where), or the rows of each of the view's
 * parallel workers.
 */
static char *
merged_source(Build *b, const char *mrel, const char *where)
{
	StringInfoData keys;
	ListCell   *lc;

	initStringInfo(&keys);
	foreach(lc, b->group_cols)
		appendStringInfo(&keys, "%sm.%s", keys.len ? ", " : "", quote_identifier(lfirst(lc)));
	if (b->group_cols == NIL)
		appendStringInfoString(&keys, "m._g0");
	return psprintf("(SELECT %s%s FROM %s m WHERE %s GROUP BY %s) m",
					keys.data, merged_states(b), mrel, where, keys.data);
}

/* var_outside_aggs: does the expression read a column outside its aggregates? */
static bool
var_outside_aggs(Node *node, void *context)
{
	if (node == NULL || IsA(node, Aggref))
		return false;
	if (IsA(node, Var))
		return true;
	return expression_tree_walker(node, var_outside_aggs, context);
}

/* reads_distinct: does the expression read an aggregate over DISTINCT values? */
static bool
reads_distinct(Node *node, Build *b)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		ListCell   *a,
				   *p;

		forboth(a, b->aggs, p, b->plans)
			if (equal(lfirst(a), node))
				return ((AggPlan *) lfirst(p))->distinct_arg != NULL;
		return false;
	}
	return expression_tree_walker(node, reads_distinct, b);
}

/*
 * aggregating_view: the view users query: finish each output column, apply
 * HAVING, and for ssp.emit = 'final' show closed windows only; a sliding
 * window's view reads the merged states of its steps in range.  Also what
 * a rollup of the view reads (rollup.c): those rows with their states, and
 * each output column over them.
 */
static void
aggregating_view(Build *b, List *names, const char *mrel, const char *view,
				 StringInfo viewsql)
{
	Query	   *q = b->query;
	ListCell   *lc;
	StringInfoData where;
	const char *from;
	int			i = 0;

	appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT ", view);
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		char	   *sql;

		if (tle->resjunk)
			continue;
		sql = ssp_final_sql(b, (Node *) tle->expr);
		appendStringInfo(viewsql, "%s%s AS %s", i ? ", " : "", sql,
						 quote_identifier(list_nth(names, i)));
		b->rollup_columns = lappend(b->rollup_columns, sql);
		b->rollup_combinable = lappend_int(b->rollup_combinable,
										   reads_distinct((Node *) tle->expr, b) ? ROLLUP_DISTINCT :
										   contain_agg_clause((Node *) tle->expr) &&
										   !var_outside_aggs((Node *) tle->expr, NULL));
		i++;
	}
	/*
	 * a sliding window reads its steps in range, merged; parallel workers'
	 * rows, and the shards' of a view over shards, merged
	 */
	from = b->step_expr ? merged_source(b, mrel, b->in_range) :
		b->opts->parallelism > 1 || b->opts->shard_servers ? merged_source(b, mrel, "true") :
		psprintf("%s m", mrel);
	initStringInfo(&where);
	if (q->havingQual)
		appendStringInfo(&where, " WHERE %s", ssp_final_sql(b, q->havingQual));
	/*
	 * A session is closed only once no event that is not late can touch
	 * it: one up to gap after its end merges with it, and is late only
	 * once its time plus gap has passed.
	 */
	if (b->window >= 0 && b->spec.session)
		b->closed_sql = closes(b, psprintf("m._session_end + %s + %s", b->sizesql, b->sizesql));
	else if (b->window >= 0)
		b->closed_sql = closes(b, window_end(b, psprintf("m.%s", quote_identifier(list_nth(b->group_cols,
																								b->window)))));
	if (b->opts->emit_final)
	{
		/* only windows the watermark has closed */
		appendStringInfo(&where, " %s %s <= %s", q->havingQual ? "AND" : "WHERE",
						 b->closed_sql, watermark_of(b, mrel));
	}
	appendStringInfo(viewsql, " FROM %s%s", from, where.data);

	b->rollup_from = where.len ? psprintf("(SELECT m.* FROM %s%s) m", from, where.data) : (char *) from;
	b->rollup_states = merged_states(b);
}

/*
 * json_object_sql: jsonb_build_object over names and SQL values, in
 * pieces joined with || (a function takes 100 arguments at most).
 */
static char *
json_object_sql(List *names, List *values)
{
	StringInfoData out;
	ListCell   *n,
			   *v;
	int			i = 0;

	initStringInfo(&out);
	if (names == NIL)
		return "'{}'::jsonb";
	forboth(n, names, v, values)
	{
		if (i % 40 == 0)
			appendStringInfo(&out, "%spg_catalog.jsonb_build_object(", i ? ") || " : "");
		else
			appendStringInfoString(&out, ", ");
		appendStringInfo(&out, "%s, %s", quote_literal_cstr(lfirst(n)), (char *) lfirst(v));
		i++;
	}
	appendStringInfoChar(&out, ')');
	return out.data;
}

/*
 * build_outbox: for ssp.output_topic, the table of changes waiting to be
 * published (outbox.c), and what writes them in the batch's transaction.
 * A change is the view's row before and after, as JSON, keyed by the group
 * key: triggers on the mrel compare the rows that the old and new states
 * finish to (HAVING included), so each insert, update and delete of the
 * view is one change.  With ssp.emit = 'final', a window is published once,
 * when the batch's watermark closes it (outbox_final_sql).
 */
static void
build_outbox(Build *b, List *names, const char *mrel, StringInfo create)
{
	const char *outbox = b->outbox;
	List	   *keynames = NIL;
	List	   *keyvals = NIL;
	char	   *row;
	char	   *key;
	ListCell   *lc;

	foreach(lc, b->group_cols)
	{
		keynames = lappend(keynames, lfirst(lc));
		keyvals = lappend(keyvals, psprintf("m.%s", quote_identifier(lfirst(lc))));
	}
	key = json_object_sql(keynames, keyvals);
	row = json_object_sql(names, b->rollup_columns);
	if (b->query->havingQual)
		row = psprintf("CASE WHEN %s THEN %s END", ssp_final_sql(b, b->query->havingQual), row);

	appendStringInfo(create, ";\nCREATE TABLE %s (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
					 "key jsonb NOT NULL, value jsonb NOT NULL)", outbox);
	if (b->opts->emit_final)
	{
		/*
		 * Run before the batch's watermarks are stored: the windows closed
		 * since the last commit ($1: the watermark the batch began with,
		 * $2: the one it stored; a left join of streams closes windows by
		 * the first, as watermark_of says).
		 */
		bool		left = SSP_JOIN_EMITS_LATE(b);

		b->outbox_final_sql =
			psprintf("INSERT INTO %s (key, value) SELECT %s, %s || '{\"_op\": \"insert\", \"_before\": null}' "
					 "FROM %s m WHERE %s > COALESCE(%s, '-infinity') AND %s <= %s%s%s",
					 outbox, key, row, mrel, b->closed_sql, left ? watermark_of(b, mrel) : "$1",
					 b->closed_sql, left ? "$1" : "$2",
					 b->query->havingQual ? " AND " : "",
					 b->query->havingQual ? ssp_final_sql(b, b->query->havingQual) : "");
		return;
	}
	/*
	 * A group the upsert leaves without rows is deleted by the next
	 * statement: it left the view at the upsert (one delete, its row before
	 * as _before), not with an update to count 0 and then a delete.  (With
	 * emit final, the windows are read after that DELETE.)
	 */
	if (b->empty_groups_go)
		row = psprintf("CASE WHEN m._ssp_rows OPERATOR(pg_catalog.<>) 0 THEN %s END", row);

	/*
	 * Statement triggers with transition tables (set-based: a catch-up
	 * changes most groups in each batch).  An UPDATE's old and new rows
	 * pair on the group key as JSON, which a hash join can match, nulls
	 * included (the planner, which knows nothing of the transition tables'
	 * sizes, would pick a nested loop: quadratic for a catch-up).
	 */
	b->changes_body =
		psprintf("\n"
				 "BEGIN\n"
				 "  IF TG_OP = 'INSERT' THEN\n"
				 "    INSERT INTO %s (key, value) SELECT k, r || '{\"_op\": \"insert\", \"_before\": null}'\n"
				 "      FROM (SELECT %s AS k, %s AS r FROM n m) c WHERE r IS NOT NULL;\n"
				 "  ELSIF TG_OP = 'DELETE' THEN\n"
				 "    INSERT INTO %s (key, value) SELECT k, k || jsonb_build_object('_op', 'delete', '_before', r)\n"
				 "      FROM (SELECT %s AS k, %s AS r FROM o m) c WHERE r IS NOT NULL;\n"
				 "  ELSE\n"
				 "    INSERT INTO %s (key, value) SELECT a.k, COALESCE(a.r, a.k) || jsonb_build_object('_op', "
				 "CASE WHEN b.r IS NULL THEN 'insert' WHEN a.r IS NULL THEN 'delete' ELSE 'update' END, '_before', b.r)\n"
				 "      FROM (SELECT %s AS k, %s AS r FROM o m) b JOIN (SELECT %s AS k, %s AS r FROM n m) a ON a.k = b.k\n"
				 "      WHERE a.r IS DISTINCT FROM b.r;\n"
				 "  END IF;\n"
				 "  RETURN NULL;\n"
				 "END ",
				 outbox, key, row, outbox, key, row, outbox, key, row, key, row);
	appendStringInfo(create, ";\n%s;\n", ssp_changes_function_sql(b, false));
	appendStringInfo(create,
					 "CREATE TRIGGER ssp_changes_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS n "
					 "FOR EACH STATEMENT EXECUTE FUNCTION %s();\n"
					 "CREATE TRIGGER ssp_changes_update AFTER UPDATE ON %s REFERENCING OLD TABLE AS o NEW TABLE AS n "
					 "FOR EACH STATEMENT EXECUTE FUNCTION %s();\n"
					 "CREATE TRIGGER ssp_changes_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS o "
					 "FOR EACH STATEMENT EXECUTE FUNCTION %s()",
					 mrel, b->changes_fn, mrel, b->changes_fn, mrel, b->changes_fn);
}

/*
 * ssp_changes_function_sql: CREATE [OR REPLACE] FUNCTION of the outbox's
 * trigger function (b->changes_fn, b->changes_body).
 */
char *
ssp_changes_function_sql(Build *b, bool replace)
{
	return psprintf("CREATE %sFUNCTION %s() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog "
					"SET enable_nestloop = off SET enable_mergejoin = off AS %s",
					replace ? "OR REPLACE " : "", b->changes_fn,
					quote_literal_cstr(b->changes_body));
}

/*
 * build_session: the mrel and apply statement of a view grouped by
 * ssp.session().  A session is a row: the other group keys, its start (the
 * key), its last event time (_session_end) and the aggregate states.  A
 * batch is cut into sessions per group (gaps and islands over event time);
 * each is merged with the stored sessions it touches (within the gap),
 * which it may bridge: those are deleted and the islands of all of them are
 * inserted with their states merged.
 */
static void
build_session(Build *b, const char *mrel, StringInfo create, StringInfo apply)
{
	Query	   *q = b->query;
	StringInfoData keys;		/* _k1, ... the other group keys */
	StringInfoData keysel;		/* their expressions AS _k1, ... */
	StringInfoData mkeys;		/* their columns in the mrel */
	StringInfoData match;		/* stored session of the same group */
	StringInfoData partials,
				merged,
				statecols,
				mstates;
	char	   *gap = b->sizesql;
	char	   *ts = b->window_start;
	const char *wcol = quote_identifier(list_nth(b->group_cols, b->window));
	ListCell   *lc;
	int			i = 0;
	int			n = 0;

	initStringInfo(&keys);
	initStringInfo(&keysel);
	initStringInfo(&mkeys);
	initStringInfo(&match);
	initStringInfo(&partials);
	initStringInfo(&merged);
	initStringInfo(&statecols);
	initStringInfo(&mstates);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);
		const char *col = quote_identifier(list_nth(b->group_cols, i));

		appendStringInfo(create, "%s %s, ", col,
						 format_type_with_typemod(exprType(e), exprTypmod(e)));
		if (i != b->window)
		{
			n++;
			appendStringInfo(&keys, "_k%d, ", n);
			appendStringInfo(&keysel, "%s AS _k%d, ", ssp_deparse(b, e), n);
			appendStringInfo(&mkeys, "%s, ", col);
			appendStringInfo(&match, "m.%s IS NOT DISTINCT FROM s._k%d AND ", col, n);
		}
		i++;
	}
	appendStringInfoString(create, "_session_end timestamp with time zone");
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *c,
				   *t,
				   *pa,
				   *r;

		forfour(c, p->cols, t, p->types, pa, p->partials, r, p->readaggs)
		{
			appendStringInfo(create, ", %s %s", (char *) lfirst(c), (char *) lfirst(t));
			appendStringInfo(&partials, ", %s AS %s", (char *) lfirst(pa), (char *) lfirst(c));
			appendStringInfo(&merged, ", %s::%s", ssp_merge_many(p, lfirst(r), lfirst(c)),
							 (char *) lfirst(t));
			appendStringInfo(&statecols, ", %s", (char *) lfirst(c));
			appendStringInfo(&mstates, ", m.%s", (char *) lfirst(c));
		}
	}
	appendStringInfo(create, ");\nCREATE INDEX ON %s (%s%s)", mrel, mkeys.data, wcol);
	b->mrel_indexed = true;

	/*
	 * The batch's events of open sessions, cut into sessions per group; an
	 * event whose session would close (its end and twice gap, closed_sql)
	 * after the last timestamp fails here, a dead letter, rather than fail
	 * reading the view and deleting past retention, each batch.
	 */
	appendStringInfo(apply,
					 "WITH e AS (SELECT %s%s AS _ts, b.* FROM ssp_batch b WHERE (%s) AND %s + %s > COALESCE($1, '-infinity') "
					 "AND %s + %s + %s IS NOT NULL), "
					 "c AS (SELECT e.*, CASE WHEN _ts - pg_catalog.lag(_ts) OVER (PARTITION BY %s true ORDER BY _ts) <= %s "
					 "THEN 0 ELSE 1 END AS _new FROM e), "
					 "n AS (SELECT c.*, pg_catalog.sum(_new) OVER (PARTITION BY %s true ORDER BY _ts ROWS UNBOUNDED PRECEDING) AS _sid FROM c), "
					 "s AS (SELECT %s pg_catalog.min(_ts) AS _s, pg_catalog.max(_ts) AS _e%s FROM n b GROUP BY %s _sid), ",
					 keysel.data, ts, q->jointree->quals ? ssp_deparse(b, q->jointree->quals) : "true", ts, gap,
					 ts, gap, gap, keys.data, gap, keys.data, keys.data, partials.data, keys.data);
	/* the stored sessions they touch, taken out */
	appendStringInfo(apply,
					 "t AS (DELETE FROM %s m USING s WHERE %s m.%s - %s <= s._e AND m._session_end + %s >= s._s "
					 "RETURNING %s m.%s AS _s, m._session_end AS _e%s), ",
					 mrel, match.data, wcol, gap, gap, mkeys.data, wcol, mstates.data);
	/* all of them, as islands: a new one where the gap is passed */
	appendStringInfo(apply,
					 "a AS (SELECT %s _s, _e%s FROM s UNION ALL SELECT * FROM t), "
					 "g AS (SELECT a.*, CASE WHEN _s <= pg_catalog.max(_e) OVER (PARTITION BY %s true ORDER BY _s "
					 "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) + %s THEN 0 ELSE 1 END AS _new FROM a), "
					 "i AS (SELECT g.*, pg_catalog.sum(_new) OVER (PARTITION BY %s true ORDER BY _s ROWS UNBOUNDED PRECEDING) AS _iid FROM g) ",
					 keys.data, statecols.data, keys.data, gap, keys.data);
	appendStringInfo(apply,
					 "INSERT INTO %s (%s%s, _session_end%s) "
					 "SELECT %s pg_catalog.min(_s), pg_catalog.max(_e)%s FROM i GROUP BY %s _iid",
					 mrel, mkeys.data, wcol, statecols.data, keys.data, merged.data, keys.data);
}

/*
 * The columns of an aggregating view's mrel as the statements need them:
 * its definition, column list, the same as excluded.col, the batch's value
 * for each (sel), the unique key, and for each key column a test that is
 * null when it is (NULL for a key never null).  Over DISTINCT values
 * (grouped_sql), sel gives NULL for their states, outer each column of
 * the groups (_ssp_g) or those states, and dstates their partials over
 * the new distinct values.
 */
typedef struct MrelCols
{
	StringInfo	create;
	StringInfoData cols;
	StringInfoData values;
	StringInfoData sel;
	StringInfoData keys;
	StringInfoData outer;
	StringInfoData dstates;
	List	   *keycols;
	List	   *keyops;			/* char *: each key's equality (eq_operator) */
	List	   *nulltests;
	List	   *exprs;			/* char *: each column's expression, as in sel */
	List	   *keytypes;		/* Oid: each key's type */
	int			n;
} MrelCols;

/* init_mrel_cols: an empty MrelCols whose table is created in create. */
static void
init_mrel_cols(MrelCols *m, StringInfo create)
{
	memset(m, 0, sizeof(*m));
	m->create = create;
	initStringInfo(&m->cols);
	initStringInfo(&m->values);
	initStringInfo(&m->sel);
	initStringInfo(&m->keys);
	initStringInfo(&m->outer);
	initStringInfo(&m->dstates);
}

static void
add_column(MrelCols *m, const char *col, const char *type, const char *expr)
{
	const char *sep = m->n++ ? ", " : "";

	appendStringInfo(m->create, "%s%s %s", sep, col, type);
	appendStringInfo(&m->cols, "%s%s", sep, col);
	appendStringInfo(&m->values, "%sexcluded.%s", sep, col);
	appendStringInfo(&m->sel, "%s%s", sep, expr);
	appendStringInfo(&m->outer, "%s_ssp_g.%s", sep, col);
	m->exprs = lappend(m->exprs, (char *) expr);
}

/*
 * add_distinct_state: a state column of an aggregate over DISTINCT values,
 * of type type, whose partial over the new values is partial: NULL in the
 * batch's groups, then the partial where the group has new values, or the
 * partial over none.
 */
static void
add_distinct_state(MrelCols *m, AggPlan *p, int n, const char *col, const char *type,
				   const char *partial)
{
	const char *sep = m->n++ ? ", " : "";

	appendStringInfo(m->create, "%s%s %s", sep, col, type);
	appendStringInfo(&m->cols, "%s%s", sep, col);
	appendStringInfo(&m->values, "%sexcluded.%s", sep, col);
	appendStringInfo(&m->sel, "%sNULL::%s", sep, type);
	appendStringInfo(&m->outer, "%sCASE WHEN _ssp_d._ssp_found THEN _ssp_d.%s "
					 "ELSE (SELECT %s FROM (SELECT %s AS _v%d) _ssp_n WHERE false) END",
					 sep, col, partial, p->distinct_null, n);
	appendStringInfo(&m->dstates, ", %s AS %s", partial, col);
}

/*
 * eq_operator: "OPERATOR(schema.name)", the equality by which GROUP BY and
 * the view's unique index compare values of type typid.  A bare "=" would
 * find another type's (text's for citext, where its schema is not on the
 * search path) or an operator of whoever may create one where the search
 * path looks first.
 */
static char *
eq_operator(Oid typid)
{
	Oid			eq;
	HeapTuple	tup;
	char	   *name;

	get_sort_group_operators(typid, false, true, false, NULL, &eq, NULL, NULL);
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(eq));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", eq);
	name = psprintf("OPERATOR(%s.%s)",
					quote_identifier(get_namespace_name(((Form_pg_operator) GETSTRUCT(tup))->oprnamespace)),
					NameStr(((Form_pg_operator) GETSTRUCT(tup))->oprname));
	ReleaseSysCache(tup);
	return name;
}

static void
add_key(MrelCols *m, const char *col, Oid typid, const char *type, const char *expr,
		const char *nulltest)
{
	add_column(m, col, type, expr);
	appendStringInfo(&m->keys, "%s%s", m->keycols ? ", " : "", col);
	m->keycols = lappend(m->keycols, (char *) col);
	m->keyops = lappend(m->keyops, eq_operator(typid));
	m->nulltests = lappend(m->nulltests, (char *) nulltest);
	m->keytypes = lappend_oid(m->keytypes, typid);
}

/*
 * index_keys: the keys in the order of the unique index of the view's
 * table: the key at first (a window's start, or -1 for none), then the
 * other keys of a date or time, then the rest, each in GROUP BY order.
 * Events come mostly in time order, so a batch's new groups then go to the
 * end of the index, and each insert compares a fixed-width time first
 * (with a text first, each went to a page anywhere, comparing texts in the
 * database's collation all the way down).  Outside ssp, 167,000 groups of
 * make bench's catch-up inserted 6,000 at a time cost the index 0.45 s
 * with the region first, 0.29 s with the minute first.  Sorting each
 * batch's groups in the index's order, so that each went to the index's
 * rightmost page, cost the catch-up as much as it saved there.
 */
static char *
index_keys(MrelCols *m, int first)
{
	StringInfoData s;
	int			rank,
				i;

	initStringInfo(&s);
	for (rank = 0; rank < 3; rank++)
		for (i = 0; i < list_length(m->keycols); i++)
		{
			Oid			typid = list_nth_oid(m->keytypes, i);
			bool		time = typid == TIMESTAMPTZOID || typid == TIMESTAMPOID ||
				typid == DATEOID;

			if ((i == first ? 0 : time ? 1 : 2) == rank)
				appendStringInfo(&s, "%s%s", s.len ? ", " : "",
								 (char *) list_nth(m->keycols, i));
		}
	return s.data;
}

/*
 * add_states: each aggregate's state columns, with their partial over the
 * batch, into m; their merges, "col = merge", into set (comma-separated).
 */
static void
add_states(Build *b, MrelCols *m, StringInfo set)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *c,
				   *t,
				   *pa,
				   *mg;

		n++;
		forfour(c, p->cols, t, p->types, pa, p->partials, mg, p->merges)
		{
			if (p->distinct_arg)
				add_distinct_state(m, p, n, lfirst(c), lfirst(t), lfirst(pa));
			else
				add_column(m, lfirst(c), lfirst(t), lfirst(pa));
			appendStringInfo(set, "%s%s = %s", set->len ? ", " : "",
							 (char *) lfirst(c), (char *) lfirst(mg));
		}
	}
}

/* has_distinct: does an aggregate of the view read DISTINCT values? */
static bool
has_distinct(Build *b)
{
	ListCell   *lc;

	foreach(lc, b->plans)
		if (((AggPlan *) lfirst(lc))->distinct_arg)
			return true;
	return false;
}

/*
 * refuse_volatile_distinct: over DISTINCT values, the batch's rows are read
 * twice in one statement, once to add the values and once to group them
 * (distinct_cte, grouped_sql): a volatile WHERE, group key or argument
 * could pass a value in one and not in the other, where it would be kept
 * and never counted.
 */
static void
refuse_volatile_distinct(Build *b)
{
	Query	   *q = b->query;
	ListCell   *lc;
	bool		volatile_found = contain_volatile_functions(q->jointree->quals) ||
		contain_volatile_functions((Node *) b->group_exprs);

	foreach(lc, b->aggs)
		volatile_found |= contain_volatile_functions((Node *) ((Aggref *) lfirst(lc))->args) ||
			contain_volatile_functions((Node *) ((Aggref *) lfirst(lc))->aggfilter);
	if (volatile_found)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view with DISTINCT inside an aggregate cannot call volatile functions in its WHERE, GROUP BY or aggregates"),
				 errdetail("The batch is read twice, to add the distinct values and to count them; a volatile function could pass a value in one and not the other."),
				 errhint("Mark the function STABLE or IMMUTABLE if it is.")));
}

/* the view's table of distinct values: after a join's buffers */
#define DISTINCT_BUFFER(b) ((b)->stream_join ? (b)->nstreams : 0)

/*
 * group_row: SQL, the groups' keys of the mrel as one row, over alias
 * (NULL: as the table of distinct values names them, _g1...), compared
 * with record "=", under which NULLs are equal, as in the unique index.
 */
static char *
group_row(Build *b, const char *alias)
{
	StringInfoData row;
	int			i;

	if (b->group_exprs == NIL)
		return "true";
	initStringInfo(&row);
	for (i = 0; i < list_length(b->group_exprs); i++)
		appendStringInfo(&row, "%s%s", i ? ", " : "ROW(",
						 alias ? psprintf("%s.%s", alias, quote_identifier(list_nth(b->group_cols, i))) :
						 psprintf("_g%d", i + 1));
	appendStringInfoChar(&row, ')');
	return row.data;
}

/*
 * create_distinct: the view's table of distinct values, one of its
 * buffers: per group (its keys _g1, ...), the values of each aggregate N
 * over DISTINCT in _vN (NULL in the rows of the others), each value once
 * per group and aggregate.  A window's go when it closes (distinct_purge).
 */
static void
create_distinct(Build *b, StringInfo create)
{
	int			slot = DISTINCT_BUFFER(b);
	const char *t;
	StringInfoData keys;
	ListCell   *lc;
	int			n = 0;

	if (b->buffers[slot] == NULL)
	{
		if (b->rebuilding)
			elog(ERROR, "ssp: continuous view \"%s\" has no table of distinct values", b->relname);
		b->buffer_names = lappend(b->buffer_names,
								  ChooseRelationName(b->relname, NULL, "distinct", b->nspid, false));
		b->buffers[slot] = quote_qualified_identifier(get_namespace_name(b->nspid),
													  llast(b->buffer_names));
	}
	t = b->buffers[slot];
	if (list_length(b->group_exprs) >= INDEX_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a continuous view with DISTINCT inside an aggregate can have at most %d group keys",
						INDEX_MAX_KEYS - 1),
				 errdetail("Its distinct values are indexed on the group keys and the value.")));
	initStringInfo(&keys);
	appendStringInfo(create, ";\nCREATE TABLE %s (", t);
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);

		n++;
		/* as the batch's groups name it: "=" of the rows then uses the same collation */
		appendStringInfo(create, "_g%d %s, ", n, ssp_column_type_sql(e, false));
		appendStringInfo(&keys, "_g%d, ", n);
	}
	n = 0;
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);

		n++;
		if (p->distinct_arg)
			appendStringInfo(create, "_v%d %s, ", n, p->distinct_type);
	}
	create->data[create->len -= 2] = '\0';	/* the last ", " */
	appendStringInfoChar(create, ')');
	n = 0;
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);

		n++;
		if (p->distinct_arg)
			appendStringInfo(create, ";\nCREATE UNIQUE INDEX ON %s (%s_v%d) NULLS NOT DISTINCT WHERE _v%d IS DISTINCT FROM NULL",
							 t, keys.data, n, n);
	}
	if (b->window >= 0)
		appendStringInfo(create, ";\nCREATE INDEX ON %s (_g%d)", t, b->window + 1);
}

/*
 * distinct_cte: the CTE _ssp_dn, which adds to the table of distinct
 * values those of the batch's rows that pass where (" WHERE ...", or "")
 * and cond (NULL: none), each aggregate's FILTER and are not NULL, and
 * returns the ones new to their group: _r, the group's keys as a row, and
 * the values.  In key order where parallel workers share the table: two
 * that add the same values then wait for each other in one order, never
 * in a cycle.
 */
static char *
distinct_cte(Build *b, const char *where, const char *cond)
{
	StringInfoData sql;
	StringInfoData keys;
	StringInfoData cols;
	StringInfoData ret;
	ListCell   *lc;
	int			n = 0;
	int			branches = 0;
	int			ncols = list_length(b->group_exprs);

	initStringInfo(&keys);
	initStringInfo(&cols);
	initStringInfo(&ret);
	foreach(lc, b->group_exprs)
	{
		appendStringInfo(&keys, "%s, ", n == b->window ? b->window_start : ssp_deparse(b, lfirst(lc)));
		appendStringInfo(&cols, "_g%d, ", ++n);
	}
	n = 0;
	foreach(lc, b->plans)
		if (((AggPlan *) lfirst(lc))->distinct_arg)
		{
			appendStringInfo(&cols, "_v%d, ", ++n);
			appendStringInfo(&ret, ", _v%d", n);
			ncols++;
		}
		else
			n++;
	cols.data[cols.len -= 2] = '\0';
	initStringInfo(&sql);
	appendStringInfo(&sql, "_ssp_dn AS (INSERT INTO %s (%s) ", b->buffers[DISTINCT_BUFFER(b)], cols.data);
	n = 0;
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		ListCell   *lc2;
		const char *sep = where[0] ? " AND" : " WHERE";

		n++;
		if (!p->distinct_arg)
			continue;
		appendStringInfo(&sql, "%sSELECT DISTINCT %s", branches++ ? " UNION ALL " : "", keys.data);
		foreach(lc2, b->plans)
		{
			AggPlan    *p2 = lfirst(lc2);

			if (p2 == p)
				appendStringInfo(&sql, "%s, ", p->distinct_arg);
			else if (p2->distinct_arg)
				appendStringInfo(&sql, "%s, ", p2->distinct_null);
		}
		sql.data[sql.len -= 2] = '\0';
		appendStringInfo(&sql, " FROM %s%s%s%s (%s) IS DISTINCT FROM NULL", b->from,
						 b->window >= 0 ? b->window_from : "", where, sep, p->distinct_arg);
		if (p->distinct_filter)
			appendStringInfo(&sql, " AND (%s) IS TRUE", p->distinct_filter);
		if (cond)
			appendStringInfo(&sql, " AND %s", cond);
	}
	if (b->opts->parallelism > 1)
	{
		appendStringInfoString(&sql, " ORDER BY ");
		for (n = 1; n <= ncols; n++)
			appendStringInfo(&sql, "%s%d", n > 1 ? ", " : "", n);
	}
	appendStringInfo(&sql, " ON CONFLICT DO NOTHING RETURNING %s AS _r%s) ", group_row(b, NULL), ret.data);
	return sql.data;
}

/*
 * grouped_sql: SELECT the batch's groups as the mrel's columns, from rest
 * (FROM ... GROUP BY ...); over DISTINCT values, with the states of those
 * aggregates taken over the values _ssp_dn added to each group.
 */
static char *
grouped_sql(Build *b, MrelCols *m, const char *rest)
{
	if (m->dstates.len == 0)
		return psprintf("SELECT %s FROM %s", m->sel.data, rest);
	return psprintf("SELECT %s FROM (SELECT %s FROM %s) _ssp_g (%s) "
					"LEFT JOIN (SELECT _ssp_n._r, true AS _ssp_found%s FROM _ssp_dn _ssp_n GROUP BY _ssp_n._r) _ssp_d "
					"ON %s OPERATOR(pg_catalog.=) _ssp_d._r",
					m->outer.data, m->sel.data, rest, m->cols.data, m->dstates.data,
					group_row(b, "_ssp_g"));
}

/*
 * null_test: the test of a key of type typid for a null, or (is_null
 * false) for none: of the value itself.  A composite's IS NULL asks
 * whether all its fields are null, and IS NOT NULL whether none is, so a
 * key of one with only some passed neither test, and its group was lost;
 * its "=" (record_eq) takes two null fields for equal, as its index does.
 */
static const char *
null_test(Oid typid, bool is_null)
{
	if (type_is_rowtype(typid))
		return is_null ? "IS NOT DISTINCT FROM NULL" : "IS DISTINCT FROM NULL";
	return is_null ? "IS NULL" : "IS NOT NULL";
}

/*
 * merge_groups: the apply statement of an aggregating view over a stream,
 * a MERGE of the batch's groups into the mrel.  A MERGE joins the groups
 * with the mrel as the planner sees fit: a hash join over the whole table
 * when a batch touches much of it, as in a catch-up, or an index probe
 * per group for a few groups.  INSERT ... ON CONFLICT probes the unique
 * index before it inserts, group by group, which cost twice as much in a
 * catch-up (only the worker writes the mrel, so MERGE's inserts never
 * race).  The join's "=" cannot match a group with a null key, whereas the
 * unique index treats nulls as equal, so such groups are left to an
 * INSERT ... ON CONFLICT of their own, in the MERGE's WITH.
 */
static void
merge_groups(Build *b, const char *mrel, MrelCols *m, const char *where, const char *group,
			 const char *set, StringInfo apply)
{
	StringInfoData on;
	StringInfoData notnull;
	StringInfoData isnull;
	StringInfoData nullcol;
	const char *grouped;
	const char *merge;
	ListCell   *lc;
	ListCell   *e;
	Oid			typid;

	initStringInfo(&on);
	initStringInfo(&notnull);
	initStringInfo(&isnull);
	initStringInfo(&nullcol);
	forboth(lc, m->keycols, e, m->nulltests)
	{
		const char *c = lfirst(lc);

		appendStringInfo(&on, "%sm.%s %s excluded.%s", on.len ? " AND " : "", c,
						 (char *) list_nth(m->keyops, foreach_current_index(lc)), c);
		if (lfirst(e) == NULL)
			continue;
		typid = list_nth_oid(m->keytypes, foreach_current_index(lc));
		appendStringInfo(&notnull, "%sexcluded.%s %s", notnull.len ? " AND " : "", c,
						 null_test(typid, false));
		appendStringInfo(&isnull, "%s(%s) %s", isnull.len ? " OR " : "", (char *) lfirst(e),
						 null_test(typid, true));
		appendStringInfo(&nullcol, "%s_ssp_g.%s %s", nullcol.len ? " OR " : "", c,
						 null_test(typid, true));
	}

	grouped = grouped_sql(b, m, psprintf("%s%s%s%s", b->from, b->window >= 0 ? b->window_from : "",
										 where, group));
	merge = psprintf("ON %s WHEN MATCHED THEN %s WHEN NOT MATCHED%s%s THEN INSERT (%s) VALUES (%s)",
					 on.data, set[0] ? psprintf("UPDATE SET %s", set) : "DO NOTHING",
					 notnull.len ? " AND " : "", notnull.data, m->cols.data, m->values.data);

	/*
	 * Keys that may be null: the groups once, materialized, and the groups
	 * with a null key inserted by a statement of the MERGE's WITH.  Over the
	 * batch again, in a statement of their own, their test cost a tenth of
	 * the MERGE where a key is an expression (date_trunc('minute', ts)),
	 * which the batch's scan cannot know never null.  The two write
	 * disjoint rows (a null key never matches the MERGE's join).
	 */
	if (isnull.len > 0 && m->dstates.len == 0)
	{
		appendStringInfo(apply, "WITH _ssp_g (%s) AS MATERIALIZED (%s), "
						 "_ssp_gn AS (INSERT INTO %s AS m (%s) SELECT * FROM _ssp_g WHERE %s "
						 "ON CONFLICT (%s) DO %s) "
						 "MERGE INTO %s AS m USING _ssp_g AS excluded %s",
						 m->cols.data, grouped, mrel, m->cols.data, nullcol.data, m->keys.data,
						 set[0] ? psprintf("UPDATE SET %s", set) : "NOTHING", mrel, merge);
		return;
	}

	/* over DISTINCT values: those of the groups the statement merges */
	if (m->dstates.len > 0)
		appendStringInfo(apply, "WITH %s",
						 distinct_cte(b, where, isnull.len ? psprintf("NOT (%s)", isnull.data) : NULL));
	appendStringInfo(apply, "MERGE INTO %s AS m USING (%s) AS excluded (%s) %s",
					 mrel, grouped, m->cols.data, merge);
	if (isnull.len > 0)
	{
		appendStringInfoString(apply, ";\n");
		if (m->dstates.len > 0)
			appendStringInfo(apply, "WITH %s", distinct_cte(b, where, psprintf("(%s)", isnull.data)));
		appendStringInfo(apply, "INSERT INTO %s AS m (%s) %s ON CONFLICT (%s) DO %s",
						 mrel, m->cols.data,
						 grouped_sql(b, m, psprintf("%s%s%s %s (%s)%s", b->from,
													b->window >= 0 ? b->window_from : "",
													where, where[0] ? "AND" : "WHERE", isnull.data, group)),
						 m->keys.data, set[0] ? psprintf("UPDATE SET %s", set) : "NOTHING");
	}
}

/*
 * differs_fn: may function fn give two statements of one process a
 * different result over the same batch?  A volatile function may; so may
 * a stable one of the user's (it may read a table, and two views see
 * it in snapshots of their own), and a stable one of the transaction: its
 * time, its statement's, its id, its snapshot (the views of a batch
 * commit in transactions of their own).  Postgres's and ssp's other
 * stable functions depend on the process's settings (the time zone) and
 * its user, which the views that share a reduction share.
 */
static bool
differs_fn(Oid fn, void *context)
{
	Oid			ssp_nsp = *(Oid *) context;

	switch (func_volatile(fn))
	{
		case PROVOLATILE_IMMUTABLE:
			return false;
		case PROVOLATILE_STABLE:
			switch (fn)
			{
				case F_NOW:
				case F_TRANSACTION_TIMESTAMP:
				case F_STATEMENT_TIMESTAMP:
				case F_AGE_TIMESTAMP:	/* age(t): from the transaction's day */
				case F_AGE_TIMESTAMPTZ:
				case F_TXID_CURRENT:
				case F_TXID_CURRENT_IF_ASSIGNED:
				case F_TXID_CURRENT_SNAPSHOT:
				case F_PG_CURRENT_XACT_ID:
				case F_PG_CURRENT_XACT_ID_IF_ASSIGNED:
				case F_PG_CURRENT_SNAPSHOT:
					return true;
				default:
					return fn >= FirstGenbkiObjectId && get_func_namespace(fn) != ssp_nsp;
			}
		default:
			return true;
	}
}

/*
 * differs_agg: does an aggregate's work differ as differs_fn says?  An
 * aggregate's own entry in pg_proc is always immutable; the functions
 * that do its work say what it is.
 */
static bool
differs_agg(Oid aggfnoid, void *context)
{
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	Form_pg_aggregate agg;
	Oid			fns[5];
	bool		differs = false;
	int			i;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	fns[0] = agg->aggtransfn;
	fns[1] = agg->aggfinalfn;
	fns[2] = agg->aggcombinefn;
	fns[3] = agg->aggserialfn;
	fns[4] = agg->aggdeserialfn;
	ReleaseSysCache(tup);
	for (i = 0; i < lengthof(fns) && !differs; i++)
		differs = OidIsValid(fns[i]) && differs_fn(fns[i], context);
	return differs;
}

/* differs_walker: does node hold what differs_fn says, or a subquery? */
static bool
differs_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, SQLValueFunction) || IsA(node, NextValueExpr) || IsA(node, SubLink) ||
		IsA(node, Query))
		return true;
	if (IsA(node, Aggref) && differs_agg(((Aggref *) node)->aggfnoid, context))
		return true;
	if (check_functions_in_node(node, differs_fn, context))
		return true;
	return expression_tree_walker(node, differs_walker, context);
}

/*
 * share_groups: b->share, for a view whose groups of a batch other views
 * may reduce alike (SspShare): one that reads the stream alone, over no
 * DISTINCT values, with nothing in its groups that may differ from one
 * statement to the next (a mutable function, the run's number $2, a
 * sliding range's now()).  The view's statement over the shared groups
 * does what merge_groups' does over the batch: the groups are the same
 * rows, named otherwise.
 */
static void
share_groups(Build *b, const char *mrel, MrelCols *m, const char *where, const char *group,
			 const char *set)
{
	Query	   *q = b->query;
	SspShare   *share;
	StringInfoData keys;
	StringInfoData sel;
	StringInfoData on;
	StringInfoData notnull;
	StringInfoData isnull;
	ListCell   *lc;
	ListCell   *e;
	Oid			typid;
	int			nkeys = list_length(m->keycols);
	int			i = 0;
	Oid			ssp_nsp = get_namespace_oid("ssp", false);

	if (m->dstates.len > 0 || b->step_expr || b->stream_join || list_length(q->rtable) != 1 ||
		differs_walker((Node *) q->targetList, &ssp_nsp) ||
		differs_walker(q->jointree->quals, &ssp_nsp))
		return;
	share = palloc0(sizeof(SspShare));
	initStringInfo(&keys);
	initStringInfo(&sel);
	foreach(lc, m->exprs)
	{
		const char *expr = lfirst(lc);
		char	   *col;

		if (strstr(expr, "$2"))
			return;
		if (i < nkeys)
		{
			col = psprintf("_ssp_k%d", i + 1);
			appendStringInfo(&keys, "%s%s AS %s", i ? ", " : "", expr, col);
		}
		else
		{
			/* named after the expression: views that share it share it */
			col = psprintf("_ssp_%016llx",
						   (unsigned long long) hash_bytes_extended((const unsigned char *) expr,
																	strlen(expr), 0));
			share->cols = lappend(share->cols, col);
			share->exprs = lappend(share->exprs, (char *) expr);
		}
		appendStringInfo(&sel, "%s%s", i ? ", " : "", col);
		i++;
	}
	share->keys = keys.data;
	share->rest = psprintf("FROM %s%s%s%s", b->from, b->window >= 0 ? b->window_from : "", where, group);
	if (strstr(share->rest, "$2"))
		return;

	/* merge_groups' statements, over the groups */
	initStringInfo(&on);
	initStringInfo(&notnull);
	initStringInfo(&isnull);
	i = 0;
	forboth(lc, m->keycols, e, m->nulltests)
	{
		const char *c = lfirst(lc);

		i++;
		appendStringInfo(&on, "%sm.%s %s excluded.%s", on.len ? " AND " : "", c,
						 (char *) list_nth(m->keyops, foreach_current_index(lc)), c);
		if (lfirst(e) == NULL)
			continue;
		typid = list_nth_oid(m->keytypes, foreach_current_index(lc));
		appendStringInfo(&notnull, "%sexcluded.%s %s", notnull.len ? " AND " : "", c,
						 null_test(typid, false));
		appendStringInfo(&isnull, "%s_ssp_k%d %s", isnull.len ? " OR " : "", i,
						 null_test(typid, true));
	}
	share->apply_sql = psprintf("MERGE INTO %s AS m USING (SELECT %s FROM %s) AS excluded (%s) ON %s "
								"WHEN MATCHED THEN %s WHEN NOT MATCHED%s%s THEN INSERT (%s) VALUES (%s)",
								mrel, sel.data, SSP_GROUPS_RELATION, m->cols.data, on.data,
								set[0] ? psprintf("UPDATE SET %s", set) : "DO NOTHING",
								notnull.len ? " AND " : "", notnull.data, m->cols.data, m->values.data);
	if (isnull.len > 0)
		share->apply_sql = psprintf("%s;\nINSERT INTO %s AS m (%s) SELECT %s FROM %s WHERE %s ON CONFLICT (%s) DO %s",
									share->apply_sql, mrel, m->cols.data, sel.data, SSP_GROUPS_RELATION,
									isnull.data, m->keys.data,
									set[0] ? psprintf("UPDATE SET %s", set) : "NOTHING");
	b->share = share;
}

/* name_taken: is name one of the strings in taken? */
static bool
name_taken(List *taken, const char *name)
{
	ListCell   *lc;

	foreach(lc, taken)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * name_keys: the mrel's column of each group key: named after the
 * select-list entry that is the key, unless that name is taken by an
 * earlier key or by a column of the view's own (the states _aN..., and
 * _g0, _w, _step, _session_end, _ssp_rows, _ssp_xact, _ssp_run), then
 * _gN, or _gN_M.  Called once the aggregates are planned.
 */
static void
name_keys(Build *b)
{
	static const char *const own[] = {"_g0", "_w", "_step", "_session_end", "_ssp_rows",
	"_ssp_xact", "_ssp_run", NULL};
	List	   *taken = NIL;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, b->plans)
		taken = list_concat(taken, list_copy(((AggPlan *) lfirst(lc))->cols));
	for (i = 0; own[i]; i++)
		taken = lappend(taken, (char *) own[i]);
	i = 0;
	foreach(lc, b->group_cols)
	{
		char	   *name = lfirst(lc);
		int			m = 0;

		i++;
		while (name_taken(taken, name))
			name = m++ ? psprintf("_g%d_%d", i, m - 1) : psprintf("_g%d", i);
		lfirst(lc) = name;
		taken = lappend(taken, name);
	}
}

/*
 * build_changelog: an aggregating view over a changelog, whose rows are
 * the latest version of each key.  What each key's version put into the
 * aggregates is kept in a table of the view (NAME_versions, a "buffer":
 * the key, the group it went to, each aggregate's input, as computed when
 * it came, joined tables and WHERE included).  A batch, in one statement:
 * takes the latest message of each key in it; deletes the keys' kept
 * versions (they leave the aggregates, with sign -1); keeps the new ones
 * that are not deletes and pass the WHERE (they enter, +1); and merges
 * the signed sums into the groups (plan_retracting), deleting a group
 * that has no row left (_ssp_rows, the rows in it).
 */
static void
build_changelog(Build *b, List *names, const char *mrel, const char *view,
				StringInfo create, StringInfo viewsql, StringInfo apply)
{
	Query	   *q = b->query;
	SspStream  *s = b->stream;
	MrelCols	m;
	StringInfoData kdefs,
				kcols,
				ksel,
				match,
				sdefs,
				ssel,
				group,
				set;
	StringInfoData recompute,
				recomputed,
				gmatch;
	ListCell   *lc;
	int			i;

	ssp_find_window(s, ssp_stream_rtindex(b), b->group_exprs, &b->spec);
	if (b->spec.index >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a window over changelog \"%s\" is not supported", s->relname),
				 errdetail("A key's version counts until the next one replaces it, whatever its time.")));
	ssp_collect_aggs((Node *) q->targetList, b);
	ssp_collect_aggs(q->havingQual, b);
	name_keys(b);

	/* the table of versions, named as view.c names the view's table */
	if (b->buffers[0] == NULL && b->rebuilding)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stream \"%s\" became a changelog after continuous view %s was created",
						s->relname, view),
				 errdetail("The view's aggregates were kept for a log of rows, not for versions of keys."),
				 errhint("Set the stream's options back, or create the view again.")));
	if (b->buffers[0] == NULL)
	{
		b->buffer_names = list_make1(ChooseRelationName(b->relname, NULL, "versions", b->nspid, false));
		b->buffers[0] = quote_qualified_identifier(get_namespace_name(b->nspid), linitial(b->buffer_names));
	}
	initStringInfo(&kdefs);
	initStringInfo(&kcols);
	initStringInfo(&ksel);
	initStringInfo(&match);
	initStringInfo(&sdefs);
	initStringInfo(&ssel);
	for (i = 0; i < s->ncolumns; i++)
	{
		SspColumn  *col = &s->columns[i];
		char	   *k;

		if (col->source != SSP_SRC_KEY && col->source != SSP_SRC_RAWKEY)
			continue;
		k = psprintf("_k%d", col->attnum);
		appendStringInfo(&kdefs, "%s %s NOT NULL, ", k, format_type_with_typemod(col->typid, col->typmod));
		appendStringInfo(&kcols, "%s%s", kcols.len ? ", " : "", k);
		appendStringInfo(&ksel, "%sb.%s", ksel.len ? ", " : "", quote_identifier(col->name));
		appendStringInfo(&match, "%sv.%s %s b.%s", match.len ? " AND " : "", k, eq_operator(col->typid),
						 quote_identifier(col->name));
	}
	i = 0;
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);

		i++;
		appendStringInfo(&sdefs, "_g%d %s, ", i, format_type_with_typemod(exprType(e), exprTypmod(e)));
		appendStringInfo(&ssel, ", %s", ssp_deparse(b, e));
	}
	i = 0;
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		Aggref	   *agg = list_nth(b->aggs, i++);

		if (p->input == NULL)
			continue;
		appendStringInfo(&sdefs, "_i%d %s, ", i,
						 agg->aggfilter && !agg->args ? "integer" :
						 format_type_with_typemod(linitial_oid(agg->aggargtypes), -1));
		appendStringInfo(&ssel, ", %s", p->input);
	}
	appendStringInfoString(&kdefs, sdefs.data);
	kdefs.data[kdefs.len -= 2] = '\0';	/* the last ", " */
	appendStringInfo(create, "CREATE TABLE %s (%s);\nCREATE INDEX ON %s (%s);\n",
					 b->buffers[0], kdefs.data, b->buffers[0], kcols.data);

	/*
	 * min and max, computed again for the groups the batch touched: each
	 * from an index on the group and the aggregate's input
	 */
	initStringInfo(&recompute);
	initStringInfo(&recomputed);
	initStringInfo(&gmatch);
	i = 0;
	foreach(lc, b->group_cols)
	{
		const char *g = quote_identifier(lfirst(lc));
		const char *isnull = null_test(exprType(list_nth(b->group_exprs, i)), true);

		i++;
		appendStringInfo(&gmatch, " AND (v._g%d = m.%s OR (v._g%d %s AND m.%s %s))",
						 i, g, i, isnull, g, isnull);
	}
	i = 0;
	foreach(lc, b->plans)
	{
		AggPlan    *p = lfirst(lc);
		int			g;

		i++;
		if (p->recompute == NULL)
			continue;
		appendStringInfo(&recomputed, "%s%s", recomputed.len ? ", " : "", (char *) linitial(p->cols));
		appendStringInfo(&recompute, "%s%s", recompute.len ? ", " : "", p->recompute);
		appendStringInfo(create, "CREATE INDEX ON %s (", b->buffers[0]);
		for (g = 1; g <= list_length(b->group_exprs); g++)
			appendStringInfo(create, "_g%d, ", g);
		appendStringInfo(create, "_i%d);\n", i);
	}
	if (recompute.len > 0 && b->opts->output_topic)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("min and max over changelog \"%s\" cannot be published with ssp.output_topic", s->relname),
				 errdetail("They are computed again after the batch's other aggregates, which would publish each group twice.")));

	/* the view's table: its groups, the states, and the rows in each */
	init_mrel_cols(&m, create);
	initStringInfo(&group);
	initStringInfo(&set);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	i = 0;
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);

		i++;
		add_key(&m, quote_identifier(list_nth(b->group_cols, i - 1)), exprType(e),
				format_type_with_typemod(exprType(e), exprTypmod(e)), psprintf("d._g%d", i), "");
		appendStringInfo(&group, "%s%d", i > 1 ? ", " : " GROUP BY ", i);
	}
	if (b->group_exprs == NIL)
		add_key(&m, "_g0", BOOLOID, "boolean NOT NULL DEFAULT true", "true", NULL);
	add_states(b, &m, &set);
	if (set.len > 0)
		appendStringInfoString(&set, ", ");
	add_column(&m, "_ssp_rows", "bigint NOT NULL", "pg_catalog.sum(d._sign)");
	/* which groups this run touched: those whose min and max to compute again */
	if (recompute.len > 0)
	{
		add_column(&m, "_ssp_xact", "xid8", "pg_catalog.pg_current_xact_id()");
		add_column(&m, "_ssp_run", "integer", "$2");
		appendStringInfoString(&set, "_ssp_xact = excluded._ssp_xact, _ssp_run = excluded._ssp_run, ");
	}
	appendStringInfo(create, ") WITH (fillfactor = 50);\nCREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT;\n"
					 "CREATE INDEX ON %s (_ssp_rows) WHERE _ssp_rows = 0",
					 mrel, m.keys.data, mrel);
	b->mrel_indexed = true;

	appendStringInfo(apply,
					 "WITH _ssp_latest AS (SELECT DISTINCT ON (%s) b.* FROM ssp_batch b "
					 "ORDER BY %s, b._ssp_partition DESC, b._ssp_offset DESC), "
					 "_ssp_old AS (DELETE FROM %s v USING _ssp_latest b WHERE %s RETURNING v.*), "
					 "_ssp_new AS (INSERT INTO %s SELECT %s%s FROM %s WHERE NOT b._ssp_tombstone AND (%s) RETURNING *), "
					 "_ssp_d AS (SELECT -1 AS _sign, * FROM _ssp_old UNION ALL SELECT 1, * FROM _ssp_new) "
					 "INSERT INTO %s AS m (%s) SELECT %s FROM _ssp_d d%s HAVING pg_catalog.count(*) > 0 "
					 "ON CONFLICT (%s) DO UPDATE SET %s_ssp_rows = m._ssp_rows + excluded._ssp_rows",
					 ksel.data, ksel.data, b->buffers[0], match.data,
					 b->buffers[0], ksel.data, ssel.data, b->from,
					 q->jointree->quals ? ssp_deparse(b, q->jointree->quals) : "true",
					 mrel, m.cols.data, m.sel.data, group.data, m.keys.data, set.data);
	if (recompute.len > 0)
		appendStringInfo(apply, ";\nUPDATE %s m SET (%s) = (SELECT %s FROM %s v WHERE true%s) "
						 "WHERE m._ssp_xact OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id() AND m._ssp_run = $2",
						 mrel, recomputed.data, recompute.data, b->buffers[0], gmatch.data);
	/* a group with no row left goes (the one group of a view without GROUP BY stays) */
	if (b->group_exprs != NIL)
	{
		appendStringInfo(apply, ";\nDELETE FROM %s m WHERE m._ssp_rows = 0", mrel);
		b->empty_groups_go = true;
	}
	aggregating_view(b, names, mrel, view, viewsql);
	if (b->opts->output_topic)
		build_outbox(b, names, mrel, create);
}

/*
 * build_aggregating: the mrel, view and apply SQL of a view with GROUP BY
 * or aggregates.
 */
void
ssp_build_aggregating(Build *b, List *names, const char *mrel, const char *view,
				  StringInfo create, StringInfo viewsql, StringInfo apply)
{
	Query	   *q = b->query;
	ListCell   *lc;
	MrelCols	m;
	StringInfoData set;
	int			i = 0;

	/* group keys: named after the select-list entry that is the key, if any */
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);
		char	   *name = psprintf("_g%d", ++i);

		b->group_exprs = lappend(b->group_exprs, tle->expr);
		if (!tle->resjunk && tle->resname)
			name = tle->resname;
		else
		{
			int			m = 0;

			/*
			 * a key the view does not show: named apart from the view's
			 * columns, as the JSON of its changes holds both (the key of a
			 * change, and of a delete its value, are the keys')
			 */
			while (name_taken(names, name))
				name = psprintf("_g%d_%d", i, ++m);
		}
		b->group_cols = lappend(b->group_cols, name);
	}
	if (b->stream->changelog)
	{
		build_changelog(b, names, mrel, view, create, viewsql, apply);
		return;
	}
	ssp_collect_aggs((Node *) q->targetList, b);
	ssp_collect_aggs(q->havingQual, b);
	name_keys(b);
	if (b->rebuilding && b->buffers[0] && !b->stream_join && !has_distinct(b))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stream \"%s\" is no longer a changelog, as it was when continuous view %s was created",
						b->stream->relname, view),
				 errdetail("The view's aggregates were kept for versions of keys, not for a log of rows."),
				 errhint("Set the stream's options back, or create the view again.")));
	find_window(b, mrel);
	if (b->opts->sliding)
		find_sliding(b, mrel);
	foreach(lc, b->plans)
		if (((AggPlan *) lfirst(lc))->ordered &&
			((b->window >= 0 && b->spec.session) || b->opts->sliding || b->opts->parallelism > 1))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("array_agg, string_agg, json_agg and jsonb_agg cannot be kept with session windows, ssp.sliding or ssp.parallelism"),
					 errdetail("They keep values in arrival order; these merge states in another order.")));
	if (has_distinct(b))
		refuse_volatile_distinct(b);
	if (has_distinct(b) && ((b->window >= 0 && b->spec.session) || b->opts->sliding))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT inside an aggregate cannot be kept with session windows or ssp.sliding"),
				 errdetail("Their states are merged when sessions meet or when the view is read, and the distinct values of two states may overlap.")));
	if (b->window >= 0 && b->spec.session)
	{
		build_session(b, mrel, create, apply);
		aggregating_view(b, names, mrel, view, viewsql);
		if (b->opts->output_topic)
			build_outbox(b, names, mrel, create);
		return;
	}

	init_mrel_cols(&m, create);
	initStringInfo(&set);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	i = 0;
	foreach(lc, b->group_exprs)
	{
		Node	   *e = lfirst(lc);
		const char *expr = i == b->window ? b->window_start : ssp_deparse(b, e);

		/* a hopping window's start comes from generate_series: never null */
		add_key(&m, quote_identifier(list_nth(b->group_cols, i)), exprType(e),
				format_type_with_typemod(exprType(e), exprTypmod(e)), expr,
				i == b->window && b->spec.hop ? NULL : expr);
		i++;
	}
	if (b->step_expr)
		add_key(&m, "_step", TIMESTAMPTZOID, "timestamp with time zone", b->step_expr, b->step_expr);
	/* each parallel worker its own row per group, merged at read time */
	if (b->opts->parallelism > 1)
		add_key(&m, "_w", INT2OID, "smallint NOT NULL", "$3::smallint", NULL);
	/* one group: a constant key, so the statements have something to match */
	if (b->group_exprs == NIL)
		add_key(&m, "_g0", BOOLOID, "boolean NOT NULL DEFAULT true", "true", NULL);
	add_states(b, &m, &set);
	/*
	 * Half-empty pages: a group's new state then usually fits on its page,
	 * a HOT update that adds no index entries (catch-up 8-10% faster).
	 */
	/* led by the window's start, if any: no index of the window's own */
	b->mrel_index_keys = index_keys(&m, b->window);
	if (b->window >= 0)
		b->window_col = (char *) quote_identifier(list_nth(b->group_cols, b->window));
	appendStringInfo(create, ") WITH (fillfactor = 50);\nCREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT",
					 mrel, b->mrel_index_keys);
	b->mrel_indexed = true;
	if (m.dstates.len > 0)
		create_distinct(b, create);

	/* the apply statement: reduce the batch to its groups, merge them */
	{
		/* the view's WHERE; open windows only; steps still in range only */
		List	   *conds = NIL;
		int			ngroup = list_length(b->group_exprs) + (b->step_expr ? 1 : 0);
		StringInfoData where;
		StringInfoData group;

		if (q->jointree->quals)
			conds = lappend(conds, psprintf("(%s)", ssp_deparse(b, q->jointree->quals)));
		/*
		 * Over a join of streams, a left row without an event time (one
		 * stream's is a dead letter, batch.c) is in a tumbling window of
		 * its own, null, as in its query, which never closes.
		 */
		if (b->window_end)
		{
			char	   *open = psprintf("%s > COALESCE(%s, '-infinity')",
										closes(b, b->window_end), b->window_base);

			conds = lappend(conds, b->stream_join && !b->spec.hop ?
							psprintf("(%s OR (%s) IS NULL)", open, b->window_start) : open);
		}
		if (b->step_expr)
			conds = lappend(conds, psprintf("%s + %s::interval > pg_catalog.now() - %s::interval",
											b->step_expr, quote_literal_cstr(b->opts->step),
											quote_literal_cstr(b->opts->sliding)));
		initStringInfo(&where);
		for (i = 0; i < list_length(conds); i++)
			appendStringInfo(&where, " %s %s", i ? "AND" : "WHERE", (char *) list_nth(conds, i));
		initStringInfo(&group);
		for (i = 1; i <= ngroup; i++)
			appendStringInfo(&group, "%s%d", i > 1 ? ", " : " GROUP BY ", i);
		/* one group, whose states may all be read from _ssp_dn: still one row */
		if (ngroup == 0 && m.dstates.len > 0)
			appendStringInfoString(&group, " HAVING true");

		if (b->apply_prefix)
		{
			/*
			 * a join of streams: its pairs can be read in one statement
			 * only, after the prefix's CTEs (join.c)
			 */
			appendStringInfo(apply, "%s%s%sINSERT INTO %s AS m (%s) %s ON CONFLICT (%s) DO %s",
							 b->apply_prefix, m.dstates.len ? ", " : "",
							 m.dstates.len ? distinct_cte(b, where.data, NULL) : "",
							 mrel, m.cols.data,
							 grouped_sql(b, &m, psprintf("%s%s%s%s", b->from,
														 b->window >= 0 ? b->window_from : "",
														 where.data, group.data)),
							 m.keys.data, set.len ? psprintf("UPDATE SET %s", set.data) : "NOTHING");
		}
		else
		{
			merge_groups(b, mrel, &m, where.data, group.data, set.data, apply);
			share_groups(b, mrel, &m, where.data, group.data, set.data);
		}

		/*
		 * The distinct values of a window go when it closes.  A watermark
		 * too near the first timestamp (4714 BC) to take a window's size
		 * from is taken as that timestamp plus the size (nothing is that
		 * old): the subtraction failed every batch, and every message.
		 */
		if (m.dstates.len > 0 && b->window >= 0)
		{
			char	   *reach = psprintf("%s%s%s", b->sizesql, b->window_delay ? " + " : "",
										 b->window_delay ? b->window_delay : "");

			appendStringInfo(apply, ";\nDELETE FROM %s d WHERE d._g%d < "
							 "GREATEST(%s, '4714-11-24 00:00:00+00 BC'::timestamptz + %s) - (%s) AND %s <= %s",
							 b->buffers[DISTINCT_BUFFER(b)], b->window + 1, b->window_base, reach, reach,
							 closes(b, window_end(b, psprintf("d._g%d", b->window + 1))), b->window_base);
		}
	}

	aggregating_view(b, names, mrel, view, viewsql);
	if (b->opts->output_topic)
		build_outbox(b, names, mrel, create);
}

/*
 * build_keyed: a view without aggregates but with ssp.primary_key, kept
 * from a compacted topic: per key, the latest message of the batch (in
 * offset order) is upserted if it is a row that passes the WHERE, and
 * deletes the key if it is a tombstone (a null value) or does not pass.
 */
static void
build_keyed(Build *b, List *names, const char *mrel, StringInfo create, StringInfo apply)
{
	StringInfoData sel,
				cols,
				pk,
				pkexprs,
				match,
				set;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&sel);
	initStringInfo(&cols);
	initStringInfo(&pk);
	initStringInfo(&pkexprs);
	initStringInfo(&match);
	initStringInfo(&set);
	foreach(lc, b->opts->primary_key)
	{
		char	   *name = lfirst(lc);
		bool		found = false;
		char	   *eq = NULL;
		ListCell   *tc;
		int			j = 0;

		foreach(tc, b->query->targetList)
		{
			TargetEntry *tle = lfirst(tc);

			if (tle->resjunk)
				continue;
			if (strcmp(list_nth(names, j), name) == 0)
			{
				appendStringInfo(&pkexprs, "%s%s", pkexprs.len ? ", " : "", ssp_deparse(b, (Node *) tle->expr));
				eq = eq_operator(exprType((Node *) tle->expr));
				found = true;
			}
			j++;
		}
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("ssp.primary_key names \"%s\", which is not a column of the view", name)));
		appendStringInfo(&pk, "%s%s", pk.len ? ", " : "", quote_identifier(name));
		appendStringInfo(&match, " AND m.%s %s l.%s", quote_identifier(name), eq, quote_identifier(name));
	}
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	foreach(lc, b->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *e = (Node *) tle->expr;
		const char *col;

		if (tle->resjunk)
			continue;
		col = quote_identifier(list_nth(names, i));
		appendStringInfo(create, "%s %s, ", col, format_type_with_typemod(exprType(e), exprTypmod(e)));
		appendStringInfo(&sel, "%s AS %s, ", ssp_deparse(b, e), col);
		appendStringInfo(&cols, "%s%s", i ? ", " : "", col);
		{
			ListCell   *kc;
			bool		is_key = false;

			foreach(kc, b->opts->primary_key)
				if (strcmp(lfirst(kc), list_nth(names, i)) == 0)
					is_key = true;
			if (!is_key)
				appendStringInfo(&set, "%s%s = excluded.%s", set.len ? ", " : "", col, col);
		}
		i++;
	}
	appendStringInfo(create, "PRIMARY KEY (%s))", pk.data);
	b->mrel_indexed = true;
	appendStringInfo(apply,
					 "WITH l AS (SELECT DISTINCT ON (%s) %sNOT b._ssp_tombstone AND (%s) IS TRUE AS _ssp_keep "
					 "FROM %s ORDER BY %s, b._ssp_partition DESC, b._ssp_offset DESC), "
					 "d AS (DELETE FROM %s m USING l WHERE NOT l._ssp_keep%s) "
					 "INSERT INTO %s AS m (%s) SELECT %s FROM l WHERE l._ssp_keep ON CONFLICT (%s) DO %s",
					 pkexprs.data, sel.data,
					 b->query->jointree->quals ? ssp_deparse(b, b->query->jointree->quals) : "true",
					 b->from, pkexprs.data, mrel, match.data, mrel, cols.data, cols.data, pk.data,
					 set.len ? psprintf("UPDATE SET %s", set.data) : "NOTHING");
}

/* build_append_only: the same for a view without aggregates. */
void
ssp_build_append_only(Build *b, List *names, const char *mrel, const char *view,
				  StringInfo create, StringInfo viewsql, StringInfo apply)
{
	ListCell   *lc;
	int			i = 0;
	StringInfoData sel;
	StringInfoData cols;

	if (b->opts->primary_key)
	{
		if (b->opts->sliding)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ssp.sliding cannot be combined with ssp.primary_key")));
		build_keyed(b, names, mrel, create, apply);
		appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT * FROM %s", view, mrel);
		return;
	}
	/* sliding: each row keeps its event time's step, and shows while it is in range */
	if (b->opts->sliding)
		find_sliding(b, mrel);
	initStringInfo(&sel);
	initStringInfo(&cols);
	appendStringInfo(create, "CREATE TABLE %s (", mrel);
	foreach(lc, b->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *e = (Node *) tle->expr;

		if (tle->resjunk)
			continue;
		appendStringInfo(create, "%s%s %s", i ? ", " : "",
						 quote_identifier(list_nth(names, i)),
						 format_type_with_typemod(exprType(e), exprTypmod(e)));
		appendStringInfo(&sel, "%s%s", i ? ", " : "", ssp_deparse(b, e));
		appendStringInfo(&cols, "%sm.%s", i ? ", " : "", quote_identifier(list_nth(names, i)));
		i++;
	}
	if (b->step_expr)
	{
		appendStringInfo(create, ", _step timestamp with time zone");
		appendStringInfo(&sel, ", %s", b->step_expr);
	}
	appendStringInfoString(create, ")");
	appendStringInfo(apply, "%sINSERT INTO %s SELECT %s FROM %s",
					 b->apply_prefix ? b->apply_prefix : "", mrel, sel.data, b->from);
	if (b->query->jointree->quals)
		appendStringInfo(apply, " WHERE (%s)", ssp_deparse(b, b->query->jointree->quals));
	if (b->step_expr)
	{
		/* an event whose step has left the range is late: not kept */
		appendStringInfo(apply, " %s %s + %s::interval > pg_catalog.now() - %s::interval",
						 b->query->jointree->quals ? "AND" : "WHERE", b->step_expr,
						 quote_literal_cstr(b->opts->step), quote_literal_cstr(b->opts->sliding));
		appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT %s FROM %s m WHERE %s",
						 view, cols.data, mrel, b->in_range);
	}
	else
		appendStringInfo(viewsql, "CREATE VIEW %s AS SELECT * FROM %s", view, mrel);
}
