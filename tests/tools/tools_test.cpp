/* SPDX-License-Identifier: MIT */
/*
 * The product as a user meets it: installed headers, librma.so and rmarun,
 * a C program built outside the tree with pkg-config, and a job that loses
 * a rank.
 */
#include <gtest/gtest.h>

#include <dirent.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "support/multiproc.h"

using librma::test::CommandResult;
using librma::test::runCommand;
using librma::test::ScratchDir;

namespace {

std::string env(const char *name)
{
	const char *v = std::getenv(name);
	return v ? v : "";
}

CommandResult sh(const std::string &script, double timeout = 120)
{
	return runCommand({ "/bin/sh", "-c", script }, timeout);
}

long meminfoKb(const char *field)
{
	std::ifstream in("/proc/meminfo");
	std::string key, unit;
	long value;
	while (in >> key >> value) {
		std::getline(in, unit);
		if (key == std::string(field) + ":")
			return value;
	}
	return -1;
}

std::set<std::string> devShm()
{
	std::set<std::string> out;
	if (DIR *d = opendir("/dev/shm")) {
		while (dirent *e = readdir(d))
			out.insert(e->d_name);
		closedir(d);
	}
	return out;
}

TEST(InstallTest, OutOfTreeCProgramBuildsWithPkgConfigAndRunsUnderRmarun)
{
	std::string build = env("RMA_BUILD_ROOT");
	std::string source = env("RMA_SOURCE_ROOT");
	ASSERT_FALSE(build.empty());
	if (system("command -v pkg-config >/dev/null && command -v cc >/dev/null") != 0)
		GTEST_SKIP() << "pkg-config or cc is not installed";
	ScratchDir dir;
	std::string dest = dir.file("root");
	CommandResult r = sh("meson install -C '" + build + "' --no-rebuild --destdir '" + dest + "' >/dev/null 2>&1 || "
			     "meson install -C '" + build + "' --no-rebuild --destdir '" + dest + "'");
	ASSERT_EQ(r.status, 0) << r.out << r.err;

	/* Locate what was installed, wherever the prefix and libdir put it. */
	r = sh("find '" + dest + "' -name rma.pc -printf '%h\\n'; find '" + dest + "' -name 'librma.so' -printf '%h\\n'; "
	       "find '" + dest + "' -name rmarun -type f -printf '%p\\n'; find '" + dest + "' -name rma.hpp -printf '%p\\n'");
	ASSERT_EQ(r.status, 0);
	std::istringstream lines(r.out);
	std::string pcdir, libdir, rmarun, hpp;
	std::getline(lines, pcdir);
	std::getline(lines, libdir);
	std::getline(lines, rmarun);
	std::getline(lines, hpp);
	ASSERT_FALSE(pcdir.empty()) << "rma.pc not installed";
	ASSERT_FALSE(libdir.empty()) << "librma.so not installed";
	ASSERT_FALSE(rmarun.empty()) << "rmarun not installed";
	ASSERT_FALSE(hpp.empty()) << "rma.hpp not installed";

	/* cc prog.c $(pkg-config --cflags --libs rma), with the staged root as sysroot. */
	std::string pc = "PKG_CONFIG_PATH='" + pcdir + "' PKG_CONFIG_SYSROOT_DIR='" + dest + "' pkg-config";
	std::string exe = dir.file("ring");
	std::string sanitize = env("RMA_SANITIZE");
	std::string extra = sanitize.empty() || sanitize == "none" ? "" : " -fsanitize=" + sanitize;
	r = sh("cd '" + dir.path() + "' && cc -std=c11 -Wall -Werror" + extra + " '" + source + "/tests/programs/ring.c' $(" +
	       pc + " --cflags --libs rma) -o '" + exe + "'");
	ASSERT_EQ(r.status, 0) << r.out << r.err;

	r = sh("LD_LIBRARY_PATH='" + libdir + "' '" + rmarun + "' -n 4 '" + exe + "'", 60);
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_NE(r.out.find("ring ok on 4 ranks"), std::string::npos) << r.out << r.err;

	/* librma.so exports the C API and nothing else. */
	r = sh("nm -D --defined-only '" + libdir + "/librma.so' | awk '{print $3}' | grep -v '^rma_' | grep -v '^_' | "
	       "grep -v '^LIBRMA' || true");
	EXPECT_EQ(r.out, "") << "symbols beyond the public API are exported";
	r = sh("nm -D --defined-only '" + libdir + "/librma.so' | grep -c ' T rma_'");
	EXPECT_GT(std::atoi(r.out.c_str()), 60) << r.out;

	/* The headers compile on their own, C and C++. */
	std::string incdir = hpp.substr(0, hpp.rfind("/rma/"));
	r = sh("echo '#include <rma/rma.h>' | cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -I'" + incdir +
	       "' -x c - && echo '#include <rma/rma.hpp>' | c++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I'" +
	       incdir + "' -x c++ -");
	EXPECT_EQ(r.status, 0) << r.err;
}

/*
 * The README's "Using it" recipe, verbatim: meson install, then
 * cc examples/ring.c $(pkg-config --cflags --libs rma), then rmarun -n 4,
 * with no LD_LIBRARY_PATH, no sysroot and no ldconfig. The staged install is
 * bind-mounted over the real prefix in a private mount namespace, so the
 * programs see exactly what `meson install` would leave on the machine.
 */
TEST(InstallTest, UsingItRecipeRunsVerbatimFromTheInstalledPrefix)
{
	std::string build = env("RMA_BUILD_ROOT");
	std::string source = env("RMA_SOURCE_ROOT");
	ASSERT_FALSE(build.empty());
	if (system("command -v pkg-config >/dev/null && command -v cc >/dev/null") != 0)
		GTEST_SKIP() << "pkg-config or cc is not installed";
	std::string sanitize = env("RMA_SANITIZE");
	if (!sanitize.empty() && sanitize != "none")
		GTEST_SKIP() << "the verbatim recipe builds without sanitizers; the staged test above covers " << sanitize;
	if (sh("unshare -m true").status != 0)
		GTEST_SKIP() << "no private mount namespace here (needs root)";
	ScratchDir dir;
	std::string dest = dir.file("root");
	CommandResult r = sh("meson install -C '" + build + "' --no-rebuild --destdir '" + dest + "' >/dev/null 2>&1");
	ASSERT_EQ(r.status, 0) << r.out << r.err;
	r = sh("find '" + dest + "' -name rmarun -type f -printf '%p'");
	const std::string suffix = "/bin/rmarun";
	ASSERT_GT(r.out.size(), dest.size() + suffix.size()) << r.out;
	std::string prefix = r.out.substr(dest.size(), r.out.size() - dest.size() - suffix.size());

	std::string script = "set -e; mount --bind '" + dest + prefix + "' '" + prefix + "'; export PATH='" + prefix +
			     "/bin':$PATH; unset LD_LIBRARY_PATH PKG_CONFIG_PATH; cd '" + dir.path() + "'; cp '" + source +
			     "/examples/ring.c' prog.c; cc prog.c $(pkg-config --cflags --libs rma) -o prog; rmarun -n 4 ./prog; "
			     "rmabench --help >/dev/null";
	r = runCommand({ "unshare", "-m", "/bin/sh", "-c", script }, 120);
	EXPECT_EQ(r.status, 0) << r.out << r.err;
	for (int rank = 0; rank < 4; ++rank)
		EXPECT_NE(r.out.find("rank " + std::to_string(rank) + " of 4: my left neighbour put " +
				     std::to_string((rank + 3) % 4)),
			  std::string::npos)
			<< r.out << r.err;
}

/* librma.so's exports carry a version node, so later ABI changes can be versioned. */
TEST(InstallTest, ExportsCarryTheVersionNode)
{
	std::string build = env("RMA_BUILD_ROOT");
	CommandResult r = sh("objdump -T '" + build + "/librma.so' | grep -c ' LIBRMA_0.1 *rma_'");
	EXPECT_GT(std::atoi(r.out.c_str()), 60) << r.out << r.err;
	r = sh("objdump -T '" + build + "/librma.so' | grep ' rma_' | grep -vc 'LIBRMA_0.1'");
	EXPECT_EQ(std::atoi(r.out.c_str()), 0) << "exports without the version node";
}

TEST(FaultTest, KilledRankEndsTheJobAndLeavesNoMemoryBehind)
{
	std::string rmarun = env("RMA_RMARUN");
	std::string prog = env("RMA_DIE_HOLDING");
	ASSERT_FALSE(rmarun.empty());
	ASSERT_FALSE(prog.empty());
	auto shmBefore = devShm();
	long shmemBefore = meminfoKb("Shmem");
	auto t0 = std::chrono::steady_clock::now();
	/* 4 ranks x 64 MiB, oversubscribed on this host. */
	CommandResult r = runCommand({ rmarun, "-n", "4", "--bind", "none", prog, "64" }, 60);
	double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	EXPECT_EQ(r.status, 128 + 9) << r.out << r.err;
	EXPECT_LT(seconds, 15.0) << "the job took too long to stop";
	EXPECT_NE(r.err.find("rank 3"), std::string::npos) << r.err;
	/* Nothing named in /dev/shm, and the 256 MiB of Shmem went back. */
	EXPECT_EQ(devShm(), shmBefore);
	long shmemAfter = meminfoKb("Shmem");
	EXPECT_LT(shmemAfter - shmemBefore, 32 * 1024) << "Shmem grew from " << shmemBefore << " to " << shmemAfter
						       << " kB";
}

} /* namespace */
