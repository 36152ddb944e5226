/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the datatype suites: owned type handles, the engine's
 * view of a handle, and the reference of a handle. Error helpers
 * (errorClassOf, errorText) come from the window suites' util.
 */
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <rma/rma.h>

#include "datatype/datatype.h"
#include "datatype/type_map_reference.h"
#include "win/window_test_util.h"

namespace rmatest {

/* A committed type handle, freed on destruction. */
class OwnedType
{
public:
	OwnedType() = default;
	explicit OwnedType(rma_datatype h, bool commit = true) : h_(h)
	{
		if (commit) {
			EXPECT_EQ(rma_type_commit(&h_), RMA_SUCCESS);
		}
	}
	OwnedType(OwnedType &&o) noexcept : h_(o.h_) { o.h_ = RMA_DATATYPE_NULL; }
	OwnedType &operator=(OwnedType &&o) noexcept
	{
		std::swap(h_, o.h_);
		return *this;
	}
	~OwnedType()
	{
		if (h_ != RMA_DATATYPE_NULL)
			rma_type_free(&h_);
	}

	rma_datatype get() const { return h_; }
	operator rma_datatype() const { return h_; }

private:
	rma_datatype h_ = RMA_DATATYPE_NULL;
};

/* The basic types of a signature (its repeats expanded), as handle indices. */
inline void expandSignature(const librma::Signature &sig, size_t begin, size_t end, std::vector<int> &out)
{
	for (size_t i = begin; i < end; i += 1 + sig[i].body) {
		if (!sig[i].isRepeat()) {
			out.insert(out.end(), static_cast<size_t>(sig[i].count), static_cast<int>(sig[i].type));
			continue;
		}
		for (rma_count k = 0; k < sig[i].count; ++k)
			expandSignature(sig, i + 1, i + 1 + sig[i].body, out);
	}
}

inline std::vector<int> expandSignature(const librma::Signature &sig)
{
	std::vector<int> out;
	expandSignature(sig, 0, sig.size(), out);
	return out;
}

/* The engine's type behind a valid handle. */
inline librma::Datatype &engine(rma_datatype h)
{
	return *librma::lookupDatatype(h);
}

inline int handleIndex(rma_datatype h)
{
	return static_cast<int>(reinterpret_cast<uintptr_t>(h) & 0xffffffffu);
}

/*
 * The reference of a type handle, rebuilt from what rma_type_get_contents_c
 * says it was made of (so it also checks the contents).
 */
inline RefType refOf(rma_datatype h)
{
	rma_count ni = 0, na = 0, nl = 0, nd = 0;
	int combiner = 0;
	EXPECT_EQ(rma_type_get_envelope_c(h, &ni, &na, &nl, &nd, &combiner), RMA_SUCCESS);
	if (combiner == RMA_COMBINER_NAMED) {
		int index = handleIndex(h);
		return index > 32 ? refPair(index) : refNamed(index);
	}
	std::vector<int> ints(ni);
	std::vector<rma_aint> aints(na);
	std::vector<rma_count> counts(nl);
	std::vector<rma_datatype> types(nd);
	EXPECT_EQ(rma_type_get_contents_c(h, ni, na, nl, nd, ints.data(), aints.data(), counts.data(), types.data()),
		  RMA_SUCCESS);
	std::vector<RefType> children;
	for (rma_datatype &t : types) {
		children.push_back(refOf(t));
		rma_count a, b, c, d;
		int comb;
		rma_type_get_envelope_c(t, &a, &b, &c, &d, &comb);
		if (comb != RMA_COMBINER_NAMED) {
			EXPECT_EQ(rma_type_free(&t), RMA_SUCCESS);
		}
	}
	/* Counts then displacements, in MPI's order for the combiner (subarray aside). */
	std::vector<int64_t> s;
	if (nl > 0) {
		s.assign(counts.begin(), counts.end());
	} else {
		s.assign(ints.begin(), ints.end());
		s.insert(s.end(), aints.begin(), aints.end());
	}
	auto range = [&](size_t from, int64_t n) {
		return std::vector<int64_t>(s.begin() + from, s.begin() + from + n);
	};
	const RefType &old = children.empty() ? RefType{} : children[0];
	switch (combiner) {
	case RMA_COMBINER_DUP:
		return old;
	case RMA_COMBINER_CONTIGUOUS:
		return refContiguous(s[0], old);
	case RMA_COMBINER_VECTOR:
		return refVector(s[0], s[1], s[2] * old.extent(), old);
	case RMA_COMBINER_HVECTOR:
		return refVector(s[0], s[1], s[2], old);
	case RMA_COMBINER_INDEXED:
	case RMA_COMBINER_HINDEXED:
	case RMA_COMBINER_STRUCT: {
		std::vector<int64_t> disps = range(1 + s[0], s[0]);
		if (combiner == RMA_COMBINER_INDEXED)
			for (int64_t &d : disps)
				d *= old.extent();
		return refBlocks(range(1, s[0]), disps, children, combiner == RMA_COMBINER_STRUCT);
	}
	case RMA_COMBINER_INDEXED_BLOCK:
	case RMA_COMBINER_HINDEXED_BLOCK: {
		std::vector<int64_t> disps = range(2, s[0]);
		if (combiner == RMA_COMBINER_INDEXED_BLOCK)
			for (int64_t &d : disps)
				d *= old.extent();
		return refBlocks(std::vector<int64_t>(s[0], s[1]), disps, children, false);
	}
	case RMA_COMBINER_SUBARRAY: {
		int64_t n = ints[0];
		int order = nl > 0 ? ints[1] : ints[1 + 3 * n];
		size_t first = nl > 0 ? 0 : 1;
		return refSubarray(range(first, n), range(first + n, n), range(first + 2 * n, n), order == RMA_ORDER_C,
				   old);
	}
	case RMA_COMBINER_RESIZED:
		return refResized(old, s[0], s[1]);
	default:
		ADD_FAILURE() << "unknown combiner " << combiner;
		return RefType{};
	}
}

} /* namespace rmatest */
