// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/py_watch.h"

#include <errno.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "attach/loader_priv.h"
#include "util/log.h"
#include "proc/safe_open.h"

static struct loader_attach_key key_of(uint32_t pid)
{
	return (struct loader_attach_key){.pid = pid, .kind = LOADER_ATTACH_PY_CODE};
}

int py_watch__attach(struct loader *l, const char *proc_root, uint32_t pid,
		     const struct unwinder_py_code *code)
{
	struct loader_attach_key key = key_of(pid);
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	struct bpf_program *prog;
	struct bpf_link *link;
	char path[64];
	int32_t *slot;
	bool created;
	int fd, err;

	if (!l || !l->heap || !code)
		return -EOPNOTSUPP;
	prog = l->heap->progs.heap_py_code_dealloc;
	if (bpf_program__fd(prog) < 0)
		return -EOPNOTSUPP; /* not loaded: sampled mode */
	py_watch__gone(l, pid);
	err = safe_open__mapped(&fd, proc_root, pid, &code->map, NULL);
	if (err)
		return err;
	/* The kernel looks the path up again: our verified fd, not the target's path. */
	safe_open__fd_path(path, sizeof(path), fd);
	link = bpf_program__attach_uprobe_opts(prog, (pid_t)pid, path, code->offset, &opts);
	err = link ? 0 : -errno;
	close(fd);
	if (err)
		return err;
	err = loader__attached(l, &key, &slot, &created);
	if (!err)
		err = loader__attached_link(l, &key, link);
	else
		bpf_link__destroy(link);
	if (err)
		return err;
	pr_debug("pid %u: CPython's code_dealloc probed (+0x%llx): code objects cached\n", pid,
		 (unsigned long long)code->offset);
	return 0;
}

void py_watch__gone(struct loader *l, uint32_t pid)
{
	struct loader_attach_key key = key_of(pid);

	if (l)
		loader__detach(l, &key);
}
