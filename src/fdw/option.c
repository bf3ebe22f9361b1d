/*-------------------------------------------------------------------------
 *
 * option.c
 *	  Options of the ssp_kafka foreign-data wrapper: validation at CREATE
 *	  and ALTER.
 *
 * Server options are "brokers" plus any librdkafka property, which
 * librdkafka itself validates once property.c has allowed the current user
 * to set it.  Secrets (passwords, private keys) belong in
 * user mappings; their values never appear in a message.  Table and column
 * options are checked here one by one; the checks that need the table's
 * columns are in stream.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/reloptions.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "catalog/pg_attribute.h"
#include "catalog/namespace.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "ssp.h"
#include "stream/stream.h"
#include "kafka/kafka.h"
#include "registry/registry.h"
#include "stream/avro.h"

PG_FUNCTION_INFO_V1(ssp_kafka_fdw_validator);

/*
 * check_kafka_property: a librdkafka property of a server or user mapping,
 * as the current user may set it (property.c), then as librdkafka takes it.
 */
static void
check_kafka_property(DefElem *def, bool in_user_mapping)
{
	ssp_check_kafka_property(def->defname, defGetString(def), in_user_mapping,
							 superuser());
	/* as the unsecured JWT reads it (checked again where that is on) */
	if (strcmp(def->defname, "sasl.oauthbearer.config") == 0)
		ssp_check_unsecured_jwt_config(defGetString(def));

	if (!in_user_mapping && ssp_option_is_secret(def->defname))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("option \"%s\" must be set in a user mapping, not in a server",
						def->defname),
				 errhint("Use CREATE USER MAPPING ... SERVER ... OPTIONS (\"%s\" '...').",
						 def->defname)));

	/* every role may read a server's options: no password there */
	if (!in_user_mapping && strcmp(def->defname, "schema.registry.url") == 0 &&
		ssp_registry_url_has_credentials(defGetString(def)))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("option \"schema.registry.url\" of a server cannot hold a user name or password"),
				 errdetail("Every role may read a server's options (pg_foreign_server); the value is not shown."),
				 errhint("Set \"schema.registry.basic.auth.user.info\" ('user:password') in a user mapping instead.")));
	if (ssp_is_registry_option(def->defname))
		ssp_registry_check_option(def->defname, defGetString(def));
	else
		ssp_kafka_validate_property(def->defname, defGetString(def),
									in_user_mapping ||
									ssp_option_is_secret(def->defname));
}

static void
check_table_option(DefElem *def)
{
	char	   *val = defGetString(def);

	if (strcmp(def->defname, "topic") == 0)
	{
		if (val[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("option \"topic\" must not be empty")));
		ssp_check_topic_name(val, "option \"topic\"");
	}
	else if (strcmp(def->defname, "format") == 0)
	{
		if (strcmp(val, "json") != 0 && strcmp(val, "csv") != 0 &&
			strcmp(val, "text") != 0 && strcmp(val, "bytea") != 0 &&
			strcmp(val, "avro") != 0 && strcmp(val, "jsonschema") != 0 &&
			strcmp(val, "protobuf") != 0 && strcmp(val, "debezium") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("unrecognized format \"%s\"", val),
					 errhint("Valid formats are json, csv, text, bytea, avro, jsonschema, protobuf and debezium.")));
	}
	else if (strcmp(def->defname, "changelog") == 0)
	{
		if (strcmp(val, "upsert") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("unrecognized value \"%s\" for option \"changelog\"", val),
					 errhint("The valid value is upsert: each message is the new version of its key, and a null message deletes it.")));
	}
	else if (strcmp(def->defname, "key_format") == 0)
	{
		if (strcmp(val, "json") != 0 && strcmp(val, "text") != 0 &&
			strcmp(val, "avro") != 0 && strcmp(val, "jsonschema") != 0 &&
			strcmp(val, "protobuf") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("unrecognized key_format \"%s\"", val),
					 errhint("Valid key formats are json, text, avro, jsonschema and protobuf.")));
	}
	else if (strcmp(def->defname, "schema") == 0)
	{
		/* an Avro writer schema: errors say what is wrong with it */
		(void) ssp_avro_parse(val);
	}
	else if (strcmp(def->defname, "auto_register") == 0)
		(void) defGetBoolean(def);
	else if (strcmp(def->defname, "message") == 0)
	{
		/* a message's full name: dotted identifiers */
		const char *p;
		bool		start = true;

		for (p = val; *p; p++)
		{
			if (*p == '.' && !start)
				start = true;
			else if ((isalpha((unsigned char) *p) || *p == '_' ||
					  (!start && isdigit((unsigned char) *p))) && !IS_HIGHBIT_SET(*p))
				start = false;
			else
				break;
		}
		if (*p != '\0' || start)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid Protobuf message name \"%s\"", val),
					 errhint("Give the message's full name, as in \"shop.orders.Order\".")));
	}
	else if (strcmp(def->defname, "on_error") == 0)
	{
		if (strcmp(val, "error") != 0 && strcmp(val, "null") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("unrecognized value \"%s\" for option \"on_error\"", val),
					 errhint("Valid values are error and null.")));
	}
	else if (strcmp(def->defname, "timestamp") == 0 ||
			 strcmp(def->defname, "key") == 0)
	{
		/* the columns are checked against the table in stream.c */
		if (val[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("option \"%s\" must name a column", def->defname)));
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unrecognized stream option \"%s\"", def->defname),
				 errhint("Valid options are topic, format, key_format, schema, message, auto_register, timestamp, key, changelog and on_error.")));
}

static void
check_column_option(DefElem *def, List *options)
{
	char	   *val = defGetString(def);

	if (strcmp(def->defname, "meta") == 0)
	{
		if (strcmp(val, "partition") != 0 && strcmp(val, "offset") != 0 &&
			strcmp(val, "timestamp") != 0 && strcmp(val, "key") != 0 &&
			!(strncmp(val, "header:", 7) == 0 && val[7] != '\0'))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("unrecognized value \"%s\" for option \"meta\"", val),
					 errhint("Valid values are partition, offset, timestamp, key and header:NAME.")));
	}
	else if (strcmp(def->defname, "field") == 0)
	{
		if (val[0] == '\0' || val[0] == '.' || val[strlen(val) - 1] == '.' ||
			strstr(val, "..") != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid field path \"%s\"", val),
					 errhint("A field path is one or more field names separated by dots, as in \"customer.address.city\".")));
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unrecognized column option \"%s\"", def->defname),
				 errhint("Valid options are field and meta.")));

	if (strcmp(def->defname, "field") == 0)
	{
		ListCell   *lc;

		foreach(lc, options)
			if (strcmp(((DefElem *) lfirst(lc))->defname, "meta") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("options \"field\" and \"meta\" cannot be used together")));
	}
}

static void
check_no_duplicates(List *options)
{
	ListCell   *a,
			   *b;

	foreach(a, options)
	{
		foreach(b, options)
		{
			if (a == b)
				break;
			if (strcmp(((DefElem *) lfirst(a))->defname,
					   ((DefElem *) lfirst(b))->defname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("option \"%s\" provided more than once",
								((DefElem *) lfirst(a))->defname)));
		}
	}
}

/*
 * ssp_kafka_fdw_validator: the validator of the ssp_kafka wrapper, called
 * with the complete option list of the object being created or altered.
 */
Datum
ssp_kafka_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	ListCell   *lc;
	bool		have_brokers = false;
	bool		have_topic = false;

	check_no_duplicates(options);

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		switch (catalog)
		{
			case ForeignDataWrapperRelationId:
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("foreign-data wrapper ssp_kafka takes no options"),
						 errhint("Set Kafka properties on the server.")));
				break;
			case ForeignServerRelationId:
				if (strcmp(def->defname, "brokers") == 0)
				{
					if (defGetString(def)[0] == '\0')
						ereport(ERROR,
								(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
								 errmsg("option \"brokers\" must not be empty")));
					have_brokers = true;
				}
				else
					check_kafka_property(def, false);
				break;
			case UserMappingRelationId:
				if (strcmp(def->defname, "brokers") == 0)
					ereport(ERROR,
							(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
							 errmsg("option \"brokers\" belongs to the server")));
				check_kafka_property(def, true);
				break;
			case ForeignTableRelationId:
				check_table_option(def);
				if (strcmp(def->defname, "topic") == 0)
					have_topic = true;
				break;
			case AttributeRelationId:
				check_column_option(def, options);
				break;
			default:
				elog(ERROR, "unexpected catalog %u", catalog);
		}
	}

	if (catalog == ForeignServerRelationId && !have_brokers)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("server option \"brokers\" is required"),
				 errhint("Give the Kafka bootstrap servers, as in OPTIONS (brokers 'host1:9092,host2:9092').")));
	if (catalog == ForeignTableRelationId && !have_topic)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("stream option \"topic\" is required"),
				 errhint("Name the Kafka topic, as in OPTIONS (topic 'orders').")));

	PG_RETURN_VOID();
}
