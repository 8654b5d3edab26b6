/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Leak suppressions: which stacks of blocks never freed are not counted as leaks (the leak
 * list at exit, --fail-on-leak).  We cannot see reachability, and the C library, the dynamic
 * loader and interpreters keep blocks until exit on purpose, so every real program would
 * "leak" without them.  A rule is a glob (fnmatch) over a frame's function name or its file's
 * base name: `leak:PATTERN` matches when any frame of the stack does (LeakSanitizer's form),
 * `leaf:PATTERN` when the frame that called the allocator does.  The built-in rules
 * (suppress__defaults) come first; --leak-suppressions FILE adds more, one per line, `#`
 * comments and blank lines ignored.
 */
#ifndef PROF_SUPPRESS_H
#define PROF_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>

struct stackres_frame;
struct suppress;

/* Rules, lines of a file: at most this many, each at most this long. */
#define SUPPRESS_MAX_RULES 4096
#define SUPPRESS_MAX_LINE  1024
#define SUPPRESS_MAX_FILE  (1 << 20)

/* The built-in rules alone.  0 or -ENOMEM. */
int suppress__new(struct suppress **out);
void suppress__free(struct suppress *s);

/*
 * Add the rules of text[0..len) (a file's contents).  A bad line (no `leak:` or `leaf:`, an
 * empty pattern, too long, too many rules) is refused: -EINVAL with "line N: why" in
 * err[0..errlen).  0, -EINVAL or -ENOMEM.
 */
int suppress__parse(struct suppress *s, const char *text, size_t len, char *err, size_t errlen);

/* suppress__parse of the file at path (a regular file, at most 1 MiB).  -errno when it cannot be
 * read (err says why), else suppress__parse's result. */
int suppress__load(struct suppress *s, const char *path, char *err, size_t errlen);

/* The built-in rules, as a file would say them (for the man page and --help's reader). */
extern const char *const suppress__defaults[];

/* Whether the stack frames[0..n) (leaf first) is suppressed: the index of the rule (its
 * position: built-ins first) + 1, or 0. */
unsigned suppress__match(const struct suppress *s, const struct stackres_frame *frames, unsigned n);

#endif /* PROF_SUPPRESS_H */
