/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Address -> (file mapping, function) for user and kernel addresses.
 * Maps come with the process event that loads a pid (the tracker's one read of it), else are
 * read from <proc>/PID/maps (proc/maps), and again when an address falls outside every known
 * mapping; ELF files are opened through <proc>/PID/map_files (else
 * <path> resolved inside <proc>/PID/root: other mount namespaces work, and a target cannot point
 * us at a host file; safe_open.h) and cached per (dev, inode) and build id; their symbols are
 * read with libelf (.symtab, then .dynsym) while the process is alive, so resolving works after
 * it exits.  Kernel addresses come from /proc/kallsyms, JIT code from /tmp/perf-PID.map.
 *
 * Memory is bounded for runs of days: loaded files are kept by an LRU (by last load or resolve)
 * capped in count and in symbol bytes (symbolizer_opts); an evicted file is opened again when an
 * address of a process that maps it needs it.  Kernel symbols and the vDSO are loaded once.
 * Strings handed out live in a pool that symbolizer__sweep frees (see the contract there).
 */
#ifndef PROF_SYMBOLIZER_H
#define PROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap;
struct maps;
struct prof_py_proc;
struct symbolizer;

struct sym_mapping {
	uint64_t start, limit, offset; /* runtime range and file offset, as in /proc/PID/maps */
	const char *path;	       /* as the target sees it; "[kernel.kallsyms]" for kernel */
	const char *build_id;	       /* lowercase hex from .note.gnu.build-id, "" if none */
	bool has_symbols;
};

struct sym_result {
	const char *name;	       /* demangled display name; NULL when unknown */
	const char *system_name;       /* raw symbol name; NULL when unknown */
	const char *file;	       /* source file when known, else NULL */
	uint64_t sym_addr;	       /* runtime address of the symbol's start (0 when unknown) */
	const struct sym_mapping *map; /* NULL when the address is in no mapping */
	int32_t line;		       /* source line when known (Python frames), else 0 */
	int32_t start_line;	       /* the function's first line when known, else 0 */
	/* A function inlined at this address (symbolizer__inlined): the next frame rootward is
	 * at the same address and is the function it was inlined into. */
	bool inlined;
};

/*
 * Files we refused to read (hostile or odd), and what we skipped in those we read; files the LRU
 * unloaded (bookkeeping, not a loss: they are opened again when needed).
 */
struct symbolizer_stats {
	uint64_t files_refused;		/* mapped files: not regular, too big, swapped */
	uint64_t perfmaps_refused;	/* perf maps: symlink, FIFO, device, wrong owner, too big */
	uint64_t perfmap_lines_skipped; /* lines too long, or past the entry cap */
	uint64_t files_evicted;		/* loaded files unloaded by the caps */
	uint64_t py_code_unreadable;	/* Python frames whose code object could not be read */
	uint64_t debuginfod_fetched;	/* debug files received from debuginfod */
	uint64_t debuginfod_missing;	/* build ids no debuginfod server has */
	uint64_t debuginfod_timeouts;	/* fetches cut at --debuginfod-timeout */
	uint64_t debuginfod_failed;	/* server errors, over the size cap, or a file refused */
	uint64_t inline_unnamed;	/* inlined calls without a name (dwz): left out */
};

/* What the symbolizer holds now (gauges, for tests and -v; not printed as counters). */
struct symbolizer_usage {
	size_t files_loaded; /* files whose symbols are in memory (the vDSO not counted) */
	uint64_t file_bytes; /* their bytes (elf_file__bytes) */
	size_t file_records; /* files known: loaded, or named by a process's maps */
	size_t strings;	     /* strings in the pool */
	uint64_t string_bytes;
	size_t mappings;  /* mapping records (sym_result.map) */
	size_t demangled; /* demangling cache entries */
	size_t procs;	  /* processes with state (until symbolizer__drop_pid) */
};

struct symbolizer_opts {
	const char *proc_root;	 /* "/proc" unless a test points elsewhere */
	const char *kallsyms;	 /* "/proc/kallsyms" unless a test points elsewhere */
	const char *perfmap_dir; /* "/tmp" */
	const char *debug_dir;	 /* debug files: "/usr/lib/debug" when NULL, none when "" */
	size_t max_files;	 /* loaded files kept (LRU): 256 when 0 */
	uint64_t max_file_bytes; /* their symbol bytes: 256 MiB when 0 */
	/* Fetch the debug files of frames' files without full symbols from the servers of
	 * DEBUGINFOD_URLS (sym/debuginfod.h), each within debuginfod_timeout_s (0: 30 s). */
	bool debuginfod;
	unsigned debuginfod_timeout_s;
	/* No inlined frames (symbolizer__inlined gives none): --no-inline. */
	bool no_inline;
};

/* opts may be NULL for the defaults.  One thread at a time: no call is safe concurrently with
 * another on the same symbolizer. */
int symbolizer__new(struct symbolizer **out, const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);
/* Its counters, those of the debuginfod fetcher included. */
const struct symbolizer_stats *symbolizer__stats(struct symbolizer *s);
void symbolizer__usage(const struct symbolizer *s, struct symbolizer_usage *out);

/* Load the symbols of the process's executable mappings now: m, the caller's read of its
 * mappings, or NULL to read them (maps__read_pid under opts' proc_root). */
int symbolizer__load_pid(struct symbolizer *s, uint32_t pid, const struct maps *m);
/* Forget a pid's mappings (after exec), keeping file caches. */
void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid);
/* The process is gone for good (continuous mode): its entry goes too, and with the next sweep
 * the names and paths only it held. */
void symbolizer__drop_pid(struct symbolizer *s, uint32_t pid);
/*
 * The lifetime of results.  Every pointer a sym_result holds (name, system_name, file, map, and
 * the strings inside *map, which live as long as the map) stays valid until a symbolizer__sweep
 * whose used set does not contain it; evicting a file, forgetting or dropping a pid never frees
 * them.  used is a hashmap whose keys are `const void *` (8 bytes; any value size): the caller puts
 * there every such pointer it still holds, mapping records and result strings alike (stackres__used
 * does it for interned stacks).  The sweep frees every mapping record, demangled name and pooled
 * string that is neither in used nor needed by the symbolizer itself (live processes' comm and
 * paths).  Kernel names and the kernel mapping live until symbolizer__free.  0, or -ENOMEM with
 * nothing freed.
 */
int symbolizer__sweep(struct symbolizer *s, const struct hashmap *used);

/*
 * Resolve a user address in pid's address space.  Returns 0 and fills *out (valid as
 * symbolizer__sweep says); out->name is NULL for an address that did not symbolize.  Never fails
 * for an unknown address — it reports it with out->map (possibly NULL) so the caller keeps it.
 */
int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr,
			     struct sym_result *out);
int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *out);

/* Levels of inlined calls kept per address (deeper ones: the outermost kept). */
#define SYM_MAX_INLINE 32
/*
 * The functions inlined at the address the last symbolizer__resolve_user or
 * symbolizer__resolve_again resolved into phys (from the DWARF of its file: its own or a debug
 * file), innermost first, into out[0..max), each with phys's mapping, its own name (demangled
 * like symbols), source file and line, and inlined set; how many (0: none).  phys's own file and
 * line are already the call site in its function.  Valid as symbolizer__sweep says.
 */
unsigned symbolizer__inlined(const struct symbolizer *s, const struct sym_result *phys,
			     struct sym_result *out, unsigned max);

/*
 * Debug files from debuginfod (symbolizer_opts.debuginfod).  Resolving an address in a file
 * without full symbols asks for the file's debug file; it arrives later, on the fetcher's own
 * thread.  These three are safe from any thread: requests queued or under way; whether files
 * arrived since the last take; the end.
 */
unsigned symbolizer__debug_pending(const struct symbolizer *s);
bool symbolizer__debug_arrived(const struct symbolizer *s);
/* The last profile is next: wait up to ms for the requests pending, then cut those left
 * (counted as timeouts); nothing is asked for after. */
void symbolizer__debug_finish(const struct symbolizer *s, unsigned ms);
/*
 * From now on a file's DWARF (lines, inlined calls) is indexed on a thread of its own
 * (sym/dwbuild.h), asked for by the first frame that needs it and built once a profile is
 * first made (symbolizer__wait_dwarf); once built, symbolizer__debug_arrived is
 * true, symbolizer__debug_take hands it over and gives its build id, and the results of its
 * frames are redone.  With a worker: the stacks and Python thread names queued behind a big
 * file's indexing would be read too late (a short-lived thread's name is read live).  Files
 * without a build id: at once.
 */
void symbolizer__defer_dwarf(struct symbolizer *s);
/* Until the DWARF asked for so far is indexed (a profile is next: before its debug take). */
void symbolizer__wait_dwarf(struct symbolizer *s);
/* No profile was made yet: the DWARF asked for waits for one (symbolizer__wait_dwarf). */
bool symbolizer__dwarf_gathering(const struct symbolizer *s);
/* The fetch timeout in ms (0: debuginfod is off). */
unsigned symbolizer__debug_timeout_ms(const struct symbolizer *s);
/*
 * Take the files that arrived: each names its file's frames from now on.  *bids (NULL when
 * none; the caller frees it) holds the build ids whose earlier results may now name better, as
 * keys `const char *` — the pointer sym_mapping.build_id holds; symbolizer__resolve_again redoes
 * them.  0 or -ENOMEM.
 */
int symbolizer__debug_take(struct symbolizer *s, struct hashmap **bids);
/*
 * Resolve again user address addr whose result *io was (a file mapping's): named from its file as
 * it is loaded now.  *io is unchanged when the file is not loaded.  0 or -ENOMEM.
 */
int symbolizer__resolve_again(struct symbolizer *s, uint64_t addr, struct sym_result *io);

struct py_version;
/*
 * pid runs the CPython of layout v (NULL: no more) as py says (include/prof_python.h: its
 * _PyRuntime, PyCode_Type and _PyEval_EvalFrameDefault, in the interpreter's file: the
 * executable with libpython linked in, or libpython3.X.so): its Python frames and threads can
 * be named.  Forgotten with the pid's mappings (exec).  0 or -ENOMEM.
 */
int symbolizer__set_python(struct symbolizer *s, uint32_t pid, const struct py_version *v,
			   const struct prof_py_proc *py);
/* addr of pid is in its CPython's _PyEval_EvalFrameDefault (or that function's .cold part). */
bool symbolizer__python_eval(const struct symbolizer *s, uint32_t pid, uint64_t addr);
/* How pid's CPython chains its frames: enum prof_py_style (PROF_PY_NONE: no CPython known). */
unsigned symbolizer__python_style(const struct symbolizer *s, uint32_t pid);
/*
 * addr of pid is code of the file its CPython runs from (symbolizer__set_python's eval lies in a
 * mapping of the same file: same device and inode), e.g. the interpreter's own call path between
 * two Python frames.  False when pid runs no CPython or either address is in no mapping.
 */
bool symbolizer__python_native(const struct symbolizer *s, uint32_t pid, uint64_t addr);
/*
 * A Python frame of pid (a value prof_py_is_frame accepts) with its fingerprint word (0: none):
 * the code object's name, file and first line, and the line of its instruction, read from the
 * live process and cached per (pid, code object) — a cached or live object whose fingerprint
 * differs is another object at the same address, not this frame's.  out->map is NULL.  A code
 * object that cannot be read (or is gone) gives the name "[python]" (counted).  0 or -ENOMEM.
 */
int symbolizer__resolve_python(struct symbolizer *s, uint32_t pid, uint64_t frame, uint64_t print,
			       struct sym_result *out);
/*
 * The cut word of a stack deeper than its cap (include/prof_stack.h): a frame named "[N frames
 * cut]" ("[N+ frames cut]" when the walk stopped before the root, "[frames cut]" when N is not
 * known: --unwind fp), no mapping.  0 or -ENOMEM.
 */
int symbolizer__resolve_cut(struct symbolizer *s, uint64_t word, struct sym_result *out);
/*
 * Thread tid of Python process pid was seen: read the names of its Python threads
 * (threading.Thread.name, user/sym/pythreads.c) unless tid has one already or they were read in
 * the last 100 ms; an unnamed tid is wanted (symbolizer__python_retry).  0 or -ENOMEM (an
 * unreadable interpreter names nobody).
 */
int symbolizer__python_thread(struct symbolizer *s, uint32_t pid, uint32_t tid);
/*
 * Read again the names of each Python process with a thread seen but not named yet, whose
 * names were last read 100 ms ago or more (a thread is named in threading._active only once it
 * runs; one seen before that, then asleep, would otherwise keep no name).  Each such thread is
 * given up after 30 reads.  0 or -ENOMEM.
 */
int symbolizer__python_retry(struct symbolizer *s);
/*
 * Read the names of pid's Python threads now, whatever is known (pid 0: of every Python
 * process): before a profile is built, and at an exit stop, so names given after the first
 * read are there.  Names of threads gone since stay.  0 or -ENOMEM.
 */
int symbolizer__python_names(struct symbolizer *s, uint32_t pid);
/* tid's Python thread name (valid as symbolizer__sweep says), NULL when none is known. */
const char *symbolizer__python_thread_name(const struct symbolizer *s, uint32_t pid, uint32_t tid);

#endif /* PROF_SYMBOLIZER_H */
