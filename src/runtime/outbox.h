/*-------------------------------------------------------------------------
 *
 * outbox.h
 *	  ssp.output_topic: a view's changes published from its outbox.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_OUTBOX_H
#define SSP_OUTBOX_H

#include "compile/view.h"

extern void ssp_outbox_publish(SspView *v, int timeout_ms);

#endif							/* SSP_OUTBOX_H */
