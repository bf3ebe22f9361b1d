/*-------------------------------------------------------------------------
 *
 * combine.c
 *	  Any aggregate with a combine function, kept as its transition state:
 *	  the SQL-callable pieces of the generic path of aggregate.c.
 *
 *	  ssp.agg_partial(aggregate, NULL::state, args...)
 *		an aggregate: the aggregate's transition state over a batch's rows,
 *		serialised to bytea where the state type is internal;
 *	  ssp.agg_combine(aggregate, a, b)
 *		two stored states merged with the aggregate's combine function;
 *	  ssp.agg_combine_agg(aggregate, state)
 *		an aggregate: many stored states merged (parallel workers' rows,
 *		sliding windows' steps, sessions, rollups);
 *	  ssp.agg_finalize(aggregate, state, NULL::result, NULL::arg...)
 *		the aggregate's finished value from a stored state.
 *
 * The aggregate's own functions run as Postgres's nodeAgg.c runs them in
 * a parallel aggregation: the same strictness rules, the initial value,
 * the state in the aggregate's memory context.  AggGetAggref() gives them
 * an Aggref of their own aggregate, not of ssp's wrapper.  Outside an
 * aggregate (agg_combine, agg_finalize) they get a stand-in AggState over a
 * short-lived memory context, since many check AggCheckCallContext.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/nodeAgg.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_agg.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "ssp.h"

PG_FUNCTION_INFO_V1(ssp_agg_partial_trans);
PG_FUNCTION_INFO_V1(ssp_agg_partial_final);
PG_FUNCTION_INFO_V1(ssp_agg_combine);
PG_FUNCTION_INFO_V1(ssp_agg_combine_trans);
PG_FUNCTION_INFO_V1(ssp_agg_combine_final);
PG_FUNCTION_INFO_V1(ssp_agg_finalize);

/* What a call needs of one aggregate, looked up once (in fn_extra). */
typedef struct AggFns
{
	Oid			aggfnoid;
	int			nargs;
	Oid			argtypes[FUNC_MAX_ARGS];
	Oid			transtype;		/* resolved; INTERNALOID: stored as bytea */
	int16		translen;
	bool		transbyval;
	bool		internal;
	Datum		initval;
	bool		initnull;
	FmgrInfo	transfn;
	FmgrInfo	combinefn;
	FmgrInfo	serialfn;
	FmgrInfo	deserialfn;
	FmgrInfo	finalfn;		/* fn_oid InvalidOid: none */
	int			nfinalargs;
	Oid			collation;
	AggStatePerTransData pertrans;	/* what AggGetAggref() shows them */
} AggFns;

/* A state being built (the wrapper aggregates' internal state). */
typedef struct AggAcc
{
	AggFns	   *fns;
	Datum		value;
	bool		isnull;
	bool		novalue;		/* no value yet, not even an initial one */
} AggAcc;

/*
 * same_layout: may a value of type from be read as one of type to?
 */
static bool
same_layout(Oid from, Oid to)
{
	return from == to || IsBinaryCoercible(from, to);
}

/*
 * resolve_type: what polymorphic type is resolves to, given the call's
 * inputs for the aggregate's n declared argument types (left as they are:
 * Postgres writes resolved types over a copy).
 */
static Oid
resolve_type(AggFns *f, const Oid *declared, int n, Oid type)
{
	Oid		   *copy = palloc(sizeof(Oid) * Max(n, 1));

	memcpy(copy, declared, sizeof(Oid) * n);
	type = enforce_generic_type_consistency(f->argtypes, copy, n, type, false);
	pfree(copy);
	return type;
}

/*
 * check_types: refuse a call whose types are not the aggregate's.  Its
 * functions read each argument as the type they declare: an integer given
 * where they take a numeric, a stored state of another type, or a result
 * taken as another type would be read as a pointer.  statetype: the
 * stored state's type as the call passes it; rettype: the result's as the
 * call takes it (InvalidOid: the call takes no result).
 */
static void
check_types(AggFns *f, Oid statetype, Oid rettype)
{
	const char *name = format_procedure(f->aggfnoid);
	Oid		   *declared;
	int			ndeclared;
	Oid			variadic = get_func_variadictype(f->aggfnoid);
	Oid			declared_ret = get_func_signature(f->aggfnoid, &declared, &ndeclared);
	Oid			stored = f->internal ? BYTEAOID : f->transtype;
	bool		polymorphic = IsPolymorphicType(declared_ret);
	int			i;

	/* the calls pass each input as itself: a VARIADIC array cannot be built */
	if (OidIsValid(variadic) && variadic != ANYOID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s takes a VARIADIC array, which ssp cannot pass it",
						name)));
	if (OidIsValid(variadic) ? f->nargs < ndeclared : f->nargs != ndeclared)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg_plural("aggregate function %s takes %d argument, not %d",
							   "aggregate function %s takes %d arguments, not %d",
							   ndeclared, name, ndeclared, f->nargs)));
	for (i = 0; i < f->nargs; i++)
	{
		/* (VARIADIC "any": its own functions read the types of the rest) */
		Oid			want = i < ndeclared ? declared[i] : ANYOID;

		if (want == ANYOID)
			continue;
		/* an unknown literal is a C string, whatever it would resolve to */
		if (f->argtypes[i] == UNKNOWNOID ||
			(!IsPolymorphicType(want) && !same_layout(f->argtypes[i], want)))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("aggregate function %s does not take type %s as argument %d",
							name, format_type_be(f->argtypes[i]), i + 1)));
		if (IsPolymorphicType(want))
			polymorphic = true;
	}

	/*
	 * Polymorphic arguments must agree, as in a call of the aggregate, and
	 * each must be of its resolved type already: the parser would coerce an
	 * integer to the numeric an anycompatible pair resolves to, but nothing
	 * coerces what these functions are given.
	 */
	if (polymorphic)
	{
		int			n = Min(ndeclared, f->nargs);

		declared_ret = resolve_type(f, declared, n, declared_ret);
		for (i = 0; i < n; i++)
			if (IsPolymorphicType(declared[i]) &&
				!same_layout(f->argtypes[i], resolve_type(f, declared, n, declared[i])))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("aggregate function %s does not take type %s as argument %d",
								name, format_type_be(f->argtypes[i]), i + 1)));
	}
	if (OidIsValid(statetype) && !same_layout(statetype, stored))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the stored state of aggregate function %s is of type %s, not %s",
						name, format_type_be(stored), format_type_be(statetype))));
	if (OidIsValid(rettype) && !same_layout(declared_ret, rettype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("aggregate function %s returns type %s, not %s",
						name, format_type_be(declared_ret), format_type_be(rettype))));
}

/*
 * check_execute: may the current user run the aggregate, as in a query of
 * it?  The user needs EXECUTE on the aggregate, and its owner on each of
 * its functions (what nodeAgg.c asks of a query): these functions are
 * anyone's to call, and are no way around a REVOKE.
 */
static void
check_execute(Oid aggfnoid, Form_pg_aggregate agg)
{
	Oid			fns[] = {agg->aggtransfn, agg->aggcombinefn, agg->aggfinalfn,
	agg->aggserialfn, agg->aggdeserialfn};
	HeapTuple	tup;
	Oid			owner;
	AclResult	aclresult;
	int			i;

	aclresult = pg_proc_aclcheck(aggfnoid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_AGGREGATE, get_func_name(aggfnoid));
	InvokeFunctionExecuteHook(aggfnoid);

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", aggfnoid);
	owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
	ReleaseSysCache(tup);
	for (i = 0; i < lengthof(fns); i++)
	{
		if (!OidIsValid(fns[i]))
			continue;
		aclresult = pg_proc_aclcheck(fns[i], owner, ACL_EXECUTE);
		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(fns[i]));
		InvokeFunctionExecuteHook(fns[i]);
	}
}

/*
 * load_fns: look up aggregate aggfnoid called with argument types argtypes
 * (nargs of them; NULL: its declared ones), in memory context cxt, and
 * check the call's privileges (check_execute) and types (check_types).
 */
static AggFns *
load_fns(Oid aggfnoid, int nargs, const Oid *argtypes, Oid collation, Oid statetype,
		 Oid rettype, MemoryContext cxt)
{
	AggFns	   *f = MemoryContextAllocZero(cxt, sizeof(AggFns));
	HeapTuple	tup;
	Form_pg_aggregate agg;
	Datum		initdatum;
	bool		initnull;
	Expr	   *expr;
	Aggref	   *aggref;
	MemoryContext old;
	int			i;

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("aggregate function %u does not exist", aggfnoid)));
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	check_execute(aggfnoid, agg);
	/* its direct arguments would be taken for aggregated ones */
	if (agg->aggkind != AGGKIND_NORMAL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s is an ordered-set aggregate",
						format_procedure(aggfnoid))));
	if (!OidIsValid(agg->aggcombinefn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s has no combine function",
						format_procedure(aggfnoid))));

	old = MemoryContextSwitchTo(cxt);
	f->aggfnoid = aggfnoid;
	f->collation = collation;
	if (argtypes == NULL)
	{
		Oid		   *declared;

		(void) get_func_signature(aggfnoid, &declared, &nargs);
		argtypes = declared;
	}
	if (nargs > FUNC_MAX_ARGS)
		elog(ERROR, "too many arguments");
	f->nargs = nargs;
	memcpy(f->argtypes, argtypes, nargs * sizeof(Oid));
	f->transtype = resolve_aggregate_transtype(aggfnoid, agg->aggtranstype, f->argtypes, nargs);
	get_typlenbyval(f->transtype, &f->translen, &f->transbyval);
	f->internal = f->transtype == INTERNALOID;
	if (f->internal && (!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function %s has no serialization functions",
						format_procedure(aggfnoid)),
				 errdetail("Its state is of type internal, so only a serialised state can be stored.")));

	build_aggregate_transfn_expr(f->argtypes, nargs, 0, false, f->transtype, collation,
								 agg->aggtransfn, InvalidOid, &expr, NULL);
	fmgr_info_cxt(agg->aggtransfn, &f->transfn, cxt);
	fmgr_info_set_expr((Node *) expr, &f->transfn);
	/* nodeAgg.c's combine step: a transition function over states */
	build_aggregate_transfn_expr(&f->transtype, 1, 0, false, f->transtype, collation,
								 agg->aggcombinefn, InvalidOid, &expr, NULL);
	fmgr_info_cxt(agg->aggcombinefn, &f->combinefn, cxt);
	fmgr_info_set_expr((Node *) expr, &f->combinefn);
	if (f->internal)
	{
		build_aggregate_serialfn_expr(agg->aggserialfn, &expr);
		fmgr_info_cxt(agg->aggserialfn, &f->serialfn, cxt);
		fmgr_info_set_expr((Node *) expr, &f->serialfn);
		build_aggregate_deserialfn_expr(agg->aggdeserialfn, &expr);
		fmgr_info_cxt(agg->aggdeserialfn, &f->deserialfn, cxt);
		fmgr_info_set_expr((Node *) expr, &f->deserialfn);
	}
	if (OidIsValid(agg->aggfinalfn))
	{
		f->nfinalargs = agg->aggfinalextra ? nargs + 1 : 1;
		build_aggregate_finalfn_expr(f->argtypes, f->nfinalargs, f->transtype, rettype,
									 collation, agg->aggfinalfn, &expr);
		fmgr_info_cxt(agg->aggfinalfn, &f->finalfn, cxt);
		fmgr_info_set_expr((Node *) expr, &f->finalfn);
	}

	initdatum = SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval, &initnull);
	f->initnull = initnull;
	if (!initnull)
	{
		Oid			input;
		Oid			ioparam;

		getTypeInputInfo(f->transtype, &input, &ioparam);
		f->initval = OidInputFunctionCall(input, TextDatumGetCString(initdatum), ioparam, -1);
	}

	/* the Aggref its functions see through AggGetAggref() */
	aggref = makeNode(Aggref);
	aggref->aggfnoid = aggfnoid;
	aggref->aggtype = rettype;
	aggref->aggtranstype = f->transtype;
	aggref->inputcollid = collation;
	aggref->aggkind = AGGKIND_NORMAL;
	aggref->aggsplit = AGGSPLIT_SIMPLE;
	aggref->location = -1;
	for (i = 0; i < nargs; i++)
	{
		aggref->aggargtypes = lappend_oid(aggref->aggargtypes, f->argtypes[i]);
		aggref->args = lappend(aggref->args,
							   makeTargetEntry((Expr *) makeNullConst(f->argtypes[i], -1, InvalidOid),
											   i + 1, NULL, false));
	}
	f->pertrans.aggref = aggref;
	f->pertrans.aggshared = false;
	MemoryContextSwitchTo(old);
	ReleaseSysCache(tup);
	check_types(f, statetype, rettype);
	return f;
}

/*
 * fns_for: the aggregate's functions, cached in the caller's fn_extra.
 * argtypes NULL: the declared argument types.
 */
static AggFns *
fns_for(FunctionCallInfo fcinfo, Oid aggfnoid, int nargs, const Oid *argtypes, Oid statetype,
		Oid rettype)
{
	AggFns	   *f = fcinfo->flinfo->fn_extra;

	if (f == NULL || f->aggfnoid != aggfnoid)
	{
		f = load_fns(aggfnoid, nargs, argtypes, PG_GET_COLLATION(), statetype, rettype,
					 fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = f;
	}
	return f;
}

/*
 * call_fn: call one of the aggregate's functions with context aggstate,
 * showing it its own Aggref; *isnull is the result's nullness.
 */
static Datum
call_fn(AggFns *f, FmgrInfo *fn, AggState *aggstate, int nargs, const Datum *args,
		const bool *nulls, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	AggStatePerAgg saved_peragg = aggstate->curperagg;
	AggStatePerTrans saved_pertrans = aggstate->curpertrans;
	Datum		result;
	int			i;

	InitFunctionCallInfoData(*fcinfo, fn, nargs, f->collation, (Node *) aggstate, NULL);
	for (i = 0; i < nargs; i++)
	{
		fcinfo->args[i].value = args[i];
		fcinfo->args[i].isnull = nulls[i];
	}
	/* (an error ends the query, and its AggState with it: nothing to restore) */
	aggstate->curperagg = NULL;
	aggstate->curpertrans = &f->pertrans;
	result = FunctionCallInvoke(fcinfo);
	aggstate->curperagg = saved_peragg;
	aggstate->curpertrans = saved_pertrans;
	*isnull = fcinfo->isnull;
	return result;
}

/*
 * keep: make value the accumulator's new state, in aggcontext, as
 * nodeAgg.c does after a transition call.
 */
static void
keep(AggAcc *acc, Datum value, bool isnull, MemoryContext aggcontext)
{
	AggFns	   *f = acc->fns;

	if (!f->transbyval && DatumGetPointer(value) != DatumGetPointer(acc->value))
	{
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(aggcontext);

			if (!(DatumIsReadWriteExpandedObject(value, false, f->translen) &&
				  MemoryContextGetParent(DatumGetEOHP(value)->eoh_context) == CurrentMemoryContext))
				value = datumCopy(value, f->transbyval, f->translen);
			MemoryContextSwitchTo(old);
		}
		if (!acc->isnull)
		{
			if (DatumIsReadWriteExpandedObject(acc->value, false, f->translen))
				DeleteExpandedObject(acc->value);
			else
				pfree(DatumGetPointer(acc->value));
		}
	}
	acc->value = value;
	acc->isnull = isnull;
	acc->novalue = false;
}

/* datumCopyIn: datumCopy into memory context cxt */
static Datum
datumCopyIn(MemoryContext cxt, Datum value, bool byval, int len)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);

	value = datumCopy(value, byval, len);
	MemoryContextSwitchTo(old);
	return value;
}

/* new_acc: an accumulator holding the aggregate's initial value */
static AggAcc *
new_acc(AggFns *f, MemoryContext aggcontext)
{
	AggAcc	   *acc = MemoryContextAllocZero(aggcontext, sizeof(AggAcc));

	acc->fns = f;
	acc->isnull = f->initnull;
	acc->novalue = f->initnull;
	if (!f->initnull)
		acc->value = datumCopyIn(aggcontext, f->initval, f->transbyval, f->translen);
	return acc;
}

/*
 * advance: one step of fn (the transition or the combine function) with
 * the state and inputs, under nodeAgg.c's rules for strict functions: null
 * inputs are skipped, and the first input becomes the state if there is
 * no initial value.
 */
static void
advance(AggAcc *acc, FmgrInfo *fn, AggState *aggstate, MemoryContext aggcontext,
		int ninputs, const Datum *inputs, const bool *nulls)
{
	AggFns	   *f = acc->fns;
	Datum		args[FUNC_MAX_ARGS];
	bool		argnulls[FUNC_MAX_ARGS];
	Datum		result;
	bool		isnull;
	int			i;

	if (fn->fn_strict)
	{
		for (i = 0; i < ninputs; i++)
			if (nulls[i])
				return;
		if (acc->novalue)
		{
			keep(acc, inputs[0], false, aggcontext);
			return;
		}
		if (acc->isnull)
			return;
	}
	args[0] = acc->value;
	argnulls[0] = acc->isnull;
	memcpy(args + 1, inputs, ninputs * sizeof(Datum));
	memcpy(argnulls + 1, nulls, ninputs * sizeof(bool));
	result = call_fn(f, fn, aggstate, ninputs + 1, args, argnulls, &isnull);
	keep(acc, result, isnull, aggcontext);
}

/* serialise: the stored form of a state (bytea where it is internal) */
static Datum
serialise(AggFns *f, AggState *aggstate, Datum state, bool *isnull)
{
	if (*isnull || !f->internal)
		return state;
	return call_fn(f, &f->serialfn, aggstate, 1, &state, isnull, isnull);
}

/* deserialise: a state from its stored form */
static Datum
deserialise(AggFns *f, AggState *aggstate, Datum stored, bool *isnull)
{
	Datum		args[2] = {stored, (Datum) 0};
	bool		nulls[2] = {*isnull, false};

	if (*isnull || !f->internal)
		return stored;
	/* as read from a table: maybe compressed, or with a short header */
	args[0] = PointerGetDatum(PG_DETOAST_DATUM(stored));
	/* anyone may pass any bytes: Postgres's own states are checked first */
	ssp_check_stored_state(f->deserialfn.fn_oid, f->aggfnoid, (bytea *) DatumGetPointer(args[0]));
	return call_fn(f, &f->deserialfn, aggstate, 2, args, nulls, isnull);
}

/*
 * A stand-in AggState for the aggregate's functions called outside an
 * aggregate: its memory context lives until standin_end, which runs what
 * they registered with AggRegisterCallback.
 */
static AggState *
standin_begin(void)
{
	AggState   *aggstate = makeNode(AggState);
	ExprContext *econtext = CreateStandaloneExprContext();

	aggstate->curaggcontext = econtext;
	aggstate->tmpcontext = econtext;
	return aggstate;
}

static MemoryContext
standin_memory(AggState *aggstate)
{
	return aggstate->curaggcontext->ecxt_per_tuple_memory;
}

/* standin_end: result copied out to the caller's memory, the rest freed */
static Datum
standin_end(AggState *aggstate, Datum result, bool isnull, Oid type)
{
	int16		len;
	bool		byval;

	if (!isnull)
	{
		get_typlenbyval(type, &len, &byval);
		result = datumCopy(result, byval, len);
	}
	FreeExprContext(aggstate->curaggcontext, true);
	pfree(aggstate);
	return result;
}

/* agg_context: the aggregate memory context of a wrapper aggregate's call */
static MemoryContext
agg_context(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "%s called in non-aggregate context", get_func_name(fcinfo->flinfo->fn_oid));
	return aggcontext;
}

/* input_types: the types of trailing arguments first.. (the inputs' NULLs) */
static int
input_types(FunctionCallInfo fcinfo, int first, Oid *types)
{
	int			i;

	for (i = first; i < PG_NARGS(); i++)
		types[i - first] = get_fn_expr_argtype(fcinfo->flinfo, i);
	return PG_NARGS() - first;
}

/*
 * ssp_agg_partial_trans(internal, regprocedure, anyelement, VARIADIC "any"):
 * the aggregate's transition function over the inputs (arguments 3 on).
 */
Datum
ssp_agg_partial_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = agg_context(fcinfo);
	AggAcc	   *acc = PG_ARGISNULL(0) ? NULL : (AggAcc *) PG_GETARG_POINTER(0);
	int			ninputs = PG_NARGS() - 3;

	if (acc == NULL)
	{
		Oid			argtypes[FUNC_MAX_ARGS];

		(void) input_types(fcinfo, 3, argtypes);
		acc = new_acc(fns_for(fcinfo, PG_GETARG_OID(1), ninputs, argtypes,
							  get_fn_expr_argtype(fcinfo->flinfo, 2), InvalidOid),
					  aggcontext);
	}
	{
		Datum		inputs[FUNC_MAX_ARGS];
		bool		nulls[FUNC_MAX_ARGS];
		int			i;

		for (i = 0; i < ninputs; i++)
		{
			inputs[i] = fcinfo->args[i + 3].value;
			nulls[i] = fcinfo->args[i + 3].isnull;
		}
		advance(acc, &acc->fns->transfn, (AggState *) fcinfo->context, aggcontext,
				ninputs, inputs, nulls);
	}
	PG_RETURN_POINTER(acc);
}

/*
 * ssp_agg_partial_final: the state, serialised where it is internal; with
 * no input (a FILTER that passed none), the initial state.
 */
Datum
ssp_agg_partial_final(PG_FUNCTION_ARGS)
{
	AggAcc	   *acc = PG_ARGISNULL(0) ? NULL : (AggAcc *) PG_GETARG_POINTER(0);
	Datum		result;
	bool		isnull;

	if (acc == NULL)
	{
		/* a final function's extra arguments are NULLs: the Aggref names it */
		Aggref	   *aggref = AggGetAggref(fcinfo);
		Node	   *fn = aggref ? (Node *) ((TargetEntry *) linitial(aggref->args))->expr : NULL;
		Oid			argtypes[FUNC_MAX_ARGS];
		int			ninputs = input_types(fcinfo, 3, argtypes);

		if (fn == NULL || !IsA(fn, Const) || ((Const *) fn)->constisnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the aggregate of ssp.agg_partial must be a constant")));
		acc = new_acc(fns_for(fcinfo, DatumGetObjectId(((Const *) fn)->constvalue), ninputs,
							  argtypes, get_fn_expr_argtype(fcinfo->flinfo, 2), InvalidOid),
					  agg_context(fcinfo));
	}
	isnull = acc->isnull;
	result = serialise(acc->fns, (AggState *) fcinfo->context, acc->value, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

/*
 * combine_into: merge stored state (value, isnull) into acc with the
 * combine function, as nodeAgg.c's combine step does.
 */
static void
combine_into(AggAcc *acc, AggState *aggstate, MemoryContext aggcontext, Datum value, bool isnull)
{
	AggFns	   *f = acc->fns;

	value = deserialise(f, aggstate, value, &isnull);
	advance(acc, &f->combinefn, aggstate, aggcontext, 1, &value, &isnull);
}

/*
 * ssp_agg_combine(regprocedure, a anyelement, b anyelement, VARIADIC
 * NULL::argtype "any"): two stored states merged, stored again.
 */
Datum
ssp_agg_combine(PG_FUNCTION_ARGS)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	Oid			argtypes[FUNC_MAX_ARGS];
	int			nargs = input_types(fcinfo, 3, argtypes);
	AggFns	   *f = fns_for(fcinfo, PG_GETARG_OID(0), nargs, argtypes, type, InvalidOid);
	AggState   *aggstate = standin_begin();
	MemoryContext aggcontext = standin_memory(aggstate);
	MemoryContext old = MemoryContextSwitchTo(aggcontext);
	AggAcc	   *acc = new_acc(f, aggcontext);
	Datum		result;
	bool		isnull;

	combine_into(acc, aggstate, aggcontext, PG_GETARG_DATUM(1), PG_ARGISNULL(1));
	combine_into(acc, aggstate, aggcontext, PG_GETARG_DATUM(2), PG_ARGISNULL(2));
	isnull = acc->isnull;
	result = serialise(f, aggstate, acc->value, &isnull);
	MemoryContextSwitchTo(old);
	result = standin_end(aggstate, result, isnull, type);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

/*
 * ssp_agg_combine_trans(internal, regprocedure, anyelement, VARIADIC
 * NULL::argtype "any"): merge one stored state into the accumulator.  It
 * starts at the aggregate's initial value, as nodeAgg.c's combining does:
 * a combine function that is not strict is never called with a state that
 * is null only because nothing was merged yet.
 */
Datum
ssp_agg_combine_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = agg_context(fcinfo);
	AggAcc	   *acc = PG_ARGISNULL(0) ? NULL : (AggAcc *) PG_GETARG_POINTER(0);

	if (acc == NULL)
	{
		Oid			argtypes[FUNC_MAX_ARGS];
		int			nargs = input_types(fcinfo, 3, argtypes);

		acc = new_acc(fns_for(fcinfo, PG_GETARG_OID(1), nargs, argtypes,
							  get_fn_expr_argtype(fcinfo->flinfo, 2), InvalidOid),
					  aggcontext);
	}
	combine_into(acc, (AggState *) fcinfo->context, aggcontext,
				 PG_GETARG_DATUM(2), PG_ARGISNULL(2));
	PG_RETURN_POINTER(acc);
}

/* ssp_agg_combine_final: the merged state, stored form */
Datum
ssp_agg_combine_final(PG_FUNCTION_ARGS)
{
	AggAcc	   *acc = PG_ARGISNULL(0) ? NULL : (AggAcc *) PG_GETARG_POINTER(0);
	Datum		result;
	bool		isnull;

	if (acc == NULL)
		PG_RETURN_NULL();
	isnull = acc->isnull;
	result = serialise(acc->fns, (AggState *) fcinfo->context, acc->value, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

/*
 * ssp_agg_finalize(regprocedure, state "any", NULL::result anyelement,
 * VARIADIC NULL::argtype "any"): the finished value of a stored state.
 */
Datum
ssp_agg_finalize(PG_FUNCTION_ARGS)
{
	Oid			rettype = get_fn_expr_argtype(fcinfo->flinfo, 2);
	Oid			argtypes[FUNC_MAX_ARGS];
	int			nargs = input_types(fcinfo, 3, argtypes);
	AggFns	   *f;
	AggState   *aggstate;
	Datum		state;
	Datum		result;
	bool		isnull = PG_ARGISNULL(1);
	int			i;

	f = fns_for(fcinfo, PG_GETARG_OID(0), nargs, argtypes,
				get_fn_expr_argtype(fcinfo->flinfo, 1), rettype);
	if (!OidIsValid(f->finalfn.fn_oid))
	{
		/* the state is the value: as read from the table, maybe toasted */
		if (isnull)
			PG_RETURN_NULL();
		if (f->translen == -1)
			PG_RETURN_POINTER(PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(1)));
		return PG_GETARG_DATUM(1);
	}
	aggstate = standin_begin();
	{
		MemoryContext old = MemoryContextSwitchTo(standin_memory(aggstate));
		Datum		args[FUNC_MAX_ARGS];
		bool		nulls[FUNC_MAX_ARGS];
		bool		anynull;

		state = deserialise(f, aggstate, PG_GETARG_DATUM(1), &isnull);
		args[0] = state;
		nulls[0] = isnull;
		anynull = isnull;
		/* FINALFUNC_EXTRA: the inputs, as nulls */
		for (i = 1; i < f->nfinalargs; i++)
		{
			args[i] = (Datum) 0;
			nulls[i] = true;
			anynull = true;
		}
		if (f->finalfn.fn_strict && anynull)
			result = (Datum) 0, isnull = true;
		else
			result = call_fn(f, &f->finalfn, aggstate, f->nfinalargs, args, nulls, &isnull);
		MemoryContextSwitchTo(old);
	}
	result = standin_end(aggstate, result, isnull, rettype);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}
