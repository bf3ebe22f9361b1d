/*-------------------------------------------------------------------------
 *
 * secret.c
 *	  The secrets a librdkafka client is configured with, and their values
 *	  masked in any text librdkafka writes before ssp stores or prints it.
 *
 * librdkafka's errors and log lines can quote the configuration they fail
 * on: the token refresh of OAUTHBEARER says "Unrecognized
 * sasl.oauthbearer.config beginning at: <the rest of the value>", or
 * "'\"' cannot appear in principal: <a part of it>".  Those texts reach
 * error details that any role using the server sees, ssp.views and the
 * server log; the value is a secret of a user mapping (property.c,
 * ssp_option_is_secret).  So kafka.c passes every text of librdkafka's
 * through ssp_secrets_mask before keeping or showing it, with the secrets
 * of the client that wrote it.  A text is masked, "[secret]" in place of
 * each masked run, where it holds:
 *
 *	- a secret value, or one of its words (split at white space) or the
 *	  part of a word after '=' (the values of a sasl.oauthbearer.config,
 *	  which librdkafka quotes one by one), anywhere if it has at least
 *	  SECRET_WORD_MIN characters, else only where it stands alone (no
 *	  letter or digit either side): a password "a" must not turn every "a"
 *	  of the text into a mask, and a value that short is no secret worth
 *	  the name anyway;
 *	- any run of at least SECRET_FRAGMENT_MIN characters that occurs in a
 *	  secret value: a suffix quoted from a given point, a line of a
 *	  private key, whatever else librdkafka may quote of a value in a
 *	  version to come, but for a run within one of the names that
 *	  sasl.oauthbearer.config takes ("principal", "lifeSeconds="), which
 *	  are librdkafka's and say what it complains of.  Other words of a
 *	  value that long are masked, secret or not: masking too much is the
 *	  safe side;
 *	- everything after "sasl.oauthbearer.config beginning at: ", which
 *	  quotes the rest of the value, however short or oddly cut.
 *
 * Only librdkafka's own text is masked, and matches are exact: librdkafka
 * quotes values as given.  Nothing here allocates or errors, since it
 * runs in librdkafka's callbacks (on the backend's thread, but inside
 * librdkafka's frames).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "commands/defrem.h"
#include "nodes/parsenodes.h"

#include "ssp.h"
#include "kafka/kafka.h"

/* shorter words of a value are masked only where they stand alone */
#define SECRET_WORD_MIN 4
/* a run of the text this long that occurs in a secret value is masked */
#define SECRET_FRAGMENT_MIN 8
#define SECRET_MASK "[secret]"

/* a byte of a multibyte character */
#define HIGH_BIT(c) (((unsigned char) (c)) & 0x80)

/*
 * The names sasl.oauthbearer.config takes (librdkafka's, public): a run of
 * the text within one of them is no fragment of a secret, though it
 * occurs in the value, so that "cannot appear in principal: [secret]"
 * still says which.
 */
static const char *const config_names[] = {
	"principalClaimName=", "principal=", "scopeClaimName=", "scope=",
	"lifeSeconds=", "extension_", NULL
};

/* texts of librdkafka's that quote the rest of a secret value after them */
static const char *const quote_rest[] = {
	"sasl.oauthbearer.config beginning at: ",
	NULL
};

struct SspSecrets
{
	int			nvalues;
	char	  **values;			/* whole values: runs of SECRET_FRAGMENT_MIN */
	int			nwords;
	char	  **words;			/* values, their words, what follows '=' */
};

static void
add_word(SspSecrets *s, const char *start, size_t len)
{
	if (len == 0)
		return;
	s->words[s->nwords++] = pnstrdup(start, len);
}

/*
 * ssp_secrets_collect: the secrets among a client's options (DefElems,
 * ssp_server_kafka_options), in CurrentMemoryContext; NULL if none.
 */
SspSecrets *
ssp_secrets_collect(List *options)
{
	SspSecrets *s = NULL;
	int			maxwords = 0;
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (ssp_option_is_secret(def->defname) && defGetString(def)[0] != '\0')
			/* at most: the value, then each word and its part after '=' */
			maxwords += 1 + strlen(defGetString(def)) + 1;
	}
	if (maxwords == 0)
		return NULL;

	s = palloc0(sizeof(SspSecrets));
	s->values = palloc(sizeof(char *) * list_length(options));
	s->words = palloc(sizeof(char *) * maxwords);
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);
		const char *value = defGetString(def);
		const char *p;

		if (!ssp_option_is_secret(def->defname) || value[0] == '\0')
			continue;
		s->values[s->nvalues++] = pstrdup(value);
		add_word(s, value, strlen(value));
		p = value;
		while (*p)
		{
			const char *start;
			const char *eq;

			while (*p && isspace((unsigned char) *p))
				p++;
			start = p;
			while (*p && !isspace((unsigned char) *p))
				p++;
			if (p == start)
				break;
			if (start != value || *p)	/* the whole value is in already */
				add_word(s, start, p - start);
			eq = memchr(start, '=', p - start);
			if (eq)
				add_word(s, eq + 1, p - eq - 1);
		}
	}
	return s;
}

/* ssp_secrets_free: what ssp_secrets_collect allocated (NULL is fine). */
void
ssp_secrets_free(SspSecrets *s)
{
	int			i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nvalues; i++)
		pfree(s->values[i]);
	for (i = 0; i < s->nwords; i++)
		pfree(s->words[i]);
	pfree(s->values);
	pfree(s->words);
	pfree(s);
}

static inline bool
word_char(const char *text, size_t len, size_t i)
{
	return i < len && isalnum((unsigned char) text[i]);
}

/*
 * within_name: is text[i, i + k) within an occurrence in text of one of
 * config_names (with its '=' or without)?
 */
static bool
within_name(const char *text, size_t len, size_t i, size_t k)
{
	int			n;

	for (n = 0; config_names[n]; n++)
	{
		size_t		m = strlen(config_names[n]);
		size_t		bare = config_names[n][m - 1] == '=' ? m - 1 : m;
		size_t		start;

		if (k > m)
			continue;
		/* the occurrences that would hold the run start from i + k - m to i */
		for (start = i + k >= m ? i + k - m : 0; start <= i; start++)
			if ((strncmp(text + start, config_names[n], m) == 0 && start + m >= i + k) ||
				(strncmp(text + start, config_names[n], bare) == 0 && start + bare >= i + k))
				return true;
	}
	return false;
}

/*
 * longest_fragment: the length of the longest run of text from i on that
 * occurs in value.
 */
static size_t
longest_fragment(const char *text, size_t len, size_t i, const char *value)
{
	size_t		best = 0;
	const char *v;

	for (v = value; (v = strchr(v, text[i])) != NULL; v++)
	{
		size_t		k = 1;

		while (i + k < len && v[k] != '\0' && v[k] == text[i + k])
			k++;
		best = Max(best, k);
	}
	return best;
}

/*
 * ssp_secrets_mask: text into out (outsize bytes, always terminated, cut
 * if need be) with the secrets masked as the header says.  The whole text
 * is looked at before it is cut, so no cut leaves a piece of a secret too
 * short to be recognised.  Neither a mask nor the cut splits a character:
 * in every server encoding the bytes of a multibyte character all have
 * the high bit set, so a mask widens over a run of such bytes it touches,
 * and a cut drops the run it falls in.  Allocates nothing and never errors.
 */
void
ssp_secrets_mask(const SspSecrets *s, const char *text, char *out, size_t outsize)
{
	size_t		len;
	size_t		masked_until = 0;	/* text[i] is masked while i < this */
	size_t		rest_from;		/* text[i] is masked from here on */
	size_t		o = 0;
	bool		in_mask = false;
	bool		cut = false;	/* out is full */
	size_t		i;

	if (outsize == 0)
		return;
	if (text == NULL)
		text = "";
	if (s == NULL)
	{
		o = strlcpy(out, text, outsize);
		if (o >= outsize && HIGH_BIT(text[outsize - 1]))
		{
			/* cut within a character: it goes */
			for (o = outsize - 1; o > 0 && HIGH_BIT(out[o - 1]); o--)
				;
			out[o] = '\0';
		}
		return;
	}

	len = strlen(text);
	rest_from = len;
	for (i = 0; i < len && i < rest_from; i++)
	{
		int			w;

		for (w = 0; quote_rest[w]; w++)
			if (strncmp(text + i, quote_rest[w], strlen(quote_rest[w])) == 0)
				rest_from = Min(rest_from, i + strlen(quote_rest[w]));
		for (w = 0; w < s->nwords; w++)
		{
			size_t		wl = strlen(s->words[w]);

			if (strncmp(text + i, s->words[w], wl) == 0 &&
				(wl >= SECRET_WORD_MIN ||
				 ((i == 0 || !word_char(text, len, i - 1)) && !word_char(text, len, i + wl))))
				masked_until = Max(masked_until, i + wl);
		}
		/* a fragment's white space either side is left, to keep words apart */
		for (w = 0; w < s->nvalues && !isspace((unsigned char) text[i]); w++)
		{
			size_t		k = longest_fragment(text, len, i, s->values[w]);

			while (k > 0 && isspace((unsigned char) text[i + k - 1]))
				k--;
			if (k >= SECRET_FRAGMENT_MIN && !within_name(text, len, i, k))
				masked_until = Max(masked_until, i + k);
		}

		/* a mask ends after the character it is in */
		if (in_mask && i >= masked_until && HIGH_BIT(text[i]))
			masked_until = i + 1;

		if (i < masked_until)
		{
			if (!in_mask && !cut)
			{
				const char *m;

				/* and starts before it */
				if (HIGH_BIT(text[i]))
					while (o > 0 && HIGH_BIT(out[o - 1]))
						o--;
				for (m = SECRET_MASK; *m && o + 1 < outsize; m++)
					out[o++] = *m;
			}
			in_mask = true;
		}
		else
		{
			in_mask = false;
			if (cut)
				;				/* nothing after the cut: it may have dropped bytes */
			else if (o + 1 < outsize)
				out[o++] = text[i];
			else if (!cut)
			{
				/* the first byte left out: a character it continues goes */
				cut = true;
				if (HIGH_BIT(text[i]))
					while (o > 0 && HIGH_BIT(out[o - 1]))
						o--;
			}
		}
	}
	if (i < len && !in_mask && !cut)
	{
		const char *m;

		if (HIGH_BIT(text[i]))
			while (o > 0 && HIGH_BIT(out[o - 1]))
				o--;
		for (m = SECRET_MASK; *m && o + 1 < outsize; m++)
			out[o++] = *m;
	}
	out[o] = '\0';
}
