/* Function attributes as ordering points for held launches.
 *
 * DESIGN: a launch is checked, and would run, under its function's attributes
 * as they are when it is issued (dynamic shared memory opt-in, carveout,
 * cluster shape, cache configuration). A held launch reaches the driver
 * later, so a change of an attribute of its function must wait until what
 * is held of that function has been submitted: the change flushes the
 * streams that hold launches of it (FlashAttention lowers its limit right
 * after a launch that needed the higher one). The program usually sets the
 * same value before every launch, so the value each attribute was last set
 * to through the shim is remembered (a small table, only of the functions
 * whose attributes the program sets) and an unchanged value flushes nothing.
 * Thread-safe: one mutex, taken only by attribute calls. */
#ifndef GRAPE_INTERPOSE_FUNCATTRS_H
#define GRAPE_INTERPOSE_FUNCATTRS_H

/* Attributes that are not a CUfunction_attribute: the cache and the shared
 * memory bank configurations. */
enum { GRAPE_FATTR_CACHE_CONFIG = 1 << 16, GRAPE_FATTR_SHMEM_CONFIG };

/* Before a call sets attribute attr of the function behind handle (any handle
 * kind a launch may name) to value: held launches of it are submitted first
 * unless the value is the one it was last set to. */
void grape__func_attr_setting(const void* handle, int attr, long value);

/* After that call succeeded: the value is remembered, and the function's
 * launch limits are asked again (graph.h). */
void grape__func_attr_set(const void* handle, int attr, long value);

/* Forgets every remembered value: an unload (handle values come back for
 * other functions), or a fork child (reset: the memory is left to the parent's
 * copy, another thread may have held the lock). */
void grape__func_attrs_forget(void);
void grape__func_attrs_reset(void);

#endif
