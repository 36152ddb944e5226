/* SPDX-License-Identifier: MIT */
/*
 * A fake /sys/devices/system/node tree in a temporary directory, so that
 * topology code can be tested on shapes this machine does not have.
 */
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace librma::test {

class FakeSysfs
{
public:
	FakeSysfs()
	{
		std::string pattern = (std::filesystem::temp_directory_path() / "rma-sysfs-XXXXXX").string();
		root_ = mkdtemp(pattern.data());
	}
	~FakeSysfs()
	{
		std::error_code ignored;
		std::filesystem::remove_all(root_, ignored);
	}
	FakeSysfs(const FakeSysfs &) = delete;
	FakeSysfs &operator=(const FakeSysfs &) = delete;

	const std::string &root() const { return root_; }

	/* Create node<@id> with @cpulist as its cpulist file. */
	void addNode(int id, const std::string &cpulist)
	{
		std::filesystem::create_directories(nodeDir(id));
		write(nodeDir(id) + "/cpulist", cpulist + "\n");
	}
	/* Give node<@id> a meminfo claiming @kb kilobytes. */
	void setNodeMemory(int id, long kb)
	{
		write(nodeDir(id) + "/meminfo", "Node " + std::to_string(id) +
							" MemTotal:       " + std::to_string(kb) + " kB\nNode " +
							std::to_string(id) + " MemFree:        0 kB\n");
	}
	/* The root's has_memory node list. */
	void setHasMemory(const std::string &list) { write(root_ + "/has_memory", list + "\n"); }

private:
	std::string nodeDir(int id) const { return root_ + "/node" + std::to_string(id); }
	static void write(const std::string &path, const std::string &text) { std::ofstream(path) << text; }

	std::string root_;
};

} /* namespace librma::test */
