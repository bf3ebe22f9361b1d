/*-------------------------------------------------------------------------
 *
 * avro_schema.c
 *	  Apache Avro schemas, parsed from their JSON (specification 1.12):
 *	  primitive, named (record, enum, fixed, with namespaces and references
 *	  by name, a record's to itself included) and complex types, and the
 *	  logical types, which are ignored where they do not fit, as the
 *	  specification says.  An invalid schema is an error of class 22 (a
 *	  message written with it is a dead letter; the stream option "schema"
 *	  is refused).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "nodes/value.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "stream/avro_internal.h"

typedef struct SchemaParse
{
	List	   *named;			/* SspAvroType of the named types so far */
	int			depth;
} SchemaParse;

static SspAvroType *parse_type(SchemaParse *ps, JsonbValue *v, const char *ns);

static void
schema_error(const char *fmt,...) pg_attribute_printf(1, 2);

static void
schema_error(const char *fmt,...)
{
	char		buf[512];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid Avro schema: %s", buf)));
}

/* key: a member of an object, or NULL. */
static JsonbValue *
key(JsonbContainer *obj, const char *name)
{
	JsonbValue *v = palloc(sizeof(JsonbValue));

	if (getKeyJsonValueFromContainer(obj, name, strlen(name), v) == NULL)
		return NULL;
	return v;
}

/* key_string: a member that must be a string if present; NULL if absent. */
static char *
key_string(JsonbContainer *obj, const char *name, const char *of)
{
	JsonbValue *v = key(obj, name);

	if (v == NULL)
		return NULL;
	if (v->type != jbvString)
		schema_error("\"%s\" of %s is not a string", name, of);
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static int
key_int(JsonbContainer *obj, const char *name, int dflt, bool *ok)
{
	JsonbValue *v = key(obj, name);

	if (v == NULL)
		return dflt;
	if (v->type != jbvNumeric)
	{
		*ok = false;
		return dflt;
	}
	return DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(v->val.numeric)));
}

static SspAvroType *
new_type(AvroKind kind)
{
	SspAvroType *t = palloc0(sizeof(SspAvroType));

	t->kind = kind;
	t->empty = kind == AV_NULL;
	return t;
}

static int
primitive(const char *name)
{
	int			k;

	for (k = AV_NULL; k <= AV_STRING; k++)
		if (strcmp(name, ssp_avro_kind_names[k]) == 0)
			return k;
	return -1;
}

/* full_name: a named type's full name, given its name, namespace and the enclosing one. */
static char *
full_name(const char *name, const char *nsopt, const char *ns)
{
	if (strchr(name, '.') != NULL)
		return pstrdup(name);
	if (nsopt && nsopt[0])
		return psprintf("%s.%s", nsopt, name);
	if (nsopt == NULL && ns && ns[0])
		return psprintf("%s.%s", ns, name);
	return pstrdup(name);
}

/* namespace_of: the namespace a full name sets for what it encloses. */
static char *
namespace_of(const char *full)
{
	const char *dot = strrchr(full, '.');

	return dot ? pnstrdup(full, dot - full) : "";
}

static SspAvroType *
lookup_named(SchemaParse *ps, const char *name, const char *ns)
{
	ListCell   *lc;
	char	   *qualified = strchr(name, '.') || ns == NULL || !ns[0] ? NULL : psprintf("%s.%s", ns, name);

	/* a schema of many named types takes long (the list is searched): let it be cancelled */
	CHECK_FOR_INTERRUPTS();
	foreach(lc, ps->named)
	{
		SspAvroType *t = lfirst(lc);

		if (qualified && strcmp(t->name, qualified) == 0)
			return t;
	}
	foreach(lc, ps->named)
	{
		SspAvroType *t = lfirst(lc);

		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

static void
define_named(SchemaParse *ps, SspAvroType *t)
{
	if (lookup_named(ps, t->name, NULL) != NULL)
		schema_error("type \"%s\" is defined twice", t->name);
	if (primitive(t->name) >= 0)
		schema_error("a named type cannot be called \"%s\"", t->name);
	ps->named = lappend(ps->named, t);
}

static void
set_logical(SspAvroType *t, JsonbContainer *obj)
{
	char	   *lt = key_string(obj, "logicalType", "a type");
	bool		ok = true;

	if (lt == NULL)
		return;
	/* a logical type that does not fit is ignored, as the specification says */
	if (strcmp(lt, "decimal") == 0 && (t->kind == AV_BYTES || t->kind == AV_FIXED))
	{
		int			precision = key_int(obj, "precision", 0, &ok);
		int			scale = key_int(obj, "scale", 0, &ok);

		/* a fixed of n bytes holds floor(log10(2^(8n - 1) - 1)) digits */
		if (ok && precision > 0 && scale >= 0 && scale <= precision &&
			precision <= NUMERIC_MAX_PRECISION &&
			(t->kind == AV_BYTES || precision <= floor(log10(2.0) * (8.0 * t->n - 1))))
		{
			t->logical = AL_DECIMAL;
			t->precision = precision;
			t->scale = scale;
		}
	}
	else if (strcmp(lt, "uuid") == 0 && (t->kind == AV_STRING || (t->kind == AV_FIXED && t->n == 16)))
		t->logical = AL_UUID;
	else if (strcmp(lt, "date") == 0 && t->kind == AV_INT)
		t->logical = AL_DATE;
	else if (strcmp(lt, "time-millis") == 0 && t->kind == AV_INT)
		t->logical = AL_TIME_MILLIS;
	else if (strcmp(lt, "time-micros") == 0 && t->kind == AV_LONG)
		t->logical = AL_TIME_MICROS;
	else if (strcmp(lt, "timestamp-millis") == 0 && t->kind == AV_LONG)
		t->logical = AL_TS_MILLIS;
	else if (strcmp(lt, "timestamp-micros") == 0 && t->kind == AV_LONG)
		t->logical = AL_TS_MICROS;
	else if (strcmp(lt, "timestamp-nanos") == 0 && t->kind == AV_LONG)
		t->logical = AL_TS_NANOS;
	else if (strcmp(lt, "local-timestamp-millis") == 0 && t->kind == AV_LONG)
		t->logical = AL_LOCAL_TS_MILLIS;
	else if (strcmp(lt, "local-timestamp-micros") == 0 && t->kind == AV_LONG)
		t->logical = AL_LOCAL_TS_MICROS;
	else if (strcmp(lt, "local-timestamp-nanos") == 0 && t->kind == AV_LONG)
		t->logical = AL_LOCAL_TS_NANOS;
	else if (strcmp(lt, "duration") == 0 && t->kind == AV_FIXED && t->n == 12)
		t->logical = AL_DURATION;
}

static SspAvroType *
parse_record(SchemaParse *ps, JsonbContainer *obj, const char *ns, const char *what)
{
	SspAvroType *t = new_type(AV_RECORD);
	char	   *name = key_string(obj, "name", what);
	JsonbValue *fields = key(obj, "fields");
	char	   *inner;
	int			i;

	if (name == NULL || name[0] == '\0')
		schema_error("a %s has no \"name\"", what);
	t->name = full_name(name, key_string(obj, "namespace", what), ns);
	define_named(ps, t);		/* before its fields, which may refer to it */
	inner = namespace_of(t->name);
	if (fields == NULL || fields->type != jbvBinary || !JsonContainerIsArray(fields->val.binary.data))
		schema_error("record \"%s\" has no \"fields\" array", t->name);
	t->n = JsonContainerSize(fields->val.binary.data);
	t->names = palloc0(sizeof(char *) * Max(t->n, 1));
	t->aliases = palloc0(sizeof(List *) * Max(t->n, 1));
	t->types = palloc0(sizeof(SspAvroType *) * Max(t->n, 1));
	t->empty = true;
	for (i = 0; i < t->n; i++)
	{
		JsonbValue *f = getIthJsonbValueFromContainer(fields->val.binary.data, i);
		JsonbValue *ftype;
		JsonbValue *aliases;
		int			j;

		if (f == NULL || f->type != jbvBinary || !JsonContainerIsObject(f->val.binary.data))
			schema_error("field %d of record \"%s\" is not an object", i + 1, t->name);
		t->names[i] = key_string(f->val.binary.data, "name", "a field");
		if (t->names[i] == NULL)
			schema_error("field %d of record \"%s\" has no \"name\"", i + 1, t->name);
		CHECK_FOR_INTERRUPTS();
		for (j = 0; j < i; j++)
			if (strcmp(t->names[j], t->names[i]) == 0)
				schema_error("record \"%s\" has two fields \"%s\"", t->name, t->names[i]);
		ftype = key(f->val.binary.data, "type");
		if (ftype == NULL)
			schema_error("field \"%s\" of record \"%s\" has no \"type\"", t->names[i], t->name);
		t->types[i] = parse_type(ps, ftype, inner);
		t->empty &= t->types[i]->empty;
		aliases = key(f->val.binary.data, "aliases");
		if (aliases && aliases->type == jbvBinary && JsonContainerIsArray(aliases->val.binary.data))
		{
			int			k;

			for (k = 0; k < JsonContainerSize(aliases->val.binary.data); k++)
			{
				JsonbValue *a = getIthJsonbValueFromContainer(aliases->val.binary.data, k);

				if (a && a->type == jbvString)
					t->aliases[i] = lappend(t->aliases[i],
											makeString(pnstrdup(a->val.string.val, a->val.string.len)));
			}
		}
	}
	return t;
}

static SspAvroType *
parse_object(SchemaParse *ps, JsonbContainer *obj, const char *ns)
{
	JsonbValue *type = key(obj, "type");
	SspAvroType *t;
	char	   *tname;
	int			k;

	if (type == NULL)
		schema_error("an object has no \"type\"");
	if (type->type != jbvString)
	{
		/* {"type": {...}} or {"type": [...]}: the type is the inner one */
		return parse_type(ps, type, ns);
	}
	tname = pnstrdup(type->val.string.val, type->val.string.len);
	if ((k = primitive(tname)) >= 0)
		t = new_type(k);
	else if (strcmp(tname, "record") == 0 || strcmp(tname, "error") == 0)
		return parse_record(ps, obj, ns, "record");
	else if (strcmp(tname, "enum") == 0)
	{
		char	   *name = key_string(obj, "name", "an enum");
		JsonbValue *symbols = key(obj, "symbols");
		int			i;

		t = new_type(AV_ENUM);
		if (name == NULL || name[0] == '\0')
			schema_error("an enum has no \"name\"");
		t->name = full_name(name, key_string(obj, "namespace", "an enum"), ns);
		if (symbols == NULL || symbols->type != jbvBinary || !JsonContainerIsArray(symbols->val.binary.data))
			schema_error("enum \"%s\" has no \"symbols\" array", t->name);
		t->n = JsonContainerSize(symbols->val.binary.data);
		t->names = palloc0(sizeof(char *) * Max(t->n, 1));
		for (i = 0; i < t->n; i++)
		{
			JsonbValue *s = getIthJsonbValueFromContainer(symbols->val.binary.data, i);

			if (s == NULL || s->type != jbvString)
				schema_error("a symbol of enum \"%s\" is not a string", t->name);
			t->names[i] = pnstrdup(s->val.string.val, s->val.string.len);
		}
		define_named(ps, t);
	}
	else if (strcmp(tname, "array") == 0 || strcmp(tname, "map") == 0)
	{
		JsonbValue *items = key(obj, tname[0] == 'a' ? "items" : "values");

		t = new_type(tname[0] == 'a' ? AV_ARRAY : AV_MAP);
		if (items == NULL)
			schema_error("an %s has no \"%s\"", tname, tname[0] == 'a' ? "items" : "values");
		t->types = palloc(sizeof(SspAvroType *));
		t->types[0] = parse_type(ps, items, ns);
	}
	else if (strcmp(tname, "fixed") == 0)
	{
		char	   *name = key_string(obj, "name", "a fixed");
		bool		ok = true;

		t = new_type(AV_FIXED);
		if (name == NULL || name[0] == '\0')
			schema_error("a fixed has no \"name\"");
		t->name = full_name(name, key_string(obj, "namespace", "a fixed"), ns);
		t->n = key_int(obj, "size", -1, &ok);
		if (!ok || t->n < 0)
			schema_error("fixed \"%s\" has no valid \"size\"", t->name);
		t->empty = t->n == 0;
		define_named(ps, t);
	}
	else
	{
		SspAvroType *named = lookup_named(ps, tname, ns);

		if (named == NULL)
			schema_error("unrecognized type \"%s\"", tname);
		return named;
	}
	set_logical(t, obj);
	return t;
}

static SspAvroType *
parse_type(SchemaParse *ps, JsonbValue *v, const char *ns)
{
	SspAvroType *t;

	check_stack_depth();
	if (++ps->depth > 256)
		schema_error("types nested more than 256 deep");
	if (v->type == jbvString)
	{
		char	   *name = pnstrdup(v->val.string.val, v->val.string.len);
		int			k = primitive(name);

		if (k >= 0)
			t = new_type(k);
		else if ((t = lookup_named(ps, name, ns)) == NULL)
			schema_error("unrecognized type \"%s\"", name);
	}
	else if (v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data))
		t = parse_object(ps, v->val.binary.data, ns);
	else if (v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		JsonbContainer *arr = v->val.binary.data;
		int			i;
		int			j;

		t = new_type(AV_UNION);
		t->n = JsonContainerSize(arr);
		if (t->n == 0)
			schema_error("a union has no branches");
		t->types = palloc(sizeof(SspAvroType *) * t->n);
		for (i = 0; i < t->n; i++)
		{
			t->types[i] = parse_type(ps, getIthJsonbValueFromContainer(arr, i), ns);
			if (t->types[i]->kind == AV_UNION)
				schema_error("a union holds a union");
			for (j = 0; j < i; j++)
				if (t->types[j]->kind == t->types[i]->kind &&
					(t->types[i]->name == NULL || strcmp(t->types[j]->name, t->types[i]->name) == 0))
					schema_error("a union holds two branches of type \"%s\"",
								 t->types[i]->name ? t->types[i]->name : ssp_avro_kind_names[t->types[i]->kind]);
		}
	}
	else
		schema_error("a type is neither a name, an object nor a union");
	ps->depth--;
	return t;
}

/*
 * ssp_avro_parse: a writer schema from its JSON, in CurrentMemoryContext;
 * errors (22023) if it is not a valid Avro schema.
 */
SspAvroType *
ssp_avro_parse(const char *json)
{
	return ssp_avro_parse_with(NIL, json);
}

/* parse_text: one schema's JSON into ps (its named types kept there). */
static SspAvroType *
parse_text(SchemaParse *ps, const char *json)
{
	JsonLexContext *lex = makeJsonLexContextCstringLen((char *) json, strlen(json),
													   GetDatabaseEncoding(), true);
	Jsonb	   *jb;
	JsonbValue	root;

	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		schema_error("it is not valid JSON");
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
	if (JB_ROOT_IS_SCALAR(jb))
		return parse_type(ps, getIthJsonbValueFromContainer(&jb->root, 0), "");
	root.type = jbvBinary;
	root.val.binary.data = &jb->root;
	root.val.binary.len = VARSIZE(jb) - VARHDRSZ;
	return parse_type(ps, &root, "");
}

/*
 * ssp_avro_parse_with: a writer schema that refers to the named types of
 * other schemas (a registry's "references"), given their JSON texts first,
 * each before those that refer to it.
 */
SspAvroType *
ssp_avro_parse_with(List *references, const char *json)
{
	SchemaParse ps = {NIL, 0};
	ListCell   *lc;

	foreach(lc, references)
		(void) parse_text(&ps, lfirst(lc));
	return parse_text(&ps, json);
}
