/* SPDX-License-Identifier: MIT */
/*
 * Translation of MPI datatypes and ops into librma's (docs/design/mpi-dropin.md
 * §4.2, §4.3). Compiled once per MPI ABI into librmampi-<abi>.so, like every
 * file of lib/mpi: MPI_Datatype and MPI_Op are whatever that mpi.h says.
 *
 * These functions decode; they do not cache. The shim (shim.cpp) keeps the
 * MPI_Datatype -> rma_datatype hash and frees derived entries through a
 * datatype attribute's delete callback.
 */
#pragma once

#include <mpi.h>

/*
 * 1 when this mpi.h has MPI-4's large-count (_c) calls, else 0: set by
 * lib/mpi/meson.build and tests/mpi/meson.build from one header probe.
 */
#ifndef RMAMPI_HAVE_LARGE_COUNT
#error "RMAMPI_HAVE_LARGE_COUNT (0 or 1) comes from the build's header probe"
#endif

#include <rma/rma.h>

#include <string>
#include <utility>
#include <vector>

namespace rmampi {

/* What translateType() made. */
struct TypeEntry {
	rma_datatype type = RMA_DATATYPE_NULL;
	/* type is a librma predefined handle: never rma_type_free() it. */
	bool predefined = false;
	/*
	 * An MPI predefined type with no librma twin (MPI_2REAL, MPI_CHARACTER, ...):
	 * made as contiguous(size, RMA_BYTE). put/get work; accumulate with an op
	 * other than MPI_REPLACE/MPI_NO_OP must be refused with MPI_ERR_TYPE.
	 */
	bool opaque = false;
};

/*
 * Every predefined MPI datatype of this ABI with a librma twin, for the shim to
 * pre-insert into its hash (MPI_DATATYPE_NULL is not in it).
 */
const std::vector<std::pair<MPI_Datatype, rma_datatype>> &predefinedTypes();

/*
 * @type as a committed librma datatype: a predefined twin, or a new derived
 * type decoded recursively through PMPI_Type_get_envelope/get_contents (every
 * combiner, darray expanded per the standard). Checks size, extent and true
 * extent against PMPI_Type_size_x/get_extent_x/get_true_extent_x.
 * Returns MPI_SUCCESS, or an MPI error class with @why saying what failed
 * (MPI_ERR_TYPE for MPI_DATATYPE_NULL or an undecodable type, MPI_ERR_INTERN
 * for a size/extent mismatch, naming both values).
 */
int translateType(MPI_Datatype type, TypeEntry &out, std::string &why);

/*
 * A predefined MPI op (the 12 reductions, MPI_MAXLOC/MINLOC, MPI_REPLACE,
 * MPI_NO_OP) as librma's. Returns MPI_SUCCESS, or MPI_ERR_OP for any other
 * op (user-defined, MPI_OP_NULL).
 */
int translateOp(MPI_Op op, rma_op &out);

} /* namespace rmampi */
