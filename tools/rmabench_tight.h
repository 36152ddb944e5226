/* SPDX-License-Identifier: MIT */
/*
 * The timed loop of rmabench's latency tests, written as OSU writes it: the
 * operation and its synchronization called back to back, @n times, with
 * nothing of rmabench's between them.
 *
 * Why it exists: the general step (rmabench_tests.cpp: a lambda per step,
 * the verification hooks, a switch on the operation, then the backend's
 * out-of-line wrapper) costs about 15 ns an operation on this machine: as
 * much as a whole shared-memory put + flush. Added to both libraries'
 * figures alike, it pulled every ratio toward 1 (librma put + flush: 8 ns
 * in a plain loop, 25 ns through the step).
 *
 * Each backend includes this after defining its be:: calls and defines
 * be::tightLoop() as [[gnu::flatten]] over runTight(): every wrapper and
 * check is inlined, so each iteration is the library's calls and a compare
 * of their return codes.
 */
#pragma once

#include "rmabench_backend.h"

namespace rmabench::be {

namespace tight {

template<typename Op, typename Sync>
inline void repeat(long n, Op &&op, Sync &&sync)
{
	for (long i = 0; i < n; ++i) {
		op();
		sync();
	}
}

/* The loop for @c.sync around the operation @op (a callable). */
template<typename Op>
inline void withSync(const TightCase &c, long n, Op &&op)
{
	const Handle w = c.win;
	const int t = c.target;
	switch (c.sync) {
	case TightSync::Flush:
		repeat(n, op, [&] { flush(t, w); });
		break;
	case TightSync::FlushLocal:
		repeat(n, op, [&] { flushLocal(t, w); });
		break;
	case TightSync::Lock:
	case TightSync::LockExclusive: {
		const bool exclusive = c.sync == TightSync::LockExclusive;
		repeat(
			n,
			[&] {
				lock(exclusive, t, w);
				op();
				unlock(t, w);
			},
			[] {});
		break;
	}
	case TightSync::LockAll:
		repeat(
			n,
			[&] {
				lockAll(w);
				op();
				unlockAll(w);
			},
			[] {});
		break;
	case TightSync::Fence:
		repeat(n, op, [&] { fence(0, w); });
		break;
	}
}

} /* namespace tight */

inline void runTight(const TightCase &c, long n)
{
	using tight::withSync;
	switch (c.op) {
	case TightOp::None:
		withSync(c, n, [] {});
		break;
	case TightOp::Put:
		withSync(c, n, [&] { put(c.origin, c.count, c.type, c.target, c.disp, c.count, c.type, c.win); });
		break;
	case TightOp::Get:
		withSync(c, n, [&] { get(c.result, c.count, c.type, c.target, c.disp, c.count, c.type, c.win); });
		break;
	case TightOp::Acc:
		withSync(c, n, [&] {
			accumulate(c.origin, c.count, c.type, c.target, c.disp, c.count, c.type, c.accOp, c.win);
		});
		break;
	case TightOp::GetAcc:
		withSync(c, n, [&] {
			getAccumulate(c.origin, c.count, c.type, c.result, c.count, c.type, c.target, c.disp, c.count,
				      c.type, c.accOp, c.win);
		});
		break;
	case TightOp::Fop:
		withSync(c, n, [&] { fetchAndOp(c.origin, c.result, c.type, c.target, c.disp, c.accOp, c.win); });
		break;
	case TightOp::Cas:
		withSync(c, n, [&] { compareAndSwap(c.origin, c.compare, c.result, c.type, c.target, c.disp, c.win); });
		break;
	}
}

} /* namespace rmabench::be */
