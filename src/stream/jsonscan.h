/*-------------------------------------------------------------------------
 *
 * jsonscan.h
 *	  The JSON paths a stream's columns name, what a parse finds for them
 *	  (decode.c), and the fast scanner for the common case (jsonscan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SSP_JSONSCAN_H
#define SSP_JSONSCAN_H

#include "common/jsonapi.h"
#include "nodes/pg_list.h"

/* A node of the tree of JSON paths that a stream's columns name. */
typedef struct PathNode
{
	char	   *name;
	int			namelen;
	int			column;			/* index into stream->columns, or -1 */
	List	   *children;		/* PathNode */
} PathNode;

typedef struct PathTree
{
	PathNode   *root;
	int			depth;			/* longest path */
	int		   *same;			/* per column: the column of the same path
								 * (the one its node names), or -1 */
} PathTree;

/* What the JSON parse found for one column. */
typedef struct JsonFound
{
	bool		found;
	JsonTokenType type;			/* type of the value's first token */
	const char *scalar;			/* a scalar's text, unescaped: scalarlen
								 * bytes, NUL-terminated from Postgres's
								 * parser, a span of the message from the
								 * scanner (which finds no escapes) */
	int			scalarlen;
	char	   *raw;			/* the value as JSON text */
	int			rawlen;
} JsonFound;

extern bool ssp_json_scan(const char *text, size_t len, PathNode *root,
						  JsonFound *found);
extern void ssp_json_forget_below(PathNode *node, JsonFound *found);

#endif							/* SSP_JSONSCAN_H */
