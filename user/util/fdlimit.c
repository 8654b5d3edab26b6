// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/fdlimit.h"

#include <stdbool.h>
#include <sys/resource.h>

static struct rlimit caller;
static bool raised;

void fdlimit__raise(void)
{
	struct rlimit r;

	if (raised || getrlimit(RLIMIT_NOFILE, &caller))
		return;
	r = caller;
	r.rlim_cur = r.rlim_max < FDLIMIT_WANT ? r.rlim_max : FDLIMIT_WANT;
	if (r.rlim_cur <= caller.rlim_cur)
		return;
	raised = setrlimit(RLIMIT_NOFILE, &r) == 0;
}

void fdlimit__restore(void)
{
	if (raised)
		setrlimit(RLIMIT_NOFILE, &caller);
}
