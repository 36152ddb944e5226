/* SPDX-License-Identifier: MIT */
#include "shm/segment.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace librma {

namespace {

/* All of @fd from offset 0: a pread() there makes procfs, sysfs and cgroupfs generate the file afresh. */
std::optional<std::string> preadAll(int fd)
{
	std::string text;
	char buffer[8192];
	for (;;) {
		ssize_t got = pread(fd, buffer, sizeof(buffer), static_cast<off_t>(text.size()));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return std::nullopt;
		if (got == 0)
			return text;
		text.append(buffer, static_cast<std::size_t>(got));
	}
}

/*
 * The files a memory check reads, kept open: reading one again from offset
 * 0 skips the path walk, open and close, which were most of its cost (20 of
 * 24 us for memory.stat, 13 of 20 for /proc/meminfo on the VM of issue
 * #12), and a window creation makes up to two checks a rank. A process
 * forked from this one reopens them (its /proc/self is another directory),
 * a file that fails to read is reopened once (a cgroup removed), and
 * forget() drops them all when this process moves to another cgroup.
 * Thread-safe.
 */
class HeldFiles
{
public:
	std::optional<std::string> read(const std::string &path)
	{
		std::lock_guard<std::mutex> guard(lock_);
		if (pid_ != getpid()) {
			closeAll();
			pid_ = getpid();
		}
		for (int attempt = 0; attempt < 2; ++attempt) {
			auto it = fds_.find(path);
			if (it == fds_.end()) {
				int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
				if (fd < 0)
					return std::nullopt;
				it = fds_.emplace(path, fd).first;
			}
			if (auto text = preadAll(it->second))
				return text;
			close(it->second);
			fds_.erase(it);
		}
		return std::nullopt;
	}

	void forget()
	{
		std::lock_guard<std::mutex> guard(lock_);
		closeAll();
	}

private:
	void closeAll()
	{
		for (auto &[path, fd] : fds_)
			close(fd);
		fds_.clear();
	}

	std::mutex lock_;
	pid_t pid_ = 0;
	std::map<std::string, int> fds_;
};

/* Never destroyed: a check may run from another static's destructor. */
HeldFiles &heldFiles()
{
	static HeldFiles *files = new HeldFiles;
	return *files;
}

std::optional<std::string> readText(const std::string &path)
{
	return heldFiles().read(path);
}

/* The leading number of @text; nullopt for anything else ("max"). */
std::optional<uint64_t> parseNumber(std::string_view text)
{
	text.remove_prefix(std::min(text.find_first_not_of(" \t"), text.size()));
	uint64_t value = 0;
	auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
	if (ec != std::errc() || ptr == text.data())
		return std::nullopt;
	return value;
}

std::optional<uint64_t> readNumber(const std::string &path)
{
	auto text = readText(path);
	return text ? parseNumber(*text) : std::nullopt;
}

/* The value of the line "@key <value>" (or "@key: <value>") in @text. */
std::optional<uint64_t> field(const std::string &text, std::string_view key)
{
	size_t pos = 0;
	while (pos < text.size()) {
		size_t end = text.find('\n', pos);
		std::string_view line(text.data() + pos, (end == std::string::npos ? text.size() : end) - pos);
		if (line.starts_with(key) && line.size() > key.size() &&
		    (line[key.size()] == ' ' || line[key.size()] == ':'))
			return parseNumber(line.substr(key.size() + 1));
		if (end == std::string::npos)
			break;
		pos = end + 1;
	}
	return std::nullopt;
}

/*
 * What a cgroup may still charge before its limit: the kernel reclaims page
 * cache to make room, but not shared memory (no swap to put it in).
 */
uint64_t headroom(uint64_t limit, uint64_t usage, uint64_t cache, uint64_t shmem)
{
	uint64_t reclaimable = cache > shmem ? cache - shmem : 0;
	uint64_t used = usage > reclaimable ? usage - reclaimable : 0;
	return limit > used ? limit - used : 0;
}

/*
 * Where this process's memory limits live: found again only when
 * /proc/self/cgroup changes (a process moved to another cgroup), so a check
 * reads that file and the limit files that exist, not every candidate.
 * Probing them all cost most of a small window's creation.
 */
struct CgroupDir {
	bool v2;
	std::string dir;
};

/* cgroup v2: every ancestor with a memory.max applies. */
void addV2(const std::string &path, std::vector<CgroupDir> &out)
{
	const std::string root = "/sys/fs/cgroup";
	std::string dir = root + (path == "/" ? "" : path);
	for (;;) {
		if (access((dir + "/memory.max").c_str(), R_OK) == 0)
			out.push_back({ true, dir });
		if (dir.size() <= root.size())
			break;
		dir.resize(dir.rfind('/'));
	}
}

/* cgroup v1: hierarchical_memory_limit already folds in the ancestors; inside a namespace the root is ours. */
void addV1(const std::string &path, std::vector<CgroupDir> &out)
{
	const std::string root = "/sys/fs/cgroup/memory";
	for (const std::string &dir : { root + path, root }) {
		if (access((dir + "/memory.usage_in_bytes").c_str(), R_OK) == 0) {
			out.push_back({ false, dir });
			return;
		}
	}
}

std::vector<CgroupDir> findCgroupDirs(const std::string &text)
{
	std::vector<CgroupDir> out;
	std::istringstream lines(text);
	std::string line;
	/* "hierarchy-id:controller,list:path" */
	while (std::getline(lines, line)) {
		size_t first = line.find(':');
		size_t second = first == std::string::npos ? first : line.find(':', first + 1);
		if (second == std::string::npos)
			continue;
		std::string controllers(1, ',');
		controllers.append(line, first + 1, second - first - 1);
		controllers += ',';
		std::string path = line.substr(second + 1);
		if (line.starts_with("0::"))
			addV2(path, out);
		else if (controllers.find(",memory,") != std::string::npos)
			addV1(path, out);
	}
	return out;
}

std::vector<CgroupDir> cgroupDirs()
{
	static std::mutex lock;
	static std::string seen;
	static std::vector<CgroupDir> dirs;
	auto text = readText("/proc/self/cgroup");
	if (!text)
		return {};
	std::lock_guard<std::mutex> guard(lock);
	if (*text != seen) {
		/* Moved (or the first look): the limit files held open are another cgroup's. */
		if (!seen.empty())
			heldFiles().forget();
		dirs = findCgroupDirs(*text);
		seen = *text;
	}
	return dirs;
}

uint64_t cgroupHeadroom()
{
	uint64_t best = UINT64_MAX;
	for (const CgroupDir &c : cgroupDirs()) {
		if (c.v2) {
			auto limit = readNumber(c.dir + "/memory.max");
			auto usage = readNumber(c.dir + "/memory.current");
			auto stat = readText(c.dir + "/memory.stat");
			if (limit && usage && stat)
				best = std::min(best, headroom(*limit, *usage, field(*stat, "file").value_or(0),
							       field(*stat, "shmem").value_or(0)));
		} else {
			auto stat = readText(c.dir + "/memory.stat");
			auto usage = readNumber(c.dir + "/memory.usage_in_bytes");
			auto limit = stat ? field(*stat, "hierarchical_memory_limit") : std::nullopt;
			if (limit && usage)
				best = std::min(best, headroom(*limit, *usage, field(*stat, "total_cache").value_or(0),
							       field(*stat, "total_shmem").value_or(0)));
		}
	}
	return best;
}

} /* namespace */

bool hugeFaultLimitsPossible(const std::string &cgroups, const std::string &mountinfo)
{
	/*
	 * /proc/cgroups: "subsys_name hierarchy num_cgroups enabled". A limit
	 * needs a cgroup other than the root (which cannot be limited).
	 */
	bool hugetlbCgroups = false;
	std::istringstream lines(cgroups);
	std::string line;
	while (std::getline(lines, line)) {
		std::istringstream fields(line);
		std::string name;
		long hierarchy = 0, count = 0, enabled = 0;
		if (!(fields >> name >> hierarchy >> count >> enabled) || name != "hugetlb")
			continue;
		hugetlbCgroups = enabled != 0 && count > 1;
	}
	if (hugetlbCgroups)
		return true;
	/* cgroup v2's memory_hugetlb_accounting (6.6+) charges huge pages to memory.max at fault time. */
	std::istringstream mounts(mountinfo);
	while (std::getline(mounts, line)) {
		size_t dash = line.find(" - cgroup2 ");
		if (dash != std::string::npos && line.find("memory_hugetlb_accounting", dash) != std::string::npos)
			return true;
	}
	return false;
}

bool hugeFaultsLimited()
{
	auto cgroups = readText("/proc/cgroups");
	auto mountinfo = readText("/proc/self/mountinfo");
	return !cgroups || !mountinfo || hugeFaultLimitsPossible(*cgroups, *mountinfo);
}

std::size_t availableMemory()
{
	uint64_t best = cgroupHeadroom();
	if (auto meminfo = readText("/proc/meminfo")) {
		if (auto kb = field(*meminfo, "MemAvailable"))
			best = std::min(best, *kb * 1024);
	}
	return static_cast<std::size_t>(std::min<uint64_t>(best, SIZE_MAX));
}

HostReservationLock::HostReservationLock()
{
	int fd = open(kHostReservationLockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0)
		return;
	/* Other users' jobs share the lock: undo the umask (fails harmlessly if the file is not ours). */
	(void)fchmod(fd, 0666);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return;
		}
	}
	fd_ = fd;
}

HostReservationLock::~HostReservationLock()
{
	if (fd_ >= 0)
		close(fd_); /* drops the lock */
}

bool HostReservation::claim(std::size_t bytes, std::size_t &remaining)
{
	if (!lock_) {
		lock_.emplace();
		available_ = availableMemory();
	}
	remaining = available_;
	if (bytes > available_)
		return false;
	available_ -= bytes;
	return true;
}

void HostReservation::charged()
{
	if (--pending_ <= 0)
		lock_.reset();
}

} /* namespace librma */
