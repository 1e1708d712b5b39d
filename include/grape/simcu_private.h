/* The simulated device's private export table: what the sim's driver offers
 * beyond CUDA's API through cuGetExportTable(SIMCU_PRIVATE_UUID), the way
 * NVIDIA's runtime reaches its driver's private functions. A real driver does
 * not know the id, so a caller that finds no table is on a real GPU.
 *
 * Users: the sim's runtime and libsimblas (to charge simulated host work) and
 * libgrape.so (to read the simulated host clock, so that graph mode measures
 * replays against eager runs in the sim's time, not the machine's; and to
 * start a helper thread's work at the moment it was handed over). Fields are
 * only ever added at the end: check size before using a later one. Needs only
 * <stddef.h> and <stdint.h>. */
#ifndef GRAPE_SIMCU_PRIVATE_H
#define GRAPE_SIMCU_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

/* "simcu-private-01" */
#define SIMCU_PRIVATE_UUID                                                          \
  {                                                                                \
    0x73, 0x69, 0x6d, 0x63, 0x75, 0x2d, 0x70, 0x72, 0x69, 0x76, 0x61, 0x74, 0x65,  \
        0x2d, 0x30, 0x31                                                           \
  }

enum simcu_work_e {
  SIMCU_WORK_OP = 0,        /* the program's own host work per op: SIMCU_HOST_NS */
  SIMCU_WORK_RUNTIME = 1,   /* the runtime's own overhead per runtime call: row "runtime" */
  SIMCU_WORK_SHIM_OP = 2,   /* an interposer's own work for one op it records or holds:
                               row "shim_op" (its host time shows in simulated time) */
  SIMCU_WORK_SHIM_CHECK = 3,   /* its work to re-check one op's footprints before a
                                  concurrent plan replays: row "shim_check" */
  SIMCU_WORK_SHIM_TARGET = 4,  /* its own work to apply and restore one GEMM's SM-count
                                  target (a handle's target read, set and restored, or a
                                  descriptor copied): row "shim_target" */
  SIMCU_WORK_SHIM_REQUERY = 5, /* a cuBLASLt heuristic query it makes for a targeted
                                  descriptor (the library's time): row "shim_requery" */
};

typedef struct simcu_private_s {
  size_t size;                      /* sizeof(simcu_private_t) */
  void (*host_work)(int kind);      /* charges the calling thread's host clock */
  uint64_t (*host_ns)(void);        /* the calling thread's host clock */
  uint64_t (*end_ns)(void);         /* latest host clock or finished device work so far */
  /* The calling thread is a helper (a background graph builder, say) taking
   * up work another thread handed over at host time t: its clock becomes
   * max(its clock, t), or t if it has made no call yet. A helper's clock
   * counts in end_ns but is not where new threads start (the sim cannot see
   * which thread made a thread; helpers are not it). Makes a helper's times
   * independent of when the OS ran it. */
  void (*host_handoff)(uint64_t t);
  /* The device's statistics so far, as one JSON object the caller frees:
   *   {"end_ns":N,"host_ns":N (all threads' host time in API calls),
   *    "kernels":[{"name":"<mangled>","calls":N,"graph_calls":N,"ns":N,"min_ns":N,"max_ns":N,
   *                "med_ns":N (within 1/16 of the value),"sumsq_ns2":X}, ...],
   *    "memops":[{"kind":"memcpy"|"memset","dir":"HtoD"|"DtoH"|"DtoD"|"HtoH"|"device",
   *               "count":N,"bytes":N,"ns":N}, ...]}
   * (the exit report's "device_times", include/grape/report.h). NULL when
   * out of memory. */
  char* (*stats_json)(void);
  /* Capture ranges (GRAPE_CAPTURE): on = 1 opens one, 0 closes it. Work
   * submitted while a range is closed is left out of stats_json; the first
   * call also forgets the work submitted before it (it was submitted before
   * any range opened), so that the statistics cover exactly the ranges.
   * Work is judged when it is submitted, not when it runs. */
  void (*stats_gate)(int on);
} simcu_private_t;

#endif
