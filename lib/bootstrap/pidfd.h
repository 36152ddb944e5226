/* SPDX-License-Identifier: MIT */
/* pidfd_open(2) where the build found it (config.h: HAVE_PIDFD_OPEN). */
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

#include "config.h"

namespace librma {

/* A pidfd for @pid, or -1 with errno set (ENOSYS where the build has no pidfd_open). */
inline int pidfdOpen(pid_t pid)
{
#ifdef HAVE_PIDFD_OPEN
	return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

} /* namespace librma */
