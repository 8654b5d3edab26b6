/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --calls (bpf/calls.bpf.c): interpreter function entry/return events from USDT probes, and
 * the names of those functions, sent once per name.
 *
 * Events carry a 64-bit name id instead of strings: a hash of the process, its exec
 * generation and the pointers the probe passed (class, function, file).  The first event of
 * an id sends a prof_call_name record with the strings; later ones cost one map lookup.
 */
#ifndef PROF_CALLS_H
#define PROF_CALLS_H

#include "prof_common.h"

/* Which interpreter fired the probe: decides how the name is spelled. */
enum prof_runtime {
	PROF_RT_NONE = 0,
	PROF_RT_PYTHON,
	PROF_RT_RUBY,
	PROF_RT_PHP,
	PROF_RT_JAVA,
	PROF_RT__COUNT,
};

/* Event flags. */
enum prof_call_flags {
	/* The runtime fires only returns (CPython 3.11): each return is one whole call, of a
	 * function whose callers are unknown.  Set through the USDT cookie. */
	PROF_CALL_F_RETURN_ONLY = 1 << 0,
	/* Events of this thread were dropped since its previous event: its stack is unknown. */
	PROF_CALL_F_LOST = 1 << 1,
	/* Entries carry the caller's frame (HotSpot): compiled Java code fires no return for
	 * frames an exception unwinds, and the frame tells which shadow frames are dead.  Set
	 * through the USDT cookie when the probe's function keeps a frame pointer. */
	PROF_CALL_F_FRAME = 1 << 2,
};

#define PROF_CALL_NAME_ENTRIES 65536 /* names already sent (LRU: evicted names are re-sent) */
#define PROF_CALL_LOST_ENTRIES 16384 /* threads with a dropped event not yet reported */
#define PROF_CALL_CLS_LEN      128
#define PROF_CALL_FN_LEN       128
#define PROF_CALL_FILE_LEN     256 /* Java: the method signature */
/* libbpf's USDT argument specs: one per distinct argument layout per attach (ruby alone has a
 * dozen call sites, times every -p pid). */
#define PROF_USDT_SPEC_ENTRIES 4096

/* read_str() bounds a length with `len &= size - 1`: only a power of two makes that a bound. */
#define PROF_IS_POW2(n) ((n) > 0 && ((n) & ((n)-1)) == 0)
_Static_assert(PROF_IS_POW2(PROF_CALL_CLS_LEN), "PROF_CALL_CLS_LEN must be a power of two");
_Static_assert(PROF_IS_POW2(PROF_CALL_FN_LEN), "PROF_CALL_FN_LEN must be a power of two");
_Static_assert(PROF_IS_POW2(PROF_CALL_FILE_LEN), "PROF_CALL_FILE_LEN must be a power of two");

/* PROF_REC_CALL_ENTRY / PROF_REC_CALL_RETURN */
struct prof_call_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 line;    /* source line the probe reported, 0 when none (Java) */
	__u64 ts;      /* bpf_ktime_get_ns() */
	__u64 name_id; /* see prof_call_name_id(); entry and return of one call carry the same */
	__u8 runtime;  /* enum prof_runtime */
	__u8 flags;    /* enum prof_call_flags */
	__u16 pad0;
	__u32 site;	/* PROF_CALL_F_FRAME: low bits of the return address into Java code */
	__u64 frame_sp; /* PROF_CALL_F_FRAME: the Java frame's stack pointer at the probe call */
	/*
	 * The thread's on-CPU clock at ts (ns it has run): busy time of a call is its difference
	 * between return and entry (bpf/calls.bpf.c calls_switch).
	 */
	__u64 busy;
};
_Static_assert(sizeof(struct prof_call_event) == 56, "prof_call_event layout");

/*
 * A target thread's on-CPU clock, kept by the sched_switch program of --calls: at its last
 * switch-out the scheduler's count of the ns it has run (exact there) and of its switches;
 * at its switch-in the time.  While it runs, clock = run_ns + (now - in_ns).
 */
struct prof_call_oncpu {
	__u64 run_ns; /* task->se.sum_exec_runtime at the last switch-out */
	__u64 in_ns;  /* bpf_ktime_get_ns() at the switch-in after it; 0 until seen */
	__u64 nsw;    /* task->nvcsw + nivcsw at that switch-out */
};

/*
 * PROF_REC_CALL_NAME: the strings behind a name id, as the runtime passed them.
 *   python: fn = function, file = .py path          (cls empty)
 *   ruby:   cls = class, fn = method, file = .rb path of the call site
 *   php:    cls = class ("" for plain functions), fn = function, file = .php path
 *   java:   cls = class ("java/lang/String"), fn = method, file = signature
 * *_len: bytes stored in each field (a field is NUL-terminated only when shorter than it).
 */
struct prof_call_name {
	__u32 type;
	__u32 pid;
	__u64 name_id;
	__u8 runtime;
	__u8 pad0;
	__u16 cls_len;
	__u16 fn_len;
	__u16 file_len;
	char cls[PROF_CALL_CLS_LEN];
	char fn[PROF_CALL_FN_LEN];
	char file[PROF_CALL_FILE_LEN];
};
_Static_assert(sizeof(struct prof_call_name) ==
		       24 + PROF_CALL_CLS_LEN + PROF_CALL_FN_LEN + PROF_CALL_FILE_LEN,
	       "prof_call_name layout");

/*
 * Identity of a function as a probe names it.  The exec generation keeps a pointer of the
 * old image from naming a function of the new one; the runtime keeps two runtimes in one
 * process apart.  Never 0 (0 = no name).
 */
static inline __u64 prof_call_name_id(__u32 pid, __u64 exec_gen, __u32 runtime, __u64 cls, __u64 fn,
				      __u64 file)
{
	__u64 h = prof_mix64(((__u64)pid << 32 | runtime) ^ 0x9e3779b97f4a7c15ULL);

	h = prof_mix64(h ^ exec_gen);
	h = prof_mix64(h ^ cls);
	h = prof_mix64(h ^ fn);
	h = prof_mix64(h ^ file);
	return h ? h : 1;
}

/*
 * Markers: what a runtime reports besides calls (FunctionTrace's exceptions, imports and logs),
 * for the event traces that show them (-f firefox).  Each probe sends its text in the record:
 * they are rare next to calls, and their strings (a message, a module) rarely repeat by pointer.
 */
enum prof_marker_kind {
	PROF_MARK_NONE = 0,
	PROF_MARK_EXC_THROWN,	/* php:exception__thrown(class) */
	PROF_MARK_EXC_CAUGHT,	/* php:exception__caught(class, a zend_string) */
	PROF_MARK_ERROR,	/* php:error(message, file, line): warnings, notices, fatals */
	PROF_MARK_IMPORT_START, /* python:import__find__load__start(module) */
	PROF_MARK_IMPORT_DONE,	/* python:import__find__load__done(module, found) */
	PROF_MARK_CLASS_LOAD,	/* hotspot:class__loaded(name, len, loader, shared) */
	PROF_MARK__COUNT,
};

#define PROF_MARKER_TEXT_LEN 128 /* class, module or message; longer ones are cut */
#define PROF_MARKER_FILE_LEN 128 /* php:error's file; longer paths keep their first bytes */
_Static_assert(PROF_IS_POW2(PROF_MARKER_TEXT_LEN), "PROF_MARKER_TEXT_LEN must be a power of two");
_Static_assert(PROF_IS_POW2(PROF_MARKER_FILE_LEN), "PROF_MARKER_FILE_LEN must be a power of two");
/* PHP passes exception__caught's class as a zend_string *: its bytes start here (after the
 * refcount header, the hash and the length, 8 bytes each, on every 64-bit PHP 7 and 8). */
#define PROF_PHP_ZSTR_VAL_OFF 24

/* PROF_REC_CALL_MARKER; text and file are NUL-terminated when shorter than their field. */
struct prof_call_marker {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 line;   /* php:error's line, else 0 */
	__u64 ts;     /* bpf_ktime_get_ns(), as call events */
	__u8 runtime; /* enum prof_runtime */
	__u8 kind;    /* enum prof_marker_kind */
	__u16 text_len;
	__u16 file_len;
	__u16 pad0;
	__u32 arg; /* import done: found (1) or not (0); class load: from the CDS archive (1) */
	__u32 pad1;
	char text[PROF_MARKER_TEXT_LEN];
	char file[PROF_MARKER_FILE_LEN];
};
_Static_assert(sizeof(struct prof_call_marker) == 40 + PROF_MARKER_TEXT_LEN + PROF_MARKER_FILE_LEN,
	       "prof_call_marker layout");

#endif /* PROF_CALLS_H */
