/*-------------------------------------------------------------------------
 *
 * stream.c
 *	  A stream's definition: from a foreign table's catalog entry to an
 *	  SspStream, with every check that needs the table's columns.
 *
 * Also what a stream needs to know of its server and topic: whether a
 * server is ssp's, and whether a name is one a Kafka topic can have.
 *
 * ssp_stream_open is called when a stream is created or altered (from
 * utility.c) so that mistakes show at once, and again by every scan and
 * insert, so that the definition in use is always the current one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"
#include "catalog/namespace.h"
#include "miscadmin.h"

#include "ssp.h"
#include "registry/registry.h"
#include "stream/avro.h"
#include "stream/stream.h"

/*
 * ssp_stream_signature: the definition of stream relid that decoding
 * follows, as text: its options, and each column's name, type and
 * options (a changed field, a column added or dropped).  Two signatures
 * that differ: a process decoding it must open it again.  "" if it is gone.
 */
char *
ssp_stream_signature(Oid relid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	initStringInfo(&buf);
	if (rel == NULL)
		return buf.data;
	if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
		foreach(lc, GetForeignTable(relid)->options)
			appendStringInfo(&buf, "%s=%s;", ((DefElem *) lfirst(lc))->defname,
							 defGetString(lfirst(lc)));
	for (i = 0; i < RelationGetDescr(rel)->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

		if (att->attisdropped)
		{
			appendStringInfoString(&buf, "|-");
			continue;
		}
		appendStringInfo(&buf, "|%s %u %d", NameStr(att->attname), att->atttypid, att->atttypmod);
		foreach(lc, GetForeignColumnOptions(relid, att->attnum))
			appendStringInfo(&buf, " %s=%s", ((DefElem *) lfirst(lc))->defname,
							 defGetString(lfirst(lc)));
	}
	relation_close(rel, AccessShareLock);
	return buf.data;
}

/*
 * ssp_may_read_all_columns: may roleid read every column of stream relid?
 * A role granted only some may not see the others anywhere: not in a
 * decoding error's quote of the message (a scan's), nor in a dead
 * letter's copy of it (a view's, as its owner).
 */
bool
ssp_may_read_all_columns(Oid relid, Oid roleid)
{
	return pg_class_aclcheck(relid, roleid, ACL_SELECT) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(relid, roleid, ACL_SELECT, ACLMASK_ALL) == ACLCHECK_OK;
}

/*
 * ssp_is_stream: is relid a foreign table of an ssp_kafka server?
 */
bool
ssp_is_stream(Oid relid)
{
	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	return ssp_is_kafka_server(GetForeignServerIdByRelId(relid));
}

static SspColumn *
find_column(SspStream *stream, const char *name, const char *option)
{
	int			i;

	for (i = 0; i < stream->ncolumns; i++)
		if (strcmp(stream->columns[i].name, name) == 0)
			return &stream->columns[i];
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("stream \"%s\" has no column \"%s\"", stream->relname, name),
			 errdetail("Option \"%s\" names it.", option)));
	return NULL;				/* keep compiler quiet */
}

static void
check_meta_type(SspStream *stream, SspColumn *col, const char *meta)
{
	bool		ok;

	switch (col->source)
	{
		case SSP_SRC_PARTITION:
			ok = col->typid == INT2OID || col->typid == INT4OID || col->typid == INT8OID;
			break;
		case SSP_SRC_OFFSET:
			ok = col->typid == INT8OID;
			break;
		case SSP_SRC_TIMESTAMP:
			ok = col->typid == TIMESTAMPTZOID || col->typid == TIMESTAMPOID;
			break;
		default:
			ok = true;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of stream \"%s\" has type %s, which cannot hold the Kafka %s",
						col->name, stream->relname, format_type_be(col->typid), meta),
				 errhint("%s", col->source == SSP_SRC_PARTITION ? "Use type integer." :
						 col->source == SSP_SRC_OFFSET ? "Use type bigint." :
						 "Use type timestamp with time zone.")));
}

/* Fill in a column's source from its options. */
static void
read_column_options(SspStream *stream, SspColumn *col)
{
	ListCell   *lc;

	col->source = SSP_SRC_VALUE;
	col->path = list_make1(makeString(col->name));

	foreach(lc, GetForeignColumnOptions(stream->relid, col->attnum))
	{
		DefElem    *def = lfirst(lc);
		char	   *val = defGetString(def);

		if (strcmp(def->defname, "field") == 0)
		{
			List	   *names = NIL;

			if (stream->format != SSP_FORMAT_JSON && stream->format != SSP_FORMAT_AVRO &&
				stream->format != SSP_FORMAT_JSONSCHEMA && stream->format != SSP_FORMAT_PROTOBUF &&
				stream->format != SSP_FORMAT_DEBEZIUM)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("column \"%s\" of stream \"%s\" has option \"field\", which applies only to formats json, avro, jsonschema, protobuf and debezium",
								col->name, stream->relname)));
			/* split on dots; the validator refused empty names */
			{
				char	   *copy = pstrdup(val);
				char	   *tok;
				char	   *save;

				for (tok = strtok_r(copy, ".", &save); tok;
					 tok = strtok_r(NULL, ".", &save))
					names = lappend(names, makeString(tok));
			}
			col->path = names;
		}
		else if (strcmp(def->defname, "meta") == 0)
		{
			if (strcmp(val, "partition") == 0)
				col->source = SSP_SRC_PARTITION;
			else if (strcmp(val, "offset") == 0)
				col->source = SSP_SRC_OFFSET;
			else if (strcmp(val, "timestamp") == 0)
				col->source = SSP_SRC_TIMESTAMP;
			else if (strcmp(val, "key") == 0)
				col->source = SSP_SRC_RAWKEY;
			else
			{
				col->source = SSP_SRC_HEADER;
				col->header = pstrdup(val + 7);
			}
			check_meta_type(stream, col, val);
		}
	}
}

/* Table options: topic, format, on_error, then key and timestamp. */
/* ssp_format_by_name: a format option's value (the validator checked it). */
SspFormat
ssp_format_by_name(const char *name)
{
	return strcmp(name, "csv") == 0 ? SSP_FORMAT_CSV :
		strcmp(name, "text") == 0 ? SSP_FORMAT_TEXT :
		strcmp(name, "bytea") == 0 ? SSP_FORMAT_BYTEA :
		strcmp(name, "avro") == 0 ? SSP_FORMAT_AVRO :
		strcmp(name, "jsonschema") == 0 ? SSP_FORMAT_JSONSCHEMA :
		strcmp(name, "protobuf") == 0 ? SSP_FORMAT_PROTOBUF :
		strcmp(name, "debezium") == 0 ? SSP_FORMAT_DEBEZIUM : SSP_FORMAT_JSON;
}

/*
 * open_schemas: the writer schema of option "schema", and the schema
 * registry of the stream's server when its formats read one (as the
 * current user: a view's owner in its worker).
 */
static void
open_schemas(SspStream *stream, const char *schema)
{
	bool		value_needs = (stream->format == SSP_FORMAT_AVRO && schema == NULL) ||
		stream->format == SSP_FORMAT_PROTOBUF;
	bool		key_needs = (stream->key_format == SSP_FORMAT_AVRO ||
							 stream->key_format == SSP_FORMAT_PROTOBUF) && stream->nkey > 0;
	SspFormat	needs = value_needs ? stream->format : stream->key_format;

	if (schema)
	{
		if (stream->format != SSP_FORMAT_AVRO)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("stream \"%s\" has option \"schema\", which applies only to format avro",
							stream->relname)));
		stream->avro_writer = ssp_avro_parse(schema);
	}
	if (stream->message && stream->format != SSP_FORMAT_PROTOBUF)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("stream \"%s\" has option \"message\", which applies only to format protobuf",
						stream->relname)));
	if (value_needs || key_needs || stream->format == SSP_FORMAT_JSONSCHEMA ||
		stream->key_format == SSP_FORMAT_JSONSCHEMA)
		stream->registry = ssp_registry_open(stream->serverid, GetUserId());
	if (stream->registry == NULL && (value_needs || key_needs))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("stream \"%s\" in %sformat %s needs a schema registry",
						stream->relname, value_needs ? "" : "key_",
						needs == SSP_FORMAT_AVRO ? "avro" : "protobuf"),
				 errhint("Set the server option \"schema.registry.url\"%s.",
						 value_needs && needs == SSP_FORMAT_AVRO ? ", or give the writer schema of messages without Confluent's framing in the stream option \"schema\"" : "")));
}

static void
read_table_options(SspStream *stream, ForeignTable *ft)
{
	ListCell   *lc;
	char	   *key = NULL;
	char	   *timestamp = NULL;
	char	   *schema = NULL;
	int			i;

	stream->format = SSP_FORMAT_JSON;
	stream->key_format = SSP_FORMAT_JSON;
	foreach(lc, ft->options)
	{
		DefElem    *def = lfirst(lc);
		char	   *val = defGetString(def);

		if (strcmp(def->defname, "topic") == 0)
			stream->topic = pstrdup(val);
		else if (strcmp(def->defname, "format") == 0)
			stream->format = ssp_format_by_name(val);
		else if (strcmp(def->defname, "key_format") == 0)
			stream->key_format = ssp_format_by_name(val);
		else if (strcmp(def->defname, "schema") == 0)
			schema = val;
		else if (strcmp(def->defname, "auto_register") == 0)
			stream->auto_register = defGetBoolean(def);
		else if (strcmp(def->defname, "message") == 0)
			stream->message = pstrdup(val);
		else if (strcmp(def->defname, "on_error") == 0)
			stream->on_error_null = strcmp(val, "null") == 0;
		else if (strcmp(def->defname, "key") == 0)
			key = val;
		else if (strcmp(def->defname, "timestamp") == 0)
			timestamp = val;
		else if (strcmp(def->defname, "changelog") == 0)
			stream->changelog = true;
	}
	if (stream->format == SSP_FORMAT_DEBEZIUM)
		stream->changelog = true;

	/* columns need the format, so read them now */
	for (i = 0; i < stream->ncolumns; i++)
		read_column_options(stream, &stream->columns[i]);

	if (key)
	{
		List	   *names;

		if (!SplitIdentifierString(pstrdup(key), ',', &names))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid column list \"%s\" in option \"key\"", key)));
		foreach(lc, names)
		{
			SspColumn  *col = find_column(stream, lfirst(lc), "key");

			if (col->source != SSP_SRC_VALUE)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("column \"%s\" of stream \"%s\" cannot be both a key column and a meta column",
								col->name, stream->relname)));
			col->source = SSP_SRC_KEY;
		}
	}
	if (timestamp)
	{
		SspColumn  *col = find_column(stream, timestamp, "timestamp");

		if (col->typid != TIMESTAMPTZOID && col->typid != TIMESTAMPOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("event time column \"%s\" of stream \"%s\" has type %s",
							col->name, stream->relname, format_type_be(col->typid)),
					 errhint("The column named by option \"timestamp\" must be of type timestamp with time zone.")));
		stream->timestamp_attnum = col->attnum;
		stream->timestamp_typid = col->typid;
	}
	stream->nkey = 0;
	for (i = 0; i < stream->ncolumns; i++)
		stream->nkey += stream->columns[i].source == SSP_SRC_KEY;
	open_schemas(stream, schema);
}

/*
 * The columns ssp adds to a stream's rows: where a message is and whether
 * it is a tombstone, in the batch relation a view's statements read
 * (batch.c), and a join's buffers' own.  A stream's column of one of these
 * names made each reference to it ambiguous, and the view failed at its
 * first batch.
 */
static const char *const hidden_columns[] = {
	"_ssp_partition", "_ssp_offset", "_ssp_tombstone",
	"_ssp_xact", "_ssp_run", "_ssp_seq", "_ssp_settled", "_ssp_matched"
};

/*
 * ssp_batch_tupdesc: the columns of the batch relation of a stream whose
 * relation has columns sdesc (dropped ones too, as decoding fills them):
 * those, then _ssp_partition, _ssp_offset and _ssp_tombstone (a null
 * message value, or a Debezium delete).  In the current memory context.
 */
TupleDesc
ssp_batch_tupdesc(TupleDesc sdesc)
{
	TupleDesc	desc = CreateTemplateTupleDesc(sdesc->natts + SSP_BATCH_EXTRA);

	for (int i = 0; i < sdesc->natts; i++)
		TupleDescCopyEntry(desc, i + 1, sdesc, i + 1);
	TupleDescInitEntry(desc, sdesc->natts + 1, "_ssp_partition", INT4OID, -1, 0);
	TupleDescInitEntry(desc, sdesc->natts + 2, "_ssp_offset", INT8OID, -1, 0);
	TupleDescInitEntry(desc, sdesc->natts + 3, "_ssp_tombstone", BOOLOID, -1, 0);
	return desc;
}

/* The checks that depend on the format and the whole set of columns. */
static void
check_stream(SspStream *stream)
{
	int			i;
	int			h;

	stream->nvalue = stream->nkey = 0;
	for (i = 0; i < stream->ncolumns; i++)
	{
		SspColumn  *col = &stream->columns[i];

		for (h = 0; h < lengthof(hidden_columns); h++)
			if (strcmp(col->name, hidden_columns[h]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_RESERVED_NAME),
						 errmsg("column name \"%s\" of stream \"%s\" is reserved", col->name, stream->relname),
						 errdetail("ssp adds a column of that name to the rows that continuous views read of a stream."),
						 col->source == SSP_SRC_VALUE ?
						 errhint("Give the column another name; its option \"field\" names the message's field it reads.") :
						 errhint("Give the column another name.")));
		if (col->source == SSP_SRC_VALUE)
			stream->nvalue++;
		else if (col->source == SSP_SRC_KEY)
			stream->nkey++;
		else if (col->source == SSP_SRC_RAWKEY)
			stream->has_rawkey = true;
	}

	if (stream->changelog && stream->nkey == 0 && !stream->has_rawkey)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("stream \"%s\" is a changelog without key columns", stream->relname),
				 errdetail("Each message of a changelog is the new version of the row of its key."),
				 errhint("Name the key columns in option \"key\", or give a column OPTIONS (meta 'key').")));

	if (stream->nkey > 0 && stream->has_rawkey)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("stream \"%s\" has both option \"key\" and a column with meta 'key'",
						stream->relname),
				 errhint("Use one or the other: key columns decode the key, a meta 'key' column holds it whole.")));

	if ((stream->format == SSP_FORMAT_TEXT || stream->format == SSP_FORMAT_BYTEA) &&
		stream->nvalue > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("stream \"%s\" in format %s must have exactly one column for the message value, not %d",
						stream->relname,
						stream->format == SSP_FORMAT_TEXT ? "text" : "bytea",
						stream->nvalue),
				 errhint("Mark the other columns with OPTIONS (meta '...'), or name them in option \"key\".")));

	if (stream->format == SSP_FORMAT_BYTEA)
		for (i = 0; i < stream->ncolumns; i++)
			if (stream->columns[i].source == SSP_SRC_VALUE &&
				stream->columns[i].typid != BYTEAOID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"%s\" of stream \"%s\" in format bytea must be of type bytea",
								stream->columns[i].name, stream->relname)));
}

/*
 * ssp_stream_open: the definition of stream relid, in CurrentMemoryContext.
 * Takes AccessShareLock on the relation until the end of the transaction.
 * Errors if relid is not a valid stream.
 */
SspStream *
ssp_stream_open(Oid relid)
{
	Relation	rel;
	TupleDesc	tupdesc;
	SspStream  *stream;
	ForeignTable *ft;
	int			i;

	rel = table_open(relid, AccessShareLock);
	stream = palloc0(sizeof(SspStream));
	stream->relid = relid;
	stream->cxt = CurrentMemoryContext;
	stream->relname = pstrdup(RelationGetRelationName(rel));

	if (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE ||
		!ssp_is_kafka_server(GetForeignServerIdByRelId(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a stream", stream->relname),
				 errdetail("A stream is a foreign table of a server of foreign-data wrapper ssp_kafka.")));

	ft = GetForeignTable(relid);
	stream->serverid = ft->serverid;

	tupdesc = RelationGetDescr(rel);
	stream->desc = CreateTupleDescCopy(tupdesc);
	stream->natts = tupdesc->natts;
	stream->columns = palloc0(sizeof(SspColumn) * Max(tupdesc->natts, 1));
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		SspColumn  *col;
		Oid			func;
		bool		isvarlena;

		if (att->attisdropped)
			continue;
		col = &stream->columns[stream->ncolumns++];
		col->name = pstrdup(NameStr(att->attname));
		col->attnum = att->attnum;
		col->typid = att->atttypid;
		col->typmod = att->atttypmod;
		col->basetypmod = col->typmod;
		col->basetype = getBaseTypeAndTypmod(col->typid, &col->basetypmod);
		stream->has_domain |= col->basetype != col->typid;
		col->cxt = stream->cxt;
		getTypeInputInfo(col->typid, &func, &col->ioparam);
		fmgr_info(func, &col->infunc);
		getTypeOutputInfo(col->typid, &func, &isvarlena);
		fmgr_info(func, &col->outfunc);
		col->category = TypeCategory(col->typid);
		if (col->category == TYPCATEGORY_ARRAY)
			col->elemtype = get_element_type(col->typid);
	}
	table_close(rel, NoLock);

	read_table_options(stream, ft);
	check_stream(stream);
	return stream;
}

/*
 * ssp_check_topic_name: error unless name is one Kafka can have (what is
 * named in errors: "option \"topic\"", "ssp.output_topic").
 */
void
ssp_check_topic_name(const char *name, const char *what)
{
	int			i;

	for (i = 0; name[i]; i++)
		if (!isalnum((unsigned char) name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-')
			break;
	if (name[i] || i == 0 || i > 249 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid Kafka topic name \"%s\" for %s", name, what),
				 errdetail("A topic name has 1 to 249 letters, digits, dots, underscores and hyphens.")));
}

/*
 * ssp_is_kafka_server: does the server belong to the ssp_kafka wrapper?
 */
bool
ssp_is_kafka_server(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	char	   *handler;

	if (!OidIsValid(fdw->fdwhandler))
		return false;
	handler = get_func_name(fdw->fdwhandler);
	return handler != NULL && strcmp(handler, "kafka_fdw_handler") == 0 &&
		get_func_namespace(fdw->fdwhandler) == get_namespace_oid("ssp", true);
}
