/* SPDX-License-Identifier: MIT */
#include "datatype/datatype.h"

#include <complex.h>
#include <wchar.h>

#include "error/error.h"

namespace librma {

namespace {

constexpr Datatype basic(const char *name, rma_count size, BasicType type)
{
	Datatype t;
	t.name = name;
	t.size = size;
	t.extent = size;
	t.trueExtent = size;
	t.basic = type;
	t.predefined = true;
	return t;
}

using B = BasicType;

} /* namespace */

/* Indexed by BasicType (== the index in the predefined handle). */
const Datatype kPredefinedTypes[static_cast<int>(BasicType::Last) + 1] = {
	Datatype{},
	basic("RMA_CHAR", sizeof(char), B::Char),
	basic("RMA_SIGNED_CHAR", sizeof(signed char), B::SignedChar),
	basic("RMA_UNSIGNED_CHAR", sizeof(unsigned char), B::UnsignedChar),
	basic("RMA_BYTE", 1, B::Byte),
	basic("RMA_SHORT", sizeof(short), B::Short),
	basic("RMA_UNSIGNED_SHORT", sizeof(unsigned short), B::UnsignedShort),
	basic("RMA_INT", sizeof(int), B::Int),
	basic("RMA_UNSIGNED", sizeof(unsigned), B::Unsigned),
	basic("RMA_LONG", sizeof(long), B::Long),
	basic("RMA_UNSIGNED_LONG", sizeof(unsigned long), B::UnsignedLong),
	basic("RMA_LONG_LONG", sizeof(long long), B::LongLong),
	basic("RMA_UNSIGNED_LONG_LONG", sizeof(unsigned long long), B::UnsignedLongLong),
	basic("RMA_FLOAT", sizeof(float), B::Float),
	basic("RMA_DOUBLE", sizeof(double), B::Double),
	basic("RMA_LONG_DOUBLE", sizeof(long double), B::LongDouble),
	basic("RMA_WCHAR", sizeof(wchar_t), B::Wchar),
	basic("RMA_C_BOOL", sizeof(bool), B::Bool),
	basic("RMA_INT8_T", 1, B::Int8),
	basic("RMA_INT16_T", 2, B::Int16),
	basic("RMA_INT32_T", 4, B::Int32),
	basic("RMA_INT64_T", 8, B::Int64),
	basic("RMA_UINT8_T", 1, B::Uint8),
	basic("RMA_UINT16_T", 2, B::Uint16),
	basic("RMA_UINT32_T", 4, B::Uint32),
	basic("RMA_UINT64_T", 8, B::Uint64),
	basic("RMA_C_FLOAT_COMPLEX", 2 * sizeof(float), B::FloatComplex),
	basic("RMA_C_DOUBLE_COMPLEX", 2 * sizeof(double), B::DoubleComplex),
	basic("RMA_C_LONG_DOUBLE_COMPLEX", 2 * sizeof(long double), B::LongDoubleComplex),
	basic("RMA_AINT", sizeof(rma_aint), B::Aint),
	basic("RMA_OFFSET", sizeof(rma_offset), B::Offset),
	basic("RMA_COUNT", sizeof(rma_count), B::Count),
	basic("RMA_PACKED", 1, B::Packed),
};

int matchSignatures(const char *call, const Datatype &otype, int ocount, const Datatype &ttype, int tcount,
		    bool originSends, rma_count &bytes)
{
	rma_count obytes = otype.size * ocount;
	rma_count tbytes = ttype.size * tcount;
	bool packed = otype.basic == BasicType::Packed || ttype.basic == BasicType::Packed;
	if (!packed && otype.basic != ttype.basic && obytes != 0 && tbytes != 0)
		return makeError(RMA_ERR_TYPE,
				 "%s: type signatures do not match: origin is %d x %s, target is %d x %s "
				 "(types must match element by element; RMA_PACKED matches any type)",
				 call, ocount, otype.name, tcount, ttype.name);
	rma_count sent = originSends ? obytes : tbytes;
	rma_count room = originSends ? tbytes : obytes;
	if (sent > room)
		return makeError(RMA_ERR_TRUNCATE,
				 "%s: %s data (%d x %s = %lld bytes) does not fit the %s buffer (%d x %s = %lld bytes)",
				 call, originSends ? "origin" : "target", originSends ? ocount : tcount,
				 originSends ? otype.name : ttype.name, static_cast<long long>(sent),
				 originSends ? "target" : "origin", originSends ? tcount : ocount,
				 originSends ? ttype.name : otype.name, static_cast<long long>(room));
	bytes = sent;
	return RMA_SUCCESS;
}

} /* namespace librma */
