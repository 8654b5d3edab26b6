/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --live: a full-screen view in the terminal, redrawn from each interval's profiles, like top
 * or py-spy top.  One screen: the command line, the interval, each mode's total in its default
 * sample type, the non-zero drop counters, then for one mode (the first; m shows the next) and
 * one of its sample types (its default; t shows the next) the top processes and the top
 * functions by own (leaf) and by total (on the stack) value; below the heap's, the stacks whose
 * memory in use grew over the last intervals (--growth-intervals).  Lines never exceed the
 * terminal's width, the screen never its height; bytes a target controls (process and function
 * names) are shown as printable ASCII only, so a name cannot send escape sequences.
 */
#ifndef PROF_LIVE_H
#define PROF_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct growth;
struct profile;
struct live;
struct stackres;

/* What the view cannot read from the profiles themselves. */
struct live_status {
	const char *cmdline; /* our command line, the first line of the screen */
	uint64_t interval;   /* number of the interval shown, 1-based */
	int64_t elapsed_ns;  /* since profiling started */
	/* --heap: the stacks that grew over the last intervals, below the heap's tables (NULL:
	 * none kept), named from stacks */
	const struct growth *growth;
	const struct stackres *stacks;
};

struct live_opts {
	int in_fd;	     /* keys are read here */
	int out_fd;	     /* the screen is written here */
	unsigned cols, rows; /* screen size; 0 = the terminal's (TIOCGWINSZ on out_fd) */
	bool terminal;	     /* in_fd is a terminal: no echo, no line buffering, alternate screen */
};

enum live_key {
	LIVE_KEY_NONE = 0, /* nothing, or a key without a meaning */
	LIVE_KEY_QUIT = 1, /* q: stop profiling and write the final profiles */
	LIVE_KEY_MODE = 2, /* m or Tab: the next screens show the next mode's tables */
	/* t: the next screens rank by the mode's next sample type (heap: inuse_space,
	 * alloc_objects, alloc_space, inuse_objects; cpu: cpu, samples), wrapping around */
	LIVE_KEY_TYPE = 3,
};

/*
 * The view on the terminal tty_fd (read for keys, written for the screen): switches it to
 * no-echo, non-canonical input and the alternate screen until live__free.  -ENOTTY when tty_fd
 * is not a terminal.
 */
int live__new(struct live **out, int tty_fd);
/* The same with separate descriptors and an optional fixed size (tests write into a pipe). */
int live__open(struct live **out, const struct live_opts *o);
/* Restores the terminal as live__new found it.  NULL is a no-op. */
void live__free(struct live *l);

/*
 * Draws one screen from one interval's profiles (one per mode, in the order given; the tables
 * are the first one's, or the one m chose).  0 or a negative errno (writing the screen failed).
 */
int live__render(struct live *l, const struct profile *const *profiles, size_t n,
		 const struct live_status *st);

/* Waits at most timeout_ms (0 = only look) for a key.  enum live_key, or a negative errno. */
int live__key(struct live *l, int timeout_ms);

#endif /* PROF_LIVE_H */
