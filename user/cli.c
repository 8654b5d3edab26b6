// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_unwind.h"
#include "export/format.h"
#include "export/growth.h"
#include "export/metrics.h"
#include "export/output.h"
#include "export/suppress.h"
#include "util/escape.h"
#include "util/log.h"

enum {
	OPT_HEAP = 256,
	OPT_CALLS,
	OPT_CPU,
	OPT_OFFCPU,
	OPT_TOP,
	OPT_SAMPLE_BYTES,
	OPT_MIN_AGE,
	OPT_GROWTH_INTERVALS,
	OPT_METRICS,
	OPT_FAIL_ON_LEAK,
	OPT_LEAK_SUPPRESSIONS,
	OPT_UNWIND,
	OPT_UNWIND_MEMORY,
	OPT_UNWIND_MAX_ROWS,
	OPT_UNWIND_MAX_CFI,
	OPT_RING_BUFFER,
	OPT_BACKLOG,
	OPT_NO_DEBUGINFOD,
	OPT_NO_INLINE,
	OPT_DEBUGINFOD_TIMEOUT,
	OPT_VERSION,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_INTERVAL,
	OPT_OUTPUT_DIR,
	OPT_RETAIN,
	OPT_HOLD_EXITS,
	OPT_NO_HOLD_EXITS,
	OPT_NO_PRELOAD,
	OPT_HOLD_RATE,
	OPT_LIVE,
	OPT_PUSH,
	OPT_PUSH_PROTOCOL,
	OPT_PUSH_AUTH_FILE,
	OPT_AT,
	OPT_SVG_TYPE,
	OPT_ICICLE,
	OPT_JSON,
	OPT_PYTHON_FRAMES,
};

static const struct option long_opts[] = {
	{"pid", required_argument, NULL, 'p'},
	{"heap", no_argument, NULL, OPT_HEAP},
	{"calls", no_argument, NULL, OPT_CALLS},
	{"cpu", optional_argument, NULL, OPT_CPU},
	{"offcpu", no_argument, NULL, OPT_OFFCPU},
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, 'f'},
	{"duration", required_argument, NULL, 'd'},
	{"top", required_argument, NULL, OPT_TOP},
	{"sample-bytes", required_argument, NULL, OPT_SAMPLE_BYTES},
	{"min-age", required_argument, NULL, OPT_MIN_AGE},
	{"growth-intervals", required_argument, NULL, OPT_GROWTH_INTERVALS},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"min-size", required_argument, NULL, 'z'},
	{"fail-on-leak", required_argument, NULL, OPT_FAIL_ON_LEAK},
	{"leak-suppressions", required_argument, NULL, OPT_LEAK_SUPPRESSIONS},
	{"max-size", required_argument, NULL, 'Z'},
	{"unwind", required_argument, NULL, OPT_UNWIND},
	{"unwind-memory", required_argument, NULL, OPT_UNWIND_MEMORY},
	{"unwind-max-rows", required_argument, NULL, OPT_UNWIND_MAX_ROWS},
	{"unwind-max-cfi", required_argument, NULL, OPT_UNWIND_MAX_CFI},
	{"ring-buffer", required_argument, NULL, OPT_RING_BUFFER},
	{"backlog", required_argument, NULL, OPT_BACKLOG},
	{"no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD},
	{"no-inline", no_argument, NULL, OPT_NO_INLINE},
	{"debuginfod-timeout", required_argument, NULL, OPT_DEBUGINFOD_TIMEOUT},
	{"python-frames", required_argument, NULL, OPT_PYTHON_FRAMES},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{"cgroup", required_argument, NULL, OPT_CGROUP},
	{"container", required_argument, NULL, OPT_CONTAINER},
	{"all", no_argument, NULL, 'a'},
	{"interval", required_argument, NULL, OPT_INTERVAL},
	{"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
	{"retain", required_argument, NULL, OPT_RETAIN},
	{"hold-exits", no_argument, NULL, OPT_HOLD_EXITS},
	{"no-hold-exits", no_argument, NULL, OPT_NO_HOLD_EXITS},
	{"no-preload", no_argument, NULL, OPT_NO_PRELOAD},
	{"hold-rate", required_argument, NULL, OPT_HOLD_RATE},
	{"live", no_argument, NULL, OPT_LIVE},
	{"push", required_argument, NULL, OPT_PUSH},
	{"push-protocol", required_argument, NULL, OPT_PUSH_PROTOCOL},
	{"push-auth-file", required_argument, NULL, OPT_PUSH_AUTH_FILE},
	{"svg-type", required_argument, NULL, OPT_SVG_TYPE},
	{"icicle", no_argument, NULL, OPT_ICICLE},
	{},
};

static int __attribute__((format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "bpftrace-prof: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see --help)\n");
	va_end(ap);
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --python-frames, of the profiler and of dump. */
static int parse_python_frames(enum stackres_py_frames *out, const char *arg)
{
	if (!strcmp(arg, "python"))
		*out = STACKRES_PY_PYTHON;
	else if (!strcmp(arg, "all"))
		*out = STACKRES_PY_ALL;
	else
		return bad("invalid --python-frames '%s' (python or all)", arg);
	return 0;
}

/* Fills -p's list of the profiler or of dump: the same size. */
_Static_assert(DUMP_MAX_PIDS == CLI_MAX_PIDS, "one bound for both -p lists");

static int parse_pids(uint32_t *pids, unsigned *npids, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t pid;

		if (parse_u64(tok, INT_MAX, &pid) || pid == 0) {
			err = bad("invalid pid '%s'", tok);
			goto cleanup;
		}
		if (*npids == CLI_MAX_PIDS) {
			err = bad("too many pids (at most 64): '%s'", arg);
			goto cleanup;
		}
		pids[(*npids)++] = (uint32_t)pid;
	}
	if (!*npids)
		err = bad("invalid pid list '%s'", arg);
cleanup:
	free(copy);
	return err;
}

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/*
 * -o's name and -f: without -f, a known extension gives the format; with -f, a known extension
 * of another format is a usage error (a file named .svg holding gzip'd pprof opens nowhere).
 * *inferred: the extension the format was taken from, else NULL.
 */
static int format_from_name(enum out_format *format, bool given, const char *path,
			    const char **inferred)
{
	const struct format_ext *e;

	*inferred = NULL;
	if (!path || !strcmp(path, "-"))
		return 0;
	e = format__ext(path);
	if (!e)
		return 0;
	if (!given) {
		*format = e->format;
		*inferred = e->ext;
		return 0;
	}
	if (*format == e->format || (e->also & (1u << *format)))
		return 0;
	return bad("-o %s: a %s name holds %s, not -f %s: drop -f or change the name", path, e->ext,
		   format__name(e->format), format__name(*format));
}

/* The sample types each mode's profile has (profile/<mode>_profile.c): --svg-type is checked
 * before the run rather than after it. */
static const struct {
	unsigned mode;
	const char *name; /* as cli__output_path inserts it */
	const char *types[6];
} mode_types[] = {
	{MODE_HEAP,
	 "heap",
	 {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "peak_objects",
	  "peak_space"}},
	{MODE_CPU, "cpu", {"samples", "cpu"}},
	{MODE_OFFCPU, "offcpu", {"events", "offcpu"}},
	{MODE_CALLS, "calls", {"calls", "wall", "busy", "idle"}},
};

static bool svg_type_known(unsigned modes, const char *type)
{
	for (size_t i = 0; i < sizeof(mode_types) / sizeof(mode_types[0]); i++)
		for (size_t j = 0; (modes & mode_types[i].mode) && j < 6; j++)
			if (mode_types[i].types[j] && !strcmp(mode_types[i].types[j], type))
				return true;
	return false;
}

/* --heap: the leak rules, built in and --leak-suppressions' (read now: a bad file is bad usage). */
static int leak_rules(struct env *e)
{
	char why[128];
	int err;

	if (!(e->modes & MODE_HEAP))
		return 0;
	err = suppress__new(&e->suppress);
	if (err)
		return err;
	if (e->leak_suppressions &&
	    suppress__load(e->suppress, e->leak_suppressions, why, sizeof(why))) {
		char path[128];

		suppress__free(e->suppress);
		e->suppress = NULL;
		return bad("--leak-suppressions %s: %s",
			   escape__str(path, sizeof(path), e->leak_suppressions), why);
	}
	return 0;
}

int cli__parse(struct env *out, int argc, char **argv)
{
	struct env env = {
		.cpu_hz = 99,
		.output = NULL,
		.format = FMT_PPROF,
		.top = 10,
		.hold_rate = PROF_HOLD_RATE_DEFAULT,
		.backlog_bytes = PROF_BACKLOG_BYTES,
	};
	bool output_given = false, sample_given = false, hold_rate_given = false;
	bool format_given = false;
	const char *inferred; /* -o's extension the format comes from, or NULL */
	char fmt_opt[64];
	const char *push_opt = NULL; /* a --push-* option given, for its error */
	unsigned ntargets;
	uint64_t v;
	int opt, err;
	char *end;

	optind = 0; /* 0, not 1: glibc then also forgets the previous scan's ordering (+) */
	opterr = 0;
	/* '+': stop at the first non-option so `-- CMD -x` keeps CMD's own options. */
	while ((opt = getopt_long(argc, argv, "+p:o:f:d:avqhz:Z:", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			err = parse_pids(env.pids, &env.npids, optarg);
			if (err)
				return err;
			break;
		case OPT_HEAP:
			env.modes |= MODE_HEAP;
			break;
		case OPT_CALLS:
			env.modes |= MODE_CALLS;
			break;
		case OPT_OFFCPU:
			env.modes |= MODE_OFFCPU;
			break;
		case OPT_CPU:
			env.modes |= MODE_CPU;
			if (optarg) {
				if (parse_u64(optarg, 100000, &v) || v == 0)
					return bad("invalid --cpu frequency '%s' (1..100000 Hz)",
						   optarg);
				env.cpu_hz = (unsigned)v;
			}
			break;
		case 'o':
			if (!*optarg)
				return bad("empty output path%s", "");
			env.output = optarg;
			output_given = true;
			break;
		case 'f':
			if (format__parse(&env.format, optarg))
				return bad("unknown format '%s' (pprof, folded, text, svg, chrome, "
					   "perfetto, firefox, codetracer, memtrace)",
					   optarg);
			format_given = true;
			break;
		case 'd':
			errno = 0;
			env.duration = strtod(optarg, &end);
			/* Bounded so that the nanosecond deadline fits an int64_t (a cast of
			 * 1e300 is undefined); NaN fails the comparisons too. */
			if (errno || *end || end == optarg || !(env.duration > 0) ||
			    !(env.duration <= CLI_MAX_DURATION))
				return bad("invalid duration '%s' (seconds, > 0 and at most "
					   "31536000, one year)",
					   optarg);
			break;
		case OPT_TOP:
			if (parse_u64(optarg, 100000, &v))
				return bad("invalid --top '%s'", optarg);
			env.top = (unsigned)v;
			break;
		case OPT_SAMPLE_BYTES:
			if (parse_u64(optarg, 1ULL << 40, &v))
				return bad("invalid --sample-bytes '%s'", optarg);
			env.sample_bytes = v;
			sample_given = true;
			break;
		case 'z':
		case 'Z':
			if (parse_u64(optarg, 1ULL << 48, &v) || (opt == 'Z' && v == 0))
				return bad("invalid --%s '%s' (bytes, %d to 2^48)",
					   opt == 'z' ? "min-size" : "max-size", optarg,
					   opt == 'Z');
			if (opt == 'z')
				env.min_size = v;
			else
				env.max_size = v;
			break;
		case OPT_METRICS: {
			struct sockaddr_storage sa;
			socklen_t len;

			if (metrics__parse_addr(optarg, &sa, &len))
				return bad(
					"invalid --metrics '%s' (PORT, ADDR:PORT or [ADDR6]:PORT; "
					"ADDR numeric)",
					optarg);
			env.metrics = optarg;
			break;
		}
		case OPT_GROWTH_INTERVALS:
			if (parse_u64(optarg, GROWTH_INTERVALS_MAX, &v) || !v)
				return bad("invalid --growth-intervals '%s' (1 to 60)", optarg);
			env.growth_intervals = (unsigned)v;
			break;
		case OPT_FAIL_ON_LEAK:
			if (parse_u64(optarg, 1ULL << 48, &v))
				return bad("invalid --fail-on-leak '%s' (bytes, 0 to 2^48)",
					   optarg);
			env.fail_on_leak = v;
			env.leak_gate = true;
			break;
		case OPT_LEAK_SUPPRESSIONS:
			if (!*optarg)
				return bad("empty --leak-suppressions path%s", "");
			env.leak_suppressions = optarg;
			break;
		case OPT_MIN_AGE: {
			double a;

			errno = 0;
			a = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(a > 0) || !(a <= CLI_MAX_DURATION))
				return bad("invalid --min-age '%s' (seconds, > 0 and at most "
					   "31536000)",
					   optarg);
			env.min_age_ns = (uint64_t)(a * 1e9);
			break;
		}
		case OPT_CGROUP:
			if (!*optarg)
				return bad("empty --cgroup path%s", "");
			env.cgroup = optarg;
			break;
		case OPT_CONTAINER:
			if (!*optarg)
				return bad("empty --container id%s", "");
			env.container = optarg;
			break;
		case 'a':
			env.all = true;
			break;
		case OPT_INTERVAL:
			errno = 0;
			env.interval = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(env.interval >= 1) ||
			    !(env.interval <= 86400))
				return bad("invalid --interval '%s' (seconds, 1 to 86400)", optarg);
			break;
		case OPT_OUTPUT_DIR:
			if (!*optarg)
				return bad("empty --output-dir%s", "");
			env.output_dir = optarg;
			break;
		case OPT_HOLD_EXITS:
			env.hold_exits = 1;
			break;
		case OPT_NO_HOLD_EXITS:
			env.hold_exits = -1;
			break;
		case OPT_NO_PRELOAD:
			env.no_preload = true;
			break;
		case OPT_HOLD_RATE:
			if (parse_u64(optarg, 1000000, &v))
				return bad("invalid --hold-rate '%s'", optarg);
			env.hold_rate = (uint32_t)v;
			hold_rate_given = true;
			break;
		case OPT_RETAIN:
			if (parse_u64(optarg, 1000000, &v))
				return bad("invalid --retain '%s'", optarg);
			env.retain = (unsigned)v;
			break;
		case OPT_LIVE:
			env.live = true;
			break;
		case OPT_PUSH:
			/* Before anything echoes the URL: the command line is in every profile. */
			if (push__url_has_credentials(optarg))
				return bad("--push URL holds credentials (user:password@), which "
					   "every profile's command: comment and ps would show; "
					   "%s",
					   PUSH_CREDENTIALS_HINT);
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))
				return bad("invalid --push URL '%s' (http:// or https://)", optarg);
			env.push_url = optarg;
			break;
		case OPT_PUSH_PROTOCOL:
			if (push__parse_protocol(&env.push_protocol, optarg))
				return bad("invalid --push-protocol '%s' (pyroscope, "
					   "pyroscope-ingest, "
					   "parca or otlp)",
					   optarg);
			push_opt = "--push-protocol";
			break;
		case OPT_PUSH_AUTH_FILE:
			env.push_auth_file = optarg;
			push_opt = "--push-auth-file";
			break;
		case OPT_SVG_TYPE:
			env.svg_type = optarg;
			break;
		case OPT_ICICLE:
			env.icicle = true;
			break;
		case OPT_UNWIND:
			if (!strcmp(optarg, "auto"))
				env.unwind = UNWIND_AUTO;
			else if (!strcmp(optarg, "dwarf"))
				env.unwind = UNWIND_DWARF;
			else if (!strcmp(optarg, "fp"))
				env.unwind = UNWIND_FP;
			else
				return bad("invalid --unwind '%s' (auto, dwarf or fp)", optarg);
			break;
		case OPT_PYTHON_FRAMES:
			err = parse_python_frames(&env.python_frames, optarg);
			if (err)
				return err;
			break;
		case OPT_UNWIND_MEMORY:
			/* Up to 8192 tables of 32 MiB: 256 GiB is more than the table map holds. */
			if (parse_u64(optarg, 256 << 10, &v) || v == 0)
				return bad("invalid --unwind-memory '%s' (MiB, 1 to 262144)",
					   optarg);
			env.unwind_memory = v << 20;
			break;
		case OPT_RING_BUFFER:
			if (parse_u64(optarg, PROF_RINGBUF_MAX_MIB, &v) || v == 0 || (v & (v - 1)))
				return bad("invalid --ring-buffer '%s' (MiB: 1, 2, 4 ... 1024)",
					   optarg);
			env.ring_bytes = (uint32_t)(v << 20);
			break;
		case OPT_BACKLOG:
			if (parse_u64(optarg, PROF_BACKLOG_MAX_MIB, &v))
				return bad("invalid --backlog '%s' (MiB, 0 to %u)", optarg,
					   PROF_BACKLOG_MAX_MIB);
			env.backlog_bytes = v << 20;
			break;
		case OPT_UNWIND_MAX_ROWS:
			/* A table in the kernel holds 8 Mi rows (include/prof_unwind.h). */
			if (parse_u64(optarg, PROF_UNWIND_TABLE_ROWS_MAX, &v) || v == 0)
				return bad("invalid --unwind-max-rows '%s' (1 to %llu)", optarg,
					   (unsigned long long)PROF_UNWIND_TABLE_ROWS_MAX);
			env.unwind_max_rows = (uint32_t)v;
			break;
		case OPT_UNWIND_MAX_CFI:
			if (parse_u64(optarg, 64 << 10, &v) || v == 0)
				return bad("invalid --unwind-max-cfi '%s' (MiB, 1 to 65536)",
					   optarg);
			env.unwind_max_cfi = v << 20;
			break;
		case OPT_NO_DEBUGINFOD:
			env.no_debuginfod = true;
			break;
		case OPT_NO_INLINE:
			env.no_inline = true;
			break;
		case OPT_DEBUGINFOD_TIMEOUT:
			if (parse_u64(optarg, 3600, &v) || v == 0)
				return bad("invalid --debuginfod-timeout '%s' (seconds, 1 to 3600)",
					   optarg);
			env.debuginfod_timeout = (unsigned)v;
			break;
		case 'v':
			if (env.verbosity >= 0)
				env.verbosity++;
			break;
		case 'q':
			env.verbosity = -1;
			break;
		case 'h':
			fputs(cli_usage, stdout);
			return CLI_EXIT;
		case OPT_VERSION:
			printf("bpftrace-prof %s\n", PROF_VERSION);
			return CLI_EXIT;
		case '?':
		default:
			if (optopt && optopt < 256)
				return bad("bad or incomplete option '-%c'", optopt);
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		/* getopt stops at "--" and swallows it; anything left must follow a "--". */
		if (strcmp(argv[optind - 1], "--") != 0)
			return bad("unexpected argument '%s': put the command after --",
				   argv[optind]);
		env.cmd = &argv[optind];
	} else if (optind > 1 && !strcmp(argv[optind - 1], "--")) {
		return bad("no command after '--'%s", "");
	}
	ntargets = !!env.npids + !!env.cmd + !!env.cgroup + !!env.container + env.all;
	if (ntargets != 1)
		return bad(
			ntargets ? "give one target: -p, -- CMD, --cgroup, --container or -a%s"
				 : "no target: give -p PID, -- CMD, --cgroup PATH, --container ID "
				   "or -a%s",
			"");
	env.wide = env.cgroup || env.container || env.all;
	if ((env.hold_exits || hold_rate_given) && !env.wide)
		return bad("--hold-exits / --no-hold-exits / --hold-rate go with --cgroup, "
			   "--container or -a%s",
			   "");
	/* Held exits symbolize short-lived processes; host-wide, they would touch every
	 * process's exit: asked for, not by default. */
	if (!env.hold_exits)
		env.hold_exits = env.all ? -1 : 1;
	if (!env.modes)
		env.modes = env.wide ? MODE_CPU : MODE_HEAP;
	if ((env.min_age_ns || env.min_size || env.max_size) && !(env.modes & MODE_HEAP))
		return bad("--min-age, --min-size and --max-size go with --heap%s", "");
	if (env.max_size && env.min_size > env.max_size)
		return bad("--min-size is over --max-size: no block could be kept%s", "");
	if ((env.leak_gate || env.leak_suppressions) && (!env.cmd || !(env.modes & MODE_HEAP)))
		return bad("--fail-on-leak and --leak-suppressions go with --heap -- CMD%s", "");
	if (env.no_preload && !env.cmd)
		return bad("--no-preload goes with -- CMD (what we start, we can preload)%s", "");
	/* Every allocation of a whole host costs too much: sampled unless asked otherwise. */
	if (env.wide && !sample_given)
		env.sample_bytes = CLI_WIDE_SAMPLE_BYTES;
	err = format_from_name(&env.format, format_given, env.output, &inferred);
	if (err)
		return err;
	/* How the format was chosen, for the errors below. */
	if (inferred)
		snprintf(fmt_opt, sizeof(fmt_opt), "-o *%s (-f %s)", inferred,
			 format__name(env.format));
	else
		snprintf(fmt_opt, sizeof(fmt_opt), "-f %s", format__name(env.format));
	/* memtrace traces sampled allocations (its readers scale them back). */
	if (env.format == FMT_MEMTRACE && env.modes != MODE_HEAP)
		return bad("%s records --heap only", fmt_opt);
	if (env.format == FMT_MEMTRACE && !sample_given)
		env.sample_bytes = CLI_WIDE_SAMPLE_BYTES;
	if (env.live && !env.interval)
		env.interval = CLI_LIVE_INTERVAL;
	/* --live alone shows the intervals without keeping them: -o gets the whole run. */
	if (env.interval && !env.output_dir && !env.live)
		return bad(
			"--interval needs --output-dir DIR (where each interval's profiles go)%s",
			"");
	if (env.output_dir && !env.interval)
		return bad("--output-dir needs --interval SECONDS%s", "");
	if (env.growth_intervals && (!env.interval || !(env.modes & MODE_HEAP)))
		return bad("--growth-intervals goes with --heap and --interval (--output-dir or "
			   "--live)%s",
			   "");
	if (env.interval && (env.modes & MODE_HEAP) && !env.growth_intervals)
		env.growth_intervals = GROWTH_INTERVALS_DEFAULT;
	if (env.retain && !env.interval)
		return bad("--retain needs --interval SECONDS%s", "");
	if (env.push_url && !env.interval)
		return bad("--push needs --interval SECONDS (and --output-dir DIR, its spool)%s",
			   "");
	if (push_opt && !env.push_url && env.push_protocol == PUSH_OTLP)
		env.push_url = push__otlp_env_url();
	if (push_opt && !env.push_url)
		return bad("%s needs --push URL", push_opt);
	if (env.push_url && !env.output_dir)
		return bad("--push needs --output-dir DIR (its spool)%s", "");
	if (env.output_dir && env.format != FMT_PPROF)
		return bad("--interval writes pprof only, not %s", fmt_opt);
	/* Event traces record rather than aggregate: one file, written as it runs.  chrome and
	 * perfetto take every mode; -f firefox --calls with --heap (allocations charged to the
	 * calls open then) and --offcpu (off-CPU frames), or --cpu alone (its own samples);
	 * codetracer --calls alone. */
	if (env.format == FMT_FIREFOX && env.modes != MODE_CPU &&
	    (!(env.modes & MODE_CALLS) || (env.modes & MODE_CPU)))
		return bad("%s records --calls (with --heap, --offcpu) or --cpu alone", fmt_opt);
	if (env.format == FMT_CODETRACER && env.modes != MODE_CALLS)
		return bad("-f %s records --calls only (give --calls alone)", "codetracer");
	if (format__event_trace(env.format) && env.live)
		return bad("--live shows profiles, not event traces (%s)", fmt_opt);
	if (env.format == FMT_CODETRACER && output_given && !strcmp(env.output, "-"))
		return bad("-f codetracer writes a directory: give -o DIR, not -%s", "");
	if ((env.svg_type || env.icicle) && env.format != FMT_SVG)
		return bad("%s goes with -f svg", env.svg_type ? "--svg-type" : "--icicle");
	if (env.svg_type && !svg_type_known(env.modes, env.svg_type))
		return bad("unknown --svg-type '%s' for the modes given", env.svg_type);
	if (!output_given)
		env.output = env.format == FMT_PPROF	    ? "bpftrace-prof.pb.gz"
			     : env.format == FMT_FOLDED	    ? "bpftrace-prof.folded"
			     : env.format == FMT_MEMTRACE   ? "bpftrace-prof.memtrace"
			     : env.format == FMT_CHROME	    ? "bpftrace-prof.json"
			     : env.format == FMT_PERFETTO   ? "bpftrace-prof.pftrace"
			     : env.format == FMT_FIREFOX    ? "bpftrace-prof.profile.json.gz"
			     : env.format == FMT_CODETRACER ? "bpftrace-prof-trace"
			     : env.format == FMT_SVG	    ? "bpftrace-prof.svg"
							    : "bpftrace-prof.txt";
	if (!strcmp(env.output, "-") && __builtin_popcount(env.modes) > 1)
		return bad("-o - takes one mode; give a file name with several modes%s", "");
	if (env.live && !strcmp(env.output, "-"))
		return bad("--live draws on stdout: give -o a file name%s", "");
	if (env.live && !isatty(STDOUT_FILENO))
		return bad("--live needs a terminal on stdout%s", "");
	/* Last: what it allocates is the caller's to free (cli__free) only on success. */
	err = leak_rules(&env);
	if (err)
		return err;
	env.cmdline = join_args(argc, argv);
	if (!env.cmdline) {
		suppress__free(env.suppress);
		return -ENOMEM;
	}
	*out = env;
	return CLI_RUN;
}

void cli__free(struct env *env)
{
	free(env->cmdline);
	env->cmdline = NULL;
	suppress__free(env->suppress);
	env->suppress = NULL;
}

const char *cli__output_path(const struct env *env, const char *mode, char *buf, unsigned len)
{
	const char *path = env->output, *base, *dot;
	size_t stem;

	if (__builtin_popcount(env->modes) <= 1 || !strcmp(path, "-")) {
		snprintf(buf, len, "%s", path);
		return buf;
	}
	/* Insert the mode before the extension: a.pb.gz -> a.heap.pb.gz, a -> a.heap. */
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strchr(base + (*base == '.'), '.');
	stem = dot ? (size_t)(dot - path) : strlen(path);
	snprintf(buf, len, "%.*s.%s%s", (int)stem, path, mode, dot ? dot : "");
	return buf;
}

/* One line: which file cannot be written, why, and what to do. */
static void say_unwritable(const char *path, const char *given, int err)
{
	const char *slash = strrchr(path, '/');
	char what[PATH_MAX + 64], dir[PATH_MAX];

	/* With several modes the name is -o's with the mode inserted: both are said. */
	if (strcmp(path, given))
		snprintf(what, sizeof(what), "%s (-o %s)", path, given);
	else
		snprintf(what, sizeof(what), "%s", path);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (err == -ENOENT)
		pr_err("cannot write %s: %s does not exist: create it or give -o another path\n",
		       what, dir[0] ? dir : "/");
	else if (err == -ENOTDIR)
		pr_err("cannot write %s: %s is not a directory: give -o another path\n", what,
		       dir[0] ? dir : "/");
	else if (err == -EISDIR)
		pr_err("cannot write %s: it is a directory: give -o %s\n", what,
		       strcmp(path, given) ? "another name" : "a file name inside it");
	else if (err == -ELOOP)
		pr_err("cannot write %s: it is a symbolic link (refusing to follow): give -o the "
		       "file it points to\n",
		       what);
	else if (err == -ENOTSUP)
		pr_err("cannot write %s: it is a disk or a socket, not a file, a pipe or a "
		       "character device: give -o another path\n",
		       what);
	else
		pr_err("cannot write %s: %s: give -o a path you can write\n", what, strerror(-err));
}

int cli__check_outputs(const struct env *env)
{
	char path[PATH_MAX];
	int err;

	/* --output-dir gets the profiles (made and checked at the start); codetracer's -o is a
	 * folder (checked when it is opened, before attaching). */
	if (env->output_dir || env->format == FMT_CODETRACER)
		return 0;
	/* Event traces and memtrace: one file, whatever the modes. */
	if (format__event_trace(env->format) || env->format == FMT_MEMTRACE) {
		err = output__check(env->output);
		if (err)
			say_unwritable(env->output, env->output, err);
		return err;
	}
	for (size_t i = 0; i < sizeof(mode_types) / sizeof(mode_types[0]); i++) {
		if (!(env->modes & mode_types[i].mode))
			continue;
		cli__output_path(env, mode_types[i].name, path, sizeof(path));
		err = output__check(path);
		if (err) {
			say_unwritable(path, env->output, err);
			return err;
		}
	}
	return 0;
}

static const struct option report_opts[] = {
	{"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
	{"at", required_argument, NULL, OPT_AT},  {"top", required_argument, NULL, OPT_TOP},
	{"verbose", no_argument, NULL, 'v'},	  {"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},	  {},
};

/*
 * The options `report` and `dump` share (-v, -q, -h) and the error for any other: 0 handled,
 * CLI_EXIT after --help, -EINVAL after the message.
 */
static int sub_option(const char *cmd, int opt, int *verbosity, char **argv)
{
	char what[64];

	switch (opt) {
	case 'v':
		if (*verbosity >= 0)
			(*verbosity)++;
		return 0;
	case 'q':
		*verbosity = -1;
		return 0;
	case 'h':
		fputs(strcmp(cmd, "dump") ? cli_report_usage : cli_dump_usage, stdout);
		return CLI_EXIT;
	}
	if (optopt && optopt < 256) {
		snprintf(what, sizeof(what), "%s: bad or incomplete option '-%c'", cmd, optopt);
		return bad("%s", what);
	}
	snprintf(what, sizeof(what), "%s: unknown option '%%s'", cmd);
	return bad(what, argv[optind - 1]);
}

static const struct option dump_opts[] = {
	{"pid", required_argument, NULL, 'p'},
	{"json", no_argument, NULL, OPT_JSON},
	{"output", required_argument, NULL, 'o'},
	{"python-frames", required_argument, NULL, OPT_PYTHON_FRAMES},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{},
};

int cli__parse_dump(struct dump_env *out, int argc, char **argv)
{
	struct dump_env env = {.output = "-"};
	int opt, err;

	optind = 0; /* 0, not 1: glibc then also forgets the previous scan's ordering (+) */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "p:o:vqh", dump_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			err = parse_pids(env.pids, &env.npids, optarg);
			if (err)
				return err;
			break;
		case OPT_JSON:
			env.json = true;
			break;
		case OPT_PYTHON_FRAMES:
			err = parse_python_frames(&env.python_frames, optarg);
			if (err)
				return err;
			break;
		case 'o':
			if (!*optarg)
				return bad("empty output path%s", "");
			env.output = optarg;
			break;
		default:
			err = sub_option("dump", opt, &env.verbosity, argv);
			if (err)
				return err;
			break;
		}
	}
	if (optind != argc)
		return bad("dump: unexpected argument '%s' (dump takes -p PID)", argv[optind]);
	if (!env.npids)
		return bad("dump: no process given%s (-p PID[,PID...])", "");
	/* As -o chooses the profiles' format: a .json file gets JSON, never text. */
	if (strlen(env.output) > 5 && !strcmp(env.output + strlen(env.output) - 5, ".json"))
		env.json = true;
	*out = env;
	return CLI_RUN;
}

int cli__parse_report(struct report_env *out, int argc, char **argv)
{
	struct report_env env = {.format = FMT_PPROF, .top = 10};
	bool format_given = false;
	const char *inferred;
	uint64_t v;
	char *end;
	int opt, err;

	optind = 0; /* 0, not 1: glibc then also forgets the previous scan's ordering (+) */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "f:o:vqh", report_opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (!strcmp(optarg, "pprof"))
				env.format = FMT_PPROF;
			else if (!strcmp(optarg, "folded"))
				env.format = FMT_FOLDED;
			else if (!strcmp(optarg, "text"))
				env.format = FMT_TEXT;
			else
				return bad("report: unknown format '%s' (pprof, folded, text)",
					   optarg);
			format_given = true;
			break;
		case 'o':
			if (!*optarg)
				return bad("empty output path%s", "");
			env.output = optarg;
			break;
		case OPT_AT:
			errno = 0;
			env.at_s = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(env.at_s >= 0) ||
			    !(env.at_s <= CLI_MAX_DURATION))
				return bad("invalid --at '%s' (seconds after the trace's start, "
					   ">= 0)",
					   optarg);
			env.at = true;
			break;
		case OPT_TOP:
			if (parse_u64(optarg, 100000, &v))
				return bad("invalid --top '%s'", optarg);
			env.top = (unsigned)v;
			break;
		default:
			err = sub_option("report", opt, &env.verbosity, argv);
			if (err)
				return err;
			break;
		}
	}
	if (optind != argc - 1)
		return bad(optind >= argc ? "report: no trace file given%s"
					  : "report: one trace file only ('%s')",
			   optind >= argc ? "" : argv[optind + 1 < argc ? optind + 1 : optind]);
	env.file = argv[optind];
	err = format_from_name(&env.format, format_given, env.output, &inferred);
	if (err)
		return err;
	if (env.format != FMT_PPROF && env.format != FMT_FOLDED && env.format != FMT_TEXT)
		return bad("report: -o %s is named for -f %s; report writes pprof, folded or text",
			   env.output, format__name(env.format));
	if (!env.output)
		env.output = env.format == FMT_PPROF ? "bpftrace-prof.pb.gz" : "-";
	*out = env;
	return CLI_RUN;
}
