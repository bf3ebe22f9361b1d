/*-------------------------------------------------------------------------
 *
 * join.c
 *	  A continuous view over two streams joined on a time bound between
 *	  their event times (an interval join), inner or left.
 *
 *	  SELECT ... FROM orders o [LEFT] JOIN payments p
 *	    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + '1 day'
 *
 * Each side's rows wait in a buffer table, NAME_left and NAME_right (the
 * stream's columns, the transaction and run that added the row, and on the
 * left whether it has matched), as long as a row of the other side could
 * still match them.  They are indexed on the columns compared with = in ON
 * and the event time.  A batch, in its one transaction:
 *
 *	1. adds its rows that are not late (event time not before the
 *	   watermark) to the buffers; late ones are counted, not joined;
 *	2. for a left join, marks the left rows that now have a match;
 *	3. joins new left rows with every right row, and old left rows with new
 *	   right rows: each pair is found once, in the batch of its later row;
 *	   the pairs feed the view's own apply statement as the two streams
 *	   (whose names they keep), with the query's other tables, WHERE,
 *	   GROUP BY and aggregates as in any view;
 *	4. deletes the rows that no row of the other side can match any more,
 *	   because the bound has passed the watermark; for a left join, those
 *	   left rows that never matched are emitted with nulls on the right.
 *
 * The bound is read from the ON condition: a comparison of the two event
 * times, each plus or minus a constant interval.  Rows of the left side
 * are kept until an upper bound (right <= left + hi) has passed the
 * watermark, rows of the right until a lower bound (right >= left + lo)
 * has.  Since future rows that are not late have event times at or after
 * the watermark, a deleted row can match none of them.
 *
 * The statements of steps 1 and 2, and step 4 as data-modifying WITH
 * queries, come before the view's apply statement in apply_sql: $1 is the
 * watermark, $2 the run within the transaction (a batch with a bad
 * message runs in parts, each a subtransaction; a row is new if its
 * transaction and run are the current ones).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/timestamp.h"
#include "utils/ruleutils.h"

#include "ssp.h"
#include "stream/stream.h"
#include "compile/build.h"
#include "compile/view.h"
#include "compile/window.h"

/* One side of a bound: an event time plus a constant interval. */
typedef struct Term
{
	int			side;			/* which stream, left to right; -1: none */
	Interval   *offset;			/* NULL: none */
	bool		minus;			/* the offset is subtracted */
} Term;

/* term: an event time of the join's streams, plus or minus a constant. */
static Term
term(Build *b, Node *node)
{
	Term		t = {-1, NULL, false};

	while (IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		int			i;

		for (i = 0; i < b->nstreams; i++)
			if (v->varno == b->join_rtindex[i] && v->varlevelsup == 0 &&
				ssp_is_event_time(b->streams[i], v->varattno))
				t.side = i;
		return t;
	}
	if (IsA(node, OpExpr) && list_length(((OpExpr *) node)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) node;
		Node	   *ts = linitial(op->args);
		Node	   *iv = lsecond(op->args);

		switch (op->opfuncid)
		{
			case F_TIMESTAMPTZ_PL_INTERVAL:
			case F_TIMESTAMP_PL_INTERVAL:
			case F_TIMESTAMPTZ_MI_INTERVAL:
			case F_TIMESTAMP_MI_INTERVAL:
				break;
			case F_INTERVAL_PL_TIMESTAMPTZ:
			case F_INTERVAL_PL_TIMESTAMP:
				ts = lsecond(op->args);
				iv = linitial(op->args);
				break;
			default:
				return t;
		}
		if (!IsA(iv, Const) || ((Const *) iv)->constisnull)
			return t;
		t = term(b, ts);
		if (t.offset)
			t.side = -1;		/* one constant only */
		t.offset = DatumGetIntervalP(((Const *) iv)->constvalue);
		t.minus = op->opfuncid == F_TIMESTAMPTZ_MI_INTERVAL ||
			op->opfuncid == F_TIMESTAMP_MI_INTERVAL;
	}
	return t;
}

/* is_new: SQL, true for a buffered row that the current run added. */
static char *
is_new(const char *alias)
{
	return psprintf("%s._ssp_xact OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id() AND %s._ssp_run = $2",
					alias, alias);
}

/* term_sql: a term over base (a column, or the watermark). */
static char *
term_sql(Term *t, const char *base)
{
	if (t->offset == NULL)
		return pstrdup(base);
	return psprintf("(%s %s %s)", base, t->minus ? "-" : "+", ssp_interval_sql(t->offset));
}

/* difference_sql: the SQL interval c - a, of two terms' offsets. */
static char *
difference_sql(Term *c, Term *a)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "('0'::interval");
	if (c->offset)
		appendStringInfo(&buf, " %s %s", c->minus ? "-" : "+", ssp_interval_sql(c->offset));
	if (a->offset)
		appendStringInfo(&buf, " %s %s", a->minus ? "+" : "-", ssp_interval_sql(a->offset));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * time_comparison: if qual compares the event times of two of the join's
 * streams, each plus or minus a constant, the name of its operator, with
 * its two terms in *l and *r; else NULL.
 */
static char *
time_comparison(Build *b, Node *qual, Term *l, Term *r)
{
	OpExpr	   *op = (OpExpr *) qual;
	char	   *opname;

	if (!IsA(qual, OpExpr) || list_length(op->args) != 2 ||
		(opname = get_opname(op->opno)) == NULL)
		return NULL;
	*l = term(b, linitial(op->args));
	*r = term(b, lsecond(op->args));
	if (l->side < 0 || r->side < 0 || l->side == r->side)
		return NULL;
	return opname;
}

/*
 * find_bound: from a conjunct of the ON condition that compares the two
 * event times, what lets each side's buffered rows go: for the left side
 * an upper bound on the right's time, for the right a lower bound; and
 * the bound itself, as the right's time less the left's (join_hi, join_lo).
 */
static void
find_bound(Build *b, Node *qual, char *evref[2])
{
	char	   *opname;
	Term		l,
				r;
	bool		less;

	if ((opname = time_comparison(b, qual, &l, &r)) == NULL)
		return;
	if (strcmp(opname, "<") == 0 || strcmp(opname, "<=") == 0)
		less = true;
	else if (strcmp(opname, ">") == 0 || strcmp(opname, ">=") == 0)
		less = false;
	else
		return;
	/* write it as: right term  less-or-greater  left term */
	if (l.side == 0)
	{
		Term		x = l;

		l = r;
		r = x;
		less = !less;
	}
	/* now l is the right stream's term and r the left's */
	if (less && b->purge_left == NULL)
	{
		/* right + a <= left + c: no right row at or after $1 matches once
		 * left + c < $1 + a */
		b->purge_left = psprintf("%s < %s", term_sql(&r, evref[0]), term_sql(&l, "$1"));
		b->join_hi = difference_sql(&r, &l);
	}
	else if (!less && b->purge_right == NULL)
	{
		/* right + a >= left + c: no left row at or after $1 matches once
		 * right + a < $1 + c */
		b->purge_right = psprintf("%s < %s", term_sql(&l, evref[1]), term_sql(&r, "$1"));
		b->join_lo = difference_sql(&r, &l);
	}
}

/* conjuncts: the terms of a condition's ANDs, nested ones (BETWEEN) too. */
static List *
conjuncts(Node *qual)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (is_andclause(qual))
	{
		foreach(lc, ((BoolExpr *) qual)->args)
			result = list_concat(result, conjuncts(lfirst(lc)));
		return result;
	}
	return list_make1(qual);
}

/* event_column: the event-time column of a stream, by name. */
static const char *
event_column(SspStream *s)
{
	int			i;

	for (i = 0; i < s->ncolumns; i++)
		if (ssp_is_event_time(s, s->columns[i].attnum))
			return quote_identifier(s->columns[i].name);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a join of streams needs the event time of stream \"%s\"", s->relname),
			 errdetail("%s", ssp_event_time_detail(s)),
			 errhint("Give the stream option timestamp, or a column with OPTIONS (meta 'timestamp').")));
	return NULL;
}

/*
 * streams_only: whether node joins streams only (the range table indexes
 * of which it appends, left to right), refusing what a join of more than
 * two streams cannot keep.
 */
static bool
streams_only(Build *b, Node *node, List **rtindexes)
{
	JoinExpr   *j = (JoinExpr *) node;

	if (IsA(node, RangeTblRef))
	{
		RangeTblEntry *rte = rt_fetch(((RangeTblRef *) node)->rtindex, b->query->rtable);

		if (rte->rtekind != RTE_RELATION || !ssp_is_stream(rte->relid))
			return false;
		*rtindexes = lappend_int(*rtindexes, ((RangeTblRef *) node)->rtindex);
		return true;
	}
	if (!IsA(node, JoinExpr) || !streams_only(b, j->larg, rtindexes) ||
		!streams_only(b, j->rarg, rtindexes))
		return false;
	if (j->jointype != JOIN_INNER)
		ssp_refuse("a left, right or full join of more than two streams", "Join more than two streams with inner joins.");
	if (j->usingClause || j->isNatural || j->quals == NULL)
		ssp_refuse("a join of streams without ON", "Join streams with ON and a bound between their event times, as in ON p.ts BETWEEN o.ts AND o.ts + interval '1 day'.");
	return true;
}

/*
 * ssp_find_stream_join: the JoinExpr of the query that joins its streams,
 * which must be joined directly with each other, with ON; refuses what
 * cannot be maintained.  Sets b->join_rtindex.
 */
JoinExpr *
ssp_find_stream_join(Build *b, Node *node)
{
	JoinExpr   *j;
	JoinExpr   *found;
	List	   *rtindexes = NIL;

	if (node == NULL || !IsA(node, JoinExpr))
		return NULL;
	j = (JoinExpr *) node;
	if (b->nstreams > 2 && streams_only(b, node, &rtindexes) &&
		list_length(rtindexes) == b->nstreams)
	{
		ListCell   *lc;

		foreach(lc, rtindexes)
		{
			int			i = foreach_current_index(lc);
			int			k;

			b->join_rtindex[i] = lfirst_int(lc);
			for (k = 0; k < i; k++)
				if (rt_fetch(b->join_rtindex[k], b->query->rtable)->relid ==
					rt_fetch(b->join_rtindex[i], b->query->rtable)->relid)
					ssp_refuse("a join of a stream with itself", "Each stream of a join is read once; make a second stream over the same topic.");
		}
		return j;
	}
	if (b->nstreams == 2 && IsA(j->larg, RangeTblRef) && IsA(j->rarg, RangeTblRef))
	{
		int			l = ((RangeTblRef *) j->larg)->rtindex;
		int			r = ((RangeTblRef *) j->rarg)->rtindex;
		RangeTblEntry *lrte = rt_fetch(l, b->query->rtable);
		RangeTblEntry *rrte = rt_fetch(r, b->query->rtable);

		if (lrte->rtekind == RTE_RELATION && rrte->rtekind == RTE_RELATION &&
			ssp_is_stream(lrte->relid) && ssp_is_stream(rrte->relid))
		{
			if (j->jointype == JOIN_RIGHT)
				ssp_refuse("a right join of two streams", "Write it as a left join, with the stream that keeps its rows on the left.");
			if (j->jointype != JOIN_INNER && j->jointype != JOIN_LEFT)
				ssp_refuse("a full join of two streams", "Use an inner join, or a left join.");
			if (j->usingClause || j->isNatural || j->quals == NULL)
				ssp_refuse("a join of two streams without ON", "Join two streams with ON and a bound between their event times, as in ON p.ts BETWEEN o.ts AND o.ts + interval '1 day'.");
			if (lrte->relid == rrte->relid)
				ssp_refuse("a join of a stream with itself", "Each stream of a join is read once; make a second stream over the same topic.");
			b->join_rtindex[0] = l;
			b->join_rtindex[1] = r;
			return j;
		}
	}
	found = ssp_find_stream_join(b, j->larg);
	return found ? found : ssp_find_stream_join(b, j->rarg);
}

/*
 * buffer_columns: stream i's columns as a column list, and with types, for
 * its buffer table.  Rebuilding, only those the buffer made with the view
 * has, of the same type: a column added to the stream since, which the
 * view cannot read, stays out (the view failed at its next batch, for a
 * column its buffer did not have).
 */
static void
buffer_columns(Build *b, int i, StringInfo names, StringInfo defs)
{
	SspStream  *s = b->streams[i];
	Oid			buffer = b->rebuilding ? b->buffer_oids[i] : InvalidOid;
	int			c;

	for (c = 0; c < s->ncolumns; c++)
	{
		SspColumn  *col = &s->columns[c];

		if (OidIsValid(buffer))
		{
			AttrNumber	att = get_attnum(buffer, col->name);
			Oid			typid;
			int32		typmod;
			Oid			collid;

			if (att == InvalidAttrNumber)
				continue;
			get_atttypetypmodcoll(buffer, att, &typid, &typmod, &collid);
			if (typid != col->typid || typmod != col->typmod)
				continue;
		}
		appendStringInfo(names, "%s%s", names->len ? ", " : "", quote_identifier(col->name));
		appendStringInfo(defs, "%s %s, ", quote_identifier(col->name),
						 format_type_with_typemod(col->typid, col->typmod));
	}
}

/*
 * add_buffer: stream i's buffer table, with extra columns (into create),
 * the statement that adds the batch's rows that are not late to it, in the
 * current run (into prefix), and their late count (b->late_sql).
 */
static void
add_buffer(Build *b, int i, const char *evcol, const char *extra, StringInfo create,
		   StringInfo prefix)
{
	StringInfoData cols,
				defs;
	const char *late = psprintf("b.%s OPERATOR(pg_catalog.<) $1", evcol);

	initStringInfo(&cols);
	initStringInfo(&defs);
	buffer_columns(b, i, &cols, &defs);
	appendStringInfo(create, "CREATE TABLE %s (%s_ssp_xact xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(), "
					 "_ssp_run int NOT NULL%s);\nCREATE INDEX ON %s (_ssp_xact, _ssp_run);\n",
					 b->buffers[i], defs.data, extra, b->buffers[i]);
	appendStringInfo(prefix, "INSERT INTO %s (%s, _ssp_run) SELECT %s, $2 FROM %s b WHERE (%s) IS NOT TRUE;\n",
					 b->buffers[i], cols.data, cols.data, SSP_BATCH_RELATION(i), late);
	b->late_sql = psprintf("%s%s(SELECT pg_catalog.count(*) FROM %s b WHERE %s)",
						   b->late_sql ? b->late_sql : "SELECT ",
						   b->late_sql ? " OPERATOR(pg_catalog.+) " : "",
						   SSP_BATCH_RELATION(i), late);
}

/*
 * add_key_indexes: where new rows look up their partners, on the buffers
 * (into create): by each column compared with = to another stream's, then
 * the event time, in one index (an index on the event time alone tempts
 * the planner into ANDing bitmaps of a whole time range); or by the event
 * time if there are none.
 */
static void
add_key_indexes(Build *b, List *quals, const char *evcol[], StringInfo create)
{
	bool		keyed[SSP_MAX_STREAMS] = {false};
	ListCell   *lc;
	int			i,
				k;

	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		char	   *opname;
		int			side[2];

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
			!IsA(linitial(op->args), Var) || !IsA(lsecond(op->args), Var) ||
			(opname = get_opname(op->opno)) == NULL || strcmp(opname, "=") != 0)
			continue;
		for (i = 0; i < 2; i++)
		{
			Var		   *v = list_nth(op->args, i);

			side[i] = -1;
			for (k = 0; k < b->nstreams; k++)
				if (v->varno == b->join_rtindex[k] && v->varlevelsup == 0)
					side[i] = k;
		}
		if (side[0] < 0 || side[1] < 0 || side[0] == side[1])
			continue;
		for (i = 0; i < 2; i++)
		{
			Var		   *v = list_nth(op->args, i);

			appendStringInfo(create, "CREATE INDEX ON %s (%s, %s);\n", b->buffers[side[i]],
							 quote_identifier(get_attname(b->streams[side[i]]->relid, v->varattno, false)),
							 evcol[side[i]]);
			keyed[side[i]] = true;
		}
	}
	for (i = 0; i < b->nstreams; i++)
		if (!keyed[i])
			appendStringInfo(create, "CREATE INDEX ON %s (%s);\n", b->buffers[i], evcol[i]);
}

/* right_keeps_versions: whether a join's right buffer, made before, keeps
 * a changelog's versions (a temporal join's). */
static bool
right_keeps_versions(Build *b)
{
	Oid			relid = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(b->buffers[1])),
										 NoLock, true);

	return OidIsValid(relid) && get_attnum(relid, "_ssp_tombstone") != InvalidAttrNumber;
}

/* refers_to_walker: whether node reads a column of range table entry *rtindex. */
static bool
refers_to_walker(Node *node, int *rtindex)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno == *rtindex && ((Var *) node)->varlevelsup == 0;
	return expression_tree_walker(node, refers_to_walker, rtindex);
}

/*
 * same_key: SQL, whether column col is the same key in rows a and b: the
 * same bytes (a changelog's keys are its messages' keys), with the type's
 * own equality first, which its index on NAME_right can use.
 */
static char *
same_key(SspColumn *col, const char *a, const char *b)
{
	TypeCacheEntry *tc = lookup_type_cache(getBaseType(col->typid), TYPECACHE_EQ_OPR);
	const char *c = quote_identifier(col->name);
	char	   *eq = "";
	HeapTuple	tup;

	if (OidIsValid(tc->eq_opr) &&
		HeapTupleIsValid(tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr))))
	{
		Form_pg_operator op = (Form_pg_operator) GETSTRUCT(tup);

		eq = psprintf("%s.%s OPERATOR(%s.%s) %s.%s AND ", a, c,
					  quote_identifier(get_namespace_name(op->oprnamespace)),
					  NameStr(op->oprname), b, c);
		ReleaseSysCache(tup);
	}
	return psprintf("%sROW(%s.%s)::pg_catalog.record OPERATOR(pg_catalog.*=) ROW(%s.%s)::pg_catalog.record",
					eq, a, c, b, c);
}

/*
 * build_temporal_join: a stream joined with a changelog (streams.md), each
 * row with the version of its key current at the row's event time: the
 * changelog read as the table it describes, as of then.
 *
 *	SELECT ... FROM orders o [LEFT] JOIN rates r
 *	  ON r.currency = o.currency AND r.ts <= o.ts
 *
 * ON must compare each key column of the changelog with = to the stream,
 * and the changelog's event time with <= (or <) to the stream's: that
 * comparison says as of when.  Its other conditions then apply to the
 * version found.  A stream row waits in NAME_left until the watermark has
 * passed its time, when every version at or before it has come (but late
 * ones).  NAME_right keeps each key's versions from the watermark on, and
 * the latest one before it: all that rows still to come can be joined
 * with.  A batch, in its one transaction:
 *
 *	1. adds its stream rows that are not late to NAME_left, and every
 *	   version, deletes too, to NAME_right in log order (a version older
 *	   than the watermark is counted late, and kept for the rows after it:
 *	   rows joined already keep the version they were joined with);
 *	2. takes out of NAME_left the rows the watermark has passed, each with
 *	   the latest version of its key as of its time (by event time, then
 *	   log order), unless that is a delete or fails ON; a left join keeps a
 *	   row without one, with nulls; the pairs feed the view's apply
 *	   statement as in any join;
 *	3. deletes the versions no row can need any more, looking only at the
 *	   keys with a version the watermark has just passed (or a late one).
 *
 * A version needs its key and event time: without either, it is a dead
 * letter (a CHECK constraint of NAME_right says so).
 */
static void
build_temporal_join(Build *b, JoinExpr *j, const char *alias[2], const char *evcol[2],
					char *evref[2], StringInfo create)
{
	SspStream  *cl = b->streams[1];
	bool		left = j->jointype == JOIN_LEFT;
	List	   *quals = conjuncts(j->quals);
	const char *asof = NULL;
	const char *on = ssp_deparse(b, j->quals);
	StringInfoData match,
				keycols,
				same,
				candidate,
				candcols,
				cols,
				defs,
				prefix;
	char	   *later;
	ListCell   *lc;
	int			c,
				i;

	/* as of when: the changelog's event time before the stream's */
	foreach(lc, quals)
	{
		char	   *opname;
		Term		l,
					r;

		if ((opname = time_comparison(b, lfirst(lc), &l, &r)) == NULL || l.offset || r.offset)
			continue;
		if (l.side == 0)		/* o.ts >= r.ts is r.ts <= o.ts */
			opname = strcmp(opname, ">=") == 0 ? "<=" : strcmp(opname, ">") == 0 ? "<" : "";
		if (strcmp(opname, "<=") == 0 || strcmp(opname, "<") == 0)
			asof = opname;
	}
	if (asof == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a join of stream \"%s\" with changelog \"%s\" needs the time its versions are read as of",
						b->streams[0]->relname, cl->relname),
				 errdetail("Each row of the stream is joined with the version of its key current at its event time."),
				 errhint("Add %s <= %s to ON.  To join the latest version instead, keep the changelog in a view with ssp.primary_key and join that view.",
						 evref[1], evref[0])));

	/* a delete has no value: its time must be the message's */
	for (c = 0; c < cl->ncolumns; c++)
		if (ssp_is_event_time(cl, cl->columns[c].attnum) && cl->columns[c].source != SSP_SRC_TIMESTAMP)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the event time of changelog \"%s\" in a join with a stream must be its messages' timestamp",
							cl->relname),
					 errdetail("A delete carries no value, so column \"%s\" would have no time for it.",
							   cl->columns[c].name),
					 errhint("Read the event time from a column with OPTIONS (meta 'timestamp').")));

	/* each key column of the changelog, compared with = to the stream */
	initStringInfo(&match);
	initStringInfo(&keycols);
	initStringInfo(&same);
	initStringInfo(&candidate);
	initStringInfo(&candcols);
	for (c = 0; c < cl->ncolumns; c++)
	{
		SspColumn  *col = &cl->columns[c];
		bool		found = false;

		if (col->source != SSP_SRC_KEY && col->source != SSP_SRC_RAWKEY)
			continue;
		foreach(lc, quals)
		{
			OpExpr	   *op = lfirst(lc);
			char	   *opname;

			if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
				(opname = get_opname(op->opno)) == NULL || strcmp(opname, "=") != 0)
				continue;
			for (i = 0; i < 2; i++)
			{
				Node	   *x = list_nth(op->args, i);

				while (IsA(x, RelabelType))
					x = (Node *) ((RelabelType *) x)->arg;
				if (IsA(x, Var) && ((Var *) x)->varno == b->join_rtindex[1] &&
					((Var *) x)->varlevelsup == 0 && ((Var *) x)->varattno == col->attnum &&
					!refers_to_walker(list_nth(op->args, 1 - i), &b->join_rtindex[1]))
				{
					appendStringInfo(&match, " AND %s", ssp_deparse(b, (Node *) op));
					found = true;
				}
			}
		}
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a join with changelog \"%s\" must compare its key column \"%s\" with = to stream \"%s\"",
							cl->relname, col->name, b->streams[0]->relname),
					 errdetail("Each row of the stream is joined with the version of its key current at its event time."),
					 errhint("Add %s.%s = ... to ON.", alias[1], quote_identifier(col->name))));
		appendStringInfo(&keycols, "%s, ", quote_identifier(col->name));
		appendStringInfo(&candcols, "%s_ssp_c.%s", candcols.len ? ", " : "", quote_identifier(col->name));
		appendStringInfo(&same, "%s AND ", same_key(col, "_ssp_v", alias[1]));
		appendStringInfo(&candidate, " AND %s", same_key(col, "_ssp_c", alias[1]));
	}

	/* the buffers */
	initStringInfo(&prefix);
	for (i = 0; i < 2; i++)
	{
		initStringInfo(&cols);
		initStringInfo(&defs);
		buffer_columns(b, i, &cols, &defs);
		appendStringInfo(create, "CREATE TABLE %s (%s_ssp_xact xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(), "
						 "_ssp_run int NOT NULL",
						 b->buffers[i], defs.data);
		if (i == 0)
		{
			appendStringInfo(create, ");\nCREATE INDEX ON %s (%s);\n", b->buffers[0], evcol[0]);
			/* 1: the stream's rows that are not late */
			appendStringInfo(&prefix, "INSERT INTO %s (%s, _ssp_run) SELECT %s, $2 FROM %s b "
							 "WHERE (b.%s OPERATOR(pg_catalog.<) $1) IS NOT TRUE;\n",
							 b->buffers[0], cols.data, cols.data, SSP_BATCH_RELATION(0), evcol[0]);
			b->late_sql = psprintf("SELECT (SELECT pg_catalog.count(*) FROM %s b WHERE b.%s OPERATOR(pg_catalog.<) $1)",
								   SSP_BATCH_RELATION(0), evcol[0]);
			continue;
		}
		appendStringInfo(create, ", _ssp_tombstone boolean NOT NULL, "
						 "_ssp_seq bigint GENERATED ALWAYS AS IDENTITY, "
						 "_ssp_settled boolean NOT NULL DEFAULT false, "
						 "CONSTRAINT \"a version needs its key and event time\" CHECK ((%s%s) IS NOT NULL));\n"
						 "CREATE INDEX ON %s (%s%s, _ssp_seq);\n"
						 "CREATE INDEX ON %s (%s) WHERE NOT _ssp_settled;\n",
						 keycols.data, evcol[1], b->buffers[1], keycols.data, evcol[1],
						 b->buffers[1], evcol[1]);
		/* 1: every version, in log order */
		appendStringInfo(&prefix, "INSERT INTO %s (%s, _ssp_run, _ssp_tombstone) SELECT %s, $2, b._ssp_tombstone "
						 "FROM %s b ORDER BY b._ssp_partition, b._ssp_offset;\n",
						 b->buffers[1], cols.data, cols.data, SSP_BATCH_RELATION(1));
		b->late_sql = psprintf("%s OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM %s b WHERE b.%s OPERATOR(pg_catalog.<) $1)",
							   b->late_sql, SSP_BATCH_RELATION(1), evcol[1]);
	}

	/*
	 * 2 and 3: the rows the watermark has passed go (with no time, at
	 * once: no version is as of it); of each key's versions before the
	 * watermark, all but the latest go (a delete stays: a late version
	 * older than it must not bring the key back), and the latest is marked
	 * settled.  Each key then has one settled version before the
	 * watermark at most, so only keys with a version not settled yet
	 * before it (one the watermark has just passed, or a late one) can
	 * have versions to delete: those are the only ones looked at, so a
	 * batch's cost follows the versions that came, not all the keys.
	 */
	later = psprintf("EXISTS (SELECT FROM %s _ssp_v WHERE %s_ssp_v.%s OPERATOR(pg_catalog.<) $1 AND "
					 "(_ssp_v.%s, _ssp_v._ssp_seq) OPERATOR(pg_catalog.>) (%s, %s._ssp_seq))",
					 b->buffers[1], same.data, evcol[1], evcol[1], evref[1], alias[1]);
	appendStringInfo(&prefix,
					 "WITH _ssp_gone AS (DELETE FROM %s %s WHERE %s IS NULL OR %s OPERATOR(pg_catalog.<) $1 "
					 "RETURNING (%s.*)::%s AS _ssp_row), "
					 "_ssp_gone_right AS (DELETE FROM %s %s USING (SELECT DISTINCT %s FROM %s _ssp_c "
					 "WHERE NOT _ssp_c._ssp_settled AND _ssp_c.%s OPERATOR(pg_catalog.<) $1) _ssp_c "
					 "WHERE %s OPERATOR(pg_catalog.<) $1%s AND %s), "
					 "_ssp_settle AS (UPDATE %s %s SET _ssp_settled = true WHERE NOT %s._ssp_settled AND "
					 "%s OPERATOR(pg_catalog.<) $1 AND NOT %s) ",
					 b->buffers[0], alias[0], evref[0], evref[0], alias[0], b->buffers[0],
					 b->buffers[1], alias[1], candcols.data, b->buffers[1], evcol[1],
					 evref[1], candidate.data, later,
					 b->buffers[1], alias[1], alias[1], evref[1], later);
	b->apply_prefix = prefix.data;

	/* 2: each row with its version, as the two streams' rows */
	b->join_from = psprintf("(SELECT _ssp_g._ssp_row AS l, (%s.*)::%s AS r FROM _ssp_gone _ssp_g "
							"CROSS JOIN LATERAL (SELECT (_ssp_g._ssp_row).*) %s "
							"%sJOIN LATERAL (SELECT * FROM %s %s WHERE %s %s %s%s "
							"ORDER BY %s DESC, %s._ssp_seq DESC LIMIT 1) %s ON NOT %s._ssp_tombstone AND %s) _ssp_j "
							"CROSS JOIN LATERAL (SELECT (_ssp_j.l).*) %s CROSS JOIN LATERAL (SELECT (_ssp_j.r).*) %s",
							alias[1], b->buffers[1], alias[0],
							left ? "LEFT " : "", b->buffers[1], alias[1], evref[1], asof, evref[0], match.data,
							evref[1], alias[1], alias[1], alias[1], on,
							alias[0], alias[1]);
	b->join_hi = "'0'::interval";
	b->join_lo = "'0'::interval";
	b->temporal = true;
}

/*
 * Joins of more than two streams, inner only:
 *
 *	SELECT ... FROM orders o
 *	  JOIN payments p ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
 *	  JOIN shipments s ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '2 days'
 *
 * Each stream's rows wait in a buffer table, NAME_stream1, NAME_stream2...,
 * as in a join of two.  A batch adds its rows that are not late to them;
 * the new tuples are those with at least one row the current run added,
 * each found once, by the first stream (left to right) whose row in it is
 * new: (new o × p × s) ∪ (old o × new p × s) ∪ (old o × old p × new s).
 *
 * The bounds: each comparison of two event times in ON, each plus or
 * minus a constant, says how much later than one the other can be at
 * most (an edge of a graph of the streams, weighted by an interval).
 * Through the others, a path of edges bounds it too: shipments at most
 * three days after orders above.  A row waits while some stream's rows
 * still to come (at or after the watermark) could be in a tuple with it:
 * it goes once, for every other stream, some path from its stream to it
 * ends before the watermark.  Every stream must reach every other by
 * such a path, or its rows would wait forever.
 */

/* MultiJoin: the bounds of a join of streams, between each two. */
typedef struct MultiJoin
{
	int			n;
	char	   *edge[SSP_MAX_STREAMS][SSP_MAX_STREAMS];	/* SQL interval: [i][j],
														 * how much later than
														 * i's time j's can be;
														 * NULL: not compared */
	List	   *paths[SSP_MAX_STREAMS][SSP_MAX_STREAMS];	/* char *: the sums of
															 * the edges of each
															 * path from i to j */
} MultiJoin;

/* stream_quals: the ON conditions of a join of streams only, nested ones too. */
static List *
stream_quals(Node *node)
{
	JoinExpr   *j = (JoinExpr *) node;

	if (!IsA(node, JoinExpr))
		return NIL;
	return list_concat(list_concat(stream_quals(j->larg), stream_quals(j->rarg)),
					   conjuncts(j->quals));
}

/* find_paths: the paths from stream `from` on, not through visited ones. */
static void
find_paths(MultiJoin *mj, int origin, int from, const char *sum, bool *visited)
{
	int			k;

	for (k = 0; k < mj->n; k++)
	{
		char	   *through;

		if (visited[k] || mj->edge[from][k] == NULL)
			continue;
		through = sum ? psprintf("%s + %s", sum, mj->edge[from][k]) : mj->edge[from][k];
		mj->paths[origin][k] = lappend(mj->paths[origin][k], through);
		visited[k] = true;
		find_paths(mj, origin, k, through, visited);
		visited[k] = false;
	}
}

/* multi_bounds: the edges of the graph of streams from quals, and its paths. */
static void
multi_bounds(Build *b, List *quals, MultiJoin *mj)
{
	ListCell   *lc;
	int			i;

	memset(mj, 0, sizeof(MultiJoin));
	mj->n = b->nstreams;
	foreach(lc, quals)
	{
		char	   *opname;
		Term		l,
					r;

		if ((opname = time_comparison(b, lfirst(lc), &l, &r)) == NULL)
			continue;
		/* l + a <= r + c: l's time is at most c - a after r's (the first such) */
		if ((strcmp(opname, "<") == 0 || strcmp(opname, "<=") == 0) &&
			mj->edge[r.side][l.side] == NULL)
			mj->edge[r.side][l.side] = difference_sql(&r, &l);
		else if ((strcmp(opname, ">") == 0 || strcmp(opname, ">=") == 0) &&
				 mj->edge[l.side][r.side] == NULL)
			mj->edge[l.side][r.side] = difference_sql(&l, &r);
	}
	for (i = 0; i < mj->n; i++)
	{
		bool		visited[SSP_MAX_STREAMS] = {false};

		visited[i] = true;
		find_paths(mj, i, i, NULL, visited);
	}
}

/* bound_sql: SQL, how much later than stream i's time j's can be at most. */
static char *
bound_sql(MultiJoin *mj, int i, int j)
{
	StringInfoData buf;
	ListCell   *lc;

	if (i == j)
		return "'0'::interval";
	if (list_length(mj->paths[i][j]) == 1)
		return linitial(mj->paths[i][j]);
	initStringInfo(&buf);
	foreach(lc, mj->paths[i][j])
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "LEAST(", (char *) lfirst(lc));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* build_multi_join: as ssp_build_stream_join, for more than two streams. */
static void
build_multi_join(Build *b, JoinExpr *j, const char *alias[], const char *evcol[],
				 char *evref[], StringInfo create)
{
	List	   *quals = stream_quals((Node *) j);
	MultiJoin	mj;
	StringInfoData prefix,
				on,
				cols,
				from,
				branches,
				purge;
	ListCell   *lc;
	int			i,
				k;

	multi_bounds(b, quals, &mj);
	for (i = 0; i < b->nstreams; i++)
		for (k = 0; k < b->nstreams; k++)
			if (i != k && mj.paths[i][k] == NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("a join of streams needs a bound between the event times of each two of them, directly or through the others"),
						 errdetail("Without a bound on how much later than a row of stream \"%s\" a row of stream \"%s\" can be, rows of \"%s\" would wait for a match forever.",
								   b->streams[i]->relname, b->streams[k]->relname, b->streams[i]->relname),
						 errhint("Compare the event times in ON, as in ON %s BETWEEN %s AND %s + interval '1 day'.",
								 evref[k], evref[i], evref[i])));

	/* the buffers */
	initStringInfo(&prefix);
	for (i = 0; i < b->nstreams; i++)
		add_buffer(b, i, evcol[i], "", create, &prefix);
	add_key_indexes(b, quals, evcol, create);

	/* the new tuples, each by the first of its streams whose row is new */
	initStringInfo(&on);
	foreach(lc, quals)
		appendStringInfo(&on, "%s(%s)", on.len ? " AND " : "", ssp_deparse(b, lfirst(lc)));
	initStringInfo(&cols);
	initStringInfo(&from);
	for (i = 0; i < b->nstreams; i++)
	{
		appendStringInfo(&cols, "%s(%s.*)::%s AS s%d", i ? ", " : "", alias[i], b->buffers[i], i);
		appendStringInfo(&from, "%s%s %s", i ? ", " : "", b->buffers[i], alias[i]);
	}
	initStringInfo(&branches);
	for (i = 0; i < b->nstreams; i++)
	{
		appendStringInfo(&branches, "%sSELECT %s FROM %s WHERE %s AND %s",
						 i ? " UNION ALL " : "(", cols.data, from.data, on.data, is_new(alias[i]));
		for (k = 0; k < i; k++)
			appendStringInfo(&branches, " AND NOT (%s)", is_new(alias[k]));
	}
	appendStringInfoString(&branches, ") _ssp_j");
	for (i = 0; i < b->nstreams; i++)
		appendStringInfo(&branches, " CROSS JOIN LATERAL (SELECT (_ssp_j.s%d).*) %s", i, alias[i]);
	b->join_from = branches.data;

	/* rows that can be in no tuple with rows still to come go */
	for (i = 0; i < b->nstreams; i++)
	{
		initStringInfo(&purge);
		for (k = 0; k < b->nstreams; k++)
		{
			if (k == i)
				continue;
			appendStringInfo(&purge, " AND (");
			foreach(lc, mj.paths[i][k])
				appendStringInfo(&purge, "%s%s OPERATOR(pg_catalog.+) (%s) OPERATOR(pg_catalog.<) $1",
								 foreach_current_index(lc) ? " OR " : "", evref[i], (char *) lfirst(lc));
			appendStringInfoChar(&purge, ')');
		}
		appendStringInfo(&prefix, "%s_ssp_gone_%d AS (DELETE FROM %s %s WHERE %s IS NULL OR (true%s))",
						 i ? ", " : "WITH ", i, b->buffers[i], alias[i], evref[i], purge.data);
	}
	appendStringInfoChar(&prefix, ' ');
	b->apply_prefix = prefix.data;
	for (i = 0; i < b->nstreams; i++)
		for (k = 0; k < b->nstreams; k++)
			b->join_bound[i][k] = bound_sql(&mj, i, k);
}

/*
 * ssp_build_stream_join: the buffer tables (into create), the statements
 * that run before the view's apply statement (b->apply_prefix), the FROM
 * item that stands for the joined streams (b->join_from), and the late
 * count.  names are the deparse names of the query's relations.
 */
void
ssp_build_stream_join(Build *b, JoinExpr *j, List *names, StringInfo create)
{
	const char *alias[SSP_MAX_STREAMS];
	const char *evcol[SSP_MAX_STREAMS];
	char	   *evref[SSP_MAX_STREAMS];	/* alias.evcol */
	char	   *buf[SSP_MAX_STREAMS];
	char	   *on;
	bool		left = j->jointype == JOIN_LEFT;
	StringInfoData prefix;
	char	   *pair;
	ListCell   *lc;
	int			i;

	for (i = 0; i < b->nstreams; i++)
	{
		alias[i] = quote_identifier(list_nth(names, b->join_rtindex[i] - 1));
		if (strncmp(list_nth(names, b->join_rtindex[i] - 1), "_ssp", 4) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("names beginning with \"_ssp\" are kept for ssp's own relations in a join of streams"),
					 errhint("Give stream \"%s\" another alias.", b->streams[i]->relname)));
		evcol[i] = event_column(b->streams[i]);
		evref[i] = psprintf("%s.%s", alias[i], evcol[i]);
		/* at CREATE VIEW: named as view.c names the view's table */
		if (b->buffers[i] == NULL)
		{
			b->buffer_names = lappend(b->buffer_names,
									  ChooseRelationName(b->relname, NULL,
														 b->nstreams > 2 ? psprintf("stream%d", i + 1) :
														 i == 0 ? "left" : "right",
														 b->nspid, false));
			b->buffers[i] = quote_qualified_identifier(get_namespace_name(b->nspid),
													   llast(b->buffer_names));
		}
		buf[i] = b->buffers[i];
	}
	initStringInfo(&prefix);
	for (i = 0; i < b->nstreams; i++)
		appendStringInfo(&prefix, "%s%s", i ? ", " : "GREATEST(", evref[i]);
	appendStringInfoChar(&prefix, ')');
	b->join_time = prefix.data;
	if (b->nstreams > 2)
	{
		build_multi_join(b, j, alias, evcol, evref, create);
		return;
	}
	on = ssp_deparse(b, j->quals);
	/* a view is built for the right stream as it was at CREATE VIEW */
	if (b->rebuilding && b->streams[1]->changelog != right_keeps_versions(b))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 b->streams[1]->changelog ?
				 errmsg("stream \"%s\" became a changelog after continuous view \"%s\" was created",
						b->streams[1]->relname, b->relname) :
				 errmsg("stream \"%s\" is no longer a changelog, as it was when continuous view \"%s\" was created",
						b->streams[1]->relname, b->relname),
				 errdetail("The view joins %s.", b->streams[1]->changelog ?
						   "rows of the two streams within a bound of time" :
						   "each row with the version of its key current at its time"),
				 errhint("Set the stream's options back, or create the view again.")));
	if (b->streams[1]->changelog)
	{
		build_temporal_join(b, j, alias, evcol, evref, create);
		return;
	}
	foreach(lc, conjuncts(j->quals))
		find_bound(b, lfirst(lc), evref);
	if (b->purge_left == NULL || b->purge_right == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a join of two streams needs a bound between their event times"),
				 errdetail("Without %s bound, rows of stream \"%s\" would wait for a match forever.",
						   b->purge_left ? "a lower" : "an upper",
						   b->streams[b->purge_left ? 1 : 0]->relname),
				 errhint("Compare the two event times in ON, as in ON p.ts BETWEEN o.ts AND o.ts + interval '1 day'.")));

	/* the buffers */
	initStringInfo(&prefix);
	for (i = 0; i < 2; i++)
		add_buffer(b, i, evcol[i], i == 0 && left ? ", _ssp_matched boolean NOT NULL DEFAULT false" : "",
				   create, &prefix);
	add_key_indexes(b, conjuncts(j->quals), evcol, create);

	/* 2: left rows that found a match, new ones or old ones with a new right row */
	if (left)
		appendStringInfo(&prefix,
						 "UPDATE %s %s SET _ssp_matched = true WHERE %s AND EXISTS (SELECT FROM %s %s WHERE %s);\n"
						 "UPDATE %s %s SET _ssp_matched = true FROM %s %s WHERE %s AND NOT %s._ssp_matched AND %s;\n",
						 buf[0], alias[0], is_new(alias[0]), buf[1], alias[1], on,
						 buf[0], alias[0], buf[1], alias[1], is_new(alias[1]), alias[0], on);

	/* 4: rows that can match no more go; unmatched left rows are emitted */
	appendStringInfo(&prefix,
					 "WITH _ssp_gone AS (DELETE FROM %s %s WHERE %s IS NULL OR %s%s), "
					 "_ssp_gone_right AS (DELETE FROM %s %s WHERE %s IS NULL OR %s) ",
					 buf[0], alias[0], evref[0], b->purge_left,
					 left ? psprintf(" RETURNING (%s.*)::%s AS _ssp_row", alias[0], buf[0]) : "",
					 buf[1], alias[1], evref[1], b->purge_right);
	b->apply_prefix = prefix.data;

	/* 3: the new pairs, as the two streams' rows */
	pair = psprintf("(%s.*)::%s AS l, (%s.*)::%s AS r FROM %s %s JOIN %s %s ON %s",
					alias[0], buf[0], alias[1], buf[1], buf[0], alias[0], buf[1], alias[1], on);
	b->join_from = psprintf("(SELECT %s WHERE %s UNION ALL SELECT %s WHERE %s AND NOT (%s)%s) _ssp_j "
							"CROSS JOIN LATERAL (SELECT (_ssp_j.l).*) %s CROSS JOIN LATERAL (SELECT (_ssp_j.r).*) %s",
							pair, is_new(alias[0]), pair, is_new(alias[1]), is_new(alias[0]),
							left ? psprintf(" UNION ALL SELECT g._ssp_row, NULL::%s FROM _ssp_gone g "
											"WHERE NOT (g._ssp_row)._ssp_matched", buf[1]) : "",
							alias[0], alias[1]);
}

/*
 * multi_window_delay: ssp_join_window_delay over more than two streams.
 * A window is over the event time of some of them: one, or GREATEST of
 * several.  A new tuple has a row at or after the watermark W, of any
 * stream k; its window's time is at least W less the bound from one of
 * those streams to k: at least W less the largest of those bounds, over
 * every stream k (for k among them, 0).
 */
static char *
multi_window_delay(Build *b, Node *ts)
{
	bool		over[SSP_MAX_STREAMS] = {false};
	List	   *args;
	StringInfoData delay;
	ListCell   *lc;
	int			i,
				k;

	while (IsA(ts, RelabelType))
		ts = (Node *) ((RelabelType *) ts)->arg;
	args = IsA(ts, MinMaxExpr) && ((MinMaxExpr *) ts)->op == IS_GREATEST ?
		((MinMaxExpr *) ts)->args : list_make1(ts);
	foreach(lc, args)
	{
		Node	   *arg = lfirst(lc);
		Term		t;

		while (IsA(arg, RelabelType))
			arg = (Node *) ((RelabelType *) arg)->arg;
		t = IsA(arg, Var) ? term(b, arg) : (Term) {-1, NULL, false};
		if (t.side < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a window over a join of streams must be over the event time of one of them, or the latest of several"),
					 errhint("Window on the event time of a stream, or on %s.", b->join_time)));
		over[t.side] = true;
	}
	initStringInfo(&delay);
	for (k = 0; k < b->nstreams; k++)
	{
		StringInfoData least;

		if (over[k])
			continue;
		initStringInfo(&least);
		for (i = 0; i < b->nstreams; i++)
			if (over[i])
				appendStringInfo(&least, "%s%s", least.len ? ", " : "", b->join_bound[i][k]);
		appendStringInfo(&delay, ", LEAST(%s)", least.data);
	}
	if (delay.len == 0)
		return NULL;
	return psprintf("GREATEST('0'::interval%s)", delay.data);
}

/*
 * ssp_join_window_delay: for a window over the join on ts, how long after
 * the watermark passes a window's end the window closes, as SQL (NULL: at
 * once).  ts must be the event time of either stream, or GREATEST of both.
 *
 * Rows of either stream are not late from the watermark W on, but a pair
 * may hold an older row still buffered: with the right's time within
 * [lo, hi] of the left's, a new pair's left time is at least W - hi, its
 * right time at least W + lo, and the later of the two at least W.  A left
 * row emitted unmatched once the watermark passed its time plus hi is that
 * late too, and is emitted in the batch after that watermark was computed:
 * so a left join's windows close by the watermark its last batch began
 * with, less hi (viewsql.c, window_base).
 */
char *
ssp_join_window_delay(Build *b, Node *ts)
{
	bool		left = SSP_JOIN_EMITS_LATE(b);
	int			side = -1;

	if (b->nstreams > 2)
		return multi_window_delay(b, ts);
	while (IsA(ts, RelabelType))
		ts = (Node *) ((RelabelType *) ts)->arg;
	if (IsA(ts, Var))
		side = term(b, ts).side;
	else if (IsA(ts, MinMaxExpr) && ((MinMaxExpr *) ts)->op == IS_GREATEST &&
			 list_length(((MinMaxExpr *) ts)->args) == 2)
	{
		Term		t0 = term(b, linitial(((MinMaxExpr *) ts)->args));
		Term		t1 = term(b, lsecond(((MinMaxExpr *) ts)->args));

		if (t0.side >= 0 && t1.side >= 0 && t0.side != t1.side && !t0.offset && !t1.offset)
			side = 2;
	}
	if (side < 0 || (side < 2 && term(b, ts).offset))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a window over a join of two streams must be over the event time of one of them, or the later of the two"),
				 errhint("Window on the event time of either stream, or on %s.", b->join_time)));
	if (side == 1 && b->temporal)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a window over a join with changelog \"%s\" cannot be over the changelog's event time",
						b->streams[1]->relname),
				 errdetail("The version a row is joined with may be older than every window still open."),
				 errhint("Window on the stream's event time.")));
	if (side == 1 && left)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a window over a left join of two streams cannot be over the event time of its right stream"),
				 errdetail("A left row emitted without a partner has no time there."),
				 errhint("Window on the left stream's event time, or on the later of the two.")));
	if (side == 0 || left)
		return psprintf("GREATEST(%s, '0'::interval)", b->join_hi);
	if (side == 1)
		return psprintf("GREATEST(- %s, '0'::interval)", b->join_lo);
	return NULL;
}
