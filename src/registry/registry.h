/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  A Confluent-compatible Schema Registry: its settings from a server and
 *	  user mapping, and schemas fetched by id, cached for the life of the
 *	  process (a registry never changes what an id means).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_REGISTRY_H
#define SSP_REGISTRY_H

#include "ssp.h"

/* The first byte of a message in Confluent's wire format. */
#define SSP_REGISTRY_MAGIC 0
/* The magic byte and the big-endian schema id. */
#define SSP_REGISTRY_HEADER 5

typedef enum SspSchemaType
{
	SSP_SCHEMA_AVRO,
	SSP_SCHEMA_PROTOBUF,
	SSP_SCHEMA_JSON
} SspSchemaType;

/* How to reach a registry: a server's options and the user's mapping. */
typedef struct SspRegistry
{
	char	   *urls;			/* schema.registry.url: one or more, by commas */
	char	   *user_info;		/* basic auth "user:password", or NULL */
	char	   *bearer_token;	/* or NULL */
	List	   *ssl;			/* schema.registry.ssl.* as DefElems */
	uint32		hash;			/* of all of the above, keys the cache */
} SspRegistry;

/* A schema as the registry gave it, for one id. */
typedef struct SspSchema
{
	int32		id;
	SspSchemaType type;
	char	   *text;			/* NULL if the registry does not know the id */
	char	   *missing;		/* why the id has no schema, or NULL */
	List	   *references;		/* the texts of the schemas it refers to,
								 * each before those that refer to it */
	void	   *compiled;		/* the format's own form (avro.c), or NULL */
} SspSchema;

/* the registry options, in kafka/property.c's table */
#define SSP_REGISTRY_PREFIX "schema.registry."

extern SspRegistry *ssp_registry_open(Oid serverid, Oid userid);
extern bool ssp_registry_url_has_credentials(const char *urls);
extern void ssp_registry_check_option(const char *name, const char *value);
extern bool ssp_registry_framed(const char *data, size_t len, int32 *id);
extern SspSchema *ssp_registry_cached(SspRegistry *reg, int32 id);
extern SspSchema *ssp_registry_schema(SspRegistry *reg, int32 id);
extern void ssp_registry_forget(SspRegistry *reg, int32 id);
extern MemoryContext ssp_registry_memory(void);
extern SspSchema *ssp_registry_latest(SspRegistry *reg, const char *subject);
extern int32 ssp_registry_register(SspRegistry *reg, const char *subject,
								   SspSchemaType type, const char *text);

#endif							/* SSP_REGISTRY_H */
