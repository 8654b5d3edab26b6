/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Interactive flame graph: one self-contained SVG file (inline style and script, nothing
 * fetched) written from the profile model.  Frames are rectangles whose widths are exactly
 * proportional to one sample type's values; the root ("all") spans the chart, processes are its
 * children, then each stack from its root function to its leaf.  Siblings are merged by
 * display name and laid out in name order.  Frames under a share of the total are folded into
 * one "other" frame per parent, counted in the notes.
 */
#ifndef PROF_SVG_H
#define PROF_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct profile;

#define SVG_WIDTH     1200 /* the picture's width in px */
#define SVG_MARGIN    10   /* left and right */
#define SVG_CHART     (SVG_WIDTH - 2 * SVG_MARGIN)
#define SVG_FRAME_H   16    /* one stack level */
#define SVG_MIN_SHARE 0.001 /* default: frames under 0.1 % of the total become "other" */

enum svg_kind {
	SVG_KIND_ROOT,
	SVG_KIND_PROCESS,
	SVG_KIND_NATIVE, /* user code with an address (symbolized or not) */
	SVG_KIND_KERNEL,
	SVG_KIND_INTERP, /* interpreter frames (Python, PHP, Ruby, Java): no address of their own */
	SVG_KIND_ALLOC,	 /* malloc-family functions */
	SVG_KIND_OTHER,	 /* merged narrow frames */
};

struct svg_frame {
	const char *name; /* display name (raw bytes of the target: escape before writing) */
	const char *file; /* source file, "" when unknown */
	int64_t line;	  /* 0: unknown or differing between the merged locations */
	int64_t value;
	uint32_t parent; /* index into frames; the root is 0 and its own parent */
	uint32_t depth;	 /* root 0, processes 1 */
	uint32_t merged; /* SVG_KIND_OTHER: how many frames it stands for */
	enum svg_kind kind;
	double x, width; /* px inside the chart: x from 0, total = SVG_CHART */
};

struct svg_layout {
	struct svg_frame *frames; /* pre-order: a parent before its children, siblings by name */
	uint32_t nframes;
	uint32_t max_depth; /* deepest frame's depth */
	int64_t total;	    /* the root's value */
	uint32_t merged;    /* frames folded into "other" frames (their subtrees not counted) */
	uint32_t skipped;   /* samples of a value <= 0 (not drawable), left out */
};

struct svg_opts {
	uint32_t type;	     /* sample type index (see profile__type_index) */
	bool icicle;	     /* root at the top */
	const char *cmdline; /* shown in the title; NULL: none */
	double min_share;    /* fold frames under this share of the total; 0: none */
	/* type was asked for (--svg-type): drawn even when it is an in-use type with next to
	 * nothing in use (else its alloc_ twin is: profile__shown_type) */
	bool exact_type;
};

/* Lays p's samples of value type `type` out; frames under min_share of the total are merged. */
int svg__layout(struct svg_layout **out, const struct profile *p, uint32_t type, double min_share);
void svg__layout_free(struct svg_layout *l);

/* Writes the SVG to f (not flushed or closed); 0 or a negative errno. */
int svg__write(const struct profile *p, FILE *f, const struct svg_opts *o);

/*
 * Writes at most max characters of s (NUL-terminated) as XML text, safe in element content and
 * in double- or single-quoted attributes: & < > " ' as entities; bytes that are not valid UTF-8,
 * control characters, surrogates and U+FFFE/U+FFFF (not XML characters) as U+FFFD.  Returns
 * the characters written (an invalid byte counts as one).
 */
size_t svg__escape(FILE *f, const char *s, size_t max);
/* How many characters svg__escape counts in s. */
size_t svg__chars(const char *s);

#endif /* PROF_SVG_H */
