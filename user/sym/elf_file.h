/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One ELF file's function symbols, build id and PT_LOAD segments, read with libelf when it is
 * opened (the file is not kept open, except for its own DWARF until read: keep_dwarf_fd), so that a
 * runtime address inside a mapping of the file becomes an ELF virtual address and then a symbol.
 * Symbols come from .symtab, else from a separate debug file (by build id, then .gnu_debuglink),
 * else from .dynsym.  Also gives the loader a function's file offset (for uprobes) and the bytes
 * there (to decode its prologue).
 */
#ifndef PROF_ELF_FILE_H
#define PROF_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

struct elf_file_opts {
	/* Root of separate debug files: "/usr/lib/debug" when NULL, no search when "". */
	const char *debug_dir;
	/* The file's path as its process sees it, for the .gnu_debuglink search under debug_dir
	 * (NULL: the path opened). */
	const char *target_path;
	/*
	 * in_root: target_path lies in the root root_fd (safe_open__root): debuglink candidates
	 * next to the file are looked up there, confined to it (safe_open__at).
	 */
	bool in_root;
	int root_fd;
	/* elf_file__open_fd: keep a dup of the fd for elf_file__read_at (else -EBADF). */
	bool keep_fd;
	/* elf_file__open_fd: keep a dup of the fd when the file carries its own DWARF (and no
	 * separate debug file serves), for its source lines (elf_file__dwarf_fd). */
	bool keep_dwarf_fd;
};

struct elf_sym {
	const char *name; /* without any "@VERSION" / "@@VERSION" suffix */
	uint64_t addr;	  /* st_value, an ELF virtual address */
	uint64_t size;	  /* st_size, or up to the next symbol (or section end) when st_size is 0 */
};

/* Where the symbols came from. */
enum elf_file_syms {
	ELF_FILE_SYMS_NONE,
	ELF_FILE_SYMS_SYMTAB,
	ELF_FILE_SYMS_DEBUG_FILE, /* .symtab of the separate debug file */
	ELF_FILE_SYMS_DYNSYM,
	ELF_FILE_SYMS_MINIDEBUG, /* .dynsym and the .symtab of .gnu_debugdata (MiniDebugInfo) */
};

/* A function found by name, for attaching a uprobe to it. */
struct elf_func {
	uint64_t vaddr;	      /* st_value */
	uint64_t size;	      /* st_size (0 if unknown) */
	uint64_t file_offset; /* vaddr - p_vaddr + p_offset of the PT_LOAD that holds it */
	bool ifunc;	      /* STT_GNU_IFUNC: vaddr is the resolver, not the implementation */
};

/* -ENOEXEC when path is not an ELF file.  opts may be NULL. */
int elf_file__open(struct elf_file **out, const char *path, const struct elf_file_opts *opts);
/* Same for an open file; the caller still owns (and closes) fd, dup'd when opts.keep_fd. */
int elf_file__open_fd(struct elf_file **out, int fd, const struct elf_file_opts *opts);
/* An ELF image in memory (the vDSO); the image is copied. elf_file__read_at is -EBADF on it. */
int elf_file__open_mem(struct elf_file **out, const void *image, size_t size);
void elf_file__free(struct elf_file *ef);

/*
 * Symbols from the debug file at path (one fetched from debuginfod) for a file that has neither
 * .symtab nor a local debug file: checked as a local one (a regular file under
 * SAFE_OPEN_ELF_MAX, this file's build id), its .symtab then replaces what .dynsym and
 * MiniDebugInfo gave.  0 when used; else ef is unchanged: -EEXIST (full symbols already),
 * -ESTALE (another build), -ENOENT (no function symbols), -ENOEXEC, -ENOMEM, …
 */
int elf_file__use_debug_file(struct elf_file *ef, const char *path);

/* Lowercase hex of .note.gnu.build-id, "" when the file has none. */
const char *elf_file__build_id(const struct elf_file *ef);
/* The same of an open libelf handle: 0 and *out (malloc'd, NULL when none), or -ENOMEM. */
struct Elf;
int elf_file__build_id_of(char **out, struct Elf *elf);
/* ET_EXEC, ET_DYN, … */
uint16_t elf_file__type(const struct elf_file *ef);
enum elf_file_syms elf_file__syms(const struct elf_file *ef);
/* Path of the separate debug file whose .symtab was used, or NULL. */
const char *elf_file__debug_path(const struct elf_file *ef);
/*
 * The file itself, opened, when it carries .debug_line and no debug file was found
 * (elf_file_opts.keep_dwarf_fd), else -1; elf_file__drop_dwarf_fd closes it once read.
 */
int elf_file__dwarf_fd(const struct elf_file *ef);
void elf_file__drop_dwarf_fd(struct elf_file *ef);
bool elf_file__has_symbols(const struct elf_file *ef);
size_t elf_file__symbol_count(const struct elf_file *ef);
/* Heap bytes this object holds (its symbol table, names, segments): what a cache of files caps. */
size_t elf_file__bytes(const struct elf_file *ef);

/*
 * ELF virtual address of runtime address addr, found in a mapping of this file that starts at
 * map_start with file offset map_offset (a /proc/PID/maps line): the file offset is located in
 * its PT_LOAD segment, so PIE, non-PIE and shared libraries all work.  -ENOENT when the file
 * offset lies in no PT_LOAD segment.
 */
int elf_file__vaddr(const struct elf_file *ef, uint64_t *out, uint64_t addr, uint64_t map_start,
		    uint64_t map_offset);
/* File offset of ELF virtual address vaddr; -ENOENT when in no PT_LOAD file range. */
int elf_file__file_offset(const struct elf_file *ef, uint64_t *out, uint64_t vaddr);

/* The function symbol containing vaddr, or NULL. Aliases resolve to one preferred name. */
const struct elf_sym *elf_file__lookup(const struct elf_file *ef, uint64_t vaddr);

/*
 * Function symbol (FUNC or IFUNC) named name: when several match, the global one with the
 * default symbol version ("malloc@@GLIBC_2.2.5" over a hidden "memcpy@GLIBC_2.2.5").
 * -ENOENT when absent, -ERANGE when its address is in no PT_LOAD segment.
 */
int elf_file__find_symbol(const struct elf_file *ef, struct elf_func *out, const char *name);
/*
 * A file without .symtab (nor a debug file): the start of the function (the FDE of its
 * .eh_frame_hdr) covering ELF virtual address vaddr, true and *start; false when none is known.
 */
bool elf_file__fde(const struct elf_file *ef, uint64_t vaddr, uint64_t *start);

/*
 * Read exactly len bytes at file_offset from the file opened (reopened by path and checked to
 * be the same file: -ESTALE when it was replaced since).  -EIO past the end of the file.
 */
int elf_file__read_at(const struct elf_file *ef, void *buf, size_t len, uint64_t file_offset);

#endif /* PROF_ELF_FILE_H */
