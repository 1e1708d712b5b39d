/* errcap.h: captures what a test's process writes to stderr (fd 2) between
 * two calls, to check the lines the sim prints. */
#ifndef GRAPE_TESTS_ERRCAP_H
#define GRAPE_TESTS_ERRCAP_H

/* Redirects fd 2 to a temporary file; returns a token for errcap_end, or -1. */
int errcap_begin(void);

/* Restores fd 2 and returns what was written meanwhile (malloc'd, NUL-ended;
 * "" on failure). */
char* errcap_end(int token);

/* How many times needle occurs in text. */
int errcap_count(const char* text, const char* needle);

#endif
