/* File name patterns of the options: GRAPE_LOG_FILE and GRAPE_REPORT name one
 * file per process with "%p" (the pid; "%%" is a '%'). The shim expands
 * them; `grape run` finds every process's report by matching names against
 * the pattern it gave. Part of the layer the shim and the CLI both link (see
 * options.h).
 *
 * DESIGN: one definition of the syntax for the side that writes and the side
 * that looks, so that they cannot disagree on a name. GRAPE_TRACE's pattern
 * also knows "%r" (the rank) and is expanded by replay/'s
 * grape_trace_expand_path, which the trace API offers to every writer. */
#ifndef GRAPE_INTERPOSE_PATTERN_H
#define GRAPE_INTERPOSE_PATTERN_H

#include <stddef.h>

/* Copies pattern into out, replacing each "%p" by pid and "%%" by "%" (any
 * other '%' stays). Allocates nothing (a fork child's mark uses it).
 * @return 0, or -ENAMETOOLONG when it does not fit. */
int grape__pattern_expand(const char* pattern, long pid, char* out, size_t cap);

/* 1 when pattern names one file per process (it holds a "%p"), else 0. */
int grape__pattern_per_process(const char* pattern);

/* 1 when name is what pattern expands to for some pid (decimal digits, the
 * same at every "%p"), else 0. */
int grape__pattern_match(const char* pattern, const char* name);

#endif
