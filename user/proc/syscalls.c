// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/syscalls.h"

#include <stddef.h>

/* Generated at build time from the C library's <asm/unistd.h> (Makefile: syscall_names.h). */
static const char *const names[] = {
#include "syscall_names.h"
};

const char *syscalls__name(long nr)
{
	if (nr < 0 || (size_t)nr >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[nr];
}
