// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/live.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "export/growth.h"
#include "export/oldblocks.h"
#include "export/quantity.h"
#include "export/rank.h"
#include "profile/profile.h"
#include "util/escape.h"

/* Without a size from the terminal (a pipe, a dumb terminal), the classic one. */
#define LIVE_DEFAULT_COLS 80
#define LIVE_DEFAULT_ROWS 24
/* Bounds a screen's memory whatever size a terminal claims. */
#define LIVE_MAX_COLS	  1000
#define LIVE_MAX_ROWS	  500
/* Narrower than this, function rows drop their two time columns to keep room for the name. */
#define LIVE_WIDE_COLS	  64
/* Lines the drop counters may wrap onto. */
#define LIVE_DROP_LINES	  3

/* Escape sequences (ECMA-48 / xterm), written only by us. */
#define ESC_ALT_SCREEN_ON  "\033[?1049h"
#define ESC_ALT_SCREEN_OFF "\033[?1049l"
#define ESC_CURSOR_HIDE	   "\033[?25l"
#define ESC_CURSOR_SHOW	   "\033[?25h"
#define ESC_CLEAR_EOL	   "\033[K"
#define ESC_CLEAR_BELOW	   "\033[J"

struct live {
	struct live_opts o;
	struct termios saved;
	bool restore; /* saved holds the terminal's settings to put back */
	bool in_eof;  /* keys can no longer come: waiting for one only sleeps */
	size_t mode;  /* whose tables are shown: an index into the profiles given */
	/* t: the sample type of the tables, as steps past the mode's default (wrapped to its
	 * types when drawn; m starts the next mode at its default) */
	size_t type;
};

/* One screen being composed: each line is placed by absolute cursor address, so nothing ever
 * scrolls, then cleared to its end. */
struct screen {
	char *buf;
	size_t len, cap;
	unsigned cols, rows, used;
};

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int live__open(struct live **out, const struct live_opts *o)
{
	struct live *l = calloc(1, sizeof(*l));
	struct termios raw;
	int err = 0;

	if (!l)
		return -ENOMEM;
	l->o = *o;
	if (o->terminal) {
		if (tcgetattr(o->in_fd, &l->saved)) {
			err = -errno;
			goto cleanup;
		}
		raw = l->saved;
		/* Keys arrive one by one and are not echoed; Ctrl-C still sends SIGINT (ISIG
		 * stays), which stops profiling like q does. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(o->in_fd, TCSANOW, &raw)) {
			err = -errno;
			goto cleanup;
		}
		l->restore = true;
		err = write_all(o->out_fd, ESC_ALT_SCREEN_ON ESC_CURSOR_HIDE,
				strlen(ESC_ALT_SCREEN_ON ESC_CURSOR_HIDE));
	}
cleanup:
	if (err) {
		live__free(l);
		return err;
	}
	*out = l;
	return 0;
}

int live__new(struct live **out, int tty_fd)
{
	if (!isatty(tty_fd))
		return -ENOTTY;
	return live__open(out, &(struct live_opts){
				       .in_fd = tty_fd,
				       .out_fd = tty_fd,
				       .terminal = true,
			       });
}

void live__free(struct live *l)
{
	if (!l)
		return;
	if (l->o.terminal) {
		/* Nothing to do about a failure: the terminal is going away or already gone. */
		(void)write_all(l->o.out_fd, ESC_CURSOR_SHOW ESC_ALT_SCREEN_OFF,
				strlen(ESC_CURSOR_SHOW ESC_ALT_SCREEN_OFF));
	}
	if (l->restore)
		tcsetattr(l->o.in_fd, TCSANOW, &l->saved);
	free(l);
}

int live__key(struct live *l, int timeout_ms)
{
	struct pollfd pfd = {.fd = l->o.in_fd, .events = POLLIN};
	char keys[64];
	ssize_t n;
	int ret;

	if (l->in_eof) {
		if (timeout_ms > 0)
			poll(NULL, 0, timeout_ms);
		return LIVE_KEY_NONE;
	}
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? LIVE_KEY_NONE : -errno;
	if (!ret)
		return LIVE_KEY_NONE;
	n = read(l->o.in_fd, keys, sizeof(keys));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? LIVE_KEY_NONE : -errno;
	if (!n) {
		l->in_eof = true; /* the writer closed: keys will never come */
		return LIVE_KEY_NONE;
	}
	for (ssize_t i = 0; i < n; i++)
		if (keys[i] == 'q' || keys[i] == 'Q')
			return LIVE_KEY_QUIT;
	ret = LIVE_KEY_NONE;
	for (ssize_t i = 0; i < n; i++) {
		if (keys[i] == 'm' || keys[i] == 'M' || keys[i] == '\t') {
			l->mode++; /* wrapped to the number of profiles when drawn */
			l->type = 0;
			ret = LIVE_KEY_MODE;
		} else if (keys[i] == 't' || keys[i] == 'T') {
			l->type++;
			ret = LIVE_KEY_TYPE;
		}
	}
	return ret;
}

/* Appends one line (printf-like), cut to the width.  Names come from targets: the line goes
 * through the escaper of terminal text (util/escape.h), which keeps valid UTF-8 and shows
 * control bytes and broken UTF-8 as \xNN, and counts the columns each character takes.  Lines
 * past the last row are dropped. */
__attribute__((format(printf, 2, 3))) static void line(struct screen *sc, const char *fmt, ...)
{
	/* A column takes at most ESCAPE_UNIT_MAX bytes of source: enough for the widest line. */
	char text[LIVE_MAX_COLS * ESCAPE_UNIT_MAX + 1];
	va_list ap;
	int n;

	if (sc->used >= sc->rows)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(text))
		n = (int)sizeof(text) - 1;
	sc->used++;
	sc->len += (size_t)snprintf(sc->buf + sc->len, sc->cap - sc->len, "\033[%u;1H", sc->used);
	sc->len += escape__fit(sc->buf + sc->len, sc->cap - sc->len, text, (size_t)n, sc->cols);
	memcpy(sc->buf + sc->len, ESC_CLEAR_EOL, strlen(ESC_CLEAR_EOL));
	sc->len += strlen(ESC_CLEAR_EOL);
}

static double percent(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* "1.95 s", "3.91 MiB", "1200" into buf. */
static const char *qty(char *buf, int64_t v, const struct profile_value_type *vt)
{
	return quantity__format(buf, QUANTITY_MAX, v, vt->unit, false);
}

static void fmt_elapsed(char *buf, size_t len, int64_t ns)
{
	int64_t s = ns / 1000000000LL;

	if (s < 60)
		snprintf(buf, len, "%.1f s", (double)ns / 1e9);
	else if (s < 3600)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m%02" PRId64 "s", s / 3600,
			 s / 60 % 60, s % 60);
}

/* "cpu    cpu 1.95 s (97.5% of one CPU)", "heap   inuse_space 3.91 MiB". */
static void mode_line(struct screen *sc, const struct profile *p)
{
	const struct profile_value_type *vt;
	char q[QUANTITY_MAX], share[64] = "";
	int64_t total;

	if (p->default_type >= p->ntypes) {
		line(sc, "%-6s (no sample types)", p->mode);
		return;
	}
	vt = &p->types[p->default_type];
	total = profile__type_total(p, p->default_type);

	/* Time over the span the profile covers: 100% is one CPU (or thread) busy all along, as
	 * in top, so several CPUs make more than 100%. */
	if (!strcmp(vt->unit, "nanoseconds") && p->duration_nanos > 0)
		snprintf(share, sizeof(share), " (%.1f%% of %s)", percent(total, p->duration_nanos),
			 !strcmp(vt->type, "cpu") ? "one CPU" : "the time");
	line(sc, "%-6s %s %s%s", p->mode, vt->type, qty(q, total, vt), share);
}

/* A counter of lost data worth a place on the screen (bookkeeping stats are not). */
static bool is_drop(const struct profile_counter *c)
{
	return c->value && profile_counter__is_drop(c);
}

/* Whether counter c of profiles[i] has a shown namesake earlier: in an earlier profile or
 * earlier in the same one. */
static bool shown_before(const struct profile *const *profiles, size_t i, uint32_t c)
{
	const char *name = profiles[i]->counters[c].name;

	for (size_t j = 0; j <= i; j++) {
		uint32_t end = j < i ? profiles[j]->ncounters : c;

		for (uint32_t d = 0; d < end; d++)
			if (is_drop(&profiles[j]->counters[d]) &&
			    !strcmp(profiles[j]->counters[d].name, name))
				return true;
	}
	return false;
}

/* The non-zero drop counters of every profile (the run's counters repeat in each: shown once). */
static void drops_lines(struct screen *sc, const struct profile *const *profiles, size_t n)
{
	char text[LIVE_MAX_COLS + 1];
	size_t len = 0;
	unsigned lines = 0;
	bool any = false;

	len = (size_t)snprintf(text, sizeof(text), "drops:");
	for (size_t i = 0; i < n; i++) {
		const struct profile *p = profiles[i];

		for (uint32_t c = 0; c < p->ncounters; c++) {
			const struct profile_counter *pc = &p->counters[c];
			char item[160];
			int w;

			if (!is_drop(pc) || shown_before(profiles, i, c))
				continue;
			any = true;
			w = snprintf(item, sizeof(item), " %s %" PRIu64, pc->name, pc->value);
			if (w < 0)
				continue;
			/* Wrap at the width, on a new line indented under the first item. */
			if (len + (size_t)w > sc->cols && len > 6) {
				if (++lines == LIVE_DROP_LINES) {
					line(sc, "%s ...", text);
					return;
				}
				line(sc, "%s", text);
				len = (size_t)snprintf(text, sizeof(text), "      ");
			}
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s", item);
			if (len >= sizeof(text))
				len = sizeof(text) - 1;
		}
	}
	if (!any)
		line(sc, "no drops");
	else
		line(sc, "%s", text);
}

struct proc_total {
	uint32_t pid;
	const char *process;
	int64_t value;
};

static int cmp_pid(const void *a, const void *b)
{
	const struct proc_total *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int cmp_value(const void *a, const void *b)
{
	const struct proc_total *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return cmp_pid(a, b);
}

/* The top processes of p by value type t: rows lines at most, a header included. */
static int proc_table(struct screen *sc, const struct profile *p, uint32_t t, int64_t total,
		      unsigned rows)
{
	const struct profile_value_type *vt = &p->types[t];
	struct proc_total *procs;
	uint32_t n = 0;
	char q[QUANTITY_MAX];

	if (!rows)
		return 0;
	procs = calloc(p->nsamples ? p->nsamples : 1, sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nsamples; i++)
		procs[i] = (struct proc_total){.pid = p->samples[i].pid,
					       .process = p->samples[i].process,
					       .value = p->samples[i].values[t]};
	qsort(procs, p->nsamples, sizeof(*procs), cmp_pid);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		if (n && procs[n - 1].pid == procs[i].pid) {
			procs[n - 1].value += procs[i].value;
			if ((!procs[n - 1].process || !*procs[n - 1].process) && procs[i].process)
				procs[n - 1].process = procs[i].process;
			continue;
		}
		procs[n++] = procs[i];
	}
	qsort(procs, n, sizeof(*procs), cmp_value);
	line(sc, "%7s %11s %6s  PROCESS (%" PRIu32 ")", "PID", vt->type, "SHARE", n);
	for (uint32_t i = 0; i < n && i + 1 < rows; i++)
		line(sc, "%7" PRIu32 " %11s %5.1f%%  %s", procs[i].pid, qty(q, procs[i].value, vt),
		     percent(procs[i].value, total), procs[i].process ? procs[i].process : "");
	free(procs);
	return 0;
}

/* The top functions of p by value type t in one order: rows lines at most, a header included. */
static int func_table(struct screen *sc, struct rank *rank, const struct profile *p, uint32_t t,
		      int64_t total, enum rank_order order, unsigned rows)
{
	const struct profile_value_type *vt = &p->types[t];
	const char *by = order == RANK_BY_FLAT ? "own" : "total";
	bool wide = sc->cols >= LIVE_WIDE_COLS;
	const struct rank_row *r;
	uint32_t nrows;
	char q1[QUANTITY_MAX], q2[QUANTITY_MAX];
	int err;

	if (!rows)
		return 0;
	err = rank__compute(rank, &r, &nrows, NULL, 0, t, order);
	if (err)
		return err;
	if (wide)
		line(sc, "%6s %6s %11s %11s  FUNCTION (by %s %s)", "%OWN", "%TOTAL", "OWN", "TOTAL",
		     by, vt->type);
	else
		line(sc, "%6s %6s  FUNCTION (by %s)", "%OWN", "%TOTAL", by);
	for (uint32_t i = 0; i < nrows && i + 1 < rows; i++) {
		if (wide)
			line(sc, "%5.1f%% %5.1f%% %11s %11s  %s", percent(r[i].flat, total),
			     percent(r[i].cum, total), qty(q1, r[i].flat, vt),
			     qty(q2, r[i].cum, vt), r[i].name);
		else
			line(sc, "%5.1f%% %5.1f%%  %s", percent(r[i].flat, total),
			     percent(r[i].cum, total), r[i].name);
	}
	return 0;
}

/* The tables of one mode in the rows left: a quarter for processes, the rest split
 * between the two function tables, blank lines between. */
static int tables(struct screen *sc, const struct profile *p, size_t type_step)
{
	unsigned left = sc->rows > sc->used ? sc->rows - sc->used : 0;
	unsigned procs, own, tot;
	struct rank *rank = NULL;
	const uint32_t from = p->default_type;
	uint32_t t = from;
	int64_t total, inuse = -1;
	char q[QUANTITY_MAX];
	int err;

	if (t >= p->ntypes)
		return 0;
	/* Unless t was pressed: the allocations when next to nothing is in use (a server's heap
	 * attached with -p), as the svg does. */
	if (type_step)
		t = (uint32_t)((t + type_step) % p->ntypes);
	else
		t = profile__shown_type(p, t, &inuse);
	if (!p->nsamples) {
		line(sc, "%s", "");
		line(sc, "(no %s samples in this interval)", p->mode);
		return 0;
	}
	total = profile__type_total(p, t);
	if (left < 3 * 2) /* each table: a blank line, a header and one row */
		return 0;
	left -= 3; /* the blank lines */
	procs = left / 4 < 2 ? 2 : left / 4;
	own = (left - procs + 1) / 2;
	tot = left - procs - own;
	err = rank__new(&rank, p);
	if (err)
		return err;
	if (inuse >= 0)
		/* in the blank line's place: the rows stay as counted */
		line(sc, "%s %s is under %g%% of %s: %s shown (t: next type)", p->types[from].type,
		     qty(q, inuse, &p->types[from]), PROFILE_INUSE_TINY * 100, p->types[t].type,
		     p->types[t].type);
	else
		line(sc, "%s", "");
	err = proc_table(sc, p, t, total, procs);
	if (err)
		goto cleanup;
	line(sc, "%s", "");
	err = func_table(sc, rank, p, t, total, RANK_BY_FLAT, own);
	if (err)
		goto cleanup;
	line(sc, "%s", "");
	err = func_table(sc, rank, p, t, total, RANK_BY_CUM, tot);
cleanup:
	rank__free(rank);
	return err;
}

/* The growth block's stack rows, and the fewest rows the tables above it keep. */
#define LIVE_GROWTH_ROWS       5
#define LIVE_GROWTH_MIN_TABLES 12

/* The stacks that grew, most bytes first: a blank line, a title, a header, rows at most. */
static int growth_block(struct screen *sc, const struct live_status *st, unsigned rows)
{
	char grown[QUANTITY_MAX], now[QUANTITY_MAX], rate[QUANTITY_MAX + 2], window[32];
	char stack[LIVE_MAX_COLS * ESCAPE_UNIT_MAX + 1];
	struct growth_row *g;
	uint64_t window_ns;
	unsigned intervals;
	size_t n;
	int err;

	err = growth__rank(st->growth, &g, &n, &window_ns, &intervals);
	if (err)
		return err;
	line(sc, "%s", "");
	if (!intervals) {
		line(sc, "%s", "growth: one interval so far, nothing to compare");
		goto out;
	}
	line(sc, "grew over the last %u interval%s (%s): %zu stack%s", intervals,
	     intervals == 1 ? "" : "s", oldblocks__age(window, sizeof(window), window_ns), n,
	     n == 1 ? "" : "s");
	if (n)
		line(sc, "%11s %13s %11s %4s %7s  STACK (leaf first)", "GROWN", "PER SECOND",
		     "IN USE", "MONO", "PID");
	for (size_t i = 0; i < n && i < rows; i++) {
		/* escaped by oldblocks (printable ASCII, which line() keeps as it is) */
		FILE *f = fmemopen(stack, sizeof(stack), "w");

		if (!f) {
			err = -errno;
			break;
		}
		oldblocks__write_stack(f, st->stacks, g[i].stack_id);
		fclose(f);
		quantity__format(rate, sizeof(rate) - 2, llround(g[i].per_s), "bytes", false);
		strcat(rate, "/s");
		line(sc, "%11s %13s %11s %4s %7" PRIu32 "  %s",
		     quantity__format(grown, sizeof(grown), llround(g[i].grown), "bytes", false),
		     rate, quantity__format(now, sizeof(now), llround(g[i].now), "bytes", false),
		     g[i].monotonic ? "yes" : "no", g[i].pid, stack);
	}
out:
	free(g);
	return err;
}

static void screen_size(const struct live *l, unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	*cols = l->o.cols;
	*rows = l->o.rows;
	if ((!*cols || !*rows) && !ioctl(l->o.out_fd, TIOCGWINSZ, &ws)) {
		if (!*cols)
			*cols = ws.ws_col;
		if (!*rows)
			*rows = ws.ws_row;
	}
	if (!*cols)
		*cols = LIVE_DEFAULT_COLS;
	if (!*rows)
		*rows = LIVE_DEFAULT_ROWS;
	if (*cols > LIVE_MAX_COLS)
		*cols = LIVE_MAX_COLS;
	if (*rows > LIVE_MAX_ROWS)
		*rows = LIVE_MAX_ROWS;
}

int live__render(struct live *l, const struct profile *const *profiles, size_t n,
		 const struct live_status *st)
{
	struct screen sc = {0};
	char elapsed[32], span[48] = "";
	int err = 0;

	screen_size(l, &sc.cols, &sc.rows);
	/* Each line: its cursor address, its text (up to ESCAPE_UNIT_MAX bytes a column), the
	 * clear; then the final clear. */
	sc.cap = (size_t)sc.rows * ((size_t)sc.cols * ESCAPE_UNIT_MAX + 32) + 32;
	sc.buf = malloc(sc.cap);
	if (!sc.buf)
		return -ENOMEM;
	fmt_elapsed(elapsed, sizeof(elapsed), st->elapsed_ns);
	/* The span the numbers cover: the interval, or the run so far without --output-dir. */
	if (n && profiles[0]->duration_nanos > 0)
		snprintf(span, sizeof(span), ", totals over %.2f s",
			 (double)profiles[0]->duration_nanos / 1e9);
	line(&sc, "%s", st->cmdline ? st->cmdline : "bpftrace-prof");
	/* What matters first: a narrow terminal cuts the keys' reminder. */
	line(&sc, "interval %" PRIu64 ", elapsed %s%s   q: quit, m: next mode, t: next type",
	     st->interval, elapsed, span);
	for (size_t i = 0; i < n; i++)
		mode_line(&sc, profiles[i]);
	if (!n)
		line(&sc, "waiting for the first interval ...");
	else
		drops_lines(&sc, profiles, n);
	if (n) {
		const struct profile *p = profiles[l->mode % n];
		/* the heap's tables leave room for what grew, on a screen tall enough for both */
		unsigned growth = LIVE_GROWTH_ROWS + 3;
		bool grew = st->growth && !strcmp(p->mode, "heap") &&
			    sc.rows >= sc.used + growth + LIVE_GROWTH_MIN_TABLES;

		if (grew)
			sc.rows -= growth;
		err = tables(&sc, p, l->type);
		if (grew) {
			sc.rows += growth;
			if (!err)
				err = growth_block(&sc, st, LIVE_GROWTH_ROWS);
		}
	}
	if (!err) {
		/* What the last screen had below ours goes (room: cap counts 32 bytes more). */
		if (sc.used < sc.rows)
			sc.len += (size_t)snprintf(sc.buf + sc.len, sc.cap - sc.len, "\033[%u;1H%s",
						   sc.used + 1, ESC_CLEAR_BELOW);
		err = write_all(l->o.out_fd, sc.buf, sc.len);
	}
	free(sc.buf);
	return err;
}
