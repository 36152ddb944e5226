/* SPDX-License-Identifier: MIT */
/*
 * A program that joins the job it was started in (by rmarun, or alone as a
 * singleton) and checks an allgather with descriptors. For rmarun_test.
 *
 * Usage: boot_client            check, print "rank R of N ok", exit 0
 *        boot_client abort C    the last rank aborts the job with code C
 * Exits 1 with a message on stderr when a check fails.
 */
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "bootstrap/bootstrap.h"
#include "error/error.h"

using namespace librma;

namespace {

int fail(const char *what)
{
	std::fprintf(stderr, "boot_client: %s\n", what);
	return 1;
}

} /* namespace */

int main(int argc, char **argv)
{
	auto boot = Bootstrap::fromEnvironment();
	if (!boot.ok())
		return fail(errorMessage(boot.code()).c_str());
	Bootstrap &b = **boot;

	const char *rankText = std::getenv("RMA_RANK");
	if (b.size() > 1 && (!rankText || std::atoi(rankText) != b.rank()))
		return fail("RMA_RANK disagrees with the bootstrap");
	if (argc == 3 && !std::strcmp(argv[1], "abort") && b.rank() == b.size() - 1)
		b.abort(std::atoi(argv[2]));

	UniqueFd file(memfd_create("boot_client", MFD_CLOEXEC));
	std::string text = "rank " + std::to_string(b.rank());
	if (!file.isValid() || write(file.get(), text.data(), text.size()) != ssize_t(text.size()))
		return fail("cannot make a memfd");

	std::vector<int> world(b.size());
	std::iota(world.begin(), world.end(), 0);
	int32_t mine = b.rank() * 10;
	int fds[] = { file.get() };
	GatherResult out;
	int rc = b.allgather(1, 1, world, b.rank(), std::as_bytes(std::span(&mine, 1)), fds, out);
	if (rc != RMA_SUCCESS)
		return fail(errorMessage(rc).c_str());
	if (out.data.size() != world.size() * sizeof(int32_t) || out.fds.size() != world.size())
		return fail("wrong sizes gathered");
	for (int r = 0; r < b.size(); ++r) {
		int32_t value;
		std::memcpy(&value, out.data.data() + r * sizeof(int32_t), sizeof(value));
		char buf[32] = {};
		if (value != r * 10 || pread(out.fds[r].get(), buf, sizeof(buf) - 1, 0) <= 0 ||
		    std::string(buf) != "rank " + std::to_string(r))
			return fail("wrong data gathered");
	}
	std::printf("rank %d of %d ok\n", b.rank(), b.size());
	return 0;
}
