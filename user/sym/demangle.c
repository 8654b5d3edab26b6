// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/demangle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s abi::__cxa_demangle, callable from C; the binary links -lstdc++. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

int demangle__name(char **out, const char *name)
{
	char *d = NULL;
	int status = -1;

	/* Only mangled names: __cxa_demangle also "demangles" plain type names ("i" -> "int"). */
	if (name[0] == '_' && name[1] == 'Z')
		d = __cxa_demangle(name, NULL, NULL, &status);
	if (d && status == 0) {
		*out = d;
		return 0;
	}
	/* status -1 is its allocation failure; -2 (invalid name) and -3 mean "not C++". */
	free(d);
	if (status == -1 && name[0] == '_' && name[1] == 'Z')
		return -ENOMEM;
	*out = strdup(name);
	return *out ? 0 : -ENOMEM;
}
