// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/quantity.h"
#include "profile/profile.h"
#include "util/hashmap.h"
#include "util/strpool.h"

/* ---- escaping ---- */

/* Decodes one UTF-8 character at s: returns the bytes it takes (1 for an invalid byte, *cp then
 * -1).  Overlong forms, surrogates and values past U+10FFFF are invalid. */
static size_t utf8_next(const unsigned char *s, int32_t *cp)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;
	int32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		*cp = -1;
		return 1;
	}
	/* Only the second byte has the narrowed range; a NUL stops here as any non-continuation. */
	for (size_t i = 1; i < n; i++) {
		unsigned char b = s[i];

		if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) {
			*cp = -1;
			return 1;
		}
		v = (v << 6) | (b & 0x3f);
	}
	*cp = v;
	return n;
}

/* What XML 1.0 allows, less the controls a name has no use for (tab and newlines included:
 * they would not survive attribute normalization anyway). */
static bool xml_char(int32_t cp)
{
	return (cp >= 0x20 && cp < 0x7f) || (cp >= 0xa0 && cp <= 0xd7ff) ||
	       (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

size_t svg__escape(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p && n < max) {
		int32_t cp;
		size_t len = utf8_next(p, &cp);

		switch (cp) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			if (xml_char(cp))
				fwrite(p, 1, len, f);
			else
				fputs("\xef\xbf\xbd", f); /* U+FFFD */
		}
		p += len;
		n++;
	}
	return n;
}

size_t svg__chars(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p) {
		int32_t cp;

		p += utf8_next(p, &cp);
		n++;
	}
	return n;
}

/* ---- the tree ---- */

struct node {
	const char *name; /* interned: equal names, equal pointers */
	const char *file;
	int64_t line;
	int64_t value;
	uint32_t parent, first_child, next_sibling; /* 0: none (the root is never a child) */
	enum svg_kind kind;
};

struct tree {
	struct node *nodes;
	uint32_t n, cap;
	struct hashmap *children; /* struct child_key -> uint32_t node index */
	struct strpool *names;
};

struct child_key {
	uint64_t parent;
	uint64_t name; /* the interned pointer */
};

static int tree_child(struct tree *t, uint32_t *out, uint32_t parent, const char *name,
		      enum svg_kind kind, const char *file, int64_t line)
{
	struct child_key key = {.parent = parent, .name = (uint64_t)(uintptr_t)name};
	uint32_t *slot;
	bool created;
	struct node *c;
	int err;

	err = hashmap__upsert(t->children, (void **)&slot, &key, &created);
	if (err)
		return err;
	if (!created) {
		c = &t->nodes[*slot];
		/* One name, several lines (other call sites, other addresses): no single line. */
		if (c->line != line || strcmp(c->file, file))
			c->line = 0;
		*out = *slot;
		return 0;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct node *nn = realloc(t->nodes, cap * sizeof(*nn));

		if (!nn) {
			hashmap__delete(t->children, &key);
			return -ENOMEM;
		}
		t->nodes = nn;
		t->cap = cap;
	}
	*slot = t->n;
	c = &t->nodes[t->n];
	*c = (struct node){
		.name = name, .file = file, .line = line, .parent = parent, .kind = kind};
	c->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = t->n;
	*out = t->n++;
	return 0;
}

static bool is_allocator(const char *name)
{
	static const char *const fns[] = {
		"malloc",
		"calloc",
		"realloc",
		"reallocarray",
		"free",
		"posix_memalign",
		"aligned_alloc",
		"memalign",
		"valloc",
		"pvalloc",
		"cfree",
		"operator new",
		"operator new[]",
		"operator delete",
		"operator delete[]",
		"_Znwm",
		"_Znam",
		"_ZdlPv",
		"_ZdaPv",
	};
	size_t n;

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		n = strlen(fns[i]);
		/* "operator new(unsigned long)": the demangled name carries its arguments. */
		if (!strncmp(name, fns[i], n) && (!name[n] || name[n] == '('))
			return true;
	}
	return false;
}

static enum svg_kind location_kind(const struct profile *p, uint32_t loc_id, const char *name)
{
	enum profile_frame_kind k = profile__location_kind(p, loc_id);

	if (k == PROFILE_FRAME_KERNEL)
		return SVG_KIND_KERNEL;
	if (is_allocator(name))
		return SVG_KIND_ALLOC;
	return k == PROFILE_FRAME_INTERP ? SVG_KIND_INTERP : SVG_KIND_NATIVE;
}

struct loc_info {
	const char *name, *file;
	int64_t line;
	enum svg_kind kind;
};

static int loc_infos(const struct profile *p, struct tree *t, struct loc_info **out)
{
	struct loc_info *li = calloc(p->nlocations + 1, sizeof(*li));
	char buf[256];

	if (!li)
		return -ENOMEM;
	for (uint32_t id = 1; id <= p->nlocations; id++) {
		const struct profile_location *loc = &p->locations[id - 1];
		const struct profile_function *fn =
			loc->function_id ? &p->functions[loc->function_id - 1] : NULL;

		li[id].name =
			strpool__intern(t->names, profile__location_name(p, id, buf, sizeof(buf)));
		li[id].file = strpool__intern(t->names, fn && fn->file ? fn->file : "");
		if (!li[id].name || !li[id].file) {
			free(li);
			return -ENOMEM;
		}
		li[id].line = fn && *li[id].file ? loc->line : 0;
		li[id].kind = location_kind(p, id, li[id].name);
	}
	*out = li;
	return 0;
}

static int tree_build(struct tree *t, const struct profile *p, uint32_t type, uint32_t *skipped)
{
	struct loc_info *li = NULL;
	int err;

	t->cap = 64;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	err = hashmap__new(&t->children, sizeof(struct child_key), sizeof(uint32_t));
	if (!err)
		err = strpool__new(&t->names);
	if (err)
		return err;
	t->nodes[0] = (struct node){.name = "all", .file = "", .kind = SVG_KIND_ROOT};
	t->n = 1;
	err = loc_infos(p, t, &li);
	if (err)
		return err;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const char *proc = s->process && *s->process ? s->process
				   : s->comm && *s->comm     ? s->comm
							     : "[unknown]";
		int64_t v = s->values[type];
		uint32_t node;

		if (v <= 0) {
			*skipped += v < 0;
			continue;
		}
		t->nodes[0].value += v;
		proc = strpool__intern(t->names, proc);
		if (!proc) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = tree_child(t, &node, 0, proc, SVG_KIND_PROCESS, "", 0);
		if (err)
			goto cleanup;
		t->nodes[node].value += v;
		/* loc_ids are leaf first; the graph grows from the root. */
		for (uint32_t k = s->nlocs; k-- > 0;) {
			uint32_t id = s->loc_ids[k];
			const struct loc_info *l = id && id <= p->nlocations ? &li[id] : &li[0];

			if (!l->name) { /* an invalid id: profile__location_name says so */
				err = -EINVAL;
				goto cleanup;
			}
			err = tree_child(t, &node, node, l->name, l->kind, l->file, l->line);
			if (err)
				goto cleanup;
			t->nodes[node].value += v;
		}
	}
cleanup:
	free(li);
	return err;
}

static void tree_free(struct tree *t)
{
	free(t->nodes);
	hashmap__free(t->children);
	strpool__free(t->names);
}

/* ---- layout ---- */

struct layout_ctx {
	const struct tree *t;
	struct svg_layout *l;
	uint32_t cap;
	int64_t threshold; /* values under it are folded */
	double scale;	   /* px per unit of value */
	const char *other; /* the "other" frames' name */
};

static int frame_add(struct layout_ctx *c, uint32_t *out, const struct svg_frame *f)
{
	struct svg_layout *l = c->l;

	if (l->nframes == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		struct svg_frame *nf = realloc(l->frames, cap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		l->frames = nf;
		c->cap = cap;
	}
	l->frames[l->nframes] = *f;
	if (f->depth > l->max_depth)
		l->max_depth = f->depth;
	*out = l->nframes++;
	return 0;
}

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct tree *t = arg;

	return strcmp(t->nodes[*(const uint32_t *)a].name, t->nodes[*(const uint32_t *)b].name);
}

/* Lays out node's children inside frame `fi` (already placed), recursively. */
static int layout_children(struct layout_ctx *c, uint32_t node, uint32_t fi)
{
	const struct tree *t = c->t;
	uint32_t nkids = 0, *kids, merged = 0, depth = c->l->frames[fi].depth + 1;
	int64_t before = 0, other = 0;
	double x0 = c->l->frames[fi].x;
	int err = 0;

	for (uint32_t k = t->nodes[node].first_child; k; k = t->nodes[k].next_sibling)
		nkids++;
	if (!nkids)
		return 0;
	kids = malloc(nkids * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	nkids = 0;
	for (uint32_t k = t->nodes[node].first_child; k; k = t->nodes[k].next_sibling)
		kids[nkids++] = k;
	qsort_r(kids, nkids, sizeof(*kids), cmp_child, (void *)t);
	for (uint32_t i = 0; i < nkids; i++) {
		const struct node *n = &t->nodes[kids[i]];
		uint32_t ci;

		if (n->value < c->threshold) {
			other += n->value;
			merged++;
			continue;
		}
		/* From the value before it, not by adding widths: no rounding drift. */
		err = frame_add(c, &ci,
				&(struct svg_frame){
					.name = n->name,
					.file = n->file,
					.line = n->line,
					.value = n->value,
					.parent = fi,
					.depth = depth,
					.kind = n->kind,
					.x = x0 + (double)before * c->scale,
					.width = (double)n->value * c->scale,
				});
		if (!err)
			err = layout_children(c, kids[i], ci);
		if (err)
			goto cleanup;
		before += n->value;
	}
	if (merged) {
		uint32_t ci;

		err = frame_add(c, &ci,
				&(struct svg_frame){
					.name = c->other,
					.file = "",
					.value = other,
					.parent = fi,
					.depth = depth,
					.merged = merged,
					.kind = SVG_KIND_OTHER,
					.x = x0 + (double)before * c->scale,
					.width = (double)other * c->scale,
				});
		c->l->merged += merged;
	}
cleanup:
	free(kids);
	return err;
}

/* The layout keeps pointers into the tree's names: both are freed together. */
struct layout_priv {
	struct svg_layout l;
	struct tree t;
};

int svg__layout(struct svg_layout **out, const struct profile *p, uint32_t type, double min_share)
{
	struct layout_priv *lp = calloc(1, sizeof(*lp));
	struct layout_ctx c = {.other = "other"};
	uint32_t root;
	int err;

	if (!lp)
		return -ENOMEM;
	if (type >= p->ntypes && p->nsamples) {
		err = -EINVAL;
		goto cleanup;
	}
	err = tree_build(&lp->t, p, type, &lp->l.skipped);
	if (err)
		goto cleanup;
	c.t = &lp->t;
	c.l = &lp->l;
	lp->l.total = lp->t.nodes[0].value;
	c.scale = lp->l.total ? (double)SVG_CHART / (double)lp->l.total : 0;
	/* Rounded up: "under the share" means strictly less than share x total. */
	c.threshold = min_share > 0 ? (int64_t)((double)lp->l.total * min_share) : 0;
	if (min_share > 0 && (double)c.threshold < (double)lp->l.total * min_share)
		c.threshold++;
	err = frame_add(&c, &root,
			&(struct svg_frame){.name = "all",
					    .file = "",
					    .value = lp->l.total,
					    .kind = SVG_KIND_ROOT,
					    .width = lp->l.total ? SVG_CHART : 0});
	if (!err)
		err = layout_children(&c, 0, root);
cleanup:
	if (err) {
		svg__layout_free(&lp->l);
		return err;
	}
	*out = &lp->l;
	return 0;
}

void svg__layout_free(struct svg_layout *l)
{
	struct layout_priv *lp = (struct layout_priv *)l;

	if (!l)
		return;
	free(l->frames);
	tree_free(&lp->t);
	free(lp);
}

/* ---- the picture ---- */

static const char *const kind_names[] = {
	[SVG_KIND_ROOT] = "root",     [SVG_KIND_PROCESS] = "process", [SVG_KIND_NATIVE] = "native",
	[SVG_KIND_KERNEL] = "kernel", [SVG_KIND_INTERP] = "interp",   [SVG_KIND_ALLOC] = "alloc",
	[SVG_KIND_OTHER] = "other",
};

/* A shade per name (stable from run to run) within the kind's colour family. */
static void fill_color(char *buf, size_t len, enum svg_kind kind, const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name));
	double v = (double)(h % 1000) / 1000.0;
	int r, g, b;

	switch (kind) {
	case SVG_KIND_KERNEL: /* light orange */
		r = 240, g = 175 + (int)(40 * v), b = 70 + (int)(40 * v);
		break;
	case SVG_KIND_INTERP: /* teal */
		r = 60 + (int)(60 * v), g = 165 + (int)(60 * v), b = 140 + (int)(70 * v);
		break;
	case SVG_KIND_ALLOC: /* violet */
		r = 165 + (int)(45 * v), g = 100 + (int)(50 * v), b = 225 + (int)(30 * v);
		break;
	case SVG_KIND_OTHER:
		r = g = b = 175;
		break;
	case SVG_KIND_ROOT:
	case SVG_KIND_PROCESS:
		r = g = b = 200 + (int)(30 * v);
		break;
	case SVG_KIND_NATIVE:
	default: /* reds: the classic flame, kept apart from the kernel's orange */
		r = 200 + (int)(55 * v), g = 50 + (int)(70 * v), b = 40 + (int)(30 * v);
		break;
	}
	snprintf(buf, len, "rgb(%d,%d,%d)", r, g, b);
}

static const char style[] = "<style type=\"text/css\"><![CDATA[\n"
			    "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
			    "#head text { font-size: 13px; }\n"
			    "#head #t0 { font-size: 16px; font-weight: bold; }\n"
			    "g.f text { pointer-events: none; font-size: 11px; }\n"
			    "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
			    ".btn { fill: #1a5fb4; cursor: pointer; text-decoration: underline; }\n"
			    "]]></style>\n";

/* Zoom (click a frame; click "all" or Reset zoom to undo), search (a regular expression over
 * the names: matches turn magenta, their share of the total is shown), details on hover.  The
 * rectangles carry their unzoomed place in data-x / data-w, so every zoom starts from it. */
static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function () {\n"
	"  'use strict';\n"
	"  var W = %d, M = %d, CW = 7;\n"
	"  var gs = document.querySelectorAll('g.f'), fs = [], byId = {};\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.querySelector('rect');\n"
	"    var f = {g: g, r: r, t: g.querySelector('text'), x: +r.getAttribute('data-x'),\n"
	"      w: +r.getAttribute('data-w'), d: +g.getAttribute('data-d'), p: "
	"g.getAttribute('data-p'),\n"
	"      n: g.getAttribute('data-n'), fill: r.getAttribute('fill')};\n"
	"    fs.push(f); byId[g.id] = f;\n"
	"  }\n"
	"  var details = document.getElementById('details');\n"
	"  var matched = document.getElementById('matched');\n"
	"  var reset = document.getElementById('reset');\n"
	"  var clear = document.getElementById('clear');\n"
	"  function label(f, x, w) {\n"
	"    var n = Math.floor((w - 6) / CW), s = f.n;\n"
	"    if (s.length > n) s = n >= 3 ? s.slice(0, n - 2) + '..' : '';\n"
	"    f.t.textContent = s;\n"
	"    f.t.setAttribute('x', (M + x + 3).toFixed(2));\n"
	"  }\n"
	"  function zoom(z) {\n"
	"    var zx = z ? z.x : 0, zw = z ? z.w : W, s = zw > 0 ? W / zw : 1, anc = {}, e = 1e-6;\n"
	"    for (var a = z; a && a.p; a = byId[a.p]) anc[a.p] = true;\n"
	"    fs.forEach(function (f) {\n"
	"      var x, w, show;\n"
	"      if (anc[f.g.id]) { x = 0; w = W; show = true; }\n"
	"      else { x = (f.x - zx) * s; w = f.w * s;\n"
	"        show = !z || (f.d >= z.d && f.x >= zx - e && f.x + f.w <= zx + zw + e); }\n"
	"      f.g.style.display = show ? '' : 'none';\n"
	"      f.g.style.opacity = anc[f.g.id] ? '0.6' : '';\n"
	"      if (!show) return;\n"
	"      f.r.setAttribute('x', (M + x).toFixed(4));\n"
	"      f.r.setAttribute('width', Math.max(w, 0).toFixed(4));\n"
	"      label(f, x, w);\n"
	"    });\n"
	"    reset.style.display = z ? '' : 'none';\n"
	"  }\n"
	"  function search(re) {\n"
	"    var iv = [];\n"
	"    fs.forEach(function (f) {\n"
	"      var m = re !== null && f.d > 0 && re.test(f.n);\n"
	"      f.r.setAttribute('fill', m ? 'rgb(230,0,230)' : f.fill);\n"
	"      if (m) iv.push([f.x, f.x + f.w]);\n"
	"    });\n"
	"    /* A match inside a match is counted once: the union of their spans. */\n"
	"    iv.sort(function (a, b) { return a[0] - b[0]; });\n"
	"    var sum = 0, end = -1;\n"
	"    iv.forEach(function (v) {\n"
	"      if (v[0] > end) { sum += v[1] - v[0]; end = v[1]; }\n"
	"      else if (v[1] > end) { sum += v[1] - end; end = v[1]; }\n"
	"    });\n"
	"    matched.textContent = re === null ? '' : 'Matched: ' + (W > 0 ? 100 * sum / W : "
	"0).toFixed(2) + '%%';\n"
	"    clear.style.display = re === null ? 'none' : '';\n"
	"  }\n"
	"  document.documentElement.addEventListener('click', function (ev) {\n"
	"    var t = ev.target, g = t.closest ? t.closest('g.f') : null;\n"
	"    if (t.id === 'reset') zoom(null);\n"
	"    else if (t.id === 'clear') search(null);\n"
	"    else if (t.id === 'search') {\n"
	"      var q = window.prompt('Search (regular expression)', '');\n"
	"      if (q) { try { search(new RegExp(q)); } catch (err) { matched.textContent = 'bad "
	"expression'; } }\n"
	"    } else if (g) zoom(g.id === 'f0' ? null : byId[g.id]);\n"
	"  });\n"
	"  document.documentElement.addEventListener('mouseover', function (ev) {\n"
	"    var g = ev.target.closest ? ev.target.closest('g.f') : null;\n"
	"    details.textContent = g ? g.querySelector('title').textContent.split('\\n').join('  "
	"') : '';\n"
	"  });\n"
	"  zoom(null);\n"
	"  search(null);\n"
	"  /* #s=REGEX&z=ID in the address: a search and a zoom to share (and to test). */\n"
	"  location.hash.slice(1).split('&').forEach(function (kv) {\n"
	"    var v = decodeURIComponent(kv.slice(2));\n"
	"    if (kv.indexOf('s=') === 0 && v) { try { search(new RegExp(v)); } catch (err) { "
	"matched.textContent = 'bad expression'; } }\n"
	"    if (kv.indexOf('z=') === 0 && byId[v]) zoom(v === 'f0' ? null : byId[v]);\n"
	"  });\n"
	"})();\n"
	"]]></script>\n";

static void write_frame(FILE *f, const struct profile *p, const struct svg_layout *l,
			const struct svg_opts *o, uint32_t i, int top)
{
	const struct svg_frame *fr = &l->frames[i];
	const char *unit = p->ntypes ? p->types[o->type].unit : "";
	uint32_t level = o->icicle ? fr->depth : l->max_depth - fr->depth;
	double y = top + (double)level * SVG_FRAME_H;
	char q[QUANTITY_MAX], color[48];
	size_t fits, chars;

	fill_color(color, sizeof(color), fr->kind, fr->name);
	fprintf(f, "<g class=\"f\" id=\"f%" PRIu32 "\" data-d=\"%" PRIu32 "\" data-k=\"%s\"", i,
		fr->depth, kind_names[fr->kind]);
	if (i)
		fprintf(f, " data-p=\"f%" PRIu32 "\"", fr->parent);
	fprintf(f, " data-v=\"%" PRId64 "\" data-n=\"", fr->value);
	svg__escape(f, fr->name, SIZE_MAX);
	fputs("\"><title>", f);
	svg__escape(f, fr->name, SIZE_MAX);
	fprintf(f, "\n%s (%.2f%%)", quantity__format(q, sizeof(q), fr->value, unit, false),
		l->total ? 100.0 * (double)fr->value / (double)l->total : 0.0);
	if (fr->merged)
		fprintf(f, "\n%" PRIu32 " frame%s under the threshold", fr->merged,
			fr->merged == 1 ? "" : "s");
	if (*fr->file) {
		fputc('\n', f);
		svg__escape(f, fr->file, SIZE_MAX);
		if (fr->line)
			fprintf(f, ":%" PRId64, fr->line);
	}
	fprintf(f,
		"</title><rect x=\"%.4f\" y=\"%.1f\" width=\"%.4f\" height=\"%d\" rx=\"2\" "
		"data-x=\"%.4f\" data-w=\"%.4f\" fill=\"%s\"/><text x=\"%.2f\" y=\"%.1f\">",
		SVG_MARGIN + fr->x, y, fr->width, SVG_FRAME_H - 1, fr->x, fr->width, color,
		SVG_MARGIN + fr->x + 3, y + SVG_FRAME_H - 4);
	/* The label as the script draws it, for viewers without scripts. */
	fits = fr->width > 6 ? (size_t)((fr->width - 6) / 7) : 0;
	chars = svg__chars(fr->name);
	if (chars <= fits) {
		svg__escape(f, fr->name, SIZE_MAX);
	} else if (fits >= 3) {
		svg__escape(f, fr->name, fits - 2);
		fputs("..", f);
	}
	fputs("</text></g>\n", f);
}

/* The type drawn when none was asked for: profile__shown_type's (*inuse: its in-use total when it
 * fell back to the alloc_ twin, else -1). */
static uint32_t drawn_type(const struct profile *p, const struct svg_opts *o, int64_t *inuse)
{
	*inuse = -1;
	return o->exact_type ? o->type : profile__shown_type(p, o->type, inuse);
}

static void write_head(FILE *f, const struct profile *p, const struct svg_layout *l,
		       const struct svg_opts *o, uint32_t from, int64_t inuse)
{
	const char *type = p->ntypes ? p->types[o->type].type : "none";
	const char *unit = p->ntypes ? p->types[o->type].unit : "";
	char q[QUANTITY_MAX];
	unsigned drops = 0;

	fputs("<g id=\"head\">\n<text id=\"t0\" x=\"10\" y=\"20\">", f);
	svg__escape(f, p->mode, SIZE_MAX);
	fputs(" profile: ", f);
	svg__escape(f, type, SIZE_MAX);
	fputs(" (", f);
	svg__escape(f, unit, SIZE_MAX);
	fprintf(f, "), total %s", quantity__format(q, sizeof(q), l->total, unit, false));
	if (p->duration_nanos)
		fprintf(f, ", %.2f s", (double)p->duration_nanos / 1e9);
	if (inuse >= 0) {
		fputs("; drawn instead of ", f);
		svg__escape(f, p->types[from].type, SIZE_MAX);
		fprintf(f, " (%s, under %g%% of it: freed while attached)",
			quantity__format(q, sizeof(q), inuse, p->types[from].unit, false),
			PROFILE_INUSE_TINY * 100);
	}
	fputs("</text>\n<text id=\"t1\" x=\"10\" y=\"38\">command: ", f);
	svg__escape(f, o->cmdline && *o->cmdline ? o->cmdline : "(unknown)", SIZE_MAX);
	fputs("</text>\n<text id=\"t2\" x=\"10\" y=\"56\">", f);
	/* The losses, as the text report lists them: non-zero, bookkeeping left out. */
	for (uint32_t i = 0; i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];

		if (!c->value || !profile_counter__is_drop(c))
			continue;
		fputs(drops++ ? ", " : "drops: ", f);
		svg__escape(f, c->name, SIZE_MAX);
		fprintf(f, "=%" PRIu64, c->value);
	}
	if (!drops)
		fputs("no drops", f);
	if (l->merged)
		fprintf(f, "; %" PRIu32 " frame%s under %.2g%% of the total merged into \"other\"",
			l->merged, l->merged == 1 ? "" : "s", o->min_share * 100);
	if (l->skipped)
		fprintf(f, "; %" PRIu32 " sample%s of negative value left out", l->skipped,
			l->skipped == 1 ? "" : "s");
	fputs("</text>\n", f);
	fprintf(f,
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"20\">Search</text>\n"
		"<text id=\"clear\" class=\"btn\" x=\"%d\" y=\"38\">Clear</text>\n"
		"<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"56\">Reset zoom</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"74\"></text>\n",
		SVG_WIDTH - 110, SVG_WIDTH - 110, SVG_WIDTH - 110, SVG_WIDTH - 150);
	fputs("<text id=\"legend\" x=\"10\" y=\"74\">colours: native (red), kernel "
	      "(orange), interpreter (teal), allocator (violet), other (grey)</text>\n</g>\n",
	      f);
}

int svg__write(const struct profile *p, FILE *f, const struct svg_opts *o)
{
	const int top = 90; /* below the head */
	struct svg_layout *l = NULL;
	struct svg_opts drawn = *o;
	uint32_t drawn_from = o->type;
	int64_t inuse = -1;
	int height, err;

	if (o->type >= p->ntypes && p->ntypes)
		return -EINVAL;
	if (p->ntypes)
		drawn.type = drawn_type(p, o, &inuse);
	o = &drawn;
	err = svg__layout(&l, p, o->type, o->min_share);
	if (err)
		return err;
	height = top + (int)(l->max_depth + 1) * SVG_FRAME_H + 30;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fdfdf6\"/>\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fputs(style, f);
	write_head(f, p, l, o, drawn_from, inuse);
	fputs("<g id=\"frames\">\n", f);
	for (uint32_t i = 0; l->total && i < l->nframes; i++)
		write_frame(f, p, l, o, i, top);
	fputs("</g>\n", f);
	if (!l->total)
		fprintf(f, "<text x=\"10\" y=\"%d\">no samples</text>\n", top + 12);
	fprintf(f, "<text id=\"details\" x=\"10\" y=\"%d\"></text>\n", height - 10);
	fprintf(f, script, SVG_CHART, SVG_MARGIN);
	fputs("</svg>\n", f);
	err = ferror(f) ? -EIO : 0;
	svg__layout_free(l);
	return err;
}
