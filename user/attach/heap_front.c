// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/heap_front.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attach/otel_notes.h"
#include "proc/cmdpath.h"
#include "proc/maps.h"
#include "proc/preload.h"
#include "sym/elf_dynsym.h"
#include "util/log.h"

bool heap_front__own_allocator(int fd)
{
	return elf_dynsym__value(fd, "free") != 0;
}

/* Does the file open as fd carry the otel_memory probes?  *own: it exports free. */
static bool otel_sampler(int fd, bool *own)
{
	unsigned found = 0;

	otel_notes__fd(&found, fd);
	*own = heap_front__own_allocator(fd);
	return (found & OTEL_NOTES_BOTH) == OTEL_NOTES_BOTH;
}

bool heap_front__cmd_exe(const char *cmd, bool *own_allocator)
{
	char exe[PATH_MAX];
	bool probes;
	int fd;

	*own_allocator = false;
	if (cmdpath__resolve(exe, sizeof(exe), cmd))
		return false;
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	probes = otel_sampler(fd, own_allocator);
	close(fd);
	return probes;
}

bool heap_front__exe_allocator(uint32_t pid, struct stat *exe)
{
	char path[64];
	bool own;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	own = !fstat(fd, exe) && heap_front__own_allocator(fd);
	close(fd);
	return own;
}

static bool plain_allocator(int fd)
{
	bool own;

	return !otel_sampler(fd, &own) && own;
}

bool heap_front__preload_ahead(uint32_t pid, const struct maps *m, int root_fd,
			       const struct maps_entry *otel)
{
	const char *name = strrchr(otel->path, '/');
	bool ahead = preload__ahead("/proc", pid, m, root_fd, otel, plain_allocator);

	if (ahead)
		pr_info("process %u: an allocator is preloaded ahead of %s (LD_PRELOAD): its "
			"allocator probes serve it\n",
			pid, name ? name + 1 : otel->path);
	return ahead;
}
