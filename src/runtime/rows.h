/*-------------------------------------------------------------------------
 *
 * rows.h
 *	  A batch's decoded messages in memory, and the scan that reads them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_ROWS_H
#define SSP_ROWS_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

/*
 * The decoded messages of one source of a batch: its batch relation
 * (ssp_batch, ssp_batch_2 ...), row after row of Datums and null flags,
 * with the values passed by reference copied into blocks of its own.
 */
typedef struct SspRows
{
	const char *name;			/* the ephemeral relation it is read as */
	TupleDesc	desc;
	int			natts;
	int			n;				/* rows */
	int			cap;			/* rows values and nulls have room for */
	Datum	   *values;			/* n * natts */
	bool	   *nulls;
	bool	   *hasnull;		/* per column: does a row have a null there? */
	MemoryContext cxt;			/* all of it */
	char	   *block;			/* copies of values by reference */
	Size		left;			/* free bytes at block */
	Tuplestorestate *ts;		/* the relation's tuplestore: empty, unless
								 * a statement had to read it as one */
	bool		stored;			/* ts holds the rows */
	int			scans;			/* scans of it planned, by either way */
} SspRows;

extern SspRows *ssp_rows_create(const char *name, TupleDesc desc, MemoryContext parent);
extern void ssp_rows_reserve(SspRows *rows, int n);
extern void ssp_rows_add(SspRows *rows, const Datum *values, const bool *nulls);
extern void ssp_rows_free(SspRows *rows);
extern bool ssp_rows_fit(SspRows *rows, TupleDesc desc);
extern void ssp_rows_publish(SspRows **rows, int n);
extern void ssp_rows_withdraw(void);
extern void ssp_rows_init(void);

#endif							/* SSP_ROWS_H */
