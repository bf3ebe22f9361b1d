/*-------------------------------------------------------------------------
 *
 * json_parsers.c
 *	  Benchmark behind ssp's choice of JSON parser: PostgreSQL's own
 *	  (common/jsonapi.h, used as src/stream/decode.c uses it) against cJSON.
 *
 * A frontend program, no server: N generated order messages (~125 bytes),
 * decoded R rounds each by pg_jsonapi (semantic actions keep the token text
 * of five top-level fields), cjson, and pg_validate (nullSemAction, the
 * floor under pg_jsonapi).  Prints msgs/s per round, median, spread, a
 * checksum and "RESULT <name> median_msgs_per_s=<n> min=<n> max=<n>".
 * Untimed, it first checks that both parsers extract the same values, and
 * shows what each keeps of a bigint > 2^53 and a long numeric.
 *
 * Usage: json_parsers [N [R]] (defaults 1000000, 5); make bench runs it.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <time.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "common/jsonapi.h"
#include "common/logging.h"
#include "mb/pg_wchar.h"

#define MAX_MSG_LEN 160
#define MAX_FIELDS 8

typedef struct Msg
{
	char	   *data;			/* NUL-terminated, but parsed by length */
	int			len;
} Msg;

/* The fields of one message, as one parser gives them. */
typedef struct Order
{
	int64		order_id;
	int64		customer_id;
	const char *region;
	const char *amount_text;	/* pg_jsonapi: the exact number text */
	double		amount;			/* cjson: all it has is a double */
	const char *ts;
} Order;

/*
 * A parser under test: decode m, adding what it extracted to *sum (ids plus
 * string lengths), so that the work cannot be optimised away.
 */
typedef bool (*ParseFn) (Msg *m, int64 *sum);

/* State of the pg_jsonapi semantic actions during one message. */
typedef struct PgState
{
	JsonLexContext *lex;
	const char *const *names;	/* the wanted top-level fields */
	int			nnames;
	int			field;			/* index of the field being parsed, or -1 */
	char	   *tok[MAX_FIELDS];	/* scalar text of each wanted field */
} PgState;

static const char *const order_fields[] =
{"order_id", "customer_id", "region", "amount", "ts"};

static PgState pg_state = {
	.names = order_fields,
	.nnames = lengthof(order_fields),
};

/* generate: n deterministic messages, contiguous in *buf; both to free. */
static Msg *
generate(int n, char **buf)
{
	Msg		   *msgs = pg_malloc(sizeof(Msg) * n);
	char	   *p = *buf = pg_malloc((size_t) n * MAX_MSG_LEN);
	uint64		seed = 42;
	uint32		v[9];

	for (int i = 0; i < n; i++)
	{
		/* a 64-bit LCG (Knuth's MMIX constants), top 31 bits */
		for (size_t j = 0; j < lengthof(v); j++)
			v[j] = (seed = seed * 6364136223846793005ULL +
					1442695040888963407ULL) >> 33;
		msgs[i].data = p;
		msgs[i].len = snprintf(p, MAX_MSG_LEN,
							   "{\"order_id\": %d, \"customer_id\": %u, "
							   "\"region\": \"region-%04u\", \"amount\": %u.%02u, "
							   "\"ts\": \"2024-05-%02uT%02u:%02u:%02u.%03uZ\"}",
							   100000000 + i, 10000 + v[0] % 990000, v[1] % 1000,
							   v[2] % 10000, v[3] % 100, 1 + v[4] % 31,
							   v[5] % 24, v[6] % 60, v[7] % 60, v[8] % 1000);
		p += msgs[i].len + 1;
	}
	return msgs;
}

/* pg_field_start: at the top level, note whether fname is a wanted field. */
static void
pg_field_start(void *state, char *fname, bool isnull)
{
	PgState    *st = state;

	(void) isnull;
	st->field = -1;
	if (st->lex->lex_level == 1)
		for (int i = 0; i < st->nnames; i++)
			if (strcmp(fname, st->names[i]) == 0)
				st->field = i;
}

/* pg_field_end: free the field name, which the parser allocated for us. */
static void
pg_field_end(void *state, char *fname, bool isnull)
{
	(void) isnull;
	((PgState *) state)->field = -1;
	pfree(fname);
}

/* pg_scalar: keep the text of a wanted top-level field; free the others. */
static void
pg_scalar(void *state, char *token, JsonTokenType tokentype)
{
	PgState    *st = state;

	(void) tokentype;
	if (st->lex->lex_level == 1 && st->field >= 0)
	{
		if (st->tok[st->field])
			pfree(st->tok[st->field]);	/* duplicate field: the last wins */
		st->tok[st->field] = token;
	}
	else if (token)
		pfree(token);
}

/* pg_jsonapi's semantic actions: only fields and scalars matter. */
static JsonSemAction pg_sem = {
	.semstate = &pg_state,
	.object_field_start = pg_field_start,
	.object_field_end = pg_field_end,
	.scalar = pg_scalar,
};

/* pg_parse: parse with sem, freeing the lex context; true if valid JSON. */
static bool
pg_parse(JsonLexContext *lex, JsonSemAction *sem)
{
	bool		ok = pg_parse_json(lex, sem) == JSON_SUCCESS;

	pfree(lex->strval->data);
	pfree(lex->strval);
	pfree(lex);
	return ok;
}

/*
 * pg_extract: parse text, leaving the wanted fields' text in st->tok (to
 * pg_release), and if o, the order fields in it, converted as ssp would.
 */
static bool
pg_extract(PgState *st, char *text, int len, Order *o)
{
	bool		ok;

	memset(st->tok, 0, sizeof(st->tok));
	st->field = -1;
	st->lex = makeJsonLexContextCstringLen(text, len, PG_UTF8, true);
	ok = pg_parse(st->lex, &pg_sem);
	if (o)
	{
		o->order_id = st->tok[0] ? strtoll(st->tok[0], NULL, 10) : 0;
		o->customer_id = st->tok[1] ? strtoll(st->tok[1], NULL, 10) : 0;
		o->region = st->tok[2] ? st->tok[2] : "";
		o->amount_text = st->tok[3] ? st->tok[3] : "";
		o->ts = st->tok[4] ? st->tok[4] : "";
	}
	return ok;
}

/* pg_release: free the tokens that pg_extract kept. */
static void
pg_release(PgState *st)
{
	for (int i = 0; i < st->nnames; i++)
		if (st->tok[i])
			pfree(st->tok[i]);
}

/* cj_number: the number field name of root as a double, 0 if absent. */
static double
cj_number(cJSON *root, const char *name)
{
	cJSON	   *it = cJSON_GetObjectItemCaseSensitive(root, name);

	return cJSON_IsNumber(it) ? it->valuedouble : 0;
}

/* cj_string: the string field name of root, "" if absent. */
static const char *
cj_string(cJSON *root, const char *name)
{
	cJSON	   *it = cJSON_GetObjectItemCaseSensitive(root, name);

	return cJSON_IsString(it) ? it->valuestring : "";
}

/* cj_order: an Order from a cJSON tree; its strings belong to root. */
static void
cj_order(cJSON *root, Order *o)
{
	o->amount_text = NULL;
	o->order_id = (int64) cj_number(root, "order_id");
	o->customer_id = (int64) cj_number(root, "customer_id");
	o->region = cj_string(root, "region");
	o->amount = cj_number(root, "amount");
	o->ts = cj_string(root, "ts");
}

/* checksum: what an Order adds to the checksum. */
static int64
checksum(const Order *o)
{
	return o->order_id + o->customer_id + strlen(o->region) + strlen(o->ts);
}

/* parse_pg: one message with pg_jsonapi; false if it is not valid JSON. */
static bool
parse_pg(Msg *m, int64 *sum)
{
	Order		o;
	bool		ok = pg_extract(&pg_state, m->data, m->len, &o);

	*sum += checksum(&o);
	pg_release(&pg_state);
	return ok;
}

/* parse_cjson: one message with cJSON; false if it is not valid JSON. */
static bool
parse_cjson(Msg *m, int64 *sum)
{
	cJSON	   *root = cJSON_ParseWithLength(m->data, m->len);
	Order		o;

	if (root == NULL)
		return false;
	cj_order(root, &o);
	*sum += checksum(&o);
	cJSON_Delete(root);
	return true;
}

/* parse_validate: validate one message with nullSemAction only. */
static bool
parse_validate(Msg *m, int64 *sum)
{
	*sum += m->len;
	return pg_parse(makeJsonLexContextCstringLen(m->data, m->len, PG_UTF8, true),
					&nullSemAction);
}

/* bench: r timed rounds of fn over all messages; the median msgs/s. */
static double
bench(const char *name, const char *what, ParseFn fn, Msg *msgs, int n, int r)
{
	double	   *rate = pg_malloc(sizeof(double) * r);
	double		median;
	int64		sum = 0;

	printf("\n== %s: %s\n", name, what);
	for (int round = 0; round < r; round++)
	{
		struct timespec t0,
					t1;
		double		secs;

		sum = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < n; i++)
			if (!fn(&msgs[i], &sum))
				pg_fatal("%s: message %d is not valid JSON", name, i);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		rate[round] = n / secs;
		printf("  round %d: %.0f msgs/s (%.3f s)\n", round + 1, rate[round], secs);
	}
	for (int i = 1; i < r; i++)	/* insertion sort */
		for (int j = i; j > 0 && rate[j - 1] > rate[j]; j--)
		{
			double		t = rate[j];

			rate[j] = rate[j - 1];
			rate[j - 1] = t;
		}
	median = r % 2 ? rate[r / 2] : (rate[r / 2 - 1] + rate[r / 2]) / 2;
	printf("  median %.0f msgs/s, min %.0f, max %.0f (spread %.1f%% of median)\n",
		   median, rate[0], rate[r - 1], 100 * (rate[r - 1] - rate[0]) / median);
	printf("  checksum %lld\n", (long long) sum);
	printf("RESULT %s median_msgs_per_s=%.0f min=%.0f max=%.0f\n",
		   name, median, rate[0], rate[r - 1]);
	pg_free(rate);
	return median;
}

/* cross_check: decode every message with both parsers; how many differ. */
static int
cross_check(Msg *msgs, int n)
{
	int			bad = 0;

	for (int i = 0; i < n; i++)
	{
		cJSON	   *root = cJSON_ParseWithLength(msgs[i].data, msgs[i].len);
		Order		a,
					b;
		bool		ok = pg_extract(&pg_state, msgs[i].data, msgs[i].len, &a);

		cj_order(root, &b);		/* a NULL root gives an empty Order */
		if (!ok || !root || a.order_id != b.order_id ||
			a.customer_id != b.customer_id || strcmp(a.region, b.region) != 0 ||
			strcmp(a.ts, b.ts) != 0 || strtod(a.amount_text, NULL) != b.amount)
		{
			if (bad++ < 5)
				printf("  differ: %s\n", msgs[i].data);
		}
		pg_release(&pg_state);
		cJSON_Delete(root);
	}
	return bad;
}

/* exactness: what each parser keeps of a bigint > 2^53 and a long numeric. */
static void
exactness(void)
{
	static const char *const names[] = {"big", "num"};
	char		doc[] = "{\"big\": 9007199254740993, "
		"\"num\": 12345678901234567890.123456789}";
	PgState		save = pg_state;
	cJSON	   *root = cJSON_Parse(doc);
	char	   *big = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, "big"));
	char	   *num = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, "num"));

	pg_state.names = names;
	pg_state.nnames = lengthof(names);
	if (!pg_extract(&pg_state, doc, strlen(doc), NULL) || !big || !num)
		pg_fatal("the exactness document did not parse");
	printf("\n== exactness: %s\n", doc);
	printf("  pg_jsonapi big: token \"%s\", strtoll %lld\n",
		   pg_state.tok[0], strtoll(pg_state.tok[0], NULL, 10));
	printf("  pg_jsonapi num: token \"%s\" (goes to numeric_in as it is)\n",
		   pg_state.tok[1]);
	printf("  cjson      big: valuedouble %.17g, as int64 %lld, cJSON prints %s\n",
		   cj_number(root, "big"), (long long) cj_number(root, "big"), big);
	printf("  cjson      num: valuedouble %.17g, cJSON prints %s\n",
		   cj_number(root, "num"), num);
	printf("  cJSON has numbers only as double: bigints > 2^53 and long "
		   "numerics lose digits\n");
	pg_release(&pg_state);
	pg_state = save;
	cJSON_free(big);
	cJSON_free(num);
	cJSON_Delete(root);
}

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 1000000;
	int			r = argc > 2 ? atoi(argv[2]) : 5;
	char	   *buf;
	Msg		   *msgs;
	double		pg,
				cj;
	int			bad;
	struct rusage ru;

	pg_logging_init(argv[0]);
	if (n <= 0 || r <= 0)
		pg_fatal("usage: %s [messages > 0 [rounds > 0]]", argv[0]);

	msgs = generate(n, &buf);
	getrusage(RUSAGE_SELF, &ru);
	/* each message is followed by its NUL */
	printf("json_parsers: %d messages, %.1f bytes on average, %d rounds, cJSON %s\n",
		   n, (double) (msgs[n - 1].data + msgs[n - 1].len - buf + 1) / n - 1,
		   r, cJSON_Version());
	printf("example: %s\n", msgs[0].data);

	exactness();
	printf("\n== cross-check: both parsers on all %d messages\n", n);
	bad = cross_check(msgs, n);
	printf("  %d messages differ\n", bad);
	if (bad)
		pg_fatal("the parsers disagree on %d messages", bad);

	pg = bench("pg_jsonapi", "pg_parse_json + semantic actions, 5 fields as "
			   "token text, ids by strtoll", parse_pg, msgs, n, r);
	cj = bench("cjson", "cJSON_ParseWithLength, 5 lookups, cJSON_Delete",
			   parse_cjson, msgs, n, r);
	bench("pg_validate", "pg_parse_json with nullSemAction (validation only)",
		  parse_validate, msgs, n, r);

	printf("\nratio pg_jsonapi/cjson (median msgs/s): %.2f\n", pg / cj);
	printf("peak RSS after generating: %ld kB; ", ru.ru_maxrss);
	getrusage(RUSAGE_SELF, &ru);
	printf("at the end: %ld kB\n", ru.ru_maxrss);
	pg_free(msgs);
	pg_free(buf);
	return 0;
}
