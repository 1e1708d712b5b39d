/* The outputs of an interrupted process (interrupt.c): SIGINT, SIGTERM and
 * SIGHUP, left at their default action by the program, still leave the
 * report and the trace of what ran. */
#ifndef GRAPE_INTERPOSE_INTERRUPT_H
#define GRAPE_INTERPOSE_INTERRUPT_H

/* Takes the signals and starts the writer thread, once per process, when
 * the process has outputs to write. Called at the process's first CUDA call. */
void grape__interrupt_arm(void);

/* Writes the trace, then the report, once per process: from the destructor
 * or from the writer thread of an interrupted process, whichever comes
 * first (the other waits for it). */
void grape__outputs_write(void);

/* The signal that is ending the process, or 0 (for the report). */
int grape__interrupt_signal(void);

/* In a fork child: forgets the parent's writer and state. */
void grape__interrupt_reset_child(void);

#endif
