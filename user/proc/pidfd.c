// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/pidfd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int pidfd__open(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

int pidfd__signal(int fd, int sig)
{
	return syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) ? -errno : 0;
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks (after the comm, which may hold
 * spaces and parentheses: counted from the last ')'). */
static int read_start_ticks(uint32_t pid, uint64_t *out)
{
	char path[64], buf[1024], *p;
	ssize_t len;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return len < 0 ? -errno : -ESRCH;
	buf[len] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	/* ") S ppid ...": the state is field 3. */
	for (field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

int pidfd__open_started(uint32_t pid, uint64_t start_ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t ticks;
	int fd, err;

	fd = pidfd__open((pid_t)pid);
	if (fd < 0)
		return fd;
	/* The pidfd pins whatever has the pid now; its start time says whether that is ours. */
	err = read_start_ticks(pid, &ticks);
	if (!err && hz > 0 && ticks != start_ns / (1000000000ULL / (uint64_t)hz))
		err = -ESRCH;
	if (err) {
		close(fd);
		return err == -ENOENT ? -ESRCH : err;
	}
	return fd;
}
