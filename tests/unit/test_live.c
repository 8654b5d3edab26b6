// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/live.h"
#include "profile/profile.h"

#define MAX_ROWS 64

enum { L_MAIN = 1, L_HOT3, L_HOT1, L_WORK, L_SPIN };

/*
 * A cpu profile of 2 s: pid 100 "cpu_target" spends 1.5 s in main > hot_three > work and
 * 0.5 s in main > hot_one > work; pid 200 "other" 0.5 s in spin.  Total 2.5 s:
 * cpu_target 80 %, other 20 %; work owns 80 %, main and work total 80 %, hot_three 60 %.
 */
static int setup(void **state)
{
	static const char *const names[] = {"main", "hot_three", "hot_one", "work", "spin"};
	struct profile *p;
	uint32_t fn, id;
	int err = 0;

	if (profile__new(&p, "cpu"))
		return -1;
	err |= profile__add_type(p, "samples", "count");
	err |= profile__add_type(p, "cpu", "nanoseconds");
	p->default_type = 1;
	p->duration_nanos = 2000000000;
	for (unsigned i = 0; i < 5; i++) {
		err |= profile__function(p, &fn, names[i], names[i], "", 0);
		err |= profile__location(p, &id, 0x100 * (i + 1), 0, fn, 0);
	}
	err |= profile__add_sample(p, 100, 100, "cpu_target", "cpu_target",
				   (uint32_t[]){L_WORK, L_HOT3, L_MAIN}, 3,
				   (int64_t[]){150, 1500000000}, false);
	err |= profile__add_sample(p, 100, 101, "cpu_target", "cpu_target",
				   (uint32_t[]){L_WORK, L_HOT1, L_MAIN}, 3,
				   (int64_t[]){50, 500000000}, false);
	err |= profile__add_sample(p, 200, 200, "other", "other", (uint32_t[]){L_SPIN}, 1,
				   (int64_t[]){50, 500000000}, false);
	err |= profile__add_counter(p, "ringbuf_full", "events lost: ring buffer full", 0);
	err |= profile__add_counter(p, "stack_truncated", "stacks cut short", 4);
	err |= profile__add_stat(p, "unwind_tables_built", "bookkeeping, not a drop", 11);
	if (err) {
		profile__free(p);
		return -1;
	}
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

/* A screen as the terminal shows it: the text of each row (cursor addresses place rows). */
struct screen {
	char *raw;
	char rows[MAX_ROWS][1024];
	unsigned nrows;
};

/* Replays what live__render wrote: "\033[R;1H" moves to row R, other sequences are dropped;
 * any other control byte, or an escape that is not a CSI, fails the test. */
static void parse(struct screen *sc, const char *raw, size_t len)
{
	unsigned row = 0;
	size_t col = 0;

	memset(sc->rows, 0, sizeof(sc->rows));
	sc->nrows = 0;
	for (size_t i = 0; i < len;) {
		if (raw[i] == '\033') {
			unsigned r, c;
			size_t j = i + 1;

			assert_true(j < len && raw[j] == '[');
			for (j++; j < len && !(raw[j] >= 0x40 && raw[j] <= 0x7e); j++)
				;
			assert_true(j < len);
			if (raw[j] == 'H' && sscanf(raw + i, "\033[%u;%uH", &r, &c) == 2) {
				assert_true(r >= 1 && r <= MAX_ROWS);
				row = r;
				col = 0;
			}
			i = j + 1;
			continue;
		}
		if ((unsigned char)raw[i] < 0x20 || raw[i] == 0x7f)
			fail_msg("control byte 0x%02x on the screen", (unsigned char)raw[i]);
		assert_true(row >= 1);
		assert_true(col < sizeof(sc->rows[0]) - 1);
		sc->rows[row - 1][col++] = raw[i++];
		if (row > sc->nrows)
			sc->nrows = row;
	}
}

/* Renders profiles at cols x rows into a memory file and parses the screen. */
static void render(struct screen *sc, const struct profile *const *profiles, size_t n,
		   unsigned cols, unsigned rows)
{
	int fd = memfd_create("live", MFD_CLOEXEC);
	struct live *l = NULL;
	struct live_status st = {.cmdline = "bpftrace-prof --cpu --live -- cpu_target 8",
				 .interval = 3,
				 .elapsed_ns = 6000000000};
	off_t len;

	assert_true(fd >= 0);
	assert_int_equal(live__open(&l,
				    &(struct live_opts){
					    .in_fd = -1, .out_fd = fd, .cols = cols, .rows = rows}),
			 0);
	assert_int_equal(live__render(l, profiles, n, &st), 0);
	live__free(l);
	len = lseek(fd, 0, SEEK_CUR);
	assert_true(len > 0);
	sc->raw = calloc(1, (size_t)len + 1);
	assert_non_null(sc->raw);
	assert_int_equal(pread(fd, sc->raw, (size_t)len, 0), len);
	close(fd);
	parse(sc, sc->raw, (size_t)len);
}

/* The row that contains needle, or fail. */
static const char *row_with(const struct screen *sc, const char *needle)
{
	for (unsigned i = 0; i < sc->nrows; i++)
		if (strstr(sc->rows[i], needle))
			return sc->rows[i];
	for (unsigned i = 0; i < sc->nrows; i++)
		print_message("%2u|%s\n", i + 1, sc->rows[i]);
	fail_msg("no row with \"%s\"", needle);
	return NULL;
}

/* The row index (0-based) that contains needle at or after row from. */
static unsigned row_index(const struct screen *sc, const char *needle, unsigned from)
{
	for (unsigned i = from; i < sc->nrows; i++)
		if (strstr(sc->rows[i], needle))
			return i;
	fail_msg("no row with \"%s\" from row %u", needle, from + 1);
	return 0;
}

static void assert_fits(const struct screen *sc, unsigned cols, unsigned rows)
{
	assert_true(sc->nrows <= rows);
	for (unsigned i = 0; i < sc->nrows; i++)
		if (strlen(sc->rows[i]) > cols)
			fail_msg("row %u is %zu wide (> %u): %s", i + 1, strlen(sc->rows[i]), cols,
				 sc->rows[i]);
}

static void test_live__header_totals_and_drops(void **state)
{
	const struct profile *p = *state;
	struct screen sc;

	render(&sc, &p, 1, 80, 24);
	assert_string_equal(sc.rows[0], "bpftrace-prof --cpu --live -- cpu_target 8");
	assert_non_null(strstr(sc.rows[1], "interval 3, elapsed 6.0 s, totals over 2.00 s"));
	/* 2.5 s of CPU in 2 s: 125 % of one CPU. */
	assert_string_equal(row_with(&sc, "cpu    cpu"), "cpu    cpu 2.50 s (125.0% of one CPU)");
	assert_string_equal(row_with(&sc, "drops:"), "drops: stack_truncated 4");
	assert_null(strstr(sc.raw, "ringbuf_full"));
	assert_null(strstr(sc.raw, "unwind_tables_built"));
	free(sc.raw);
}

static void test_live__top_process_and_functions_at_80(void **state)
{
	const struct profile *p = *state;
	struct screen sc;
	unsigned own, tot;

	render(&sc, &p, 1, 80, 24);
	assert_fits(&sc, 80, 24);
	row_with(&sc, "PROCESS (2)");
	assert_string_equal(row_with(&sc, "    100 "), "    100      2.00 s  80.0%  cpu_target");
	assert_string_equal(row_with(&sc, " other"), "    200   500.00 ms  20.0%  other");
	assert_true(row_with(&sc, "    100 ") < row_with(&sc, " other"));

	own = row_index(&sc, "FUNCTION (by own cpu)", 0);
	/* work owns 2 s of 2.5 s and is on every stack of 2 s; spin 0.5 s. */
	assert_string_equal(sc.rows[own + 1], " 80.0%  80.0%      2.00 s      2.00 s  work");
	assert_string_equal(sc.rows[own + 2], " 20.0%  20.0%   500.00 ms   500.00 ms  spin");
	tot = row_index(&sc, "FUNCTION (by total cpu)", own);
	/* By total: main and work tie at 2 s, work first (it owns more); hot_three 1.5 s. */
	assert_string_equal(sc.rows[tot + 1], " 80.0%  80.0%      2.00 s      2.00 s  work");
	assert_string_equal(sc.rows[tot + 2], "  0.0%  80.0%        0 ns      2.00 s  main");
	assert_string_equal(sc.rows[tot + 3], "  0.0%  60.0%        0 ns      1.50 s  hot_three");
	free(sc.raw);
}

static void test_live__fits_40_columns(void **state)
{
	const struct profile *p = *state;
	struct screen sc;
	unsigned own, tot;

	render(&sc, &p, 1, 40, 24);
	assert_fits(&sc, 40, 24);
	assert_string_equal(row_with(&sc, "    100 "), "    100      2.00 s  80.0%  cpu_target");
	own = row_index(&sc, "FUNCTION (by own)", 0);
	assert_string_equal(sc.rows[own + 1], " 80.0%  80.0%  work");
	tot = row_index(&sc, "FUNCTION (by total)", own);
	assert_string_equal(sc.rows[tot + 3], "  0.0%  60.0%  hot_three");
	/* The command line is cut at the width. */
	assert_string_equal(sc.rows[0], "bpftrace-prof --cpu --live -- cpu_target");
	free(sc.raw);
}

static void test_live__fits_small_screens(void **state)
{
	const struct profile *p = *state;
	static const unsigned sizes[][2] = {{10, 5}, {20, 8}, {30, 12}, {200, 60}};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct screen sc;

		render(&sc, &p, 1, sizes[i][0], sizes[i][1]);
		assert_fits(&sc, sizes[i][0], sizes[i][1]);
		free(sc.raw);
	}
}

/* Names come from targets: an escape sequence in one must not reach the terminal. */
static void test_live__hostile_names_are_printable(void **state)
{
	struct profile *p = *state;
	const struct profile *cp = p;
	struct screen sc;

	assert_int_equal(profile__add_sample(p, 300, 300, "x", "\033]0;owned\007evil\r\n",
					     (uint32_t[]){L_SPIN}, 1, (int64_t[]){1, 3000000000},
					     false),
			 0);
	render(&sc, &cp, 1, 80, 24);
	/* parse() fails on any control byte other than our own CSI sequences. */
	assert_string_equal(row_with(&sc, "evil"),
			    "    300      3.00 s  54.5%  \\x1b]0;owned\\x07evil\\x0d\\x0a");
	free(sc.raw);
}

/* UTF-8 names are kept, cut by the columns they take, never inside a character; a C1 control
 * (U+009B is CSI) and bytes that are not UTF-8 are escaped. */
static void test_live__utf8_names_kept_and_cut_by_columns(void **state)
{
	struct profile *p = *state;
	const struct profile *cp = p;
	struct screen sc;

	assert_int_equal(profile__add_sample(p, 300, 300, "x",
					     "d\xc3\xa9j\xc3\xa0 \xc2\x9b"
					     "2J\xff",
					     (uint32_t[]){L_SPIN}, 1, (int64_t[]){1, 3000000000},
					     false),
			 0);
	assert_int_equal(profile__add_sample(p, 400, 400, "x",
					     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5"
					     "\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac",
					     (uint32_t[]){L_SPIN}, 1, (int64_t[]){1, 4000000000},
					     false),
			 0);
	render(&sc, &cp, 1, 80, 24);
	assert_string_equal(row_with(&sc, "    300 "),
			    "    300      3.00 s  31.6%  d\xc3\xa9j\xc3\xa0 \\xc2\\x9b2J\\xff");
	free(sc.raw);
	/* 28 columns before the name, 11 left at 39: five wide characters, not five and a half. */
	render(&sc, &cp, 1, 39, 24);
	assert_string_equal(row_with(&sc, "    400 "),
			    "    400      4.00 s  42.1%  \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
			    "\xe6\x97\xa5\xe6\x9c\xac");
	free(sc.raw);
}

static void test_live__modes_and_no_drops(void **state)
{
	const struct profile *cpu = *state;
	struct profile *heap;
	const struct profile *both[2];
	struct screen sc;
	uint32_t fn, id;

	assert_int_equal(profile__new(&heap, "heap"), 0);
	assert_int_equal(profile__add_type(heap, "alloc_space", "bytes"), 0);
	assert_int_equal(profile__add_type(heap, "inuse_space", "bytes"), 0);
	heap->default_type = 1;
	assert_int_equal(profile__function(heap, &fn, "leak_pages", "leak_pages", "", 0), 0);
	assert_int_equal(profile__location(heap, &id, 0x10, 0, fn, 0), 0);
	assert_int_equal(profile__add_sample(heap, 7, 7, "h", "heapy", &id, 1,
					     (int64_t[]){8192000, 4096000}, false),
			 0);
	assert_int_equal(profile__add_counter(heap, "unknown_free", "", 0), 0);
	both[0] = heap;
	both[1] = cpu;
	render(&sc, both, 2, 80, 24);
	assert_string_equal(row_with(&sc, "heap   "), "heap   inuse_space 3.91 MiB");
	row_with(&sc, "cpu    cpu 2.50 s");
	/* The tables are the first mode's. */
	assert_string_equal(row_with(&sc, "heapy"), "      7    3.91 MiB 100.0%  heapy");
	row_with(&sc, "FUNCTION (by own inuse_space)");
	/* The cpu profile's counter still shows. */
	assert_string_equal(row_with(&sc, "drops:"), "drops: stack_truncated 4");
	free(sc.raw);

	render(&sc, both, 1, 80, 24);
	assert_string_equal(row_with(&sc, "drops"), "no drops");
	free(sc.raw);
	profile__free(heap);
}

/* m: the next screens show the next mode's tables, and wrap around. */
static void test_live__m_shows_the_next_mode(void **state)
{
	const struct profile *cpu = *state;
	struct profile *heap;
	const struct profile *both[2];
	struct live_status st = {.interval = 1};
	struct live *l;
	struct screen sc;
	int fds[2], out;
	off_t len;

	assert_int_equal(profile__new(&heap, "heap"), 0);
	assert_int_equal(profile__add_type(heap, "inuse_space", "bytes"), 0);
	both[0] = heap;
	both[1] = cpu;
	assert_int_equal(pipe(fds), 0);
	out = memfd_create("live", MFD_CLOEXEC);
	assert_true(out >= 0);
	assert_int_equal(live__open(&l, &(struct live_opts){.in_fd = fds[0],
							    .out_fd = out,
							    .cols = 80,
							    .rows = 24}),
			 0);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(ftruncate(out, 0), 0);
		assert_int_equal(lseek(out, 0, SEEK_SET), 0);
		assert_int_equal(live__render(l, both, 2, &st), 0);
		len = lseek(out, 0, SEEK_CUR);
		sc.raw = calloc(1, (size_t)len + 1);
		assert_non_null(sc.raw);
		assert_int_equal(pread(out, sc.raw, (size_t)len, 0), len);
		parse(&sc, sc.raw, (size_t)len);
		if (i == 1)
			row_with(&sc, "FUNCTION (by own cpu)");
		else
			row_with(&sc, "(no heap samples in this interval)");
		free(sc.raw);
		assert_int_equal(write(fds[1], "m", 1), 1);
		assert_int_equal(live__key(l, 1000), LIVE_KEY_MODE);
	}
	live__free(l);
	close(out);
	close(fds[0]);
	close(fds[1]);
	profile__free(heap);
}

/* A heap whose in-use is next to nothing (a server attached with -p frees what it allocates):
 * its allocations are shown, and said so, until t picks a type. */
static void test_live__tiny_inuse_shows_allocations(void **state)
{
	struct profile *heap;
	const struct profile *one[1];
	struct live_status st = {.interval = 1};
	struct live *l;
	struct screen sc;
	uint32_t fn, id;
	int fds[2], out;
	off_t len;

	(void)state;
	assert_int_equal(profile__new(&heap, "heap"), 0);
	assert_int_equal(profile__add_type(heap, "alloc_objects", "count"), 0);
	assert_int_equal(profile__add_type(heap, "alloc_space", "bytes"), 0);
	assert_int_equal(profile__add_type(heap, "inuse_objects", "count"), 0);
	assert_int_equal(profile__add_type(heap, "inuse_space", "bytes"), 0);
	heap->default_type = 3;
	assert_int_equal(profile__function(heap, &fn, "handle", "handle", "", 0), 0);
	assert_int_equal(profile__location(heap, &id, 0x10, 0, fn, 0), 0);
	/* 4 KiB in use of 8 MB allocated: under 1 % */
	assert_int_equal(profile__add_sample(heap, 7, 7, "h", "httpd", &id, 1,
					     (int64_t[]){2000, 8192000, 1, 4096}, false),
			 0);
	one[0] = heap;
	assert_int_equal(pipe(fds), 0);
	out = memfd_create("live", MFD_CLOEXEC);
	assert_true(out >= 0);
	assert_int_equal(live__open(&l, &(struct live_opts){.in_fd = fds[0],
							    .out_fd = out,
							    .cols = 100,
							    .rows = 24}),
			 0);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(ftruncate(out, 0), 0);
		assert_int_equal(lseek(out, 0, SEEK_SET), 0);
		assert_int_equal(live__render(l, one, 1, &st), 0);
		len = lseek(out, 0, SEEK_CUR);
		sc.raw = calloc(1, (size_t)len + 1);
		assert_non_null(sc.raw);
		assert_int_equal(pread(out, sc.raw, (size_t)len, 0), len);
		parse(&sc, sc.raw, (size_t)len);
		/* the mode line keeps the default type's total */
		assert_string_equal(row_with(&sc, "heap   "), "heap   inuse_space 4.00 KiB");
		if (i == 0) {
			assert_string_equal(row_with(&sc, "is under"),
					    "inuse_space 4.00 KiB is under 1% of alloc_space: "
					    "alloc_space shown (t: next type)");
			row_with(&sc, "FUNCTION (by own alloc_space)");
		} else {
			/* t: the next type after the default, inuse_space -> alloc_objects */
			row_with(&sc, "FUNCTION (by own alloc_objects)");
			for (unsigned r = 0; r < sc.nrows; r++)
				assert_null(strstr(sc.rows[r], "is under"));
		}
		free(sc.raw);
		assert_int_equal(write(fds[1], "t", 1), 1);
		assert_int_equal(live__key(l, 1000), LIVE_KEY_TYPE);
	}
	live__free(l);
	close(out);
	close(fds[0]);
	close(fds[1]);
	profile__free(heap);
}

static void test_live__empty_profile(void **state)
{
	struct profile *p;
	const struct profile *cp;
	struct screen sc;

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	/* Before the first interval: the header and a word, no tables. */
	render(&sc, NULL, 0, 80, 24);
	assert_int_equal(sc.nrows, 3);
	assert_string_equal(sc.rows[2], "waiting for the first interval ...");
	free(sc.raw);
	cp = p;
	/* Not even a sample type: said, not read out of bounds. */
	render(&sc, &cp, 1, 80, 24);
	assert_string_equal(row_with(&sc, "cpu    "), "cpu    (no sample types)");
	free(sc.raw);
	assert_int_equal(profile__add_type(p, "cpu", "nanoseconds"), 0);
	render(&sc, &cp, 1, 80, 24);
	assert_string_equal(row_with(&sc, "cpu    "), "cpu    cpu 0 ns");
	row_with(&sc, "(no cpu samples in this interval)");
	assert_fits(&sc, 80, 24);
	free(sc.raw);
	profile__free(p);
}

static void test_live__q_from_a_pipe_quits(void **state)
{
	struct live *l;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(
		live__open(&l, &(struct live_opts){.in_fd = fds[0], .out_fd = -1, .cols = 80}), 0);
	assert_int_equal(live__key(l, 0), LIVE_KEY_NONE);
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_int_equal(live__key(l, 1000), LIVE_KEY_NONE);
	assert_int_equal(write(fds[1], "aq", 2), 2);
	assert_int_equal(live__key(l, 1000), LIVE_KEY_QUIT);
	assert_int_equal(write(fds[1], "m", 1), 1);
	assert_int_equal(live__key(l, 1000), LIVE_KEY_MODE);
	close(fds[1]);
	/* End of input: no key, ever, and no busy loop of errors. */
	assert_int_equal(live__key(l, 0), LIVE_KEY_NONE);
	assert_int_equal(live__key(l, 0), LIVE_KEY_NONE);
	live__free(l);
	close(fds[0]);
}

static void test_live__new_needs_a_terminal(void **state)
{
	struct live *l = NULL;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(live__new(&l, fds[1]), -ENOTTY);
	assert_null(l);
	close(fds[0]);
	close(fds[1]);
}

/* On a pseudo-terminal: echo and line buffering off while the view lives, back after. */
static void test_live__terminal_restored(void **state)
{
	struct termios before, during, after;
	struct live *l;
	char out[256] = {0};
	int master, slave, n;

	(void)state;
	master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	assert_true(slave >= 0);
	assert_int_equal(tcgetattr(slave, &before), 0);
	assert_true(before.c_lflag & ECHO);
	assert_true(before.c_lflag & ICANON);

	assert_int_equal(live__new(&l, slave), 0);
	assert_int_equal(tcgetattr(slave, &during), 0);
	assert_false(during.c_lflag & ECHO);
	assert_false(during.c_lflag & ICANON);
	assert_true(during.c_lflag & ISIG); /* Ctrl-C still stops the profiler */
	assert_int_equal(write(master, "q", 1), 1);
	assert_int_equal(live__key(l, 1000), LIVE_KEY_QUIT);
	live__free(l);

	assert_int_equal(tcgetattr(slave, &after), 0);
	assert_int_equal(after.c_lflag, before.c_lflag);
	/* Entered and left the alternate screen, in that order. */
	/* A pty hands the two writes over separately: read until it has nothing more. */
	for (n = 0; n < (int)sizeof(out) - 1;) {
		struct pollfd pfd = {.fd = master, .events = POLLIN};
		ssize_t got;

		if (poll(&pfd, 1, 500) <= 0)
			break;
		got = read(master, out + n, sizeof(out) - 1 - (size_t)n);
		if (got <= 0)
			break;
		n += (int)got;
	}
	assert_non_null(strstr(out, "\033[?1049h"));
	assert_non_null(strstr(out, "\033[?1049l"));
	assert_true(strstr(out, "\033[?1049h") < strstr(out, "\033[?1049l"));
	close(slave);
	close(master);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_live__header_totals_and_drops),
		T(test_live__top_process_and_functions_at_80),
		T(test_live__fits_40_columns),
		T(test_live__fits_small_screens),
		T(test_live__hostile_names_are_printable),
		T(test_live__utf8_names_kept_and_cut_by_columns),
		T(test_live__modes_and_no_drops),
		T(test_live__m_shows_the_next_mode),
		cmocka_unit_test(test_live__tiny_inuse_shows_allocations),
		cmocka_unit_test(test_live__empty_profile),
		cmocka_unit_test(test_live__q_from_a_pipe_quits),
		cmocka_unit_test(test_live__new_needs_a_terminal),
		cmocka_unit_test(test_live__terminal_restored),
	};
#undef T

	return cmocka_run_group_tests_name("live", tests, NULL, NULL);
}
