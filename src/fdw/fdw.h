/*-------------------------------------------------------------------------
 *
 * fdw.h
 *	  The foreign-data wrapper's routines, shared by fdw.c (planning),
 *	  scan.c (reading a topic) and modify.c (producing to it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_FDW_H
#define SSP_FDW_H

#include "foreign/fdwapi.h"
#include "nodes/execnodes.h"

#include "ssp.h"
#include "kafka/kafka.h"

/* strategy number for "partition = ANY (array)" */
#define SSP_STRATEGY_IN 100

/* Predicates pushed down: parallel lists, built by fdw.c. */
typedef struct SspPushdown
{
	List	   *values;			/* Expr to compare with */
	List	   *sources;		/* int: SspSource of the column */
	List	   *strategies;		/* int: btree strategy, or SSP_STRATEGY_IN */
	List	   *descriptions;	/* String, for EXPLAIN */
} SspPushdown;

typedef struct SspScanState
{
	SspStream  *stream;
	Oid			userid;
	List	   *values;			/* ExprState of the pushed-down values */
	List	   *sources;
	List	   *strategies;
	MemoryContext scancxt;		/* the consumer and its ranges */
	MemoryContext rowcxt;		/* reset per message */
	SspKafka   *kafka;			/* NULL until the first row is asked */
	int64		nread;			/* messages read, for EXPLAIN ANALYZE */
	bool		some_columns;	/* the user may read only some columns */
} SspScanState;

/* scan.c */
extern void ssp_scan_begin(ForeignScanState *node, int eflags);
extern TupleTableSlot *ssp_scan_next(ForeignScanState *node);
extern void ssp_scan_rescan(ForeignScanState *node);
extern void ssp_scan_end(ForeignScanState *node);

/* modify.c */
extern List *ssp_modify_plan(PlannerInfo *root, ModifyTable *plan,
							 Index resultRelation, int subplan_index);
extern void ssp_modify_begin(ModifyTableState *mtstate, ResultRelInfo *rinfo,
							 List *fdw_private, int subplan_index, int eflags);
extern TupleTableSlot *ssp_modify_insert(EState *estate, ResultRelInfo *rinfo,
										 TupleTableSlot *slot,
										 TupleTableSlot *planSlot);
extern void ssp_modify_end(EState *estate, ResultRelInfo *rinfo);
extern void ssp_insert_begin(ModifyTableState *mtstate, ResultRelInfo *rinfo);
extern void ssp_insert_end(EState *estate, ResultRelInfo *rinfo);

#endif							/* SSP_FDW_H */
