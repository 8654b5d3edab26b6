// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/push_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

#define AUTH_FILE_MAX 4096

static int check_secret(const char *what, const char *v)
{
	if (strpbrk(v, "\r\n")) {
		pr_err("%s holds a line break\n", what);
		return -EINVAL;
	}
	return 0;
}

static int set_secret(char **slot, const char *what, const char *v)
{
	int err;

	if (!v || !*v)
		return 0;
	err = check_secret(what, v);
	if (err)
		return err;
	free(*slot);
	*slot = strdup(v);
	return *slot ? 0 : -ENOMEM;
}

/*
 * A secret from the environment, then gone from it: the value's bytes wiped where they are, so
 * that our /proc/PID/environ (which reads the original strings) no longer shows it, and the
 * variable unset.
 */
int push_auth__take_env(char **slot, const char *name)
{
	char *v = getenv(name);
	int err;

	if (!v)
		return 0;
	err = set_secret(slot, name, v);
	explicit_bzero(v, strlen(v));
	unsetenv(name);
	return err;
}

void push_auth__free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* key=value lines (token, user, password, tenant; # comments): a file only we or root own,
 * unreadable by group and others, so no other user can read or plant credentials. */
int push_auth__read_file(struct push_secrets *p, const char *path)
{
	char buf[AUTH_FILE_MAX + 1], *line, *save = NULL;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		pr_err("cannot open --push-auth-file %s: %s\n", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		pr_err("--push-auth-file %s is not a regular file\n", path);
		err = -EINVAL;
		goto cleanup;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		pr_err("--push-auth-file %s is owned by another user (uid %u)\n", path,
		       (unsigned)st.st_uid);
		err = -EPERM;
		goto cleanup;
	}
	if (st.st_mode & 077) {
		pr_err("--push-auth-file %s is accessible to group or others "
		       "(mode %03o); chmod 600 it\n",
		       path, (unsigned)(st.st_mode & 0777));
		err = -EPERM;
		goto cleanup;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0 || n > AUTH_FILE_MAX) {
		pr_err("--push-auth-file %s: %s\n", path,
		       n < 0 ? strerror(errno) : "larger than 4096 bytes");
		err = n < 0 ? -EIO : -EFBIG;
		goto cleanup;
	}
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		char *eq, *v;
		size_t len = strlen(line);

		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (!*line || *line == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			pr_err("--push-auth-file %s: a line without '='\n", path);
			err = -EINVAL;
			break;
		}
		*eq = 0;
		v = eq + 1;
		if (!strcmp(line, "token"))
			err = set_secret(&p->token, "the push token", v);
		else if (!strcmp(line, "user"))
			err = set_secret(&p->user, "the push user", v);
		else if (!strcmp(line, "password"))
			err = set_secret(&p->password, "the push password", v);
		else if (!strcmp(line, "tenant"))
			err = set_secret(&p->tenant, "the push tenant", v);
		else {
			/* The "key" may be a token written without "token=": named only when it
			 * looks like a key. */
			bool named = strlen(line) <= 16 &&
				     strspn(line, "abcdefghijklmnopqrstuvwxyz_") == strlen(line);

			pr_err("--push-auth-file %s: unknown key%s%s%s (token, user, password, "
			       "tenant)\n",
			       path, named ? " '" : "", named ? line : "", named ? "'" : "");
			err = -EINVAL;
		}
	}
	memset(buf, 0, sizeof(buf));
cleanup:
	close(fd);
	return err;
}
