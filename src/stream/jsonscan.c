/*-------------------------------------------------------------------------
 *
 * jsonscan.c
 *	  A fast JSON scanner for the common message: it validates the whole
 *	  text and picks out the values of the paths a stream reads, without
 *	  allocating: the values it finds are spans of the text, not copies.
 *
 * It takes only what it can be sure of: a JSON object whose strings have no
 * escapes, nested no deeper than MAX_DEPTH.  Anything else (an escape, an
 * error, another top-level value) makes it give up, and decode.c parses
 * the message again with Postgres's own parser, which either decodes it or
 * reports the error in Postgres's words.  So it never accepts what
 * Postgres's parser would refuse: the grammar below is JSON's (RFC 8259)
 * as jsonapi.c reads it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "stream/jsonscan.h"

#define MAX_DEPTH 64

typedef struct Scan
{
	const char *p;
	const char *end;
	int			depth;
	JsonFound  *found;
} Scan;

static bool scan_value(Scan *s, PathNode *node);

static inline void
skip_ws(Scan *s)
{
	while (s->p < s->end &&
		   (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* is c a character that would make a word of the literal or number? */
static inline bool
word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '_' || c == '$' || (unsigned char) c >= 0x80;
}

/*
 * The bytes that end a string's run of plain characters: its closing
 * quote, an escape, a control character: one look-up a byte.
 */
static const bool string_stop[256] = {
	[0x00] = true, [0x01] = true, [0x02] = true, [0x03] = true,
	[0x04] = true, [0x05] = true, [0x06] = true, [0x07] = true,
	[0x08] = true, [0x09] = true, [0x0a] = true, [0x0b] = true,
	[0x0c] = true, [0x0d] = true, [0x0e] = true, [0x0f] = true,
	[0x10] = true, [0x11] = true, [0x12] = true, [0x13] = true,
	[0x14] = true, [0x15] = true, [0x16] = true, [0x17] = true,
	[0x18] = true, [0x19] = true, [0x1a] = true, [0x1b] = true,
	[0x1c] = true, [0x1d] = true, [0x1e] = true, [0x1f] = true,
	['"'] = true, ['\\'] = true,
};

/* scan_string: at '"'; its content, which must need no unescaping. */
static bool
scan_string(Scan *s, const char **start, int *len)
{
	const char *q = ++s->p;

	while (q < s->end && !string_stop[(unsigned char) *q])
		q++;
	/* escapes and control characters: give up */
	if (q >= s->end || *q != '"')
		return false;
	*start = s->p;
	*len = q - s->p;
	s->p = q + 1;
	return true;
}

static bool
scan_digits(Scan *s)
{
	const char *q = s->p;

	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > q;
}

/* scan_number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool
scan_number(Scan *s)
{
	if (*s->p == '-')
		s->p++;
	if (s->p >= s->end)
		return false;
	if (*s->p == '0')
		s->p++;
	else if (!scan_digits(s))
		return false;
	if (s->p < s->end && *s->p == '.')
	{
		s->p++;
		if (!scan_digits(s))
			return false;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E'))
	{
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!scan_digits(s))
			return false;
	}
	return !(s->p < s->end && word_char(*s->p));
}

static bool
scan_literal(Scan *s, const char *word, int n)
{
	if (s->end - s->p < n || memcmp(s->p, word, n) != 0)
		return false;
	s->p += n;
	return !(s->p < s->end && word_char(*s->p));
}

/*
 * child_named: the child of node so named, or NULL.  Producers write their
 * fields in the same order message after message, so the search starts
 * after the child found last in this object (*next), and a child is
 * compared by its first byte before the rest.
 */
static PathNode *
child_named(PathNode *node, const char *name, int len, int *next)
{
	int			n = node ? list_length(node->children) : 0;
	int			k = *next < n ? *next : 0;
	int			i;

	for (i = 0; i < n; i++, k = k + 1 < n ? k + 1 : 0)
	{
		PathNode   *c = list_nth(node->children, k);

		if (c->namelen == len && (len == 0 || c->name[0] == name[0]) &&
			memcmp(c->name, name, len) == 0)
		{
			*next = k + 1;
			return c;
		}
	}
	return NULL;
}

/*
 * scan_member: one member of an object (a name, ':' and a value, whose
 * path node is the child of node so named; next as child_named's) or of an
 * array (a value).
 */
static bool
scan_member(Scan *s, PathNode *node, bool object, int *next)
{
	const char *name;
	int			len;

	if (!object)
		return scan_value(s, NULL);		/* nothing inside an array is on a path */
	if (s->p >= s->end || *s->p != '"' || !scan_string(s, &name, &len))
		return false;
	skip_ws(s);
	if (s->p >= s->end || *s->p != ':')
		return false;
	s->p++;
	skip_ws(s);
	return scan_value(s, child_named(node, name, len, next));
}

/*
 * scan_container: at '{' or '['; its members up to the closing character.
 * node is the path node of an object, or NULL.
 */
static bool
scan_container(Scan *s, PathNode *node)
{
	bool		object = *s->p == '{';
	char		close = object ? '}' : ']';
	int			next = 0;

	if (++s->depth > MAX_DEPTH)
		return false;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == close)
	{
		s->p++;
		s->depth--;
		return true;
	}
	for (;;)
	{
		skip_ws(s);
		if (!scan_member(s, node, object, &next))
			return false;
		skip_ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == close)
			break;
		if (*s->p != ',')
			return false;
		s->p++;
	}
	s->p++;
	s->depth--;
	return true;
}

/*
 * ssp_json_forget_below: nothing found yet for the columns on paths below
 * node: a field that comes again replaces the whole of its earlier value,
 * as in jsonb ({"a": {"x": 1}, "a": {"y": 2}} has no a.x), so what was
 * found inside that value goes too.
 */
void
ssp_json_forget_below(PathNode *node, JsonFound *found)
{
	ListCell   *lc;

	foreach(lc, node->children)
	{
		PathNode   *child = lfirst(lc);

		if (child->column >= 0)
			found[child->column].found = false;
		ssp_json_forget_below(child, found);
	}
}

/*
 * scan_value: at a value's first character; if node names a column, what
 * is found for it (the last of duplicate fields wins, as in jsonb).
 */
static bool
scan_value(Scan *s, PathNode *node)
{
	const char *start = s->p;
	JsonTokenType type;
	const char *str = NULL;
	int			len = 0;

	if (s->p >= s->end)
		return false;
	if (node && node->children)
		ssp_json_forget_below(node, s->found);
	switch (*s->p)
	{
		case '{':
			type = JSON_TOKEN_OBJECT_START;
			if (!scan_container(s, node && node->children ? node : NULL))
				return false;
			break;
		case '[':
			type = JSON_TOKEN_ARRAY_START;
			if (!scan_container(s, NULL))
				return false;
			break;
		case '"':
			type = JSON_TOKEN_STRING;
			if (!scan_string(s, &str, &len))
				return false;
			break;
		case 't':
			type = JSON_TOKEN_TRUE;
			if (!scan_literal(s, "true", 4))
				return false;
			break;
		case 'f':
			type = JSON_TOKEN_FALSE;
			if (!scan_literal(s, "false", 5))
				return false;
			break;
		case 'n':
			type = JSON_TOKEN_NULL;
			if (!scan_literal(s, "null", 4))
				return false;
			break;
		default:
			type = JSON_TOKEN_NUMBER;
			if ((*s->p != '-' && (*s->p < '0' || *s->p > '9')) || !scan_number(s))
				return false;
			break;
	}
	if (node && node->column >= 0)
	{
		JsonFound  *f = &s->found[node->column];

		f->found = true;
		f->type = type;
		f->raw = (char *) start;
		f->rawlen = s->p - start;
		f->scalar = NULL;
		f->scalarlen = 0;
		if (type == JSON_TOKEN_STRING)
		{
			f->scalar = str;
			f->scalarlen = len;
		}
		else if (type != JSON_TOKEN_OBJECT_START && type != JSON_TOKEN_ARRAY_START &&
				 type != JSON_TOKEN_NULL)
		{
			f->scalar = start;
			f->scalarlen = f->rawlen;
		}
	}
	return true;
}

/*
 * ssp_json_scan: find the values of root's paths in text, a JSON object,
 * into found; false (found then undefined) if the text is anything but a
 * valid object without string escapes: the caller parses it otherwise.
 */
bool
ssp_json_scan(const char *text, size_t len, PathNode *root, JsonFound *found)
{
	Scan		s;

	s.p = text;
	s.end = text + len;
	s.depth = 0;
	s.found = found;
	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{' || !scan_container(&s, root))
		return false;
	skip_ws(&s);
	return s.p == s.end;
}
