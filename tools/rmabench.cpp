/* SPDX-License-Identifier: MIT */
/*
 * rmabench: one-sided microbenchmarks in the manner of the OSU suite.
 *
 *   rmarun -n 2 rmabench latency   [--op put|get] [sizes] [--iterations N] [--skip N] [--flavor F]
 *   rmarun -n 2 rmabench bandwidth [--op put|get] [sizes] [--window W] ...
 *   rmarun -n 2 rmabench fence     [--iterations N]
 *
 * Rank 0 is the origin, rank 1 the target; the other ranks (if any) only
 * take part in the fences. Times are bulk-timed over blocks of iterations
 * (a clock read per operation would cost as much as the operation); the
 * table reports the mean and the min / median / p99 of the block means.
 * The bandwidth test also copies the same bytes with a plain memcpy on one
 * core in the same run, so the ratio to the machine's copy speed is known.
 */
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rma/rma.h>

namespace {

struct Options {
	std::string test = "latency";
	std::string op = "put";
	std::string flavor = "allocate";
	std::string format = "table";
	std::string hugePages = "prefer";
	std::string sync = "fence";
	bool busyTarget = false;
	long minSize = 8;
	long maxSize = 1 << 20;
	long iterations = 0; /* 0: chosen per size */
	long skip = 0;
	long window = 64;
};

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: rmarun -n 2 rmabench TEST [options]\n"
		     "tests:\n"
		     "  latency     time per operation + its synchronization (OSU osu_put_latency / osu_get_latency)\n"
		     "  bandwidth   W operations per fence (OSU osu_put_bw / osu_get_bw), next to a memcpy\n"
		     "  fence       time of an empty fence\n"
		     "  lock        time of lock + unlock of the target, nothing in between\n"
		     "  flush       time of a flush with nothing to complete (in a lock_all epoch)\n"
		     "options:\n"
		     "  --op put|get           operation (default put)\n"
		     "  --min-size BYTES       smallest message (default 8)\n"
		     "  --max-size BYTES       largest message, sizes double (default 1048576)\n"
		     "  --size BYTES           one size only\n"
		     "  --iterations N         timed iterations per size (default: scaled by size)\n"
		     "  --skip N               warm-up iterations (default: iterations / 10)\n"
		     "  --window W             operations per synchronization in bandwidth (default 64)\n"
		     "  --sync MODE            fence | pscw | lock (lock+op+unlock) | lock_all (op+flush)\n"
		     "                         | flush_local (op+flush_local) (default fence)\n"
		     "  --busy-target          passive modes: the target computes, never calling librma\n"
		     "  --flavor F             allocate | allocate_shared | create | dynamic (default allocate)\n"
		     "  --huge-pages P         prefer | require | off (default prefer)\n"
		     "  --format table|csv|json  output format (default table)\n");
}

bool parse(int argc, char **argv, Options &o)
{
	int i = 1;
	if (i < argc && argv[i][0] != '-')
		o.test = argv[i++];
	for (; i < argc; ++i) {
		std::string a = argv[i];
		auto next = [&](const char *what) -> const char * {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "rmabench: %s needs %s\n", a.c_str(), what);
				return nullptr;
			}
			return argv[++i];
		};
		auto number = [&](long &out) {
			const char *v = next("a number");
			if (!v)
				return false;
			char *end;
			out = std::strtol(v, &end, 10);
			if (*end || out < 0) {
				std::fprintf(stderr, "rmabench: %s: '%s' is not a non-negative number\n", a.c_str(), v);
				return false;
			}
			return true;
		};
		/* Options that take a word or a number. */
		const struct {
			const char *name;
			std::string *word;
			long *number;
			const char *what;
		} valued[] = {
			{ "--op", &o.op, nullptr, "put or get" },
			{ "--flavor", &o.flavor, nullptr, "a window flavor" },
			{ "--format", &o.format, nullptr, "table, csv or json" },
			{ "--huge-pages", &o.hugePages, nullptr, "prefer, require or off" },
			{ "--sync", &o.sync, nullptr, "fence, pscw, lock, lock_all or flush_local" },
			{ "--min-size", nullptr, &o.minSize, "a number" },
			{ "--max-size", nullptr, &o.maxSize, "a number" },
			{ "--iterations", nullptr, &o.iterations, "a number" },
			{ "--skip", nullptr, &o.skip, "a number" },
			{ "--window", nullptr, &o.window, "a number" },
		};
		bool known = false;
		for (const auto &opt : valued) {
			if (a != opt.name)
				continue;
			known = true;
			if (opt.word) {
				const char *v = next(opt.what);
				if (!v)
					return false;
				*opt.word = v;
			} else if (!number(*opt.number)) {
				return false;
			}
		}
		if (known)
			continue;
		if (a == "-h" || a == "--help") {
			usage(stdout);
			std::exit(0);
		} else if (a == "--size") {
			if (!number(o.minSize))
				return false;
			o.maxSize = o.minSize;
		} else if (a == "--busy-target") {
			o.busyTarget = true;
		} else {
			std::fprintf(stderr, "rmabench: unknown option '%s'\n", a.c_str());
			return false;
		}
	}
	if (o.sync != "fence" && o.sync != "pscw" && o.sync != "lock" && o.sync != "lock_all" && o.sync != "flush_local") {
		std::fprintf(stderr, "rmabench: unknown sync mode '%s'\n", o.sync.c_str());
		return false;
	}
	if (o.test == "lock")
		o.sync = "lock";
	if (o.test == "flush")
		o.sync = "lock_all";
	if (o.busyTarget && (o.sync == "fence" || o.sync == "pscw")) {
		std::fprintf(stderr, "rmabench: --busy-target needs a passive mode (--sync lock|lock_all|flush_local)\n");
		return false;
	}
	if (o.test != "latency" && o.test != "bandwidth" && o.test != "fence" && o.test != "lock" && o.test != "flush") {
		std::fprintf(stderr, "rmabench: unknown test '%s'\n", o.test.c_str());
		return false;
	}
	if (o.op != "put" && o.op != "get") {
		std::fprintf(stderr, "rmabench: --op must be put or get\n");
		return false;
	}
	if (o.flavor != "allocate" && o.flavor != "allocate_shared" && o.flavor != "create" && o.flavor != "dynamic") {
		std::fprintf(stderr, "rmabench: unknown flavor '%s'\n", o.flavor.c_str());
		return false;
	}
	if (o.format != "table" && o.format != "csv" && o.format != "json") {
		std::fprintf(stderr, "rmabench: unknown format '%s'\n", o.format.c_str());
		return false;
	}
	if (o.minSize < 1 || o.maxSize < o.minSize || o.window < 1) {
		std::fprintf(stderr, "rmabench: need 1 <= min-size <= max-size and window >= 1\n");
		return false;
	}
	return true;
}

void check(int rc, const char *what)
{
	if (rc == RMA_SUCCESS)
		return;
	char msg[RMA_MAX_ERROR_STRING];
	int len = 0;
	rma_error_string(rc, msg, &len);
	std::fprintf(stderr, "rmabench: %s failed: %s\n", what, msg);
	rma_abort(RMA_COMM_WORLD, 1);
}

/* A window of @bytes per rank of the flavor asked for; @disp0 is target_disp 0 at rank 1. */
struct BenchWindow {
	rma_win win = RMA_WIN_NULL;
	std::byte *base = nullptr;
	rma_aint disp0 = 0;
	void *owned = nullptr;
	std::string pageSize;
	std::string node;
};

BenchWindow makeWindow(const Options &o, size_t bytes)
{
	BenchWindow w;
	rma_info info;
	rma_info_create(&info);
	rma_info_set(info, "rma_huge_pages", o.hugePages.c_str());
	if (o.flavor == "allocate") {
		check(rma_win_allocate(bytes, 1, info, RMA_COMM_WORLD, &w.base, &w.win), "rma_win_allocate");
	} else if (o.flavor == "allocate_shared") {
		check(rma_win_allocate_shared(bytes, 1, info, RMA_COMM_WORLD, &w.base, &w.win), "rma_win_allocate_shared");
	} else {
		check(rma_alloc_mem(bytes, info, &w.base), "rma_alloc_mem");
		w.owned = w.base;
		if (o.flavor == "create") {
			check(rma_win_create(w.base, bytes, 1, info, RMA_COMM_WORLD, &w.win), "rma_win_create");
		} else {
			check(rma_win_create_dynamic(info, RMA_COMM_WORLD, &w.win), "rma_win_create_dynamic");
			check(rma_win_attach(w.win, w.base, bytes), "rma_win_attach");
		}
	}
	rma_info_free(&info);
	/* Learn rank 1's base address (dynamic windows address by it). */
	rma_aint mine = 0;
	rma_get_address(w.base, &mine);
	rma_win ex;
	rma_aint *slot;
	check(rma_win_allocate(sizeof(rma_aint), 1, RMA_INFO_NULL, RMA_COMM_WORLD, &slot, &ex), "exchange window");
	check(rma_win_fence(0, ex), "fence");
	int rank;
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	if (rank == 1)
		check(rma_put(&mine, 1, RMA_AINT, 0, 0, 1, RMA_AINT, ex), "put");
	check(rma_win_fence(0, ex), "fence");
	if (o.flavor == "dynamic")
		w.disp0 = *slot;
	check(rma_win_free(&ex), "free");

	rma_info used;
	rma_win_get_info(w.win, &used);
	char v[64];
	int flag;
	rma_info_get(used, "rma_page_size", 63, v, &flag);
	w.pageSize = flag ? v : "?";
	rma_info_get(used, "rma_numa_node", 63, v, &flag);
	w.node = flag ? v : "?";
	rma_info_free(&used);
	return w;
}

void freeWindow(BenchWindow &w)
{
	check(rma_win_free(&w.win), "rma_win_free");
	if (w.owned)
		check(rma_free_mem(w.owned), "rma_free_mem");
}

struct Row {
	long size;
	long iterations;
	double mean;   /* us per op (latency) or MB/s (bandwidth) */
	double min, median, p99;
	double memcpyMBs = 0; /* bandwidth only */
};

/* Summary of block means (in seconds per unit). */
void summarize(std::vector<double> blocks, Row &row, double scale)
{
	std::sort(blocks.begin(), blocks.end());
	row.min = blocks.front() * scale;
	row.median = blocks[blocks.size() / 2] * scale;
	row.p99 = blocks[std::min(blocks.size() - 1, static_cast<size_t>(blocks.size() * 0.99))] * scale;
}

long itersFor(const Options &o, long size, long small, long large)
{
	if (o.iterations)
		return o.iterations;
	return size <= 8192 ? small : std::max<long>(large * 8192 / size, 20);
}

/* Time of @iters calls of @fn, in blocks of @block. */
template<typename Fn>
std::vector<double> timeBlocks(long iters, long block, Fn &&fn)
{
	std::vector<double> out;
	for (long done = 0; done < iters; done += block) {
		long n = std::min(block, iters - done);
		double t0 = rma_wtime();
		for (long i = 0; i < n; ++i)
			fn();
		out.push_back((rma_wtime() - t0) / static_cast<double>(n));
	}
	return out;
}

/* A latency row: @skip warm-up calls of @fn, then @iters timed in blocks of @block. */
template<typename Fn>
Row latencyRow(long size, long iters, long skip, long block, Fn &&fn)
{
	for (long i = 0; i < skip; ++i)
		fn();
	auto blocks = timeBlocks(iters, block, fn);
	Row row{};
	row.size = size;
	row.iterations = iters;
	double total = 0;
	for (double b : blocks)
		total += b;
	row.mean = total / static_cast<double>(blocks.size()) * 1e6;
	summarize(blocks, row, 1e6);
	return row;
}

/* Page-aligned buffers, as OSU uses (a misaligned source slows rep movsb down). */
struct PageBuffer {
	explicit PageBuffer(size_t bytes, char fill)
		: data(static_cast<char *>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)))
	{
		std::memset(data, fill, bytes);
	}
	~PageBuffer() { std::free(data); }
	PageBuffer(const PageBuffer &) = delete;
	PageBuffer &operator=(const PageBuffer &) = delete;
	char *data;
};

double memcpyBandwidth(size_t bytes, long reps)
{
	PageBuffer a(bytes, 1), b(bytes, 2);
	for (int i = 0; i < 3; ++i)
		std::memcpy(b.data, a.data, bytes);
	double t0 = rma_wtime();
	for (long i = 0; i < reps; ++i) {
		std::memcpy(b.data, a.data, bytes);
		asm volatile("" ::"r"(b.data) : "memory");
	}
	double t = rma_wtime() - t0;
	return static_cast<double>(bytes) * static_cast<double>(reps) / t / 1e6;
}


/*
 * The floor under any fence: each rank stores a counter to its own cache
 * line and polls every other rank's, through memory shared with
 * rma_win_allocate_shared, with no librma call in the loop.
 */
double rawBarrierMicros(long iters)
{
	int rank, size;
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);
	rma_win win;
	std::byte *mine;
	check(rma_win_allocate_shared(128, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &mine, &win), "rma_win_allocate_shared");
	std::vector<uint64_t *> lines(size);
	for (int r = 0; r < size; ++r) {
		rma_aint sz;
		int unit;
		check(rma_win_shared_query(win, r, &sz, &unit, &lines[r]), "rma_win_shared_query");
	}
	check(rma_win_fence(0, win), "rma_win_fence");
	uint64_t e = 0;
	auto barrier = [&] {
		++e;
		/* Release: pairs with the peers' acquire loads; nothing else is published. */
		std::atomic_ref<uint64_t>(*lines[rank]).store(e, std::memory_order_release);
		for (int r = 0; r < size; ++r)
			while (r != rank && std::atomic_ref<uint64_t>(*lines[r]).load(std::memory_order_acquire) < e)
				;
	};
	for (long i = 0; i < iters / 10; ++i)
		barrier();
	/* Median of block means, like the fence it is compared with. */
	auto blocks = timeBlocks(iters, 1000, barrier);
	std::sort(blocks.begin(), blocks.end());
	double t = blocks[blocks.size() / 2] * 1e6;
	check(rma_win_fence(0, win), "rma_win_fence");
	check(rma_win_free(&win), "rma_win_free");
	return t;
}

} /* namespace */

int main(int argc, char **argv)
{
	Options o;
	if (!parse(argc, argv, o)) {
		usage(stderr);
		return 2;
	}
	check(rma_init(&argc, &argv), "rma_init");
	int rank, size;
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);
	if (size < 2 && o.test != "fence") {
		std::fprintf(stderr, "rmabench: %s needs at least 2 ranks (rmarun -n 2 rmabench ...)\n", o.test.c_str());
		rma_finalize();
		return 2;
	}
	const bool put = o.op == "put";
	size_t bytes = static_cast<size_t>(o.maxSize);
	BenchWindow w = makeWindow(o, std::max<size_t>(bytes, 8));
	PageBuffer buffer(std::max<size_t>(bytes, 8), 'a');
	std::vector<Row> rows;
	double rawBarrier = 0; /* fence test: the hardware floor, measured alongside */

	/*
	 * How each timed step is synchronized. Active modes (fence, pscw) have
	 * rank 1 take part in every step; passive modes (lock, lock_all,
	 * flush_local) leave it alone: it waits (or, with --busy-target,
	 * computes without calling librma) until rank 0 is done.
	 */
	const bool passive = o.sync == "lock" || o.sync == "lock_all" || o.sync == "flush_local";
	rma_group peerGroup = RMA_GROUP_NULL;
	{
		rma_group world;
		rma_comm_group(RMA_COMM_WORLD, &world);
		int peer = rank == 0 ? 1 : 0;
		rma_group_incl(world, 1, &peer, &peerGroup);
		rma_group_free(&world);
	}
	auto fence = [&] { check(rma_win_fence(0, w.win), "rma_win_fence"); };
	auto op = [&](long sz) {
		if (put)
			check(rma_put(buffer.data, static_cast<int>(sz), RMA_BYTE, 1, w.disp0, static_cast<int>(sz), RMA_BYTE,
				      w.win),
			      "rma_put");
		else
			check(rma_get(buffer.data, static_cast<int>(sz), RMA_BYTE, 1, w.disp0, static_cast<int>(sz), RMA_BYTE,
				      w.win),
			      "rma_get");
	};
	/* One step: @ops operations of @sz bytes from rank 0 to rank 1, completed by the sync mode. */
	auto step = [&](long sz, long ops) {
		if (o.sync == "fence") {
			if (rank == 0)
				for (long k = 0; k < ops; ++k)
					op(sz);
			fence();
		} else if (o.sync == "pscw") {
			if (rank == 0) {
				check(rma_win_start(peerGroup, 0, w.win), "rma_win_start");
				for (long k = 0; k < ops; ++k)
					op(sz);
				check(rma_win_complete(w.win), "rma_win_complete");
			} else if (rank == 1) {
				check(rma_win_post(peerGroup, 0, w.win), "rma_win_post");
				check(rma_win_wait(w.win), "rma_win_wait");
			}
		} else if (o.sync == "lock") {
			check(rma_win_lock(RMA_LOCK_SHARED, 1, 0, w.win), "rma_win_lock");
			for (long k = 0; k < ops; ++k)
				op(sz);
			check(rma_win_unlock(1, w.win), "rma_win_unlock");
		} else {
			for (long k = 0; k < ops; ++k)
				op(sz);
			if (o.sync == "lock_all")
				check(rma_win_flush(1, w.win), "rma_win_flush");
			else
				check(rma_win_flush_local(1, w.win), "rma_win_flush_local");
		}
	};
	/* Does this rank run the timed loop? */
	const bool timing = passive ? rank == 0 : (o.sync == "pscw" ? rank <= 1 : true);

	/* Rank 0 tells a passive target it is done through memory both map. */
	rma_win doneWin;
	std::byte *doneMine;
	check(rma_win_allocate_shared(rank == 0 ? 64 : 0, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &doneMine, &doneWin),
	      "rma_win_allocate_shared");
	uint64_t *done;
	{
		rma_aint sz;
		int unit;
		check(rma_win_shared_query(doneWin, 0, &sz, &unit, &done), "rma_win_shared_query");
	}
	rma_barrier(RMA_COMM_WORLD);
	if (o.sync == "fence")
		fence(); /* opens the first epoch */
	if (passive && o.sync != "lock" && rank == 0)
		check(rma_win_lock_all(0, w.win), "rma_win_lock_all");

	if (timing && o.test == "fence") {
		long iters = o.iterations ? o.iterations : 100000;
		rows.push_back(latencyRow(0, iters, o.skip ? o.skip : iters / 10, 1000, fence));
		rawBarrier = rawBarrierMicros(iters);
	} else if (timing && (o.test == "lock" || o.test == "flush")) {
		/* The synchronization call alone: lock+unlock, or flush in a lock_all epoch. */
		long iters = o.iterations ? o.iterations : 200000;
		long skip = o.skip ? o.skip : iters / 10;
		auto sync = [&] {
			if (o.test == "lock") {
				check(rma_win_lock(RMA_LOCK_SHARED, 1, 0, w.win), "rma_win_lock");
				check(rma_win_unlock(1, w.win), "rma_win_unlock");
			} else {
				check(rma_win_flush(1, w.win), "rma_win_flush");
			}
		};
		rows.push_back(latencyRow(0, iters, skip, 1000, sync));
	} else if (timing) {
		for (long sz = o.minSize; sz <= o.maxSize; sz *= 2) {
			Row row{};
			row.size = sz;
			if (o.test == "latency") {
				long iters = itersFor(o, sz, passive ? 200000 : 20000, 2000);
				row = latencyRow(sz, iters, o.skip ? o.skip : iters / 10, passive ? 1000 : 100,
						 [&] { step(sz, 1); });
			} else {
				long iters = itersFor(o, sz, 2000, 200);
				long skip = o.skip ? o.skip : std::max<long>(iters / 10, 1);
				auto many = [&] { step(sz, o.window); };
				for (long i = 0; i < skip; ++i)
					many();
				auto blocks = timeBlocks(iters, 10, many);
				/* Blocks in seconds per step -> MB/s. */
				double perStep = 0;
				for (double b : blocks)
					perStep += b;
				perStep /= static_cast<double>(blocks.size());
				double bytesPerStep = static_cast<double>(sz) * static_cast<double>(o.window);
				row.iterations = iters;
				row.mean = bytesPerStep / perStep / 1e6;
				for (double &b : blocks)
					b = 1.0 / b; /* steps per second */
				summarize(blocks, row, bytesPerStep / 1e6);
				if (rank == 0)
					row.memcpyMBs = memcpyBandwidth(static_cast<size_t>(sz),
									std::max<long>(iters * o.window / 4, 16));
			}
			rows.push_back(row);
		}
	}
	if (passive && o.sync != "lock" && rank == 0)
		check(rma_win_unlock_all(w.win), "rma_win_unlock_all");
	if (o.sync == "fence")
		check(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), "rma_win_fence");
	if (passive) {
		if (rank == 0) {
			/* Release: the target may stop computing. */
			std::atomic_ref<uint64_t>(*done).store(1, std::memory_order_release);
		} else if (o.busyTarget) {
			/* Compute without calling librma until rank 0 is done: a truly passive target. */
			volatile double x = 1.0;
			while (std::atomic_ref<uint64_t>(*done).load(std::memory_order_acquire) == 0)
				for (int i = 0; i < 1000; ++i)
					x = x * 1.0000001 + 1e-9;
		}
	}
	rma_barrier(RMA_COMM_WORLD);
	check(rma_win_free(&doneWin), "rma_win_free");
	rma_group_free(&peerGroup);

	if (rank == 0) {
		char host[256] = "?";
		gethostname(host, sizeof(host) - 1);
		const char *bind = std::getenv("RMA_BIND");
		const bool bw = o.test == "bandwidth";
		const bool sizeless = o.test == "fence" || o.test == "lock" || o.test == "flush";
		const char *unit = bw ? "MB/s" : "us";
		std::string syncName = o.sync == "fence"	  ? "fence"
				       : o.sync == "pscw"	  ? "start/complete (target: post/wait)"
				       : o.sync == "lock"	  ? "lock/unlock"
				       : o.sync == "lock_all" ? "flush (in lock_all)"
							      : "flush_local (in lock_all)";
		std::string what = o.test == "fence"  ? "empty fence"
				   : o.test == "lock"	? "lock + unlock alone"
				   : o.test == "flush" ? "flush alone (lock_all epoch, nothing to complete)"
						       : o.op + (bw ? " bandwidth" : " latency") + " + " + syncName;
		if (passive)
			what += o.busyTarget ? "; target computing, never calling librma" : "; target idle";
		if (o.format == "table") {
			std::printf("# librma rmabench: %s\n", what.c_str());
			std::printf("# host %s, %d ranks, binding %s, cpu of rank 0: %d\n", host, size, bind ? bind : "none",
				    sched_getcpu());
			std::printf("# window flavor %s, page size %s, NUMA node %s, progress: none needed (direct stores)\n",
				    o.flavor.c_str(), w.pageSize.c_str(), w.node.c_str());
			if (bw) {
				std::printf("# window of %ld operations per synchronization; memcpy = one core copying the same size\n", o.window);
				std::printf("%-10s %12s %12s %12s %12s %14s %8s\n", "# Size", "MB/s", "min", "median", "p99",
					    "memcpy MB/s", "ratio");
			} else {
				std::printf("%-10s %12s %12s %12s %12s\n", sizeless ? "# Ranks" : "# Size",
					    "Latency(us)", "min", "median", "p99");
			}
			for (const Row &r : rows) {
				if (bw)
					std::printf("%-10ld %12.2f %12.2f %12.2f %12.2f %14.2f %8.2f\n", r.size, r.mean, r.min,
						    r.median, r.p99, r.memcpyMBs, r.mean / r.memcpyMBs);
				else
					std::printf("%-10ld %12.3f %12.3f %12.3f %12.3f\n", sizeless ? size : r.size,
						    r.mean, r.min, r.median, r.p99);
			}
			if (o.test == "fence")
				std::printf("# raw store/poll barrier in the same run, median: %.3f us (fence / raw = %.2f)\n",
					    rawBarrier, rows[0].median / rawBarrier);
		} else if (o.format == "csv") {
			std::printf("test,op,sync,flavor,ranks,size,iterations,mean_%s,min,median,p99%s\n", bw ? "mbs" : "us",
				    bw ? ",memcpy_mbs" : "");
			for (const Row &r : rows) {
				std::printf("%s,%s,%s,%s,%d,%ld,%ld,%.4f,%.4f,%.4f,%.4f", o.test.c_str(), o.op.c_str(),
					    o.sync.c_str(), o.flavor.c_str(), size, r.size, r.iterations, r.mean, r.min, r.median, r.p99);
				if (bw)
					std::printf(",%.2f", r.memcpyMBs);
				std::printf("\n");
			}
		} else {
			std::printf("{\"tool\":\"rmabench\",\"test\":\"%s\",\"op\":\"%s\",\"sync\":\"%s\",\"flavor\":\"%s\",\"ranks\":%d,"
				    "\"host\":\"%s\",\"binding\":\"%s\",\"page_size\":\"%s\",\"numa_node\":\"%s\",\"unit\":\"%s\","
				    "\"results\":[",
				    o.test.c_str(), o.op.c_str(), o.sync.c_str(), o.flavor.c_str(), size, host, bind ? bind : "none",
				    w.pageSize.c_str(), w.node.c_str(), unit);
			for (size_t i = 0; i < rows.size(); ++i) {
				const Row &r = rows[i];
				std::printf("%s{\"size\":%ld,\"iterations\":%ld,\"mean\":%.4f,\"min\":%.4f,\"median\":%.4f,"
					    "\"p99\":%.4f",
					    i ? "," : "", r.size, r.iterations, r.mean, r.min, r.median, r.p99);
				if (bw)
					std::printf(",\"memcpy_mbs\":%.2f", r.memcpyMBs);
				std::printf("}");
			}
			std::printf("]}\n");
		}
		std::fflush(stdout);
	}
	freeWindow(w);
	check(rma_finalize(), "rma_finalize");
	return 0;
}
