// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/cmdpath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmdpath__resolve(char *out, size_t len, const char *cmd)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int err = -ENOENT;

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, X_OK) ? -errno : 0;
	}
	/* execvp's default search path when PATH is unset */
	copy = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return -ENOMEM;
	for (dir = strtok_r(copy, ":", &save); dir && err; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", *dir ? dir : ".", cmd);
		if (!access(out, X_OK))
			err = 0;
	}
	free(copy);
	return err;
}
