/*-------------------------------------------------------------------------
 *
 * outbox.c
 *	  Views as streams: a continuous view with ssp.output_topic publishes
 *	  its changes to a Kafka topic.
 *
 * Each batch writes the view's changes into its outbox table (a trigger on
 * the mrel, or for ssp.emit = 'final' the windows the batch closes;
 * viewsql.c), in the batch's transaction, numbered in commit order by the
 * outbox's identity column.  After each batch the view's worker publishes
 * what the outbox holds past ssp.continuous_views.published_seq, in
 * order, with the idempotent producer, waits for the broker's
 * acknowledgements, then in one transaction records the last number
 * published and deletes what it published.  A crash between the two sends
 * those changes again after the restart, with the same numbers: each
 * message carries its number (the header ssp-seq, and "_seq" in the
 * value), so a consumer drops any it has seen.  The numbers start above
 * those of any view before in the topic (output.c).  A change larger than
 * the producer may send fails the view once those before it are
 * published, and only changes whose commit is on disk are published.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "kafka/kafka.h"
#include "compile/view.h"
#include "runtime/outbox.h"

/* outbox_name: the view's outbox table, qualified */
static char *
outbox_name(SspView *v)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(v->outbox)),
									  get_rel_name(v->outbox));
}

/*
 * Changes published per transaction: at most PUBLISH_BATCH, and those that
 * begin within PUBLISH_BYTES of the first (as stored: a round of large rows
 * would hold them all in the worker's memory, twice).
 */
#define PUBLISH_BATCH 10000
#define PUBLISH_BYTES (32 * 1024 * 1024)

/* a change larger than the producer sends, and what it is refused by */
typedef struct Oversized
{
	bool		found;
	size_t		bytes;			/* its key, value and header */
	int			limit;			/* message.max.bytes, or the topic's */
	bool		topic;			/* the topic's max.message.bytes */
	char		server[NAMEDATALEN];
} Oversized;

/*
 * What a Kafka record batch (message format 2) adds to its records: its
 * header; and to each record at most: its varints (length, attributes,
 * timestamp and offset deltas, key and value lengths, header count), and
 * those of each header.  A broker takes a batch up to the topic's
 * max.message.bytes, header included.
 */
#define BATCH_OVERHEAD 61
#define RECORD_OVERHEAD 36
#define HEADER_OVERHEAD 10

/*
 * The output topic's max.message.bytes, asked of the brokers once in
 * TOPIC_LIMIT_MS for each view the process publishes (and at each round
 * while they do not say, and again after a round that failed), waiting at
 * most TOPIC_LIMIT_ASK_MS or the round's timeout: a change or a batch the
 * topic refuses is never sent (produce_changes).
 */
#define TOPIC_LIMIT_MS 10000
#define TOPIC_LIMIT_ASK_MS 5000

typedef struct TopicLimit
{
	Oid			view;
	char		topic[NAMEDATALEN * 2];
	int			limit;			/* -1: the brokers did not say */
	bool		valid;			/* false: ask again (unknown, or a round failed) */
	instr_time	asked;
} TopicLimit;

static List *topic_limits = NIL;

/* topic_limit: the view's output topic's max.message.bytes (-1: unknown) */
static TopicLimit *
topic_limit(SspKafka *producer, SspView *v, int timeout_ms)
{
	ListCell   *lc;
	TopicLimit *t = NULL;
	instr_time	now;

	foreach(lc, topic_limits)
	{
		TopicLimit *each = lfirst(lc);

		if (each->view == v->view)
			t = each;
	}
	if (t == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		t = palloc0(sizeof(TopicLimit));
		t->view = v->view;
		topic_limits = lappend(topic_limits, t);
		MemoryContextSwitchTo(old);
	}
	INSTR_TIME_SET_CURRENT(now);
	if (t->valid && strcmp(t->topic, v->output_topic) == 0)
	{
		instr_time	age = now;

		INSTR_TIME_SUBTRACT(age, t->asked);
		if (INSTR_TIME_GET_MILLISEC(age) < TOPIC_LIMIT_MS)
			return t;
	}
	t->limit = ssp_kafka_topic_max_bytes(producer, v->output_topic,
										 Min(timeout_ms, TOPIC_LIMIT_ASK_MS));
	strlcpy(t->topic, v->output_topic, sizeof(t->topic));
	t->asked = now;
	/* no answer (the brokers down, say) is asked again at the next round */
	t->valid = t->limit > 0;
	return t;
}

/*
 * produce_changes: the changes read (SPI_tuptable: seq, key, value) to the
 * view's output topic, each with its number in the header ssp-seq, all
 * acknowledged within timeout_ms; returns the last one's number (0: none).
 * A change larger than the producer's message.max.bytes, or than the
 * topic's max.message.bytes (limit, -1 if unknown), stops it there, said
 * in *big: those before it are published.
 *
 * Nothing after a change the topic refuses may reach it: a consumer that
 * skips the numbers it has passed would drop the change once the topic
 * took it.  librdkafka's idempotent producer does not ensure that: a batch
 * built before the refusal's answer is sent after it, and a broker that
 * holds no state yet for the producer id (a new producer, one reset by an
 * error, one idle past producer.id.expiration.ms) appends a batch of any
 * sequence number.  So a change the topic refuses is never sent, and
 * where the producer's batches may be larger than the topic takes, the
 * changes are acknowledged in groups that fit in one batch.
 */
static int64
produce_changes(SspKafka *producer, SspView *v, int timeout_ms, int limit,
				Oversized *big)
{
	int64		last = 0;
	SspFailures failed_before = ssp_kafka_failures(producer);
	uint64		i;
	bool		in_groups = limit > 0 && ssp_kafka_batch_max_bytes(producer) > limit - BATCH_OVERHEAD;
	size_t		group = 0;		/* bytes queued since the last flush */

	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		SspOutMessage out;
		SspHeader  *h = palloc(sizeof(SspHeader));
		char	   *key = SPI_getvalue(tup, desc, 2);
		char	   *value = SPI_getvalue(tup, desc, 3);
		int64		seq = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		size_t		bytes;
		size_t		record;

		memset(&out, 0, sizeof(out));
		initStringInfo(&out.key);
		appendStringInfoString(&out.key, key);
		initStringInfo(&out.value);
		appendStringInfoString(&out.value, value);
		out.partition = -1;
		h->name = "ssp-seq";
		h->value = psprintf(INT64_FORMAT, seq);
		h->len = strlen(h->value);
		out.headers = list_make1(h);
		bytes = out.key.len + out.value.len + strlen(h->name) + h->len;
		record = bytes + RECORD_OVERHEAD + HEADER_OVERHEAD;

		if (limit > 0 && BATCH_OVERHEAD + record > (size_t) limit)
		{
			big->topic = true;
			big->limit = limit;
		}
		else
		{
			if (in_groups && group > 0 && BATCH_OVERHEAD + group + record > (size_t) limit)
			{
				ssp_kafka_flush(producer, v->output_topic, timeout_ms, failed_before);
				group = 0;
			}
			if (ssp_kafka_produce_if_fits(producer, v->output_topic, &out))
			{
				group += record;
				last = seq;
				continue;
			}
			big->limit = ssp_kafka_message_max_bytes(producer);
		}
		big->found = true;
		big->bytes = bytes;
		strlcpy(big->server, ssp_kafka_server_name(producer), sizeof(big->server));
		break;
	}
	if (last > 0)
		ssp_kafka_flush(producer, v->output_topic, timeout_ms, failed_before);
	return last;
}

/*
 * flush_wal: every commit that this transaction sees is made durable
 * before its changes are published.  A batch committed asynchronously
 * (synchronous_commit = off, as a database's or role's setting may say)
 * and lost in a crash after its changes reached the topic would be
 * applied again, its changes given numbers that the topic holds already,
 * for other changes: a consumer would take them for repeats and drop
 * them.  Flushing what is flushed already costs nothing.  (At a page's
 * start the insert position is past the page's header, which no record
 * has reached yet: the page's start is flushed instead.)
 */
static void
flush_wal(void)
{
	XLogRecPtr	lsn = GetXLogInsertRecPtr();

	if (lsn % XLOG_BLCKSZ <= SizeOfXLogLongPHD)
		lsn -= lsn % XLOG_BLCKSZ;
	XLogFlush(lsn);
}

/*
 * publish_some: publish up to PUBLISH_BATCH changes past the last one
 * published, PUBLISH_BYTES or so; returns whether more may wait.  In a
 * transaction of its own.  A change too large to send is an error, raised
 * once those before it are published and recorded, so that the view's
 * next try begins with it.
 */
static bool
publish_some(SspView *v, int timeout_ms)
{
	SspKafka   *producer;
	Oid			argtypes[3] = {OIDOID, INT4OID, INT8OID};
	Datum		args[3];
	int64		last;
	int			n;
	volatile bool more = false;
	Oversized	big;
	TopicLimit *volatile limits;

	memset(&big, 0, sizeof(big));
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* the view may have been dropped since its last batch: then nothing to do */
	LockRelationOid(v->outbox, RowExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(v->outbox)))
	{
		CommitTransactionCommand();
		return false;
	}
	producer = ssp_kafka_producer(GetForeignTable(v->streams[0])->serverid, GetUserId());
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "ssp: SPI_connect failed");
	args[0] = ObjectIdGetDatum(v->view);
	args[1] = Int32GetDatum(PUBLISH_BATCH);
	args[2] = Int64GetDatum(PUBLISH_BYTES);
	if (SPI_execute_with_args(psprintf("SELECT seq, key::text, "
									   "(value || pg_catalog.jsonb_build_object('_seq', seq))::text, n "
									   "FROM (SELECT *, pg_catalog.sum(bytes) OVER (ORDER BY seq) - bytes AS before, "
									   "pg_catalog.count(*) OVER () AS n "
									   "FROM (SELECT o.seq, o.key, o.value, "
									   "pg_catalog.pg_column_size(o.key) + pg_catalog.pg_column_size(o.value) AS bytes "
									   "FROM %s o, ssp.continuous_views c "
									   "WHERE c.view = $1::regclass AND o.seq > c.published_seq "
									   "ORDER BY o.seq LIMIT $2) l) w "
									   "WHERE before < $3 ORDER BY seq",
									   outbox_name(v)),
							  3, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "ssp: could not read the outbox of continuous view \"%s\"", v->name);
	n = SPI_processed;
	if (n > 0)
	{
		bool		isnull;
		int64		read = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 4, &isnull));

		/* a full round, or one cut short by its bytes */
		more = read == PUBLISH_BATCH || n < read;
	}
	if (n > 0)
		flush_wal();
	/*
	 * On an error nothing of this view stays queued in the process's
	 * producer, which its other views publish with: its messages would be
	 * waited for, or their failure counted, in another view's flush.
	 */
	limits = n > 0 ? topic_limit(producer, v, timeout_ms) : NULL;
	PG_TRY();
	{
		last = produce_changes(producer, v, timeout_ms, limits ? limits->limit : -1, &big);
	}
	PG_CATCH();
	{
		ssp_kafka_purge(producer);
		/* the topic's limit may be what changed */
		if (limits)
			limits->valid = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (last > 0)
	{
		argtypes[1] = INT8OID;
		args[1] = Int64GetDatum(last);
		if (SPI_execute_with_args("UPDATE ssp.continuous_views SET published_seq = $2 "
								  "WHERE view = $1::regclass",
								  2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "ssp: could not record what was published");
		if (SPI_execute_with_args(psprintf("DELETE FROM %s WHERE seq <= $2",
										   outbox_name(v)),
								  2, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "ssp: could not trim the outbox of continuous view \"%s\"", v->name);
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	if (big.found && big.topic)
	{
		if (limits)
			limits->valid = false;
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("could not publish a change of continuous view \"%s\" to topic \"%s\"",
						v->name, v->output_topic),
				 errdetail("The change is %zu bytes (its key, value and header), more than the topic's max.message.bytes allows: %d bytes, with the overhead of a batch.",
						   big.bytes, big.limit),
				 errhint("Raise the topic's max.message.bytes on the brokers (kafka-configs --alter --add-config): the view then publishes the change and goes on.  Until then it applies nothing more, and its outbox keeps this change and those after it.")));
	}
	if (big.found)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("could not publish a change of continuous view \"%s\" to topic \"%s\"",
						v->name, v->output_topic),
				 errdetail("The change is %zu bytes (its key, value and header), more than message.max.bytes of server \"%s\" allows: %d bytes, with the message's overhead.",
						   big.bytes, big.server, big.limit),
				 errhint("Raise \"message.max.bytes\" of server \"%s\" with ALTER SERVER, and the topic's max.message.bytes on the brokers if it is lower: the view then publishes the change and goes on.  Until then it applies nothing more, and its outbox keeps this change and those after it.",
						 big.server)));
	return more;
}

/*
 * ssp_outbox_publish: publish every change the view's outbox holds, to
 * its output topic on the server of its (first) stream, as the view's
 * owner, each batch of changes acknowledged within timeout_ms.  Called by
 * the view's worker between batches, outside a transaction; errors (the
 * broker down, the topic refused) fail the view, which retries.
 */
void
ssp_outbox_publish(SspView *v, int timeout_ms)
{
	if (v->output_topic == NULL)
		return;
	while (publish_some(v, timeout_ms))
		;
}
