/* SPDX-License-Identifier: MIT */
/*
 * Datatypes: what one element of an RMA buffer is. This header is the
 * component's only door.
 *
 * Today: the predefined C types, each a contiguous run of `size` bytes of one
 * basic type. The copy path asks only isContiguous() and the signature
 * (basic type, count), so derived types (flattened block lists) slot in
 * behind the same questions.
 */
#pragma once

#include <cstdint>

#include <rma/rma.h>

namespace librma {

/* Basic types: the elements of type signatures (index of the predefined handle). */
enum class BasicType : uint8_t {
	None = 0,
	Char = 1, SignedChar, UnsignedChar, Byte, Short, UnsignedShort, Int, Unsigned, Long,
	UnsignedLong, LongLong, UnsignedLongLong, Float, Double, LongDouble, Wchar, Bool,
	Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, FloatComplex, DoubleComplex,
	LongDoubleComplex, Aint, Offset, Count, Packed,
	Last = Packed,
};

struct Datatype {
	const char *name = "";
	rma_count size = 0;     /* bytes of data in one element */
	rma_aint lb = 0;        /* lower bound */
	rma_aint extent = 0;    /* span of one element in a count of them */
	rma_aint trueLb = 0;    /* lowest byte actually touched */
	rma_aint trueExtent = 0;
	BasicType basic = BasicType::None; /* the one basic type it is made of */
	bool predefined = false;

	/* A count of this type is one run of count * size bytes at offset 0. */
	bool isContiguous() const { return lb == 0 && extent == size && trueExtent == size; }
};

/* The predefined types, indexed by BasicType (entry 0 is unused). */
extern const Datatype kPredefinedTypes[static_cast<int>(BasicType::Last) + 1];

/* The predefined datatype behind a handle, or nullptr (inline: the data path asks). */
inline const Datatype *predefinedDatatype(rma_datatype handle)
{
	uintptr_t h = reinterpret_cast<uintptr_t>(handle);
	uintptr_t index = h - (uintptr_t(RMA_HANDLE_KIND_DATATYPE_) << 56);
	if (index - 1 >= static_cast<uintptr_t>(BasicType::Last))
		return nullptr;
	return &kPredefinedTypes[index];
}

/* The datatype behind a handle, or nullptr if the handle is not valid. */
inline const Datatype *toDatatype(rma_datatype handle)
{
	return predefinedDatatype(handle);
}

/*
 * Check that origin data (count @ocount of @otype) can be delivered into a
 * buffer of count @tcount of @ttype, as MPI's type-matching rules require:
 * the same basic type (RMA_PACKED matches anything), and no more data than
 * the receiving buffer holds. @sending says which side sends (true: origin,
 * as in put; false: target, as in get). Returns RMA_SUCCESS or an
 * RMA_ERR_TYPE / RMA_ERR_TRUNCATE code whose message starts with @call.
 * On success @bytes is the number of bytes to move.
 */
int matchSignatures(const char *call, const Datatype &otype, int ocount, const Datatype &ttype, int tcount,
		    bool originSends, rma_count &bytes);

} /* namespace librma */
