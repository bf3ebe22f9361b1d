/*-------------------------------------------------------------------------
 *
 * property.c
 *	  librdkafka's properties: which exist, which hold secrets, and who may
 *	  set which, checked when a server or user mapping is created or altered
 *	  and again each time a client is built (kafka.c).
 *
 * librdkafka runs inside the backend, as the operating-system user of the
 * database server.  Some of its properties run a shell command (Kerberos's
 * kinit), load a shared library, read a file of the server, send the
 * server's connections where the setter says, or fill the server log.  A
 * role that may use a server must not gain any of that, so every property
 * is classified here, from librdkafka's CONFIGURATION.md:
 *
 *	anyone		tuning (timeouts, sizes, compression): any server's owner
 *	credential	credentials and TLS material given inline: any user mapping
 *	superuser	commands, code, files, logging, endpoints: only in servers
 *				owned by a superuser and in user mappings of superusers
 *	ssp			set by ssp itself (what it reads, how it commits): nobody
 *	refused		callbacks and pointers, or unsafe inside a backend: nobody
 *
 * One choice depends on the value: SASL mechanism GSSAPI logs in with
 * Kerberos, with the tickets and keytab of the database server's
 * operating-system user (as a password-less postgres_fdw connection would
 * with its own), so sasl.mechanism(s) naming it is for superusers as
 * above; and since GSSAPI is librdkafka's default mechanism, so is a SASL
 * security.protocol with no mechanism set, checked when a client is built
 * (check_default_mechanism).
 *
 * A property this table does not know (from a newer librdkafka) is treated
 * as superuser-only.  sasl.kerberos.kinit.cmd is refused to everyone unless
 * ssp.allow_kinit_cmd is on; when it is off, every client is built with
 * Kerberos's ticket refresh disabled, so the default kinit command, which
 * embeds other properties, never runs either.
 *
 * Options are trusted by who can have written them, since the catalog does
 * not say who did: a server's by its owner; a user mapping's by the
 * server's owner and, unless the mapping is for PUBLIC, by its role, who
 * may alter it.  Options set before this rule, or by a role that has lost
 * superuser since, are refused when a client is built.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include <librdkafka/rdkafka.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "kafka/kafka.h"

/* ssp.allow_kinit_cmd: may sasl.kerberos.kinit.cmd be set (by superusers)? */
bool		ssp_allow_kinit_cmd = false;

typedef enum SspPropertyClass
{
	PROP_ANYONE,
	PROP_CREDENTIAL,
	PROP_SUPERUSER,
	PROP_SSP,
	PROP_REFUSED
} SspPropertyClass;

typedef struct SspProperty
{
	const char *name;
	SspPropertyClass class;
	const char *why;			/* superuser, ssp, refused: a sentence */
} SspProperty;

#define WHY_COMMAND "It runs a shell command on the database server."
#define WHY_KERBEROS "It configures Kerberos, whose ticket refresh runs a shell command built from it."
#define WHY_CODE "It loads a shared library into the database server."
#define WHY_FILE "It names a file or store of the database server, which the server would read."
#define WHY_KEYSTORE "It unlocks a keystore file of the database server."
#define WHY_LOG "It changes what the database server logs."
#define WHY_ENDPOINT "It makes the database server connect to an address of the setter's choosing."
#define WHY_MOCK "It replaces the cluster with a simulated one inside the database server."
#define WHY_POINTER "It is a callback or pointer, which can only be set from C."
#define WHY_SIGNAL "It signals librdkafka's threads, where Postgres's signal handlers would run."
#define WHY_READS "ssp sets it so that a view reads every message once."
#define WHY_WRITES "ssp sets it so that what it produces is written once, and acknowledged."
#define WHY_CLIENT "ssp sets it to run librdkafka inside Postgres."
#define WHY_GSSAPI "SASL mechanism GSSAPI logs in with Kerberos, with the tickets and keytab of the database server's operating-system user."
#define ONLY_SUPERUSERS "Only superusers may set it, in a server owned by a superuser or in a user mapping of a superuser."
#define OTHER_MECHANISMS "Use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER."

static const SspProperty properties[] = {
	/* set by ssp */
	{"bootstrap.servers", PROP_SSP, NULL},	/* the server option "brokers" */
	{"metadata.broker.list", PROP_SSP, NULL},
	{"group.id", PROP_SSP, WHY_READS},
	{"group.instance.id", PROP_SSP, WHY_READS},
	{"enable.auto.commit", PROP_SSP, WHY_READS},
	{"auto.commit.enable", PROP_SSP, WHY_READS},
	{"enable.auto.offset.store", PROP_SSP, WHY_READS},
	{"enable.partition.eof", PROP_SSP, WHY_READS},
	{"auto.offset.reset", PROP_SSP, WHY_READS},
	{"isolation.level", PROP_SSP, WHY_READS},
	{"enable.idempotence", PROP_SSP, WHY_WRITES},
	{"acks", PROP_SSP, WHY_WRITES},
	{"request.required.acks", PROP_SSP, WHY_WRITES},
	{"transactional.id", PROP_SSP, WHY_WRITES},
	{"queuing.strategy", PROP_SSP, WHY_WRITES},
	{"delivery.report.only.error", PROP_SSP, WHY_WRITES},
	{"log.queue", PROP_SSP, WHY_CLIENT},
	{"enabled_events", PROP_SSP, WHY_CLIENT},

	/* refused: callbacks, pointers, signals */
	{"error_cb", PROP_REFUSED, WHY_POINTER},
	{"throttle_cb", PROP_REFUSED, WHY_POINTER},
	{"stats_cb", PROP_REFUSED, WHY_POINTER},
	{"log_cb", PROP_REFUSED, WHY_POINTER},
	{"background_event_cb", PROP_REFUSED, WHY_POINTER},
	{"socket_cb", PROP_REFUSED, WHY_POINTER},
	{"connect_cb", PROP_REFUSED, WHY_POINTER},
	{"closesocket_cb", PROP_REFUSED, WHY_POINTER},
	{"open_cb", PROP_REFUSED, WHY_POINTER},
	{"resolve_cb", PROP_REFUSED, WHY_POINTER},
	{"opaque", PROP_REFUSED, WHY_POINTER},
	{"default_topic_conf", PROP_REFUSED, WHY_POINTER},
	{"ssl_key", PROP_REFUSED, WHY_POINTER},
	{"ssl_certificate", PROP_REFUSED, WHY_POINTER},
	{"ssl_ca", PROP_REFUSED, WHY_POINTER},
	{"ssl_engine_callback_data", PROP_REFUSED, WHY_POINTER},
	{"ssl.certificate.verify_cb", PROP_REFUSED, WHY_POINTER},
	{"oauthbearer_token_refresh_cb", PROP_REFUSED, WHY_POINTER},
	{"interceptors", PROP_REFUSED, WHY_POINTER},
	{"consume_cb", PROP_REFUSED, WHY_POINTER},
	{"rebalance_cb", PROP_REFUSED, WHY_POINTER},
	{"offset_commit_cb", PROP_REFUSED, WHY_POINTER},
	{"dr_cb", PROP_REFUSED, WHY_POINTER},
	{"dr_msg_cb", PROP_REFUSED, WHY_POINTER},
	{"partitioner_cb", PROP_REFUSED, WHY_POINTER},
	{"msg_order_cmp", PROP_REFUSED, WHY_POINTER},
	{"internal.termination.signal", PROP_REFUSED, WHY_SIGNAL},

	/* superusers only */
	{"sasl.kerberos.kinit.cmd", PROP_SUPERUSER, WHY_COMMAND},
	{"sasl.kerberos.principal", PROP_SUPERUSER, WHY_KERBEROS},
	{"sasl.kerberos.keytab", PROP_SUPERUSER, WHY_KERBEROS},
	{"sasl.kerberos.min.time.before.relogin", PROP_SUPERUSER, WHY_KERBEROS},
	{"sasl.kerberos.service.name", PROP_SUPERUSER, WHY_KERBEROS},
	{"plugin.library.paths", PROP_SUPERUSER, WHY_CODE},
	{"ssl.engine.location", PROP_SUPERUSER, WHY_CODE},
	{"ssl.engine.id", PROP_SUPERUSER, WHY_CODE},
	{"ssl.providers", PROP_SUPERUSER, WHY_CODE},
	{"ssl.key.location", PROP_SUPERUSER, WHY_FILE},
	{"ssl.certificate.location", PROP_SUPERUSER, WHY_FILE},
	{"ssl.ca.location", PROP_SUPERUSER, WHY_FILE},
	{"ssl.ca.certificate.stores", PROP_SUPERUSER, WHY_FILE},
	{"ssl.crl.location", PROP_SUPERUSER, WHY_FILE},
	{"ssl.keystore.location", PROP_SUPERUSER, WHY_FILE},
	{"ssl.keystore.password", PROP_SUPERUSER, WHY_KEYSTORE},
	{"offset.store.path", PROP_SUPERUSER, WHY_FILE},
	{"offset.store.method", PROP_SUPERUSER, WHY_FILE},
	{"https.ca.location", PROP_SUPERUSER, WHY_FILE},
	{"debug", PROP_SUPERUSER, WHY_LOG},
	{"log_level", PROP_SUPERUSER, WHY_LOG},
	{"log.connection.close", PROP_SUPERUSER, WHY_LOG},
	{"log.thread.name", PROP_SUPERUSER, WHY_LOG},
	{"sasl.oauthbearer.token.endpoint.url", PROP_SUPERUSER, WHY_ENDPOINT},
	{"test.mock.num.brokers", PROP_SUPERUSER, WHY_MOCK},
	{"test.mock.broker.rtt", PROP_SUPERUSER, WHY_MOCK},

	/* a schema registry's (registry/registry.c): its files are the server's */
	{"schema.registry.ssl.ca.location", PROP_SUPERUSER, WHY_FILE},
	{"schema.registry.ssl.certificate.location", PROP_SUPERUSER, WHY_FILE},
	{"schema.registry.ssl.key.location", PROP_SUPERUSER, WHY_FILE},
	{"schema.registry.basic.auth.user.info", PROP_CREDENTIAL, NULL},
	{"schema.registry.bearer.auth.token", PROP_CREDENTIAL, NULL},
	{"schema.registry.ssl.ca.pem", PROP_CREDENTIAL, NULL},
	{"schema.registry.ssl.certificate.pem", PROP_CREDENTIAL, NULL},
	{"schema.registry.ssl.key.pem", PROP_CREDENTIAL, NULL},
	{"schema.registry.ssl.key.password", PROP_CREDENTIAL, NULL},
	{"schema.registry.url", PROP_ANYONE, NULL},
	{"schema.registry.request.timeout.ms", PROP_ANYONE, NULL},
	{"schema.registry.ssl.endpoint.identification.algorithm", PROP_ANYONE, NULL},

	/* credentials: any user mapping */
	{"security.protocol", PROP_CREDENTIAL, NULL},
	{"sasl.mechanisms", PROP_CREDENTIAL, NULL},
	{"sasl.mechanism", PROP_CREDENTIAL, NULL},
	{"sasl.username", PROP_CREDENTIAL, NULL},
	{"sasl.password", PROP_CREDENTIAL, NULL},
	{"sasl.oauthbearer.config", PROP_CREDENTIAL, NULL},
	{"enable.sasl.oauthbearer.unsecure.jwt", PROP_CREDENTIAL, NULL},
	{"sasl.oauthbearer.method", PROP_CREDENTIAL, NULL},
	{"sasl.oauthbearer.client.id", PROP_CREDENTIAL, NULL},
	{"sasl.oauthbearer.client.secret", PROP_CREDENTIAL, NULL},
	{"sasl.oauthbearer.scope", PROP_CREDENTIAL, NULL},
	{"sasl.oauthbearer.extensions", PROP_CREDENTIAL, NULL},
	{"ssl.key.pem", PROP_CREDENTIAL, NULL},
	{"ssl.key.password", PROP_CREDENTIAL, NULL},
	{"ssl.certificate.pem", PROP_CREDENTIAL, NULL},
	{"ssl.ca.pem", PROP_CREDENTIAL, NULL},

	/* tuning: any server */
	{"builtin.features", PROP_ANYONE, NULL},
	{"client.id", PROP_ANYONE, NULL},
	{"client.rack", PROP_ANYONE, NULL},
	{"client.dns.lookup", PROP_ANYONE, NULL},
	{"client.software.name", PROP_ANYONE, NULL},
	{"client.software.version", PROP_ANYONE, NULL},
	{"message.max.bytes", PROP_ANYONE, NULL},
	{"message.copy.max.bytes", PROP_ANYONE, NULL},
	{"receive.message.max.bytes", PROP_ANYONE, NULL},
	{"max.in.flight.requests.per.connection", PROP_ANYONE, NULL},
	{"max.in.flight", PROP_ANYONE, NULL},
	{"topic.metadata.refresh.interval.ms", PROP_ANYONE, NULL},
	{"metadata.max.age.ms", PROP_ANYONE, NULL},
	{"topic.metadata.refresh.fast.interval.ms", PROP_ANYONE, NULL},
	{"topic.metadata.refresh.fast.cnt", PROP_ANYONE, NULL},
	{"topic.metadata.refresh.sparse", PROP_ANYONE, NULL},
	{"topic.metadata.propagation.max.ms", PROP_ANYONE, NULL},
	{"topic.blacklist", PROP_ANYONE, NULL},
	{"metadata.recovery.strategy", PROP_ANYONE, NULL},
	{"socket.timeout.ms", PROP_ANYONE, NULL},
	{"socket.blocking.max.ms", PROP_ANYONE, NULL},
	{"socket.send.buffer.bytes", PROP_ANYONE, NULL},
	{"socket.receive.buffer.bytes", PROP_ANYONE, NULL},
	{"socket.keepalive.enable", PROP_ANYONE, NULL},
	{"socket.nagle.disable", PROP_ANYONE, NULL},
	{"socket.max.fails", PROP_ANYONE, NULL},
	{"socket.connection.setup.timeout.ms", PROP_ANYONE, NULL},
	{"broker.address.ttl", PROP_ANYONE, NULL},
	{"broker.address.family", PROP_ANYONE, NULL},
	{"connections.max.idle.ms", PROP_ANYONE, NULL},
	{"reconnect.backoff.jitter.ms", PROP_ANYONE, NULL},
	{"reconnect.backoff.ms", PROP_ANYONE, NULL},
	{"reconnect.backoff.max.ms", PROP_ANYONE, NULL},
	{"retry.backoff.ms", PROP_ANYONE, NULL},
	{"retry.backoff.max.ms", PROP_ANYONE, NULL},
	{"statistics.interval.ms", PROP_ANYONE, NULL},
	{"enable.random.seed", PROP_ANYONE, NULL},
	{"enable.sparse.connections", PROP_ANYONE, NULL},
	{"enable.metrics.push", PROP_ANYONE, NULL},
	{"api.version.request", PROP_ANYONE, NULL},
	{"api.version.request.timeout.ms", PROP_ANYONE, NULL},
	{"api.version.fallback.ms", PROP_ANYONE, NULL},
	{"broker.version.fallback", PROP_ANYONE, NULL},
	{"allow.auto.create.topics", PROP_ANYONE, NULL},
	{"ssl.cipher.suites", PROP_ANYONE, NULL},
	{"ssl.curves.list", PROP_ANYONE, NULL},
	{"ssl.sigalgs.list", PROP_ANYONE, NULL},
	{"enable.ssl.certificate.verification", PROP_ANYONE, NULL},
	{"ssl.endpoint.identification.algorithm", PROP_ANYONE, NULL},
	{"partition.assignment.strategy", PROP_ANYONE, NULL},
	{"session.timeout.ms", PROP_ANYONE, NULL},
	{"heartbeat.interval.ms", PROP_ANYONE, NULL},
	{"group.protocol.type", PROP_ANYONE, NULL},
	{"group.protocol", PROP_ANYONE, NULL},
	{"group.remote.assignor", PROP_ANYONE, NULL},
	{"coordinator.query.interval.ms", PROP_ANYONE, NULL},
	{"max.poll.interval.ms", PROP_ANYONE, NULL},
	{"auto.commit.interval.ms", PROP_ANYONE, NULL},
	{"queued.min.messages", PROP_ANYONE, NULL},
	{"queued.max.messages.kbytes", PROP_ANYONE, NULL},
	{"fetch.wait.max.ms", PROP_ANYONE, NULL},
	{"fetch.queue.backoff.ms", PROP_ANYONE, NULL},
	{"fetch.message.max.bytes", PROP_ANYONE, NULL},
	{"max.partition.fetch.bytes", PROP_ANYONE, NULL},
	{"fetch.max.bytes", PROP_ANYONE, NULL},
	{"fetch.min.bytes", PROP_ANYONE, NULL},
	{"fetch.error.backoff.ms", PROP_ANYONE, NULL},
	{"offset.store.sync.interval.ms", PROP_ANYONE, NULL},
	{"consume.callback.max.messages", PROP_ANYONE, NULL},
	{"check.crcs", PROP_ANYONE, NULL},
	{"transaction.timeout.ms", PROP_ANYONE, NULL},
	{"enable.gapless.guarantee", PROP_ANYONE, NULL},
	{"queue.buffering.max.messages", PROP_ANYONE, NULL},
	{"queue.buffering.max.kbytes", PROP_ANYONE, NULL},
	{"queue.buffering.max.ms", PROP_ANYONE, NULL},
	{"queue.buffering.backpressure.threshold", PROP_ANYONE, NULL},
	{"linger.ms", PROP_ANYONE, NULL},
	{"message.send.max.retries", PROP_ANYONE, NULL},
	{"retries", PROP_ANYONE, NULL},
	{"compression.codec", PROP_ANYONE, NULL},
	{"compression.type", PROP_ANYONE, NULL},
	{"compression.level", PROP_ANYONE, NULL},
	{"batch.num.messages", PROP_ANYONE, NULL},
	{"batch.size", PROP_ANYONE, NULL},
	{"sticky.partitioning.linger.ms", PROP_ANYONE, NULL},
	{"request.timeout.ms", PROP_ANYONE, NULL},
	{"message.timeout.ms", PROP_ANYONE, NULL},
	{"delivery.timeout.ms", PROP_ANYONE, NULL},
	{"produce.offset.report", PROP_ANYONE, NULL},
	{"partitioner", PROP_ANYONE, NULL},
	{NULL, PROP_SUPERUSER, NULL}
};

static const SspProperty unknown_property = {
	NULL, PROP_SUPERUSER,
	"ssp does not know what it does, and lets only superusers set such properties."
};

static const SspProperty *
lookup(const char *name)
{
	const SspProperty *p;

	for (p = properties; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return &unknown_property;
}

/* credential_list: the credential properties, for a message's detail. */
static char *
credential_list(void)
{
	StringInfoData buf;
	const SspProperty *p;

	initStringInfo(&buf);
	for (p = properties; p->name; p++)
		if (p->class == PROP_CREDENTIAL)
			appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", p->name);
	return buf.data;
}

/* is_mechanism: is name the SASL mechanism (under either of its names)? */
static bool
is_mechanism(const char *name)
{
	return strcmp(name, "sasl.mechanisms") == 0 || strcmp(name, "sasl.mechanism") == 0;
}

/* names_gssapi: does a sasl.mechanism(s) value name GSSAPI, in any case? */
static bool
names_gssapi(const char *value)
{
	const char *p;

	for (p = value; *p; p++)
		if (pg_strncasecmp(p, "GSSAPI", 6) == 0)
			return true;
	return false;
}

/* jwt_error: a sasl.oauthbearer.config librdkafka would refuse, as an error */
static pg_attribute_noreturn() void
jwt_error(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
			 errmsg("invalid value for Kafka property \"sasl.oauthbearer.config\""),
			 errdetail("%s The value is secret and not shown.", detail),
			 errhint("librdkafka's unsecured JWT takes space-separated items principal=NAME (required), "
					 "principalClaimName=, scope=, scopeClaimName=, lifeSeconds= (1 to 2147483) "
					 "and extension_NAME=, each at most once and not empty, no '\"' in the first four, "
					 "an extension's name of letters and its value of printable ASCII.")));
}

/*
 * ssp_check_unsecured_jwt_config: error unless librdkafka's unsecured JWT
 * builder (enable.sasl.oauthbearer.unsecure.jwt) takes config, the value
 * of sasl.oauthbearer.config (NULL: none), whole.  The builder runs in
 * librdkafka's own thread, and a config it refuses is a failure there
 * that librdkafka 2.0 turns, in a consumer, into a crash of the whole
 * database server; so nothing it would refuse reaches it.  Its rules, as
 * librdkafka 2.0's parser and token check have them; stricter only in
 * lifeSeconds, whose milliseconds must fit an int (beyond, librdkafka's
 * token expires before it is made).  The value is secret: the error says
 * what is wrong, not what the value holds.
 */
void
ssp_check_unsecured_jwt_config(const char *config)
{
	static const char *const names[] = {
		"principal", "principalClaimName", "scope", "scopeClaimName", "lifeSeconds"
	};
	bool		seen[lengthof(names)] = {false};
	const char *p = config ? config : "";

	for (;;)
	{
		const char *item;
		const char *eq;
		const char *end;
		const char *v;
		int			i;

		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		item = p;
		end = strchr(item, ' ');
		if (end == NULL)
			end = item + strlen(item);
		p = end;
		eq = memchr(item, '=', end - item);
		if (eq == NULL)
			jwt_error("An item has no \"=\".");
		if (eq - item > 10 && strncmp(item, "extension_", 10) == 0)
		{
			if (eq - item == 14 && strncmp(item + 10, "auth", 4) == 0)
				jwt_error("The extension name \"auth\" is reserved.");
			for (v = item + 10; v < eq; v++)
				if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z')))
					jwt_error("An extension's name (extension_NAME=) is not letters only.");
			/* RFC 7628's value: printable ASCII, tab, CR, LF (not space: split there) */
			for (v = eq + 1; v < end; v++)
				if ((*v < 0x21 || *v > 0x7e) && *v != '\t' && *v != '\r' && *v != '\n')
					jwt_error("An extension's value holds a character other than printable ASCII, tab, CR or LF.");
			continue;
		}
		for (i = 0; i < lengthof(names); i++)
			if (strlen(names[i]) == eq - item && strncmp(item, names[i], eq - item) == 0)
				break;
		if (i == lengthof(names))
			jwt_error("An item is not one of principal=, principalClaimName=, scope=, "
					  "scopeClaimName=, lifeSeconds= or extension_NAME=.");
		if (memchr(eq + 1, '"', end - eq - 1))
			jwt_error(psprintf("Its %s= holds a '\"'.", names[i]));
		if (seen[i])
			jwt_error(psprintf("It has %s= twice.", names[i]));
		seen[i] = true;
		if (eq + 1 == end)
			jwt_error(psprintf("Its %s= is empty.", names[i]));
		if (strcmp(names[i], "lifeSeconds") == 0)
		{
			int64		n = 0;

			for (v = eq + 1; v < end; v++)
			{
				if (!isdigit((unsigned char) *v))
					jwt_error("Its lifeSeconds= is not a whole number of seconds.");
				n = n * 10 + (*v - '0');
				if (n > 2147483)
					break;
			}
			if (n < 1 || n > 2147483)
				jwt_error("Its lifeSeconds= is not from 1 to 2147483 seconds.");
		}
	}
	if (!seen[0])
		jwt_error("It names no principal (principal=NAME), which librdkafka's unsecured JWT needs.");
}

/* jwt_unsecured: does an enable.sasl.oauthbearer.unsecure.jwt value turn it on? */
static bool
jwt_unsecured(const char *value)
{
	/* as librdkafka reads a boolean; anything else it refuses itself */
	return value != NULL && pg_strcasecmp(value, "false") != 0 &&
		pg_strcasecmp(value, "f") != 0 && strcmp(value, "0") != 0;
}

/*
 * ssp_check_kafka_property: error unless the property may be set, to value
 * (NULL: whatever it is), where it is (a server or a user mapping), given
 * whether every role that can have written it is a superuser (trusted).
 * Runs before librdkafka sees the property: setting some of them
 * (plugin.library.paths) already loads code.
 */
void
ssp_check_kafka_property(const char *name, const char *value, bool in_user_mapping,
						 bool trusted)
{
	const SspProperty *p = lookup(name);
	const char *what = ssp_is_registry_option(name) ? "schema registry option" : "Kafka property";

	if (p == &unknown_property && ssp_is_registry_option(name))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unrecognized schema registry option \"%s\"", name),
				 errhint("Valid options are schema.registry.url, schema.registry.request.timeout.ms, schema.registry.basic.auth.user.info, schema.registry.bearer.auth.token and schema.registry.ssl.* (ca.location, certificate.location, key.location, key.password, ca.pem, certificate.pem, key.pem, endpoint.identification.algorithm).")));
	if (p == &unknown_property && !ssp_kafka_property_known(name))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unrecognized Kafka property \"%s\"", name),
				 errhint("Options other than \"brokers\" are librdkafka configuration properties, as listed in its CONFIGURATION.md.")));

	switch (p->class)
	{
		case PROP_SSP:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("option \"%s\" is set by ssp", name),
					 p->why ? errdetail("%s", p->why) :
					 errhint("Use the server option \"brokers\".")));
			break;
		case PROP_REFUSED:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("Kafka property \"%s\" cannot be set as an option", name),
					 errdetail("%s", p->why)));
			break;
		case PROP_SUPERUSER:
			if (!trusted)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to set %s \"%s\"", what, name),
						 errdetail("%s " ONLY_SUPERUSERS, p->why)));
			if (strcmp(name, "sasl.kerberos.kinit.cmd") == 0 && !ssp_allow_kinit_cmd)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("Kafka property \"%s\" is disabled", name),
						 errdetail("%s", WHY_COMMAND),
						 errhint("A superuser can enable it with ALTER SYSTEM SET ssp.allow_kinit_cmd = on.")));
			break;
		case PROP_ANYONE:
			if (in_user_mapping && !trusted)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to set %s \"%s\" in a user mapping", what, name),
						 errdetail("A user mapping may hold only credentials (%s) unless its role and the server's owner are superusers.",
								   credential_list()),
						 errhint("Set it on the server.")));
			break;
		case PROP_CREDENTIAL:
			if (!trusted && is_mechanism(name) && value != NULL && names_gssapi(value))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to set Kafka property \"%s\" to \"%s\"",
								name, value),
						 errdetail(WHY_GSSAPI " " ONLY_SUPERUSERS),
						 errhint(OTHER_MECHANISMS)));
			break;
	}
}

/* Where the options being checked come from, for the error context. */
typedef struct CheckContext
{
	Oid			serverid;
	Oid			umuser;			/* InvalidOid: the server or PUBLIC */
	bool		mapping;
} CheckContext;

static void
check_context_callback(void *arg)
{
	CheckContext *c = arg;
	ForeignServer *server = GetForeignServer(c->serverid);

	if (!c->mapping)
		errcontext("options of server \"%s\"", server->servername);
	else if (!OidIsValid(c->umuser))
		errcontext("options of the user mapping for PUBLIC on server \"%s\"",
				   server->servername);
	else
		errcontext("options of the user mapping for \"%s\" on server \"%s\"",
				   GetUserNameFromId(c->umuser, false), server->servername);
}

/*
 * options_trusted: may every role that can have written the options of the
 * server, or of its user mapping for umuser (InvalidOid: PUBLIC), set what
 * only superusers may?
 */
static bool
options_trusted(Oid serverid, bool mapping, Oid umuser)
{
	return superuser_arg(GetForeignServer(serverid)->owner) &&
		(!mapping || !OidIsValid(umuser) || superuser_arg(umuser));
}

/*
 * check_options: ssp_check_kafka_property for each option of a server
 * ("brokers" aside) or of a user mapping, with the object in the context.
 */
static void
check_options(List *options, Oid serverid, bool mapping, Oid umuser)
{
	bool		trusted = options_trusted(serverid, mapping, umuser);
	CheckContext c = {serverid, umuser, mapping};
	ErrorContextCallback errcallback;
	ListCell   *lc;

	errcallback.callback = check_context_callback;
	errcallback.arg = &c;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (!mapping && strcmp(def->defname, "brokers") == 0)
			continue;
		ssp_check_kafka_property(def->defname, defGetString(def), mapping, trusted);
	}
	error_context_stack = errcallback.previous;
}

/* option_value: the value of the last option called name, or NULL */
static const char *
option_value(List *options, const char *name)
{
	const char *value = NULL;
	ListCell   *lc;

	foreach(lc, options)
		if (strcmp(((DefElem *) lfirst(lc))->defname, name) == 0)
			value = defGetString(lfirst(lc));
	return value;
}

/*
 * check_default_mechanism: librdkafka's default SASL mechanism is GSSAPI,
 * so a SASL security.protocol with no sasl.mechanism(s) in the server or
 * the user mapping (umuser's, InvalidOid: PUBLIC's; NIL options if none)
 * logs in with Kerberos as an explicit GSSAPI would: whoever chose the
 * protocol (the mapping's overrides the server's) must be trusted as for
 * it.  A superuser's server that leaves GSSAPI to the default stays theirs
 * to use, whoever's user mapping adds nothing to it.
 */
static void
check_default_mechanism(Oid serverid, List *server_options,
						List *mapping_options, Oid umuser)
{
	const char *protocol = option_value(mapping_options, "security.protocol");
	bool		from_mapping = protocol != NULL;
	CheckContext c = {serverid, umuser, from_mapping};
	ErrorContextCallback errcallback;

	if (!from_mapping)
		protocol = option_value(server_options, "security.protocol");
	/* librdkafka skips leading white space, and ignores case */
	while (protocol != NULL && isspace((unsigned char) *protocol))
		protocol++;
	if (protocol == NULL || pg_strncasecmp(protocol, "SASL", 4) != 0)
		return;
	if (option_value(server_options, "sasl.mechanisms") ||
		option_value(server_options, "sasl.mechanism") ||
		option_value(mapping_options, "sasl.mechanisms") ||
		option_value(mapping_options, "sasl.mechanism"))
		return;					/* checked with the others */
	if (options_trusted(serverid, from_mapping, umuser))
		return;

	errcallback.callback = check_context_callback;
	errcallback.arg = &c;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to use SASL mechanism GSSAPI"),
			 errdetail("Kafka property \"security.protocol\" is \"%s\" and no \"sasl.mechanisms\" is set, so librdkafka uses its default mechanism, GSSAPI, which logs in with Kerberos, with the tickets and keytab of the database server's operating-system user. Only superusers may choose it, in a server owned by a superuser or in a user mapping of a superuser.",
					   protocol),
			 errhint("Set \"sasl.mechanisms\" in the server or the user mapping. " OTHER_MECHANISMS)));
	error_context_stack = errcallback.previous;
}

/*
 * user_mapping: the options of the user mapping of userid (or of PUBLIC)
 * for the server, and whose it is (InvalidOid: PUBLIC); false if none.
 */
static bool
user_mapping(Oid serverid, Oid userid, List **options, Oid *umuser)
{
	HeapTuple	tp;
	Datum		datum;
	bool		isnull;

	*options = NIL;
	*umuser = userid;
	tp = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(userid),
						 ObjectIdGetDatum(serverid));
	if (!HeapTupleIsValid(tp))
	{
		*umuser = InvalidOid;
		tp = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(InvalidOid),
							 ObjectIdGetDatum(serverid));
	}
	if (!HeapTupleIsValid(tp))
		return false;

	datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, tp,
							Anum_pg_user_mapping_umoptions, &isnull);
	if (!isnull)
		*options = untransformRelOptions(datum);
	ReleaseSysCache(tp);
	return true;
}

/*
 * ssp_check_server_properties: the rule above, for the utility hook after
 * DDL: over a server's options (server), the options of its user mapping
 * for umuser (mapping; InvalidOid: PUBLIC), or those of all its user
 * mappings (all_mappings), whose trust changes with the server's owner.
 * Takes AccessShareLock on pg_user_mapping.
 */
void
ssp_check_server_properties(Oid serverid, bool server, bool mapping, Oid umuser,
							bool all_mappings)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (server)
		check_options(GetForeignServer(serverid)->options, serverid, false, InvalidOid);
	if (!mapping && !all_mappings)
		return;

	rel = table_open(UserMappingRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_user_mapping_umserver, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(serverid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_user_mapping um = (Form_pg_user_mapping) GETSTRUCT(tuple);
		bool		isnull;
		Datum		datum;

		if (!all_mappings && um->umuser != umuser)
			continue;
		datum = heap_getattr(tuple, Anum_pg_user_mapping_umoptions,
							 RelationGetDescr(rel), &isnull);
		if (!isnull)
			check_options(untransformRelOptions(datum), serverid, true, um->umuser);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * server_options: the options of the server and of userid's user mapping
 * (else PUBLIC's), each checked against the rule above, the registry's
 * (schema.registry.*) or the others, in CurrentMemoryContext.
 */
static List *
server_options(Oid serverid, Oid userid, bool registry)
{
	ForeignServer *server = GetForeignServer(serverid);
	List	   *result = NIL;
	List	   *mapping;
	Oid			umuser;
	bool		have_mapping;
	ListCell   *lc;

	check_options(server->options, serverid, false, InvalidOid);
	foreach(lc, server->options)
		if (ssp_is_registry_option(((DefElem *) lfirst(lc))->defname) == registry)
			result = lappend(result, lfirst(lc));
	have_mapping = user_mapping(serverid, userid, &mapping, &umuser);
	if (have_mapping)
	{
		check_options(mapping, serverid, true, umuser);
		foreach(lc, mapping)
			if (ssp_is_registry_option(((DefElem *) lfirst(lc))->defname) == registry)
				result = lappend(result, lfirst(lc));
	}
	if (!registry)
	{
		check_default_mechanism(serverid, server->options,
								have_mapping ? mapping : NIL, umuser);
		/* a token built without a config is refused as one of a bad config */
		if (jwt_unsecured(option_value(result, "enable.sasl.oauthbearer.unsecure.jwt")))
			ssp_check_unsecured_jwt_config(option_value(result, "sasl.oauthbearer.config"));
	}
	return result;
}

/*
 * ssp_server_kafka_options: the librdkafka properties for connecting to the
 * server as userid, as a List of DefElem, in CurrentMemoryContext, each one
 * checked against the rule above.  "brokers" becomes bootstrap.servers;
 * user mapping options come after the server's, and ssp's own guards last.
 */
List *
ssp_server_kafka_options(Oid serverid, Oid userid)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, server_options(serverid, userid, false))
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "brokers") == 0)
			result = lappend(result,
							 makeDefElem("bootstrap.servers",
										 (Node *) makeString(defGetString(def)), -1));
		else
			result = lappend(result, def);
	}

	/* no Kerberos ticket refresh, hence no kinit command, unless allowed */
	if (!ssp_allow_kinit_cmd)
		result = lappend(result,
						 makeDefElem("sasl.kerberos.min.time.before.relogin",
									 (Node *) makeString("0"), -1));
	return result;
}

/*
 * ssp_server_registry_options: the schema registry options (schema.registry.*)
 * of the server and of userid's user mapping, checked as
 * ssp_server_kafka_options checks its own, as a List of DefElem.
 */
List *
ssp_server_registry_options(Oid serverid, Oid userid)
{
	return server_options(serverid, userid, true);
}

/* ssp_is_registry_option: is this a schema registry option, not librdkafka's? */
bool
ssp_is_registry_option(const char *name)
{
	return strncmp(name, "schema.registry.", 16) == 0;
}

/*
 * ssp_server_kafka_signature: the properties a client for the server as
 * userid is built with, and the schema registry's settings, as one string
 * (secrets included: never show it), so that a worker can tell when they
 * change.  Checks them as ssp_server_kafka_options does.
 */
char *
ssp_server_kafka_signature(Oid serverid, Oid userid)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, list_concat(ssp_server_kafka_options(serverid, userid),
							ssp_server_registry_options(serverid, userid)))
	{
		DefElem    *def = lfirst(lc);

		appendStringInfo(&buf, "%s=%s\n", def->defname, defGetString(def));
	}
	return buf.data;
}

/*
 * ssp_option_is_secret: does this property hold a secret whose value must
 * never be shown?
 */
bool
ssp_option_is_secret(const char *name)
{
	return strstr(name, "password") != NULL ||
		strstr(name, "secret") != NULL ||
		strcmp(name, "ssl.key.pem") == 0 ||
		strcmp(name, "schema.registry.ssl.key.pem") == 0 ||
		strcmp(name, "schema.registry.basic.auth.user.info") == 0 ||
		strcmp(name, "schema.registry.bearer.auth.token") == 0 ||
		strcmp(name, "ssl_key") == 0 ||
		strcmp(name, "sasl.oauthbearer.config") == 0;
}

/*
 * ssp_kafka_validate_property: error unless librdkafka accepts the property.
 * The value is never shown when secret.
 */
void
ssp_kafka_validate_property(const char *name, const char *value, bool secret)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	rd_kafka_conf_res_t res;

	res = rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr));
	rd_kafka_conf_destroy(conf);

	if (res == RD_KAFKA_CONF_UNKNOWN)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unrecognized Kafka property \"%s\"", name),
				 errhint("Options other than \"brokers\" are librdkafka configuration properties, as listed in its CONFIGURATION.md.")));
	if (res != RD_KAFKA_CONF_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for Kafka property \"%s\"", name),
				 secret ? errdetail("The value is secret and not shown.") :
				 errdetail("%s", errstr)));
	/* ssp's producers are idempotent, which librdkafka checks only then */
	if ((strcmp(name, "max.in.flight") == 0 ||
		 strcmp(name, "max.in.flight.requests.per.connection") == 0) &&
		atoi(value) > 5)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for Kafka property \"%s\"", name),
				 errdetail("ssp's producers are idempotent (enable.idempotence), which allows at most 5 requests in flight.")));
}

/*
 * ssp_kafka_property_known: is name a property of this librdkafka (of its
 * clients or its topics)?  Sets nothing: setting some properties has
 * effects of its own.
 */
bool
ssp_kafka_property_known(const char *name)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_topic_conf_t *tconf = rd_kafka_topic_conf_new();
	size_t		size = 0;
	bool		known;

	known = rd_kafka_conf_get(conf, name, NULL, &size) != RD_KAFKA_CONF_UNKNOWN ||
		rd_kafka_topic_conf_get(tconf, name, NULL, &size) != RD_KAFKA_CONF_UNKNOWN;
	rd_kafka_topic_conf_destroy(tconf);
	rd_kafka_conf_destroy(conf);
	return known;
}
