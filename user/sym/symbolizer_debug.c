// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The symbolizer's side of debuginfod: which files to ask for, what to do with a file that
 * arrives, and the results to redo with it.  The fetching itself is sym/debuginfod.c's, on its
 * own thread.
 */
#include <errno.h>
#include <string.h>

#include "sym/debuginfod.h"
#include "sym/dwarf_lines.h"
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

int symbolizer_line(struct symbolizer *s, struct sym_file *f, uint64_t vaddr,
		    struct sym_result *out)
{
	struct dwlines *d = symfiles__lines(&s->files, f);
	const char *file;
	int line;

	if (!d || dwlines__lookup(d, vaddr, &file, &line))
		return 0;
	out->file = strpool__intern(s->pool, file);
	out->line = line;
	return out->file ? 0 : -ENOMEM;
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
	return s->fetch && dbgfetch__arrived(s->fetch);
}

unsigned symbolizer__debug_timeout_ms(const struct symbolizer *s)
{
	return s->fetch ? dbgfetch__timeout_s(s->fetch) * 1000 : 0;
}

int symbolizer__debug_take(struct symbolizer *s, struct hashmap **bids)
{
	struct dbgfetch_file *files = NULL;
	size_t n = 0;
	int err = 0;

	*bids = NULL;
	if (!s->fetch)
		return 0;
	dbgfetch__take(s->fetch, &files, &n);
	for (size_t i = 0; i < n && !err; i++) {
		const char *bid;
		bool used;
		void *v;

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
		/* The results hold the pool's copy of the build id, if any is still held. */
		bid = strpool__intern(s->pool, files[i].build_id);
		if (!bid || (!*bids && hashmap__new(bids, sizeof(bid), 1)) ||
		    hashmap__upsert(*bids, &v, &bid, NULL))
			err = -ENOMEM;
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
	int err;

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
	err = symbolizer_file_symbol(s, &m, f, addr, &vaddr, &r);
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
