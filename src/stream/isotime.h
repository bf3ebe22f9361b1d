/*-------------------------------------------------------------------------
 *
 * isotime.h
 *	  Reading the common ISO 8601 timestamp (isotime.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_ISOTIME_H
#define SSP_ISOTIME_H

#include "datatype/timestamp.h"

extern bool ssp_iso_timestamptz(const char *p, size_t len, TimestampTz *ts);

#endif							/* SSP_ISOTIME_H */
