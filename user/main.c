// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpftrace-prof: parse the command line, check privileges, run one session. */
#include <errno.h>
#include <unistd.h>

#include "cli.h"
#include "util/log.h"
#include "session.h"

int main(int argc, char **argv)
{
	struct env env;
	int ret;

	ret = cli__parse(&env, argc, argv);
	if (ret == CLI_EXIT)
		return 0;
	if (ret < 0)
		return 2;
	log__set_verbosity(env.verbosity);
	log__hook_libbpf();
	if (geteuid() != 0)
		pr_warn("not running as root: loading BPF needs root or CAP_BPF+CAP_PERFMON\n");
	ret = session__run(&env);
	cli__free(&env);
	return ret;
}
