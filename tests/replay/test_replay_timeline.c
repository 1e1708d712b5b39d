/* The trace format's timeline section (TLIN, GRAPE_TIMELINE): round trip,
 * an optional section old readers skip, and every kind of damage refused
 * with a message naming it. No CUDA. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grape/trace.h"
#include "replay/format.h"
#include "sample.h"

#define U GRAPE_TRACE_TL_UNKNOWN

/* The sample trace with a timeline: an eager kernel (function 0), a held
 * memset, and the graph that ran it. */
static grape_trace_t* with_timeline(void) {
  grape_trace_t* t = trace_sample();
  grape_trace_tl_op_t ops[3] = {
    {GRAPE_TRACE_OP_KERNEL, GRAPE_TRACE_TL_EAGER, 0, 1, 0x5000, grape_trace_func(t, 0)->id, 10, 20, 15, 40, 0, 0,
     1, GRAPE_TRACE_DIR_NONE, {4, 2, 1}, {128, 1, 1}, 512},
    {GRAPE_TRACE_OP_MEMSET, GRAPE_TRACE_TL_HELD, GRAPE_TRACE_NONE, 1, 0x5000, 256, 30, 31, U, U, 7, 0,
     2, GRAPE_TRACE_DIR_NONE, {0, 0, 0}, {0, 0, 0}, 0},
    {GRAPE_TRACE_TL_GRAPH, GRAPE_TRACE_TL_SUBMIT, GRAPE_TRACE_NONE, 2, 0x5000, 1, 50, 60, 55, 70, 7, 0,
     0, GRAPE_TRACE_DIR_NONE, {0, 0, 0}, {0, 0, 0}, 0},
  };
  static const char* const apis[] = {"cuLaunchKernel", "cudaMemsetAsync"};
  grape_trace_timeline_t tl = {"simulated", 1234, 5, 3, ops, 2, apis};
  cr_assert_eq(grape_trace_set_timeline(t, &tl), 0);
  return t;
}

static uint8_t* encode(const grape_trace_t* t, size_t* len) {
  uint8_t* buf;
  cr_assert_eq(grape_trace_encode(t, 0, &buf, len, NULL), 0);
  return buf;
}

static size_t section(const uint8_t* b, size_t len, uint32_t type) {
  for (size_t off = TRACE_FILE_HEADER; off + TRACE_SECTION_HEADER <= len;
       off += TRACE_SECTION_HEADER + get_u64(b + off + 8))
    if (get_u32(b + off) == type)
      return off;
  return 0;
}

static void reseal(uint8_t* b, size_t off) {
  uint64_t n = get_u64(b + off + 8);
  put_u64(b + off + 16, grape__trace_checksum(b + off, b + off + TRACE_SECTION_HEADER, n));
}

/* Loads a heap copy of exactly len bytes (ASan sees any overread). */
static int load_copy(const uint8_t* b, size_t len, char* err, size_t cap) {
  uint8_t* c = malloc(len ? len : 1);
  memcpy(c, b, len);
  grape_trace_t* r = NULL;
  err[0] = '\0';
  int rc = grape_trace_load_mem(c, len, &r, err, cap);
  grape_trace_free(r);
  free(c);
  return rc;
}

Test(replay_timeline, round_trip_and_optional) {
  grape_trace_t* t = with_timeline();
  size_t len, len2;
  uint8_t* b = encode(t, &len);
  grape_trace_t* r;
  char err[512];
  cr_assert_eq(grape_trace_load_mem(b, len, &r, err, sizeof(err)), 0, "%s", err);
  const grape_trace_timeline_t* tl = grape_trace_timeline(r);
  cr_assert_not_null(tl);
  cr_expect_str_eq(tl->clock, "simulated");
  cr_expect_eq(tl->origin_ns, 1234);
  cr_expect_eq(tl->dropped, 5);
  cr_assert_eq(tl->count, 3);
  cr_expect_eq(tl->ops[0].func, 0);
  cr_expect_eq(tl->ops[0].dev_end, 40);
  cr_expect_eq(tl->ops[1].dev_start, U);
  cr_expect_eq(tl->ops[2].what, 1);
  cr_expect_eq(tl->ops[2].seq, 7);
  /* What each call was (the TLAR section): its entry point and launch shape. */
  cr_assert_eq(tl->napis, 2);
  cr_expect_str_eq(tl->apis[tl->ops[0].api - 1], "cuLaunchKernel");
  cr_expect_str_eq(tl->apis[tl->ops[1].api - 1], "cudaMemsetAsync");
  cr_expect_eq(tl->ops[2].api, 0);
  cr_expect(tl->ops[0].grid[0] == 4 && tl->ops[0].grid[1] == 2 && tl->ops[0].block[0] == 128 &&
            tl->ops[0].shmem == 512, "the launch's shape was lost");
  uint8_t* b2 = encode(r, &len2);
  cr_assert(len == len2 && memcmp(b, b2, len) == 0, "write -> read -> write changed the bytes");
  /* Optional: REQUIRED clear, so a reader that does not know it skips it. */
  size_t s = section(b, len, SEC_TLIN);
  cr_assert_neq(s, 0);
  cr_expect_eq(get_u32(b + s + 4) & SEC_REQUIRED, 0);
  put_u32(b + s, TRACE_TYPE('Z', 'Z', 'Z', 'Z'));   /* what an older reader sees */
  reseal(b, s);
  size_t sa = section(b, len, SEC_TLAR);   /* (newer than TLIN: unknown to it too) */
  put_u32(b + sa, TRACE_TYPE('Z', 'Z', 'Z', 'X'));
  reseal(b, sa);
  grape_trace_free(r);
  cr_assert_eq(grape_trace_load_mem(b, len, &r, err, sizeof(err)), 0, "%s", err);
  cr_expect_null(grape_trace_timeline(r));
  cr_expect_eq(grape_trace_path_count(r), 2);
  grape_trace_free(r);
  /* TLAR is optional too: a reader that skips it has the records, unnamed. */
  memcpy(b, b2, len);
  s = section(b, len, SEC_TLAR);
  cr_assert_neq(s, 0);
  cr_expect_eq(get_u32(b + s + 4) & SEC_REQUIRED, 0);
  put_u32(b + s, TRACE_TYPE('Z', 'Z', 'Z', 'Y'));
  reseal(b, s);
  cr_assert_eq(grape_trace_load_mem(b, len, &r, err, sizeof(err)), 0, "%s", err);
  cr_assert_not_null(grape_trace_timeline(r));
  cr_expect(grape_trace_timeline(r)->napis == 0 && grape_trace_timeline(r)->ops[0].api == 0 &&
            grape_trace_timeline(r)->ops[0].grid[0] == 0, "records named without their TLAR");
  grape_trace_free(r);
  /* A trace without one has none, and no TLIN section. */
  grape_trace_t* plain = trace_sample();
  uint8_t* b3 = encode(plain, &len2);
  cr_expect_eq(section(b3, len2, SEC_TLIN), 0);
  free(b3);
  grape_trace_free(plain);
  free(b);
  free(b2);
  grape_trace_free(t);
}

/* Record i's field at byte `at` set to v (4 or 8 bytes), re-sealed; refused
 * with a message holding want. */
static void bad_field(const uint8_t* b, size_t len, uint32_t i, size_t at, uint64_t v, int wide,
                      const char* want) {
  uint8_t* c = malloc(len);
  memcpy(c, b, len);
  size_t s = section(c, len, SEC_TLIN);
  size_t rec = s + TRACE_SECTION_HEADER + 4 + strlen("simulated") + 20 + (size_t)i * REC_TL_OP;
  if (wide)
    put_u64(c + rec + at, v);
  else
    put_u32(c + rec + at, (uint32_t)v);
  reseal(c, s);
  char err[512];
  cr_expect_neq(load_copy(c, len, err, sizeof(err)), 0, "accepted; wanted '%s'", want);
  cr_expect(strstr(err, want) != NULL && strstr(err, "TLIN") != NULL && strstr(err, "byte") != NULL,
            "message '%s' lacks '%s', the section or the offset", err, want);
  free(c);
}

/* A TLAR record's field at byte `at` set to v, re-sealed; refused with want. */
static void bad_arg(const uint8_t* b, size_t len, uint32_t i, size_t at, uint32_t v, const char* want) {
  uint8_t* c = malloc(len);
  memcpy(c, b, len);
  size_t s = section(c, len, SEC_TLAR);
  size_t names = 4 + 4 + strlen("cuLaunchKernel") + 4 + strlen("cudaMemsetAsync");
  put_u32(c + s + TRACE_SECTION_HEADER + names + 4 + (size_t)i * REC_TL_ARGS + at, v);
  reseal(c, s);
  char err[512];
  cr_expect_neq(load_copy(c, len, err, sizeof(err)), 0, "accepted; wanted '%s'", want);
  cr_expect(strstr(err, want) != NULL && strstr(err, "TLAR") != NULL, "message '%s' lacks '%s'",
            err, want);
  free(c);
}

/* The program's own graph launch: an eager graph record, its nodes in what
 * (0 when the shim did not see the graph instantiated), read back as written. */
Test(replay_timeline, programs_graph_launch) {
  grape_trace_t* t = trace_sample();
  grape_trace_tl_op_t ops[2] = {
    {GRAPE_TRACE_TL_GRAPH, GRAPE_TRACE_TL_EAGER, GRAPE_TRACE_NONE, 1, 0x5000, 3, 10, 20, 15, 40, 0, 0,
     1, GRAPE_TRACE_DIR_NONE, {0, 0, 0}, {0, 0, 0}, 0},
    {GRAPE_TRACE_TL_GRAPH, GRAPE_TRACE_TL_EAGER, GRAPE_TRACE_NONE, 1, 0x5000, 0, 30, 31, 41, 50, 0, 0,
     1, GRAPE_TRACE_DIR_NONE, {0, 0, 0}, {0, 0, 0}, 0},
  };
  static const char* const apis[] = {"cuGraphLaunch"};
  grape_trace_timeline_t tl = {"simulated", 0, 0, 2, ops, 1, apis};
  cr_assert_eq(grape_trace_set_timeline(t, &tl), 0);
  size_t len;
  uint8_t* b = encode(t, &len);
  grape_trace_t* r;
  char err[512];
  cr_assert_eq(grape_trace_load_mem(b, len, &r, err, sizeof(err)), 0, "%s", err);
  const grape_trace_timeline_t* got = grape_trace_timeline(r);
  cr_assert(got != NULL && got->count == 2);
  cr_expect(got->ops[0].kind == GRAPE_TRACE_TL_GRAPH && got->ops[0].how == GRAPE_TRACE_TL_EAGER &&
            got->ops[0].what == 3 && got->ops[1].what == 0, "the program's graph launches changed");
  grape_trace_free(r);
  free(b);
  grape_trace_free(t);
}

Test(replay_timeline, args_damage_is_named) {
  grape_trace_t* t = with_timeline();
  size_t len;
  uint8_t* b = encode(t, &len);
  bad_arg(b, len, 0, 0, 3, "entry point 3 of 2");
  bad_arg(b, len, 0, 4, GRAPE_TRACE_DIR_HTOD, "direction");   /* on a kernel */
  free(b);
  grape_trace_free(t);
}

Test(replay_timeline, damage_is_named) {
  grape_trace_t* t = with_timeline();
  size_t len;
  uint8_t* b = encode(t, &len);
  bad_field(b, len, 0, 0, 9, 0, "unknown kind");
  bad_field(b, len, 0, 4, 0, 0, "unknown way");
  bad_field(b, len, 1, 0, GRAPE_TRACE_TL_GRAPH, 0, "graph launch");   /* a held one */
  bad_field(b, len, 0, 8, 99, 0, "function index");
  bad_field(b, len, 0, 24, 0x1234, 1, "function index");   /* not the function's id */
  bad_field(b, len, 1, 8, 0, 0, "no kernel");
  bad_field(b, len, 0, 12, 0, 0, "thread 0");
  bad_field(b, len, 0, 40, 5, 1, "ends before it starts");
  bad_field(b, len, 0, 48, U, 1, "device times");
  bad_field(b, len, 0, 56, 1, 1, "device times");
  bad_field(b, len, 1, 48, 31, 1, "device times");
  bad_field(b, len, 1, 32, 5, 1, "records go by host start");
  bad_field(b, len, 2, 24, 0, 1, "graph launch");   /* a graph of no ops */
  bad_field(b, len, 0, 64, 3, 1, "held-op number");   /* on an eager call */
  /* A count no payload could hold, and bytes left over. */
  uint8_t* c = malloc(len + 8);
  memcpy(c, b, len);
  size_t s = section(c, len, SEC_TLIN);
  size_t count = s + TRACE_SECTION_HEADER + 4 + strlen("simulated") + 16;   /* after origin, dropped */
  put_u32(c + count, 1000);
  reseal(c, s);
  char err[512];
  cr_expect_neq(load_copy(c, len, err, sizeof(err)), 0);
  cr_expect(strstr(err, "do not fit") != NULL, "%s", err);
  memcpy(c, b, len);
  put_u32(c + count, 2);
  reseal(c, s);
  cr_expect_neq(load_copy(c, len, err, sizeof(err)), 0);
  cr_expect(strstr(err, "left over") != NULL, "%s", err);
  /* A second TLIN, and one before the paths: out of order. */
  memcpy(c, b, len);
  put_u32(c + section(c, len, SEC_TIME), SEC_TLIN);
  reseal(c, section(c, len, SEC_TLIN));
  cr_expect_neq(load_copy(c, len, err, sizeof(err)), 0);
  /* Every truncation and every bit flip of the section. */
  for (size_t n = s; n < len; n++)
    cr_assert_neq(load_copy(b, n, err, sizeof(err)), 0, "cut to %zu bytes: accepted", n);
  for (size_t bit = s * 8; bit < (s + TRACE_SECTION_HEADER + 100) * 8 && bit < len * 8; bit++) {
    memcpy(c, b, len);
    c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    cr_assert_neq(load_copy(c, len, err, sizeof(err)), 0, "flipped bit %zu: accepted", bit);
  }
  free(c);
  free(b);
  grape_trace_free(t);
}

Test(replay_timeline, builder_checks_records) {
  grape_trace_t* t = trace_sample();
  grape_trace_tl_op_t op = {GRAPE_TRACE_OP_KERNEL, GRAPE_TRACE_TL_HELD, GRAPE_TRACE_NONE, 1, 1, 7,
                            5, 6, 1, 2, 0, 0, 0, 0, {1, 1, 1}, {1, 1, 1}, 0};   /* a held call with device times */
  grape_trace_timeline_t tl = {"monotonic", 0, 0, 1, &op, 0, NULL};
  cr_expect_eq(grape_trace_set_timeline(t, &tl), -EINVAL);
  op.dev_start = op.dev_end = U;
  cr_expect_eq(grape_trace_set_timeline(t, &tl), 0);
  grape_trace_tl_op_t two[2] = {op, op};
  two[1].host_start = 1;   /* before the first */
  tl.ops = two;
  tl.count = 2;
  cr_expect_eq(grape_trace_set_timeline(t, &tl), -EINVAL);
  cr_expect_eq(grape_trace_timeline(t)->count, 1, "a refused timeline replaced the good one");
  cr_expect_eq(grape_trace_set_timeline(t, NULL), 0);
  cr_expect_null(grape_trace_timeline(t));
  grape_trace_free(t);
}

/* The NVTX section: names, ranges and each record's innermost range survive
 * write -> read -> write byte for byte; a reader that does not know the
 * section skips it; records that break its rules are refused. */
static grape_trace_t* with_nvtx(void) {
  grape_trace_t* t = with_timeline();
  const grape_trace_timeline_t* tl = grape_trace_timeline(t);
  grape_trace_tl_op_t ops[3];
  memcpy(ops, tl->ops, sizeof(ops));
  ops[0].range = 2;   /* inside "inner" */
  ops[1].range = 1;   /* inside "outer" */
  grape_trace_timeline_t tl2 = *tl;
  tl2.ops = ops;
  cr_assert_eq(grape_trace_set_timeline(t, &tl2), 0);
  static const char* const names[] = {"outer", "inner", "tick"};
  grape_trace_range_t rs[4] = {
    {GRAPE_TRACE_NVTX_PUSH, 0, 1, 0, 5, 45},
    {GRAPE_TRACE_NVTX_PUSH, 1, 1, 1, 8, 25},
    {GRAPE_TRACE_NVTX_MARK, 2, 1, 2, 12, 12},
    {GRAPE_TRACE_NVTX_START, 1, 2, 0, 40, 90},
  };
  grape_trace_nvtx_t n = {3, names, 4, rs, 9};
  cr_assert_eq(grape_trace_set_nvtx(t, &n), 0);
  return t;
}

Test(replay_timeline, nvtx_round_trip) {
  grape_trace_t* t = with_nvtx();
  size_t len, len2;
  uint8_t* b = encode(t, &len);
  grape_trace_t* r;
  char err[512];
  cr_assert_eq(grape_trace_load_mem(b, len, &r, err, sizeof(err)), 0, "%s", err);
  const grape_trace_nvtx_t* n = grape_trace_nvtx(r);
  cr_assert_not_null(n);
  cr_assert_eq(n->nnames, 3);
  cr_expect_str_eq(n->names[1], "inner");
  cr_assert_eq(n->count, 4);
  cr_expect_eq(n->ranges[1].parent, 1);
  cr_expect_eq(n->ranges[3].kind, GRAPE_TRACE_NVTX_START);
  cr_expect_eq(n->ranges[3].end, 90);
  cr_expect_eq(n->dropped, 9);
  cr_expect_eq(grape_trace_timeline(r)->ops[0].range, 2);
  cr_expect_eq(grape_trace_timeline(r)->ops[2].range, 0);
  uint8_t* b2 = encode(r, &len2);
  cr_assert(len == len2 && memcmp(b, b2, len) == 0, "write -> read -> write changed the bytes");
  /* Optional: a reader that does not know the type skips it (the type
   * renamed, resealed), and then no record names a range. */
  size_t off = section(b, len, SEC_NVTX);
  cr_assert(off > 0);
  cr_expect_eq(get_u32(b + off + 4) & SEC_REQUIRED, 0);
  put_u32(b + off, TRACE_TYPE('N', 'V', 'T', 'Y'));
  reseal(b, off);
  grape_trace_t* old;
  cr_assert_eq(grape_trace_load_mem(b, len, &old, err, sizeof(err)), 0, "%s", err);
  cr_expect_null(grape_trace_nvtx(old));
  cr_expect_eq(grape_trace_timeline(old)->ops[0].range, 0);
  grape_trace_free(old);
  grape_trace_free(r);
  grape_trace_free(t);
  free(b);
  free(b2);
}

Test(replay_timeline, nvtx_refused) {
  grape_trace_t* t = with_nvtx();
  size_t len;
  uint8_t* b = encode(t, &len);
  char err[512];
  size_t off = section(b, len, SEC_NVTX);
  cr_assert(off > 0);
  /* The record ranges start after the three names (u32 count, 3 strings,
   * u32 count); the first record's name index made out of range. */
  size_t rec = off + TRACE_SECTION_HEADER + 4 + (4 + 5) + (4 + 5) + (4 + 4) + 4;
  put_u32(b + rec + 4, 7);
  reseal(b, off);
  cr_expect_neq(load_copy(b, len, err, sizeof(err)), 0);
  cr_expect(strstr(err, "name index out of range") != NULL, "%s", err);
  put_u32(b + rec + 4, 0);
  /* An op naming a range past the records. */
  size_t ops = off + TRACE_SECTION_HEADER + get_u64(b + off + 8) - 3 * 4;
  put_u32(b + ops, 5);
  reseal(b, off);
  cr_expect_neq(load_copy(b, len, err, sizeof(err)), 0);
  cr_expect(strstr(err, "range 5 of 4") != NULL, "%s", err);
  /* The model refuses the same. */
  grape_trace_range_t bad = {GRAPE_TRACE_NVTX_MARK, 0, 1, 0, 5, 6};
  static const char* const names[] = {"x"};
  grape_trace_nvtx_t n = {1, names, 1, &bad, 0};
  cr_expect_eq(grape_trace_set_nvtx(t, &n), -EINVAL);   /* a mark with a length; op range 2 > 1 too */
  grape_trace_free(t);
  free(b);
}
