/*-------------------------------------------------------------------------
 *
 * view.h
 *	  Continuous views: creation (view.c), the catalog row a worker reads
 *	  (catalog.c), and starting offsets.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_VIEW_H
#define SSP_VIEW_H

#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"

#define SSP_DEFAULT_COMMIT_INTERVAL_MS 100
#define SSP_DEFAULT_BATCH_SIZE 200000
#define SSP_MAX_BATCH_SIZE 10000000
#define SSP_MAX_COMMIT_INTERVAL_MS 3600000
/* partitions a topic of a view may have (Kafka has no limit of its own) */
#define SSP_MAX_PARTITIONS 1000000

/* streams one continuous view joins at most */
#define SSP_MAX_STREAMS 3

/*
 * The ephemeral relation that holds a batch's messages of a view's first
 * stream, and of the others in a join of streams.
 */
#define SSP_BATCH_RELATION(source) \
	((source) == 0 ? "ssp_batch" : (source) == 1 ? "ssp_batch_2" : "ssp_batch_3")

typedef enum SspOnError
{
	SSP_ON_ERROR_DEAD_LETTER,
	SSP_ON_ERROR_SKIP,
	SSP_ON_ERROR_STOP
} SspOnError;

#define SSP_MAX_WATCHED 64

/*
 * How an aggregating view reduces a batch to its groups, so that views
 * that reduce it alike share one reduction (batch.c): the groups are read
 * by "SELECT keys, expr AS col, ... rest", one column per state of every
 * such view, named after its expression; the view then merges them with
 * apply_sql, which reads them as the ephemeral relation SSP_GROUPS_RELATION.
 */
typedef struct SspShare
{
	char	   *keys;			/* "expr AS _ssp_k1, ...": the group keys */
	char	   *rest;			/* "FROM ... WHERE ... GROUP BY 1, ..." */
	List	   *cols;			/* char *: the state columns' names there */
	List	   *exprs;			/* char *: their expressions over the batch */
	char	   *apply_sql;		/* the view's apply statement over the groups */
} SspShare;

#define SSP_GROUPS_RELATION "ssp_groups"

/* A continuous view as its worker sees it (catalog.c). */
typedef struct SspView
{
	Oid			view;
	Oid			mrel;
	char	   *name;
	int			nsources;		/* streams it reads: 1, or up to
								 * SSP_MAX_STREAMS joined */
	Oid		   *streams;
	char	  **topics;			/* their topics */
	List	   *buffers;		/* Oid: a join's buffer tables */
	char	   *apply_sql;
	bool		mrel_indexed;	/* its table has indexes of CREATE VIEW's */
	SspShare   *share;			/* NULL: reduces the batch alone */
	int			commit_interval_ms;
	int			batch_size;
	SspOnError	on_error;
	bool		paused;
	int			generation;
	/* windowed views (window.c) */
	char	   *late_sql;		/* NULL: not windowed */
	char	   *retention_sql;	/* NULL: keep every window */
	Interval   *retention;		/* ssp.retention, or NULL */
	Interval   *grace;
	int64		idle_ms;
	TimestampTz watermark;		/* as last committed; DT_NOBEGIN: none */
	bool		some_columns;	/* reads only the stream columns in columns */
	List	   *columns;		/* int: stream attnums it reads */
	int			parallelism;	/* workers; each reads partitions p % parallelism == part */
	int			part;			/* which of them this is (in a worker) */
	int			shard_index;	/* ssp.shard = 'k/N': k */
	int			shard_count;	/* N (0: not sharded) */
	Oid			shard_status;	/* a view over shards: its table of the
								 * shards' ssp.shard_views */
	char	   *shard_view;		/* and the view's qualified name there */
	/* ssp.output_topic (outbox.c) */
	char	   *output_topic;	/* NULL: none */
	Oid			outbox;			/* the table of changes not yet published */
	char	   *outbox_final_sql;	/* emit final: add the windows a batch closes */
	Oid			changes;		/* the outbox's trigger function (emit changes) */
	/* what its SQL is built from again (ssp_view_generate) */
	Oid			query;			/* the view NAME_query: the query, by oid */
	List	   *names;			/* char *: the output column names */
	List	   *options;		/* char *: "name=value", as at CREATE VIEW */
	/* what its SQL names, watched for renames (rebuild.c) */
	int			nwatched;		/* past SSP_MAX_WATCHED: any relation */
	Oid			watched[SSP_MAX_WATCHED];
	bool		sql_stale;
	MemoryContext sql_cxt;		/* the SQL of the last build */
} SspView;

/* workers of one view at most (ssp.parallelism) */
#define SSP_MAX_PARALLELISM 16
/* servers of one sharded view at most (ssp.shard) */
#define SSP_MAX_SHARDS 256

/*
 * ssp_reads_partition: does worker part of a view read partition p?  Its
 * server's shard (ssp.shard = 'k/N') holds the partitions p % N == k; the
 * view's workers (ssp.parallelism = P) share those, the j-th of the shard
 * (p / N) going to worker j % P.
 */
static inline bool
ssp_reads_partition(int p, int shard_index, int shard_count, int parallelism, int part)
{
	if (shard_count > 1)
	{
		if (p % shard_count != shard_index)
			return false;
		p /= shard_count;
	}
	return parallelism <= 1 || p % parallelism == part;
}

/*
 * ssp_view_lock_key: the advisory lock by which ssp.reset waits for the
 * batches of a view's parallel workers (batch.c).
 */
#define SSP_LOCK_CLASS INT64CONST(0x53535000)	/* "SSP" */
static inline int64
ssp_view_lock_key(Oid view)
{
	return (SSP_LOCK_CLASS << 32) | (int64) view;
}

/* view.c */
extern bool ssp_view_flag(ViewStmt *stmt, const char *name);
extern void ssp_create_continuous_view(ViewStmt *stmt, const char *queryString);
extern char *ssp_choose_function_name(const char *name, const char *label, Oid nspid);
extern List *ssp_target_names(Query *q, List *aliases);
extern void ssp_spi_exec(const char *sql);
extern bool ssp_view_one_group(Oid mrel, int nsources);
extern void ssp_view_seed(Oid mrel, int nsources, Oid stream, const char *apply_sql);
extern void ssp_view_generate(SspView *v);
extern void ssp_view_unwatch(SspView *v);
extern void ssp_view_refresh(SspView *v);

/* replace.c */
extern bool ssp_is_continuous_view(Oid relid);
extern Oid	ssp_continuous_view_mrel(Oid relid);
extern bool ssp_continuous_view_changed_here(Oid relid);
extern void ssp_replace_continuous_view(ViewStmt *stmt, const char *queryString, Oid viewoid);
extern bool ssp_replace_swap(Oid shadow, Oid view);
extern void ssp_continuous_view_owner_changed(Oid view, Oid owner_before);
extern void ssp_continuous_views_reassigned(Oid owner);

/* output.c */
#define SSP_OUTPUT_LOCK_CLASS INT64CONST(0x53535001)	/* "SSP" + 1 */
extern Oid	ssp_changes_function_view(Oid funcid);
extern Oid	ssp_changes_trigger_view(Oid relid, const char *name);
extern void ssp_view_check_changes(SspView *v);
extern void ssp_output_check_topic(Oid serverid, const char *topic);
extern void ssp_output_start(Oid outbox, Oid serverid, const char *topic);

/* rollup.c */
extern void ssp_create_rollup(ViewStmt *stmt, const char *queryString);

/* catalog.c */
extern Oid	ssp_rel_owner(Oid relid);
extern char *ssp_extension_version(void);
extern void ssp_check_extension_version(void);
extern SspView *ssp_view_load(Oid view, bool missing_ok);
extern void ssp_store_start_offsets(Oid view, int nsources, const Oid *streams,
									char *const *topics, const char *start);
extern SspOnError ssp_parse_on_error(const char *value);
extern void ssp_check_start(const char *start);
extern bool ssp_view_repair_dependencies(SspView *v);
extern void ssp_view_check_whole(SspView *v, bool has_offsets, bool restored);

#endif							/* SSP_VIEW_H */
