/*-------------------------------------------------------------------------
 *
 * protobuf_internal.h
 *	  What the parts of ssp's Protobuf support share: a schema's messages
 *	  and enums, parsed from .proto text (protobuf_schema.c), and the reader
 *	  of the binary encoding that writes a message as JSON (protobuf_read.c).
 *	  Neither needs more of the backend than palloc, StringInfo and
 *	  ereport, so that test/fuzz/fuzz_protobuf.c runs them alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_PROTOBUF_INTERNAL_H
#define SSP_PROTOBUF_INTERNAL_H

#include "lib/stringinfo.h"

/* Field types, numbered as descriptor.proto numbers them. */
typedef enum PbType
{
	PB_DOUBLE = 1,
	PB_FLOAT,
	PB_INT64,
	PB_UINT64,
	PB_INT32,
	PB_FIXED64,
	PB_FIXED32,
	PB_BOOL,
	PB_STRING,
	PB_GROUP,
	PB_MESSAGE,
	PB_BYTES,
	PB_UINT32,
	PB_ENUM,
	PB_SFIXED32,
	PB_SFIXED64,
	PB_SINT32,
	PB_SINT64
} PbType;

/* The well-known types read as their JSON forms, not as messages. */
typedef enum PbWellKnown
{
	PBW_NONE,
	PBW_TIMESTAMP,				/* "2026-12-01T10:00:00.5Z" */
	PBW_DURATION,				/* "1.5s" */
	PBW_WRAPPER,				/* Int64Value and the others: the value */
	PBW_STRUCT,					/* a JSON object */
	PBW_VALUE,					/* any JSON value */
	PBW_LIST,					/* a JSON array */
	PBW_ANY,					/* {"@type": url, "value": bytes} */
	PBW_EMPTY,					/* {} */
	PBW_FIELD_MASK				/* "a.b,c" */
} PbWellKnown;

typedef struct SspPbMessage SspPbMessage;

typedef struct SspPbEnum
{
	char	   *name;			/* the full name, without a leading dot */
	int			n;
	char	  **names;
	int32	   *numbers;
	bool		closed;			/* proto2's: an unknown number is an unknown field */
} SspPbEnum;

typedef struct SspPbField
{
	char	   *name;
	char	   *json_name;		/* lowerCamelCase, or option json_name */
	int32		number;
	PbType		type;
	bool		repeated;
	bool		presence;		/* explicit: absent is NULL, not the default */
	bool		packed;			/* written packed */
	int			oneof;			/* the index of its oneof, or -1 */
	char	   *type_name;		/* a message's or enum's, as written */
	SspPbMessage *message;		/* resolved (a map's: its entry) */
	SspPbEnum  *enumt;
	bool		map;			/* a map: message is its entry */
	bool		delimited;		/* editions' message_encoding DELIMITED: a
								 * message field written as a group */
	char	   *default_value;	/* proto2's [default = ...], as written */
} SspPbField;

struct SspPbMessage
{
	char	   *name;			/* the full name, without a leading dot */
	int			nfields;
	SspPbField *fields;
	int			noneofs;
	bool		map_entry;
	PbWellKnown wk;
	int			nnested;		/* nested messages, in order (message indexes) */
	SspPbMessage **nested;
	int			nbynumber;		/* fields by number, below nbynumber */
	int16	   *bynumber;		/* the index of each number's field + 1, or 0 */
};

/* A full name in a schema's table of names. */
typedef struct SspPbName
{
	const char *name;			/* NULL: a free slot */
	SspPbMessage *message;
	SspPbEnum  *enumt;
} SspPbName;

typedef struct SspPbSchema
{
	int			nmessages;		/* every message, the references' too */
	SspPbMessage **messages;
	int			nenums;
	SspPbEnum **enums;
	int			ntop;			/* the schema's own top-level messages */
	SspPbMessage **top;
	int			nnames;			/* every full name, hashed (open addressing) */
	int			names_size;		/* a power of two, at most half full */
	SspPbName  *names;
} SspPbSchema;

/*
 * A top-level field's value, as ssp_pb_values finds it for a column read
 * without JSON: the field's last value (a oneof's member set last, a
 * Timestamp merged), its default when absent, PBV_NULL when absent with
 * presence.
 */
typedef enum SspPbValueKind
{
	PBV_NULL,
	PBV_INT,					/* i: int32, int64, sint, sfixed */
	PBV_UINT,					/* u: uint32, uint64, fixed */
	PBV_DOUBLE,					/* d */
	PBV_FLOAT,					/* f */
	PBV_BOOL,					/* i: 0 or 1 */
	PBV_STRING,					/* p, len: UTF-8 without zero bytes, checked */
	PBV_BYTES,					/* p, len */
	PBV_ENUM,					/* i, and name (NULL: a number it does not name) */
	PBV_TIMESTAMP				/* i: seconds since 1970, nanos: checked */
} SspPbValueKind;

typedef struct SspPbValue
{
	SspPbValueKind kind;
	int64		i;
	uint64		u;
	double		d;
	float		f;
	const uint8 *p;
	size_t		len;
	const char *name;
	int32		nanos;
} SspPbValue;

/* the most nesting a message may have, as Google's parsers allow */
#define SSP_PB_MAX_DEPTH 100
/* the most values one message may hold, whatever its bytes */
#define SSP_PB_MAX_VALUES 10000000
/* the most a message may be as JSON (a few bytes may stand for many defaults) */
#define SSP_PB_MAX_JSON (256 * 1024 * 1024)

/* protobuf_schema.c: errors (class 22) on what is not a valid schema */
extern SspPbSchema *ssp_pb_parse_texts(int nreferences, const char *const *references,
									   const char *text);
extern SspPbMessage *ssp_pb_by_name(SspPbSchema *schema, const char *name);
extern SspPbField *ssp_pb_field(SspPbMessage *m, int32 number);

/* protobuf_read.c: errors (class 22) on what cannot be read */
extern SspPbMessage *ssp_pb_read_indexes(SspPbSchema *schema, const char **data, size_t *len);
extern void ssp_pb_to_json(SspPbMessage *m, const char *data, size_t len,
						   const char *const *only, int nonly, StringInfo out);
extern bool ssp_pb_direct(SspPbField *f);
extern void ssp_pb_values(SspPbMessage *m, const char *data, size_t len,
						  int nfields, const int *fields, SspPbValue *values);
extern void ssp_pb_timestamp_text(int64 seconds, int32 nanos, StringInfo out);

#endif							/* SSP_PROTOBUF_INTERNAL_H */
