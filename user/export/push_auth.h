/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * push's credentials: from the environment (each variable taken: its value wiped where it is and
 * unset, so /proc/PID/environ and CMD never see it) or from an auth file only we or root own,
 * mode 0600.  Values with a line break are refused (they would split a header).
 */
#ifndef PROF_PUSH_AUTH_H
#define PROF_PUSH_AUTH_H

struct push_secrets {
	char *token, *user, *password, *tenant; /* NULL: not given */
};

/* *slot gets a copy of $name when it is set (replacing *slot's), then $name is wiped and unset.
 * 0, -EINVAL (a line break: said) or -ENOMEM. */
int push_auth__take_env(char **slot, const char *name);
/* token=, user=, password=, tenant= lines (# comments) into out, each replacing what is there.
 * Prints one line and returns -errno when the file is unusable. */
int push_auth__read_file(struct push_secrets *out, const char *path);
/* Wipes and frees; NULL is a no-op. */
void push_auth__free_secret(char *s);

#endif /* PROF_PUSH_AUTH_H */
