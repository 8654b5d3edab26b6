/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command line (DESIGN.md §4) -> struct env.  The only place that knows the option syntax. */
#ifndef PROF_CLI_H
#define PROF_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "agg/collect.h"   /* enum prof_mode_bit */
#include "cmd/dump.h"	   /* struct dump_env */
#include "cmd/report.h"	   /* struct report_env */
#include "export/format.h" /* enum out_format */
#include "export/push.h"   /* enum push_protocol */
#include "sym/stackres.h"  /* enum stackres_py_frames */

#define CLI_MAX_PIDS	      64 /* as many as dump -p takes (DUMP_MAX_PIDS) */
/* -d upper bound in seconds: one year (the deadline is kept in int64_t nanoseconds). */
#define CLI_MAX_DURATION      31536000.0
/* --sample-bytes for --cgroup, --container and -a when not given. */
#define CLI_WIDE_SAMPLE_BYTES 524288
/* --interval with --live when not given: seconds between screens. */
#define CLI_LIVE_INTERVAL     2.0

/* --unwind: how user stacks are walked (include/prof_unwind.h). */
enum unwind_mode {
	UNWIND_AUTO,  /* unwind tables where a file has one, frame pointers elsewhere */
	UNWIND_DWARF, /* unwind tables only: a frame without one ends the stack (counted) */
	UNWIND_FP,    /* frame pointers only (bpf_get_stack) */
};

struct suppress;

struct env {
	unsigned modes;	 /* enum prof_mode_bit */
	unsigned cpu_hz; /* --cpu[=HZ] */
	uint32_t pids[CLI_MAX_PIDS];
	unsigned npids;
	char **cmd;		/* -- CMD ARG…, NULL-terminated (points into argv) */
	const char *cgroup;	/* --cgroup PATH */
	const char *container;	/* --container ID */
	bool all;		/* -a */
	bool wide;		/* one of the three above: processes come and go */
	double interval;	/* --interval seconds; 0 = one profile at the end */
	const char *output_dir; /* --output-dir */
	unsigned retain;	/* --retain N; 0 = keep every profile */
	int hold_exits;		/* --hold-exits 1, --no-hold-exits -1; resolved to 1 or -1 */
	uint32_t hold_rate;	/* --hold-rate: holds per cgroup and second, 0 no limit */
	bool live;		/* --live: a top view on the terminal (stdout) */
	const char *push_url;	/* --push URL */
	enum push_protocol push_protocol;
	const char *push_auth_file; /* --push-auth-file */
	const char *output;	    /* -o; "-" = stdout */
	enum out_format format;
	const char *svg_type; /* --svg-type: -f svg's sample type; NULL: the profile's default */
	bool icicle;	      /* --icicle: -f svg with the root at the top */
	double duration;      /* -d seconds; 0 = until exit or signal */
	unsigned top;	      /* --top N */
	uint64_t sample_bytes;
	uint64_t min_age_ns;	     /* --min-age: in use counts blocks at least this old; 0: all */
	unsigned growth_intervals;   /* --growth-intervals (continuous --heap; else 0) */
	const char *metrics;	     /* --metrics [ADDR:]PORT; NULL: none */
	uint64_t min_size, max_size; /* -z / -Z: blocks outside are left out (max 0: none) */
	uint64_t fail_on_leak;	     /* --fail-on-leak BYTES (with leak_gate) */
	bool leak_gate;
	const char *leak_suppressions; /* --leak-suppressions FILE */
	struct suppress *suppress;     /* --heap: the leak rules (cli__free frees them) */
	bool no_preload;	       /* --no-preload: sampled -- CMD through allocator uprobes */
	enum unwind_mode unwind;
	uint64_t unwind_memory;	     /* --unwind-memory in bytes; 0: the unwinder's default */
	uint32_t ring_bytes;	     /* --ring-buffer in bytes; 0: the loader's default */
	uint64_t backlog_bytes;	     /* --backlog in bytes (default PROF_BACKLOG_BYTES); 0: none */
	uint32_t unwind_max_rows;    /* --unwind-max-rows; 0: the table builder's default */
	uint64_t unwind_max_cfi;     /* --unwind-max-cfi in bytes; 0: the table builder's default */
	bool no_debuginfod;	     /* --no-debuginfod */
	bool no_inline;		     /* --no-inline */
	unsigned debuginfod_timeout; /* --debuginfod-timeout seconds; 0: the fetcher's default */
	enum stackres_py_frames python_frames; /* --python-frames */
	int verbosity;			       /* -v count, -1 for -q */
	char *cmdline;			       /* our own argv joined, for the profile's comments */
};

enum cli_result {
	CLI_RUN = 0,  /* proceed */
	CLI_EXIT = 1, /* --help / --version printed: exit 0 */
};

/* --help texts (user/cli_usage.c): the run's, `report's and `dump's. */
extern const char cli_usage[], cli_report_usage[], cli_dump_usage[];

/* Fills *out.  Returns CLI_RUN, CLI_EXIT, or -EINVAL after printing one line on stderr. */
int cli__parse(struct env *out, int argc, char **argv);
void cli__free(struct env *env);
/* The `report` subcommand: argv[0] is "report".  The same results as cli__parse. */
int cli__parse_report(struct report_env *out, int argc, char **argv);
/* `dump`'s arguments (argv[0] is "dump"): the same contract. */
int cli__parse_dump(struct dump_env *out, int argc, char **argv);
/* Output path for one mode: the path itself with one mode, "x.pb.gz" -> "x.<mode>.pb.gz" with
 * several.  Writes into buf. */
const char *cli__output_path(const struct env *env, const char *mode, char *buf, unsigned len);
/* Every file -o names (one per mode) can be written, checked before the run rather than
 * found out at its end: 0, or -errno after one line on stderr (exit status 2). */
int cli__check_outputs(const struct env *env);

#endif /* PROF_CLI_H */
