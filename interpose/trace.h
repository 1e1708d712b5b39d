/* The shim's side of traces: at exit, what the shim recorded is handed to
 * replay/'s trace writer (grape/trace.h) and written to GRAPE_TRACE. */
#ifndef GRAPE_INTERPOSE_TRACE_H
#define GRAPE_INTERPOSE_TRACE_H

/* Writes the trace when GRAPE_TRACE is set (nothing otherwise). Called once,
 * from the shim's destructor, after every region has ended. A failure is
 * logged once and never reaches the program. @return 0 or a negative errno. */
int grape__trace_write(void);

/* The file the trace was written to (a numbered name when GRAPE_TRACE's was
 * taken), or NULL before or without one. */
const char* grape__trace_written(void);

#endif
