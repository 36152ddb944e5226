/* SPDX-License-Identifier: MIT */
/*
 * Communicators (docs/design/mpi-dropin.md §3.2, §3.5): the CommEntry cache,
 * the librma communicator with the same ranks, and the private MPI
 * communicators librma's bootstrap collectives run on.
 */
#include "shim.h"

#include <algorithm>
#include <map>

namespace rmampi {

namespace {

/* Every live CommEntry, for finalize. Guarded by the control lock. */
std::vector<CommEntry *> entries;

/* Member list (world ranks, in rank order) -> a private communicator with exactly those ranks. */
std::mutex membersMutex;
std::map<std::vector<int>, MPI_Comm> byMembers;
/* Communicators bootstrapAllgather made itself (freed at finalize). */
std::vector<MPI_Comm> ownComms;

/* The tag of the shim's PMPI_Comm_create_group calls on its world. */
constexpr int kCreateGroupTag = 0x4c52; /* "LR" */

void releaseEntry(CommEntry &e)
{
	if (e.freed)
		return;
	e.freed = true;
	{
		std::lock_guard<std::mutex> g(membersMutex);
		auto it = byMembers.find(e.worldRanks);
		if (it != byMembers.end() && it->second == e.dup)
			byMembers.erase(it);
	}
	if (e.rmaComm != RMA_COMM_NULL && shim().rmaUp)
		rma_comm_free(&e.rmaComm);
	if (e.group != MPI_GROUP_NULL)
		PMPI_Group_free(&e.group);
	/* Windows still sharing the duplicate free it (unshareEntry). */
	if (e.dup != MPI_COMM_NULL && e.windows == 0)
		PMPI_Comm_free(&e.dup);
}

/* The attribute's delete callback: the program freed the communicator (or MPI_Finalize runs). */
int commDeleted(MPI_Comm, int, void *value, void *)
{
	ControlLock lock;
	auto *e = static_cast<CommEntry *>(value);
	releaseEntry(*e);
	entries.erase(std::remove(entries.begin(), entries.end(), e), entries.end());
	if (e->windows > 0)
		e->dropped = true; /* the last of its windows deletes it */
	else
		delete e;
	return MPI_SUCCESS;
}

} /* namespace */

namespace {
thread_local MPI_Comm tScopeComm = MPI_COMM_NULL;
thread_local const std::vector<int> *tScopeMembers = nullptr;
} /* namespace */

CollectiveScope::CollectiveScope(MPI_Comm comm, const std::vector<int> &members)
    : prevComm_(tScopeComm), prevMembers_(tScopeMembers)
{
	tScopeComm = comm;
	tScopeMembers = &members;
}

CollectiveScope::~CollectiveScope()
{
	tScopeComm = prevComm_;
	tScopeMembers = prevMembers_;
}

int createCommKeyval()
{
	return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, commDeleted, &shim().commKeyval, nullptr);
}

void seedMembers(const std::vector<int> &members, MPI_Comm comm)
{
	std::lock_guard<std::mutex> g(membersMutex);
	byMembers.emplace(members, comm); /* the first communicator of a member set keeps serving it */
}

CommEntry *commEntry(MPI_Comm comm, int &rc)
{
	Shim &s = shim();
	if (s.commKeyval == MPI_KEYVAL_INVALID) {
		rc = MPI_ERR_INTERN; /* the shim did not start */
		return nullptr;
	}
	void *value = nullptr;
	int flag = 0;
	rc = PMPI_Comm_get_attr(comm, s.commKeyval, &value, &flag);
	if (rc != MPI_SUCCESS)
		return nullptr;
	if (flag)
		return static_cast<CommEntry *>(value);

	auto *e = new CommEntry;
	rc = PMPI_Comm_dup(comm, &e->dup);
	if (rc != MPI_SUCCESS) {
		delete e;
		return nullptr;
	}
	PMPI_Comm_set_errhandler(e->dup, MPI_ERRORS_RETURN);
	int size = 0;
	PMPI_Comm_size(e->dup, &size);
	PMPI_Comm_rank(e->dup, &e->rank);
	PMPI_Comm_group(e->dup, &e->group);

	MPI_Group worldGroup = MPI_GROUP_NULL;
	PMPI_Comm_group(MPI_COMM_WORLD, &worldGroup);
	std::vector<int> iota(size);
	for (int r = 0; r < size; r++)
		iota[r] = r;
	e->worldRanks.assign(size, MPI_UNDEFINED);
	PMPI_Group_translate_ranks(e->group, size, iota.data(), worldGroup, e->worldRanks.data());
	PMPI_Group_free(&worldGroup);
	e->inWorld = std::none_of(e->worldRanks.begin(), e->worldRanks.end(), [](int r) { return r == MPI_UNDEFINED; });

	/* From the world's host map (init), the same answer at every member: no collective. */
	e->onHost = e->inWorld && onOneHost(e->worldRanks);
	if (e->inWorld)
		seedMembers(e->worldRanks, e->dup);

	rc = PMPI_Comm_set_attr(comm, s.commKeyval, e);
	if (rc != MPI_SUCCESS) {
		releaseEntry(*e);
		delete e;
		return nullptr;
	}
	ControlLock lock;
	entries.push_back(e);
	return e;
}

int ensureRmaComm(CommEntry &e)
{
	if (e.rmaComm != RMA_COMM_NULL)
		return RMA_SUCCESS;
	rma_group worldGroup = RMA_GROUP_NULL, group = RMA_GROUP_NULL;
	int rc = rma_comm_group(RMA_COMM_WORLD, &worldGroup);
	if (rc != RMA_SUCCESS)
		return rc;
	rc = rma_group_incl(worldGroup, static_cast<int>(e.worldRanks.size()), e.worldRanks.data(), &group);
	rma_group_free(&worldGroup);
	if (rc != RMA_SUCCESS)
		return rc;
	/* Collective over C's members only; its allgathers run on e.dup. */
	CollectiveScope scope(e.dup, e.worldRanks);
	rc = rma_comm_create_group(RMA_COMM_WORLD, group, 0, &e.rmaComm);
	rma_group_free(&group);
	if (rc == RMA_SUCCESS)
		rma_comm_set_errhandler(e.rmaComm, RMA_ERRORS_RETURN);
	return rc;
}

int bootstrapAllgather(const int *members, int count, int myIndex, const void *send, size_t len, void *recv)
{
	(void)myIndex;
	if (len > static_cast<size_t>(INT32_MAX))
		return 1;
	std::vector<int> key(members, members + count);
	MPI_Comm comm = MPI_COMM_NULL;
	if (tScopeMembers && *tScopeMembers == key) {
		comm = tScopeComm;
	} else {
		std::lock_guard<std::mutex> g(membersMutex);
		auto it = byMembers.find(key);
		if (it != byMembers.end())
			comm = it->second;
	}
	/* The blocking collectives below must not hold the control lock (§6.1). */
	ControlLock::suspend();
	int rc = MPI_SUCCESS;
	if (comm == MPI_COMM_NULL) {
		/* A member set the shim did not make: build it, collectively over exactly those members. */
		MPI_Group worldGroup = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
		PMPI_Comm_group(shim().world, &worldGroup);
		PMPI_Group_incl(worldGroup, count, members, &group);
		rc = PMPI_Comm_create_group(shim().world, group, kCreateGroupTag, &comm);
		PMPI_Group_free(&group);
		PMPI_Group_free(&worldGroup);
		if (rc == MPI_SUCCESS) {
			PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
			std::lock_guard<std::mutex> g(membersMutex);
			byMembers[key] = comm;
			ownComms.push_back(comm);
		}
	}
	if (rc == MPI_SUCCESS) {
		if (len == 0) /* a zero-byte allgather need not synchronize; librma means a barrier */
			rc = PMPI_Barrier(comm);
		else
			rc = PMPI_Allgather(send, static_cast<int>(len), MPI_BYTE, recv, static_cast<int>(len),
					    MPI_BYTE, comm);
	}
	ControlLock::resume();
	return rc == MPI_SUCCESS ? 0 : 1;
}

void unshareEntry(CommEntry &e)
{
	ControlLock lock;
	if (--e.windows > 0 || !e.freed)
		return;
	/* C is gone (or finalize ran): the duplicate was kept for the windows alone. */
	if (e.dup != MPI_COMM_NULL && !shim().finalized)
		PMPI_Comm_free(&e.dup);
	if (e.dropped)
		delete &e;
}

void releaseComms()
{
	for (CommEntry *e : entries)
		releaseEntry(*e);
}

void releaseBootstrapComms()
{
	std::lock_guard<std::mutex> g(membersMutex);
	for (MPI_Comm &c : ownComms)
		PMPI_Comm_free(&c);
	ownComms.clear();
	byMembers.clear();
}

} /* namespace rmampi */
