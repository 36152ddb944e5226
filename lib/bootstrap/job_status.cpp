/* SPDX-License-Identifier: MIT */
#include "bootstrap/job_status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>

namespace librma {

const std::atomic<uint64_t> JobStatus::kNone{ 0 };

JobStatus::~JobStatus()
{
	if (header_)
		munmap(header_, bytes_);
}

int JobStatus::create(int nranks)
{
	if (nranks < 1)
		return -EINVAL;
	const size_t bytes = jobStatusBytes(nranks);
	UniqueFd fd(memfd_create("librma-job-status", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (!fd.isValid())
		return -errno;
	if (ftruncate(fd.get(), static_cast<off_t>(bytes)) < 0)
		return -errno;
	/* The size is fixed: a rank cannot shrink it under the others' mappings. */
	(void)fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
	if (p == MAP_FAILED)
		return -errno;
	header_ = new (p) JobStatusHeader{};
	writable_ = true;
	header_->magic = kJobStatusMagic;
	header_->nranks = static_cast<uint32_t>(nranks);
	bits_ = reinterpret_cast<std::atomic<uint64_t> *>(static_cast<std::byte *>(p) + kJobStatusBitsOffset);
	bytes_ = bytes;
	nranks_ = nranks;
	fd_ = std::move(fd);
	return 0;
}

int JobStatus::attach(int fd, int nranks, bool writable)
{
	UniqueFd owned(fd);
	struct stat st {};
	if (nranks < 1 || fstat(fd, &st) < 0)
		return nranks < 1 ? -EINVAL : -errno;
	const size_t bytes = jobStatusBytes(nranks);
	if (static_cast<size_t>(st.st_size) != bytes)
		return -EINVAL;
	void *p = mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	auto *h = static_cast<JobStatusHeader *>(p);
	if (h->magic != kJobStatusMagic || h->nranks != static_cast<uint32_t>(nranks)) {
		munmap(p, bytes);
		return -EINVAL;
	}
	header_ = h;
	writable_ = writable;
	bits_ = reinterpret_cast<std::atomic<uint64_t> *>(static_cast<std::byte *>(p) + kJobStatusBitsOffset);
	bytes_ = bytes;
	nranks_ = nranks;
	return 0;
}

void JobStatus::markDead(int rank)
{
	if (!header_ || !writable_ || rank < 0 || rank >= nranks_)
		return;
	const uint64_t bit = uint64_t(1) << (rank % 64);
	/* Relaxed: published by the release on the count below. */
	uint64_t old = bits_[rank / 64].fetch_or(bit, std::memory_order_relaxed);
	if (!(old & bit))
		/* Release: a reader that acquires the new count sees the bit. */
		header_->deadCount.fetch_add(1, std::memory_order_release);
}

bool JobStatus::dead(int rank) const
{
	if (!header_ || rank < 0 || rank >= nranks_)
		return false;
	/* Acquire: pairs with markDead's release; the bits of every counted death are visible. */
	if (header_->deadCount.load(std::memory_order_acquire) == 0)
		return false;
	return (bits_[rank / 64].load(std::memory_order_relaxed) >> (rank % 64)) & 1;
}

} /* namespace librma */
