/* The trace format (replay/): round trip, validation of damaged files,
 * forward compatibility, the size limit, the builders' checks. No CUDA. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grape/trace.h"
#include "replay/format.h"
#include "sample.h"

static uint8_t* encode(const grape_trace_t* t, size_t* len) {
  uint8_t* buf;
  cr_assert_eq(grape_trace_encode(t, 0, &buf, len, NULL), 0);
  return buf;
}

/* Loads exactly n bytes from a heap copy, so that ASan sees any overread. */
static int load_copy(const uint8_t* data, size_t n, grape_trace_t** t, char* err, size_t cap) {
  uint8_t* copy = malloc(n ? n : 1);
  memcpy(copy, data, n);
  err[0] = '\0';
  int rc = grape_trace_load_mem(copy, n, t, err, cap);
  if (rc == 0) {
    /* The trace points into the buffer: read everything before freeing it. */
    for (size_t i = 0; i < grape_trace_path_count(*t); i++)
      for (uint32_t j = 0; j < grape_trace_path(*t, i)->nops; j++) {
        const grape_trace_op_t* op = &grape_trace_path(*t, i)->ops[j];
        volatile uint8_t s = 0;
        for (uint32_t k = 0; k < op->param_bytes; k++)
          s += op->params[k];
        (void)s;
      }
    grape_trace_free(*t);
    *t = NULL;
  }
  free(copy);
  return rc;
}

Test(replay_format, round_trip_gives_identical_bytes) {
  grape_trace_t* t = trace_sample();
  size_t len1, len2;
  uint8_t* b1 = encode(t, &len1);
  grape_trace_t* r;
  char err[512];
  cr_assert_eq(grape_trace_load_mem(b1, len1, &r, err, sizeof(err)), 0, "%s", err);
  uint8_t* b2 = encode(r, &len2);
  cr_assert_eq(len1, len2);
  cr_assert(memcmp(b1, b2, len1) == 0, "write -> read -> write changed the bytes");
  /* And what was read is what was written. */
  const grape_trace_info_t* in = grape_trace_info(r);
  cr_expect_str_eq(in->device_name, "NVIDIA H100 80GB HBM3");
  cr_expect_eq(in->created_ns, 1700000000123456789ull);
  cr_expect_eq(in->rank, 1);
  cr_expect_eq(grape_trace_image_count(r), 2);
  cr_expect_eq(grape_trace_func_count(r), 3);
  cr_expect_eq(grape_trace_func(r, 0)->params[1].offset, 8);
  cr_expect_eq(grape_trace_func(r, 1)->nparams, GRAPE_TRACE_NONE);
  cr_expect_str_eq(grape_trace_func(r, 0)->bodies, "/opt/prog");
  cr_expect_eq(grape_trace_alloc(r, 1)->kind, GRAPE_TRACE_ALLOC_HOST_PINNED);
  const grape_trace_path_t* p = grape_trace_path(r, 0);
  cr_expect_eq(p->fp, 0xfeedfacecafebeefull);
  cr_expect_eq(p->ops[0].ptrs[0].delta, 16);
  cr_expect_eq(p->ops[0].params[12], 0xee);
  cr_expect_eq(p->ops[2].attr_bytes, 72);
  cr_expect_eq(p->ops[2].attrs[71], 0xab);
  cr_assert_not_null(p->graph);
  cr_expect_str_eq(p->graph->why, "replayed");
  cr_assert_not_null(p->times);
  cr_expect_eq(p->times->op_ms[2], 1.5);
  cr_expect_null(grape_trace_path(r, 1)->times);
  grape_trace_free(r);
  free(b1);
  free(b2);
  grape_trace_free(t);
}

Test(replay_format, save_and_load_a_file) {
  grape_trace_t* t = trace_sample();
  char path[] = "/tmp/grape-trace-test.XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  char err[512];
  grape_trace_save_stats_t st;
  cr_assert_eq(grape_trace_save(t, path, 0, &st, err, sizeof(err)), 0, "%s", err);
  grape_trace_t* r;
  cr_assert_eq(grape_trace_load(path, &r, err, sizeof(err)), 0, "%s", err);
  size_t l1, l2;
  uint8_t* b1 = encode(t, &l1);
  uint8_t* b2 = encode(r, &l2);
  cr_expect_eq(st.bytes, l1);
  cr_expect(l1 == l2 && memcmp(b1, b2, l1) == 0);
  free(b1);
  free(b2);
  grape_trace_free(r);
  unlink(path);
  /* A directory that is not there: an error naming the file, nothing left behind. */
  cr_expect_eq(grape_trace_save(t, "/nonexistent-dir/x.grape", 0, NULL, err, sizeof(err)), -ENOENT);
  cr_expect(strstr(err, "/nonexistent-dir/x.grape") != NULL, "%s", err);
  cr_expect_neq(grape_trace_load("/nonexistent-dir/x.grape", &r, err, sizeof(err)), 0);
  grape_trace_free(t);
}

Test(replay_format, every_truncation_is_refused) {
  grape_trace_t* t = trace_sample();
  size_t len;
  uint8_t* b = encode(t, &len);
  char err[512];
  for (size_t n = 0; n < len; n++) {
    grape_trace_t* r = NULL;
    int rc = load_copy(b, n, &r, err, sizeof(err));
    cr_assert_neq(rc, 0, "a trace cut to %zu of %zu bytes was accepted", n, len);
    cr_assert(strstr(err, "byte") != NULL, "no offset in the message for %zu bytes: %s", n, err);
  }
  free(b);
  grape_trace_free(t);
}

Test(replay_format, every_bit_flip_is_refused) {
  grape_trace_t* t = trace_sample();
  size_t len;
  uint8_t* b = encode(t, &len);
  char err[512];
  for (size_t bit = 0; bit < len * 8; bit++) {
    b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    grape_trace_t* r = NULL;
    int rc = load_copy(b, len, &r, err, sizeof(err));
    b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    cr_assert_neq(rc, 0, "flipping bit %zu went unnoticed", bit);
    cr_assert(err[0] != '\0');
  }
  /* Several random flips at once. */
  srand(11);
  for (int trial = 0; trial < 2000; trial++) {
    uint8_t* c = malloc(len);
    memcpy(c, b, len);
    int flips = 1 + rand() % 8;
    for (int k = 0; k < flips; k++)
      c[(size_t)rand() % len] ^= (uint8_t)(1u << (rand() % 8));
    grape_trace_t* r = NULL;
    int rc = load_copy(c, len, &r, err, sizeof(err));
    cr_assert(rc != 0 || memcmp(c, b, len) == 0, "trial %d: damage went unnoticed", trial);
    free(c);
  }
  free(b);
  grape_trace_free(t);
}

/* ---- Damage the checksum cannot see: sections re-sealed after editing ---- */

/* Offset of the n-th section of type (its header), or 0. */
static size_t section(const uint8_t* b, size_t len, uint32_t type, int n) {
  for (size_t off = TRACE_FILE_HEADER; off + TRACE_SECTION_HEADER <= len;
       off += TRACE_SECTION_HEADER + get_u64(b + off + 8))
    if (get_u32(b + off) == type && n-- == 0)
      return off;
  return 0;
}

static void reseal(uint8_t* b, size_t off) {
  uint64_t n = get_u64(b + off + 8);
  put_u64(b + off + 16, grape__trace_checksum(b + off, b + off + TRACE_SECTION_HEADER, n));
}

/* Expects b (len bytes) to be refused with a message containing want. */
static void refused(const uint8_t* b, size_t len, const char* want) {
  char err[512];
  grape_trace_t* r = NULL;
  cr_assert_neq(load_copy(b, len, &r, err, sizeof(err)), 0, "accepted; wanted '%s'", want);
  cr_expect(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
}

Test(replay_format, structural_damage_is_named) {
  grape_trace_t* t = trace_sample();
  size_t len;
  uint8_t* b = encode(t, &len);
  uint8_t* c = malloc(len + 64);

  /* An op naming a function that is not there. */
  memcpy(c, b, len);
  size_t p = section(c, len, SEC_PATH, 0);
  put_u32(c + p + TRACE_SECTION_HEADER + 20 + 4, 99);
  reseal(c, p);
  refused(c, len, "function index 99 out of range");

  /* A pointer word past the end of its allocation (path 0, op 0's only pointer). */
  memcpy(c, b, len);
  size_t ptr = p + TRACE_SECTION_HEADER + 20 + REC_OP + 16;
  put_u64(c + ptr + 8, 4096);
  reseal(c, p);
  refused(c, len, "past the end of allocation");

  /* A function count no payload could hold. */
  memcpy(c, b, len);
  size_t f = section(c, len, SEC_FUNC, 0);
  put_u32(c + f + TRACE_SECTION_HEADER, 0x7fffffff);
  reseal(c, f);
  refused(c, len, "do not fit");

  /* An image whose bytes do not match its hash. */
  memcpy(c, b, len);
  size_t im = section(c, len, SEC_IMAG, 0);
  c[im + TRACE_SECTION_HEADER + REC_IMAGE + 5] ^= 1;
  reseal(c, im);
  refused(c, len, "image hash");

  /* Sections out of order: FUNC renamed ALOC. */
  memcpy(c, b, len);
  put_u32(c + f, SEC_ALOC);
  reseal(c, f);
  refused(c, len, "out of order");

  /* No END, and bytes after END. */
  size_t end = section(b, len, SEC_END, 0);
  refused(b, end, "without an END section");
  memcpy(c, b, len);
  memset(c + len, 0, 8);
  refused(c, len + 8, "after the END section");

  /* A newer format version. */
  memcpy(c, b, len);
  put_u32(c + 8, GRAPE_TRACE_FORMAT_VERSION + 1);
  refused(c, len, "newer than this grape reads");

  /* Not a trace at all. */
  refused((const uint8_t*)"GRAPEXXX\1\0\0\0\0\0\0\0", 16, "not a grape trace");
  free(c);
  free(b);
  grape_trace_free(t);
}

/* Inserts a section of type/flags with a 5-byte payload before END. */
static uint8_t* with_section(const uint8_t* b, size_t len, uint32_t type, uint32_t flags,
                             size_t* out_len) {
  size_t end = section(b, len, SEC_END, 0), add = TRACE_SECTION_HEADER + 5;
  uint8_t* c = malloc(len + add);
  memcpy(c, b, end);
  put_u32(c + end, type);
  put_u32(c + end + 4, flags);
  put_u64(c + end + 8, 5);
  memcpy(c + end + TRACE_SECTION_HEADER, "hello", 5);
  reseal(c, end);
  memcpy(c + end + add, b + end, len - end);
  *out_len = len + add;
  return c;
}

Test(replay_format, unknown_sections_skipped_unless_required) {
  grape_trace_t* t = trace_sample();
  size_t len, l2;
  uint8_t* b = encode(t, &len);
  uint8_t* c = with_section(b, len, TRACE_TYPE('Z', 'Z', 'Z', 'Z'), 0, &l2);
  grape_trace_t* r;
  char err[512];
  cr_assert_eq(grape_trace_load_mem(c, l2, &r, err, sizeof(err)), 0, "%s", err);
  cr_expect_eq(grape_trace_path_count(r), 2);
  grape_trace_free(r);
  free(c);
  c = with_section(b, len, TRACE_TYPE('Z', 'Z', 'Z', 'Z'), SEC_REQUIRED, &l2);
  refused(c, l2, "required");
  free(c);
  free(b);
  grape_trace_free(t);
}

Test(replay_format, size_limit_keeps_frequent_paths_and_counts_the_rest) {
  grape_trace_t* t = trace_sample();
  size_t full;
  uint8_t* b = encode(t, &full);
  free(b);
  int saw_partial = 0;
  for (uint64_t max = 200; max <= full + 10; max += 7) {
    uint8_t* buf;
    size_t len;
    grape_trace_save_stats_t st;
    cr_assert_eq(grape_trace_encode(t, max, &buf, &len, &st), 0);
    cr_assert_eq(st.paths_written + st.paths_omitted, 2);
    cr_assert_eq(st.bytes, len);
    if (st.paths_written > 0)
      cr_assert_leq(len, max, "%zu bytes written under a limit of %llu", len,
                    (unsigned long long)max);
    grape_trace_t* r;
    char err[512];
    cr_assert_eq(grape_trace_load_mem(buf, len, &r, err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(grape_trace_info(r)->paths_omitted, st.paths_omitted);
    cr_expect_eq(grape_trace_info(r)->images_omitted, st.images_omitted);
    cr_expect_eq(grape_trace_image_count(r), st.images_written);
    /* Paths keep their order; one that does not fit is skipped, and a later,
     * smaller one may still go in. */
    if (st.paths_written == 2)
      cr_expect_eq(grape_trace_path(r, 0)->fp, 0xfeedfacecafebeefull);
    if (st.paths_written == 1) {
      saw_partial = 1;
      if (grape_trace_path(r, 0)->fp == 0xfeedfacecafebeefull)
        cr_expect_eq(st.images_written, 2, "the kept path's images are kept");
      else
        cr_expect_eq(st.images_written, 0, "images only a left-out path needs are left out");
    }
    grape_trace_free(r);
    free(buf);
  }
  cr_expect(saw_partial, "no limit kept exactly one path");
  grape_trace_free(t);
}

Test(replay_format, builders_check_indices) {
  grape_trace_t* t = trace_sample();
  uint8_t params[8] = {0};
  grape_trace_ptr_t bad = {0, 7, 0};   /* allocation 7 does not exist */
  grape_trace_op_t op = {GRAPE_TRACE_OP_KERNEL, 0, 0x1111, {1, 1, 1}, {1, 1, 1}, 0, 0, 0, 8, 0, 1,
                         params, NULL, &bad};
  grape_trace_path_t p = {1, 1, 1, &op, NULL, NULL};
  uint32_t idx;
  cr_expect_eq(grape_trace_add_path(t, &p, &idx), -EINVAL);
  bad = (grape_trace_ptr_t){4, 0, 0};   /* unaligned word */
  cr_expect_eq(grape_trace_add_path(t, &p, &idx), -EINVAL);
  bad = (grape_trace_ptr_t){0, 0, 4096};   /* past the allocation's end */
  cr_expect_eq(grape_trace_add_path(t, &p, &idx), -EINVAL);
  op.func = 17;
  op.nptrs = 0;
  cr_expect_eq(grape_trace_add_path(t, &p, &idx), -EINVAL);
  grape_trace_func_t f = {"x", 1, 5, -1, 0, -1, 0, GRAPE_TRACE_NONE, NULL, ""};
  cr_expect_eq(grape_trace_add_func(t, &f, &idx), -EINVAL);
  cr_expect_eq(grape_trace_path_count(t), 2);
  grape_trace_free(t);
}

Test(replay_format, path_patterns) {
  char out[64];
  cr_assert_eq(grape_trace_expand_path("t.%p.%r.grape", 123, 4, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "t.123.4.grape");
  cr_assert_eq(grape_trace_expand_path("100%%-%x", 1, 2, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "100%-%x");
  cr_expect_eq(grape_trace_expand_path("%p%p%p", 123456, 0, out, 10), -ENAMETOOLONG);
}

Test(replay_format, short_names) {
  char out[64];
  cr_expect_str_eq(grape_trace_short_name("_Z5scorePKjPKiPi", out, sizeof(out)), "score");
  cr_expect_str_eq(grape_trace_short_name("_Z3fooIiEvPT_", out, sizeof(out)), "foo<int>");
  cr_expect_str_eq(grape_trace_short_name("plain_c_kernel", out, sizeof(out)), "plain_c_kernel");
  cr_expect_str_eq(grape_trace_short_name("", out, sizeof(out)), "?");
}
