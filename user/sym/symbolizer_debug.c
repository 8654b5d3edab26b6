// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The symbolizer's side of DWARF: source lines and inlined calls of a frame; and of debuginfod:
 * which files to ask for, what to do with a file that arrives, and the results to redo with it.
 * The fetching itself is sym/debuginfod.c's, on its own thread.
 */
#include <errno.h>
#include <string.h>

#include "sym/debuginfod.h"
#include "sym/dwarf_lines.h"
#include "sym/dwbuild.h"
#include "sym/elf_file.h"
#include "sym/symbolizer_priv.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/strpool.h"

int symbolizer_want_debug(struct symbolizer *s, struct sym_file *f)
{
	enum elf_file_syms src;
	int err;

	if (!s->fetch || f->debug_asked || f->fixed || !f->build_id[0])
		return 0;
	src = elf_file__syms(f->elf);
	if (src == ELF_FILE_SYMS_SYMTAB || src == ELF_FILE_SYMS_DEBUG_FILE)
		return 0;
	f->debug_asked = true;
	err = dbgfetch__want(s->fetch, f->build_id);
	return err == -ENOMEM ? err : 0;
}

/* The calls inlined at vaddr into s->inl; out's file and line become the outermost's call site. */
static int inlined(struct symbolizer *s, struct dwlines *d, uint64_t vaddr, struct sym_result *out)
{
	struct dwlines_frame fr[SYM_MAX_INLINE + 1];
	uint64_t unnamed = dwlines__unnamed(d);
	unsigned n;

	if (s->no_inline || dwlines__inlined(d, vaddr, fr, SYM_MAX_INLINE + 1, &n))
		return 0;
	s->stats.inline_unnamed += dwlines__unnamed(d) - unnamed;
	out->file = fr[n - 1].file ? strpool__intern(s->pool, fr[n - 1].file) : NULL;
	out->line = fr[n - 1].line;
	if (fr[n - 1].file && !out->file)
		return -ENOMEM;
	for (unsigned k = 0; k + 1 < n; k++) {
		struct sym_result *r = &s->inl[k];

		*r = (struct sym_result){.line = fr[k].line, .inlined = true};
		r->system_name = strpool__intern(s->pool, fr[k].name);
		r->name = r->system_name ? symbolizer_display_name(s, r->system_name) : NULL;
		r->file = fr[k].file ? strpool__intern(s->pool, fr[k].file) : NULL;
		if (!r->name || (fr[k].file && !r->file))
			return -ENOMEM;
		s->ninl = k + 1;
	}
	return 0;
}

int symbolizer_line(struct symbolizer *s, struct sym_file *f, uint64_t vaddr,
		    struct sym_result *out)
{
	struct dwlines *d = symfiles__lines(&s->files, f);
	const char *file;
	int line;

	s->ninl = 0;
	if (!d)
		return 0;
	if (!dwlines__lookup(d, vaddr, &file, &line)) {
		out->file = strpool__intern(s->pool, file);
		out->line = line;
		if (!out->file)
			return -ENOMEM;
	}
	return inlined(s, d, vaddr, out);
}

unsigned symbolizer__inlined(const struct symbolizer *s, const struct sym_result *phys,
			     struct sym_result *out, unsigned max)
{
	unsigned n = s->ninl < max ? s->ninl : max;

	for (unsigned k = 0; k < n; k++) {
		out[k] = s->inl[k];
		out[k].map = phys->map;
	}
	return n;
}

unsigned symbolizer__debug_pending(const struct symbolizer *s)
{
	return s->fetch ? dbgfetch__pending(s->fetch) : 0;
}

void symbolizer__debug_finish(const struct symbolizer *s, unsigned ms)
{
	if (s->fetch)
		dbgfetch__finish(s->fetch, ms);
}

bool symbolizer__debug_arrived(const struct symbolizer *s)
{
	return (s->fetch && dbgfetch__arrived(s->fetch)) || dwbuild__ready(s->files.build);
}

void symbolizer__defer_dwarf(struct symbolizer *s)
{
	s->files.defer_lines = true;
}

void symbolizer__wait_dwarf(struct symbolizer *s)
{
	symfiles__wait_lines(&s->files);
}

bool symbolizer__dwarf_gathering(const struct symbolizer *s)
{
	return !dwbuild__is_open(s->files.build);
}

unsigned symbolizer__debug_timeout_ms(const struct symbolizer *s)
{
	return s->fetch ? dbgfetch__timeout_s(s->fetch) * 1000 : 0;
}

/* Build id bid's results may name better now: into the set symbolizer__debug_take hands out. */
static int add_bid(struct hashmap **bids, struct symbolizer *s, const char *raw)
{
	/* The results hold the pool's copy of the build id, if any is still held. */
	const char *bid = strpool__intern(s->pool, raw);
	void *v;

	if (!bid || (!*bids && hashmap__new(bids, sizeof(bid), 1)) ||
	    hashmap__upsert(*bids, &v, &bid, NULL))
		return -ENOMEM;
	return 0;
}

struct wanted_ctx {
	struct symbolizer *s;
	struct hashmap **bids;
};

static int wanted_read(void *ctx, const char *bid)
{
	struct wanted_ctx *w = ctx;

	return add_bid(w->bids, w->s, bid);
}

int symbolizer__debug_take(struct symbolizer *s, struct hashmap **bids)
{
	struct dbgfetch_file *files = NULL;
	size_t n = 0;
	int err;

	*bids = NULL;
	/* Files whose DWARF was wanted since (deferred): read now, their stacks redone. */
	err = symfiles__read_wanted(&s->files, wanted_read, &(struct wanted_ctx){s, bids});
	if (err || !s->fetch)
		return err;
	dbgfetch__take(s->fetch, &files, &n);
	for (size_t i = 0; i < n && !err; i++) {
		bool used;

		err = symfiles__debug_file(&s->files, files[i].build_id, files[i].path, &used);
		if (err && err != -ENOMEM) {
			/* Foreign bytes like a target's files: refused the same way, and counted.
			 */
			s->debug_refused++;
			pr_warn("debuginfod: debug file of build id %s not used: %s\n",
				files[i].build_id, strerror(-err));
			err = 0;
			continue;
		}
		if (err || !used)
			continue;
		err = add_bid(bids, s, files[i].build_id);
	}
	dbgfetch__free_files(files, n);
	return err;
}

int symbolizer__resolve_again(struct symbolizer *s, uint64_t addr, struct sym_result *io)
{
	const struct sym_mapping *map = io->map;
	struct sym_result r = {0};
	struct proc_map m;
	struct sym_file *f;
	uint64_t vaddr;
	bool defer;
	int err;

	s->ninl = 0;
	if (!map || !map->build_id[0])
		return 0;
	f = symfiles__find_build_id(&s->files, map->build_id);
	if (!f || f->state != FILE_LOADED)
		return 0;
	m = (struct proc_map){
		.start = map->start,
		.end = map->limit,
		.offset = map->offset,
		.path = map->path,
		.kind = MAP_FILE,
	};
	/* A redo is the later moment deferred DWARF waits for: read it now (a debug file that
	 * just arrived brings lines). */
	defer = s->files.defer_lines;
	s->files.defer_lines = false;
	err = symbolizer_file_symbol(s, &m, f, addr, &vaddr, &r);
	s->files.defer_lines = defer;
	if (!err && !r.name)
		err = symbolizer_offset_name(s, &m, f, addr, vaddr, &r);
	if (!err) {
		r.map = symbolizer_mapping(s, &m, f, f->has_symbols);
		err = r.map ? 0 : -ENOMEM;
	}
	if (!err)
		*io = r;
	return err;
}

const struct symbolizer_stats *symbolizer__stats(struct symbolizer *s)
{
	struct dbgfetch_stats d = {0};

	if (s->fetch)
		dbgfetch__stats(s->fetch, &d);
	s->stats.debuginfod_fetched = d.fetched;
	s->stats.debuginfod_missing = d.missing;
	s->stats.debuginfod_timeouts = d.timeouts;
	s->stats.debuginfod_failed = d.failed + s->debug_refused;
	return &s->stats;
}
