// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpftrace-prof: parse the command line, check privileges, run one session. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd/dump.h"
#include "cmd/report.h"
#include "util/fdlimit.h"
#include "util/log.h"
#include "session.h"

/* Commands that load BPF: libbpf's messages through ours, a warning when not root. */
static void bpf_logging(int verbosity)
{
	log__set_verbosity(verbosity);
	log__hook_libbpf();
	if (geteuid() != 0)
		pr_warn("not running as root: loading BPF needs root or CAP_BPF+CAP_PERFMON\n");
}

/* `bpftrace-prof report FILE …`: no BPF, no privileges. */
static int report_main(int argc, char **argv)
{
	struct report_env env;
	int ret;

	ret = cli__parse_report(&env, argc, argv);
	if (ret == CLI_EXIT)
		return 0;
	if (ret < 0)
		return 2;
	log__set_verbosity(env.verbosity);
	return report__run(&env);
}

/* `bpftrace-prof dump -p PID…`: every thread's stack, once. */
static int dump_main(int argc, char **argv)
{
	struct dump_env env;
	int ret;

	ret = cli__parse_dump(&env, argc, argv);
	if (ret == CLI_EXIT)
		return 0;
	if (ret < 0)
		return 2;
	bpf_logging(env.verbosity);
	return dump__run(&env);
}

int main(int argc, char **argv)
{
	struct env env;
	int ret;

	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "dump"))
		return dump_main(argc - 1, argv + 1);
	ret = cli__parse(&env, argc, argv);
	if (ret == CLI_EXIT)
		return 0;
	if (ret < 0)
		return 2;
	bpf_logging(env.verbosity);
	/* A bad -o found now, not after the run (which it would lose). */
	if (cli__check_outputs(&env)) {
		cli__free(&env);
		return 2;
	}
	fdlimit__raise();
	ret = session__run(&env);
	cli__free(&env);
	return ret;
}
