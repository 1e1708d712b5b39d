/* Output files of the shim (their names: grape__option_path): the check at
 * start, and placing a finished file without replacing another (outfile.c). */
#ifndef GRAPE_INTERPOSE_OUTFILE_H
#define GRAPE_INTERPOSE_OUTFILE_H

#include <stddef.h>

#include "options.h"

/* 0 when a file named path can be created (its folder exists and is
 * writable, and path is not a folder); else a negative errno, with the reason
 * in why. */
int grape__outfile_writable(const char* path, char* why, size_t cap);

/* At start: creates the folders of the name option o (GRAPE_REPORT,
 * GRAPE_TRACE) gives this process, then warns once, naming the variable, the
 * user's pattern and the expanded path, when the file cannot be written. */
void grape__outfile_check(grape_option_t o);

/* Puts the finished file tmp (in final's folder) at final without replacing
 * a file there: at the next free numbered name (x.1.json, ...) when final is
 * taken, with a warning that says so under the label what; with
 * GRAPE_OVERWRITE=yes, over it. The name used goes to used (cap bytes).
 * @return 0, or a negative errno (tmp is left to the caller). */
int grape__outfile_place(const char* what, const char* tmp, const char* final, char* used,
                         size_t cap);

#endif
