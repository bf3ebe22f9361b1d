/*-------------------------------------------------------------------------
 *
 * kafka.h
 *	  The Kafka edge: librdkafka's properties and who may set them
 *	  (property.c), the secrets masked in its texts (secret.c), and its
 *	  clients (kafka.c).  Nothing here calls upward:
 *	  the rest of ssp sees Kafka only through these functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_KAFKA_H
#define SSP_KAFKA_H

#include "ssp.h"

/* property.c: which properties exist, which are secret, who may set them */
extern bool ssp_option_is_secret(const char *name);
extern void ssp_kafka_validate_property(const char *name, const char *value,
										bool secret);
extern bool ssp_kafka_property_known(const char *name);
extern void ssp_check_kafka_property(const char *name, const char *value,
									 bool in_user_mapping, bool trusted);
extern void ssp_check_unsecured_jwt_config(const char *config);
extern void ssp_check_server_properties(Oid serverid, bool server, bool mapping,
										Oid umuser, bool all_mappings);
extern List *ssp_server_kafka_options(Oid serverid, Oid userid);
extern char *ssp_server_kafka_signature(Oid serverid, Oid userid);
extern List *ssp_server_registry_options(Oid serverid, Oid userid);
extern bool ssp_is_registry_option(const char *name);

/* secret.c: a client's secrets, masked in librdkafka's texts */
typedef struct SspSecrets SspSecrets;

extern SspSecrets *ssp_secrets_collect(List *options);
extern void ssp_secrets_free(SspSecrets *secrets);
extern void ssp_secrets_mask(const SspSecrets *secrets, const char *text,
							 char *out, size_t outsize);

/* kafka.c: handles, errors, metadata, consuming and producing */
typedef struct SspKafka SspKafka;

typedef struct SspPartitionRange
{
	int32		partition;
	int64		start;			/* first offset to read */
	int64		end;			/* stop before this offset */
} SspPartitionRange;

extern SspKafka *ssp_kafka_consumer(Oid serverid, Oid userid,
									 const char *topic, const char *view_group);
extern void ssp_kafka_commit(SspKafka *kafka, int nparts, const int64 *next);
extern void ssp_kafka_close(SspKafka *kafka);
extern int	ssp_kafka_partition_count(SspKafka *kafka);
extern int	ssp_kafka_partition_count_ext(SspKafka *kafka, bool missing_ok);
extern int	ssp_kafka_partition_count_try(SspKafka *kafka, int timeout_ms);
extern void ssp_kafka_watermarks(SspKafka *kafka, int32 partition,
								 int64 *low, int64 *high);
extern void ssp_kafka_watermarks_all(SspKafka *kafka, int nparts,
									 int64 *low, int64 *high);
extern void ssp_kafka_offsets_for_time(SspKafka *kafka, int nparts, int64 timestamp_ms,
									   int64 *offsets, bool must_answer);
extern void ssp_kafka_assign(SspKafka *kafka, SspPartitionRange *ranges,
							 int nranges);
extern bool ssp_kafka_next(SspKafka *kafka, SspMessage *msg);
extern bool ssp_kafka_header(SspMessage *msg, const char *name,
							 const char **value, size_t *len);
extern bool ssp_kafka_tail_number(SspKafka *kafka, const char *name, int tail,
								  int64 *max);
/* a producer's messages that were not delivered, so far */
typedef struct SspFailures
{
	uint64		refused;		/* by a broker, or librdkafka's own error */
	uint64		purged;			/* dropped unsent: a (sub)transaction's abort */
} SspFailures;

extern SspKafka *ssp_kafka_producer(Oid serverid, Oid userid);
extern void ssp_kafka_produce(SspKafka *kafka, const char *topic,
							  SspOutMessage *out);
extern bool ssp_kafka_produce_if_fits(SspKafka *kafka, const char *topic,
									  SspOutMessage *out);
extern int	ssp_kafka_message_max_bytes(SspKafka *kafka);
extern int	ssp_kafka_batch_max_bytes(SspKafka *kafka);
extern int	ssp_kafka_topic_max_bytes(SspKafka *kafka, const char *topic,
									  int timeout_ms);
extern const char *ssp_kafka_server_name(SspKafka *kafka);
extern SspFailures ssp_kafka_failures(SspKafka *kafka);
extern void ssp_kafka_flush(SspKafka *kafka, const char *topic, int timeout_ms,
							SspFailures before);
extern void ssp_kafka_purge(SspKafka *kafka);
extern int	ssp_kafka_event_fd(SspKafka *kafka);
extern void ssp_kafka_drain_fd(SspKafka *kafka);
/* an offset for ssp_kafka_assign_at and ssp_kafka_lag: a partition not to read */
#define SSP_OFFSET_NOT_OURS (-2)
extern void ssp_kafka_assign_at(SspKafka *kafka, int nparts, const int64 *offsets);
extern int	ssp_kafka_poll_batch(SspKafka *kafka, SspMessage *out, int max,
								 int64 *eof, bool *lost, int nparts);
extern void ssp_kafka_release(SspKafka *kafka);
extern int64 ssp_kafka_lag(SspKafka *kafka, int nparts, const int64 *next,
						   bool *lagging);
extern const char *ssp_kafka_trouble(SspKafka *kafka);

#endif							/* SSP_KAFKA_H */
