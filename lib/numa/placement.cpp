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

std::string windowNameProblem(std::string_view name)
{
	if (name.empty())
		return "a window name cannot be empty";
	if (name.size() >= RMA_MAX_OBJECT_NAME)
		return "a window name has at most " + std::to_string(RMA_MAX_OBJECT_NAME - 1) + " characters, not " +
		       std::to_string(name.size());
	if (name.find_first_of(";=") != std::string_view::npos)
		return "a window name cannot contain ';' or '=' (they separate RMA_PLACEMENT_WINDOWS's items)";
	return "";
}

namespace {

/* Quote @text for a message, shortened. */
std::string quoted(std::string_view text)
{
	std::string q = "\"";
	q.append(text.substr(0, kQuoteMax));
	if (text.size() > kQuoteMax)
		q.append("...");
	return q + "\"";
}

/* Parse @text into @out; "" on success, else what is wrong (for the message). */
std::string parseWindowPlacementsInto(std::string_view text, std::vector<WindowPlacement> &out)
{
	out.clear();
	if (text.empty())
		return "";
	for (int item = 1;; ++item) {
		const std::size_t semi = text.find(';');
		const std::string_view entry = text.substr(0, semi);
		const std::string where = "item " + std::to_string(item) + " " + quoted(entry) + ": ";
		const std::size_t eq = entry.find('=');
		if (eq == std::string_view::npos)
			return where + "expected NAME=POLICY";
		const std::string_view name = entry.substr(0, eq);
		if (std::string why = windowNameProblem(name); !why.empty())
			return where + why;
		const std::string_view word = entry.substr(eq + 1);
		/* Placement::parse's own message speaks of the info key; this one speaks of the item. */
		auto placement = Placement::parse(word);
		if (!placement)
			return where + quoted(word) + " is not a policy: expected local, interleave, node:N or none";
		if (findWindowPlacement(out, name))
			return where + "window " + quoted(name) + " is given a policy twice";
		out.push_back({ std::string(name), placement.value() });
		if (semi == std::string_view::npos)
			return "";
		text.remove_prefix(semi + 1);
	}
}

} /* namespace */

Result<std::vector<WindowPlacement>> parseWindowPlacements(std::string_view text)
{
	std::vector<WindowPlacement> list;
	if (std::string why = parseWindowPlacementsInto(text, list); !why.empty())
		return Result<std::vector<WindowPlacement>>::failure(
			makeError(RMA_ERR_ARG, "RMA_PLACEMENT_WINDOWS %s: %s", quoted(text).c_str(), why.c_str()));
	return list;
}

std::string windowPlacementsProblem(const char *text)
{
	std::vector<WindowPlacement> list;
	return parseWindowPlacementsInto(text, list);
}

std::string windowPlacementsText(const std::vector<WindowPlacement> &list)
{
	std::string text;
	for (const WindowPlacement &w : list) {
		if (!text.empty())
			text += ';';
		text.append(w.name).append("=").append(w.placement.str());
	}
	return text;
}

const Placement *findWindowPlacement(const std::vector<WindowPlacement> &list, std::string_view name)
{
	for (const WindowPlacement &w : list)
		if (w.name == name)
			return &w.placement;
	return nullptr;
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
