/* SPDX-License-Identifier: MIT */
/*
 * The host agents' side of agent mode (RMA_PROGRESS=agent): the progress
 * source through which a node's agent serves the accumulate rings of every
 * window whose target memory is on its node, member or not.
 *
 * Each target rank of a window publishes its ring in the host's
 * ServedDirectory (progress/directory.h; Window::publishRing). The agent's
 * source polls the directory's change counter once per pass; when it moved,
 * it rescans: an entry its process serves (servesNode() of the entry's
 * node) and does not know yet is opened through /proc/PID/fd/N of the
 * processes that keep the descriptors (checked against the published memfd
 * identity, so a reused descriptor number is never mapped), mapped once per
 * window (control segment) and per memory segment, and drained from then
 * on with the same consumer code the members use (AccArea); an entry
 * withdrawn (the window was freed) drops its target, and a window without
 * targets is unmapped. Everything a rescan does is control path (system
 * calls, allocation) and happens only when a window is created or freed;
 * a pass without changes costs one load per served ring and one for the
 * directory.
 *
 * An entry that cannot be opened (its holder exited, freed the window, or
 * ptrace rules forbid /proc/PID/fd: another user, Yama) is skipped until
 * it changes: its ring stays with its origins, which always drain while
 * they wait, so correctness never depends on the agent.
 *
 * The agent takes a ring's consumer role as agentHolder(its pid)
 * (win/acc_area.h). An agent that dies holding it never gives it back;
 * the origins waiting on that ring see the id, find the process dead
 * (hostAgentDead(), core.h) and fail with RMA_ERR_PROC_FAILED instead of
 * waiting for ever (Window::checkRingHolder()), member of the window or
 * not. An agent that dies without the role leaves its rings to the
 * origins, as above.
 */
#pragma once

#include <atomic>
#include <cstdint>

namespace librma {

/*
 * In a process that runs one of the host's agents (isHostAgent()): add the
 * served-directory source to localAgent() and start its thread. No-op in
 * other processes and modes. Called once at the end of initRuntime().
 * Returns ensureAgentThread()'s error (RMA_ERR_ARG: the core cannot be used).
 */
int startAgentService();

/*
 * Drop the source and every mapping it made. Called in finalizeRuntime()
 * after the agent's thread has stopped. No-op if none was started.
 */
void stopAgentService();

/* What the service serves now (tests and RMA_VERBOSE): windows mapped, rings served, entries skipped. */
struct AgentServiceStats {
	int windows = 0;
	int rings = 0;
	int skipped = 0;
	uint64_t rescans = 0;
};
AgentServiceStats agentServiceStats();

/*
 * Test hook, inert unless called (tests/win/agent_service_test.cpp): from
 * now on this process's agent drains nothing; the first time it finds a
 * served ring with records it takes the ring's consumer role, applies one
 * record, stores 1 in *@stalled (release) and calls _exit(@exitStatus)
 * holding the role: an agent dying in the middle of its work. Thread-safe.
 */
void armAgentStallForTesting(int exitStatus, std::atomic<int64_t> *stalled);

} /* namespace librma */
