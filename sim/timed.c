/* timed.c: the simulated device time of a kernel that runs timed, not
 * computed (SIMCU_KERNELS=timed: a kernel from a real fatbin or PTX image
 * without a CPU body, such as a framework's).
 *
 * DESIGN: nothing but the image is known about such a kernel, so its time
 * comes from its resources and its grid, as on the hardware's block
 * scheduler: blocks run in waves over the 132 multiprocessors, each holding
 * as many blocks as CUDA's occupancy calculator allows for the kernel's
 * registers, static and dynamic shared memory and block size (occupancy.c);
 * every block of a wave takes `timed_block` ns, and a kernel takes at least
 * `timed_floor` ns however small its grid. Alone:
 *
 *   device time = launch overhead (device_kernel or device_graph_kernel)
 *               + max(timed_floor, waves * timed_block),
 *   waves       = ceil(blocks / (132 * blocks per SM)).
 *
 * On the device model's calendar (device.c) a block lasts
 * max(timed_block, ceil(timed_floor / waves)), which gives the same time
 * alone and lets co-runners share the SMs. The rows' sources are in
 * the profiles of sim/costs/ and sim/README.md. The model knows nothing of what a
 * kernel does (a reduction over 1 GB and an add of two scalars with the same
 * grid take the same time); it is for the time of a framework's launch
 * stream, not of its kernels.
 */
#include "internal.h"
#include "cost.h"

#define TIMED_SMS 132   /* multiprocessors of the simulated H200 */

static uint64_t waves_of(const sim_work_t* w) {
  uint64_t blocks = (uint64_t)w->u.k.grid[0] * w->u.k.grid[1] * w->u.k.grid[2];
  unsigned threads = w->u.k.block[0] * w->u.k.block[1] * w->u.k.block[2];
  int per_sm = grape__sim_blocks_per_sm(w->u.k.f, (int)threads, w->u.k.smem);
  uint64_t per_wave = (uint64_t)TIMED_SMS * (uint64_t)(per_sm > 0 ? per_sm : 1);
  return (blocks + per_wave - 1) / per_wave;
}

uint64_t grape__sim_timed_ns(const sim_work_t* w) {
  const uint64_t* c = grape__sim_costs;
  uint64_t t;
  if (__builtin_mul_overflow(waves_of(w), c[COST_TIMED_BLOCK], &t) || t > (UINT64_MAX >> 2))
    t = UINT64_MAX >> 2;   /* far below wrapping when later sums add to it */
  return t > c[COST_TIMED_FLOOR] ? t : c[COST_TIMED_FLOOR];
}

uint64_t grape__sim_timed_block_ns(const sim_work_t* w) {
  const uint64_t* c = grape__sim_costs;
  uint64_t waves = waves_of(w);
  uint64_t spread = (c[COST_TIMED_FLOOR] + waves - 1) / waves;   /* the floor over the waves */
  return c[COST_TIMED_BLOCK] > spread ? c[COST_TIMED_BLOCK] : spread;
}
