/* SPDX-License-Identifier: MIT */
/*
 * MPI datatypes and ops as librma's (docs/design/mpi-dropin.md §4.2, §4.3).
 *
 * A predefined MPI type maps to its librma twin by representation; one with
 * no twin becomes an opaque block of bytes of the same size and extent. A
 * derived type is decoded recursively through the envelope and contents
 * calls and rebuilt with librma's constructors; darray, which librma lacks,
 * is expanded per the standard's definition (block, cyclic, none). Each
 * derived level takes the MPI's bounds where the bound rules differ
 * (takeMpiBounds()). The result is committed and its size, extent and true
 * extent are compared with the MPI's before anyone uses it (checkShape()).
 *
 * No MPI call here raises an MPI error on a valid type (types_test checks
 * it with a counting handler). librma's constructors report a refusal to
 * RMA_COMM_SELF's handler before returning it: the shim sets
 * RMA_ERRORS_RETURN there, or a refused type aborts.
 *
 * Thread safety: translateType() and translateOp() are reentrant (each call
 * builds its own types); predefinedTypes() builds its table once, under
 * C++'s thread-safe static initialisation.
 *
 * Contents are read through the MPI-4 large-count calls when mpi.h has them
 * (RMAMPI_HAVE_LARGE_COUNT: MPICH 4), else through the int ones (Open MPI
 * 4.1). A type made by an MPI-4 _c constructor lists its count arguments in
 * a separate large-count array; ArgReader hides which layout a type has, and
 * every type is rebuilt with librma's _c constructors.
 *
 * Only mpi.h names are used, never their values: MPICH's handles are ints,
 * Open MPI's pointers, and their constants differ. All MPI calls are PMPI_:
 * the shim defines the MPI_ ones.
 */
#include "mpi/types.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <utility>
#include <vector>

/*
 * The MPI-1 names removed in MPI-3 (MPI_COMBINER_HVECTOR_INTEGER and the
 * like): MPICH still defines them; Open MPI 4.1 defines them as compile-time
 * errors unless it was built with MPI-1 compatibility.
 */
#if defined(OPEN_MPI) && !OMPI_ENABLE_MPI1_COMPAT
#define RMAMPI_HAVE_MPI1_NAMES 0
#else
#define RMAMPI_HAVE_MPI1_NAMES 1
#endif

namespace rmampi {

namespace {

/* A librma type this file made (freed on destruction) or a predefined one (never freed). */
class RmaType
{
public:
	RmaType() = default;
	RmaType(rma_datatype type, bool predefined, bool opaque) : type_(type), predefined_(predefined), opaque_(opaque)
	{
	}
	RmaType(const RmaType &) = delete;
	RmaType &operator=(const RmaType &) = delete;
	RmaType(RmaType &&o) noexcept
	    : type_(std::exchange(o.type_, RMA_DATATYPE_NULL)), predefined_(o.predefined_), opaque_(o.opaque_)
	{
	}
	RmaType &operator=(RmaType &&o) noexcept
	{
		std::swap(type_, o.type_);
		std::swap(predefined_, o.predefined_);
		std::swap(opaque_, o.opaque_);
		return *this;
	}
	~RmaType()
	{
		if (type_ != RMA_DATATYPE_NULL && !predefined_)
			rma_type_free(&type_);
	}

	rma_datatype get() const { return type_; }
	bool predefined() const { return predefined_; }
	bool opaque() const { return opaque_; }
	void setOpaque(bool opaque) { opaque_ = opaque; }
	[[nodiscard]] rma_datatype release() { return std::exchange(type_, RMA_DATATYPE_NULL); }

private:
	rma_datatype type_ = RMA_DATATYPE_NULL;
	bool predefined_ = false;
	bool opaque_ = false;
};

/* The types a get_contents call returned: derived ones are freed, as the standard requires. */
class ContentTypes
{
public:
	ContentTypes() = default;
	ContentTypes(const ContentTypes &) = delete;
	ContentTypes &operator=(const ContentTypes &) = delete;
	~ContentTypes()
	{
		for (MPI_Datatype &t : types)
			if (mustFree(t))
				PMPI_Type_free(&t);
	}

	std::vector<MPI_Datatype> types;

private:
	/*
	 * Named types are predefined; the f90 types are predefined too (the
	 * standard forbids freeing them) though their combiner is not NAMED.
	 */
	static bool mustFree(MPI_Datatype t)
	{
		int combiner;
#if RMAMPI_HAVE_LARGE_COUNT
		/* MPICH refuses the int envelope of a type made by a _c constructor (an error, fatal by default). */
		MPI_Count ni, na, nc, nd;
		if (t == MPI_DATATYPE_NULL || PMPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner) != MPI_SUCCESS)
			return false;
#else
		int ni, na, nd;
		if (t == MPI_DATATYPE_NULL || PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
			return false;
#endif
		return combiner != MPI_COMBINER_NAMED && combiner != MPI_COMBINER_F90_REAL &&
		       combiner != MPI_COMBINER_F90_COMPLEX && combiner != MPI_COMBINER_F90_INTEGER;
	}
};

/* What get_envelope and get_contents said about one type. */
struct Contents {
	int combiner = MPI_COMBINER_NAMED;
	std::vector<int> ints;
	std::vector<MPI_Aint> addresses;
	/* Non-empty only for a type made by an MPI-4 _c constructor. */
	std::vector<MPI_Count> counts;
	ContentTypes types;
};

/*
 * Reads a combiner's arguments in the order of its constructor's parameters.
 * integer() and address() are the standard's "integer" and "address"
 * arguments of the int constructors; a _c constructor lists both in the
 * large-count array instead, in the same order. small() is an argument that
 * stays an int in both (ndims, order, distribs, ...).
 */
class ArgReader
{
public:
	explicit ArgReader(const Contents &c) : c_(c), large_(!c.counts.empty()) {}

	rma_count integer() { return large_ ? next(c_.counts, counts_) : next(c_.ints, ints_); }
	rma_count address() { return large_ ? next(c_.counts, counts_) : next(c_.addresses, addresses_); }
	int small() { return next(c_.ints, ints_); }
	std::vector<rma_count> integers(rma_count n) { return many(n, &ArgReader::integer); }
	std::vector<rma_count> addresses(rma_count n) { return many(n, &ArgReader::address); }
	std::vector<int> smalls(rma_count n)
	{
		std::vector<int> v;
		for (rma_count k = 0; k < n && !short_; ++k)
			v.push_back(small());
		return v;
	}
	/* A read went past what the MPI returned (the values read then were 0). */
	bool tooShort() const { return short_; }

private:
	template <typename T> rma_count next(const std::vector<T> &v, size_t &at)
	{
		if (at >= v.size()) {
			short_ = true;
			return 0;
		}
		return static_cast<rma_count>(v[at++]);
	}
	std::vector<rma_count> many(rma_count n, rma_count (ArgReader::*one)())
	{
		std::vector<rma_count> v;
		for (rma_count k = 0; k < n && !short_; ++k)
			v.push_back((this->*one)());
		return v;
	}

	const Contents &c_;
	bool large_;
	bool short_ = false;
	size_t ints_ = 0;
	size_t addresses_ = 0;
	size_t counts_ = 0;
};

const char *combinerName(int combiner)
{
	switch (combiner) {
	case MPI_COMBINER_NAMED:
		return "NAMED";
	case MPI_COMBINER_DUP:
		return "DUP";
	case MPI_COMBINER_CONTIGUOUS:
		return "CONTIGUOUS";
	case MPI_COMBINER_VECTOR:
		return "VECTOR";
	case MPI_COMBINER_HVECTOR:
		return "HVECTOR";
	case MPI_COMBINER_INDEXED:
		return "INDEXED";
	case MPI_COMBINER_HINDEXED:
		return "HINDEXED";
	case MPI_COMBINER_INDEXED_BLOCK:
		return "INDEXED_BLOCK";
	case MPI_COMBINER_HINDEXED_BLOCK:
		return "HINDEXED_BLOCK";
	case MPI_COMBINER_STRUCT:
		return "STRUCT";
	case MPI_COMBINER_SUBARRAY:
		return "SUBARRAY";
	case MPI_COMBINER_DARRAY:
		return "DARRAY";
	case MPI_COMBINER_F90_REAL:
		return "F90_REAL";
	case MPI_COMBINER_F90_COMPLEX:
		return "F90_COMPLEX";
	case MPI_COMBINER_F90_INTEGER:
		return "F90_INTEGER";
	case MPI_COMBINER_RESIZED:
		return "RESIZED";
#if RMAMPI_HAVE_MPI1_NAMES
	case MPI_COMBINER_HVECTOR_INTEGER:
		return "HVECTOR_INTEGER";
	case MPI_COMBINER_HINDEXED_INTEGER:
		return "HINDEXED_INTEGER";
	case MPI_COMBINER_STRUCT_INTEGER:
		return "STRUCT_INTEGER";
#endif
	default:
		return "unknown";
	}
}

[[gnu::format(printf, 1, 2)]] std::string format(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return buf;
}

/*
 * A librma call failed: its message into @why, its class as an MPI one
 * (RMA_ERR_NO_MEM: an irregular type beyond librma's limits; anything else
 * is a type librma would not build, so undecodable).
 */
int rmaFailure(int rc, const char *what, int combiner, std::string &why)
{
	char msg[RMA_MAX_ERROR_STRING] = "";
	int len = 0;
	rma_error_string(rc, msg, &len);
	why = format("%s for an MPI %s type failed: %s", what, combinerName(combiner), msg);
	int cls = rc;
	rma_error_class(rc, &cls);
	return cls == RMA_ERR_NO_MEM ? MPI_ERR_NO_MEM : MPI_ERR_TYPE;
}

/* ---- Predefined types ------------------------------------------------------ */

struct Twin {
	MPI_Datatype mpi;
	rma_datatype rma;
};

/*
 * Every predefined name of this mpi.h with a librma twin of the same
 * representation. Fortran and C++ types map by representation (§4.2), the
 * sizes checked at run time by predefinedTypes(). Not here, so opaque:
 * MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2COMPLEX, MPI_CHARACTER, MPI_REAL2,
 * MPI_INTEGER16 and MPI_REAL16/MPI_COMPLEX32 (gfortran's REAL(16) is IEEE
 * binary128, not the x87 format of RMA_LONG_DOUBLE: a sum would be wrong).
 */
std::vector<Twin> twinCandidates()
{
	std::vector<Twin> v = {
		/* C */
		{ MPI_CHAR, RMA_CHAR },
		{ MPI_SIGNED_CHAR, RMA_SIGNED_CHAR },
		{ MPI_UNSIGNED_CHAR, RMA_UNSIGNED_CHAR },
		{ MPI_BYTE, RMA_BYTE },
		{ MPI_WCHAR, RMA_WCHAR },
		{ MPI_SHORT, RMA_SHORT },
		{ MPI_UNSIGNED_SHORT, RMA_UNSIGNED_SHORT },
		{ MPI_INT, RMA_INT },
		{ MPI_UNSIGNED, RMA_UNSIGNED },
		{ MPI_LONG, RMA_LONG },
		{ MPI_UNSIGNED_LONG, RMA_UNSIGNED_LONG },
		{ MPI_LONG_LONG_INT, RMA_LONG_LONG_INT },
		{ MPI_UNSIGNED_LONG_LONG, RMA_UNSIGNED_LONG_LONG },
		{ MPI_FLOAT, RMA_FLOAT },
		{ MPI_DOUBLE, RMA_DOUBLE },
		{ MPI_LONG_DOUBLE, RMA_LONG_DOUBLE },
		{ MPI_C_BOOL, RMA_C_BOOL },
		{ MPI_INT8_T, RMA_INT8_T },
		{ MPI_INT16_T, RMA_INT16_T },
		{ MPI_INT32_T, RMA_INT32_T },
		{ MPI_INT64_T, RMA_INT64_T },
		{ MPI_UINT8_T, RMA_UINT8_T },
		{ MPI_UINT16_T, RMA_UINT16_T },
		{ MPI_UINT32_T, RMA_UINT32_T },
		{ MPI_UINT64_T, RMA_UINT64_T },
		{ MPI_C_FLOAT_COMPLEX, RMA_C_FLOAT_COMPLEX },
		{ MPI_C_DOUBLE_COMPLEX, RMA_C_DOUBLE_COMPLEX },
		{ MPI_C_LONG_DOUBLE_COMPLEX, RMA_C_LONG_DOUBLE_COMPLEX },
		{ MPI_AINT, RMA_AINT },
		{ MPI_OFFSET, RMA_OFFSET },
		{ MPI_COUNT, RMA_COUNT },
		{ MPI_PACKED, RMA_PACKED },
		{ MPI_FLOAT_INT, RMA_FLOAT_INT },
		{ MPI_DOUBLE_INT, RMA_DOUBLE_INT },
		{ MPI_LONG_INT, RMA_LONG_INT },
		{ MPI_2INT, RMA_2INT },
		{ MPI_SHORT_INT, RMA_SHORT_INT },
		{ MPI_LONG_DOUBLE_INT, RMA_LONG_DOUBLE_INT },
		/* Fortran, by representation (LOGICAL: gfortran's 0/1 make C's LAND/LOR agree) */
		{ MPI_INTEGER, RMA_INT32_T },
		{ MPI_REAL, RMA_FLOAT },
		{ MPI_DOUBLE_PRECISION, RMA_DOUBLE },
		{ MPI_COMPLEX, RMA_C_FLOAT_COMPLEX },
		{ MPI_DOUBLE_COMPLEX, RMA_C_DOUBLE_COMPLEX },
		{ MPI_LOGICAL, RMA_INT32_T },
		{ MPI_2INTEGER, RMA_2INT },
		/* C++ */
		{ MPI_CXX_BOOL, RMA_C_BOOL },
		{ MPI_CXX_FLOAT_COMPLEX, RMA_C_FLOAT_COMPLEX },
		{ MPI_CXX_DOUBLE_COMPLEX, RMA_C_DOUBLE_COMPLEX },
		{ MPI_CXX_LONG_DOUBLE_COMPLEX, RMA_C_LONG_DOUBLE_COMPLEX },
	};
	/* Aliases and optional names: not every mpi.h has them. */
#ifdef MPI_LONG_LONG
	v.push_back({ MPI_LONG_LONG, RMA_LONG_LONG });
#endif
#ifdef MPI_C_COMPLEX
	v.push_back({ MPI_C_COMPLEX, RMA_C_FLOAT_COMPLEX });
#endif
#ifdef MPI_CXX_COMPLEX
	v.push_back({ MPI_CXX_COMPLEX, RMA_C_FLOAT_COMPLEX });
#endif
#ifdef MPI_INTEGER1
	v.push_back({ MPI_INTEGER1, RMA_INT8_T });
#endif
#ifdef MPI_INTEGER2
	v.push_back({ MPI_INTEGER2, RMA_INT16_T });
#endif
#ifdef MPI_INTEGER4
	v.push_back({ MPI_INTEGER4, RMA_INT32_T });
#endif
#ifdef MPI_INTEGER8
	v.push_back({ MPI_INTEGER8, RMA_INT64_T });
#endif
#ifdef MPI_LOGICAL1
	v.push_back({ MPI_LOGICAL1, RMA_INT8_T });
#endif
#ifdef MPI_LOGICAL2
	v.push_back({ MPI_LOGICAL2, RMA_INT16_T });
#endif
#ifdef MPI_LOGICAL4
	v.push_back({ MPI_LOGICAL4, RMA_INT32_T });
#endif
#ifdef MPI_LOGICAL8
	v.push_back({ MPI_LOGICAL8, RMA_INT64_T });
#endif
#ifdef MPI_REAL4
	v.push_back({ MPI_REAL4, RMA_FLOAT });
#endif
#ifdef MPI_REAL8
	v.push_back({ MPI_REAL8, RMA_DOUBLE });
#endif
#ifdef MPI_COMPLEX8
	v.push_back({ MPI_COMPLEX8, RMA_C_FLOAT_COMPLEX });
#endif
#ifdef MPI_COMPLEX16
	v.push_back({ MPI_COMPLEX16, RMA_C_DOUBLE_COMPLEX });
#endif
	return v;
}

/* Same size, lower bound and extent: the layouts agree (the twin's representation is the name's). */
bool sameShape(MPI_Datatype m, rma_datatype r)
{
	MPI_Count msize, mlb, mextent;
	rma_count rsize, rlb, rextent;
	if (PMPI_Type_size_x(m, &msize) != MPI_SUCCESS || PMPI_Type_get_extent_x(m, &mlb, &mextent) != MPI_SUCCESS)
		return false;
	if (rma_type_size_x(r, &rsize) != RMA_SUCCESS || rma_type_get_extent_x(r, &rlb, &rextent) != RMA_SUCCESS)
		return false;
	return msize == rsize && mlb == rlb && mextent == rextent;
}

bool findTwin(MPI_Datatype type, rma_datatype &out)
{
	for (const auto &[m, r] : predefinedTypes()) {
		if (m == type) {
			out = r;
			return true;
		}
	}
	return false;
}

/* The MPI's name of @type into librma's type (error messages name it); "" leaves it unnamed. */
void copyName(MPI_Datatype type, rma_datatype r)
{
	char name[MPI_MAX_OBJECT_NAME] = "";
	int len = 0;
	if (PMPI_Type_get_name(type, name, &len) == MPI_SUCCESS && len > 0 && len < RMA_MAX_OBJECT_NAME)
		rma_type_set_name(r, name);
}

/*
 * A basic type with no twin: its bytes, at the MPI's lower bound and extent.
 * put/get move it; accumulate must refuse it (TypeEntry::opaque).
 */
int makeOpaque(MPI_Datatype type, int combiner, RmaType &out, std::string &why)
{
	MPI_Count size, lb, extent;
	if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS) {
		why = format("the size of an MPI %s type without a librma twin is unknown", combinerName(combiner));
		return MPI_ERR_TYPE;
	}
	rma_datatype bytes;
	if (int rc = rma_type_contiguous_c(size, RMA_BYTE, &bytes))
		return rmaFailure(rc, "rma_type_contiguous_c", combiner, why);
	RmaType t(bytes, false, true);
	if (lb != 0 || extent != size) {
		rma_datatype resized;
		if (int rc = rma_type_create_resized_c(t.get(), lb, extent, &resized))
			return rmaFailure(rc, "rma_type_create_resized_c", combiner, why);
		t = RmaType(resized, false, true);
	}
	copyName(type, t.get());
	out = std::move(t);
	return MPI_SUCCESS;
}

/* An f90 type (MPI_Type_create_f90_*): by its size, a twin of that representation, else opaque. */
int decodeF90(MPI_Datatype type, int combiner, RmaType &out, std::string &why)
{
	MPI_Count size = 0;
	PMPI_Type_size_x(type, &size);
	rma_datatype twin = RMA_DATATYPE_NULL;
	if (combiner == MPI_COMBINER_F90_REAL) {
		/* 16: IEEE binary128 in gfortran, not RMA_LONG_DOUBLE's x87 format. */
		twin = size == 4 ? RMA_FLOAT : size == 8 ? RMA_DOUBLE : RMA_DATATYPE_NULL;
	} else if (combiner == MPI_COMBINER_F90_COMPLEX) {
		twin = size == 8 ? RMA_C_FLOAT_COMPLEX : size == 16 ? RMA_C_DOUBLE_COMPLEX : RMA_DATATYPE_NULL;
	} else {
		twin = size == 1   ? RMA_INT8_T
		       : size == 2 ? RMA_INT16_T
		       : size == 4 ? RMA_INT32_T
		       : size == 8 ? RMA_INT64_T
				   : RMA_DATATYPE_NULL;
	}
	if (twin != RMA_DATATYPE_NULL && sameShape(type, twin)) {
		out = RmaType(twin, true, false);
		return MPI_SUCCESS;
	}
	return makeOpaque(type, combiner, out, why);
}

/* ---- Derived types --------------------------------------------------------- */

int getContents(MPI_Datatype type, Contents &c, std::string &why)
{
#if RMAMPI_HAVE_LARGE_COUNT
	MPI_Count ni, na, nc, nd;
	if (PMPI_Type_get_envelope_c(type, &ni, &na, &nc, &nd, &c.combiner) != MPI_SUCCESS) {
		why = "PMPI_Type_get_envelope_c failed";
		return MPI_ERR_TYPE;
	}
#else
	int ni, na, nd;
	if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &c.combiner) != MPI_SUCCESS) {
		why = "PMPI_Type_get_envelope failed";
		return MPI_ERR_TYPE;
	}
#endif
	if (c.combiner == MPI_COMBINER_NAMED || c.combiner == MPI_COMBINER_F90_REAL ||
	    c.combiner == MPI_COMBINER_F90_COMPLEX || c.combiner == MPI_COMBINER_F90_INTEGER)
		return MPI_SUCCESS; /* get_contents is erroneous on named types; f90 ones decode by size */
	c.ints.resize(ni);
	c.addresses.resize(na);
	c.types.types.assign(nd, MPI_DATATYPE_NULL);
#if RMAMPI_HAVE_LARGE_COUNT
	c.counts.resize(nc);
	int rc = PMPI_Type_get_contents_c(type, ni, na, nc, nd, c.ints.data(), c.addresses.data(), c.counts.data(),
					  c.types.types.data());
#else
	int rc = PMPI_Type_get_contents(type, ni, na, nd, c.ints.data(), c.addresses.data(), c.types.types.data());
#endif
	if (rc != MPI_SUCCESS) {
		c.types.types.clear(); /* nothing was handed out */
		why = format("PMPI_Type_get_contents failed on an MPI %s type", combinerName(c.combiner));
		return MPI_ERR_TYPE;
	}
	return MPI_SUCCESS;
}

int decode(MPI_Datatype type, RmaType &out, std::string &why);

/* The shape of one darray dimension (the standard's block and cyclic helpers, NONE as a block on one process). */
struct DarrayDim {
	rma_count gsize;
	int distrib;
	int darg;
	int psize;
	int coord;
};

/*
 * One dimension of a darray over @inner (extent @innerExtent): this
 * process's elements of the dimension, in a type of lower bound 0 and
 * extent gsize x innerExtent, so the next dimension strides over whole rows.
 */
int darrayDimension(const DarrayDim &d, const RmaType &inner, rma_count innerExtent, RmaType &out, std::string &why)
{
	std::vector<rma_count> blocklengths, displacements;
	std::vector<rma_datatype> types;
	RmaType vec;
	if (d.distrib == MPI_DISTRIBUTE_CYCLIC) {
		rma_count blk = d.darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : d.darg;
		rma_count first = d.coord * blk;
		rma_count step = blk * d.psize;
		/* Blocks at first, first + step, ...: whole ones, then maybe a short last one. */
		rma_count nblocks = first < d.gsize ? (d.gsize - first + step - 1) / step : 0;
		rma_count lastStart = first + (nblocks - 1) * step;
		rma_count lastLength = nblocks > 0 ? std::min(blk, d.gsize - lastStart) : 0;
		rma_count whole = lastLength == blk ? nblocks : nblocks - 1;
		if (whole > 0) {
			rma_datatype v;
			if (int rc = rma_type_create_hvector_c(whole, blk, step * innerExtent, inner.get(), &v))
				return rmaFailure(rc, "rma_type_create_hvector_c (darray cyclic)", MPI_COMBINER_DARRAY,
						  why);
			vec = RmaType(v, false, false);
			blocklengths.push_back(1);
			displacements.push_back(first * innerExtent);
			types.push_back(vec.get());
		}
		if (nblocks > 0 && lastLength < blk) {
			blocklengths.push_back(lastLength);
			displacements.push_back(lastStart * innerExtent);
			types.push_back(inner.get());
		}
	} else {
		/* BLOCK, or NONE: the whole dimension on its one process. */
		int psize = d.distrib == MPI_DISTRIBUTE_NONE ? 1 : d.psize;
		int coord = d.distrib == MPI_DISTRIBUTE_NONE ? 0 : d.coord;
		rma_count blk = d.distrib == MPI_DISTRIBUTE_NONE || d.darg == MPI_DISTRIBUTE_DFLT_DARG
					? (d.gsize + psize - 1) / psize
					: d.darg;
		rma_count start = coord * blk;
		rma_count mine = std::max<rma_count>(0, std::min(blk, d.gsize - start));
		if (mine > 0) {
			blocklengths.push_back(mine);
			displacements.push_back(start * innerExtent);
			types.push_back(inner.get());
		}
	}
	rma_datatype placed;
	if (int rc = rma_type_create_struct_c(static_cast<rma_count>(types.size()), blocklengths.data(),
					      displacements.data(), types.data(), &placed))
		return rmaFailure(rc, "rma_type_create_struct_c (darray)", MPI_COMBINER_DARRAY, why);
	RmaType p(placed, false, false);
	rma_datatype resized;
	if (int rc = rma_type_create_resized_c(p.get(), 0, d.gsize * innerExtent, &resized))
		return rmaFailure(rc, "rma_type_create_resized_c (darray)", MPI_COMBINER_DARRAY, why);
	out = RmaType(resized, false, false);
	return MPI_SUCCESS;
}

/*
 * MPI_Type_create_darray per the standard: process @rank's coordinates in a
 * row-major grid of @psizes, then one dimension at a time from the fastest
 * (the last for MPI_ORDER_C, the first for MPI_ORDER_FORTRAN), each nesting
 * the previous; lower bound 0 and extent prod(gsizes) x extent(oldtype).
 */
int expandDarray(int rank, const std::vector<rma_count> &gsizes, const std::vector<int> &distribs,
		 const std::vector<int> &dargs, const std::vector<int> &psizes, int order, RmaType old, RmaType &out,
		 std::string &why)
{
	int ndims = static_cast<int>(gsizes.size());
	if (ndims == 0) {
		why = "an MPI DARRAY type with ndims 0";
		return MPI_ERR_TYPE;
	}
	std::vector<int> coords(ndims);
	for (int i = ndims - 1, r = rank; i >= 0; --i) {
		coords[i] = psizes[i] > 0 ? r % psizes[i] : 0;
		r = psizes[i] > 0 ? r / psizes[i] : 0;
	}
	rma_count lb, extent;
	if (int rc = rma_type_get_extent_x(old.get(), &lb, &extent))
		return rmaFailure(rc, "rma_type_get_extent_x (darray)", MPI_COMBINER_DARRAY, why);
	bool opaque = old.opaque();
	RmaType cur = std::move(old);
	rma_count curExtent = extent;
	for (int k = 0; k < ndims; ++k) {
		int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
		RmaType next;
		DarrayDim d{ gsizes[i], distribs[i], dargs[i], psizes[i], coords[i] };
		if (int rc = darrayDimension(d, cur, curExtent, next, why))
			return rc;
		cur = std::move(next);
		curExtent *= gsizes[i];
	}
	cur.setOpaque(opaque);
	out = std::move(cur);
	return MPI_SUCCESS;
}

int orderOf(int mpiOrder)
{
	return mpiOrder == MPI_ORDER_FORTRAN ? RMA_ORDER_FORTRAN : RMA_ORDER_C;
}

/* MPI-1's bound markers (MPICH keeps them; removed in MPI-3). */
bool isBoundMarker([[maybe_unused]] MPI_Datatype t)
{
#if RMAMPI_HAVE_MPI1_NAMES && defined(MPI_LB) && defined(MPI_UB)
	return t == MPI_LB || t == MPI_UB;
#else
	return false;
#endif
}

/*
 * A derived type from its contents; its children are decoded first. A
 * struct's MPI_LB/MPI_UB members are left out: the bounds they set are the
 * MPI's, which takeMpiBounds() gives the result.
 */
int build(const Contents &c, RmaType &out, std::string &why)
{
	std::vector<RmaType> children;
	bool opaque = false;
	bool markers = false;
	for (MPI_Datatype t : c.types.types) {
		RmaType child;
		if (isBoundMarker(t)) {
			markers = true;
		} else if (int rc = decode(t, child, why)) {
			return rc;
		}
		opaque = opaque || child.opaque();
		children.push_back(std::move(child));
	}
	if (children.empty()) {
		why = format("an MPI %s type lists no old type", combinerName(c.combiner));
		return MPI_ERR_TYPE;
	}
	if (markers && c.combiner != MPI_COMBINER_STRUCT
#if RMAMPI_HAVE_MPI1_NAMES
	    && c.combiner != MPI_COMBINER_STRUCT_INTEGER
#endif
	) {
		why = format("an MPI %s type of MPI_LB or MPI_UB", combinerName(c.combiner));
		return MPI_ERR_TYPE;
	}
	if (c.combiner == MPI_COMBINER_DUP) {
		/* A fresh translation is a distinct handle already. */
		out = std::move(children[0]);
		return MPI_SUCCESS;
	}

	ArgReader a(c);
	rma_datatype old = children[0].get();
	rma_datatype made = RMA_DATATYPE_NULL;
	int rc = RMA_SUCCESS;
	const char *call = "";
	switch (c.combiner) {
	case MPI_COMBINER_CONTIGUOUS: {
		call = "rma_type_contiguous_c";
		rma_count count = a.integer();
		rc = rma_type_contiguous_c(count, old, &made);
		break;
	}
	case MPI_COMBINER_VECTOR: {
		call = "rma_type_vector_c";
		rma_count count = a.integer(), blocklength = a.integer(), stride = a.integer();
		rc = rma_type_vector_c(count, blocklength, stride, old, &made);
		break;
	}
#if RMAMPI_HAVE_MPI1_NAMES
	case MPI_COMBINER_HVECTOR_INTEGER: /* same contents as HVECTOR */
#endif
	case MPI_COMBINER_HVECTOR: {
		call = "rma_type_create_hvector_c";
		rma_count count = a.integer(), blocklength = a.integer(), stride = a.address();
		rc = rma_type_create_hvector_c(count, blocklength, stride, old, &made);
		break;
	}
	case MPI_COMBINER_INDEXED: {
		call = "rma_type_indexed_c";
		rma_count count = a.integer();
		std::vector<rma_count> blocklengths = a.integers(count), displacements = a.integers(count);
		if (!a.tooShort())
			rc = rma_type_indexed_c(count, blocklengths.data(), displacements.data(), old, &made);
		break;
	}
#if RMAMPI_HAVE_MPI1_NAMES
	case MPI_COMBINER_HINDEXED_INTEGER: /* same contents as HINDEXED */
#endif
	case MPI_COMBINER_HINDEXED: {
		call = "rma_type_create_hindexed_c";
		rma_count count = a.integer();
		std::vector<rma_count> blocklengths = a.integers(count), displacements = a.addresses(count);
		if (!a.tooShort())
			rc = rma_type_create_hindexed_c(count, blocklengths.data(), displacements.data(), old, &made);
		break;
	}
	case MPI_COMBINER_INDEXED_BLOCK: {
		call = "rma_type_create_indexed_block_c";
		rma_count count = a.integer(), blocklength = a.integer();
		std::vector<rma_count> displacements = a.integers(count);
		if (!a.tooShort())
			rc = rma_type_create_indexed_block_c(count, blocklength, displacements.data(), old, &made);
		break;
	}
	case MPI_COMBINER_HINDEXED_BLOCK: {
		call = "rma_type_create_hindexed_block_c";
		rma_count count = a.integer(), blocklength = a.integer();
		std::vector<rma_count> displacements = a.addresses(count);
		if (!a.tooShort())
			rc = rma_type_create_hindexed_block_c(count, blocklength, displacements.data(), old, &made);
		break;
	}
#if RMAMPI_HAVE_MPI1_NAMES
	case MPI_COMBINER_STRUCT_INTEGER: /* same contents as STRUCT */
#endif
	case MPI_COMBINER_STRUCT: {
		call = "rma_type_create_struct_c";
		rma_count count = a.integer();
		std::vector<rma_count> blocklengths = a.integers(count), displacements = a.addresses(count);
		if (count != static_cast<rma_count>(children.size())) {
			why = format("an MPI STRUCT type of %lld blocks lists %zu types", static_cast<long long>(count),
				     children.size());
			return MPI_ERR_TYPE;
		}
		std::vector<rma_datatype> types;
		size_t kept = 0;
		for (size_t k = 0; k < children.size() && !a.tooShort(); ++k) {
			if (children[k].get() == RMA_DATATYPE_NULL)
				continue; /* a bound marker */
			blocklengths[kept] = blocklengths[k];
			displacements[kept] = displacements[k];
			types.push_back(children[k].get());
			++kept;
		}
		if (!a.tooShort())
			rc = rma_type_create_struct_c(static_cast<rma_count>(kept), blocklengths.data(),
						      displacements.data(), types.data(), &made);
		break;
	}
	case MPI_COMBINER_SUBARRAY: {
		call = "rma_type_create_subarray_c";
		int ndims = a.small();
		std::vector<rma_count> sizes = a.integers(ndims), subsizes = a.integers(ndims),
				       starts = a.integers(ndims);
		int order = a.small();
		if (!a.tooShort())
			rc = rma_type_create_subarray_c(ndims, sizes.data(), subsizes.data(), starts.data(),
							orderOf(order), old, &made);
		break;
	}
	case MPI_COMBINER_DARRAY: {
		a.small(); /* size: the grid's product says it */
		int rank = a.small(), ndims = a.small();
		std::vector<rma_count> gsizes = a.integers(ndims);
		std::vector<int> distribs = a.smalls(ndims), dargs = a.smalls(ndims), psizes = a.smalls(ndims);
		int order = a.small();
		if (a.tooShort())
			break;
		children[0].setOpaque(opaque);
		return expandDarray(rank, gsizes, distribs, dargs, psizes, order, std::move(children[0]), out, why);
	}
	case MPI_COMBINER_RESIZED: {
		call = "rma_type_create_resized_c";
		rma_count lb = a.address(), extent = a.address();
		rc = rma_type_create_resized_c(old, lb, extent, &made);
		break;
	}
	default:
		why = format("an MPI type of combiner %s (%d) cannot be decoded", combinerName(c.combiner), c.combiner);
		return MPI_ERR_TYPE;
	}
	if (a.tooShort()) {
		why = format("PMPI_Type_get_contents returned fewer arguments than an MPI %s type has",
			     combinerName(c.combiner));
		return MPI_ERR_TYPE;
	}
	if (rc != RMA_SUCCESS)
		return rmaFailure(rc, call, c.combiner, why);
	out = RmaType(made, false, opaque);
	return MPI_SUCCESS;
}

/*
 * The data of a derived type is rebuilt from its contents; its bounds are
 * the MPI's, taken at every level so that types built over it stride as
 * the MPI's do. The MPIs' bound rules differ from each other and from
 * librma's (measured with MPICH 4.0.2 and Open MPI 4.1.4):
 *  - Open MPI rounds the extent of hvector, hindexed and hindexed_block up
 *    to the alignment of their basic types (the standard's ε); MPICH and
 *    librma round structs only.
 *  - Open MPI takes a struct's bounds from its resized (marker) members
 *    alone, as MPI-1's markers did; MPICH also counts data beyond them.
 *  - MPICH drops the bounds of an empty type made of empty resized ones;
 *    Open MPI keeps them.
 *  - MPI-1's MPI_LB/MPI_UB members (MPICH) are dropped by build().
 * A type whose lower bound or extent differs from the MPI's is resized to
 * the MPI's. What this cannot fix, a misplaced byte, still shows in the size
 * or true extent that checkShape() compares.
 */
int takeMpiBounds(MPI_Datatype type, int combiner, RmaType &t, std::string &why)
{
	MPI_Count mlb, mextent;
	rma_count rlb, rextent;
	if (PMPI_Type_get_extent_x(type, &mlb, &mextent) != MPI_SUCCESS ||
	    rma_type_get_extent_x(t.get(), &rlb, &rextent) != RMA_SUCCESS)
		return MPI_SUCCESS; /* checkShape() reports it */
	if (mlb == rlb && mextent == rextent)
		return MPI_SUCCESS;
	rma_datatype resized;
	if (int rc = rma_type_create_resized_c(t.get(), mlb, mextent, &resized))
		return rmaFailure(rc, "rma_type_create_resized_c (the MPI's bounds)", combiner, why);
	t = RmaType(resized, false, t.opaque());
	return MPI_SUCCESS;
}

int decode(MPI_Datatype type, RmaType &out, std::string &why)
{
	if (type == MPI_DATATYPE_NULL) {
		why = "MPI_DATATYPE_NULL is not a datatype";
		return MPI_ERR_TYPE;
	}
	Contents c;
	if (int rc = getContents(type, c, why))
		return rc;
	switch (c.combiner) {
	case MPI_COMBINER_NAMED: {
		rma_datatype twin;
		if (findTwin(type, twin)) {
			out = RmaType(twin, true, false);
			return MPI_SUCCESS;
		}
		return makeOpaque(type, c.combiner, out, why);
	}
	case MPI_COMBINER_F90_REAL:
	case MPI_COMBINER_F90_COMPLEX:
	case MPI_COMBINER_F90_INTEGER:
		return decodeF90(type, c.combiner, out, why);
	default:
		break;
	}
	if (int rc = build(c, out, why))
		return rc;
	return takeMpiBounds(type, c.combiner, out, why);
}

/* librma's size, extent and true extent against the MPI's: a difference is a bug of this file. */
int checkShape(MPI_Datatype type, rma_datatype r, std::string &why)
{
	MPI_Count msize, mlb, mextent, mtlb, mtextent;
	rma_count rsize, rlb, rextent, rtlb, rtextent;
	if (PMPI_Type_size_x(type, &msize) != MPI_SUCCESS ||
	    PMPI_Type_get_extent_x(type, &mlb, &mextent) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent_x(type, &mtlb, &mtextent) != MPI_SUCCESS) {
		why = "the MPI's size or extent of the type is unknown";
		return MPI_ERR_TYPE;
	}
	if (rma_type_size_x(r, &rsize) != RMA_SUCCESS || rma_type_get_extent_x(r, &rlb, &rextent) != RMA_SUCCESS ||
	    rma_type_get_true_extent_x(r, &rtlb, &rtextent) != RMA_SUCCESS) {
		why = "librma's size or extent of the translated type is unknown";
		return MPI_ERR_INTERN;
	}
	auto ll = [](auto v) { return static_cast<long long>(v); };
	if (msize != rsize) {
		why = format("size: MPI_Type_size_x %lld, rma_type_size_x %lld", ll(msize), ll(rsize));
		return MPI_ERR_INTERN;
	}
	if (mlb != rlb || mextent != rextent) {
		why = format(
			"extent: MPI_Type_get_extent_x lb %lld extent %lld, rma_type_get_extent_x lb %lld extent %lld",
			ll(mlb), ll(mextent), ll(rlb), ll(rextent));
		return MPI_ERR_INTERN;
	}
	/*
	 * The bytes librma touches must lie within the MPI's true bounds. Not
	 * equal: MPICH also counts where empty members (a zero-count block, an
	 * empty type) sit, which have no bytes in librma's type map. An empty
	 * type's true bounds mean nothing (Open MPI's lower bound is INT64_MAX).
	 */
	if (msize != 0 && (rtlb < mtlb || rtlb + rtextent > mtlb + mtextent)) {
		why = format("true extent: MPI_Type_get_true_extent_x lb %lld extent %lld, "
			     "rma_type_get_true_extent_x lb %lld extent %lld",
			     ll(mtlb), ll(mtextent), ll(rtlb), ll(rtextent));
		return MPI_ERR_INTERN;
	}
	return MPI_SUCCESS;
}

} /* namespace */

/*
 * Built at the first call, which must come after MPI_Init: PMPI_Type_size_x
 * of each name decides whether it is in (Open MPI's Fortran names exist
 * whether or not its Fortran binding was built; MPICH defines the names it
 * lacks, MPI_INTEGER16 here, as MPI_DATATYPE_NULL). The first occurrence of
 * an alias (MPI_LONG_LONG, MPI_C_COMPLEX) wins.
 */
const std::vector<std::pair<MPI_Datatype, rma_datatype>> &predefinedTypes()
{
	static const std::vector<std::pair<MPI_Datatype, rma_datatype>> table = [] {
		std::vector<std::pair<MPI_Datatype, rma_datatype>> v;
		for (const Twin &t : twinCandidates()) {
			if (t.mpi == MPI_DATATYPE_NULL || !sameShape(t.mpi, t.rma))
				continue;
			bool seen = false;
			for (const auto &e : v)
				seen = seen || e.first == t.mpi;
			if (!seen)
				v.emplace_back(t.mpi, t.rma);
		}
		return v;
	}();
	return table;
}

int translateType(MPI_Datatype type, TypeEntry &out, std::string &why)
{
	RmaType t;
	if (int rc = decode(type, t, why))
		return rc;
	if (!t.predefined()) {
		rma_datatype h = t.get();
		if (int rc = rma_type_commit(&h))
			return rmaFailure(rc, "rma_type_commit", MPI_COMBINER_NAMED, why);
	}
	if (int rc = checkShape(type, t.get(), why))
		return rc;
	out.predefined = t.predefined();
	out.opaque = t.opaque();
	out.type = t.release();
	return MPI_SUCCESS;
}

int translateOp(MPI_Op op, rma_op &out)
{
	static const std::pair<MPI_Op, rma_op> ops[] = {
		{ MPI_MAX, RMA_MAX },	      { MPI_MIN, RMA_MIN },	  { MPI_SUM, RMA_SUM },
		{ MPI_PROD, RMA_PROD },	      { MPI_LAND, RMA_LAND },	  { MPI_BAND, RMA_BAND },
		{ MPI_LOR, RMA_LOR },	      { MPI_BOR, RMA_BOR },	  { MPI_LXOR, RMA_LXOR },
		{ MPI_BXOR, RMA_BXOR },	      { MPI_MAXLOC, RMA_MAXLOC }, { MPI_MINLOC, RMA_MINLOC },
		{ MPI_REPLACE, RMA_REPLACE }, { MPI_NO_OP, RMA_NO_OP },
	};
	for (const auto &[m, r] : ops) {
		if (m == op) {
			out = r;
			return MPI_SUCCESS;
		}
	}
	return MPI_ERR_OP;
}

} /* namespace rmampi */
