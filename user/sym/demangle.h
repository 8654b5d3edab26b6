/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Display names for symbols: C++ (Itanium ABI, "_Z…") names demangled, others unchanged. */
#ifndef PROF_DEMANGLE_H
#define PROF_DEMANGLE_H

/*
 * *out = a malloc'd display name for name: demangled when it is a C++ name that demangles
 * (GCC clones too: "_Z3fooi.cold" -> "foo(int) [clone .cold]"), else a copy of name.
 * 0, or -ENOMEM.
 */
int demangle__name(char **out, const char *name);

#endif /* PROF_DEMANGLE_H */
