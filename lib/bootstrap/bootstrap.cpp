/* SPDX-License-Identifier: MIT */
#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_base.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "bootstrap/pmix_bootstrap.h"
#include "bootstrap/protocol.h"
#include "common/knobs.h"
#include "error/error.h"

#include "config.h"

namespace librma {

namespace {

/* What each rank tells every other at start. */
struct RankInfo {
	int64_t pid;
	uint64_t hostId;
};

/* FNV-1a of the host name: equal on every rank of a host. */
uint64_t hostId()
{
	char name[256] = {};
	gethostname(name, sizeof(name) - 1);
	uint64_t hash = 0xcbf29ce484222325ull;
	for (const char *c = name; *c; ++c) {
		hash ^= static_cast<unsigned char>(*c);
		hash *= 0x100000001b3ull;
	}
	return hash;
}

bool parseInt(const char *text, int &value)
{
	if (!text)
		return false;
	std::string_view view(text);
	auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
	return ec == std::errc() && end == view.data() + view.size();
}

} /* namespace */

int BootstrapBase::allgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			     std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	if (ctx == kBootstrapCtx)
		return makeError(RMA_ERR_ARG, "allgather: context 0 is reserved for the bootstrap");
	return checkedExchange(ctx, seq, members, myIndex, data, fds, out);
}

int BootstrapBase::consistentAllgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
				       std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	if (ctx == kBootstrapCtx)
		return makeError(RMA_ERR_ARG, "allgather: context 0 is reserved for the bootstrap");
	/* A call that the launcher's path would refuse is refused before either path is taken. */
	RMA_TRY(checkArgs(ctx, seq, members, myIndex, data, fds));
	/* Members of one collective decide alike: the members, the data length and the host's board. */
	if (board_.valid() && members.size() > 1 && HostBoard::fits(data.size())) {
		/* checkArgs() vouched for the members and the index. */
		bool local = true;
		for (int m : members)
			local = local && boardSlot_[static_cast<std::size_t>(m)] != UINT32_MAX;
		if (local)
			return boardExchange(ctx, seq, members, myIndex, data, fds, out);
	}
	return checkedExchange(ctx, seq, members, myIndex, data, fds, out);
}

int BootstrapBase::boardExchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
				 std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	const std::size_t n = members.size();
	std::vector<uint32_t> slots(n);
	std::vector<pid_t> pids(n);
	for (std::size_t i = 0; i < n; ++i) {
		slots[i] = boardSlot_[static_cast<std::size_t>(members[i])];
		pids[i] = pids_[static_cast<std::size_t>(members[i])];
	}
	/*
	 * A member whose pid is gone (reaped by the launcher, which marks it
	 * dead too). Not the status page alone: a rank may be marked dead
	 * there (a test pretends so) while it still takes part, and the
	 * socket path would still meet it: members must agree.
	 */
	auto dead = [&](std::size_t i) { return kill(pids[i], 0) < 0 && errno == ESRCH; };
	bool fdsElsewhere = false;
	RMA_TRY(board_.allgather(ctx, seq, members, myIndex, slots, pids, data, fds, dead, out, fdsElsewhere));
	if (fdsElsewhere) {
		/* Every member knows it from the board: the descriptors alone, through the launcher or channel. */
		GatherResult passed;
		RMA_TRY(checkedExchange(ctx, seq, members, myIndex, {}, fds, passed));
		if (passed.fdCounts != out.fdCounts)
			return makeError(RMA_ERR_INTERN, "allgather ctx=%llu seq=%llu: the descriptor counts disagree",
					 (unsigned long long)ctx, (unsigned long long)seq);
		out.fds = std::move(passed.fds);
	}
	return RMA_SUCCESS;
}

int BootstrapBase::setUpHostBoard()
{
	std::vector<int> local;
	for (int r = 0; r < size_; ++r)
		if (hosts_[static_cast<std::size_t>(r)] == hosts_[static_cast<std::size_t>(rank_)])
			local.push_back(r);
	if (local.size() < 2)
		return RMA_SUCCESS;
	/*
	 * RMA_BOOT_BOARD: 0 never, 1 always, unset: when the host's ranks do
	 * not outnumber its CPUs. With more ranks than CPUs, sleeping waiters
	 * woken one by one do no better than the launcher's single answer (4
	 * ranks on 2 CPUs under rmarun: a barrier 46-48 µs against 38-42 µs,
	 * a 4 KiB window 330 µs against 371-382 µs), so the socket stays.
	 * Each rank says whether it is willing in the first round, which every
	 * local rank joins whatever it decides (the variable may differ
	 * between ranks): one unwilling rank keeps the board from all.
	 */
	const char *knob = knobValue("RMA_BOOT_BOARD");
	const bool crowded = local.size() > static_cast<std::size_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
	const bool willing = boardAllowed() && !(knob && std::string_view(knob) == "0") &&
			     !(crowded && !(knob && std::string_view(knob) == "1"));
	const int leader = local.front();
	const int myIndex = static_cast<int>(std::find(local.begin(), local.end(), rank_) - local.begin());
	const auto slots = static_cast<uint32_t>(local.size());

	/*
	 * Round 1: each rank's willingness and pid namespace (pids and
	 * /proc/PID/fd mean nothing across namespaces); the leader's board,
	 * with its descriptor's number and identity there.
	 */
	struct Offer {
		int32_t willing;
		int32_t fd;       /* the leader's board descriptor; -1: none */
		uint64_t pidNs;   /* inode of /proc/self/ns/pid (0: unknown) */
		uint64_t dev, ino; /* the board's identity (leader) */
	};
	struct stat ns{};
	Offer offer{ willing ? 1 : 0, -1, stat("/proc/self/ns/pid", &ns) == 0 ? static_cast<uint64_t>(ns.st_ino) : 0, 0, 0 };
	HostBoard board;
	if (rank_ == leader && willing) {
		if (auto made = HostBoard::create(slots)) {
			board = std::move(made.value());
			struct stat st{};
			if (fstat(board.fd(), &st) == 0) {
				offer.fd = board.fd();
				offer.dev = static_cast<uint64_t>(st.st_dev);
				offer.ino = static_cast<uint64_t>(st.st_ino);
			}
		}
	}
	const int boardFd = board.fd();
	GatherResult first;
	RMA_TRY(checkedExchange(kBootstrapCtx, 2, local, myIndex, { reinterpret_cast<const std::byte *>(&offer), sizeof(offer) },
				offer.fd >= 0 ? std::span<const int>(&boardFd, 1) : std::span<const int>(), first));
	std::vector<Offer> offers(local.size());
	std::memcpy(offers.data(), first.data.data(), offers.size() * sizeof(Offer));
	bool usable = offers.front().fd >= 0;
	for (const Offer &o : offers)
		usable = usable && o.willing && o.pidNs != 0 && o.pidNs == offers.front().pidNs;
	if (!usable)
		return RMA_SUCCESS; /* every local rank sees the same offers: no board */

	/* Round 2: each other rank maps it and reopens the leader's descriptor as the board will (same file?). */
	struct Verdict {
		int32_t mapped;
		int32_t reopened;
	};
	Verdict mine{ 1, 1 };
	if (rank_ != leader) {
		mine.mapped = 0;
		if (first.fds.size() == 1) {
			if (auto mapped = HostBoard::attach(first.fds.front().release(), slots)) {
				board = std::move(mapped.value());
				mine.mapped = 1;
			}
		}
		char path[64];
		std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(pids_[static_cast<std::size_t>(leader)]),
			      offers.front().fd);
		UniqueFd probe(open(path, O_RDWR | O_CLOEXEC));
		struct stat st{};
		mine.reopened = probe.isValid() && fstat(probe.get(), &st) == 0 &&
				static_cast<uint64_t>(st.st_dev) == offers.front().dev &&
				static_cast<uint64_t>(st.st_ino) == offers.front().ino;
	}
	GatherResult second;
	RMA_TRY(checkedExchange(kBootstrapCtx, 3, local, myIndex, { reinterpret_cast<const std::byte *>(&mine), sizeof(mine) },
				{}, second));
	bool mapped = true, reopened = true;
	for (std::size_t i = 0; i < local.size(); ++i) {
		Verdict v;
		std::memcpy(&v, second.data.data() + i * sizeof(v), sizeof(v));
		mapped = mapped && v.mapped;
		reopened = reopened && v.reopened;
	}
	if (!mapped)
		return RMA_SUCCESS;
	board.setReopen(reopened);
	board.setOversubscribed(crowded);
	/* Every local rank has mapped it (and probed the leader's descriptor): no descriptor stays open for it. */
	board.closeFd();
	boardSlot_.assign(static_cast<std::size_t>(size_), UINT32_MAX);
	for (std::size_t i = 0; i < local.size(); ++i)
		boardSlot_[static_cast<std::size_t>(local[i])] = static_cast<uint32_t>(i);
	board_ = std::move(board);
	return RMA_SUCCESS;
}

uint64_t BootstrapBase::hostKey() const
{
	return hostId();
}

int BootstrapBase::init(int rank, int size)
{
	rank_ = rank;
	size_ = size;
	std::vector<int> world(size);
	for (int i = 0; i < size; ++i)
		world[i] = i;
	RankInfo me = { getpid(), hostKey() };
	GatherResult result;
	RMA_TRY(checkedExchange(kBootstrapCtx, 0, world, rank, { reinterpret_cast<const std::byte *>(&me), sizeof(me) },
				{}, result));

	std::vector<RankInfo> infos(size);
	std::memcpy(infos.data(), result.data.data(), size * sizeof(RankInfo));
	std::vector<uint64_t> hostIds;
	for (const RankInfo &info : infos) {
		pids_.push_back(static_cast<pid_t>(info.pid));
		/* Host index: order of first appearance of the host's id. */
		std::size_t index = 0;
		while (index < hostIds.size() && hostIds[index] != info.hostId)
			++index;
		if (index == hostIds.size())
			hostIds.push_back(info.hostId);
		hosts_.push_back(static_cast<int>(index));
	}
	return RMA_SUCCESS;
}

int BootstrapBase::checkedExchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
				   std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	RMA_TRY(checkArgs(ctx, seq, members, myIndex, data, fds));
	return exchange(ctx, seq, members, myIndex, data, fds, out);
}

int BootstrapBase::checkArgs(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			     std::span<const std::byte> data, std::span<const int> fds) const
{
	if (members.empty() || members.size() > static_cast<std::size_t>(size_) || myIndex < 0 ||
	    static_cast<std::size_t>(myIndex) >= members.size() || members[myIndex] != rank_)
		return makeError(RMA_ERR_ARG, "allgather ctx=%llu seq=%llu: rank %d is not member %d of %zu",
				 (unsigned long long)ctx, (unsigned long long)seq, rank_, myIndex, members.size());
	for (int member : members) {
		if (member < 0 || member >= size_)
			return makeError(RMA_ERR_ARG,
					 "allgather ctx=%llu seq=%llu: member %d is not a rank of a job of %d",
					 (unsigned long long)ctx, (unsigned long long)seq, member, size_);
	}
	if (data.size() > boot::kMaxMessageBytes / members.size() || fds.size() > boot::kMaxMessageFds)
		return makeError(RMA_ERR_ARG, "allgather ctx=%llu seq=%llu: %zu bytes and %zu descriptors is too much",
				 (unsigned long long)ctx, (unsigned long long)seq, data.size(), fds.size());
	return RMA_SUCCESS;
}

std::string Bootstrap::hostName() const
{
	char name[256] = {};
	gethostname(name, sizeof(name) - 1);
	return name;
}

namespace {

/* A job of one process: collectives are local copies. */
class SingletonBootstrap final : public BootstrapBase
{
public:
	const char *kind() const override { return "singleton"; }

	[[noreturn]] void abort(int code) override
	{
		std::fflush(nullptr);
		_exit(code);
	}

protected:
	int exchange(uint64_t ctx, uint64_t seq, std::span<const int>, int, std::span<const std::byte> data,
		     std::span<const int> fds, GatherResult &out) override
	{
		/* The job is this process, so a process-wide counter is job-unique. */
		static std::atomic<uint64_t> instances{ 0 };

		std::vector<UniqueFd> copies;
		for (int fd : fds) {
			int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			if (copy < 0)
				return makeErrnoError(RMA_ERR_INTERN, errno,
						      "allgather ctx=%llu seq=%llu: cannot duplicate fd %d",
						      (unsigned long long)ctx, (unsigned long long)seq, fd);
			copies.emplace_back(copy);
		}
		out.data.assign(data.begin(), data.end());
		out.fds = std::move(copies);
		out.fdCounts = { static_cast<int>(fds.size()) };
		out.instance = instances.fetch_add(1, std::memory_order_relaxed) + 1;
		return RMA_SUCCESS;
	}
};

/* A rank of a job served by the launcher (see protocol.h). */
class LauncherBootstrap final : public BootstrapBase
{
public:
	explicit LauncherBootstrap(UniqueFd sock) : sock_(std::move(sock)) {}

	const char *kind() const override { return "rmarun"; }

	/* Tell the launcher, which stops every rank; then leave. */
	[[noreturn]] void abort(int code) override
	{
		std::fflush(nullptr);
		std::vector<std::byte> body;
		boot::appendPod(body, boot::AbortRequest{ boot::MsgType::Abort, code });
		/* No error check: if the launcher is gone, there is nobody to tell. */
		(void)send(body, {});
		_exit(code);
	}

protected:
	int exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		     std::span<const std::byte> data, std::span<const int> fds, GatherResult &out) override
	{
		std::vector<std::byte> body;
		body.reserve(sizeof(boot::GatherRequest) + members.size() * sizeof(int32_t) + data.size());
		boot::appendPod(body, boot::GatherRequest{ boot::MsgType::Gather, static_cast<uint32_t>(members.size()),
							   ctx, seq, data.size(), myIndex, 0 });
		for (int member : members)
			boot::appendPod(body, static_cast<int32_t>(member));
		body.insert(body.end(), data.begin(), data.end());
		int rc = send(body, fds);
		if (rc < 0)
			return makeErrnoError(RMA_ERR_INTERN, -rc,
					      "allgather ctx=%llu seq=%llu: cannot send to the launcher",
					      (unsigned long long)ctx, (unsigned long long)seq);

		/* Block until the launcher answers: this is the setup path. */
		boot::InMessage reply;
		while ((rc = boot::recvPacket(sock_.get(), reply, 0)) == 0)
			;
		if (rc == -ECONNRESET)
			return makeError(RMA_ERR_INTERN,
					 "allgather ctx=%llu seq=%llu: the launcher closed the connection",
					 (unsigned long long)ctx, (unsigned long long)seq);
		if (rc < 0)
			return makeErrnoError(RMA_ERR_INTERN, -rc,
					      "allgather ctx=%llu seq=%llu: cannot receive from the launcher",
					      (unsigned long long)ctx, (unsigned long long)seq);
		return parseReply(ctx, seq, members.size(), data.size(), reply, out);
	}

private:
	/* Send one message; abort() may race with allgather() from another thread. */
	int send(std::span<const std::byte> body, std::span<const int> fds)
	{
		std::lock_guard<std::mutex> guard(sendLock_);
		boot::OutMessage msg{ body, fds, nullptr };
		while (!msg.done()) {
			int rc = boot::sendPacket(sock_.get(), msg, 0);
			if (rc < 0)
				return rc;
		}
		return 0;
	}

	static int parseReply(uint64_t ctx, uint64_t seq, std::size_t n, std::size_t len, boot::InMessage &reply,
			      GatherResult &out)
	{
		boot::BodyReader reader(reply.body);
		uint32_t type = boot::messageType(reply.body);
		if (type == static_cast<uint32_t>(boot::MsgType::Error)) {
			boot::ErrorReply error;
			std::span<const std::byte> text;
			if (reader.read(error) && reader.take(error.textLen, text) && error.errorClass > 0 &&
			    error.errorClass < RMA_ERR_LASTCODE)
				return makeError(error.errorClass, "%.*s", static_cast<int>(text.size()),
						 reinterpret_cast<const char *>(text.data()));
		} else if (type == static_cast<uint32_t>(boot::MsgType::GatherReply)) {
			boot::GatherReply header;
			std::span<const std::byte> rawCounts, data;
			if (reader.read(header) && header.memberCount == n && header.dataLen == len &&
			    reader.take(n * sizeof(int32_t), rawCounts) && reader.take(n * len, data) &&
			    reader.remaining() == 0) {
				std::vector<int> fdCounts(n);
				std::memcpy(fdCounts.data(), rawCounts.data(), rawCounts.size());
				std::size_t total = 0;
				bool countsValid = true;
				for (int count : fdCounts) {
					countsValid &= count >= 0;
					total += static_cast<std::size_t>(count);
				}
				if (countsValid && total == reply.fds.size()) {
					out.data.assign(data.begin(), data.end());
					out.fds = std::move(reply.fds);
					out.fdCounts = std::move(fdCounts);
					out.instance = header.instance;
					return RMA_SUCCESS;
				}
			}
		}
		return makeError(RMA_ERR_INTERN, "allgather ctx=%llu seq=%llu: malformed reply from the launcher",
				 (unsigned long long)ctx, (unsigned long long)seq);
	}

	std::mutex sendLock_;
	UniqueFd sock_;
};

} /* namespace */

namespace {

using BootPtr = std::unique_ptr<Bootstrap>;

Result<BootPtr> startSingleton()
{
	auto singleton = std::make_unique<SingletonBootstrap>();
	if (int rc = singleton->init(0, 1); rc != RMA_SUCCESS)
		return Result<BootPtr>::failure(rc);
	return BootPtr(std::move(singleton));
}

/* A rank of an rmarun job: RMA_BOOT_FD, RMA_RANK, RMA_SIZE (and RMA_JOB_FD) name everything. */
Result<BootPtr> startLauncherClient()
{
	using Ptr = BootPtr;
	const char *fdText = std::getenv("RMA_BOOT_FD");
	const char *rankText = std::getenv("RMA_RANK");
	const char *sizeText = std::getenv("RMA_SIZE");
	int fd, rank, size;
	if (!parseInt(fdText, fd) || fd < 0 || !parseInt(rankText, rank) || !parseInt(sizeText, size) || size < 1 ||
	    rank < 0 || rank >= size)
		return Result<Ptr>::failure(makeError(
			RMA_ERR_INTERN, "bad bootstrap environment: RMA_BOOT_FD=%s RMA_RANK=%s RMA_SIZE=%s",
			fdText ? fdText : "(unset)", rankText ? rankText : "(unset)", sizeText ? sizeText : "(unset)"));

	/* Keep the socket from the rank's own children (the environment stays). */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return Result<Ptr>::failure(
			makeErrnoError(RMA_ERR_INTERN, errno, "bootstrap socket RMA_BOOT_FD=%d", fd));
	int type = 0;
	socklen_t typeLen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLen) < 0 || type != SOCK_SEQPACKET)
		return Result<Ptr>::failure(makeError(
			RMA_ERR_INTERN, "bootstrap socket RMA_BOOT_FD=%d is not a SOCK_SEQPACKET socket", fd));

	auto client = std::make_unique<LauncherBootstrap>(UniqueFd(fd));
	/* The launcher's page of dead ranks (RMA_JOB_FD); without it, deaths are seen only by waits. */
	if (const char *jobText = std::getenv("RMA_JOB_FD")) {
		int jobFd;
		if (!parseInt(jobText, jobFd) || jobFd < 0)
			return Result<Ptr>::failure(makeError(RMA_ERR_INTERN, "bad bootstrap environment: RMA_JOB_FD=%s", jobText));
		if (int rc = client->attachJobStatus(jobFd, size); rc < 0)
			return Result<Ptr>::failure(makeErrnoError(RMA_ERR_INTERN, -rc, "job status page RMA_JOB_FD=%d", jobFd));
	}
	if (int rc = client->init(rank, size); rc != RMA_SUCCESS)
		return Result<Ptr>::failure(rc);
	if (int rc = client->setUpHostBoard(); rc != RMA_SUCCESS)
		return Result<Ptr>::failure(rc);
	return Ptr(std::move(client));
}

} /* namespace */

#ifndef HAVE_PMIX
Result<std::unique_ptr<Bootstrap>> startPmixBootstrap()
{
	return Result<std::unique_ptr<Bootstrap>>::failure(makeError(
		RMA_ERR_INTERN, "PMIx bootstrap requested (RMA_BOOT=pmix, or PMIX_NAMESPACE and PMIX_RANK are set), "
				"but librma was built without PMIx (-Dpmix=enabled with libpmix-dev)"));
}

bool pmixEnvironment()
{
	return knobValue("PMIX_NAMESPACE") && knobValue("PMIX_RANK");
}
#endif

Result<std::unique_ptr<Bootstrap>> Bootstrap::fromEnvironment()
{
	/* docs/design/inter-host.md §1.1: forced, then rmarun, then PMIx, then alone. */
	if (const char *forced = knobValue("RMA_BOOT")) {
		std::string_view kind(forced);
		if (kind == "rmarun")
			return startLauncherClient();
		if (kind == "pmix")
			return startPmixBootstrap();
		if (kind == "singleton")
			return startSingleton();
		return Result<BootPtr>::failure(
			makeError(RMA_ERR_INTERN, "RMA_BOOT='%s': accepts rmarun, pmix or singleton", forced));
	}
	if (std::getenv("RMA_BOOT_FD"))
		return startLauncherClient();
	if (pmixEnvironment())
		return startPmixBootstrap();
	return startSingleton();
}

} /* namespace librma */
