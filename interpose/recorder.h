/* Per-stream regions and the table of distinct paths (observe mode).
 *
 * DESIGN: each stream has an open region: the signatures and captured parameter
 * bytes of the ops submitted since the stream's last region end, and their
 * running fingerprint. The stream -> region map is a fixed open-addressing table
 * whose slots are claimed with one compare-and-swap and never freed, so finding
 * a stream's region takes no lock; each region has its own mutex, which only
 * threads launching on the same stream (or a device-wide sync) contend for.
 * Ending a region looks its fingerprint up in the path table (one mutex: this
 * happens once per region, not per launch) and compares the signature arrays,
 * so a hash collision is counted, never merged. Streams beyond the table's size
 * share one overflow region (logged once). */
#ifndef GRAPE_INTERPOSE_RECORDER_H
#define GRAPE_INTERPOSE_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "graphcache/fingerprint.h"

/* Key of a stream handle as a launch names it: 0 means the legacy stream, or,
 * for a per-thread-default-stream call, this thread's own stream. Never 0. */
uintptr_t grape__stream_key(const void* stream, int ptds);

/* Appends op sig (with nbytes of captured parameters) to the region of stream
 * key. Ends the region first when it holds GRAPE_CHUNK ops.
 * @return 0, or -ENOMEM (the op is counted but not recorded). */
int grape__rec_op(uintptr_t key, const grape_op_sig_t* sig, const void* params, size_t nbytes);

/* The same in two steps, so that a launch's parameters are copied once,
 * straight into the region: reserve locks stream key's region and points *dst
 * at room for max_bytes (@return 0; -ENOMEM when out of memory, and then
 * nothing is held); commit appends the op with the nbytes (<= max_bytes)
 * written there and unlocks. */
int grape__rec_reserve(uintptr_t key, size_t max_bytes, void** handle, uint8_t** dst);
void grape__rec_commit(void* handle, const grape_op_sig_t* sig, size_t nbytes);

/* Ends the open region of one stream / of every stream (sync points). */
void grape__rec_end_stream(uintptr_t key);
void grape__rec_end_all(void);

typedef struct grape_path_info_s {
  uint64_t fp;
  uint32_t nops;
  uint64_t count;
  const grape_op_sig_t* sigs;   /* the path's ops (valid until grape__rec_reset) */
} grape_path_info_t;

typedef struct grape_rec_stats_s {
  uint64_t regions;      /* non-empty regions ended */
  uint64_t paths;        /* distinct paths among them */
  uint64_t ops;          /* ops recorded */
  uint64_t collisions;   /* equal fingerprints with different signatures */
} grape_rec_stats_t;

/* Totals and the n most frequent paths (count desc, then fingerprint) into top;
 * @return how many were written to top. */
size_t grape__rec_stats(grape_rec_stats_t* st, grape_path_info_t* top, size_t n);

/* Frees everything (tests), or forgets it without freeing (fork child: other
 * threads' locks may be held). */
void grape__rec_reset(int free_memory);

#endif
