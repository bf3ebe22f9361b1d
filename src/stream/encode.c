/*-------------------------------------------------------------------------
 *
 * encode.c
 *	  From a row of a stream to a Kafka message: the value in the stream's
 *	  format, the key, the partition, the timestamp and the headers.
 *
 * The inverse of decode.c: what ssp_encode_row produces, ssp_decode_message
 * reads back as the same row.  Key columns go to the key only; metadata
 * columns set the message's partition, timestamp, key and headers; the
 * offset is the broker's to assign and is ignored.
 *
 * Allocates in CurrentMemoryContext, which callers reset per row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "ssp.h"
#include "registry/registry.h"
#include "stream/avro.h"
#include "stream/protobuf.h"
#include "stream/stream.h"

static void json_datum(StringInfo buf, Datum value, Oid basetype, FmgrInfo *outfunc);

/* json_number: a number's text, quoted if JSON cannot hold it (NaN). */
static void
json_number(StringInfo buf, const char *s)
{
	if (strspn(s, "0123456789-+.eE") == strlen(s) && s[0] != '\0')
		appendStringInfoString(buf, s);
	else
		escape_json(buf, s);
}

/*
 * json_array_level: the elements of one sub-array of a level of an array
 * (dims: its shape) from *k on, as a JSON array of arrays down to the last
 * level.
 */
static void
json_array_level(StringInfo buf, int level, int ndim, int *dims, Datum *elems,
				 bool *nulls, int *k, Oid elembase, FmgrInfo *outfunc)
{
	int			i;

	appendStringInfoChar(buf, '[');
	for (i = 0; i < dims[level]; i++)
	{
		if (i > 0)
			appendStringInfoChar(buf, ',');
		if (level + 1 < ndim)
			json_array_level(buf, level + 1, ndim, dims, elems, nulls, k, elembase, outfunc);
		else
		{
			if (nulls[*k])
				appendStringInfoString(buf, "null");
			else
				json_datum(buf, elems[*k], elembase, outfunc);
			(*k)++;
		}
	}
	appendStringInfoChar(buf, ']');
}

/*
 * json_array: an array as JSON; a multidimensional one as nested arrays,
 * which decode.c reads back as the same shape.  An element of json or
 * jsonb may be any JSON value, arrays too (decode.c reads it so), so
 * nested arrays of them would come back as one dimension: refused.
 */
static void
json_array(StringInfo buf, Datum value)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	Oid			elembase = getBaseType(elemtype);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			k = 0;
	Oid			outfn;
	bool		isvarlena;
	FmgrInfo	outfunc;

	if (ARR_NDIM(arr) > 1 && (elembase == JSONOID || elembase == JSONBOID))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot write a multidimensional array of %s as JSON",
						format_type_be(elemtype)),
				 errdetail("An element of type %s may itself be a JSON array, so nested arrays would be read back as elements of one dimension.",
						   format_type_be(elemtype))));
	if (ARR_NDIM(arr) == 0)
	{
		appendStringInfoString(buf, "[]");
		return;
	}
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	getTypeOutputInfo(elemtype, &outfn, &isvarlena);
	fmgr_info(outfn, &outfunc);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	json_array_level(buf, 0, ARR_NDIM(arr), ARR_DIMS(arr), elems, nulls, &k,
					 elembase, &outfunc);
}

/*
 * json_datum: a non-null value as JSON, much as to_json() writes it.  A
 * domain's value is written as its base type's (basetype, which callers
 * look up once, not per value), as to_json() writes it too.
 */
static void
json_datum(StringInfo buf, Datum value, Oid basetype, FmgrInfo *outfunc)
{
	switch (basetype)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			json_number(buf, OutputFunctionCall(outfunc, value));
			return;
		case BOOLOID:
			appendStringInfoString(buf, DatumGetBool(value) ? "true" : "false");
			return;
		case JSONOID:
		case JSONBOID:
			appendStringInfoString(buf, OutputFunctionCall(outfunc, value));
			return;
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TIMEOID:
		case TIMETZOID:
			{
				char		dt[MAXDATELEN + 1];

				appendStringInfoChar(buf, '"');
				appendStringInfoString(buf, JsonEncodeDateTime(dt, value, basetype, NULL));
				appendStringInfoChar(buf, '"');
				return;
			}
		default:
			if (OidIsValid(get_element_type(basetype)) && basetype != INT2VECTOROID &&
				basetype != OIDVECTOROID)
				json_array(buf, value);
			else
				escape_json(buf, OutputFunctionCall(outfunc, value));
	}
}

/*
 * json_object: the value columns in cols whose paths share the first
 * "level" names, as one JSON object; nested paths become nested objects.
 */
static void
json_obj(StringInfo buf, SspStream *stream, List *cols, int level,
			Datum *values, bool *nulls)
{
	bool	   *done = palloc0(sizeof(bool) * Max(list_length(cols), 1));
	bool		first = true;
	int			i;

	appendStringInfoChar(buf, '{');
	for (i = 0; i < list_length(cols); i++)
	{
		SspColumn  *col = list_nth(cols, i);
		const char *name = strVal(list_nth(col->path, level));
		int			a = col->attnum - 1;

		if (done[i])
			continue;
		if (!first)
			appendStringInfoChar(buf, ',');
		first = false;
		escape_json(buf, name);
		appendStringInfoChar(buf, ':');

		if (list_length(col->path) == level + 1)
		{
			if (nulls[a])
				appendStringInfoString(buf, "null");
			else
				json_datum(buf, values[a], col->basetype, &col->outfunc);
		}
		else
		{
			List	   *sub = NIL;
			int			j;

			/* every later column under the same name goes in this object */
			for (j = i; j < list_length(cols); j++)
			{
				SspColumn  *other = list_nth(cols, j);

				if (!done[j] && list_length(other->path) > level + 1 &&
					strcmp(strVal(list_nth(other->path, level)), name) == 0)
				{
					sub = lappend(sub, other);
					done[j] = true;
				}
			}
			json_obj(buf, stream, sub, level + 1, values, nulls);
		}
		done[i] = true;
	}
	appendStringInfoChar(buf, '}');
}

static void
csv_field(StringInfo buf, const char *s)
{
	const char *p;

	if (s[0] != '\0' && strpbrk(s, ",\"\r\n") == NULL &&
		s[0] != ' ' && s[strlen(s) - 1] != ' ')
	{
		appendStringInfoString(buf, s);
		return;
	}
	appendStringInfoChar(buf, '"');
	for (p = s; *p; p++)
	{
		if (*p == '"')
			appendStringInfoChar(buf, '"');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '"');
}

/* raw_bytes: a value as message bytes: bytea as is, others as text. */
static void
raw_bytes(StringInfo buf, SspColumn *col, Datum value)
{
	if (col->typid == BYTEAOID)
	{
		bytea	   *b = DatumGetByteaPP(value);

		appendBinaryStringInfo(buf, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
	}
	else
		appendStringInfoString(buf, OutputFunctionCall(&col->outfunc, value));
}

/* json_schema_of: a JSON Schema of the stream's columns from source, for auto_register. */
static char *
json_schema_of(SspStream *stream, SspSource source)
{
	StringInfoData buf;
	int			i;
	int			n = 0;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"$schema\": \"http://json-schema.org/draft-07/schema#\", \"title\": ");
	escape_json(&buf, stream->relname);
	appendStringInfoString(&buf, ", \"type\": \"object\", \"properties\": {");
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];
		const char *type;

		if (col->source != source)
			continue;
		switch (col->basetype)
		{
			case INT2OID:
			case INT4OID:
			case INT8OID:
				type = "[\"integer\", \"null\"]";
				break;
			case FLOAT4OID:
			case FLOAT8OID:
			case NUMERICOID:
				type = "[\"number\", \"null\"]";
				break;
			case BOOLOID:
				type = "[\"boolean\", \"null\"]";
				break;
			case JSONOID:
			case JSONBOID:
				type = NULL;
				break;
			default:
				type = OidIsValid(get_element_type(col->basetype)) ? "[\"array\", \"null\"]" :
					"[\"string\", \"null\"]";
		}
		if (n++ > 0)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, source == SSP_SRC_KEY ? col->name : strVal(linitial(col->path)));
		if (type)
			appendStringInfo(&buf, ": {\"type\": %s}", type);
		else
			appendStringInfoString(&buf, ": {}");
	}
	appendStringInfoString(&buf, "}}");
	return buf.data;
}

/*
 * framed_writer: the writer schema of the stream's value or key for this
 * statement (the stream is opened once a statement), and the framing, the
 * magic byte and its id, appended to buf (nothing for unframed Avro).
 * The schema is the subject's latest (TopicNameStrategy: TOPIC-value,
 * TOPIC-key); a subject without one is registered from the stream's
 * columns when the stream's auto_register is on, else an error.
 */
static void
framed_writer(SspStream *stream, SspSource source, StringInfo buf)
{
	int			k = source == SSP_SRC_KEY ? 1 : 0;
	SspFormat	format = k ? stream->key_format : stream->format;
	SspSchemaType type = format == SSP_FORMAT_AVRO ? SSP_SCHEMA_AVRO :
		format == SSP_FORMAT_PROTOBUF ? SSP_SCHEMA_PROTOBUF : SSP_SCHEMA_JSON;
	static const char *const type_names[] = {"Avro", "Protobuf", "a JSON Schema"};

	if (stream->write_id[k] == 0)
	{
		MemoryContext old = MemoryContextSwitchTo(stream->cxt);
		char	   *subject = psprintf("%s-%s", stream->topic, k ? "key" : "value");
		SspSchema  *latest;

		if (k == 0 && stream->avro_writer)
		{
			stream->write_schema[0] = stream->avro_writer;
			stream->write_id[0] = -1;
		}
		else if (stream->registry == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
					 errmsg("cannot insert into stream \"%s\": its format needs a schema registry",
							stream->relname),
					 errhint("Set the server option \"schema.registry.url\".")));
		else if ((latest = ssp_registry_latest(stream->registry, subject)) != NULL)
		{
			if (latest->type != type)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("cannot insert into stream \"%s\": the latest schema of subject \"%s\" is not %s",
								stream->relname, subject, type_names[type])));
			stream->write_id[k] = latest->id;
			if (type == SSP_SCHEMA_AVRO)
				stream->write_schema[k] = ssp_avro_parse_with(latest->references, latest->text);
			else if (type == SSP_SCHEMA_PROTOBUF)
				stream->write_schema[k] = ssp_pb_writer(ssp_pb_parse(latest->references, latest->text),
														k ? NULL : stream->message, stream->relname);
		}
		else if (stream->auto_register)
		{
			char	   *text = type == SSP_SCHEMA_AVRO ? ssp_avro_schema_of(stream, source) :
				type == SSP_SCHEMA_PROTOBUF ? ssp_pb_schema_of(stream, source) :
				json_schema_of(stream, source);

			if (type == SSP_SCHEMA_AVRO)
				stream->write_schema[k] = ssp_avro_parse(text);
			else if (type == SSP_SCHEMA_PROTOBUF)
				stream->write_schema[k] = ssp_pb_writer(ssp_pb_parse(NIL, text), NULL, stream->relname);
			stream->write_id[k] = ssp_registry_register(stream->registry, subject, type, text);
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("cannot insert into stream \"%s\": subject \"%s\" has no schema in the schema registry",
							stream->relname, subject),
					 errhint("Register the subject's schema, or set the stream option auto_register 'true' to register one from the stream's columns.")));
		MemoryContextSwitchTo(old);
	}
	if (stream->write_id[k] > 0)
	{
		appendStringInfoChar(buf, SSP_REGISTRY_MAGIC);
		appendStringInfoChar(buf, (char) ((stream->write_id[k] >> 24) & 0xff));
		appendStringInfoChar(buf, (char) ((stream->write_id[k] >> 16) & 0xff));
		appendStringInfoChar(buf, (char) ((stream->write_id[k] >> 8) & 0xff));
		appendStringInfoChar(buf, (char) (stream->write_id[k] & 0xff));
	}
}

/*
 * kafka_timestamp: a timestamp as a Kafka message's, in *ms: milliseconds
 * since 1970, at least 1 (librdkafka takes 0 for "now", and a reader takes
 * a negative one for none); false, *ms untouched, where it cannot be one.
 * A timestamp without time zone (typid) is the instant Postgres casts it
 * to, in the session's TimeZone, as a reader casts the Kafka timestamp
 * back (decode.c) and a join compares it with the watermark.
 */
static bool
kafka_timestamp(Datum ts, Oid typid, int64 *ms)
{
	int64		v;

	if (TIMESTAMP_NOT_FINITE(DatumGetTimestampTz(ts)))
		return false;
	if (typid == TIMESTAMPOID)
	{
		int			overflow = 0;

		ts = TimestampTzGetDatum(timestamp2timestamptz_opt_overflow(DatumGetTimestamp(ts), &overflow));
		if (overflow != 0)
			return false;
	}
	v = ssp_timestamptz_to_ms(ts);
	/* from the first millisecond after 1970, to the last a reader can take */
	if (v < 1 || v > PG_INT64_MAX / 1000)
		return false;
	*ms = v;
	return true;
}

static void
encode_value(SspStream *stream, Datum *values, bool *nulls, SspOutMessage *out)
{
	List	   *cols = NIL;
	bool		allnull = true;
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
		if (stream->columns[i].source == SSP_SRC_VALUE)
		{
			cols = lappend(cols, &stream->columns[i]);
			if (!nulls[stream->columns[i].attnum - 1])
				allnull = false;
		}

	switch (stream->format)
	{
		case SSP_FORMAT_JSON:
			json_obj(&out->value, stream, cols, 0, values, nulls);
			break;
		case SSP_FORMAT_CSV:
			for (i = 0; i < list_length(cols); i++)
			{
				SspColumn  *col = list_nth(cols, i);

				if (i > 0)
					appendStringInfoChar(&out->value, ',');
				if (!nulls[col->attnum - 1])
					csv_field(&out->value,
							  OutputFunctionCall(&col->outfunc, values[col->attnum - 1]));
			}
			break;
		case SSP_FORMAT_AVRO:
			framed_writer(stream, SSP_SRC_VALUE, &out->value);
			ssp_avro_encode(stream, SSP_SRC_VALUE, stream->write_schema[0], values, nulls,
							&out->value);
			break;
		case SSP_FORMAT_JSONSCHEMA:
			framed_writer(stream, SSP_SRC_VALUE, &out->value);
			json_obj(&out->value, stream, cols, 0, values, nulls);
			break;
		case SSP_FORMAT_DEBEZIUM:
			/* Debezium's envelope: a create, or a delete if every value column is NULL */
			if (allnull && cols != NIL)
				appendStringInfoString(&out->value, "{\"before\": null, \"after\": null, \"op\": \"d\"}");
			else
			{
				appendStringInfoString(&out->value, "{\"before\": null, \"after\": ");
				json_obj(&out->value, stream, cols, 0, values, nulls);
				appendStringInfoString(&out->value, ", \"op\": \"c\"}");
			}
			break;
		case SSP_FORMAT_PROTOBUF:
			{
				StringInfoData json;

				framed_writer(stream, SSP_SRC_VALUE, &out->value);
				initStringInfo(&json);
				json_obj(&json, stream, cols, 0, values, nulls);
				ssp_pb_encode(stream->write_schema[0], json.data, &out->value);
				break;
			}
		case SSP_FORMAT_TEXT:
		case SSP_FORMAT_BYTEA:
			/* one column; NULL is a null value (a tombstone) */
			if (allnull)
				out->value_null = true;
			else
			{
				SspColumn  *col = linitial(cols);

				raw_bytes(&out->value, col, values[col->attnum - 1]);
			}
			break;
	}
}

static void
encode_key(SspStream *stream, Datum *values, bool *nulls, SspOutMessage *out)
{
	List	   *cols = NIL;
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
		if (stream->columns[i].source == SSP_SRC_KEY)
			cols = lappend(cols, &stream->columns[i]);

	if (cols != NIL && stream->key_format == SSP_FORMAT_AVRO)
	{
		framed_writer(stream, SSP_SRC_KEY, &out->key);
		ssp_avro_encode(stream, SSP_SRC_KEY, stream->write_schema[1], values, nulls, &out->key);
		out->key_null = false;
	}
	else if (list_length(cols) == 1 && stream->key_format != SSP_FORMAT_JSONSCHEMA &&
			 stream->key_format != SSP_FORMAT_PROTOBUF &&
			 !(stream->format == SSP_FORMAT_DEBEZIUM && stream->key_format == SSP_FORMAT_JSON))
	{
		SspColumn  *col = linitial(cols);

		if (!nulls[col->attnum - 1])
		{
			raw_bytes(&out->key, col, values[col->attnum - 1]);
			out->key_null = false;
		}
	}
	else if (cols != NIL)
	{
		/* several key columns (or Debezium's key): a JSON object named by column */
		SspStream	keys = *stream;
		ListCell   *lc;
		List	   *named = NIL;

		foreach(lc, cols)
		{
			SspColumn  *col = palloc(sizeof(SspColumn));

			*col = *(SspColumn *) lfirst(lc);
			col->path = list_make1(makeString(col->name));
			named = lappend(named, col);
		}
		if (stream->key_format == SSP_FORMAT_PROTOBUF)
		{
			StringInfoData json;

			framed_writer(stream, SSP_SRC_KEY, &out->key);
			initStringInfo(&json);
			json_obj(&json, &keys, named, 0, values, nulls);
			ssp_pb_encode(stream->write_schema[1], json.data, &out->key);
		}
		else
		{
			if (stream->key_format == SSP_FORMAT_JSONSCHEMA)
				framed_writer(stream, SSP_SRC_KEY, &out->key);
			json_obj(&out->key, &keys, named, 0, values, nulls);
		}
		out->key_null = false;
	}
}

/* path_text: a column's field path as option "field" spells it. */
static char *
path_text(List *path)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, path)
	{
		if (buf.len > 0)
			appendStringInfoChar(&buf, '.');
		appendStringInfoString(&buf, strVal(lfirst(lc)));
	}
	return buf.data;
}

/*
 * ssp_encode_check: error unless rows of the stream can be written, before
 * any is.  A message written as a JSON object (formats json, jsonschema,
 * debezium and protobuf) holds one value per field: two columns of one
 * field, or a column whose field holds another's ("x" and "x.y"), would
 * write the field twice, and a reader keeps only the last.  An Avro record
 * holds one value per field too, taken from the first column of its path:
 * the other column's value would not be written at all.  Reading such a
 * stream is fine (each column gets the field's value), so it is refused
 * here, not when the stream is defined.  So are two columns of the
 * message's key, partition or timestamp: the keys' bytes were joined, and
 * the last partition or timestamp taken.
 */
void
ssp_encode_check(SspStream *stream)
{
	int			i;
	int			j;
	bool		avro = stream->format == SSP_FORMAT_AVRO;

	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *a = &stream->columns[i];
		const char *what = a->source == SSP_SRC_RAWKEY ? "key" :
			a->source == SSP_SRC_PARTITION ? "partition" :
			a->source == SSP_SRC_TIMESTAMP ? "timestamp" : NULL;

		for (j = i + 1; j < stream->ncolumns && what; j++)
			if (stream->columns[j].source == a->source)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("cannot insert into stream \"%s\": columns \"%s\" and \"%s\" both write the message's %s",
								stream->relname, a->name, stream->columns[j].name, what),
						 errdetail("A message has one %s.", what),
						 errhint("Insert through a stream with one column of option meta '%s'.", what)));
	}
	if (stream->format != SSP_FORMAT_JSON && stream->format != SSP_FORMAT_JSONSCHEMA &&
		stream->format != SSP_FORMAT_DEBEZIUM && stream->format != SSP_FORMAT_PROTOBUF &&
		!avro)
		return;
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *a = &stream->columns[i];

		if (a->source != SSP_SRC_VALUE)
			continue;
		for (j = 0; j < stream->ncolumns; j++)
		{
			SspColumn  *b = &stream->columns[j];
			ListCell   *la;
			ListCell   *lb;
			bool		prefix = true;

			/* a's path a prefix of b's (or the same, once: j > i) */
			if (j == i || b->source != SSP_SRC_VALUE ||
				list_length(a->path) > list_length(b->path) ||
				(list_length(a->path) == list_length(b->path) && j < i))
				continue;
			forboth(la, a->path, lb, b->path)
			{
				if (strcmp(strVal(lfirst(la)), strVal(lfirst(lb))) != 0)
				{
					prefix = false;
					break;
				}
			}
			if (!prefix)
				continue;
			if (list_length(a->path) == list_length(b->path))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("cannot insert into stream \"%s\": columns \"%s\" and \"%s\" both write field \"%s\"",
								stream->relname, a->name, b->name, path_text(a->path)),
						 avro ? errdetail("An Avro record has one value for each field; the second column's would not be written.") :
						 errdetail("A message has one value for each field; a reader would keep the last."),
						 errhint("Insert through a stream whose columns name distinct fields.")));
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("cannot insert into stream \"%s\": column \"%s\" writes field \"%s\", which holds field \"%s\" of column \"%s\"",
							stream->relname, a->name, path_text(a->path),
							path_text(b->path), b->name),
					 avro ? errdetail("A field cannot hold both a column's value and a record of other fields.") :
					 errdetail("A field cannot hold both a column's value and an object of other fields."),
					 errhint("Insert through a stream whose columns name distinct fields, none inside another.")));
		}
	}
}

/*
 * pin_output_styles: the settings that shape the text of output functions
 * (dates, intervals, floats; in CSV and text messages, keys, and the JSON
 * of types without a JSON form) set, where the session's differ, to those
 * every reader takes back exactly, whatever its own: DateStyle ISO (its
 * order of fields kept), IntervalStyle postgres, extra_float_digits 3, as
 * postgres_fdw sends values.  A session's 'SQL, DMY' wrote March 4 as
 * 04/03, which a reader on MDY took for April 3.  Returns the GUC nest
 * level for AtEOXact_GUC, or -1 if nothing was set.
 */
static int
pin_output_styles(void)
{
	int			nest;

	if (DateStyle == USE_ISO_DATES && IntervalStyle == INTSTYLE_POSTGRES && extra_float_digits >= 3)
		return -1;
	nest = NewGUCNestLevel();
	if (DateStyle != USE_ISO_DATES)
		(void) set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	if (IntervalStyle != INTSTYLE_POSTGRES)
		(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	if (extra_float_digits < 3)
		(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

/*
 * ssp_encode_row: the message for a row of the stream (values/nulls
 * indexed by attnum - 1) into out, which it initialises; in the output
 * styles above (an error leaves them to the transaction's abort).
 */
void
ssp_encode_row(SspStream *stream, Datum *values, bool *nulls, SspOutMessage *out)
{
	int			i;
	int			nest = pin_output_styles();

	initStringInfo(&out->value);
	initStringInfo(&out->key);
	out->value_null = false;
	out->key_null = true;
	out->partition = -1;
	out->timestamp_ms = 0;
	out->headers = NIL;

	/* the event time, where it can be the Kafka timestamp (else: now) */
	if (stream->timestamp_attnum > 0 && !nulls[stream->timestamp_attnum - 1])
		(void) kafka_timestamp(values[stream->timestamp_attnum - 1], stream->timestamp_typid,
							   &out->timestamp_ms);

	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];
		int			a = col->attnum - 1;
		int64		p;

		if (nulls[a])
			continue;
		switch (col->source)
		{
			case SSP_SRC_PARTITION:
				p = col->typid == INT2OID ? DatumGetInt16(values[a]) :
					col->typid == INT4OID ? DatumGetInt32(values[a]) :
					DatumGetInt64(values[a]);
				if (p < 0 || p > PG_INT32_MAX)
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("partition %lld of stream \"%s\" is out of range",
									(long long) p, stream->relname)));
				out->partition = (int32) p;
				break;
			case SSP_SRC_TIMESTAMP:
				if (!kafka_timestamp(values[a], col->typid, &out->timestamp_ms))
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("column \"%s\" of stream \"%s\" cannot give a message the timestamp %s",
									col->name, stream->relname,
									col->typid == TIMESTAMPOID ?
									DatumGetCString(DirectFunctionCall1(timestamp_out, values[a])) :
									timestamptz_to_str(DatumGetTimestampTz(values[a]))),
							 errdetail("A Kafka timestamp counts the milliseconds after 1970-01-01 00:00:00 UTC.")));
				break;
			case SSP_SRC_RAWKEY:
				raw_bytes(&out->key, col, values[a]);
				out->key_null = false;
				break;
			case SSP_SRC_HEADER:
				{
					SspHeader  *h = palloc(sizeof(SspHeader));
					StringInfoData b;

					initStringInfo(&b);
					raw_bytes(&b, col, values[a]);
					h->name = col->header;
					h->value = b.data;
					h->len = b.len;
					out->headers = lappend(out->headers, h);
					break;
				}
			default:
				break;
		}
	}

	encode_key(stream, values, nulls, out);
	encode_value(stream, values, nulls, out);
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
}
