/*-------------------------------------------------------------------------
 *
 * fuzz_jsonscan.c
 *	  libFuzzer target: src/stream/jsonscan.c, the fast JSON scanner, against
 *	  Postgres's own parser (common/jsonapi.h, from libpgcommon).
 *
 * The scanner may give up on anything (decode.c then parses the message
 * with Postgres's parser), but what it accepts must be a JSON object that
 * Postgres's parser accepts too, and the values it finds for the paths
 * "a", "s", "b.c" and "arr" must be the ones that parser's semantic
 * actions find (the last of duplicate fields wins).  Any difference, and
 * any memory error (built with AddressSanitizer and UBSan), aborts.
 *
 * Built and run by test/fuzz/run_fuzz.sh (make fuzz, and make test).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "nodes/pg_list.h"

#include "jsonscan.h"

#define NCOLS 4

/* What one parser found, per column. */
typedef struct Found
{
	bool		found;
	JsonTokenType type;
	char	   *scalar;
} Found;

/* The semantic actions' state: the field names on the way down. */
typedef struct Walk
{
	JsonLexContext *lex;
	char	   *field1;			/* the current top-level field */
	char	   *field2;			/* the current field inside it */
	Found		found[NCOLS];
} Walk;

/* what the parser allocates is freed as soon as it is read: runs are many */
static void
set_field(char **field, char *name)
{
	if (*field)
		pfree(*field);
	*field = name;
}

static PathNode *root;

/* a List of n pointers, as the backend's lappend would make it */
static List *
make_list(int n, void **items)
{
	List	   *l = malloc(offsetof(List, initial_elements) + n * sizeof(ListCell));
	int			i;

	l->type = T_List;
	l->length = n;
	l->max_length = n;
	l->elements = l->initial_elements;
	for (i = 0; i < n; i++)
		l->elements[i].ptr_value = items[i];
	return l;
}

static PathNode *
make_node(const char *name, int column, int n, void **children)
{
	PathNode   *node = calloc(1, sizeof(PathNode));

	node->name = (char *) name;
	node->namelen = name ? strlen(name) : 0;
	node->column = column;
	node->children = n ? make_list(n, children) : NIL;
	return node;
}

/* the column that a value at the current position is, or -1 */
static int
column_here(Walk *w, int level)
{
	if (level == 1 && w->field1)
	{
		if (strcmp(w->field1, "a") == 0)
			return 0;
		if (strcmp(w->field1, "s") == 0)
			return 1;
		if (strcmp(w->field1, "arr") == 0)
			return 3;
	}
	if (level == 2 && w->field1 && w->field2 &&
		strcmp(w->field1, "b") == 0 && strcmp(w->field2, "c") == 0)
		return 2;
	return -1;
}

static void
record(Walk *w, JsonTokenType type, char *scalar)
{
	int			c = column_here(w, w->lex->lex_level);

	if (c < 0)
	{
		if (scalar)
			pfree(scalar);
		return;
	}
	w->found[c].found = true;
	w->found[c].type = type;
	if (w->found[c].scalar)
		pfree(w->found[c].scalar);
	w->found[c].scalar = scalar;
}

static void
on_field(void *state, char *fname, bool isnull)
{
	Walk	   *w = state;

	if (w->lex->lex_level == 1)
	{
		/* "b" again replaces its earlier value, and b.c found in it */
		if (strcmp(fname, "b") == 0 && w->found[2].found)
		{
			w->found[2].found = false;
			if (w->found[2].scalar)
				pfree(w->found[2].scalar);
			w->found[2].scalar = NULL;
		}
		set_field(&w->field1, fname);
		set_field(&w->field2, NULL);
	}
	else if (w->lex->lex_level == 2)
		set_field(&w->field2, fname);
	else
		pfree(fname);
}

/* containers: called before the level goes down into them */
static void
on_object(void *state)
{
	record(state, JSON_TOKEN_OBJECT_START, NULL);
}

static void
on_array(void *state)
{
	record(state, JSON_TOKEN_ARRAY_START, NULL);
}

static void
on_scalar(void *state, char *token, JsonTokenType type)
{
	Walk	   *w = state;

	if (type == JSON_TOKEN_NULL || w->lex->lex_level == 0)
	{
		pfree(token);
		token = NULL;
	}
	if (w->lex->lex_level > 0)
		record(w, type, token);
}

static void
on_array_element(void *state, bool isnull)
{
	Walk	   *w = state;

	/* an element's level is inside the array: no field names it */
	if (w->lex->lex_level == 1)
		set_field(&w->field1, NULL);
	else if (w->lex->lex_level == 2)
		set_field(&w->field2, NULL);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	JsonFound	scanned[NCOLS];
	Walk		w;
	JsonSemAction sem;
	JsonParseErrorType err;
	char	   *text;
	int			i;

	if (root == NULL)
	{
		void	   *bc[1] = {make_node("c", 2, 0, NULL)};
		void	   *top[4] = {make_node("a", 0, 0, NULL), make_node("s", 1, 0, NULL),
		make_node("b", -1, 1, bc), make_node("arr", 3, 0, NULL)};

		root = make_node(NULL, -1, 4, top);
	}

	/* the scanner reads exactly size bytes: give it a copy without slack */
	text = malloc(size ? size : 1);
	memcpy(text, data, size);
	memset(scanned, 0, sizeof(scanned));
	if (!ssp_json_scan(text, size, root, scanned))
	{
		free(text);
		return 0;
	}

	memset(&w, 0, sizeof(w));
	w.lex = makeJsonLexContextCstringLen(text, (int) size, PG_UTF8, true);
	memset(&sem, 0, sizeof(sem));
	sem.semstate = &w;
	sem.object_field_start = on_field;
	sem.object_start = on_object;
	sem.array_start = on_array;
	sem.array_element_start = on_array_element;
	sem.scalar = on_scalar;
	err = pg_parse_json(w.lex, &sem);
	if (err != JSON_SUCCESS)
	{
		fprintf(stderr, "jsonscan accepted what Postgres refuses (error %d): %.*s\n",
				(int) err, (int) Min(size, 200), text);
		abort();
	}
	for (i = 0; i < (int) size && strchr(" \t\r\n", text[i]) && text[i]; i++)
		;
	if (i == (int) size || text[i] != '{')
	{
		fprintf(stderr, "jsonscan accepted a value that is not an object\n");
		abort();
	}
	for (i = 0; i < NCOLS; i++)
	{
		JsonFound  *s = &scanned[i];
		Found	   *p = &w.found[i];

		if (s->found != p->found ||
			(s->found && s->type != p->type) ||
			(s->found && p->scalar != NULL &&
			 (s->scalar == NULL || s->scalarlen != strlen(p->scalar) ||
			  memcmp(s->scalar, p->scalar, s->scalarlen) != 0)) ||
			(s->found && p->scalar == NULL && s->scalar != NULL))
		{
			fprintf(stderr, "column %d: jsonscan found %d/%d/\"%.*s\", Postgres %d/%d/\"%s\"\n",
					i, s->found, (int) s->type, s->scalar ? s->scalarlen : 6,
					s->scalar ? s->scalar : "(null)",
					p->found, (int) p->type, p->scalar ? p->scalar : "(null)");
			abort();
		}
		if (p->scalar)
			pfree(p->scalar);
	}
	set_field(&w.field1, NULL);
	set_field(&w.field2, NULL);
	pfree(w.lex->strval->data);
	pfree(w.lex->strval);
	pfree(w.lex);
	free(text);
	return 0;
}
