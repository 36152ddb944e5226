/* SPDX-License-Identifier: MIT */
#include "numa/topology.h"

#include <linux/mempolicy.h>

#include <algorithm>
#include <charconv>

#include "error/error.h"

namespace librma {

namespace {

/* Quote at most this much of a bad value: info values can be long. */
constexpr int kQuoteMax = 64;

int badPlacement(std::string_view text)
{
	return makeError(RMA_ERR_INFO_VALUE, "rma_placement \"%.*s\"%s: expected local, interleave, node:N or none",
			 static_cast<int>(std::min<size_t>(text.size(), kQuoteMax)), text.data(),
			 text.size() > kQuoteMax ? "..." : "");
}

MemPolicy defaultPolicy()
{
	return MemPolicy{ MPOL_DEFAULT, {} };
}

} /* namespace */

Result<Placement> Placement::parse(std::string_view text)
{
	Placement placement;
	if (text == "local") {
		placement.kind = Kind::Local;
	} else if (text == "interleave") {
		placement.kind = Kind::Interleave;
	} else if (text == "none") {
		placement.kind = Kind::None;
	} else if (text.starts_with("node:")) {
		std::string_view number = text.substr(5);
		const char *end = number.data() + number.size();
		int node = -1;
		auto [ptr, ec] = std::from_chars(number.data(), end, node);
		if (number.empty() || ec != std::errc() || ptr != end || node < 0)
			return Result<Placement>::failure(badPlacement(text));
		placement.kind = Kind::Node;
		placement.node = node;
	} else {
		return Result<Placement>::failure(badPlacement(text));
	}
	return placement;
}

std::string Placement::str() const
{
	switch (kind) {
	case Kind::Local:
		return "local";
	case Kind::Interleave:
		return "interleave";
	case Kind::Node:
		return "node:" + std::to_string(node);
	case Kind::None:
		return "none";
	}
	return "none";
}

int MemPolicy::reportedNode() const
{
	if (mode == MPOL_DEFAULT || nodes.size() != 1)
		return -1;
	return nodes.front();
}

Result<MemPolicy> resolvePlacement(const Placement &placement, const Topology &topology, int ownerNode)
{
	switch (placement.kind) {
	case Placement::Kind::Local: {
		int index = topology.indexOfNode(ownerNode);
		if (ownerNode < 0 || index < 0 || !topology.nodes()[index].hasMemory)
			return defaultPolicy();
		return MemPolicy{ MPOL_BIND, { ownerNode } };
	}
	case Placement::Kind::Interleave: {
		MemPolicy policy{ MPOL_INTERLEAVE, {} };
		for (const NumaNode &node : topology.nodes()) {
			if (node.hasMemory)
				policy.nodes.push_back(node.id);
		}
		if (policy.nodes.empty())
			return defaultPolicy();
		return policy;
	}
	case Placement::Kind::Node: {
		int index = topology.indexOfNode(placement.node);
		if (placement.node < 0 || index < 0)
			return Result<MemPolicy>::failure(makeError(
				RMA_ERR_INFO_VALUE, "rma_placement \"node:%d\": this host has no NUMA node %d",
				placement.node, placement.node));
		if (!topology.nodes()[index].hasMemory)
			return Result<MemPolicy>::failure(
				makeError(RMA_ERR_INFO_VALUE, "rma_placement \"node:%d\": NUMA node %d has no memory",
					  placement.node, placement.node));
		return MemPolicy{ MPOL_BIND, { placement.node } };
	}
	case Placement::Kind::None:
		break;
	}
	return defaultPolicy();
}

} /* namespace librma */
