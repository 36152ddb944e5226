/* SPDX-License-Identifier: MIT */
/*
 * The datatype engine's costs: flattening at commit, and copies between
 * layouts (what put/get do with derived types), against a memcpy of the
 * same bytes and against pack + memcpy + unpack through a staging buffer.
 *
 * The vector type is 1024 blocks of 8 doubles at a stride of 16 doubles
 * (64 KiB of data in 128 KiB); the indexed type has the same blocks at
 * irregular displacements, so it flattens to one run per pair of blocks.
 */
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include <rma/rma.h>

#include "datatype/datatype.h"

namespace {

constexpr int kBlocks = 1024;
constexpr int kBlockLength = 8;
constexpr int kStride = 16;
constexpr size_t kBytes = size_t(kBlocks) * kBlockLength * sizeof(double);

rma_datatype vectorType()
{
	rma_datatype t;
	rma_type_vector(kBlocks, kBlockLength, kStride, RMA_DOUBLE, &t);
	return t;
}

rma_datatype indexedType()
{
	std::vector<int> disps(kBlocks);
	for (int i = 0; i < kBlocks; ++i)
		disps[i] = kStride * i + i % 3;
	rma_datatype t;
	rma_type_create_indexed_block(kBlocks, kBlockLength, disps.data(), RMA_DOUBLE, &t);
	return t;
}

rma_datatype subarrayType()
{
	int sizes[] = { 64, 64, 64 }, sub[] = { 16, 16, 32 }, starts[] = { 8, 8, 8 };
	rma_datatype t;
	rma_type_create_subarray(3, sizes, sub, starts, RMA_ORDER_C, RMA_DOUBLE, &t);
	return t;
}

rma_datatype makeType(int which)
{
	switch (which) {
	case 0: return vectorType();
	case 1: return indexedType();
	default: return subarrayType();
	}
}

const char *typeName(int which)
{
	static const char *names[] = { "vector", "indexed", "subarray3d" };
	return names[which];
}

/* Construct + commit + free: what a type costs before its first use. */
void BM_Flatten(benchmark::State &state)
{
	const int which = static_cast<int>(state.range(0));
	size_t runs = 0;
	for (auto _ : state) {
		rma_datatype t = makeType(which);
		rma_type_commit(&t);
		runs = librma::lookupDatatype(t)->detail->nodes.size();
		rma_type_free(&t);
	}
	state.SetLabel(std::string(typeName(which)) + ", " + std::to_string(runs) + " nodes");
}
BENCHMARK(BM_Flatten)->Arg(0)->Arg(1)->Arg(2);

/* The reference: one memcpy of the data's bytes. */
void BM_Memcpy(benchmark::State &state)
{
	std::vector<std::byte> src(kBytes, std::byte(1)), dst(kBytes);
	for (auto _ : state) {
		std::memcpy(dst.data(), src.data(), kBytes);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}
BENCHMARK(BM_Memcpy);

/* Buffers big enough for every layout (the subarray's array is 64^3 doubles). */
struct Buffers {
	static constexpr size_t kDoubles = 64 * 64 * 64;
	std::vector<double> typed = std::vector<double>(kDoubles, 1.0);
	std::vector<double> other = std::vector<double>(kDoubles, 2.0);
};

/*
 * copyTyped from a typed layout into a contiguous one (a put of a derived
 * origin into contiguous target memory); range(1) == 1: typed on both sides.
 */
void BM_CopyTyped(benchmark::State &state)
{
	const int which = static_cast<int>(state.range(0));
	const bool bothTyped = state.range(1) == 1;
	rma_datatype t = makeType(which);
	rma_type_commit(&t);
	const librma::Datatype &typed = *librma::lookupDatatype(t);
	const librma::Datatype &flat = *librma::lookupDatatype(RMA_DOUBLE);
	const rma_count bytes = typed.size;
	Buffers b;
	auto *dst = reinterpret_cast<std::byte *>(b.other.data());
	auto *src = reinterpret_cast<const std::byte *>(b.typed.data());
	for (auto _ : state) {
		if (bothTyped)
			librma::copyTyped(dst, typed, 1, src, typed, 1, bytes);
		else
			librma::copyTyped(dst, flat, bytes / 8, src, typed, 1, bytes);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * bytes);
	state.SetLabel(std::string(typeName(which)) + (bothTyped ? " -> same type" : " -> contiguous"));
	rma_type_free(&t);
}
BENCHMARK(BM_CopyTyped)->Args({ 0, 0 })->Args({ 0, 1 })->Args({ 1, 0 })->Args({ 1, 1 })->Args({ 2, 0 });

/* What a put without the block-to-block path would do: pack, copy the packed bytes, unpack. */
void BM_PackMemcpyUnpack(benchmark::State &state)
{
	const int which = static_cast<int>(state.range(0));
	rma_datatype t = makeType(which);
	rma_type_commit(&t);
	int size = 0;
	rma_pack_size(1, t, RMA_COMM_SELF, &size);
	Buffers b;
	std::vector<std::byte> packed(size), received(size);
	for (auto _ : state) {
		int position = 0;
		rma_pack(b.typed.data(), 1, t, packed.data(), size, &position, RMA_COMM_SELF);
		std::memcpy(received.data(), packed.data(), static_cast<size_t>(size));
		position = 0;
		rma_unpack(received.data(), size, &position, b.other.data(), 1, t, RMA_COMM_SELF);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * size);
	state.SetLabel(typeName(which));
	rma_type_free(&t);
}
BENCHMARK(BM_PackMemcpyUnpack)->Arg(0)->Arg(1)->Arg(2);

} /* namespace */

int main(int argc, char **argv)
{
	/* rma_pack takes a communicator: run as a job of one rank. */
	if (rma_init(&argc, &argv) != RMA_SUCCESS)
		return 1;
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 1;
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return rma_finalize() == RMA_SUCCESS ? 0 : 1;
}
