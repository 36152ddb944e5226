/* SPDX-License-Identifier: MIT */
/*
 * A 16-byte round trip over loopback TCP (127.0.0.1, TCP_NODELAY) through
 * the net agent's engine (lib/net/uring_loop.h) against raw sockets, in one
 * process: the benchmark's thread is the origin (plain send and a busy
 * recv(MSG_DONTWAIT), as inter-host.md §8 plans for origins), a second
 * thread echoes.
 *
 *   BM_RawPingPong/16       the echo thread busy-polls recv(MSG_DONTWAIT) and
 *                           sends back the 16 bytes: the raw baseline
 *   BM_RawPingPong/48       the same with 48 bytes, the size of the engine's
 *                           frame (32-byte header + 16 bytes)
 *   BM_EnginePingPong/B/P   the echo thread runs a NetLoop (B 0: io_uring,
 *                           1: poll backend) and echoes each frame from
 *                           onFrame; P 0: it busy-polls poll(), 1: it parks
 *                           in wait() between messages (the wake-up cost)
 *
 * Each reports the mean (Google Benchmark's time) and, as counters, the
 * median and 99th percentile of the individual round trips in µs. The echo
 * thread is pinned to the first allowed CPU and the origin to the last. On
 * 2 cores both threads spin: run it on a quiet machine, e.g.
 *   build/bench/net_pingpong --benchmark_repetitions=3
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/cache.h"
#include "common/unique_fd.h"
#include "net/frame.h"
#include "net/tcp_pair.h"
#include "net/uring_loop.h"

namespace librma {
namespace {

using Clock = std::chrono::steady_clock;

/*
 * The echo thread on the first allowed CPU, the origin on the last (when
 * there are two): the two spinners never share a core, whatever else runs.
 */
struct Pinning {
	cpu_set_t saved;
	int echoCpu = -1;
	int originCpu = -1;
	Pinning()
	{
		pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
		for (int c = 0; c < CPU_SETSIZE; ++c) {
			if (!CPU_ISSET(c, &saved))
				continue;
			if (echoCpu < 0)
				echoCpu = c;
			originCpu = c;
		}
		if (originCpu != echoCpu)
			pin(originCpu);
	}
	~Pinning() { pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved); }
	/* Call from the echo thread. */
	void pinEcho() const
	{
		if (originCpu != echoCpu)
			pin(echoCpu);
	}
	static void pin(int cpu)
	{
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
};

/* Busy-poll until @n bytes arrived; false on EOF or error. */
bool recvSpin(int fd, uint8_t *buf, std::size_t n, const std::atomic<bool> *stop = nullptr)
{
	std::size_t got = 0;
	while (got < n) {
		ssize_t r = ::recv(fd, buf + got, n - got, MSG_DONTWAIT);
		if (r > 0) {
			got += static_cast<std::size_t>(r);
		} else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			return false;
		} else if (stop && stop->load(std::memory_order_relaxed)) {
			return false;
		}
	}
	return true;
}

bool sendAll(int fd, const uint8_t *buf, std::size_t n)
{
	std::size_t off = 0;
	while (off < n) {
		ssize_t w = ::send(fd, buf + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		off += static_cast<std::size_t>(w);
	}
	return true;
}

/* The origin's side: one round trip per iteration; percentiles as counters. */
void originLoop(benchmark::State &state, int fd, std::vector<uint8_t> &msg)
{
	std::vector<uint8_t> reply(msg.size());
	std::vector<double> rtt;
	rtt.reserve(1 << 20);
	for (auto _ : state) {
		auto t0 = Clock::now();
		if (!sendAll(fd, msg.data(), msg.size()) || !recvSpin(fd, reply.data(), reply.size())) {
			state.SkipWithError("the echo side went away");
			break;
		}
		if (rtt.size() < rtt.capacity())
			rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
	}
	if (!rtt.empty()) {
		std::sort(rtt.begin(), rtt.end());
		state.counters["p50_us"] = rtt[rtt.size() / 2];
		state.counters["p99_us"] = rtt[rtt.size() * 99 / 100];
	}
	state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(msg.size()) * 2);
}

void BM_RawPingPong(benchmark::State &state)
{
	const auto size = static_cast<std::size_t>(state.range(0));
	auto [s, c] = net::loopbackTcpPair();
	if (!s.isValid()) {
		state.SkipWithError("no loopback TCP");
		return;
	}
	std::atomic<bool> stop{ false };
	Pinning pins;
	std::thread echo([fd = s.get(), size, &stop, &pins] {
		pins.pinEcho();
		std::vector<uint8_t> buf(size);
		while (recvSpin(fd, buf.data(), size, &stop) && sendAll(fd, buf.data(), size)) {
		}
	});
	std::vector<uint8_t> msg(size, 0x5a);
	originLoop(state, c.get(), msg);
	stop.store(true, std::memory_order_relaxed);
	::shutdown(c.get(), SHUT_RDWR);
	echo.join();
}
BENCHMARK(BM_RawPingPong)->Arg(16)->Arg(48)->UseRealTime();

struct Echo {
	net::NetLoop *loop = nullptr;
	std::atomic<bool> closed{ false };
};

void BM_EnginePingPong(benchmark::State &state)
{
	const bool poll = state.range(0) != 0;
	const bool park = state.range(1) != 0;
	auto [s, c] = net::loopbackTcpPair();
	if (!s.isValid()) {
		state.SkipWithError("no loopback TCP");
		return;
	}
	Echo echo;
	std::atomic<int> ready{ 0 }; /* 1: serving, -1: the loop could not be made */
	std::string backend;
	Pinning pins;
	std::thread agent([&, fd = s.release()] {
		pins.pinEcho();
		net::FrameHandler h;
		h.onFrame = [](void *ctx, net::ConnId id, std::span<const uint8_t> f) noexcept {
			(void)static_cast<Echo *>(ctx)->loop->send(id, f);
		};
		h.onClosed = [](void *ctx, net::ConnId, int) noexcept {
			static_cast<Echo *>(ctx)->closed.store(true, std::memory_order_relaxed);
		};
		h.ctx = &echo;
		net::NetLoopConfig cfg;
		cfg.policy = poll ? net::UringPolicy::Off : net::UringPolicy::Require;
		/* The loop is made on the thread that drives it (SINGLE_ISSUER). */
		auto loop = net::makeNetLoop(h, cfg);
		if (!loop.ok() || !loop.value()->addConnection(UniqueFd(fd)).ok()) {
			ready.store(-1, std::memory_order_release);
			return;
		}
		echo.loop = loop.value().get();
		backend = echo.loop->describe();
		/* Release: publishes backend to the benchmark thread. */
		ready.store(1, std::memory_order_release);
		while (!echo.closed.load(std::memory_order_relaxed)) {
			if (park)
				echo.loop->wait(100'000'000);
			else
				echo.loop->poll();
		}
	});
	int r;
	while ((r = ready.load(std::memory_order_acquire)) == 0)
		cpuRelax();
	if (r < 0) {
		state.SkipWithError(poll ? "no poll loop" : "io_uring lacks a feature the engine needs (RMA_NET_URING=require)");
		agent.join();
		return;
	}
	state.SetLabel(backend + (park ? ", parks between messages" : ", busy-polls"));
	std::vector<uint8_t> msg(net::kHeaderBytes + 16);
	net::FrameWriter w(msg);
	net::FrameHeader hd;
	hd.kind = static_cast<uint16_t>(net::FrameKind::GetReply);
	hd.window = 1;
	w.begin(hd);
	uint8_t body[16] = {};
	w.put(body, sizeof(body));
	(void)w.end();
	originLoop(state, c.get(), msg);
	::shutdown(c.get(), SHUT_RDWR);
	agent.join();
}
BENCHMARK(BM_EnginePingPong)
	->ArgNames({ "poll", "park" })
	->Args({ 0, 0 })
	->Args({ 1, 0 })
	->Args({ 0, 1 })
	->Args({ 1, 1 })
	->UseRealTime();

} /* namespace */
} /* namespace librma */

BENCHMARK_MAIN();
