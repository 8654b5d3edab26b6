// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cmdpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cmdpath__resolve(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	bool found = false;

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, X_OK) == 0;
	}
	/* execvp's default search path when PATH is unset */
	copy = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return false;
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", *dir ? dir : ".", cmd);
		found = access(out, X_OK) == 0;
	}
	free(copy);
	return found;
}
