// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/dwarf_lines.h"

#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/safe_open.h"
#include "sym/dwarf_alt.h"
#include "sym/dwarf_form.h"
#include "sym/dwarf_inline.h"
#include "util/dwcursor.h"
#include "util/strarena.h"

/* A row of the line table: file UINT32_MAX unknown; line 0 ends a sequence. */
struct row {
	uint64_t addr;
	uint32_t file, line;
};

/* A line table's files: ufiles[first..first+n) are the file ids of its entries. */
struct lunit {
	uint64_t off; /* in .debug_line */
	uint32_t first, n;
};

struct dwlines {
	struct row *rows; /* by address, a sequence's end before what starts there */
	size_t nrows, cap;
	size_t *files; /* offsets of the file names in names */
	size_t nfiles, files_cap;
	struct strarena names;
	struct lunit *units; /* by off: for the call_file of inlined calls */
	size_t nunits, units_cap;
	uint32_t *ufiles;
	size_t nufiles, ufiles_cap;
	struct dwinl inl;
	uint64_t unnamed; /* inlined calls left out of lookups: no name */
};

/* A compile unit's line table (its offset in .debug_line) and compilation directory. */
struct cu_dir {
	uint64_t line_off;
	const char *dir;
};

/* The sections a line table names strings in, and where DWARF 4 keeps its directory 0. */
struct strsecs {
	struct cur line_str, str, info, abbrev;
	struct cur alt_str;	  /* dwz's alternate file's (strp_alt, strp_sup) */
	const uint8_t *line_base; /* .debug_line's start */
	struct cu_dir *dirs;	  /* by line_off (cu_dirs), built at the first DWARF 4 unit */
	size_t ndirs;
	bool dirs_built;
};

#define MAX_CUS (1u << 20)

/* One attribute of a DWARF 5 directory or file entry: a string, a number, or skipped. */
static void rd_form(struct cur *r, uint64_t form, unsigned offsz, const struct strsecs *ss,
		    const char **str, uint64_t *num)
{
	static const uint8_t width[] = {[0x05] = 2, [0x06] = 4, [0x07] = 8, [0x0b] = 1};

	if (form == 0x08) /* string */
		*str = rd_str(r);
	else if (form == 0x1f || form == 0x0e) /* line_strp, strp */
		*str = rd_str_at(form == 0x1f ? &ss->line_str : &ss->str, rd_u(r, offsz));
	else if (form == 0x1d || form == 0x1f21) /* strp_sup, GNU_strp_alt */
		*str = rd_str_at(&ss->alt_str, rd_u(r, offsz));
	else if (form < sizeof(width) && width[form]) /* data1, 2, 4, 8 */
		*num = rd_u(r, width[form]);
	else if (form == 0x0f) /* udata */
		*num = rd_uleb(r);
	else /* MD5 and the like: of no use here (asz: no address form is valid in a table) */
		dwform__skip(r, form, offsz, 0, 5);
}

/* The attribute specs of abbreviation code in the table at off of .debug_abbrev, at *out. */
static bool find_abbrev(const struct strsecs *ss, uint64_t off, uint64_t code, struct cur *out)
{
	struct cur a = ss->abbrev;

	if (!a.p || off >= (uint64_t)(a.end - a.p))
		return false;
	a.p += off;
	for (unsigned n = 0; n < 100000 && !a.err; n++) {
		uint64_t c = rd_uleb(&a), name, form;

		if (!c)
			return false;
		rd_uleb(&a);	/* tag */
		rd_skip(&a, 1); /* children */
		if (c == code) {
			*out = a;
			return !a.err;
		}
		do {
			name = rd_uleb(&a);
			form = rd_uleb(&a);
			if (form == 0x21)
				rd_sleb(&a);
		} while ((name || form) && !a.err);
	}
	return false;
}

static int cmp_cu_dir(const void *a, const void *b)
{
	const struct cu_dir *x = a, *y = b;

	return x->line_off < y->line_off ? -1 : x->line_off > y->line_off;
}

/* Each compile unit's DW_AT_stmt_list and DW_AT_comp_dir, from its first DIE in .debug_info. */
static void build_cu_dirs(struct strsecs *ss)
{
	struct cur info = ss->info;
	size_t cap = 0;

	ss->dirs_built = true;
	while (!info.err && info.p < info.end && ss->ndirs < MAX_CUS) {
		uint64_t len = rd_u(&info, 4), abbrev_off, stmt = UINT64_MAX;
		unsigned offsz = 4, version, asz, type = 1;
		const char *dir = NULL;
		struct cur u, spec;

		if (len == 0xffffffff) {
			len = rd_u(&info, 8);
			offsz = 8;
		}
		if (info.err || len > (uint64_t)(info.end - info.p))
			break;
		u = (struct cur){info.p, info.p + len, false};
		info.p += len;
		version = (unsigned)rd_u(&u, 2);
		if (version >= 5) {
			type = (unsigned)rd_u(&u, 1);
			asz = (unsigned)rd_u(&u, 1);
			abbrev_off = rd_u(&u, offsz);
			if (type == 4 || type == 5) /* skeleton, split_compile: dwo_id */
				rd_skip(&u, 8);
			else if (type == 2 || type == 6) /* type units */
				rd_skip(&u, 8 + offsz);
		} else {
			abbrev_off = rd_u(&u, offsz);
			asz = (unsigned)rd_u(&u, 1);
		}
		if (u.err || version < 2 || version > 5 || (asz != 4 && asz != 8) ||
		    !find_abbrev(ss, abbrev_off, rd_uleb(&u), &spec))
			continue;
		for (;;) {
			uint64_t name = rd_uleb(&spec), form = rd_uleb(&spec);
			const char *str = NULL;
			uint64_t num = UINT64_MAX;

			if ((!name && !form) || spec.err || u.err)
				break;
			if (form == 0x21) {
				rd_sleb(&spec);
				continue;
			}
			if (name == 0x10 && (form == 0x17 || form == 0x06 || form == 0x07))
				num = rd_u(&u, form == 0x07 ? 8 : form == 0x06 ? 4 : offsz);
			else if (name == 0x1b && (form == 0x08 || form == 0x0e || form == 0x1f ||
						  form == 0x1d || form == 0x1f21))
				rd_form(&u, form, offsz, ss, &str, &num);
			else
				dwform__skip(&u, form, offsz, asz, version);
			if (name == 0x10)
				stmt = num;
			else if (name == 0x1b)
				dir = str;
		}
		if (stmt == UINT64_MAX || !dir || dir[0] != '/')
			continue;
		if (ss->ndirs == cap) {
			struct cu_dir *v;

			cap = cap ? 2 * cap : 64;
			v = realloc(ss->dirs, cap * sizeof(*v));
			if (!v)
				break;
			ss->dirs = v;
		}
		ss->dirs[ss->ndirs++] = (struct cu_dir){stmt, dir};
	}
	if (ss->ndirs)
		qsort(ss->dirs, ss->ndirs, sizeof(*ss->dirs), cmp_cu_dir);
}

/* The compilation directory of the unit whose line table is at off of .debug_line, or NULL. */
static const char *cu_dir_of(struct strsecs *ss, uint64_t off)
{
	size_t lo = 0, hi;

	if (!ss->dirs_built)
		build_cu_dirs(ss);
	hi = ss->ndirs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ss->dirs[mid].line_off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ss->ndirs && ss->dirs[lo].line_off == off ? ss->dirs[lo].dir : NULL;
}

static int add_row(struct dwlines *d, uint64_t addr, uint32_t file, uint32_t line)
{
	if (d->nrows == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 1024;
		struct row *v;

		if (d->nrows >= DWLINES_MAX_ROWS)
			return -E2BIG;
		v = realloc(d->rows, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		d->rows = v;
		d->cap = cap;
	}
	d->rows[d->nrows++] = (struct row){addr, file, line};
	return 0;
}

/* The file ids of the line table at off of .debug_line, for the inlined calls' call_file. */
static int add_lunit(struct dwlines *d, uint64_t off, const uint32_t *files, uint32_t n)
{
	if (d->nufiles + n > DWLINES_MAX_FILES * 4ULL)
		return 0; /* the calls of further units have no call file */
	if (d->nunits == d->units_cap) {
		size_t cap = d->units_cap ? 2 * d->units_cap : 64;
		struct lunit *v = realloc(d->units, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->units = v;
		d->units_cap = cap;
	}
	while (d->nufiles + n > d->ufiles_cap) {
		size_t cap = d->ufiles_cap ? 2 * d->ufiles_cap : 1024;
		uint32_t *v = realloc(d->ufiles, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->ufiles = v;
		d->ufiles_cap = cap;
	}
	if (n) /* a table of no files: ufiles may still be NULL, and NULL + 0 is undefined */
		memcpy(d->ufiles + d->nufiles, files, n * sizeof(*files));
	d->units[d->nunits++] = (struct lunit){off, (uint32_t)d->nufiles, n};
	d->nufiles += n;
	return 0;
}

/* dwinl_file_fn: entry idx of the line table at stmt (units are in .debug_line's order). */
static uint32_t unit_file(void *ctx, uint64_t stmt, uint64_t idx)
{
	const struct dwlines *d = ctx;
	size_t lo = 0, hi = d->nunits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->units[mid].off < stmt)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->nunits || d->units[lo].off != stmt || idx >= d->units[lo].n)
		return UINT32_MAX;
	return d->ufiles[d->units[lo].first + idx];
}

/* A file's full name (dir/name unless name is absolute) as a new file id. */
static int add_file(struct dwlines *d, const char *dir0, const char *dir, const char *name,
		    uint32_t *out)
{
	char path[PATH_MAX];
	int n;

	*out = UINT32_MAX;
	if (!name || d->nfiles >= DWLINES_MAX_FILES)
		return 0;
	if (name[0] == '/' || !dir || !dir[0])
		n = snprintf(path, sizeof(path), "%s", name);
	else if (dir[0] == '/' || !dir0 || !dir0[0])
		n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	else
		n = snprintf(path, sizeof(path), "%s/%s/%s", dir0, dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	if (d->nfiles == d->files_cap) {
		size_t cap = d->files_cap ? 2 * d->files_cap : 64;
		size_t *v = realloc(d->files, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->files = v;
		d->files_cap = cap;
	}
	if (strarena__add(&d->names, &d->files[d->nfiles], path, (size_t)n))
		return -ENOMEM;
	*out = (uint32_t)d->nfiles++;
	return 0;
}

#define MAX_DIRS    4096 /* a unit's directories and files read, at most */
#define MAX_FILES   16384
#define MAX_FORMATS 16

/* DWARF 5 entry formats, then count entries: strings of content DW_LNCT_path (1) and numbers of
 * DW_LNCT_directory_index (2). */
struct entry {
	const char *path;
	uint64_t dir;
};

static uint64_t read_entries(struct cur *r, unsigned offsz, const struct strsecs *ss,
			     struct entry *out, uint64_t max)
{
	uint64_t fmt[MAX_FORMATS][2], n;
	unsigned nfmt = (unsigned)rd_u(r, 1);

	if (nfmt > MAX_FORMATS) {
		r->err = true;
		return 0;
	}
	for (unsigned i = 0; i < nfmt; i++) {
		fmt[i][0] = rd_uleb(r);
		fmt[i][1] = rd_uleb(r);
	}
	n = rd_uleb(r);
	for (uint64_t k = 0; k < n && !r->err; k++) {
		struct entry e = {NULL, 0};

		for (unsigned i = 0; i < nfmt; i++) {
			const char *s = NULL;
			uint64_t v = 0;

			rd_form(r, fmt[i][1], offsz, ss, &s, &v);
			if (fmt[i][0] == 1)
				e.path = s;
			else if (fmt[i][0] == 2)
				e.dir = v;
		}
		if (k < max)
			out[k] = e;
	}
	return n < max ? n : max;
}

/* A unit's tables, reused from one unit to the next. */
struct scratch {
	struct entry dents[MAX_DIRS], fents[MAX_FILES];
	const char *dirs[MAX_DIRS];
	uint32_t files[MAX_FILES];
};

/*
 * One unit's line program (its header at r), its rows appended.  Returns 0, -ENOMEM, or -E2BIG
 * at a cap (the rows so far kept).  A malformed unit ends the reading of the section (r bad).
 */
static int read_unit(struct dwlines *d, struct cur *r, struct strsecs *ss, struct scratch *sc)
{
	uint64_t off = (uint64_t)(r->p - ss->line_base);
	uint64_t len = rd_u(r, 4), hdr_len, ndirs = 0, nfiles = 0;
	unsigned offsz = 4, version, min_inst, opcode_base, line_range;
	const char **dirs = sc->dirs;
	struct entry *fents = sc->fents;
	uint32_t *files = sc->files;
	uint8_t std_len[256] = {0};
	int line_base, err = 0;
	struct cur u, prog;

	if (len == 0xffffffff) {
		len = rd_u(r, 8);
		offsz = 8;
	}
	if (r->err || len > (uint64_t)(r->end - r->p)) {
		r->err = true;
		return 0;
	}
	u = (struct cur){r->p, r->p + len, false};
	r->p += len; /* the next unit, whatever this one holds */
	version = (unsigned)rd_u(&u, 2);
	if (version < 2 || version > 5)
		return 0;
	if (version >= 5)
		rd_skip(&u, 2); /* address_size, segment_selector_size */
	hdr_len = rd_u(&u, offsz);
	if (u.err || hdr_len > (uint64_t)(u.end - u.p))
		return 0;
	prog = (struct cur){u.p + hdr_len, u.end, false};
	min_inst = (unsigned)rd_u(&u, 1);
	if (version >= 4)
		rd_skip(&u, 1); /* maximum_operations_per_instruction: no VLIW here */
	rd_skip(&u, 1);		/* default_is_stmt */
	line_base = (int8_t)rd_u(&u, 1);
	line_range = (unsigned)rd_u(&u, 1);
	opcode_base = (unsigned)rd_u(&u, 1);
	if (u.err || !line_range || !opcode_base)
		return 0;
	for (unsigned i = 1; i < opcode_base; i++)
		std_len[i] = (uint8_t)rd_u(&u, 1);

	if (version >= 5) {
		ndirs = read_entries(&u, offsz, ss, sc->dents, MAX_DIRS);
		for (uint64_t i = 0; i < ndirs; i++)
			dirs[i] = sc->dents[i].path;
		nfiles = read_entries(&u, offsz, ss, fents, MAX_FILES);
	} else {
		const char *s;

		dirs[0] = cu_dir_of(ss, off); /* the compilation directory: .debug_info's */
		ndirs = 1;
		while ((s = rd_str(&u)) && s[0])
			if (ndirs < MAX_DIRS)
				dirs[ndirs++] = s;
		fents[0] = (struct entry){NULL, 0};
		nfiles = 1; /* indexes start at 1 */
		while ((s = rd_str(&u)) && s[0]) {
			struct entry e = {s, 0};

			e.dir = rd_uleb(&u);
			rd_uleb(&u); /* mtime */
			rd_uleb(&u); /* length */
			if (nfiles < MAX_FILES)
				fents[nfiles++] = e;
		}
	}
	if (u.err || !ndirs)
		return 0;
	for (uint64_t i = 0; i < nfiles && !err; i++) {
		const char *dir = fents[i].dir < ndirs ? dirs[fents[i].dir] : NULL;

		files[i] = UINT32_MAX;
		if (fents[i].path)
			err = add_file(d, dirs[0], dir, fents[i].path, &files[i]);
	}
	if (!err)
		err = add_lunit(d, off, files, (uint32_t)nfiles);

	/* The line program: rows where the state machine emits them. */
	{
		uint64_t addr = 0, file = 1;
		int64_t line = 1;

		while (!err && !prog.err && prog.p < prog.end) {
			unsigned op = (unsigned)rd_u(&prog, 1);
			uint32_t fid = file < nfiles ? files[file] : UINT32_MAX;

			if (op >= opcode_base) {
				unsigned adj = op - opcode_base;

				addr += (uint64_t)(adj / line_range) * min_inst;
				line += line_base + (int)(adj % line_range);
				err = line > 0 && line <= UINT32_MAX
					      ? add_row(d, addr, fid, (uint32_t)line)
					      : 0;
				continue;
			}
			switch (op) {
			case 0: { /* extended */
				uint64_t n = rd_uleb(&prog);
				const uint8_t *next = prog.p + n;
				unsigned sub;

				if (prog.err || n == 0 || n > (uint64_t)(prog.end - prog.p)) {
					prog.err = true;
					break;
				}
				sub = (unsigned)rd_u(&prog, 1);
				if (sub == 1) { /* end_sequence */
					err = add_row(d, addr, UINT32_MAX, 0);
					addr = 0;
					file = 1;
					line = 1;
				} else if (sub == 2 && (n == 5 || n == 9)) { /* set_address */
					addr = rd_u(&prog, (unsigned)n - 1);
				}
				prog.p = next;
				break;
			}
			case 1: /* copy */
				err = line > 0 && line <= UINT32_MAX
					      ? add_row(d, addr, fid, (uint32_t)line)
					      : 0;
				break;
			case 2: /* advance_pc */
				addr += rd_uleb(&prog) * min_inst;
				break;
			case 3: /* advance_line */
				line += rd_sleb(&prog);
				break;
			case 4: /* set_file */
				file = rd_uleb(&prog);
				break;
			case 8: /* const_add_pc */
				addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst;
				break;
			case 9: /* fixed_advance_pc */
				addr += rd_u(&prog, 2);
				break;
			default: /* operands we do not need: as many ULEBs as the header says */
				for (unsigned i = 0; i < std_len[op]; i++)
					rd_uleb(&prog);
			}
		}
	}
	return err;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* A sequence's end before a sequence starting at the same address. */
	if ((x->line == 0) != (y->line == 0))
		return x->line == 0 ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct cur dwlines__section(Elf *elf, size_t shstrndx, const char *name, int *err)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(n = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(n, name))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			/* Our cap before zlib's: a small section may claim to inflate to anything.
			 */
			if (!gelf_getchdr(scn, &ch) || ch.ch_size > DWLINES_MAX_SECTION ||
			    elf_compress(scn, 0, 0) < 0)
				break;
		} else if (sh.sh_size > DWLINES_MAX_SECTION) {
			*err = -EFBIG;
			break;
		}
		data = elf_getdata(scn, NULL);
		if (data && data->d_buf)
			return (struct cur){data->d_buf,
					    (const uint8_t *)data->d_buf + data->d_size, false};
		break;
	}
	return (struct cur){NULL, NULL, true};
}

/* The alternate file the link of elf names (DWARF 5's, else GNU's), or -1. */
static int find_alt(Elf *elf, size_t shstrndx, const char *path, const char *debug_dir)
{
	struct dwalt_link link;
	int err = 0, fd = -1;
	struct cur sec = dwlines__section(elf, shstrndx, ".debug_sup", &err);
	enum dwalt_section k = sec.p ? DWALT_SUP : DWALT_GNU;

	if (!sec.p)
		sec = dwlines__section(elf, shstrndx, ".gnu_debugaltlink", &err);
	if (!err && sec.p && !dwalt__parse(&link, sec.p, (size_t)(sec.end - sec.p), k) &&
	    dwalt__open(&fd, &link, path, debug_dir))
		fd = -1;
	return fd;
}

/* The sections of alternate file alt_fd a name or file name may be in (all absent on failure). */
static Elf *read_alt(int alt_fd, struct dwsecs *out)
{
	Elf *elf = alt_fd >= 0 ? elf_begin(alt_fd, ELF_C_READ, NULL) : NULL;
	size_t shstrndx;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->info = out->abbrev = out->str = (struct cur){NULL, NULL, true};
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		return elf;
	out->info = dwlines__section(elf, shstrndx, ".debug_info", &err);
	out->abbrev = dwlines__section(elf, shstrndx, ".debug_abbrev", &err);
	out->str = dwlines__section(elf, shstrndx, ".debug_str", &err);
	if (err) /* over a cap: none of it */
		out->info = out->abbrev = out->str = (struct cur){NULL, NULL, true};
	return elf;
}

/* The DWARF of fd (a debug file at path, NULL: unknown), its alternate file alt_fd's (-1: looked
 * for under debug_dir; NULL: not). */
static int open_elf(struct dwlines **out, int fd, const char *path, const char *debug_dir,
		    int alt_fd)
{
	struct dwlines *d = calloc(1, sizeof(*d));
	struct scratch *sc = malloc(sizeof(*sc));
	struct strsecs ss = {0};
	struct dwsecs alt;
	struct cur line;
	size_t shstrndx;
	Elf *elf = NULL, *alt_elf = NULL;
	int err = 0, own_fd = -1;

	*out = NULL;
	if (!d || !sc) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Read, not mapped: a file truncated while we read it must not SIGBUS us. */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if (alt_fd < 0 && debug_dir)
		alt_fd = own_fd = find_alt(elf, shstrndx, path, debug_dir);
	alt_elf = read_alt(alt_fd, &alt);
	ss.alt_str = alt.str;
	line = dwlines__section(elf, shstrndx, ".debug_line", &err);
	ss.line_base = line.p;
	ss.line_str = dwlines__section(elf, shstrndx, ".debug_line_str", &err);
	ss.str = dwlines__section(elf, shstrndx, ".debug_str", &err);
	ss.info = dwlines__section(elf, shstrndx, ".debug_info", &err);
	ss.abbrev = dwlines__section(elf, shstrndx, ".debug_abbrev", &err);
	if (err)
		goto cleanup;
	while (!line.err && line.p < line.end && !err)
		err = read_unit(d, &line, &ss, sc);
	if (err == -E2BIG)
		err = 0; /* at a cap: what was read serves */
	if (!err && !d->nrows)
		err = -ENOENT;
	if (!err) {
		struct dwsecs ds = {
			.info = ss.info,
			.abbrev = ss.abbrev,
			.str = ss.str,
			.line_str = ss.line_str,
			.str_offsets = dwlines__section(elf, shstrndx, ".debug_str_offsets", &err),
			.addr = dwlines__section(elf, shstrndx, ".debug_addr", &err),
			.ranges = dwlines__section(elf, shstrndx, ".debug_ranges", &err),
			.rnglists = dwlines__section(elf, shstrndx, ".debug_rnglists", &err),
			.alt_str = alt.str,
		};

		/* Sections over the cap: no inlined calls, the lines still serve. */
		err = err == -EFBIG ? 0
				    : dwinl__build(&d->inl, &ds, &alt, unit_file, d,
						   DWLINES_MAX_INLINE_BYTES);
	}
	if (err)
		goto cleanup;
	qsort(d->rows, d->nrows, sizeof(*d->rows), cmp_row);
	*out = d;
	d = NULL;
cleanup:
	if (elf)
		elf_end(elf);
	if (alt_elf)
		elf_end(alt_elf);
	if (own_fd >= 0)
		close(own_fd);
	free(sc);
	free(ss.dirs);
	dwlines__free(d);
	return err;
}

int dwlines__open_fd(struct dwlines **out, int fd, const char *debug_dir)
{
	return open_elf(out, fd, NULL, debug_dir, -1);
}

int dwlines__open_alt(struct dwlines **out, int fd, int alt_fd)
{
	return open_elf(out, fd, NULL, NULL, alt_fd);
}

int dwlines__open(struct dwlines **out, const char *path, const char *debug_dir)
{
	int err, fd = -1;

	*out = NULL;
	err = safe_open__at(&fd, -1, path, 0, DWLINES_MAX_BYTES, NULL);
	if (err)
		return err;
	err = open_elf(out, fd, path, debug_dir, -1);
	close(fd);
	return err;
}

void dwlines__free(struct dwlines *d)
{
	if (!d)
		return;
	free(d->rows);
	free(d->files);
	strarena__release(&d->names);
	free(d->units);
	free(d->ufiles);
	dwinl__release(&d->inl);
	free(d);
}

uint64_t dwlines__bytes(const struct dwlines *d)
{
	return d->cap * sizeof(*d->rows) + d->files_cap * sizeof(*d->files) + d->names.cap +
	       d->units_cap * sizeof(*d->units) + d->ufiles_cap * sizeof(*d->ufiles) +
	       dwinl__bytes(&d->inl);
}

int dwlines__lookup(struct dwlines *d, uint64_t vaddr, const char **file, int *line)
{
	size_t lo = 0, hi = d->nrows;
	const struct row *r;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->rows[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	r = &d->rows[lo - 1];
	/* Past a sequence's end, or a row of no known file: nothing says where vaddr is. */
	if (!r->line || r->file == UINT32_MAX || r->line > INT_MAX)
		return -ENOENT;
	*file = d->names.buf + d->files[r->file];
	*line = (int)r->line;
	return 0;
}

static const char *file_name(const struct dwlines *d, uint32_t id)
{
	return id < d->nfiles ? d->names.buf + d->files[id] : NULL;
}

int dwlines__inlined(struct dwlines *d, uint64_t vaddr, struct dwlines_frame *out, unsigned max,
		     unsigned *n)
{
	uint32_t calls[DWLINES_MAX_INLINE];
	struct dwlines_frame at = {NULL, NULL, 0};
	unsigned k, m = 0;

	*n = 0;
	if (!max)
		return 0;
	k = dwinl__lookup(&d->inl, vaddr, calls,
			  max - 1 < DWLINES_MAX_INLINE ? max - 1 : DWLINES_MAX_INLINE);
	if (!k)
		return -ENOENT;
	if (dwlines__lookup(d, vaddr, &at.file, &at.line))
		at = (struct dwlines_frame){NULL, NULL, 0};
	/* Each level's line is where the level inside it was called from. */
	for (unsigned i = 0; i < k; i++) {
		const struct dwinl_call *c = &d->inl.calls[calls[i]];

		if (c->name != DWINL_NONE) {
			at.name = d->inl.names.buf + c->name;
			out[m++] = at;
		} else {
			d->unnamed++;
		}
		at.file = file_name(d, c->call_file);
		at.line = c->call_line <= INT_MAX ? (int)c->call_line : 0;
	}
	at.name = NULL;
	out[m++] = at;
	*n = m;
	return 0;
}

uint64_t dwlines__unnamed(const struct dwlines *d)
{
	return d->unnamed;
}
