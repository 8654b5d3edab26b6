/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames read by the BPF unwinder (bpf/python.bpf.h) from CPython's own structures
 * (3.8–3.13), and how they travel: inside a user stack, in place of the native
 * _PyEval_EvalFrameDefault frame that ran them, one tagged __u64 per Python frame.  Userspace
 * (user/sym/python.c) finds the interpreter in a process and fills struct prof_py_proc in the
 * process's unwinder entry; user/sym/pycode.c turns a tagged frame into name, file and line.
 */
#ifndef PROF_PYTHON_H
#define PROF_PYTHON_H

#include "prof_common.h"

/*
 * A Python frame in a stack is two words, leaf first like every frame.  The first: bit 62 set
 * (user addresses are below 2^47, kernel ones have bits 62 and 63 set), the instruction index in
 * bits 47..61, the code object's address in bits 0..46.  The second, its fingerprint: bit 63 set
 * and bit 62 clear, then prof_py_fingerprint() of what the code object held when the frame was
 * read — userspace reads code objects later, by which time one that was freed (a module's
 * top-level code after import, exec'd code) may have been replaced by another at the same
 * address: the fingerprint tells them apart.
 */
#define PROF_PY_FRAME_TAG   (1ULL << 62)
#define PROF_PY_ADDR_MASK   ((1ULL << 47) - 1)
#define PROF_PY_INSTR_MAX   0x7fffULL /* larger indexes are clamped (counted) */
#define PROF_PY_INSTR_SHIFT 47

static inline int prof_py_is_frame(__u64 ip)
{
	return (ip >> 62) == 1;
}

static inline __u64 prof_py_frame(__u64 code, __u64 instr)
{
	return PROF_PY_FRAME_TAG | (instr << PROF_PY_INSTR_SHIFT) | (code & PROF_PY_ADDR_MASK);
}

static inline __u64 prof_py_frame_code(__u64 ip)
{
	return ip & PROF_PY_ADDR_MASK;
}

static inline __u32 prof_py_frame_instr(__u64 ip)
{
	return (__u32)((ip >> PROF_PY_INSTR_SHIFT) & PROF_PY_INSTR_MAX);
}

#define PROF_PY_PRINT_TAG (1ULL << 63)

static inline int prof_py_is_print(__u64 ip)
{
	return (ip >> 62) == 2;
}

/* A code object's fingerprint word: its first line and the addresses of its file and name. */
static inline __u64 prof_py_fingerprint(__u32 firstlineno, __u64 filename, __u64 name)
{
	__u64 h = (__u64)firstlineno * 0x9e3779b97f4a7c15ULL;

	h ^= (filename >> 4) * 0xc2b2ae3d27d4eb4fULL;
	h ^= (name >> 4) * 0x165667b19e3779f9ULL;
	h ^= h >> 29;
	return PROF_PY_PRINT_TAG | (h & ((1ULL << 62) - 1));
}

/* How a version chains its frames. */
enum prof_py_style {
	PROF_PY_NONE = 0,
	PROF_PY_FRAMEOBJ = 1, /* 3.8–3.10: PyFrameObject, one per _PyEval_EvalFrameDefault call */
	PROF_PY_ENTRY = 2,    /* 3.11: _PyInterpreterFrame, an invocation ends at is_entry */
	PROF_PY_SHIM = 3,     /* 3.12+: _PyInterpreterFrame, an invocation ends at a shim frame */
};

/* What the frame's instruction field holds. */
enum prof_py_instr {
	PROF_PY_LASTI_BYTES = 1, /* f_lasti, a byte offset (3.8, 3.9) */
	PROF_PY_LASTI_UNITS = 2, /* f_lasti, in 2-byte code units (3.10) */
	PROF_PY_INSTR_PTR = 3,	 /* a pointer into the code object's co_code_adaptive (3.11+) */
};

/* Shim frames (3.12+): owner == FRAME_OWNED_BY_CSTACK. */
#define PROF_PY_OWNED_BY_CSTACK 3

/* Offsets in bytes of what the walker reads, per version (user/sym/python.c's table). */
struct prof_py_offsets {
	__u16 tss;	  /* _PyRuntime: gilstate.autoTSSkey (Py_tss_t: int initialized, key) */
	__u16 gil_holder; /* _PyRuntime: gilstate.tstate_current (<= 3.11); 0: via interp */
	__u16 ts_interp;  /* PyThreadState: interp */
	__u16 ts_frame;	  /* PyThreadState: frame (<= 3.10), cframe (3.11, 3.12),
			   * current_frame (3.13) */
	__u16 cf_current; /* _PyCFrame: current_frame (3.11, 3.12); 0xffff: ts_frame is it */
	__u16 fr_code;	  /* frame: f_code / f_executable */
	__u16 fr_back;	  /* frame: f_back / previous */
	__u16 fr_instr;	  /* frame: f_lasti / prev_instr / instr_ptr */
	__u16 fr_entry;	  /* frame: is_entry (3.11, a bool) or owner (3.12+, a char) */
	__u16 co_code_adaptive; /* code object: first code unit (3.11+) */
	__u16 interp_gil;	/* PyInterpreterState: ceval.gil, a pointer (3.12+) */
	__u16 gil_locked;	/* _gil_runtime_state: locked (an int) */
	__u16 gil_last_holder;	/* _gil_runtime_state: last_holder */
	__u8 style;		/* enum prof_py_style; PROF_PY_NONE: not a Python process */
	__u8 instr;		/* enum prof_py_instr */
	__u16 co_firstlineno;	/* code object: co_firstlineno (an int) */
	__u16 co_filename;	/* code object: co_filename, then co_name 8 bytes above */
};
_Static_assert(sizeof(struct prof_py_offsets) == 32, "prof_py_offsets layout");

/* A Python process as the walker needs it (runtime addresses); part of its unwinder entry. */
struct prof_py_proc {
	__u64 runtime;		/* &_PyRuntime */
	__u64 eval_lo, eval_hi; /* _PyEval_EvalFrameDefault: [lo, hi) */
	__u64 cold_lo, cold_hi; /* its .cold part (0, 0: none known) */
	__u64 code_type;	/* &PyCode_Type */
	__u32 version;		/* 0x0308 … 0x030d; 0: not a Python process */
	__u32 tsd;		/* glibc: offset of the pthread key data of key 0 from fsbase */
	struct prof_py_offsets o;
	/* The per-CPU cache of code objects' fingerprints (heap: bpf/python.bpf.h) serves the
	 * process code_watch (userspace sets it once a probe on code_dealloc is attached for it;
	 * a fork's copy of the entry names its parent, so the child is not served).  code_epoch
	 * counts the code objects freed since the entry was written (BPF adds; userspace writes
	 * 0 with every new generation): a cached fingerprint holds for one generation and epoch. */
	__u64 code_epoch;
	__u32 code_watch;
	__u16 ts_thread_id; /* PyThreadState: thread_id (pthread_self); 0: not used */
	__u16 pad;
};

/*
 * The cache's slots per CPU (a power of two): a code object's fingerprint by its address, for
 * one process, entry generation and code_epoch.  A frame whose code object is there is named
 * without reading the object (a user read each, ~40 ns; 4-6 per allocation in the Python
 * workload).  Sound because a code object that a live frame runs cannot be freed, and every
 * free of one moves the epoch before its memory can hold another.
 */
#define PROF_PY_CODE_SLOTS 512

struct prof_py_code_slot {
	__u64 code; /* 0: empty, or being written */
	__u32 tgid, gen;
	__u64 epoch, print;
};

/* glibc 2.36 (x86-64): struct pthread's specific_1stblock[k].data at fsbase + 0x310 + k*16 + 8
 * (from disassembling pthread_getspecific).  Keys >= 32 live elsewhere: not followed. */
#define PROF_PY_GLIBC_TSD (0x310 + 8)
#define PROF_PY_TSD_KEYS  32

/* Thread state of a Python sample (struct prof_cpu_sample.py). */
enum prof_py_thread {
	PROF_PY_THREAD_NONE = 0,   /* no Python frames (not Python, or no thread state) */
	PROF_PY_THREAD_GIL = 1,	   /* the thread holds the GIL */
	PROF_PY_THREAD_NO_GIL = 2, /* it does not */
};

#endif /* PROF_PYTHON_H */
