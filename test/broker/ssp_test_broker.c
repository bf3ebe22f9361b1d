/*-------------------------------------------------------------------------
 *
 * ssp_test_broker.c
 *	  Kafka-protocol test broker for the ssp extension's tests.
 *
 * Hosts a librdkafka mock cluster (rdkafka_mock.h), so tests need no real
 * Kafka.  When the cluster and a TCP control listener on 127.0.0.1 are up,
 * the bootstrap list and the control port are written atomically to the
 * files named on the command line; that is the "ready" signal.  Tests then
 * inject faults (brokers down/up, latency, request errors, topic errors,
 * leader moves) over the control port, e.g. with test/broker/broker_ctl.
 * Control protocol: one command per line, each answered by exactly one line,
 * "ok", "ok <value>" or "error <message>".  Broker ids are 1..N.  Commands:
 *	ping | bootstrap | quit | clear-errors
 *	down|up <broker|all>			rtt <broker|all> <ms>
 *	errors <apikey> <count> <err>	(pushes count errors for that request type)
 *	delay <apikey> <broker|all> <ms>	(the broker's next answer of that type
 *									 comes ms late; each command pushes one)
 *	topic <name> <partitions>		topic-error <name> <err>  (0 clears it)
 *	leader <topic> <partition> <broker|none>
 *	apiversion <apikey> <min> <max>	(e.g. "apiversion Metadata 0 4" makes the
 *									 mock honour allow.auto.create.topics)
 * <apikey> and <err> are numbers or names (Produce, NOT_LEADER_FOR_PARTITION).
 *
 * Build: cc -O2 -Wall -Wextra -Werror -o ssp_test_broker ssp_test_broker.c
 *		  -lrdkafka
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MAX_CLIENTS		32			/* concurrent control connections */
#define LINE_SIZE		1024		/* longest accepted command line */
#define MAX_APIKEY		60			/* clear-errors covers 0..MAX_APIKEY */
#define DEFAULT_PARTS	4			/* --topic NAME without :PARTITIONS */
#define MAX_PARTS		10000
#define MAX_TOPICS		256

typedef struct Client
{
	int			fd;
	size_t		len;
	char		buf[LINE_SIZE];
} Client;

typedef struct NamedCode
{
	const char *name;
	int			code;
} NamedCode;

static const NamedCode apikey_names[] = {
	{"Produce", 0}, {"Fetch", 1}, {"ListOffsets", 2}, {"Metadata", 3},
	{"OffsetCommit", 8}, {"OffsetFetch", 9}, {"FindCoordinator", 10},
	{"JoinGroup", 11}, {"Heartbeat", 12}, {"LeaveGroup", 13},
	{"SyncGroup", 14}, {"ApiVersions", 18}, {"InitProducerId", 22},
	{"AddPartitionsToTxn", 24}, {"AddOffsetsToTxn", 25}, {"EndTxn", 26},
	{"TxnOffsetCommit", 28}, {NULL, 0}
};

/* newer Kafka spellings of errors librdkafka 2.0.2 names differently */
static const NamedCode error_aliases[] = {
	{"NOT_LEADER_OR_FOLLOWER", RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION},
	{"UNKNOWN_TOPIC_OR_PARTITION", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART},
	{NULL, 0}
};

static rd_kafka_mock_cluster_t *mcluster;
static const char *bootstraps;
static int	broker_cnt = 1;
static int	signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_signal = 0;
static bool quit_requested = false;
static char reply[LINE_SIZE + 256];	/* reply to the current command */

static void set_reply(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/* Print the command-line synopsis to stderr and exit with status 2. */
static void
usage(void)
{
	fprintf(stderr, "usage: ssp_test_broker [--brokers N] "
			"[--topic NAME[:PARTITIONS]]...\n"
			"         --bootstrap-file PATH --control-file PATH [--pid-file PATH]\n");
	exit(2);
}

/* Signal handler: set the flag and wake up poll() through the self-pipe. */
static void
handle_signal(int signo)
{
	int			save_errno = errno;
	char		c = (char) signo;
	ssize_t		rc;

	got_signal = 1;
	rc = write(signal_pipe[1], &c, 1);	/* if the pipe is full, a wake-up is
										 * pending anyway */
	(void) rc;
	errno = save_errno;
}

/* Set the reply line for the current command (printf-style). */
static void
set_reply(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(reply, sizeof(reply), fmt, ap);
	va_end(ap);
}

/* Set the reply from a mock call's result: "ok" or "error NAME: text". */
static void
reply_err(rd_kafka_resp_err_t err)
{
	if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
		set_reply("ok");
	else
		set_reply("error %s: %s", rd_kafka_err2name(err), rd_kafka_err2str(err));
}

/* Write "content\n" to PATH.tmp, then rename it to PATH; false on error. */
static bool
write_file_atomic(const char *path, const char *content)
{
	char		tmp[PATH_MAX];
	FILE	   *f;
	bool		ok;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int) sizeof(tmp) ||
		(f = fopen(tmp, "w")) == NULL)
		return false;
	ok = fprintf(f, "%s\n", content) > 0;
	ok = fclose(f) == 0 && ok && rename(tmp, path) == 0;
	if (!ok)
		unlink(tmp);
	return ok;
}

/* Parse a whole decimal integer in [min, max] into *out; false if invalid. */
static bool
parse_int(const char *s, long min, long max, long *out)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Look s up case-insensitively in a NULL-terminated table; false if absent. */
static bool
lookup_name(const NamedCode *table, const char *s, int *code)
{
	for (; table->name != NULL; table++)
	{
		if (strcasecmp(s, table->name) == 0)
		{
			*code = table->code;
			return true;
		}
	}
	return false;
}

/* Parse a broker id 1..N, or -1 given as "all"/"none" when wildcard is set. */
static bool
parse_broker(const char *s, const char *wildcard, int32_t *id)
{
	long		v;

	if (wildcard != NULL && strcasecmp(s, wildcard) == 0)
		v = -1;
	else if (!parse_int(s, 1, broker_cnt, &v))
	{
		set_reply("error invalid broker id \"%s\" (1..%d%s%s)", s, broker_cnt,
				  wildcard ? " or " : "", wildcard ? wildcard : "");
		return false;
	}
	*id = (int32_t) v;
	return true;
}

/* Parse an ApiKey given as a number 0..MAX_APIKEY or a request name. */
static bool
parse_apikey(const char *s, int16_t *key)
{
	long		v;
	int			code;

	if (parse_int(s, 0, MAX_APIKEY, &v))
		code = (int) v;
	else if (!lookup_name(apikey_names, s, &code))
	{
		set_reply("error unknown api key \"%s\"", s);
		return false;
	}
	*key = (int16_t) code;
	return true;
}

/*
 * Parse a broker error code (>= 0) given as a number or a name.  With
 * allow_transport, also _TRANSPORT (-195): the mock then closes the connection.
 */
static bool
parse_error(const char *s, bool allow_transport, rd_kafka_resp_err_t *err)
{
	const struct rd_kafka_err_desc *descs;
	size_t		ndescs;
	size_t		i;
	long		v;
	int			code = INT_MIN;

	if (strncasecmp(s, "RD_KAFKA_RESP_ERR_", 18) == 0)
		s += 18;
	if (parse_int(s, INT_MIN, INT_MAX, &v))
		code = (int) v;
	else if (!lookup_name(error_aliases, s, &code))
	{
		rd_kafka_get_err_descs(&descs, &ndescs);
		for (i = 0; i < ndescs && code == INT_MIN; i++)
			if (descs[i].name != NULL && strcasecmp(s, descs[i].name) == 0)
				code = descs[i].code;
	}
	if ((code >= 0 && code <= SHRT_MAX) ||
		(allow_transport && code == RD_KAFKA_RESP_ERR__TRANSPORT))
	{
		*err = (rd_kafka_resp_err_t) code;
		return true;
	}
	set_reply("error unknown or unusable error code \"%s\"", s);
	return false;
}

/* Create a topic with replication min(3, brokers); sets the reply. */
static bool
create_topic(const char *name, long partitions)
{
	size_t		len = strlen(name);

	if (len == 0 || len > 249 || strspn(name, "abcdefghijklmnopqrstuvwxyz"
										"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len)
	{
		set_reply("error invalid topic name \"%s\"", name);
		return false;
	}
	reply_err(rd_kafka_mock_topic_create(mcluster, name, (int) partitions,
										 broker_cnt < 3 ? broker_cnt : 3));
	return strcmp(reply, "ok") == 0;
}

/* Execute one control command line (modified in place); sets the reply. */
static void
execute_command(char *line)
{
	char	   *argv[6];
	char	   *save = NULL;
	char	   *tok;
	int			argc = 0;
	const char *cmd;
	int32_t		broker;
	int16_t		key;
	rd_kafka_resp_err_t err;
	long		n;
	long		m;

	/* no command takes over 3 arguments, so 6 words suffice to reject it */
	while (argc < 6 &&
		   (tok = strtok_r(argc == 0 ? line : NULL, " \t", &save)) != NULL)
		argv[argc++] = tok;
	cmd = argc > 0 ? argv[0] : "";

#define CMD(name, nargs) \
	(strcmp(cmd, (name)) == 0 && (argc == (nargs) + 1 || \
	 (set_reply("error %s expects %d argument(s)", cmd, (nargs)), false)))

	if (CMD("ping", 0))
		set_reply("ok");
	else if (CMD("bootstrap", 0))
		set_reply("ok %s", bootstraps);
	else if (CMD("down", 1) && parse_broker(argv[1], "all", &broker))
		reply_err(rd_kafka_mock_broker_set_down(mcluster, broker));
	else if (CMD("up", 1) && parse_broker(argv[1], "all", &broker))
		reply_err(rd_kafka_mock_broker_set_up(mcluster, broker));
	else if (CMD("rtt", 2) && parse_broker(argv[1], "all", &broker))
	{
		if (!parse_int(argv[2], 0, 3600000, &n))
			set_reply("error invalid rtt \"%s\" (0..3600000 ms)", argv[2]);
		else
			reply_err(rd_kafka_mock_broker_set_rtt(mcluster, broker, (int) n));
	}
	else if (CMD("errors", 3) && parse_apikey(argv[1], &key) &&
			 parse_error(argv[3], true, &err))
	{
		rd_kafka_resp_err_t errs[1000];

		if (!parse_int(argv[2], 1, 1000, &n))
			set_reply("error invalid count \"%s\" (1..1000)", argv[2]);
		else
		{
			for (m = 0; m < n; m++)
				errs[m] = err;
			rd_kafka_mock_push_request_errors_array(mcluster, key, (size_t) n,
													errs);
			set_reply("ok");
		}
	}
	else if (CMD("delay", 3) && parse_apikey(argv[1], &key) &&
			 parse_broker(argv[2], "all", &broker))
	{
		if (!parse_int(argv[3], 0, 3600000, &n))
			set_reply("error invalid delay \"%s\" (0..3600000 ms)", argv[3]);
		else
		{
			set_reply("ok");
			for (m = broker < 0 ? 1 : broker; m <= (broker < 0 ? broker_cnt : broker); m++)
				if (rd_kafka_mock_broker_push_request_error_rtts(mcluster, (int32_t) m, key, 1,
																 RD_KAFKA_RESP_ERR_NO_ERROR, (int) n))
					set_reply("error could not delay broker %ld", m);
		}
	}
	else if (CMD("clear-errors", 0))
	{
		for (n = 0; n <= MAX_APIKEY; n++)
			rd_kafka_mock_clear_request_errors(mcluster, (int16_t) n);
		set_reply("ok");
	}
	else if (CMD("topic", 2))
	{
		if (!parse_int(argv[2], 1, MAX_PARTS, &n))
			set_reply("error invalid partition count \"%s\" (1..%d)",
					  argv[2], MAX_PARTS);
		else
			create_topic(argv[1], n);
	}
	else if (CMD("topic-error", 2) && parse_error(argv[2], false, &err))
	{
		rd_kafka_mock_topic_set_error(mcluster, argv[1], err);
		set_reply("ok");
	}
	else if (CMD("leader", 3) && parse_broker(argv[3], "none", &broker))
	{
		if (!parse_int(argv[2], 0, MAX_PARTS - 1, &n))
			set_reply("error invalid partition \"%s\"", argv[2]);
		else
			reply_err(rd_kafka_mock_partition_set_leader(mcluster, argv[1],
														 (int32_t) n, broker));
	}
	else if (CMD("apiversion", 3) && parse_apikey(argv[1], &key))
	{
		if (!parse_int(argv[2], 0, SHRT_MAX, &n) ||
			!parse_int(argv[3], n, SHRT_MAX, &m))
			set_reply("error invalid version range \"%s\" \"%s\"", argv[2], argv[3]);
		else
			reply_err(rd_kafka_mock_set_apiversion(mcluster, key, (int16_t) n,
												   (int16_t) m));
	}
	else if (CMD("quit", 0))
	{
		quit_requested = true;
		set_reply("ok");
	}
	else if (strncmp(reply, "error", 5) != 0)
		set_reply("error unrecognized command \"%s\"", cmd);
#undef CMD
}

/* Read from a readable client, answer each complete line; false to close. */
static bool
client_read(Client *c)
{
	ssize_t		r;
	char	   *nl;

	r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (r <= 0)
		return false;
	c->len += (size_t) r;

	while (!quit_requested && (nl = memchr(c->buf, '\n', c->len)) != NULL)
	{
		size_t		consumed = (size_t) (nl - c->buf) + 1;
		size_t		rlen;

		*nl = '\0';
		if (nl > c->buf && nl[-1] == '\r')
			nl[-1] = '\0';
		reply[0] = '\0';
		execute_command(c->buf);
		rlen = strlen(reply);
		reply[rlen++] = '\n';	/* reply[] has room: set_reply truncates */
		if (send(c->fd, reply, rlen, 0) != (ssize_t) rlen)
			return false;
		c->len -= consumed;
		memmove(c->buf, c->buf + consumed, c->len);
	}
	if (c->len >= sizeof(c->buf) - 1)
	{
		(void) send(c->fd, "error line too long\n", 20, 0);
		return false;
	}
	return true;
}

int
main(int argc, char **argv)
{
	const char *bootstrap_file = NULL;
	const char *control_file = NULL;
	const char *pid_file = NULL;
	const char *topics[MAX_TOPICS];
	int			ntopics = 0;
	char		errstr[512];
	char		portstr[16];
	char		pidstr[16];
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	struct sockaddr_in addr;
	socklen_t	addrlen = sizeof(addr);
	struct sigaction sa;
	Client		clients[MAX_CLIENTS];
	int			nclients = 0;
	int			listen_fd;
	int			exit_code = 0;
	int			i;
	long		n;

	for (i = 1; i + 1 < argc; i += 2)
	{
		if (strcmp(argv[i], "--brokers") == 0 && parse_int(argv[i + 1], 1, 64, &n))
			broker_cnt = (int) n;
		else if (strcmp(argv[i], "--topic") == 0 && ntopics < MAX_TOPICS)
			topics[ntopics++] = argv[i + 1];
		else if (strcmp(argv[i], "--bootstrap-file") == 0)
			bootstrap_file = argv[i + 1];
		else if (strcmp(argv[i], "--control-file") == 0)
			control_file = argv[i + 1];
		else if (strcmp(argv[i], "--pid-file") == 0)
			pid_file = argv[i + 1];
		else
			usage();
	}
	if (i != argc || bootstrap_file == NULL || control_file == NULL)
		usage();

	/* the producer handle only hosts the mock cluster; it never produces */
	conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof(errstr));
	if ((rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr))) == NULL ||
		(mcluster = rd_kafka_mock_cluster_new(rk, broker_cnt)) == NULL)
	{
		fprintf(stderr, "ssp_test_broker: cannot create mock cluster: %s\n",
				rk ? "see log" : errstr);
		return 1;
	}
	bootstraps = rd_kafka_mock_cluster_bootstraps(mcluster);

	for (i = 0; i < ntopics; i++)
	{
		char		name[LINE_SIZE];
		char	   *colon;

		snprintf(name, sizeof(name), "%s", topics[i]);
		n = DEFAULT_PARTS;
		if ((colon = strchr(name, ':')) != NULL)
		{
			*colon = '\0';
			if (!parse_int(colon + 1, 1, MAX_PARTS, &n))
				usage();
		}
		if (!create_topic(name, n))
		{
			fprintf(stderr, "ssp_test_broker: topic \"%s\": %s\n", name, reply);
			return 1;
		}
	}

	/* control listener on an OS-chosen loopback port */
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((listen_fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		bind(listen_fd, (struct sockaddr *) &addr, sizeof(addr)) != 0 ||
		listen(listen_fd, 16) != 0 ||
		getsockname(listen_fd, (struct sockaddr *) &addr, &addrlen) != 0 ||
		fcntl(listen_fd, F_SETFL, O_NONBLOCK) != 0 || pipe(signal_pipe) != 0 ||
		fcntl(signal_pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
		fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK) != 0)
	{
		perror("ssp_test_broker: control listener");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* pid file first, so that the two "ready" files come last */
	snprintf(portstr, sizeof(portstr), "%d", (int) ntohs(addr.sin_port));
	snprintf(pidstr, sizeof(pidstr), "%d", (int) getpid());
	if ((pid_file != NULL && !write_file_atomic(pid_file, pidstr)) ||
		!write_file_atomic(bootstrap_file, bootstraps) ||
		!write_file_atomic(control_file, portstr))
	{
		perror("ssp_test_broker: writing pid/bootstrap/control file");
		exit_code = 1;			/* skip the loop, but still clean up */
	}
	else
		fprintf(stderr, "ssp_test_broker: ready, bootstrap %s, control port %s\n",
				bootstraps, portstr);

	while (exit_code == 0 && !got_signal && !quit_requested)
	{
		struct pollfd pfds[MAX_CLIENTS + 2];

		pfds[0].fd = signal_pipe[0];
		pfds[0].events = POLLIN;
		pfds[1].fd = listen_fd;
		pfds[1].events = nclients < MAX_CLIENTS ? POLLIN : 0;
		for (i = 0; i < nclients; i++)
		{
			pfds[i + 2].fd = clients[i].fd;
			pfds[i + 2].events = POLLIN;
		}
		if (poll(pfds, (nfds_t) nclients + 2, -1) < 0)
		{
			if (errno == EINTR)
				continue;
			perror("ssp_test_broker: poll");
			exit_code = 1;
			break;
		}

		/* back to front, so that removing a client keeps pfds[] aligned */
		for (i = nclients - 1; i >= 0 && !quit_requested && !got_signal; i--)
		{
			if (pfds[i + 2].revents != 0 && !client_read(&clients[i]))
			{
				close(clients[i].fd);
				clients[i] = clients[--nclients];
			}
		}
		if ((pfds[1].revents & POLLIN) && nclients < MAX_CLIENTS &&
			(clients[nclients].fd = accept(listen_fd, NULL, NULL)) >= 0)
			clients[nclients++].len = 0;
	}

	fprintf(stderr, "ssp_test_broker: shutting down (%s)\n",
			quit_requested ? "quit command" : got_signal ? "signal" : "error");
	for (i = 0; i < nclients; i++)
		close(clients[i].fd);
	close(listen_fd);
	rd_kafka_mock_cluster_destroy(mcluster);
	rd_kafka_destroy(rk);
	/* files go last: once they are gone, the broker ports are closed too */
	unlink(bootstrap_file);
	unlink(control_file);
	if (pid_file != NULL)
		unlink(pid_file);
	return exit_code;
}
