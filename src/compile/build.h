/*-------------------------------------------------------------------------
 *
 * build.h
 *	  What CREATE VIEW ... WITH (ssp.continuous) builds, shared by view.c
 *	  (analysis and creation), aggregate.c (aggregate states), join.c (two
 *	  streams joined) and viewsql.c (the SQL of each kind of view).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_BUILD_H
#define SSP_BUILD_H

#include "nodes/parsenodes.h"

#include "ssp.h"
#include "compile/view.h"
#include "compile/window.h"

/* Options of a continuous view (WITH (ssp.x = ...)). */
typedef struct SspViewOptions
{
	char	   *start;
	int			commit_interval_ms;
	int			batch_size;
	char	   *on_error;
	/* windowed views */
	char	   *grace;
	char	   *retention;
	char	   *idle_timeout;
	bool		emit_final;
	/* sliding windows */
	char	   *sliding;
	char	   *step;
	/* tables from compacted topics */
	List	   *primary_key;	/* column names */
	int			parallelism;	/* workers, each on a share of the partitions */
	/* ssp.shard = 'k/N': this server reads the partitions p % N == k */
	int			shard_index;
	int			shard_count;	/* 0: not sharded */
	List	   *shard_servers;	/* ssp.shards: the servers of the shards,
								 * in order (a view over shards) */
	char	   *output_topic;	/* its changes published there (outbox.c) */
	bool		fast_path;		/* ssp.aggregate_fast_path when it was created */
} SspViewOptions;

/* What one aggregate of the query becomes. */
typedef struct AggPlan
{
	List	   *cols;			/* state column names */
	List	   *types;			/* their SQL types */
	List	   *partials;		/* per column: the partial aggregate over a batch */
	List	   *merges;			/* per column: merge of m.col and excluded.col */
	List	   *readaggs;		/* per column: the aggregate that merges many
								 * (NULL: generic, ssp_merge_many) */
	char	   *final;			/* the finished value, over m.cols */
	char	   *input;			/* over a changelog: what is kept of a row for
								 * it, over the batch (NULL: nothing) */
	char	   *recompute;		/* over a changelog: its state computed again
								 * from the versions kept, "v" (min, max) */
	bool		ordered;		/* its state is in arrival order (array_agg...):
								 * merged only as a batch comes after another */
	/*
	 * DISTINCT: the partials read the batch's values new to their group
	 * ("_ssp_n._vN", kept in the view's table of distinct values), not the
	 * batch
	 */
	char	   *distinct_arg;	/* the argument, over the batch (NULL: none) */
	char	   *distinct_filter;	/* its FILTER, over the batch (NULL: none) */
	char	   *distinct_type;	/* its type (a domain's base type), and its
								 * collation where not the type's own, SQL */
	char	   *distinct_null;	/* a NULL of that type, SQL */
	/* the generic path: any aggregate with a combine function */
	char	   *fn;				/* the aggregate, a regprocedure literal */
	char	   *nulls;			/* ", NULL::type" per input type */
} AggPlan;

/* The parts of the SQL being built. */
typedef struct Build
{
	Query	   *query;
	SspViewOptions *opts;
	/* what the view reads */
	int			nstreams;		/* 1, or more joined */
	Oid			stream_oids[SSP_MAX_STREAMS];
	char	   *topics[SSP_MAX_STREAMS];
	/* where CREATE VIEW puts new objects (a join's buffers) */
	Oid			nspid;
	const char *relname;		/* the view's name */
	/* the SQL a worker runs on each batch (also late_sql and others below) */
	char	   *apply_sql;
	Query	   *analysed;		/* the query as analysed, untouched: its dependencies */
	char	   *definition;		/* the query as text, every name qualified */
	List	   *dpcontext;		/* deparse context: the stream as "b" */
	char	   *from;			/* FROM clause over the batch and joined tables */
	const char *batch;			/* what the stream is read as in it: ssp_batch,
								 * or over a changelog the batch's latest
								 * version of each key (_ssp_latest) */
	List	   *group_exprs;	/* Node */
	List	   *group_cols;		/* char * column names in the mrel */
	List	   *aggs;			/* Aggref, in order of first appearance */
	List	   *plans;			/* AggPlan, parallel to aggs */
	SspStream  *stream;
	/* a windowed view: the window key and what it adds */
	int			window;			/* index in group_exprs, or -1 */
	SspWindowSpec spec;
	char	   *window_start;	/* SQL over the batch: a window's start */
	char	   *window_end;		/* SQL over the batch: the window's end */
	char	   *window_from;	/* extra FROM for hopping windows */
	char	   *sizesql;
	char	   *window_origin;	/* SQL: the origin of a window aligned on a
								 * time zone's local time, or NULL */
	char	   *window_delay;	/* over a join: SQL interval a window closes
								 * after the watermark passes its end (NULL: 0) */
	char	   *window_base;	/* SQL: the watermark that closes windows in
								 * the apply statement ($1, or for a left join
								 * the one its last batch began with) */
	/* a sliding view: steps of event time, combined when read */
	char	   *step_expr;		/* SQL over the batch: an event's step */
	AttrNumber	step_attnum;	/* the stream column step_expr reads */
	char	   *in_range;		/* SQL: a step m._step still in the range */
	char	   *late_sql;
	char	   *retention_sql;
	char	   *columns;		/* int2[] literal of the stream columns read */
	/* a join of streams (join.c) */
	JoinExpr   *stream_join;	/* NULL: one stream */
	int			join_rtindex[SSP_MAX_STREAMS];	/* the streams, left to right */
	SspStream  *streams[SSP_MAX_STREAMS];
	List	   *rtnames;		/* deparse names of the query's relations */
	char	   *join_from;		/* FROM item of the new pairs */
	char	   *apply_prefix;	/* statements before the apply statement */
	char	   *purge_left;		/* SQL: a left row can match no more */
	char	   *purge_right;
	char	   *join_hi;		/* SQL intervals: the right's event time is at */
	char	   *join_lo;		/* most hi, at least lo after the left's */
	char	   *join_time;		/* SQL: a pair's event time, the later of the two */
	char	   *join_bound[SSP_MAX_STREAMS][SSP_MAX_STREAMS];	/* more than two
																 * streams: SQL, how
																 * much later than
																 * [i]'s event time
																 * [j]'s can be */
	bool		temporal;		/* the right stream is a changelog, read as of
								 * the left's event time */
	char	   *buffers[SSP_MAX_STREAMS + 1];	/* the buffer tables, qualified:
												 * one per stream of a join,
												 * then a table of distinct
												 * values; or a changelog's
												 * versions */
	Oid			buffer_oids[SSP_MAX_STREAMS + 1];	/* rebuilding: those tables */
	bool		mrel_indexed;	/* CREATE VIEW indexes the view's table */
	bool		whole_row;		/* the query reads a stream's whole row: every column */
	char	   *mrel_index_keys;	/* an aggregating view's: its table's unique
									 * index, the columns in order (quoted,
									 * comma-separated) */
	char	   *window_col;		/* the column of its window's start, quoted */
	List	   *buffer_names;	/* unqualified names of those CREATE VIEW made */
	bool		rebuilding;		/* of an existing view (rebuild.c): its objects
								 * are made already */
	Oid			mrel_oid;		/* rebuilding: the view's table */
	/* what a rollup of an aggregating view reads (rollup.c) */
	char	   *rollup_from;	/* FROM item "m": the rows the view shows */
	char	   *rollup_states;	/* ", merge(m.col)::type AS col" per state */
	List	   *rollup_columns; /* char *: each output column, over m */
	List	   *rollup_combinable;	/* int: each is of aggregates only (1), or
									 * reads one over DISTINCT values
									 * (ROLLUP_DISTINCT), or neither (0) */
	/* a view with ssp.output_topic: its changes, through an outbox */
	char	   *outbox;			/* its table, qualified */
	bool		empty_groups_go;	/* over a changelog with GROUP BY: a group
									 * left with no row (_ssp_rows = 0) is out
									 * of the view, deleted after the upsert */
	char	   *changes_fn;		/* the mrel trigger's function, qualified */
	char	   *changes_body;	/* its body (plpgsql) */
	char	   *closed_sql;		/* a window closed by watermark $N (emit final) */
	char	   *outbox_final_sql;	/* emit final: the windows a batch closes */
	/* a view over shards (ssp.shards, shard.c) */
	char	   *shard_status;	/* its table of the shards' ssp.shard_views, qualified */
	char	   *shard_view_schema;	/* the view's schema and name on the shards */
	char	   *shard_view_name;
	/* the batch's groups, shared with views that group it alike (batch.c) */
	SspShare   *share;			/* NULL: not shared */
} Build;

#define ROLLUP_DISTINCT 2

extern const char *const ssp_refuse_hint;

/* view.c */
extern Build *ssp_view_build(SspView *v);	/* rebuild.c */
/* view.c: what CREATE VIEW and rebuild.c share */
extern SspViewOptions ssp_parse_view_options(List *options);
extern void ssp_parse_shard(const char *val, int *index, int *count);
extern void ssp_build_view(Build *b, List *names, const char *view, const char *mrel,
						   StringInfo create, StringInfo viewsql, StringInfo apply);
extern void ssp_refuse(const char *what, const char *why) pg_attribute_noreturn();
extern char *ssp_deparse(Build *b, Node *expr);
extern int	ssp_stream_rtindex(Build *b);
extern char *ssp_column_type_sql(Node *expr, bool base);

/* shard.c */
extern void ssp_shard_check(Build *b, const char *mrel, StringInfo create);
extern void ssp_shard_prepare(Build *b, Oid nspid, const char *relname);
extern void ssp_shard_create(Build *b, const char *mrelname, Oid nspid);
extern void ssp_shard_record(Build *b, Oid viewoid);
extern void ssp_shard_depend(Oid viewoid, Oid status);
extern void ssp_shard_rebuild(Build *b, SspView *v);

/* aggregate.c */
extern bool ssp_collect_aggs(Node *node, Build *b);
extern char *ssp_final_sql(Build *b, Node *expr);
extern char *ssp_put_params(const char *text, char *(*sql) (long id, void *arg), void *arg);
extern char *ssp_merge_many(AggPlan *p, const char *readagg, const char *expr);

/* join.c */
/*
 * Whether a join of streams emits pairs only once the watermark has passed
 * a bound (a left join's unmatched rows, a temporal join's rows): its
 * windows close by the watermark its last batch began with (viewsql.c).
 */
#define SSP_JOIN_EMITS_LATE(b) \
	((b)->stream_join && ((b)->stream_join->jointype == JOIN_LEFT || (b)->temporal))

extern JoinExpr *ssp_find_stream_join(Build *b, Node *node);
extern void ssp_build_stream_join(Build *b, JoinExpr *j, List *names, StringInfo create);
extern char *ssp_join_window_delay(Build *b, Node *ts);

/* viewsql.c */
extern char *ssp_interval_sql(Interval *iv);
extern char *ssp_changes_function_sql(Build *b, bool replace);
extern void ssp_build_aggregating(Build *b, List *names, const char *mrel, const char *view,
								  StringInfo create, StringInfo viewsql, StringInfo apply);
extern void ssp_build_append_only(Build *b, List *names, const char *mrel, const char *view,
								  StringInfo create, StringInfo viewsql, StringInfo apply);

#endif							/* SSP_BUILD_H */
