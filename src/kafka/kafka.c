/*-------------------------------------------------------------------------
 *
 * kafka.c
 *	  Everything that talks to librdkafka: client configuration, consumers
 *	  for bounded scans, cached producers, and Kafka errors as ereports.
 *
 * This is the only file that includes rdkafka.h.  librdkafka runs threads
 * of its own; no callback may run on them, since they cannot call into
 * Postgres.  So log.queue is on and the log, error and delivery callbacks
 * run only inside rd_kafka_poll, rd_kafka_consumer_poll and rd_kafka_flush,
 * called here, on the backend's own thread.
 *
 * Every text librdkafka writes (its errors, log lines, delivery reports,
 * a message's error, a fatal error, rd_kafka_new's complaint) goes through
 * ssp_secrets_mask (secret.c) with the client's secrets before it is kept
 * or shown: librdkafka quotes configuration values, and those texts reach
 * other roles (error details, ssp.views) and the server log.
 * rd_kafka_err2str's texts are librdkafka's fixed ones, naming no value.
 *
 * Handles are released on every path: a consumer is destroyed with the
 * memory context it was created in (a reset callback), producers are
 * cached per server and user for the backend's life and destroyed at exit.
 *
 * A worker's applied messages are destroyed on a thread of ours, the
 * releaser, while the backend's thread goes on to the next batch: it calls
 * nothing but rd_kafka_message_destroy, which librdkafka allows on any
 * thread, and a consumer waits for it before it is destroyed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "access/xact.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "common/hashfn.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "kafka/kafka.h"

#define SSP_POLL_MS 50
/* a request to the brokers waits this long, then twice, ... before interrupts are looked at */
#define SSP_REQUEST_SLICE_MS 500
#define SSP_REQUEST_SLICE_MAX_MS 4000
/* fewer applied messages than this are destroyed at once, not on the releaser */
#define SSP_RELEASE_AHEAD 4096

/* how many messages ssp_kafka_poll_batch takes from librdkafka per call */
#define SSP_TAKE_CHUNK 1024

/*
 * The messages of one partition a worker's consumer took from librdkafka's
 * queue and has not handed out yet (ssp_kafka_poll_batch): a FIFO.
 */
typedef struct SspHeld
{
	SspMessage *m;				/* described when taken (describe_message) */
	int			head;			/* the first one not handed out */
	int			count;			/* how many from head on */
	int			cap;
	/* the partition's end, or its next offset gone, seen after them */
	int64		eof;			/* -1 if none */
	bool		lost;
} SspHeld;

struct SspKafka
{
	rd_kafka_t *rk;
	Oid			serverid;
	Oid			userid;
	char	   *servername;
	char	   *topic;
	int			nassigned;		/* times assign has run */
	instr_time	assigned_at;	/* the last, on a clock that only goes forward */
	SspSecrets *secrets;		/* of its properties, masked in its texts */
	char		last_error[512];	/* latest error the client reported, masked */
	bool		trouble;		/* an error since the last message */
	rd_kafka_resp_err_t last_code;	/* last_error's code */
	bool		strict_offsets;	/* a view's consumer: no silent offset reset */
	char	   *group;			/* a view's consumer: its group, for lag tools */
	uint64		options_print;	/* of the server and user mappings it is made of */
	uint64		options_seen;	/* option_changes when options_print was last true */

	/* consumer */
	SspPartitionRange *ranges;
	bool	   *done;
	int			nranges;
	int			nleft;			/* partitions not yet at their end */
	rd_kafka_message_t *current;
	MemoryContextCallback cleanup;
	bool		refusable;		/* the topic refused (authorization) ends a read */
	bool		refused;		/* and it was */

	/* worker consumers: a queue that signals a pipe, pending messages */
	rd_kafka_queue_t *queue;
	int			pipefd[2];
	rd_kafka_message_t **pending;
	int			npending;
	int			maxpending;
	/* taken from the queue, not yet handed out: per partition, in order */
	rd_kafka_message_t *taking[SSP_TAKE_CHUNK];
	SspHeld    *held;
	int			nheldparts;
	int			nheld;

	/* producer */
	bool		stale;			/* server or user mapping changed */
	int			queued_level;	/* the deepest transaction nest level that
								 * queued a message, or 0 */
	uint32		server_hash;	/* of serverid, in FOREIGNSERVEROID */
	uint32		user_hash;		/* of userid, in AUTHOID */
	SspFailures failures;		/* since creation */
	bool		purging;		/* in purge: its reports are being served */
	int			purge_level;	/* of the abort purging, or 0 */
	uint64		acked;
	char		delivery_error[512];	/* the latest refusal, masked */
	rd_kafka_resp_err_t delivery_code;	/* that error's code */
	int32		delivery_partition; /* and the partition its message was for */
};

static void release_wait(void);

/* cached producers, in TopMemoryContext */
static List *producers = NIL;
/* stale ones the transaction's statements may still flush, until it ends */
static List *retired = NIL;
static bool producer_callbacks_registered = false;
/* a message was queued in this transaction: it cannot be prepared */
static bool produced_in_xact = false;

/* mask: librdkafka's text, its client's secrets masked, into out */
static void
mask(SspKafka *kafka, const char *text, char *out, size_t outsize)
{
	ssp_secrets_mask(kafka ? kafka->secrets : NULL, text, out, outsize);
}

/*
 * log_cb: librdkafka's log lines, secrets masked, into the server log;
 * runs on our thread (log.queue).  librdkafka formats a line in 2 kB;
 * masks may make it longer.
 */
static void
log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	char		line[4096];

	/*
	 * A view's offsets copied to its group for lag tools may fail: no
	 * matter.  A server's options serve its consumers and its producers
	 * alike: that each ignores the other's is no news, nor that the
	 * gapless guarantee ssp sets is experimental.
	 */
	int			elevel = level <= 4 && strcmp(fac, "COMMITFAIL") != 0 &&
		!(strcmp(fac, "CONFWARN") == 0 &&
		  (strstr(buf, "will be ignored by this consumer") != NULL ||
		   strstr(buf, "will be ignored by this producer") != NULL ||
		   strstr(buf, "enable.gapless.guarantee is experimental") != NULL)) ? LOG : DEBUG2;

	/* debug's lines are many: mask only those the server keeps */
	if (!message_level_is_interesting(elevel))
		return;
	mask(rk ? rd_kafka_opaque(rk) : NULL, buf, line, sizeof(line));
	ereport(elevel,
			(errmsg_internal("ssp: librdkafka: %s: %s", fac, line),
			 errhidestmt(true)));
}

/* error_cb: remember the latest error to explain timeouts. */
static void
error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	SspKafka   *kafka = opaque;

	if (kafka)
	{
		mask(kafka, reason, kafka->last_error, sizeof(kafka->last_error));
		kafka->last_code = err;
		kafka->trouble = true;
	}
}

/*
 * trouble_hint: the hint for an error that came with the latest broker
 * error (kafka->last_error), or for err itself, else the hint for brokers
 * that do not answer.
 */
static int
trouble_hint(SspKafka *kafka, rd_kafka_resp_err_t err)
{
	/* librdkafka before 2.6.1 sent a SCRAM proof that Kafka 4 refuses */
	if (kafka->last_code == RD_KAFKA_RESP_ERR__AUTHENTICATION &&
		strstr(kafka->last_error, "SCRAM") != NULL && rd_kafka_version() < 0x020601ff)
		return errhint("The brokers of server \"%s\" refused the SCRAM login.  librdkafka %s cannot log in with SCRAM to Kafka 4 brokers (fixed in librdkafka 2.6.1): use sasl.mechanisms PLAIN, or a newer librdkafka; else check sasl.username and sasl.password in the user mapping.",
					   kafka->servername, rd_kafka_version_str());
	if (kafka->last_code == RD_KAFKA_RESP_ERR__AUTHENTICATION)
		return errhint("The brokers of server \"%s\" refused the credentials: check sasl.username and sasl.password in the user mapping, and sasl.mechanisms.",
					   kafka->servername);
	if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
		kafka->last_code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
		return errhint("The principal of server \"%s\" may not use topic \"%s\": grant it DESCRIBE and READ on the topic to read it, WRITE to write it (kafka-acls).",
					   kafka->servername, kafka->topic);
	if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
		kafka->last_code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
		return errhint("The principal of server \"%s\" may not use consumer group \"%s\": grant it READ on the group (kafka-acls).",
					   kafka->servername, kafka->group ? kafka->group : "ssp");
	return errhint("Check that the brokers of server \"%s\" are up; ssp.broker_timeout is %d ms.",
				   kafka->servername, ssp_broker_timeout);
}

/* dr_msg_cb: count acknowledgements and failures of produced messages. */
static void
dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
	SspKafka   *kafka = opaque;

	/*
	 * Purged by ssp for an abort: a failure if a statement around the
	 * subtransaction queued it.  (librdkafka purges too, on a fatal error
	 * of the producer: those are refused like any other.)
	 */
	if (kafka->purging &&
		(msg->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
		 msg->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT))
	{
		if (((intptr_t) msg->_private >> 1) < kafka->purge_level)
			kafka->failures.purged++;
	}
	else if (msg->err)
	{
		kafka->failures.refused++;
		mask(kafka, rd_kafka_err2str(msg->err), kafka->delivery_error,
			 sizeof(kafka->delivery_error));
		kafka->delivery_code = msg->err;
		/* the partition the message asked for, not one the partitioner chose */
		kafka->delivery_partition = ((intptr_t) msg->_private & 1) ? msg->partition : -1;
	}
	else
		kafka->acked++;
}

static void
conf_set(SspKafka *kafka, rd_kafka_conf_t *conf, const char *name, const char *value)
{
	char		errstr[512];
	char		shown[512];

	if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
	{
		mask(kafka, errstr, shown, sizeof(shown));
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for Kafka property \"%s\"", name),
				 ssp_option_is_secret(name) ?
				 errdetail("The value is secret and not shown.") :
				 errdetail("%s", shown)));
	}
}

static void watch_options(void);
static uint64 options_print(Oid serverid, Oid userid);
static uint64 option_changes;

/*
 * set_properties: ssp's settings for a client of this type, then the
 * server's and the user mapping's properties over them.
 */
static void
set_properties(SspKafka *kafka, rd_kafka_conf_t *conf, rd_kafka_type_t type)
{
	List	   *options;
	MemoryContext old;
	ListCell   *lc;

	conf_set(kafka, conf, "log.queue", "true");
	conf_set(kafka, conf, "client.id", "ssp");
	if (type == RD_KAFKA_CONSUMER)
	{
		/*
		 * assign() needs a group; ssp never joins it.  A view's worker
		 * commits there what it has applied, after Postgres has committed
		 * it, for lag tools only (ssp_kafka_commit).
		 */
		conf_set(kafka, conf, "group.id", kafka->group ? kafka->group : "ssp");
		conf_set(kafka, conf, "enable.auto.commit", "false");
		conf_set(kafka, conf, "enable.auto.offset.store", "false");
		conf_set(kafka, conf, "enable.partition.eof", "true");
		/*
		 * A scan reads what is there; a view must hear of messages deleted
		 * before it read them, so its consumer gets an error instead.
		 */
		conf_set(kafka, conf, "auto.offset.reset", kafka->strict_offsets ? "error" : "earliest");
		/*
		 * Prefetch up to the byte limit alone (librdkafka 2.0 stops
		 * fetching for a second at either limit), and do not let a fetch
		 * of quiet partitions wait long at the broker (doc/internals.md,
		 * Consumer settings).
		 */
		conf_set(kafka, conf, "queued.min.messages", "10000000");
		conf_set(kafka, conf, "fetch.wait.max.ms", "50");
		/* one buffer per reader, however many views read its stream */
		if (kafka->group)
			conf_set(kafka, conf, "queued.max.messages.kbytes", psprintf("%d", ssp_reader_buffer));
	}
	else
	{
		conf_set(kafka, conf, "linger.ms", "5");
		conf_set(kafka, conf, "enable.idempotence", "true");
	}

	options = ssp_server_kafka_options(kafka->serverid, kafka->userid);
	/* before librdkafka sees them: it may already quote them */
	old = MemoryContextSwitchTo(GetMemoryChunkContext(kafka));
	ssp_secrets_free(kafka->secrets);
	kafka->secrets = ssp_secrets_collect(options);
	MemoryContextSwitchTo(old);
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		conf_set(kafka, conf, def->defname, defGetString(def));
	}

	/*
	 * A view's changes to its output topic (a worker's only producer): a
	 * batch the broker refuses for good is a fatal error of the producer,
	 * whatever the server says, which then sends no batch it has not built
	 * yet.  That alone does not keep the changes after the refused one out
	 * of the topic (outbox.c, produce_changes).
	 */
	if (type == RD_KAFKA_PRODUCER && IsBackgroundWorker)
	{
		conf_set(kafka, conf, "enable.gapless.guarantee", "true");

		/*
		 * Each key's changes go to one partition, where their numbers say
		 * their order: "random" (the only partitioner that ignores the key)
		 * would scatter them.
		 */
		foreach(lc, options)
		{
			DefElem    *def = lfirst(lc);

			if (strcmp(def->defname, "partitioner") == 0 &&
				strcmp(defGetString(def), "random") == 0)
				conf_set(kafka, conf, "partitioner", "consistent_random");
		}
	}
}

/*
 * new_client: a librdkafka client for the server as userid, with ssp's
 * settings first and the server's and user mapping's properties over them.
 */
static rd_kafka_t *
new_client(SspKafka *kafka, rd_kafka_type_t type)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;
	char		errstr[512];
	char		shown[512];

	kafka->servername = MemoryContextStrdup(GetMemoryChunkContext(kafka),
											GetForeignServer(kafka->serverid)->servername);
	/* what the properties are made of, before they are read (slice_again) */
	watch_options();
	kafka->options_seen = option_changes;
	kafka->options_print = options_print(kafka->serverid, kafka->userid);
	PG_TRY();
	{
		set_properties(kafka, conf, type);
	}
	PG_CATCH();
	{
		rd_kafka_conf_destroy(conf);
		PG_RE_THROW();
	}
	PG_END_TRY();

	rd_kafka_conf_set_log_cb(conf, log_cb);
	rd_kafka_conf_set_error_cb(conf, error_cb);
	if (type == RD_KAFKA_PRODUCER)
		rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
	rd_kafka_conf_set_opaque(conf, kafka);

	rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
	if (rk == NULL)
	{
		rd_kafka_conf_destroy(conf);
		mask(kafka, errstr, shown, sizeof(shown));
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not create a Kafka client for server \"%s\"",
						kafka->servername),
				 errdetail("%s", shown),
				 strstr(errstr, "sasl.username") ?
				 errhint("The credentials go in a user mapping: CREATE USER MAPPING FOR %s SERVER %s OPTIONS (sasl.username '...', sasl.password '...').",
						 quote_identifier(GetUserNameFromId(kafka->userid, false)),
						 quote_identifier(kafka->servername)) : 0));
	}
	/* logs and errors are served by our own polls */
	rd_kafka_set_log_queue(rk, NULL);
	if (type == RD_KAFKA_CONSUMER)
		rd_kafka_poll_set_consumer(rk);
	return rk;
}

/* broker_error: ereport a failed broker request on the stream's topic. */
static void
broker_error(SspKafka *kafka, const char *what, rd_kafka_resp_err_t err)
{
	bool		timeout = err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
		err == RD_KAFKA_RESP_ERR__TRANSPORT ||
		err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN;

	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("could not %s of topic \"%s\"", what, kafka->topic),
			 kafka->last_error[0] && timeout ?
			 errdetail("%s (last broker error: %s)", rd_kafka_err2str(err), kafka->last_error) :
			 errdetail("%s", rd_kafka_err2str(err)),
			 timeout || err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
			 err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ? trouble_hint(kafka, err) : 0));
}

/* drop_held: forget the messages taken from the queue but not handed out. */
static void
drop_held(SspKafka *kafka)
{
	int			p;
	int			i;

	for (p = 0; p < kafka->nheldparts; p++)
	{
		SspHeld    *h = &kafka->held[p];

		for (i = 0; i < h->count; i++)
			rd_kafka_message_destroy(h->m[h->head + i].handle);
		h->head = 0;
		h->count = 0;
		h->eof = -1;
		h->lost = false;
	}
	kafka->nheld = 0;
}

/* consumer_cleanup: the reset callback of a consumer's memory context. */
static void settle(SspKafka *kafka, bool interruptible);

static void
consumer_cleanup(void *arg)
{
	SspKafka   *kafka = arg;

	if (kafka->current)
		rd_kafka_message_destroy(kafka->current);
	kafka->current = NULL;
	ssp_kafka_release(kafka);
	drop_held(kafka);
	/* no message of the consumer may outlive it */
	release_wait();
	if (kafka->queue)
	{
		rd_kafka_queue_io_event_enable(kafka->queue, -1, NULL, 0);
		rd_kafka_queue_destroy(kafka->queue);
		close(kafka->pipefd[0]);
		close(kafka->pipefd[1]);
		kafka->queue = NULL;
	}
	if (kafka->rk)
	{
		settle(kafka, false);
		rd_kafka_destroy_flags(kafka->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	}
	kafka->rk = NULL;
}

/*
 * ssp_kafka_consumer: a consumer of topic on the server, as userid, living
 * as long as CurrentMemoryContext (or until ssp_kafka_close).  A view's
 * consumer (view_group: its consumer group, ssp_kafka_commit) reports
 * offsets that no longer exist rather than skipping to the oldest message.
 */
SspKafka *
ssp_kafka_consumer(Oid serverid, Oid userid, const char *topic, const char *view_group)
{
	SspKafka   *kafka = palloc0(sizeof(SspKafka));

	kafka->strict_offsets = view_group != NULL;
	kafka->group = view_group ? pstrdup(view_group) : NULL;
	kafka->serverid = serverid;
	kafka->userid = userid;
	kafka->topic = pstrdup(topic);
	kafka->rk = new_client(kafka, RD_KAFKA_CONSUMER);
	kafka->cleanup.func = consumer_cleanup;
	kafka->cleanup.arg = kafka;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &kafka->cleanup);
	return kafka;
}

/* ssp_kafka_close: release the consumer now rather than with its context. */
void
ssp_kafka_close(SspKafka *kafka)
{
	consumer_cleanup(kafka);
}

/*
 * A request to the brokers that ssp.broker_timeout bounds is made in slices
 * (0.5 s, then 1, 2 and 4 s): a process waiting for brokers that do not
 * answer (down behind a firewall that drops, or hung) takes a cancel or a
 * shutdown within a slice, not after ssp.broker_timeout.  A slice that runs
 * out is asked again; an answer, or an error that comes before the slice's
 * end, ends the request as one long wait would have.  Each slice asks
 * anew (librdkafka drops the answer to the last), so the slices grow: a
 * broker that takes a second to answer is given the time in the third.
 */
typedef struct Slices
{
	instr_time	start;			/* of the request */
	instr_time	call;			/* of the current slice */
	int			slice_ms;
	int			n;				/* slices so far */
	SspKafka   *kafka;
} Slices;

/*
 * Changes of servers and user mappings, as this process takes them
 * (option_changes counts them).  A client keeps a print of the server and
 * user mappings it was made of, and the count at which that print was
 * last the catalog's: a request in slices ends at its slice once it is not
 * (slice_again), as its client is of the old options, whenever the change
 * was taken, even between the reading of the options and the request's
 * start.  A worker waiting for brokers that are down takes the server's
 * new brokers within a slice (wait_out, worker.c), not after
 * ssp.broker_timeout.
 */
static uint64 option_changes = 0;
static bool option_callbacks_registered = false;

static void
option_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	option_changes++;
}

/* watch_options: count the changes from now on */
static void
watch_options(void)
{
	if (!option_callbacks_registered)
	{
		CacheRegisterSyscacheCallback(FOREIGNSERVEROID, option_invalidate, 0);
		CacheRegisterSyscacheCallback(USERMAPPINGOID, option_invalidate, 0);
		/* a role made or no longer superuser (options_print) */
		CacheRegisterSyscacheCallback(AUTHOID, option_invalidate, 0);
		option_callbacks_registered = true;
	}
}

/* print_options: add the options column of catalog row tup to print h */
static uint64
print_options(uint64 h, int cacheid, HeapTuple tup, AttrNumber attnum)
{
	bool		isnull;
	Datum		options = SysCacheGetAttr(cacheid, tup, attnum, &isnull);

	if (!isnull)
	{
		struct varlena *v = PG_DETOAST_DATUM_PACKED(options);

		h = hash_combine64(h, hash_bytes_extended((const unsigned char *) VARDATA_ANY(v),
												  VARSIZE_ANY_EXHDR(v), 0));
		if ((Pointer) v != DatumGetPointer(options))
			pfree(v);			/* stored compressed (long certificates) */
	}
	return hash_combine64(h, isnull ? 1 : 2);
}

/*
 * options_print: a hash of the server's owner and options and of the user
 * mappings for userid and PUBLIC, the catalog rows its properties come
 * from, and of whether the owner and userid are superusers, which decides
 * the properties they may set (0: the server is gone).  Read as stored,
 * nothing is checked: nothing here fails but for want of memory.
 */
static uint64
options_print(Oid serverid, Oid userid)
{
	HeapTuple	tup = SearchSysCache1(FOREIGNSERVEROID, ObjectIdGetDatum(serverid));
	Oid			users[2] = {userid, InvalidOid};
	Oid			owner;
	uint64		h;
	int			i;

	if (!HeapTupleIsValid(tup))
		return 0;
	owner = ((Form_pg_foreign_server) GETSTRUCT(tup))->srvowner;
	h = hash_combine64(1, owner);
	h = hash_combine64(h, superuser_arg(owner) ? 1 : 2);
	h = hash_combine64(h, superuser_arg(userid) ? 1 : 2);
	h = print_options(h, FOREIGNSERVEROID, tup, Anum_pg_foreign_server_srvoptions);
	ReleaseSysCache(tup);
	for (i = 0; i < lengthof(users); i++)
	{
		tup = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(users[i]),
							  ObjectIdGetDatum(serverid));
		if (!HeapTupleIsValid(tup))
		{
			h = hash_combine64(h, 3);
			continue;
		}
		h = print_options(h, USERMAPPINGUSERSERVER, tup, Anum_pg_user_mapping_umoptions);
		ReleaseSysCache(tup);
	}
	return h;
}

/* options_changed: is kafka's client of options that are no longer so? */
static bool
options_changed(SspKafka *kafka)
{
	uint64		seen = option_changes;

	if (kafka->options_seen == seen)
		return false;
	if (options_print(kafka->serverid, kafka->userid) != kafka->options_print)
		return true;
	kafka->options_seen = seen;
	return false;
}

/* slices_start: a request in slices to kafka's brokers begins. */
static void
slices_start(Slices *sl, SspKafka *kafka)
{
	sl->kafka = kafka;
	INSTR_TIME_SET_CURRENT(sl->start);
	sl->n = 0;
}

/* slice_next: the wait of the request's next slice. */
static int
slice_next(Slices *sl)
{
	instr_time	now;
	double		left;

	INSTR_TIME_SET_CURRENT(now);
	sl->call = now;
	INSTR_TIME_SUBTRACT(now, sl->start);
	left = ssp_broker_timeout - INSTR_TIME_GET_MILLISEC(now);
	sl->slice_ms = (int) Max(Min(left, Min(SSP_REQUEST_SLICE_MS << sl->n, SSP_REQUEST_SLICE_MAX_MS)), 1);
	sl->n = Min(sl->n + 1, 8);
	return sl->slice_ms;
}

/*
 * slice_again: whether a slice that ended with err is followed by another:
 * it waited out its slice without an answer, ssp.broker_timeout is not over,
 * and no interrupt is pending (the caller frees what it holds, then takes
 * it), and the server and user mappings are as its client was made of.  librdkafka says it
 * waited out its slice with a timeout, or, where no broker could be
 * reached in time, with a transport error or all brokers down.
 */
static bool
slice_again(Slices *sl, rd_kafka_resp_err_t err)
{
	instr_time	now;
	instr_time	total;

	if (err != RD_KAFKA_RESP_ERR__TIMED_OUT && err != RD_KAFKA_RESP_ERR__TRANSPORT &&
		err != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
		return false;
	if (INTERRUPTS_PENDING_CONDITION())
		return false;
	/* (outside a transaction, no invalidation is taken) */
	if (IsTransactionState())
	{
		AcceptInvalidationMessages();
		if (options_changed(sl->kafka))
			return false;
	}
	INSTR_TIME_SET_CURRENT(now);
	total = now;
	INSTR_TIME_SUBTRACT(total, sl->start);
	INSTR_TIME_SUBTRACT(now, sl->call);
	if (INSTR_TIME_GET_MILLISEC(now) < sl->slice_ms - 20 ||
		INSTR_TIME_GET_MILLISEC(total) >= ssp_broker_timeout)
		return false;
	return true;
}

/*
 * topic_partitions: ask the broker how many partitions the topic has, into
 * *count; the error of the request or of the topic, if any.  An answer that
 * names a leader for every partition ends the client's trouble (an idle
 * worker's views said "waiting for broker" after the brokers were back,
 * until a message came).
 */
static rd_kafka_resp_err_t
topic_partitions(SspKafka *kafka, int timeout_ms, int *count)
{
	rd_kafka_topic_t *rkt;
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;

	*count = 0;
	rkt = rd_kafka_topic_new(kafka->rk, kafka->topic, NULL);
	err = rd_kafka_metadata(kafka->rk, 0, rkt, &md, timeout_ms);
	rd_kafka_topic_destroy(rkt);
	if (err)
		return err;
	err = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
	if (!err)
	{
		bool		led = true;
		int			p;

		*count = md->topics[0].partition_cnt;
		for (p = 0; p < *count; p++)
			led &= md->topics[0].partitions[p].leader >= 0;
		if (led)
			kafka->trouble = false;
	}
	rd_kafka_metadata_destroy(md);
	return err;
}

/*
 * ssp_kafka_partition_count: the number of partitions of the topic; errors
 * if the topic does not exist or the broker does not answer in time.
 */
int
ssp_kafka_partition_count(SspKafka *kafka)
{
	return ssp_kafka_partition_count_ext(kafka, false);
}

/*
 * ssp_kafka_partition_count_ext: the same, but 0 for a topic that does not
 * exist if missing_ok.
 */
int
ssp_kafka_partition_count_ext(SspKafka *kafka, bool missing_ok)
{
	int			count;
	rd_kafka_resp_err_t err;
	Slices		sl;

	slices_start(&sl, kafka);
	do
		err = topic_partitions(kafka, slice_next(&sl), &count);
	while (slice_again(&sl, err));
	CHECK_FOR_INTERRUPTS();

	rd_kafka_poll(kafka->rk, 0);	/* the errors it logged, for broker_error */
	if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && missing_ok)
		return 0;
	if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("topic \"%s\" does not exist", kafka->topic),
				 errhint("Create the topic, or enable automatic topic creation on the broker.")));
	if (err)
		broker_error(kafka, "get the metadata", err);
	return count;
}

/*
 * ssp_kafka_partition_count_try: the number of partitions of the topic, or
 * -1 if the broker does not say within timeout_ms; never an error.  It does
 * not poll: a worker's consumer serves its queue itself.
 */
int
ssp_kafka_partition_count_try(SspKafka *kafka, int timeout_ms)
{
	int			count;

	return topic_partitions(kafka, timeout_ms, &count) ? -1 : count;
}

/*
 * offsets_in_slices: ask the brokers, for each partition of list, the
 * offset for what (a time in ms, or RD_KAFKA_OFFSET_BEGINNING: the oldest
 * retained; _END: the next), in one request for them all, in slices
 * (rd_kafka_query_watermark_offsets takes two round trips a partition, and
 * bounds its wait for the answers by socket.timeout.ms only); the
 * request's error.  The answers are in list; the caller frees it, then
 * takes the interrupts.
 */
static rd_kafka_resp_err_t
offsets_in_slices(SspKafka *kafka, rd_kafka_topic_partition_list_t *list, int64 what)
{
	rd_kafka_resp_err_t err;
	Slices		sl;
	int			p;

	slices_start(&sl, kafka);
	do
	{
		for (p = 0; p < list->cnt; p++)
			list->elems[p].offset = what;
		err = rd_kafka_offsets_for_times(kafka->rk, list, slice_next(&sl));
	} while (slice_again(&sl, err));
	return err;
}

/*
 * list_offsets: for partitions first..first+nparts-1, into offsets[0..], the
 * offset the broker gives for which (RD_KAFKA_OFFSET_BEGINNING or _END);
 * list_offsets_err returns the error rather than raise it.
 */
static rd_kafka_resp_err_t
list_offsets_err(SspKafka *kafka, int first, int nparts, int64 which, int64 *offsets)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(nparts, 1));
	rd_kafka_resp_err_t err;
	int			p;

	for (p = 0; p < nparts; p++)
		rd_kafka_topic_partition_list_add(list, kafka->topic, first + p);
	err = offsets_in_slices(kafka, list, which);
	for (p = 0; p < nparts && !err; p++)
	{
		rd_kafka_topic_partition_t *tp = &list->elems[p];

		err = tp->err;
		if (tp->partition >= first && tp->partition < first + nparts)
			offsets[tp->partition - first] = tp->offset;
	}
	rd_kafka_topic_partition_list_destroy(list);
	CHECK_FOR_INTERRUPTS();
	return err;
}

static void
list_offsets(SspKafka *kafka, int first, int nparts, int64 which, int64 *offsets)
{
	rd_kafka_resp_err_t err = list_offsets_err(kafka, first, nparts, which, offsets);

	if (err)
		broker_error(kafka, "get the offsets", err);
}

/* ssp_kafka_watermarks: the oldest retained offset and the next offset. */
void
ssp_kafka_watermarks(SspKafka *kafka, int32 partition, int64 *low, int64 *high)
{
	list_offsets(kafka, partition, 1, RD_KAFKA_OFFSET_BEGINNING, low);
	list_offsets(kafka, partition, 1, RD_KAFKA_OFFSET_END, high);
}

/*
 * ssp_kafka_watermarks_all: ssp_kafka_watermarks of partitions
 * 0..nparts-1, in two requests.
 */
void
ssp_kafka_watermarks_all(SspKafka *kafka, int nparts, int64 *low, int64 *high)
{
	if (nparts <= 0)
		return;
	list_offsets(kafka, 0, nparts, RD_KAFKA_OFFSET_BEGINNING, low);
	list_offsets(kafka, 0, nparts, RD_KAFKA_OFFSET_END, high);
}

/*
 * ssp_kafka_offsets_for_time: for partitions 0..nparts-1, into offsets[],
 * the first offset whose timestamp is at least timestamp_ms, or -1 where
 * the broker has none that late or does not say (a broker without a time
 * index, the test broker among them); in one request.  With must_answer,
 * brokers that do not answer within ssp.broker_timeout are an error rather
 * than -1: a view's start at a time must not become its end.
 */
void
ssp_kafka_offsets_for_time(SspKafka *kafka, int nparts, int64 timestamp_ms, int64 *offsets,
						   bool must_answer)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(nparts, 1));
	rd_kafka_resp_err_t err;
	int			p;

	for (p = 0; p < nparts; p++)
	{
		rd_kafka_topic_partition_list_add(list, kafka->topic, p);
		offsets[p] = -1;
	}
	if (nparts > 0)
	{
		err = offsets_in_slices(kafka, list, timestamp_ms);
		for (p = 0; p < nparts && !err; p++)
		{
			rd_kafka_topic_partition_t *tp = &list->elems[p];

			if (tp->err == RD_KAFKA_RESP_ERR_NO_ERROR && tp->partition >= 0 && tp->partition < nparts)
				offsets[tp->partition] = tp->offset;
		}
	}
	else
		err = RD_KAFKA_RESP_ERR_NO_ERROR;
	rd_kafka_topic_partition_list_destroy(list);
	CHECK_FOR_INTERRUPTS();
	if (must_answer && (err == RD_KAFKA_RESP_ERR__TIMED_OUT || err == RD_KAFKA_RESP_ERR__TRANSPORT ||
						err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN))
		broker_error(kafka, "get the offsets for a time", err);
}

/*
 * assign: rd_kafka_assign, at least ASSIGN_SETTLE_MS after the last one.
 * librdkafka (2.0 to 2.15 at least, issue 5573) stops a partition that an
 * assignment removes with a request to its broker thread, and marks it
 * stopped only when the reply comes; another assignment before that asks
 * a second stop, whose reply then fails an assertion and aborts the
 * process (seen in 003 and 029: a worker that moved its readers twice in
 * a row, the server restarted).  The replies take a millisecond or two;
 * a view moves its consumer rarely (a view attaching, a batch rolled
 * back, new partitions).  Each assignment after the first removes the
 * partitions of the one before, so only from the second on is a stop
 * pending; a consumer assigned once (a scan) never waits.
 */
#define ASSIGN_SETTLE_MS 250

/*
 * settle: wait out ASSIGN_SETTLE_MS since the last assignment, when it
 * removed partitions, before another, or before the consumer is destroyed
 * (which ends its assignment too; not interruptible then: it runs in
 * cleanup).
 */
static void
settle(SspKafka *kafka, bool interruptible)
{
	for (;;)
	{
		instr_time	now;
		double		ms;

		if (kafka->nassigned < 2)
			return;
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, kafka->assigned_at);
		ms = INSTR_TIME_GET_MILLISEC(now);
		if (ms >= ASSIGN_SETTLE_MS)
			return;
		if (interruptible)
			CHECK_FOR_INTERRUPTS();
		pg_usleep((long) Min(ASSIGN_SETTLE_MS - ms, 10.0) * 1000L + 1);
	}
}

static rd_kafka_resp_err_t
assign(SspKafka *kafka, rd_kafka_topic_partition_list_t *list)
{
	rd_kafka_resp_err_t err;

	settle(kafka, true);
	err = rd_kafka_assign(kafka->rk, list);
	INSTR_TIME_SET_CURRENT(kafka->assigned_at);
	kafka->nassigned++;
	return err;
}

/*
 * ssp_kafka_assign: start reading each range; ssp_kafka_next then returns
 * its messages until every range is read.
 */
void
ssp_kafka_assign(SspKafka *kafka, SspPartitionRange *ranges, int nranges)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(nranges, 1));
	rd_kafka_resp_err_t err;
	int			i;

	if (kafka->current)
		rd_kafka_message_destroy(kafka->current);
	kafka->current = NULL;
	kafka->ranges = ranges;
	kafka->nranges = nranges;
	kafka->done = palloc0(sizeof(bool) * Max(nranges, 1));
	kafka->nleft = 0;
	for (i = 0; i < nranges; i++)
	{
		if (ranges[i].start >= ranges[i].end)
		{
			kafka->done[i] = true;
			continue;
		}
		rd_kafka_topic_partition_list_add(list, kafka->topic,
										  ranges[i].partition)->offset = ranges[i].start;
		kafka->nleft++;
	}
	err = assign(kafka, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (err)
		broker_error(kafka, "start reading", err);
}

/* describe_message: a librdkafka message as decode.c sees it. */
static void
describe_message(rd_kafka_message_t *m, SspMessage *msg)
{
	msg->value = m->payload;
	msg->value_len = m->len;
	msg->key = m->key;
	msg->key_len = m->key_len;
	msg->partition = m->partition;
	msg->offset = m->offset;
	msg->timestamp_ms = rd_kafka_message_timestamp(m, NULL);
	msg->handle = m;
}

static int
range_index(SspKafka *kafka, int32 partition)
{
	int			i;

	for (i = 0; i < kafka->nranges; i++)
		if (kafka->ranges[i].partition == partition)
			return i;
	return -1;
}

static void
mark_done(SspKafka *kafka, int i)
{
	if (i >= 0 && !kafka->done[i])
	{
		kafka->done[i] = true;
		kafka->nleft--;
	}
}

/*
 * ssp_kafka_next: the next message of the assigned ranges into msg; false
 * once every range is read.  msg stays valid until the next call.  Errors
 * if nothing arrives for ssp.broker_timeout.
 */
bool
ssp_kafka_next(SspKafka *kafka, SspMessage *msg)
{
	instr_time	start;

	if (kafka->current)
		rd_kafka_message_destroy(kafka->current);
	kafka->current = NULL;

	INSTR_TIME_SET_CURRENT(start);
	while (kafka->nleft > 0)
	{
		rd_kafka_message_t *m;
		int			i;

		CHECK_FOR_INTERRUPTS();
		m = rd_kafka_consumer_poll(kafka->rk, SSP_POLL_MS);
		if (m == NULL)
		{
			instr_time	now;

			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MILLISEC(now) > ssp_broker_timeout)
				broker_error(kafka, "read messages", RD_KAFKA_RESP_ERR__TIMED_OUT);
			continue;
		}
		INSTR_TIME_SET_CURRENT(start);
		i = m->rkt ? range_index(kafka, m->partition) : -1;

		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
		{
			mark_done(kafka, i);
			rd_kafka_message_destroy(m);
			continue;
		}
		if (m->err)
		{
			rd_kafka_resp_err_t err = m->err;

			mask(kafka, rd_kafka_message_errstr(m), kafka->last_error,
				 sizeof(kafka->last_error));
			rd_kafka_message_destroy(m);
			if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED && kafka->refusable)
			{
				kafka->refused = true;
				kafka->nleft = 0;
				break;
			}
			/* transient errors are retried by librdkafka itself */
			if (err == RD_KAFKA_RESP_ERR__TRANSPORT ||
				err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
				err == RD_KAFKA_RESP_ERR__RESOLVE)
				continue;
			broker_error(kafka, "read messages", err);
		}
		if (i < 0 || kafka->done[i] || m->offset >= kafka->ranges[i].end)
		{
			mark_done(kafka, i);
			rd_kafka_message_destroy(m);
			continue;
		}
		if (m->offset >= kafka->ranges[i].end - 1)
			mark_done(kafka, i);

		kafka->current = m;
		describe_message(m, msg);
		return true;
	}
	return false;
}

/*
 * ssp_kafka_header: the last header called name of msg; false if none.
 */
bool
ssp_kafka_header(SspMessage *msg, const char *name, const char **value,
				 size_t *len)
{
	rd_kafka_headers_t *hdrs;
	const void *v;

	if (msg->handle == NULL ||
		rd_kafka_message_headers(msg->handle, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return false;
	if (rd_kafka_header_get_last(hdrs, name, &v, len) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return false;
	*value = v;
	return true;
}

/*
 * ssp_kafka_tail_number: the highest value of header name, read as a
 * decimal number, among the last tail messages of each partition of the
 * consumer's topic, into *max: 0 if none of them has it, or the topic is
 * empty or does not exist.  False if the brokers refuse the client the
 * topic (a principal may write a topic it may not read); any other
 * failure is an error.  Assigns the consumer, which the caller closes.
 */
bool
ssp_kafka_tail_number(SspKafka *kafka, const char *name, int tail, int64 *max)
{
	rd_kafka_resp_err_t err;
	Slices		sl;
	int			nparts;
	int64	   *low;
	int64	   *high;
	SspPartitionRange *ranges;
	SspMessage	msg;
	int			n = 0;
	int			p;

	*max = 0;
	slices_start(&sl, kafka);
	do
		err = topic_partitions(kafka, slice_next(&sl), &nparts);
	while (slice_again(&sl, err));
	CHECK_FOR_INTERRUPTS();
	rd_kafka_poll(kafka->rk, 0);
	/* a topic being created (by a producer elsewhere) holds nothing yet */
	if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
		return true;
	if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
		return false;
	if (err)
		broker_error(kafka, "get the metadata", err);
	if (nparts <= 0)
		return true;

	low = palloc(sizeof(int64) * nparts);
	high = palloc(sizeof(int64) * nparts);
	err = list_offsets_err(kafka, 0, nparts, RD_KAFKA_OFFSET_BEGINNING, low);
	if (!err)
		err = list_offsets_err(kafka, 0, nparts, RD_KAFKA_OFFSET_END, high);
	if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
		return false;
	if (err)
		broker_error(kafka, "get the offsets", err);

	ranges = palloc0(sizeof(SspPartitionRange) * nparts);
	for (p = 0; p < nparts; p++)
	{
		if (high[p] <= low[p])
			continue;
		ranges[n].partition = p;
		ranges[n].start = Max(low[p], high[p] - tail);
		ranges[n].end = high[p];
		n++;
	}
	if (n == 0)
		return true;
	ssp_kafka_assign(kafka, ranges, n);
	kafka->refusable = true;
	while (ssp_kafka_next(kafka, &msg))
	{
		const char *value;
		size_t		len;
		char		digits[32];
		int64		number;
		char	   *end;

		if (!ssp_kafka_header(&msg, name, &value, &len) || len == 0 || len >= sizeof(digits))
			continue;
		memcpy(digits, value, len);
		digits[len] = '\0';
		errno = 0;
		number = strtoi64(digits, &end, 10);
		/* one past int64 is at its end too (it was passed over) */
		if ((errno == 0 || (errno == ERANGE && number > 0)) && *end == '\0')
			*max = Max(*max, number);
	}
	kafka->refusable = false;
	return !kafka->refused;
}

/* Producers ---------------------------------------------------------- */

static void
destroy_producer(SspKafka *kafka)
{
	kafka->purging = true;
	kafka->purge_level = 0;
	rd_kafka_purge(kafka->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_poll(kafka->rk, 0);
	rd_kafka_destroy(kafka->rk);
	kafka->rk = NULL;
}

static void
producers_at_exit(int code, Datum arg)
{
	ListCell   *lc;

	foreach(lc, producers)
		destroy_producer(lfirst(lc));
	producers = NIL;
	foreach(lc, retired)
		destroy_producer(lfirst(lc));
	retired = NIL;
}

/*
 * producers_invalidate: the producers whose server, or whose role (it may
 * have lost superuser: its server's options are checked again), changed
 * are built anew at their next use; any user mapping's change (which may
 * be the one a producer uses, new or PUBLIC) makes every one.
 */
static void
producers_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	ListCell   *lc;

	foreach(lc, producers)
	{
		SspKafka   *kafka = lfirst(lc);

		if (hashvalue == 0 || cacheid == USERMAPPINGOID ||
			(cacheid == FOREIGNSERVEROID && hashvalue == kafka->server_hash) ||
			(cacheid == AUTHOID && hashvalue == kafka->user_hash))
			kafka->stale = true;
	}
}

/*
 * purge: drop the messages not yet sent of the producers that queued some
 * at nest level level or deeper, and serve their reports now: those
 * queued at a lower level (by a statement around the subtransaction) are
 * failures its flush reports; those queued at level or deeper were meant
 * to go.  The producers have queued nothing deeper than level - 1 since.
 */
static void
purge(List *list, int level)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		SspKafka   *kafka = lfirst(lc);

		if (kafka->queued_level < level)
			continue;
		kafka->purging = true;
		kafka->purge_level = level;
		rd_kafka_purge(kafka->rk, RD_KAFKA_PURGE_F_QUEUE);
		rd_kafka_poll(kafka->rk, 0);
		kafka->purging = false;
		kafka->queued_level = level - 1;
	}
}

/*
 * On abort, messages not yet sent are dropped rather than sent later.  A
 * producer retired during the transaction goes once it ends.  Kafka has
 * no two-phase commit: a transaction that produced cannot be prepared (a
 * ROLLBACK PREPARED would leave its messages in the topic).
 */
static void
producers_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event == XACT_EVENT_PRE_PREPARE && produced_in_xact)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot prepare a transaction that inserted into a stream"),
				 errdetail("Kafka has no two-phase commit: the messages were sent when each INSERT ended.")));
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		purge(producers, 1);
		purge(retired, 1);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		foreach(lc, retired)
		{
			destroy_producer(lfirst(lc));
			ssp_secrets_free(((SspKafka *) lfirst(lc))->secrets);
			pfree(lfirst(lc));
		}
		list_free(retired);
		retired = NIL;
		foreach(lc, producers)
			((SspKafka *) lfirst(lc))->queued_level = 0;
		produced_in_xact = false;
	}
}

/*
 * On a subtransaction's abort (ROLLBACK TO SAVEPOINT, an exception block),
 * so are the messages its statements queued, if it queued any: those a
 * statement that goes on around it queued before are purged with them
 * (a producer's queue is one), and its flush then fails (ssp_kafka_flush
 * counts failures from the statement's start); if it lost none, it goes on.  A subtransaction that
 * queued nothing (a lenient decode's, a trigger's exception block) drops
 * nothing.  One that commits leaves what it queued to its parent.
 */
static void
producers_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		purge(producers, level);
		purge(retired, level);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, producers)
			if (((SspKafka *) lfirst(lc))->queued_level >= level)
				((SspKafka *) lfirst(lc))->queued_level = level - 1;
		foreach(lc, retired)
			if (((SspKafka *) lfirst(lc))->queued_level >= level)
				((SspKafka *) lfirst(lc))->queued_level = level - 1;
	}
}

/*
 * ssp_kafka_producer: the backend's producer for the server as userid,
 * created on first use and kept until the server or mapping changes.
 */
SspKafka *
ssp_kafka_producer(Oid serverid, Oid userid)
{
	ListCell   *lc;
	SspKafka   *kafka;
	MemoryContext old;

	if (!producer_callbacks_registered)
	{
		before_shmem_exit(producers_at_exit, 0);
		CacheRegisterSyscacheCallback(FOREIGNSERVEROID, producers_invalidate, 0);
		CacheRegisterSyscacheCallback(USERMAPPINGOID, producers_invalidate, 0);
		/* a role that lost superuser: its server's options are checked again */
		CacheRegisterSyscacheCallback(AUTHOID, producers_invalidate, 0);
		RegisterXactCallback(producers_xact_callback, NULL);
		RegisterSubXactCallback(producers_subxact_callback, NULL);
		producer_callbacks_registered = true;
	}

	foreach(lc, producers)
	{
		kafka = lfirst(lc);
		if (kafka->serverid != serverid || kafka->userid != userid)
			continue;
		/* a fatal error (an idempotent producer refused a producer id) ends it */
		if (!kafka->stale && rd_kafka_fatal_error(kafka->rk, NULL, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
			return kafka;

		/*
		 * A statement of this transaction may hold it, with messages to
		 * flush (an INSERT into a partitioned table of streams opens each
		 * partition as its first row comes): it goes when the transaction
		 * ends.
		 */
		producers = foreach_delete_current(producers, lc);
		old = MemoryContextSwitchTo(TopMemoryContext);
		retired = lappend(retired, kafka);
		MemoryContextSwitchTo(old);
		break;
	}

	old = MemoryContextSwitchTo(TopMemoryContext);
	kafka = palloc0(sizeof(SspKafka));
	kafka->serverid = serverid;
	kafka->userid = userid;
	kafka->server_hash = GetSysCacheHashValue1(FOREIGNSERVEROID, ObjectIdGetDatum(serverid));
	kafka->user_hash = GetSysCacheHashValue1(AUTHOID, ObjectIdGetDatum(userid));
	kafka->topic = "";
	MemoryContextSwitchTo(old);
	kafka->rk = new_client(kafka, RD_KAFKA_PRODUCER);
	old = MemoryContextSwitchTo(TopMemoryContext);
	producers = lappend(producers, kafka);
	MemoryContextSwitchTo(old);
	return kafka;
}

static int	delivery_hint(SspKafka *kafka, const char *topic, int32 partition,
						  rd_kafka_resp_err_t err);

/*
 * fatal_error: a producer's fatal error (librdkafka's idempotent producer
 * stops for good when, say, it may not get a producer id): the producer is
 * built anew next time, and the error says why.
 */
static void
fatal_error(SspKafka *kafka, const char *topic)
{
	char		reason[512];
	char		shown[512];
	rd_kafka_resp_err_t err = rd_kafka_fatal_error(kafka->rk, reason, sizeof(reason));

	if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	mask(kafka, reason, shown, sizeof(shown));
	kafka->stale = true;
	ereport(ERROR,
			(errcode(ERRCODE_FDW_ERROR),
			 errmsg("could not produce to topic \"%s\"", topic),
			 errdetail("The producer of server \"%s\" failed: %s", kafka->servername, shown),
			 err == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED ||
			 err == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ?
			 errhint("The principal of server \"%s\" gets no producer id: an idempotent producer needs WRITE on the topic (IDEMPOTENT_WRITE on the cluster before Kafka 3) (kafka-acls).",
					 kafka->servername) :
			 /* a refused batch stopped it: what refused it says what to do */
			 delivery_hint(kafka, topic, -1,
						   err == RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE ? kafka->delivery_code : err)));
}

/*
 * ssp_kafka_purge: the producer's messages not acknowledged yet are
 * dropped (some may have been delivered), and their reports served now,
 * so that none is counted against the next flush.
 */
void
ssp_kafka_purge(SspKafka *kafka)
{
	kafka->purging = true;
	kafka->purge_level = 0;
	rd_kafka_purge(kafka->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_poll(kafka->rk, 0);
	kafka->purging = false;
}

static void
check_elapsed(SspKafka *kafka, instr_time start, const char *topic, int timeout_ms)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	if (INSTR_TIME_GET_MILLISEC(now) > timeout_ms)
	{
		int			pending = rd_kafka_outq_len(kafka->rk);

		ssp_kafka_purge(kafka);
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not produce to topic \"%s\": timed out", topic),
				 kafka->last_error[0] ?
				 errdetail_plural("%d message was not acknowledged within %d ms (last broker error: %s).",
								  "%d messages were not acknowledged within %d ms (last broker error: %s).",
								  pending, pending, timeout_ms, kafka->last_error) :
				 errdetail_plural("%d message was not acknowledged within %d ms.",
								  "%d messages were not acknowledged within %d ms.",
								  pending, pending, timeout_ms),
				 kafka->last_code == RD_KAFKA_RESP_ERR__AUTHENTICATION ? trouble_hint(kafka, RD_KAFKA_RESP_ERR_NO_ERROR) :
				 errhint("Check that the brokers of server \"%s\" are up; some messages may have been delivered.",
						 kafka->servername)));
	}
}

/*
 * check_moved: end a wait for the broker once the server or user mapping
 * the producer was made of is no longer so (its brokers moved, a password
 * rotated): what is not acknowledged is purged and the statement fails, as
 * at ssp.broker_timeout, rather than wait that out on the old brokers; a
 * view's worker then publishes again with a producer of the new options.
 * (Outside a transaction no invalidation is taken.)
 */
static void
check_moved(SspKafka *kafka, const char *topic)
{
	int			pending;

	if (!IsTransactionState())
		return;
	AcceptInvalidationMessages();
	if (!options_changed(kafka))
		return;
	pending = rd_kafka_outq_len(kafka->rk);
	ssp_kafka_purge(kafka);
	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("could not produce to topic \"%s\": server \"%s\" or its user mapping changed",
					topic, kafka->servername),
			 errdetail_plural("%d message was not acknowledged when it changed.",
							  "%d messages were not acknowledged when it changed.",
							  pending, pending),
			 errhint("Some messages may have been delivered.")));
}

/*
 * produce: queue one message for topic; ssp_kafka_flush waits for the
 * broker's acknowledgement.  A message larger than the producer's
 * message.max.bytes is an error, or with size_ok queues nothing and
 * returns false.
 */
static bool
produce(SspKafka *kafka, const char *topic, SspOutMessage *out, bool size_ok)
{
	rd_kafka_headers_t *hdrs = NULL;
	rd_kafka_resp_err_t err;
	instr_time	start;
	ListCell   *lc;

	produced_in_xact = true;
	kafka->queued_level = Max(kafka->queued_level, GetCurrentTransactionNestLevel());
	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		if (out->headers != NIL)
		{
			hdrs = rd_kafka_headers_new(list_length(out->headers));
			foreach(lc, out->headers)
			{
				SspHeader  *h = lfirst(lc);

				rd_kafka_header_add(hdrs, h->name, -1, h->value, h->len);
			}
		}
		err = rd_kafka_producev(kafka->rk,
								RD_KAFKA_V_TOPIC(topic),
								RD_KAFKA_V_PARTITION(out->partition),
								RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
								RD_KAFKA_V_VALUE(out->value_null ? NULL : out->value.data,
												 out->value_null ? 0 : out->value.len),
								RD_KAFKA_V_KEY(out->key_null ? NULL : out->key.data,
											   out->key_null ? 0 : out->key.len),
								RD_KAFKA_V_TIMESTAMP(out->timestamp_ms),
								RD_KAFKA_V_HEADERS(hdrs),
								/* for dr_msg_cb: the nest level that queued it, and whether it named its partition */
								RD_KAFKA_V_OPAQUE((void *) (((intptr_t) GetCurrentTransactionNestLevel() << 1) |
															(out->partition >= 0))),
								RD_KAFKA_V_END);
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			break;
		if (hdrs)
			rd_kafka_headers_destroy(hdrs);
		hdrs = NULL;
		if (err == RD_KAFKA_RESP_ERR__FATAL)
			fatal_error(kafka, topic);
		if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE && size_ok)
			return false;
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("could not produce to topic \"%s\"", topic),
					 errdetail("%s", rd_kafka_err2str(err)),
					 delivery_hint(kafka, topic, out->partition, err)));
		/* full with nothing in it: the message alone is larger than the queue */
		if (rd_kafka_outq_len(kafka->rk) == 0)
		{
			char		value[32] = "?";
			size_t		size = sizeof(value);

			(void) rd_kafka_conf_get(rd_kafka_conf(kafka->rk), "queue.buffering.max.kbytes",
									 value, &size);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("could not produce to topic \"%s\": a message of %d bytes is larger than the producer's queue",
							topic, (out->key_null ? 0 : out->key.len) + (out->value_null ? 0 : out->value.len)),
					 errdetail("Server \"%s\" sets queue.buffering.max.kbytes to %s.",
							   kafka->servername, value),
					 errhint("Raise queue.buffering.max.kbytes above the largest message, or leave it to librdkafka's default.")));
		}
		/* the local queue is full: wait for the broker to take some */
		CHECK_FOR_INTERRUPTS();
		rd_kafka_poll(kafka->rk, SSP_POLL_MS);
		check_elapsed(kafka, start, topic, ssp_broker_timeout);
		check_moved(kafka, topic);
	}
	rd_kafka_poll(kafka->rk, 0);
	return true;
}

/*
 * ssp_kafka_produce: queue one message for topic; ssp_kafka_flush waits
 * for the broker's acknowledgement.
 */
void
ssp_kafka_produce(SspKafka *kafka, const char *topic, SspOutMessage *out)
{
	(void) produce(kafka, topic, out, false);
}

/*
 * ssp_kafka_produce_if_fits: ssp_kafka_produce, but false, with nothing
 * queued, for a message larger than the producer's message.max.bytes
 * (ssp_kafka_message_max_bytes).
 */
bool
ssp_kafka_produce_if_fits(SspKafka *kafka, const char *topic, SspOutMessage *out)
{
	return produce(kafka, topic, out, true);
}

/*
 * ssp_kafka_message_max_bytes: the producer's message.max.bytes, the
 * largest message it sends, overhead included (-1 if librdkafka does not
 * say).
 */
int
ssp_kafka_message_max_bytes(SspKafka *kafka)
{
	char		value[32];
	size_t		size = sizeof(value);

	if (rd_kafka_conf_get(rd_kafka_conf(kafka->rk), "message.max.bytes", value, &size) != RD_KAFKA_CONF_OK)
		return -1;
	return pg_strtoint32(value);
}

/*
 * ssp_kafka_batch_max_bytes: the largest batch of messages the producer
 * builds (the lower of its batch.size and message.max.bytes); -1 if
 * librdkafka does not say.
 */
int
ssp_kafka_batch_max_bytes(SspKafka *kafka)
{
	char		value[32];
	size_t		size = sizeof(value);
	int			max = ssp_kafka_message_max_bytes(kafka);

	if (max < 0 ||
		rd_kafka_conf_get(rd_kafka_conf(kafka->rk), "batch.size", value, &size) != RD_KAFKA_CONF_OK)
		return -1;
	return Min(max, pg_strtoint32(value));
}

/*
 * ssp_kafka_topic_max_bytes: the topic's max.message.bytes, the largest
 * batch of records its brokers append, from DescribeConfigs through the
 * client; -1 if the brokers do not say within timeout_ms (no
 * DESCRIBE_CONFIGS on the topic, a broker without the request), which the
 * caller takes as no limit known.  librdkafka sends the request to the
 * controller the brokers name in their metadata: where that is none of
 * them (librdkafka's mock cluster), it would wait in vain.
 */
int
ssp_kafka_topic_max_bytes(SspKafka *kafka, const char *topic, int timeout_ms)
{
	rd_kafka_ConfigResource_t *resource;
	rd_kafka_AdminOptions_t *options;
	rd_kafka_queue_t *queue;
	rd_kafka_event_t *volatile event = NULL;
	volatile int limit = -1;
	char		errstr[256];
	instr_time	start;
	const struct rd_kafka_metadata *md;
	int32_t		controller;
	bool		known = false;
	int			i;

	if (rd_kafka_metadata(kafka->rk, 0, NULL, &md, timeout_ms) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return -1;
	controller = rd_kafka_controllerid(kafka->rk, 0);
	for (i = 0; i < md->broker_cnt; i++)
		known |= md->brokers[i].id == controller;
	rd_kafka_metadata_destroy(md);
	if (!known)
		return -1;

	resource = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
	options = rd_kafka_AdminOptions_new(kafka->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, errstr, sizeof(errstr));
	queue = rd_kafka_queue_new(kafka->rk);
	rd_kafka_DescribeConfigs(kafka->rk, &resource, 1, options, queue);
	INSTR_TIME_SET_CURRENT(start);
	PG_TRY();
	{
		const rd_kafka_DescribeConfigs_result_t *result;
		const rd_kafka_ConfigResource_t **resources = NULL;
		size_t		nresources = 0;

		while (event == NULL)
		{
			instr_time	now;

			CHECK_FOR_INTERRUPTS();
			event = rd_kafka_queue_poll(queue, SSP_POLL_MS);
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (event == NULL && INSTR_TIME_GET_MILLISEC(now) > timeout_ms + SSP_POLL_MS)
				break;
		}
		result = event ? rd_kafka_event_DescribeConfigs_result(event) : NULL;
		if (result && rd_kafka_event_error(event) == RD_KAFKA_RESP_ERR_NO_ERROR)
			resources = rd_kafka_DescribeConfigs_result_resources(result, &nresources);
		if (nresources == 1 &&
			rd_kafka_ConfigResource_error(resources[0]) == RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			const rd_kafka_ConfigEntry_t **entries;
			size_t		nentries;
			size_t		i;

			entries = rd_kafka_ConfigResource_configs(resources[0], &nentries);
			for (i = 0; i < nentries; i++)
			{
				const char *value = rd_kafka_ConfigEntry_value(entries[i]);
				char	   *end;
				long		n;

				if (strcmp(rd_kafka_ConfigEntry_name(entries[i]), "max.message.bytes") != 0 ||
					value == NULL)
					continue;
				errno = 0;
				n = strtol(value, &end, 10);
				if (errno == 0 && *end == '\0' && n > 0 && n <= PG_INT32_MAX)
					limit = (int) n;
			}
		}
	}
	PG_FINALLY();
	{
		if (event)
			rd_kafka_event_destroy(event);
		rd_kafka_queue_destroy(queue);
		rd_kafka_AdminOptions_destroy(options);
		rd_kafka_ConfigResource_destroy(resource);
	}
	PG_END_TRY();
	return limit;
}

/* ssp_kafka_server_name: the name of the client's server */
const char *
ssp_kafka_server_name(SspKafka *kafka)
{
	return kafka->servername;
}

/* delivery_hint: what to do about a message the broker refused */
static int
delivery_hint(SspKafka *kafka, const char *topic, int32 partition, rd_kafka_resp_err_t err)
{
	switch (err)
	{
		case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
			if (partition < 0)
				return errhint("Topic \"%s\" was deleted, or has fewer partitions than it had.",
							   topic);
			return errhint("Topic \"%s\" has no partition %d: a stream's \"partition\" column takes the number of one of the topic's partitions, from 0.",
						   topic, (int) partition);
		case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
			return errhint("A broker refuses a message stamped further ahead of its clock than the topic's message.timestamp.after.max.ms (an hour, by default, since Kafka 4), or further behind than message.timestamp.before.max.ms; a stream's \"timestamp\" column stamps each message.");
		case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
		case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
			return errhint("The message is larger than the topic's max.message.bytes, or than the server's message.max.bytes property.");
		case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
			return errhint("The principal of server \"%s\" may not write to the topic: grant it WRITE (kafka-acls).",
						   kafka->servername);
		default:
			return 0;
	}
}

/* answers: the producer's messages acknowledged or failed so far */
static inline uint64
answers(SspKafka *kafka)
{
	return kafka->acked + kafka->failures.refused + kafka->failures.purged;
}

/*
 * ssp_kafka_failures: the producer's delivery failures so far, from which
 * a statement's flush counts its own.
 */
SspFailures
ssp_kafka_failures(SspKafka *kafka)
{
	return kafka->failures;
}

/* check_purged: errors if a subtransaction dropped messages since before */
static void
check_purged(SspKafka *kafka, const char *topic, SspFailures before)
{
	uint64		purged = kafka->failures.purged - before.purged;

	if (purged > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("could not produce to topic \"%s\"", topic),
				 errdetail("A subtransaction that rolled back within this statement dropped " UINT64_FORMAT " of its messages before they were sent.",
						   purged),
				 errhint("Rolling back a subtransaction drops every message the server's producer has not sent yet, those of the statement around it too.")));
}

/*
 * ssp_kafka_flush: wait until the broker has acknowledged every queued
 * message; errors if one failed since the producer had before
 * (ssp_kafka_failures when the statement began: a message of it that a
 * subtransaction's abort purged counts), or the broker answers nothing
 * for timeout_ms (what is not acknowledged then is purged).
 */
void
ssp_kafka_flush(SspKafka *kafka, const char *topic, int timeout_ms, SspFailures before)
{
	instr_time	start;
	uint64		refused;
	uint64		answered = answers(kafka);

	/* what a subtransaction dropped is lost whatever the broker does */
	check_purged(kafka, topic, before);
	INSTR_TIME_SET_CURRENT(start);
	while (rd_kafka_outq_len(kafka->rk) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		rd_kafka_flush(kafka->rk, SSP_POLL_MS);
		/* a slow broker is no failure: one that answers nothing in timeout_ms is */
		if (answers(kafka) != answered)
		{
			answered = answers(kafka);
			INSTR_TIME_SET_CURRENT(start);
		}
		/* a stopped producer sends nothing more: no use waiting */
		fatal_error(kafka, topic);
		check_elapsed(kafka, start, topic, timeout_ms);
		check_moved(kafka, topic);
	}
	rd_kafka_poll(kafka->rk, 0);
	check_purged(kafka, topic, before);
	refused = kafka->failures.refused - before.refused;
	if (refused > 0)
		fatal_error(kafka, topic);
	if (refused > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("could not produce to topic \"%s\"", topic),
				 errdetail_plural("The broker refused " UINT64_FORMAT " message: %s",
								  "The broker refused " UINT64_FORMAT " messages: %s",
								  refused, refused, kafka->delivery_error),
				 delivery_hint(kafka, topic, kafka->delivery_partition, kafka->delivery_code)));
}

/* Worker consumers -------------------------------------------------------- */

/*
 * ssp_kafka_event_fd: a descriptor that becomes readable when messages or
 * events wait in the consumer's queue, for WaitLatchOrSocket.  Read it
 * empty with ssp_kafka_drain_fd.
 */
int
ssp_kafka_event_fd(SspKafka *kafka)
{
	if (kafka->queue)
		return kafka->pipefd[0];
	if (pipe(kafka->pipefd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create a pipe: %m")));
	fcntl(kafka->pipefd[0], F_SETFL, O_NONBLOCK);
	fcntl(kafka->pipefd[1], F_SETFL, O_NONBLOCK);
	kafka->queue = rd_kafka_queue_get_consumer(kafka->rk);
	rd_kafka_queue_io_event_enable(kafka->queue, kafka->pipefd[1], "1", 1);
	return kafka->pipefd[0];
}

void
ssp_kafka_drain_fd(SspKafka *kafka)
{
	char		buf[64];

	while (read(kafka->pipefd[0], buf, sizeof(buf)) > 0)
		;
}

/*
 * ssp_kafka_commit: commit to the consumer's group (a view's: ssp.DB.OID)
 * the next offsets of the partitions a batch moved (-1: did not move),
 * asynchronously, after Postgres committed them.  Postgres stays the
 * truth: this is for kafka-consumer-groups and other lag tools, and a
 * commit that fails (no broker, no ACL on the group) is only logged, at
 * DEBUG2 (log_cb).
 */
void
ssp_kafka_commit(SspKafka *kafka, int nparts, const int64 *next)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(nparts, 1));
	int			p;

	for (p = 0; p < nparts; p++)
		if (next[p] >= 0)
			rd_kafka_topic_partition_list_add(list, kafka->topic, p)->offset = next[p];
	if (list->cnt > 0)
		(void) rd_kafka_commit(kafka->rk, list, 1);
	rd_kafka_topic_partition_list_destroy(list);
}

/*
 * ssp_kafka_assign_at: read every partition from its offset; -1 means the
 * oldest retained message, SSP_OFFSET_NOT_OURS not to read it.
 */
void
ssp_kafka_assign_at(SspKafka *kafka, int nparts, const int64 *offsets)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(nparts, 1));
	rd_kafka_resp_err_t err;
	int			p;

	/* what was taken from the old positions: librdkafka fetches it again */
	drop_held(kafka);
	for (p = 0; p < nparts; p++)
		if (offsets[p] != SSP_OFFSET_NOT_OURS)
			rd_kafka_topic_partition_list_add(list, kafka->topic, p)->offset =
				offsets[p] >= 0 ? offsets[p] : RD_KAFKA_OFFSET_BEGINNING;
	err = assign(kafka, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (err)
		broker_error(kafka, "start reading", err);
}

/*
 * hold_parts: the held FIFOs of partitions 0 to nparts - 1.
 */
static void
hold_parts(SspKafka *kafka, int nparts)
{
	int			p;

	if (kafka->nheldparts >= nparts)
		return;
	kafka->held = kafka->held ?
		repalloc(kafka->held, sizeof(SspHeld) * nparts) :
		MemoryContextAlloc(GetMemoryChunkContext(kafka), sizeof(SspHeld) * nparts);
	memset(kafka->held + kafka->nheldparts, 0, sizeof(SspHeld) * (nparts - kafka->nheldparts));
	for (p = kafka->nheldparts; p < nparts; p++)
		kafka->held[p].eof = -1;
	kafka->nheldparts = nparts;
}

/*
 * hold: what the queue gave: a message is held at the end of its
 * partition's FIFO, for hand_out.  A partition's end (EOF) or its next
 * offset gone (lost) is said (eof[], lost[]) once the messages before it
 * are handed out: the caller moves past the end, or records what was lost,
 * only after it applied them.  An error is remembered.
 */
static void
hold(SspKafka *kafka, rd_kafka_message_t *m, int64 *eof, bool *lost, int nparts)
{
	SspHeld    *h = NULL;

	if (m->partition >= 0 && m->partition < nparts)
		h = &kafka->held[m->partition];
	if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
		m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET)
	{
		/* an end, or the next offset gone (retention): the caller decides */
		bool		gone = m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET;

		if (h && h->count > 0 && gone)
			h->lost = true;
		else if (h && h->count > 0)
			h->eof = m->offset;
		else if (h && gone)
			lost[m->partition] = true;
		else if (h)
			eof[m->partition] = m->offset;
		rd_kafka_message_destroy(m);
		return;
	}
	if (m->err)
	{
		char		shown[512];

		mask(kafka, rd_kafka_message_errstr(m), shown, sizeof(shown));
		snprintf(kafka->last_error, sizeof(kafka->last_error), "topic \"%s\": %s",
				 kafka->topic, shown);
		kafka->last_code = m->err;
		kafka->trouble = true;
		rd_kafka_message_destroy(m);
		return;
	}
	kafka->trouble = false;
	if (h == NULL)
	{
		/* not assigned: cannot be */
		rd_kafka_message_destroy(m);
		return;
	}
	if (h->head + h->count == h->cap)
	{
		if (h->head > 0)
		{
			memmove(h->m, h->m + h->head, sizeof(SspMessage) * h->count);
			h->head = 0;
		}
		else
		{
			h->cap = Max(64, h->cap * 2);
			h->m = h->m ? repalloc_huge(h->m, sizeof(SspMessage) * h->cap) :
				MemoryContextAllocHuge(GetMemoryChunkContext(kafka), sizeof(SspMessage) * h->cap);
		}
	}
	/* described now, while librdkafka's message is in the cache */
	describe_message(m, &h->m[h->head + h->count++]);
	kafka->nheld++;
}

/* a partition in hand_out's heap, by the timestamp of its first held message */
typedef struct HeldHead
{
	int64		ts;
	int			p;
} HeldHead;

static inline bool
head_before(const HeldHead *a, const HeldHead *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->p < b->p);
}

/* sift_down: restore the heap below position i. */
static void
sift_down(HeldHead *heap, int n, int i)
{
	for (;;)
	{
		int			least = i;
		int			l = 2 * i + 1;
		HeldHead	t;

		if (l < n && head_before(&heap[l], &heap[least]))
			least = l;
		if (l + 1 < n && head_before(&heap[l + 1], &heap[least]))
			least = l + 1;
		if (least == i)
			return;
		t = heap[i];
		heap[i] = heap[least];
		heap[least] = t;
		i = least;
	}
}

/*
 * hand_out: up to max held messages into out, the partitions in step: each
 * time the first held message with the oldest timestamp (a merge, as Kafka
 * Streams picks the partition to read next).  librdkafka's fetches run
 * ahead on some partitions and behind on others, by as much as its queue
 * holds; taken in its order, a batch would span that much more event time
 * and touch that many more groups of a windowed view.  Within a partition
 * the order stays the offsets'.  Handed out messages are pending until ssp_kafka_release.
 */
static int
hand_out(SspKafka *kafka, SspMessage *out, int max, int64 *eof, bool *lost)
{
	HeldHead   *heap;
	int			nh = 0;
	int			n = 0;
	int			p;

	if (kafka->nheld == 0)
		return 0;
	heap = palloc(sizeof(HeldHead) * kafka->nheldparts);
	for (p = 0; p < kafka->nheldparts; p++)
		if (kafka->held[p].count > 0)
		{
			heap[nh].ts = kafka->held[p].m[kafka->held[p].head].timestamp_ms;
			heap[nh++].p = p;
		}
	for (p = nh / 2 - 1; p >= 0; p--)
		sift_down(heap, nh, p);
	while (n < max && nh > 0)
	{
		SspHeld    *h = &kafka->held[heap[0].p];

		out[n] = h->m[h->head++];
		kafka->pending[kafka->npending++] = out[n++].handle;
		h->count--;
		kafka->nheld--;
		if (h->count > 0)
			heap[0].ts = h->m[h->head].timestamp_ms;
		else
		{
			/* what came after its last message may be said now */
			if (h->lost)
				lost[heap[0].p] = true;
			else if (h->eof >= 0)
				eof[heap[0].p] = h->eof;
			h->head = 0;
			h->eof = -1;
			h->lost = false;
			heap[0] = heap[--nh];
		}
		sift_down(heap, nh, 0);
	}
	pfree(heap);
	return n;
}

/*
 * ssp_kafka_poll_batch: up to max waiting messages into out, without
 * blocking; they stay valid until ssp_kafka_release.  A partition's end
 * (EOF) sets eof[partition] to its next offset; a next offset that no
 * longer exists on the broker sets lost[partition]; either only once the
 * partition's messages before it are handed out.
 *
 * It takes from librdkafka's queue until it holds twice max messages, for
 * hand_out to choose from, or the queue is empty.  One call to librdkafka
 * may return fewer messages than there are, and librdkafka signals the pipe
 * only when an empty queue gets something: so it returns fewer than max
 * only when the queue is empty and it holds nothing more, and the caller
 * may then wait for the pipe.  What it still holds is handed out first
 * (the oldest) next time; ssp_kafka_assign_at forgets it.
 */
int
ssp_kafka_poll_batch(SspKafka *kafka, SspMessage *out, int max, int64 *eof,
					 bool *lost, int nparts)
{
	int			want;
	ssize_t		got;
	int			i;

	if (max <= 0)
		return 0;
	if (kafka->npending + max > kafka->maxpending)
	{
		kafka->maxpending = kafka->npending + max;
		kafka->pending = kafka->pending ?
			repalloc(kafka->pending, sizeof(rd_kafka_message_t *) * kafka->maxpending) :
			MemoryContextAlloc(GetMemoryChunkContext(kafka),
							   sizeof(rd_kafka_message_t *) * kafka->maxpending);
	}
	hold_parts(kafka, nparts);
	want = max * 2;
	while (kafka->nheld < want)
	{
		got = rd_kafka_consume_batch_queue(kafka->queue, 0, kafka->taking,
										   Min(want - kafka->nheld, SSP_TAKE_CHUNK));
		if (got <= 0)
			break;
		for (i = 0; i < got; i++)
			hold(kafka, kafka->taking[i], eof, lost, nparts);
	}
	return hand_out(kafka, out, max, eof, lost);
}

/*
 * The releaser's state: the messages it is given (malloc'd, as the thread
 * may not palloc), under release_lock; "busy" while it has some.
 */
static pthread_mutex_t release_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t release_cond = PTHREAD_COND_INITIALIZER;
static rd_kafka_message_t **release_msgs;
static int	release_n;
static int	release_cap;
static bool release_busy;
static bool releaser_running;
static bool releaser_failed;

/* releaser_main: destroy what it is given, then wait for more. */
static void *
releaser_main(void *arg)
{
	pthread_mutex_lock(&release_lock);
	for (;;)
	{
		int			i;

		while (!release_busy)
			pthread_cond_wait(&release_cond, &release_lock);
		pthread_mutex_unlock(&release_lock);
		for (i = 0; i < release_n; i++)
			rd_kafka_message_destroy(release_msgs[i]);
		pthread_mutex_lock(&release_lock);
		release_n = 0;
		release_busy = false;
		pthread_cond_broadcast(&release_cond);
	}
	return NULL;
}

/* release_wait: until the releaser has destroyed what it was given. */
static void
release_wait(void)
{
	if (!releaser_running)
		return;
	pthread_mutex_lock(&release_lock);
	while (release_busy)
		pthread_cond_wait(&release_cond, &release_lock);
	pthread_mutex_unlock(&release_lock);
}

/*
 * release_ahead: hand n messages to the releaser, started if need be with
 * every signal blocked (signals are the backend thread's); false if there
 * is no releaser, nor room for them.
 */
static bool
release_ahead(rd_kafka_message_t **msgs, int n)
{
	if (!releaser_running && !releaser_failed)
	{
		pthread_t	thread;
		sigset_t	all,
					old;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		releaser_running = pthread_create(&thread, NULL, releaser_main, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		releaser_failed = !releaser_running;
		if (releaser_running)
			pthread_detach(thread);
	}
	if (!releaser_running)
		return false;
	release_wait();
	if (n > release_cap)
	{
		rd_kafka_message_t **more = realloc(release_msgs, sizeof(rd_kafka_message_t *) * n);

		if (more == NULL)
			return false;
		release_msgs = more;
		release_cap = n;
	}
	memcpy(release_msgs, msgs, sizeof(rd_kafka_message_t *) * n);
	pthread_mutex_lock(&release_lock);
	release_n = n;
	release_busy = true;
	pthread_cond_broadcast(&release_cond);
	pthread_mutex_unlock(&release_lock);
	return true;
}

/*
 * ssp_kafka_release: free the messages ssp_kafka_poll_batch returned; a
 * batch's worth on the releaser.
 */
void
ssp_kafka_release(SspKafka *kafka)
{
	int			i;

	if (kafka->npending < SSP_RELEASE_AHEAD || !release_ahead(kafka->pending, kafka->npending))
		for (i = 0; i < kafka->npending; i++)
			rd_kafka_message_destroy(kafka->pending[i]);
	kafka->npending = 0;
}

/*
 * ssp_kafka_lag: messages not yet consumed past next[], from the
 * watermarks the client last saw (no broker request); -1 until it has
 * seen the end of every partition counted (a sum over those it has seen
 * would say 0 for a consumer whose first fetch answered for some
 * partitions: caught up, with the others not read yet).  If lagging is
 * not NULL, it says per partition whether messages may wait there: true
 * too when the client does not know the end yet.  Partitions at
 * SSP_OFFSET_NOT_OURS are not counted.
 */
int64
ssp_kafka_lag(SspKafka *kafka, int nparts, const int64 *next, bool *lagging)
{
	int64		lag = 0;
	bool		unknown = false;
	int			p;

	for (p = 0; p < nparts; p++)
	{
		int64		low,
					high;

		if (next[p] == SSP_OFFSET_NOT_OURS)
		{
			if (lagging)
				lagging[p] = false;
			continue;
		}
		if (rd_kafka_get_watermark_offsets(kafka->rk, kafka->topic, p, &low, &high) != RD_KAFKA_RESP_ERR_NO_ERROR ||
			high < 0)
		{
			if (lagging)
				lagging[p] = true;
			unknown = true;
			continue;
		}
		lag += Max(0, high - Max(next[p], low));
		if (lagging)
			lagging[p] = high > Max(next[p], low);
	}
	return unknown ? -1 : lag;
}

/* ssp_kafka_trouble: the latest error if one came after the last message. */
const char *
ssp_kafka_trouble(SspKafka *kafka)
{
	return kafka->trouble ? kafka->last_error : NULL;
}
