/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  A Confluent-compatible Schema Registry, over HTTP with libcurl: the
 *	  only file that includes curl.h.
 *
 * Messages in Confluent's wire format start with a magic byte 0 and the
 * big-endian id of their writer's schema; GET /schemas/ids/{id} gives the
 * schema.  An id never changes meaning, so each process keeps every schema
 * it fetched for its life, keyed by the registry's settings, and up to
 * MAX_MISSING ids the registry said it does not know, each for ten seconds.
 *
 * What the registry answers decides what becomes of a message:
 *	- the schema: the message is decoded with it;
 *	- error 40403, "schema not found": the id is unknown, the message is a
 *	  dead letter (ssp_registry_schema returns the schema with "missing");
 *	  so is a schema whose references (other subjects' versions, fetched
 *	  with it, kept in its "references") the registry does not have;
 *	- anything else (no answer, a timeout, 5xx, 401, a 404 that is not the
 *	  registry's own): an error of class 08, not about the message, so no
 *	  dead letter; a view's worker waits and tries again (worker.c).
 *
 * libcurl runs inside the backend: only http and https, no redirects, no
 * signals, a bounded answer, and a cancel or terminate aborts a request
 * (the progress callback sees InterruptPending).  Nothing it allocates is
 * palloc'd, and nothing in its callbacks can raise an error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "commands/defrem.h"
#include "common/hashfn.h"
#include "nodes/value.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "kafka/kafka.h"
#include "registry/registry.h"

/* the most of an answer kept: a schema, however large, is far less */
#define MAX_ANSWER (16 * 1024 * 1024)
/* schema.registry.request.timeout.ms, unless set */
#define DEFAULT_TIMEOUT_MS 10000

typedef struct CacheKey
{
	uint32		hash;			/* SspRegistry.hash */
	int32		id;
} CacheKey;

typedef struct CacheEntry
{
	CacheKey	key;
	SspSchema  *schema;
	TimestampTz missing_at;		/* when the registry said it had no such id */
} CacheEntry;

/*
 * An id the registry did not know is asked again after this long: a
 * follower of the registry may answer 40403 for an id its leader just
 * gave.  Within it, messages naming the id are dead letters.
 */
#define MISSING_TTL_MS 10000

/*
 * The most ids the registry did not know that a process remembers: anyone
 * who may write a topic can name a new id in each message.  Past it, they
 * are all forgotten, and asked again if named again.
 */
#define MAX_MISSING 256

static HTAB *cache = NULL;
static MemoryContext cache_cxt = NULL;
static int	nmissing = 0;		/* entries of cache for unknown ids */

/* An answer, in malloc'd memory: curl's callbacks must not ereport. */
typedef struct Answer
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		too_long;
} Answer;

/* ssp_registry_memory: where schemas live, for the life of the process. */
MemoryContext
ssp_registry_memory(void)
{
	if (cache_cxt == NULL)
	{
		HASHCTL		ctl;

		cache_cxt = AllocSetContextCreate(TopMemoryContext, "ssp schema registry",
										  ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(CacheKey);
		ctl.entrysize = sizeof(CacheEntry);
		ctl.hcxt = cache_cxt;
		cache = hash_create("ssp schemas", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return cache_cxt;
}

/* Options -------------------------------------------------------------- */

/* valid_urls: is each of the comma-separated URLs http:// or https://? */
static bool
valid_urls(const char *urls)
{
	char	   *copy = pstrdup(urls);
	char	   *save;
	char	   *tok;
	int			n = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		while (*tok == ' ')
			tok++;
		if (pg_strncasecmp(tok, "http://", 7) != 0 && pg_strncasecmp(tok, "https://", 8) != 0)
			return false;
		if (strlen(tok) <= (pg_strncasecmp(tok, "https://", 8) == 0 ? 8 : 7))
			return false;
		n++;
	}
	return n > 0;
}

/*
 * ssp_registry_check_option: error unless the value suits a registry
 * option (where it may be set, and by whom, is property.c's).
 */
void
ssp_registry_check_option(const char *name, const char *value)
{
	const char *opt = name + strlen(SSP_REGISTRY_PREFIX);

	if (strcmp(opt, "url") == 0)
	{
		if (!valid_urls(value))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"%s\"", name),
					 errdetail("A schema registry URL starts with http:// or https://; several are separated by commas.")));
	}
	else if (strcmp(opt, "basic.auth.user.info") == 0)
	{
		if (strchr(value, ':') == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"%s\"", name),
					 errdetail("It is \"user:password\"; the value is secret and not shown.")));
	}
	else if (strcmp(opt, "request.timeout.ms") == 0)
	{
		char	   *end;
		long		v = strtol(value, &end, 10);

		if (*end != '\0' || end == value || v < 1 || v > 3600000)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
					 errdetail("It is a number of milliseconds from 1 to 3600000.")));
	}
	else if (strcmp(opt, "ssl.endpoint.identification.algorithm") == 0)
	{
		if (strcmp(value, "https") != 0 && strcmp(value, "none") != 0 && value[0] != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
					 errhint("Valid values are https (check the host name, the default) and none.")));
	}
}

/*
 * ssp_registry_open: how to reach the registry of a server, as userid (its
 * user mapping, else PUBLIC's), in CurrentMemoryContext; NULL if the server
 * has no schema.registry.url.  The options are checked as property.c
 * checks a client's.
 */
SspRegistry *
ssp_registry_open(Oid serverid, Oid userid)
{
	SspRegistry *reg = palloc0(sizeof(SspRegistry));
	StringInfoData all;
	ListCell   *lc;

	initStringInfo(&all);
	foreach(lc, ssp_server_registry_options(serverid, userid))
	{
		DefElem    *def = lfirst(lc);
		const char *opt = def->defname + strlen(SSP_REGISTRY_PREFIX);
		char	   *val = defGetString(def);

		appendStringInfo(&all, "%s=%s\n", def->defname, val);
		if (strcmp(opt, "url") == 0)
			reg->urls = val;
		else if (strcmp(opt, "basic.auth.user.info") == 0)
			reg->user_info = val;
		else if (strcmp(opt, "bearer.auth.token") == 0)
			reg->bearer_token = val;
		else
			reg->ssl = lappend(reg->ssl, def);
	}
	if (reg->urls == NULL)
		return NULL;
	reg->hash = hash_bytes((unsigned char *) all.data, all.len);
	return reg;
}

/*
 * ssp_registry_framed: does the message start with Confluent's magic byte
 * and a schema id?  Sets *id.
 */
bool
ssp_registry_framed(const char *data, size_t len, int32 *id)
{
	const unsigned char *p = (const unsigned char *) data;

	if (data == NULL || len < SSP_REGISTRY_HEADER || p[0] != SSP_REGISTRY_MAGIC)
		return false;
	*id = (int32) (((uint32) p[1] << 24) | ((uint32) p[2] << 16) | ((uint32) p[3] << 8) | p[4]);
	return true;
}

/* HTTP ----------------------------------------------------------------- */

static size_t
answer_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	Answer	   *a = userdata;
	size_t		n = size * nmemb;

	if (a->len + n > MAX_ANSWER)
	{
		a->too_long = true;
		return 0;				/* curl stops with CURLE_WRITE_ERROR */
	}
	if (a->len + n + 1 > a->cap)
	{
		size_t		cap = Max(a->cap * 2, a->len + n + 1);
		char	   *data = realloc(a->data, Max(cap, 4096));

		if (data == NULL)
			return 0;
		a->data = data;
		a->cap = Max(cap, 4096);
	}
	memcpy(a->data + a->len, ptr, n);
	a->len += n;
	a->data[a->len] = '\0';
	return n;
}

/* a cancel or a terminate aborts the request; CHECK_FOR_INTERRUPTS follows */
static int
answer_progress(void *clientp, curl_off_t dltotal, curl_off_t dlnow,
				curl_off_t ultotal, curl_off_t ulnow)
{
	return QueryCancelPending || ProcDiePending ? 1 : 0;
}

/*
 * ssp_registry_url_has_credentials: does one of the URLs of a
 * schema.registry.url value hold a user (and password) before its host?
 */
bool
ssp_registry_url_has_credentials(const char *urls)
{
	const char *p = urls;

	while ((p = strstr(p, "://")) != NULL)
	{
		size_t		authority = strcspn(p + 3, "/,?#");

		if (memchr(p + 3, '@', authority) != NULL)
			return true;
		p += 3 + authority;
	}
	return false;
}

/* shown_url: a URL without the user and password it may hold. */
static char *
shown_url(const char *url)
{
	const char *scheme = strstr(url, "://");
	const char *at;
	const char *slash;

	if (scheme == NULL)
		return pstrdup(url);
	at = strchr(scheme + 3, '@');
	slash = strchr(scheme + 3, '/');
	if (at == NULL || (slash && slash < at))
		return pstrdup(url);
	return psprintf("%.*s%s", (int) (scheme + 3 - url), url, at + 1);
}

/* set_ssl: the TLS options; an option set twice (server, then mapping): the last. */
static void
set_ssl(CURL *curl, List *ssl, struct curl_blob *blobs)
{
	ListCell   *lc;

	foreach(lc, ssl)
	{
		DefElem    *def = lfirst(lc);
		const char *opt = def->defname + strlen(SSP_REGISTRY_PREFIX);
		char	   *val = defGetString(def);
		int			b = -1;

		if (strcmp(opt, "ssl.ca.location") == 0)
			curl_easy_setopt(curl, CURLOPT_CAINFO, val);
		else if (strcmp(opt, "ssl.certificate.location") == 0)
			curl_easy_setopt(curl, CURLOPT_SSLCERT, val);
		else if (strcmp(opt, "ssl.key.location") == 0)
			curl_easy_setopt(curl, CURLOPT_SSLKEY, val);
		else if (strcmp(opt, "ssl.key.password") == 0)
			curl_easy_setopt(curl, CURLOPT_KEYPASSWD, val);
		else if (strcmp(opt, "ssl.endpoint.identification.algorithm") == 0)
			curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, strcmp(val, "https") == 0 ? 2L : 0L);
		else if (strcmp(opt, "ssl.ca.pem") == 0)
			b = 0;
		else if (strcmp(opt, "ssl.certificate.pem") == 0)
			b = 1;
		else if (strcmp(opt, "ssl.key.pem") == 0)
			b = 2;
		if (b >= 0)
		{
			static const CURLoption which[3] = {CURLOPT_CAINFO_BLOB, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB};

			blobs[b].data = val;
			blobs[b].len = strlen(val);
			blobs[b].flags = CURL_BLOB_COPY;
			curl_easy_setopt(curl, which[b], &blobs[b]);
		}
	}
}

static long
timeout_ms(SspRegistry *reg)
{
	ListCell   *lc;

	foreach(lc, reg->ssl)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, SSP_REGISTRY_PREFIX "request.timeout.ms") == 0)
			return strtol(defGetString(def), NULL, 10);
	}
	return DEFAULT_TIMEOUT_MS;
}

/*
 * http_request: GET path (or POST post, a JSON body, if not NULL) from the
 * first of the registry's URLs that answers; returns the HTTP status and
 * sets *body (palloc'd); 0 if none answered, with *error saying why.
 */
static long
http_request(SspRegistry *reg, const char *path, const char *post, char **body, char **error)
{
	static bool curl_ready = false;
	char	   *urls = pstrdup(reg->urls);
	char	   *save;
	char	   *base;
	long		status = 0;

	*body = NULL;
	*error = NULL;
	if (!curl_ready)
	{
		if (curl_global_init(CURL_GLOBAL_ALL) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not initialize libcurl")));
		curl_ready = true;
	}
	for (base = strtok_r(urls, ",", &save); base && status == 0; base = strtok_r(NULL, ",", &save))
	{
		CURL	   *curl;
		struct curl_slist *headers = NULL;
		struct curl_blob blobs[3];
		char		errbuf[CURL_ERROR_SIZE];
		Answer		a = {0};
		CURLcode	rc;
		char	   *url;
		size_t		blen;

		while (*base == ' ')
			base++;
		blen = strlen(base);
		while (blen > 0 && base[blen - 1] == '/')
			blen--;
		url = psprintf("%.*s%s", (int) blen, base, path);
		curl = curl_easy_init();
		if (curl == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not start a request to the schema registry")));
		errbuf[0] = '\0';
		curl_easy_setopt(curl, CURLOPT_URL, url);
		curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
		curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms(reg));
		curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, answer_write);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, answer_progress);
		headers = curl_slist_append(headers, "Accept: application/vnd.schemaregistry.v1+json, application/json");
		if (post)
		{
			headers = curl_slist_append(headers, "Content-Type: application/vnd.schemaregistry.v1+json");
			curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post);
		}
		if (reg->bearer_token)
		{
			char	   *h = psprintf("Authorization: Bearer %s", reg->bearer_token);

			headers = curl_slist_append(headers, h);
			pfree(h);
		}
		if (reg->user_info)
		{
			curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
			curl_easy_setopt(curl, CURLOPT_USERPWD, reg->user_info);
		}
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
		set_ssl(curl, reg->ssl, blobs);

		rc = curl_easy_perform(curl);
		if (rc == CURLE_OK)
			curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		else if (a.too_long)
			*error = psprintf("the answer from %s is longer than %d MB", shown_url(url),
							  MAX_ANSWER / (1024 * 1024));
		else
			*error = psprintf("%s: %s", shown_url(url), errbuf[0] ? errbuf : curl_easy_strerror(rc));
		if (status != 0)
			*body = a.data ? pnstrdup(a.data, a.len) : pstrdup("");
		free(a.data);
		curl_slist_free_all(headers);
		curl_easy_cleanup(curl);
		pfree(url);
		CHECK_FOR_INTERRUPTS();
	}
	return status;
}

/* JSON answers ------------------------------------------------------------ */

/* parse_answer: the answer as jsonb, or NULL if it is not a JSON object. */
static Jsonb *
parse_answer(const char *body)
{
	JsonLexContext *lex;

	if (!pg_verifymbstr(body, strlen(body), true))
		return NULL;
	lex = makeJsonLexContextCstringLen((char *) body, strlen(body), GetDatabaseEncoding(), true);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		return NULL;
	while (*body == ' ' || *body == '\t' || *body == '\n' || *body == '\r')
		body++;
	if (*body != '{')
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(body)));
}

/* answer_field: a field of a JSON object as text (NULL if absent or not scalar). */
static char *
answer_field(Jsonb *jb, const char *name, bool *is_array)
{
	JsonbValue	v;

	if (is_array)
		*is_array = false;
	if (getKeyJsonValueFromContainer(&jb->root, name, strlen(name), &v) == NULL)
		return NULL;
	if (v.type == jbvString)
		return pnstrdup(v.val.string.val, v.val.string.len);
	if (v.type == jbvNumeric)
		return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
	if (v.type == jbvBinary && is_array && JsonContainerIsArray(v.val.binary.data))
		*is_array = JsonContainerSize(v.val.binary.data) > 0;
	return NULL;
}

/* at most this many schemas referred to, directly or not, by one schema */
#define MAX_REFERENCES 64

/*
 * add_references: the texts of the schemas a schema's "references" name
 * (GET /subjects/{subject}/versions/{version}, each with its own references
 * before it), appended to *texts in the order a parser needs them, each
 * subject and version once.  Returns NULL, or why one is missing (a 404:
 * the messages are dead letters); errors (class 08) when the registry
 * cannot say.
 */
static char *
add_references(SspRegistry *reg, Jsonb *jb, List **texts, List **seen, int depth)
{
	JsonbValue	v;
	int			i;

	if (getKeyJsonValueFromContainer(&jb->root, "references", 10, &v) == NULL ||
		v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
		return NULL;
	if (depth > 16)
		return pstrdup("its references are nested more than 16 deep");
	for (i = 0; i < JsonContainerSize(v.val.binary.data); i++)
	{
		JsonbValue *ref = getIthJsonbValueFromContainer(v.val.binary.data, i);
		JsonbValue	sv;
		JsonbValue	vv;
		char	   *subject;
		char	   *version;
		char	   *key;
		char	   *body;
		char	   *error;
		long		status;
		Jsonb	   *answer;
		char	   *text;
		char	   *why;

		if (ref == NULL || ref->type != jbvBinary || !JsonContainerIsObject(ref->val.binary.data) ||
			getKeyJsonValueFromContainer(ref->val.binary.data, "subject", 7, &sv) == NULL ||
			sv.type != jbvString ||
			getKeyJsonValueFromContainer(ref->val.binary.data, "version", 7, &vv) == NULL)
			return pstrdup("a reference has no subject or version");
		subject = pnstrdup(sv.val.string.val, sv.val.string.len);
		version = vv.type == jbvNumeric ?
			DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(vv.val.numeric))) :
			vv.type == jbvString ? pnstrdup(vv.val.string.val, vv.val.string.len) : "latest";
		if (strspn(version, "0123456789") != strlen(version) && strcmp(version, "latest") != 0)
			return psprintf("reference to subject \"%s\" has version \"%s\"", subject, version);
		key = psprintf("%s/%s", subject, version);
		if (list_member(*seen, makeString(key)))
			continue;
		*seen = lappend(*seen, makeString(key));
		if (list_length(*seen) > MAX_REFERENCES)
			return psprintf("it refers to more than %d schemas", MAX_REFERENCES);
		{
			char	   *escaped = curl_easy_escape(NULL, subject, 0);

			if (escaped == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
			key = psprintf("/subjects/%s/versions/%s", escaped, version);
			curl_free(escaped);
		}
		status = http_request(reg, key, NULL, &body, &error);
		if (status == 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not reach the schema registry for subject \"%s\"", subject),
					 errdetail("%s", error)));
		answer = parse_answer(body);
		if (status == 404 && answer && answer_field(answer, "error_code", NULL) &&
			(strcmp(answer_field(answer, "error_code", NULL), "40401") == 0 ||
			 strcmp(answer_field(answer, "error_code", NULL), "40402") == 0))
			return psprintf("the schema registry has no version %s of subject \"%s\", which it refers to",
							version, subject);
		if (status != 200 || answer == NULL || (text = answer_field(answer, "schema", NULL)) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the schema registry could not give version %s of subject \"%s\" (HTTP %ld)",
							version, subject, status)));
		if ((why = add_references(reg, answer, texts, seen, depth + 1)) != NULL)
			return why;
		*texts = lappend(*texts, text);
	}
	return NULL;
}

/*
 * fetch: the schema of id from the registry, in cache_cxt; errors (class
 * 08) when the registry cannot say.
 */
static SspSchema *
fetch(SspRegistry *reg, int32 id)
{
	char	   *path = psprintf("/schemas/ids/%d", id);
	char	   *body;
	char	   *error;
	long		status = http_request(reg, path, NULL, &body, &error);
	Jsonb	   *jb = body ? parse_answer(body) : NULL;
	char	   *code = jb ? answer_field(jb, "error_code", NULL) : NULL;
	char	   *message = jb ? answer_field(jb, "message", NULL) : NULL;
	SspSchema  *s;
	MemoryContext old;

	if (status == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not reach the schema registry for schema %d", id),
				 errdetail("%s", error)));
	if (status == 404 && code && strcmp(code, "40403") == 0)
	{
		old = MemoryContextSwitchTo(ssp_registry_memory());
		s = palloc0(sizeof(SspSchema));
		s->id = id;
		s->missing = psprintf("the schema registry has no schema %d%s%s", id,
							  message ? ": " : "", message ? message : "");
		MemoryContextSwitchTo(old);
		return s;
	}
	if (status == 401 || status == 403)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the schema registry refused the credentials (HTTP %ld) for schema %d", status, id),
				 errhint("Check schema.registry.basic.auth.user.info or schema.registry.bearer.auth.token in the user mapping.")));
	if (status != 200 || jb == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the schema registry could not give schema %d (HTTP %ld)", id, status),
				 message ? errdetail("%s", message) :
				 status == 200 ? errdetail("The answer is not a JSON object.") : 0));

	{
		char	   *text = answer_field(jb, "schema", NULL);
		char	   *type = answer_field(jb, "schemaType", NULL);
		List	   *texts = NIL;
		List	   *seen = NIL;
		char	   *why = add_references(reg, jb, &texts, &seen, 0);
		ListCell   *lc;

		if (text == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the schema registry's answer for schema %d has no \"schema\"", id)));
		old = MemoryContextSwitchTo(ssp_registry_memory());
		s = palloc0(sizeof(SspSchema));
		s->id = id;
		s->type = type == NULL || strcmp(type, "AVRO") == 0 ? SSP_SCHEMA_AVRO :
			strcmp(type, "PROTOBUF") == 0 ? SSP_SCHEMA_PROTOBUF :
			strcmp(type, "JSON") == 0 ? SSP_SCHEMA_JSON : -1;
		if ((int) s->type == -1)
			s->missing = psprintf("schema %d is of type \"%s\", which ssp does not read", id, type);
		else if (why)
			s->missing = psprintf("schema %d cannot be read: %s", id, why);
		else
		{
			s->text = pstrdup(text);
			foreach(lc, texts)
				s->references = lappend(s->references, pstrdup(lfirst(lc)));
		}
		MemoryContextSwitchTo(old);
	}
	return s;
}

/* unknown: is s the answer for an id the registry did not know? */
static bool
unknown(SspSchema *s)
{
	return s->missing != NULL && s->text == NULL;
}

/*
 * drop_entry: remove key's entry from the cache, freeing the answer of an
 * unknown id.  Only a schema the registry gave is pointed to from outside
 * the cache (decode.c's last_schema, its compiled form); the answer for an
 * unknown id is read only by the caller that fetched it, at once.
 */
static void
drop_entry(CacheKey *key)
{
	CacheEntry *e = hash_search(cache, key, HASH_FIND, NULL);

	if (e == NULL)
		return;
	if (unknown(e->schema))
	{
		pfree(e->schema->missing);
		pfree(e->schema);
		nmissing--;
	}
	(void) hash_search(cache, key, HASH_REMOVE, NULL);
}

/* forget_unknown: drop every unknown id from the cache. */
static void
forget_unknown(void)
{
	HASH_SEQ_STATUS seq;
	CacheEntry *e;
	List	   *keys = NIL;
	ListCell   *lc;

	hash_seq_init(&seq, cache);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (unknown(e->schema))
			keys = lappend(keys, &e->key);
	/* removal keeps an entry's memory: its key stays readable */
	foreach(lc, keys)
		drop_entry(lfirst(lc));
	list_free(keys);
}

/* ssp_registry_cached: the schema of id if this process has it, else NULL. */
SspSchema *
ssp_registry_cached(SspRegistry *reg, int32 id)
{
	CacheKey	key;
	CacheEntry *e;

	(void) ssp_registry_memory();
	memset(&key, 0, sizeof(key));
	key.hash = reg->hash;
	key.id = id;
	e = hash_search(cache, &key, HASH_FIND, NULL);
	if (e && unknown(e->schema) &&
		TimestampDifferenceExceeds(e->missing_at, GetCurrentTimestamp(), MISSING_TTL_MS))
		return NULL;			/* ask again */
	return e ? e->schema : NULL;
}

/* ssp_registry_forget: drop what this process knows of id, to ask again. */
void
ssp_registry_forget(SspRegistry *reg, int32 id)
{
	CacheKey	key;

	(void) ssp_registry_memory();
	memset(&key, 0, sizeof(key));
	key.hash = reg->hash;
	key.id = id;
	drop_entry(&key);
}

/*
 * ssp_registry_schema: the schema of id, from this process's cache or the
 * registry.  Its "missing" says why the registry has none; an error (class
 * 08, never a data exception) when the registry cannot be asked.
 */
SspSchema *
ssp_registry_schema(SspRegistry *reg, int32 id)
{
	SspSchema  *s = ssp_registry_cached(reg, id);
	CacheKey	key;
	CacheEntry *e;

	if (s)
		return s;
	s = fetch(reg, id);
	memset(&key, 0, sizeof(key));
	key.hash = reg->hash;
	key.id = id;
	drop_entry(&key);			/* an unknown id's answer, asked again */
	if (unknown(s) && nmissing >= MAX_MISSING)
		forget_unknown();
	e = hash_search(cache, &key, HASH_ENTER, NULL);
	e->schema = s;
	e->missing_at = GetCurrentTimestamp();
	if (unknown(s))
		nmissing++;
	return s;
}

/*
 * ssp_registry_latest: the latest schema of a subject, in CurrentMemoryContext
 * (not cached: it changes as versions are registered); NULL if the
 * registry has no such subject.  Errors (class 08) when it cannot say.
 */
SspSchema *
ssp_registry_latest(SspRegistry *reg, const char *subject)
{
	char	   *body;
	char	   *error;
	long		status = http_request(reg, psprintf("/subjects/%s/versions/latest", subject), NULL,
									  &body, &error);
	Jsonb	   *jb = body ? parse_answer(body) : NULL;
	char	   *code = jb ? answer_field(jb, "error_code", NULL) : NULL;
	char	   *message = jb ? answer_field(jb, "message", NULL) : NULL;
	SspSchema  *s;
	char	   *id;
	char	   *type;

	if (status == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not reach the schema registry for subject \"%s\"", subject),
				 errdetail("%s", error)));
	if (status == 404 && code && (strcmp(code, "40401") == 0 || strcmp(code, "40402") == 0))
		return NULL;
	if (status != 200 || jb == NULL || (id = answer_field(jb, "id", NULL)) == NULL ||
		answer_field(jb, "schema", NULL) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the schema registry could not give the latest schema of subject \"%s\" (HTTP %ld)",
						subject, status),
				 message ? errdetail("%s", message) : 0));
	s = palloc0(sizeof(SspSchema));
	s->id = pg_strtoint32(id);
	s->text = answer_field(jb, "schema", NULL);
	{
		List	   *seen = NIL;
		char	   *why = add_references(reg, jb, &s->references, &seen, 0);

		if (why)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("the latest schema of subject \"%s\" cannot be read: %s", subject, why)));
	}
	type = answer_field(jb, "schemaType", NULL);
	s->type = type == NULL || strcmp(type, "AVRO") == 0 ? SSP_SCHEMA_AVRO :
		strcmp(type, "JSON") == 0 ? SSP_SCHEMA_JSON : SSP_SCHEMA_PROTOBUF;
	return s;
}

/*
 * ssp_registry_register: register a schema under a subject (or find it
 * there); returns its id.  Errors when the registry refuses it (409: not
 * compatible with the subject's) or cannot be asked.
 */
int32
ssp_registry_register(SspRegistry *reg, const char *subject, SspSchemaType type, const char *text)
{
	StringInfoData post;
	char	   *body;
	char	   *error;
	long		status;
	Jsonb	   *jb;
	char	   *id;

	initStringInfo(&post);
	appendStringInfoString(&post, "{\"schema\": ");
	escape_json(&post, text);
	if (type == SSP_SCHEMA_JSON)
		appendStringInfoString(&post, ", \"schemaType\": \"JSON\"");
	else if (type == SSP_SCHEMA_PROTOBUF)
		appendStringInfoString(&post, ", \"schemaType\": \"PROTOBUF\"");
	appendStringInfoChar(&post, '}');
	status = http_request(reg, psprintf("/subjects/%s/versions", subject), post.data, &body, &error);
	if (status == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not reach the schema registry to register subject \"%s\"", subject),
				 errdetail("%s", error)));
	jb = parse_answer(body);
	if (status != 200 || jb == NULL || (id = answer_field(jb, "id", NULL)) == NULL)
		ereport(ERROR,
				(errcode(status == 409 ? ERRCODE_INVALID_PARAMETER_VALUE : ERRCODE_CONNECTION_FAILURE),
				 errmsg("the schema registry refused a schema for subject \"%s\" (HTTP %ld)", subject, status),
				 jb && answer_field(jb, "message", NULL) ? errdetail("%s", answer_field(jb, "message", NULL)) : 0));
	return pg_strtoint32(id);
}
