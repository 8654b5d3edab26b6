/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Thread and process names for the comm/process labels, read at first sight of a tid and
 * replaced by the final name the exit tracepoint reports.  An id seen again after its exit
 * belongs to a new thread or process (pid reuse): its name is read again. */
#ifndef PROF_PROCINFO_H
#define PROF_PROCINFO_H

#include <stdbool.h>
#include <stdint.h>

struct procinfo;

int procinfo__new(struct procinfo **out, const char *proc_root);
void procinfo__free(struct procinfo *pi);
/* First sight of a thread: read its name (and its process's) while it lives; again if the id
 * was last seen exiting.  Cheap if known.  0 or -ENOMEM. */
int procinfo__note(struct procinfo *pi, uint32_t pid, uint32_t tid);
/* Authoritative name from the kernel (exec).  0 or -ENOMEM. */
int procinfo__set_comm(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm);
/* A thread's final name at its exit; group_dead: the last thread of its process.  Kept for the
 * report until the id is noted again.  0 or -ENOMEM. */
int procinfo__exited(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm,
		     bool group_dead);
/* Continuous mode: pid is gone and its interval written: its names go. */
void procinfo__forget(struct procinfo *pi, uint32_t pid);
/* Container and host modes: also read each process's labels (ns_pid, container id, cgroup) at
 * its first sight (and again after its exit, for a pid reused).  0 or -errno. */
int procinfo__enable_labels(struct procinfo *pi);
struct procinfo_labels {
	uint32_t ns_pid;	  /* 0: unknown */
	const char *container_id; /* "" when none */
	const char *cgroup;	  /* "" when unknown */
};
/* pid's labels, NULL when not read (labels off, or the process was gone). */
const struct procinfo_labels *procinfo__labels(struct procinfo *pi, uint32_t pid);
const char *procinfo__comm(struct procinfo *pi, uint32_t pid, uint32_t tid);
const char *procinfo__process(struct procinfo *pi, uint32_t pid);
/*
 * The CPU time thread tid of pid has had (ns, the scheduler's sum_exec_runtime, from
 * /proc/PID/task/TID/schedstat).  -ENOENT when it is gone, -EINVAL when unreadable.
 */
int procinfo__run_ns(struct procinfo *pi, uint32_t pid, uint32_t tid, uint64_t *out);
/* pid's executable (the path its mappings show), NULL when it could not be read. */
/* The process (thread group) a thread id belongs to: 0, -ESRCH or -errno. */
int procinfo__tgid(uint32_t *out, uint32_t pid);
/* pid is a kernel thread (PF_KTHREAD in /proc/PID/stat): 1, 0, -ESRCH or -errno. */
int procinfo__kthread(uint32_t pid);
const char *procinfo__exe(struct procinfo *pi, uint32_t pid);

/* Where the kernel's frame-pointer walk of a user stack stops (kernel.perf_event_max_stack;
 * --unwind fp), 0 when unreadable. */
uint32_t procinfo__perf_max_stack(void);

#endif /* PROF_PROCINFO_H */
