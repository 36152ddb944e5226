/* SPDX-License-Identifier: MIT */
/*
 * The C API of datatypes, statuses and pack/unpack: each function checks
 * its arguments, calls the datatype engine, and hands a failure to
 * RMA_COMM_SELF's error handler (these calls have no object of their own).
 * The int and large-count (_x, _c) forms share one body per call.
 */
#include <rma/rma.h>

#include <climits>
#include <cstring>
#include <string>

#include "common/pointer.h"
#include "common/result.h"
#include "core/core.h"
#include "datatype/datatype.h"
#include "error/error.h"

using namespace librma;

#define RMA_EXPORT extern "C" RMA_API

namespace {

[[gnu::cold]] int raise(int code)
{
	Comm *self = runtime().initialized ? toComm(RMA_COMM_SELF) : nullptr;
	return self && self->errhandler ? invokeCommErrhandler(*self->errhandler, RMA_COMM_SELF, code) : code;
}

[[gnu::cold]] int invalidType(const char *call, rma_datatype h)
{
	return raise(makeError(RMA_ERR_TYPE, "%s: %s is not a valid datatype", call,
			       h == RMA_DATATYPE_NULL ? "RMA_DATATYPE_NULL" : "the handle (freed, or never created)"));
}

[[gnu::cold]] int nullArg(const char *call, const char *arg)
{
	return raise(makeError(RMA_ERR_ARG, "%s: %s is NULL", call, arg));
}

rma_datatype toHandle(uintptr_t h)
{
	return reinterpret_cast<rma_datatype>(h);
}

/* A count for an int output: RMA_UNDEFINED when it does not fit. */
int toInt(rma_count v)
{
	return v > INT_MAX || v < INT_MIN ? RMA_UNDEFINED : static_cast<int>(v);
}

/* ---- Constructors --------------------------------------------------------- */

/* Build @a (its types already resolved) and hand out a handle. */
int construct(const char *call, const TypeArgs &a, rma_datatype *newtype)
{
	if (!newtype)
		return nullArg(call, "newtype");
	std::shared_ptr<Datatype> t;
	if (int rc = buildType(call, a, t))
		return raise(rc);
	uintptr_t h = datatypeTable().insert(std::move(t));
	if (!h)
		return raise(makeError(RMA_ERR_NO_MEM, "%s: too many datatypes are alive", call));
	*newtype = toHandle(h);
	return RMA_SUCCESS;
}

/* Constructors with one old type. */
int constructFrom(const char *call, TypeArgs &a, rma_datatype oldtype, rma_datatype *newtype)
{
	std::shared_ptr<Datatype> old = shareDatatype(oldtype);
	if (!old)
		return invalidType(call, oldtype);
	a.types = { std::move(old) };
	return construct(call, a, newtype);
}

template<typename T, typename U>
std::vector<U> widen(const T *array, rma_count n)
{
	return std::vector<U>(array, array + n);
}

/*
 * indexed, hindexed, indexed_block, hindexed_block and struct: @lengths
 * (nullptr for the _block forms, which use @blocklength), @disps, and for
 * struct @types (else @oldtype).
 */
template<typename L, typename D>
int blocks(const char *call, Combiner combiner, bool large, rma_count count, const L *lengths,
	   rma_count blocklength, const D *disps, const rma_datatype *types, rma_datatype oldtype,
	   rma_datatype *newtype)
{
	TypeArgs a;
	a.combiner = combiner;
	a.largeCounts = large;
	a.count = count;
	a.blocklength = blocklength;
	bool isStruct = combiner == Combiner::Struct;
	bool hasLengths = isStruct || combiner == Combiner::Indexed || combiner == Combiner::Hindexed;
	if (count > 0 && ((hasLengths && !lengths) || !disps || (isStruct && !types)))
		return nullArg(call, "an array argument");
	if (count > 0 && hasLengths)
		a.blocklengths = widen<L, rma_count>(lengths, count);
	if (count > 0)
		a.disps = widen<D, rma_aint>(disps, count);
	if (!isStruct)
		return constructFrom(call, a, oldtype, newtype);
	for (rma_count i = 0; i < count; ++i) {
		std::shared_ptr<Datatype> t = shareDatatype(types[i]);
		if (!t)
			return raise(makeError(RMA_ERR_TYPE, "%s: array_of_types[%lld] is not a valid datatype", call,
					       static_cast<long long>(i)));
		a.types.push_back(std::move(t));
	}
	return construct(call, a, newtype);
}

int vector(const char *call, Combiner combiner, bool large, rma_count count, rma_count blocklength,
	   rma_aint stride, rma_datatype oldtype, rma_datatype *newtype)
{
	TypeArgs a;
	a.combiner = combiner;
	a.largeCounts = large;
	a.count = count;
	a.blocklength = blocklength;
	a.stride = stride;
	return constructFrom(call, a, oldtype, newtype);
}

template<typename C>
int subarray(const char *call, bool large, int ndims, const C *sizes, const C *subsizes, const C *starts, int order,
	     rma_datatype oldtype, rma_datatype *newtype)
{
	if (ndims > 0 && (!sizes || !subsizes || !starts))
		return nullArg(call, "an array argument");
	TypeArgs a;
	a.combiner = Combiner::Subarray;
	a.largeCounts = large;
	a.count = ndims;
	a.order = order;
	if (ndims > 0) {
		a.sizes = widen<C, rma_count>(sizes, ndims);
		a.subsizes = widen<C, rma_count>(subsizes, ndims);
		a.starts = widen<C, rma_count>(starts, ndims);
	}
	if (ndims < 1)
		return raise(makeError(RMA_ERR_ARG, "%s: ndims is %d (must be at least 1)", call, ndims));
	return constructFrom(call, a, oldtype, newtype);
}

/* ---- Queries -------------------------------------------------------------- */

/* The type behind @h for a query with outputs @out (all must be non-NULL). */
template<typename... Out>
int queried(const char *call, rma_datatype h, const Datatype *&t, Out *...out)
{
	t = lookupDatatype(h);
	if (!t)
		return invalidType(call, h);
	if ((... || !out))
		return nullArg(call, "an output argument");
	return RMA_SUCCESS;
}

template<typename C>
int typeSize(const char *call, rma_datatype datatype, C *size)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t, size));
	*size = sizeof(C) < sizeof(rma_count) ? toInt(t->size) : t->size;
	return RMA_SUCCESS;
}

template<typename C>
int bounds(const char *call, rma_datatype datatype, bool trueBounds, C *lb, C *extent)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t, lb, extent));
	*lb = trueBounds ? t->trueLb : t->lb;
	*extent = trueBounds ? t->trueExtent : t->extent;
	return RMA_SUCCESS;
}

bool isNamed(const Datatype &t)
{
	return !t.detail || t.detail->combiner == Combiner::Named;
}

template<typename C>
int envelope(const char *call, rma_datatype datatype, bool large, C *ni, C *na, rma_count *nl, C *nd, int *combiner)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t, ni, na, nd, combiner));
	if (large && !nl)
		return nullArg(call, "num_large_counts");
	if (isNamed(*t)) {
		*ni = *na = *nd = 0;
		if (nl)
			*nl = 0;
		*combiner = RMA_COMBINER_NAMED;
		return RMA_SUCCESS;
	}
	const TypeDetail &d = *t->detail;
	if (!large && !d.counts.empty())
		return raise(makeError(RMA_ERR_TYPE,
				       "%s: datatype %s was made with large counts; use rma_type_get_envelope_c", call,
				       t->name));
	*ni = static_cast<C>(d.ints.size());
	*na = static_cast<C>(d.aints.size());
	*nd = static_cast<C>(d.types.size());
	if (nl)
		*nl = static_cast<rma_count>(d.counts.size());
	*combiner = static_cast<int>(d.combiner);
	return RMA_SUCCESS;
}

/* Copy @from into @to (room @max); false if it does not fit or @to is needed but NULL. */
template<typename T>
bool give(const std::vector<T> &from, rma_count max, T *to)
{
	if (from.empty())
		return true;
	if (!to || max < static_cast<rma_count>(from.size()))
		return false;
	std::copy(from.begin(), from.end(), to);
	return true;
}

int contents(const char *call, rma_datatype datatype, bool large, rma_count maxInts, rma_count maxAints,
	     rma_count maxCounts, rma_count maxTypes, int *ints, rma_aint *aints, rma_count *counts,
	     rma_datatype *types)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t));
	if (isNamed(*t))
		return raise(makeError(RMA_ERR_ARG, "%s: %s is a predefined datatype: it has no contents", call,
				       t->name));
	const TypeDetail &d = *t->detail;
	if (!large && !d.counts.empty())
		return raise(makeError(RMA_ERR_TYPE,
				       "%s: datatype %s was made with large counts; use rma_type_get_contents_c", call,
				       t->name));
	std::vector<rma_datatype> handles(d.types.size(), RMA_DATATYPE_NULL);
	if (!give(d.ints, maxInts, ints) || !give(d.aints, maxAints, aints) || !give(d.counts, maxCounts, counts) ||
	    !give(handles, maxTypes, types))
		return raise(makeError(RMA_ERR_ARG,
				       "%s: the arrays are too small or NULL for datatype %s (it has %zu integers, %zu "
				       "addresses, %zu large counts, %zu datatypes)",
				       call, t->name, d.ints.size(), d.aints.size(), d.counts.size(), d.types.size()));
	/* Derived types come back as new handles the caller frees, as MPI says. */
	for (size_t i = 0; i < d.types.size(); ++i) {
		uintptr_t h = d.types[i]->predefined ? reinterpret_cast<uintptr_t>(predefinedHandle(*d.types[i]))
						     : datatypeTable().insert(d.types[i]);
		types[i] = toHandle(h);
	}
	return RMA_SUCCESS;
}

/* ---- Statuses -------------------------------------------------------------- */

int setElements(const char *call, rma_status *status, rma_datatype datatype, rma_count count)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t, status));
	if (count < 0)
		return raise(makeError(RMA_ERR_COUNT, "%s: count is %lld (must not be negative)", call,
				       static_cast<long long>(count)));
	status->bytes_ = bytesOfElements(*t, count);
	return RMA_SUCCESS;
}

template<typename C>
int getCount(const char *call, const rma_status *status, rma_datatype datatype, C *count)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t, status, count));
	rma_count n = RMA_UNDEFINED;
	if (t->size == 0)
		n = 0;
	else if (status->bytes_ % t->size == 0)
		n = status->bytes_ / t->size;
	*count = sizeof(C) < sizeof(rma_count) ? toInt(n) : n;
	return RMA_SUCCESS;
}

template<typename C>
int getElements(const char *call, const rma_status *status, rma_datatype datatype, C *count)
{
	const Datatype *t;
	RMA_TRY(queried(call, datatype, t, status, count));
	rma_count n = elementsInBytes(*t, status->bytes_);
	if (n < 0)
		n = RMA_UNDEFINED;
	*count = sizeof(C) < sizeof(rma_count) ? toInt(n) : n;
	return RMA_SUCCESS;
}

/* ---- Pack and unpack ------------------------------------------------------ */

/* The committed type for pack/unpack, after checking the count and the communicator. */
int packType(const char *call, rma_datatype datatype, rma_count count, rma_comm comm, const Datatype *&t)
{
	t = lookupDatatype(datatype);
	if (!t)
		return invalidType(call, datatype);
	if (!t->committed)
		return raise(makeError(RMA_ERR_TYPE, "%s: datatype %s is not committed", call, t->name));
	if (count < 0)
		return raise(makeError(RMA_ERR_COUNT, "%s: count is %lld (must not be negative)", call,
				       static_cast<long long>(count)));
	if (!toComm(comm))
		return raise(makeError(RMA_ERR_COMM, "%s: not a valid communicator", call));
	return RMA_SUCCESS;
}

const Datatype &bytesType()
{
	return kPredefinedTypes[static_cast<int>(BasicType::Byte)];
}

/*
 * Move @count x @t between @typed and the packed buffer @packed (@size
 * bytes, from *position); @toPacked says which way.
 */
template<typename C>
int packOrUnpack(const char *call, bool toPacked, void *typed, rma_count count, rma_datatype datatype, void *packed,
		 C size, C *position, rma_comm comm)
{
	const Datatype *t;
	RMA_TRY(packType(call, datatype, count, comm, t));
	if (!position)
		return nullArg(call, "position");
	if (*position < 0 || *position > size)
		return raise(makeError(RMA_ERR_ARG, "%s: position %lld is outside the buffer of %lld bytes", call,
				       static_cast<long long>(*position), static_cast<long long>(size)));
	if (!toPacked && count > 0 && t->size > 0 && count >= t->overlapCount)
		return raise(makeError(RMA_ERR_TYPE, "%s: %lld x %s has overlapping entries: it cannot receive data",
				       call, static_cast<long long>(count), t->name));
	rma_count bytes;
	if (__builtin_mul_overflow(count, t->size, &bytes) || bytes > size - *position)
		return raise(makeError(RMA_ERR_TRUNCATE,
				       "%s: %lld x %s (%lld bytes) does not fit the %lld bytes left in the buffer", call,
				       static_cast<long long>(count), t->name, static_cast<long long>(bytes),
				       static_cast<long long>(size - *position)));
	if (bytes > 0 && (badPointer(packed) || badPointer(static_cast<std::byte *>(typed) + t->trueLb)))
		return raise(makeError(RMA_ERR_BUFFER, "%s: %s buffer %p is NULL or in the first page", call,
				       badPointer(packed) ? (toPacked ? "the output" : "the input")
							  : (toPacked ? "the input" : "the output"),
				       badPointer(packed) ? packed : typed));
	std::byte *p = static_cast<std::byte *>(packed) + *position;
	auto *u = static_cast<std::byte *>(typed);
	if (toPacked)
		copyTyped(p, bytesType(), bytes, u, *t, count, bytes);
	else
		copyTyped(u, *t, count, p, bytesType(), bytes, bytes);
	*position += static_cast<C>(bytes);
	return RMA_SUCCESS;
}

template<typename C>
int packSize(const char *call, rma_count incount, rma_datatype datatype, rma_comm comm, C *size)
{
	const Datatype *t;
	RMA_TRY(packType(call, datatype, incount, comm, t));
	if (!size)
		return nullArg(call, "size");
	rma_count bytes;
	if (__builtin_mul_overflow(incount, t->size, &bytes))
		return raise(makeError(RMA_ERR_COUNT, "%s: %lld x %s (%lld bytes each) does not fit in an rma_count", call,
				       static_cast<long long>(incount), t->name, static_cast<long long>(t->size)));
	/* The int form: MPI's RMA_UNDEFINED when the size does not fit an int. */
	*size = sizeof(C) < sizeof(rma_count) ? toInt(bytes) : bytes;
	return RMA_SUCCESS;
}

} /* namespace */

/* ---- Constructors ---------------------------------------------------------- */

RMA_EXPORT int rma_type_contiguous(int count, rma_datatype oldtype, rma_datatype *newtype)
{
	TypeArgs a;
	a.count = count;
	return constructFrom("rma_type_contiguous", a, oldtype, newtype);
}

RMA_EXPORT int rma_type_contiguous_c(rma_count count, rma_datatype oldtype, rma_datatype *newtype)
{
	TypeArgs a;
	a.count = count;
	a.largeCounts = true;
	return constructFrom("rma_type_contiguous_c", a, oldtype, newtype);
}

RMA_EXPORT int rma_type_vector(int count, int blocklength, int stride, rma_datatype oldtype, rma_datatype *newtype)
{
	return vector("rma_type_vector", Combiner::Vector, false, count, blocklength, stride, oldtype, newtype);
}

RMA_EXPORT int rma_type_vector_c(rma_count count, rma_count blocklength, rma_count stride, rma_datatype oldtype,
				 rma_datatype *newtype)
{
	return vector("rma_type_vector_c", Combiner::Vector, true, count, blocklength, stride, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_hvector(int count, int blocklength, rma_aint stride, rma_datatype oldtype,
				       rma_datatype *newtype)
{
	return vector("rma_type_create_hvector", Combiner::Hvector, false, count, blocklength, stride, oldtype,
		      newtype);
}

RMA_EXPORT int rma_type_create_hvector_c(rma_count count, rma_count blocklength, rma_count stride,
					 rma_datatype oldtype, rma_datatype *newtype)
{
	return vector("rma_type_create_hvector_c", Combiner::Hvector, true, count, blocklength, stride, oldtype,
		      newtype);
}

RMA_EXPORT int rma_type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
				rma_datatype oldtype, rma_datatype *newtype)
{
	return blocks("rma_type_indexed", Combiner::Indexed, false, count, array_of_blocklengths, 0,
		      array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_indexed_c(rma_count count, const rma_count array_of_blocklengths[],
				  const rma_count array_of_displacements[], rma_datatype oldtype,
				  rma_datatype *newtype)
{
	return blocks("rma_type_indexed_c", Combiner::Indexed, true, count, array_of_blocklengths, 0,
		      array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_hindexed(int count, const int array_of_blocklengths[],
					const rma_aint array_of_displacements[], rma_datatype oldtype,
					rma_datatype *newtype)
{
	return blocks("rma_type_create_hindexed", Combiner::Hindexed, false, count, array_of_blocklengths, 0,
		      array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_hindexed_c(rma_count count, const rma_count array_of_blocklengths[],
					  const rma_count array_of_displacements[], rma_datatype oldtype,
					  rma_datatype *newtype)
{
	return blocks("rma_type_create_hindexed_c", Combiner::Hindexed, true, count, array_of_blocklengths, 0,
		      array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
					     rma_datatype oldtype, rma_datatype *newtype)
{
	return blocks<int>("rma_type_create_indexed_block", Combiner::IndexedBlock, false, count, nullptr,
			   blocklength, array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_indexed_block_c(rma_count count, rma_count blocklength,
					       const rma_count array_of_displacements[], rma_datatype oldtype,
					       rma_datatype *newtype)
{
	return blocks<rma_count>("rma_type_create_indexed_block_c", Combiner::IndexedBlock, true, count, nullptr,
				 blocklength, array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_hindexed_block(int count, int blocklength, const rma_aint array_of_displacements[],
					      rma_datatype oldtype, rma_datatype *newtype)
{
	return blocks<int>("rma_type_create_hindexed_block", Combiner::HindexedBlock, false, count, nullptr,
			   blocklength, array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_hindexed_block_c(rma_count count, rma_count blocklength,
						const rma_count array_of_displacements[], rma_datatype oldtype,
						rma_datatype *newtype)
{
	return blocks<rma_count>("rma_type_create_hindexed_block_c", Combiner::HindexedBlock, true, count, nullptr,
				 blocklength, array_of_displacements, nullptr, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_struct(int count, const int array_of_blocklengths[],
				      const rma_aint array_of_displacements[], const rma_datatype array_of_types[],
				      rma_datatype *newtype)
{
	return blocks("rma_type_create_struct", Combiner::Struct, false, count, array_of_blocklengths, 0,
		      array_of_displacements, array_of_types, RMA_DATATYPE_NULL, newtype);
}

RMA_EXPORT int rma_type_create_struct_c(rma_count count, const rma_count array_of_blocklengths[],
					const rma_count array_of_displacements[], const rma_datatype array_of_types[],
					rma_datatype *newtype)
{
	return blocks("rma_type_create_struct_c", Combiner::Struct, true, count, array_of_blocklengths, 0,
		      array_of_displacements, array_of_types, RMA_DATATYPE_NULL, newtype);
}

RMA_EXPORT int rma_type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
					const int array_of_starts[], int order, rma_datatype oldtype,
					rma_datatype *newtype)
{
	return subarray("rma_type_create_subarray", false, ndims, array_of_sizes, array_of_subsizes, array_of_starts,
			order, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_subarray_c(int ndims, const rma_count array_of_sizes[],
					  const rma_count array_of_subsizes[], const rma_count array_of_starts[],
					  int order, rma_datatype oldtype, rma_datatype *newtype)
{
	return subarray("rma_type_create_subarray_c", true, ndims, array_of_sizes, array_of_subsizes,
			array_of_starts, order, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_resized(rma_datatype oldtype, rma_aint lb, rma_aint extent, rma_datatype *newtype)
{
	TypeArgs a;
	a.combiner = Combiner::Resized;
	a.newLb = lb;
	a.newExtent = extent;
	return constructFrom("rma_type_create_resized", a, oldtype, newtype);
}

RMA_EXPORT int rma_type_create_resized_c(rma_datatype oldtype, rma_count lb, rma_count extent,
					 rma_datatype *newtype)
{
	TypeArgs a;
	a.combiner = Combiner::Resized;
	a.largeCounts = true;
	a.newLb = lb;
	a.newExtent = extent;
	return constructFrom("rma_type_create_resized_c", a, oldtype, newtype);
}

RMA_EXPORT int rma_type_dup(rma_datatype oldtype, rma_datatype *newtype)
{
	static constexpr const char *kCall = "rma_type_dup";
	std::shared_ptr<Datatype> old = shareDatatype(oldtype);
	if (!old)
		return invalidType(kCall, oldtype);
	if (!newtype)
		return nullArg(kCall, "newtype");
	std::shared_ptr<Datatype> t;
	if (int rc = dupType(kCall, old, t))
		return raise(rc);
	uintptr_t h = datatypeTable().insert(std::move(t));
	if (!h)
		return raise(makeError(RMA_ERR_NO_MEM, "%s: too many datatypes are alive", kCall));
	*newtype = toHandle(h);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_type_commit(rma_datatype *datatype)
{
	static constexpr const char *kCall = "rma_type_commit";
	if (!datatype)
		return nullArg(kCall, "datatype");
	Datatype *t = lookupDatatype(*datatype);
	if (!t)
		return invalidType(kCall, *datatype);
	if (int rc = commitType(kCall, *t))
		return raise(rc);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_type_free(rma_datatype *datatype)
{
	static constexpr const char *kCall = "rma_type_free";
	if (!datatype)
		return nullArg(kCall, "datatype");
	uintptr_t h = reinterpret_cast<uintptr_t>(*datatype);
	if (DatatypeTable::isPredefined(h) && lookupDatatype(*datatype))
		return raise(makeError(RMA_ERR_TYPE, "%s: %s is predefined and cannot be freed", kCall,
				       lookupDatatype(*datatype)->name));
	/* Types built from it and pending operations hold their own references. */
	if (!datatypeTable().remove(h))
		return invalidType(kCall, *datatype);
	*datatype = RMA_DATATYPE_NULL;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_type_set_name(rma_datatype datatype, const char *type_name)
{
	static constexpr const char *kCall = "rma_type_set_name";
	Datatype *t = lookupDatatype(datatype);
	if (!t)
		return invalidType(kCall, datatype);
	if (!type_name)
		return nullArg(kCall, "type_name");
	if (t->predefined)
		return raise(makeError(RMA_ERR_TYPE, "%s: %s is predefined and keeps its name", kCall, t->name));
	if (std::strlen(type_name) >= RMA_MAX_OBJECT_NAME)
		return raise(makeError(RMA_ERR_ARG, "%s: the name is longer than %d characters", kCall,
				       RMA_MAX_OBJECT_NAME - 1));
	t->detail->name = type_name;
	t->name = t->detail->name.c_str();
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_type_get_name(rma_datatype datatype, char *type_name, int *resultlen)
{
	const Datatype *t;
	RMA_TRY(queried("rma_type_get_name", datatype, t, type_name, resultlen));
	size_t n = std::min<size_t>(std::strlen(t->name), RMA_MAX_OBJECT_NAME - 1);
	std::memcpy(type_name, t->name, n);
	type_name[n] = '\0';
	*resultlen = static_cast<int>(n);
	return RMA_SUCCESS;
}

/* ---- Queries --------------------------------------------------------------- */

RMA_EXPORT int rma_type_size(rma_datatype datatype, int *size)
{
	return typeSize("rma_type_size", datatype, size);
}

RMA_EXPORT int rma_type_size_x(rma_datatype datatype, rma_count *size)
{
	return typeSize("rma_type_size_x", datatype, size);
}

RMA_EXPORT int rma_type_size_c(rma_datatype datatype, rma_count *size)
{
	return typeSize("rma_type_size_c", datatype, size);
}

RMA_EXPORT int rma_type_get_extent(rma_datatype datatype, rma_aint *lb, rma_aint *extent)
{
	return bounds("rma_type_get_extent", datatype, false, lb, extent);
}

RMA_EXPORT int rma_type_get_extent_x(rma_datatype datatype, rma_count *lb, rma_count *extent)
{
	return bounds("rma_type_get_extent_x", datatype, false, lb, extent);
}

RMA_EXPORT int rma_type_get_extent_c(rma_datatype datatype, rma_count *lb, rma_count *extent)
{
	return bounds("rma_type_get_extent_c", datatype, false, lb, extent);
}

RMA_EXPORT int rma_type_get_true_extent(rma_datatype datatype, rma_aint *true_lb, rma_aint *true_extent)
{
	return bounds("rma_type_get_true_extent", datatype, true, true_lb, true_extent);
}

RMA_EXPORT int rma_type_get_true_extent_x(rma_datatype datatype, rma_count *true_lb, rma_count *true_extent)
{
	return bounds("rma_type_get_true_extent_x", datatype, true, true_lb, true_extent);
}

RMA_EXPORT int rma_type_get_true_extent_c(rma_datatype datatype, rma_count *true_lb, rma_count *true_extent)
{
	return bounds("rma_type_get_true_extent_c", datatype, true, true_lb, true_extent);
}

RMA_EXPORT int rma_type_get_envelope(rma_datatype datatype, int *num_integers, int *num_addresses,
				     int *num_datatypes, int *combiner)
{
	return envelope("rma_type_get_envelope", datatype, false, num_integers, num_addresses, nullptr,
			num_datatypes, combiner);
}

RMA_EXPORT int rma_type_get_envelope_c(rma_datatype datatype, rma_count *num_integers, rma_count *num_addresses,
				       rma_count *num_large_counts, rma_count *num_datatypes, int *combiner)
{
	return envelope("rma_type_get_envelope_c", datatype, true, num_integers, num_addresses, num_large_counts,
			num_datatypes, combiner);
}

RMA_EXPORT int rma_type_get_contents(rma_datatype datatype, int max_integers, int max_addresses,
				     int max_datatypes, int array_of_integers[], rma_aint array_of_addresses[],
				     rma_datatype array_of_datatypes[])
{
	return contents("rma_type_get_contents", datatype, false, max_integers, max_addresses, 0, max_datatypes,
			array_of_integers, array_of_addresses, nullptr, array_of_datatypes);
}

RMA_EXPORT int rma_type_get_contents_c(rma_datatype datatype, rma_count max_integers, rma_count max_addresses,
				       rma_count max_large_counts, rma_count max_datatypes, int array_of_integers[],
				       rma_aint array_of_addresses[], rma_count array_of_large_counts[],
				       rma_datatype array_of_datatypes[])
{
	return contents("rma_type_get_contents_c", datatype, true, max_integers, max_addresses, max_large_counts,
			max_datatypes, array_of_integers, array_of_addresses, array_of_large_counts,
			array_of_datatypes);
}

/* ---- Statuses -------------------------------------------------------------- */

RMA_EXPORT int rma_status_set_elements(rma_status *status, rma_datatype datatype, int count)
{
	return setElements("rma_status_set_elements", status, datatype, count);
}

RMA_EXPORT int rma_status_set_elements_x(rma_status *status, rma_datatype datatype, rma_count count)
{
	return setElements("rma_status_set_elements_x", status, datatype, count);
}

RMA_EXPORT int rma_status_set_elements_c(rma_status *status, rma_datatype datatype, rma_count count)
{
	return setElements("rma_status_set_elements_c", status, datatype, count);
}

RMA_EXPORT int rma_get_count(const rma_status *status, rma_datatype datatype, int *count)
{
	return getCount("rma_get_count", status, datatype, count);
}

RMA_EXPORT int rma_get_count_c(const rma_status *status, rma_datatype datatype, rma_count *count)
{
	return getCount("rma_get_count_c", status, datatype, count);
}

RMA_EXPORT int rma_get_elements(const rma_status *status, rma_datatype datatype, int *count)
{
	return getElements("rma_get_elements", status, datatype, count);
}

RMA_EXPORT int rma_get_elements_x(const rma_status *status, rma_datatype datatype, rma_count *count)
{
	return getElements("rma_get_elements_x", status, datatype, count);
}

RMA_EXPORT int rma_get_elements_c(const rma_status *status, rma_datatype datatype, rma_count *count)
{
	return getElements("rma_get_elements_c", status, datatype, count);
}

/* ---- Pack and unpack ------------------------------------------------------- */

RMA_EXPORT int rma_pack(const void *inbuf, int incount, rma_datatype datatype, void *outbuf, int outsize,
			int *position, rma_comm comm)
{
	return packOrUnpack("rma_pack", true, const_cast<void *>(inbuf), incount, datatype, outbuf, outsize, position,
			    comm);
}

RMA_EXPORT int rma_pack_c(const void *inbuf, rma_count incount, rma_datatype datatype, void *outbuf,
			  rma_count outsize, rma_count *position, rma_comm comm)
{
	return packOrUnpack("rma_pack_c", true, const_cast<void *>(inbuf), incount, datatype, outbuf, outsize,
			    position, comm);
}

RMA_EXPORT int rma_unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
			  rma_datatype datatype, rma_comm comm)
{
	return packOrUnpack("rma_unpack", false, outbuf, outcount, datatype, const_cast<void *>(inbuf), insize,
			    position, comm);
}

RMA_EXPORT int rma_unpack_c(const void *inbuf, rma_count insize, rma_count *position, void *outbuf,
			    rma_count outcount, rma_datatype datatype, rma_comm comm)
{
	return packOrUnpack("rma_unpack_c", false, outbuf, outcount, datatype, const_cast<void *>(inbuf), insize,
			    position, comm);
}

RMA_EXPORT int rma_pack_size(int incount, rma_datatype datatype, rma_comm comm, int *size)
{
	return packSize("rma_pack_size", incount, datatype, comm, size);
}

RMA_EXPORT int rma_pack_size_c(rma_count incount, rma_datatype datatype, rma_comm comm, rma_count *size)
{
	return packSize("rma_pack_size_c", incount, datatype, comm, size);
}
