/* SPDX-License-Identifier: MIT */
/*
 * A fake host for frame tests and the frame fuzz target: a world of four
 * ranks on two hosts (ranks 0, 1 here on host 0; ranks 2, 3 on the peer,
 * host 1) and two windows the agent knows:
 *   kStaticWindow   all four ranks, targets 0 and 1 with 4 KiB each;
 *   kDynamicWindow  ranks 0 and 2 (window ranks 0 and 1); target 0 is
 *                   dynamic with regions [0x10000, +4096) and [0x20000, +256).
 * Header-only, used by tests/net/frame_test.cpp and tests/fuzz/frame_fuzz.cpp.
 */
#pragma once

#include <array>
#include <cstdint>

#include "net/frame.h"

namespace rmatest {

using namespace librma::net;

inline constexpr uint64_t kStaticWindow = 7;
inline constexpr uint64_t kDynamicWindow = 9;
inline constexpr uint64_t kTargetBytes = 4096;
inline constexpr std::array<MemRegion, 2> kRegions{ { { 0x10000, 4096 }, { 0x20000, 256 } } };

struct FakeHost {
	std::array<uint32_t, 4> hostOfRank{ 0, 0, 1, 1 };
	std::array<int32_t, 4> staticRanks{ 0, 1, 2, 3 };
	std::array<TargetView, 4> staticTargets{ { { kTargetBytes, false, {} }, { kTargetBytes, false, {} }, {}, {} } };
	std::array<int32_t, 4> dynamicRanks{ 0, -1, 1, -1 };
	std::array<TargetView, 2> dynamicTargets{ { { 0, true, kRegions }, {} } };
	WindowView staticView{ staticRanks, staticTargets };
	WindowView dynamicView{ dynamicRanks, dynamicTargets };

	static const WindowView *find(const void *self, uint64_t id) noexcept
	{
		auto *h = static_cast<const FakeHost *>(self);
		if (id == kStaticWindow)
			return &h->staticView;
		if (id == kDynamicWindow)
			return &h->dynamicView;
		return nullptr;
	}

	ParseContext context(ConnPhase phase = ConnPhase::Open, uint32_t maxBody = kMaxBody) const
	{
		ParseContext c;
		c.phase = phase;
		c.maxBody = maxBody;
		c.hostOfRank = hostOfRank;
		c.localHost = 0;
		c.peerHost = 1;
		c.findWindow = &FakeHost::find;
		c.windowCtx = this;
		return c;
	}

	FakeHost() = default;
	FakeHost(const FakeHost &) = delete; /* the views point into this object */
	FakeHost &operator=(const FakeHost &) = delete;
};

} /* namespace rmatest */
