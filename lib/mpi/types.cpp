/* SPDX-License-Identifier: MIT */
/*
 * TEMPORARY minimal implementation of types.h, so that the shim links and its
 * smoke test runs: the predefined C types (and the common Fortran ones) and
 * the predefined ops. Derived datatypes are refused with MPI_ERR_TYPE.
 * The full version (every combiner, docs/design/mpi-dropin.md §4.2) is being
 * written in parallel on branch mpi-types and replaces this file at merge.
 */
#include "types.h"

namespace rmampi {

const std::vector<std::pair<MPI_Datatype, rma_datatype>> &predefinedTypes()
{
	static const std::vector<std::pair<MPI_Datatype, rma_datatype>> table = [] {
		std::vector<std::pair<MPI_Datatype, rma_datatype>> t = {
			{ MPI_CHAR, RMA_CHAR },
			{ MPI_SIGNED_CHAR, RMA_SIGNED_CHAR },
			{ MPI_UNSIGNED_CHAR, RMA_UNSIGNED_CHAR },
			{ MPI_BYTE, RMA_BYTE },
			{ MPI_SHORT, RMA_SHORT },
			{ MPI_UNSIGNED_SHORT, RMA_UNSIGNED_SHORT },
			{ MPI_INT, RMA_INT },
			{ MPI_UNSIGNED, RMA_UNSIGNED },
			{ MPI_LONG, RMA_LONG },
			{ MPI_UNSIGNED_LONG, RMA_UNSIGNED_LONG },
			{ MPI_LONG_LONG_INT, RMA_LONG_LONG_INT },
			{ MPI_LONG_LONG, RMA_LONG_LONG },
			{ MPI_UNSIGNED_LONG_LONG, RMA_UNSIGNED_LONG_LONG },
			{ MPI_FLOAT, RMA_FLOAT },
			{ MPI_DOUBLE, RMA_DOUBLE },
			{ MPI_LONG_DOUBLE, RMA_LONG_DOUBLE },
			{ MPI_WCHAR, RMA_WCHAR },
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
			{ MPI_C_COMPLEX, RMA_C_COMPLEX },
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
			{ MPI_INTEGER, RMA_INT32_T },
			{ MPI_REAL, RMA_FLOAT },
			{ MPI_DOUBLE_PRECISION, RMA_DOUBLE },
		};
		/* An MPI built without Fortran defines its Fortran types as MPI_DATATYPE_NULL. */
		std::erase_if(t, [](const auto &p) { return p.first == MPI_DATATYPE_NULL; });
		return t;
	}();
	return table;
}

int translateType(MPI_Datatype type, TypeEntry &out, std::string &why)
{
	if (type == MPI_DATATYPE_NULL) {
		why = "MPI_DATATYPE_NULL";
		return MPI_ERR_TYPE;
	}
	int ni = 0, na = 0, nt = 0, combiner = 0;
	if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) != MPI_SUCCESS) {
		why = "not a datatype";
		return MPI_ERR_TYPE;
	}
	if (combiner != MPI_COMBINER_NAMED) {
		why = "derived datatypes are not translated by this build (temporary types.cpp)";
		return MPI_ERR_TYPE;
	}
	/* A predefined type with no librma twin: opaque bytes of its size. */
	int size = 0;
	PMPI_Type_size(type, &size);
	rma_datatype t = RMA_DATATYPE_NULL;
	if (rma_type_contiguous(size, RMA_BYTE, &t) != RMA_SUCCESS || rma_type_commit(&t) != RMA_SUCCESS) {
		why = "cannot make the opaque twin";
		return MPI_ERR_INTERN;
	}
	out.type = t;
	out.predefined = false;
	out.opaque = true;
	return MPI_SUCCESS;
}

int translateOp(MPI_Op op, rma_op &out)
{
	static const struct {
		MPI_Op mpi;
		rma_op rma;
	} ops[] = {
		{ MPI_MAX, RMA_MAX },	      { MPI_MIN, RMA_MIN },	  { MPI_SUM, RMA_SUM },
		{ MPI_PROD, RMA_PROD },	      { MPI_LAND, RMA_LAND },	  { MPI_BAND, RMA_BAND },
		{ MPI_LOR, RMA_LOR },	      { MPI_BOR, RMA_BOR },	  { MPI_LXOR, RMA_LXOR },
		{ MPI_BXOR, RMA_BXOR },	      { MPI_MAXLOC, RMA_MAXLOC }, { MPI_MINLOC, RMA_MINLOC },
		{ MPI_REPLACE, RMA_REPLACE }, { MPI_NO_OP, RMA_NO_OP },
	};
	for (const auto &o : ops)
		if (op == o.mpi) {
			out = o.rma;
			return MPI_SUCCESS;
		}
	return MPI_ERR_OP;
}

} /* namespace rmampi */
