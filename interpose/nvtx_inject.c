/* NVTX's injection entry point and the callbacks it installs, which hand
 * each range and mark to nvtx.c (see nvtx.h for the design). */
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "hooks.h"
#include "nvtx.h"
#include "shim.h"

/* ---- NVTX's ABI (nvtx3/nvtxDetail/nvtxTypes.h, nvToolsExt.h), mirrored:
 * including NVTX's header would define its API in this library. ---- */

typedef const void* (*nvtx_get_export_table_t)(uint32_t id);
typedef void (*nvtx_fn_t)(void);
typedef struct nvtx_callbacks_s {
  size_t struct_size;
  int (*get_module_table)(int module, nvtx_fn_t*** table, unsigned* size);
} nvtx_callbacks_t;
enum { NVTX_ETID_CALLBACKS = 1 };
enum { NVTX_MODULE_CORE = 1, NVTX_MODULE_CORE2 = 5 };
enum {   /* NvtxCallbackIdCore */
  CORE_MarkEx = 1, CORE_MarkA = 2, CORE_MarkW = 3, CORE_RangeStartEx = 4, CORE_RangeStartA = 5,
  CORE_RangeStartW = 6, CORE_RangeEnd = 7, CORE_RangePushEx = 8, CORE_RangePushA = 9,
  CORE_RangePushW = 10, CORE_RangePop = 11,
};
enum {   /* NvtxCallbackIdCore2 */
  CORE2_DomainMarkEx = 1, CORE2_DomainRangeStartEx = 2, CORE2_DomainRangeEnd = 3,
  CORE2_DomainRangePushEx = 4, CORE2_DomainRangePop = 5, CORE2_DomainRegisterStringA = 10,
  CORE2_DomainRegisterStringW = 11,
};

typedef struct nvtx_attr_s {   /* nvtxEventAttributes_v2 */
  uint16_t version, size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type, reserved0;
  uint64_t payload;
  int32_t message_type;
  const void* message;
} nvtx_attr_t;
_Static_assert(offsetof(nvtx_attr_t, message) == 40 && sizeof(nvtx_attr_t) == 48,
               "nvtxEventAttributes_v2's layout");

/* ---- The callbacks NVTX calls ---- */

static uint32_t attr_name(const nvtx_attr_t* a) {
  return a != NULL ? grape__nvtx_name(a->message_type, a->message) : grape__nvtx_name(GRAPE_NVTX_MSG_ASCII, NULL);
}

static int cb_push_a(const char* s) { return grape__nvtx_push(grape__nvtx_name(GRAPE_NVTX_MSG_ASCII, s)); }
static int cb_push_w(const wchar_t* s) { return grape__nvtx_push(grape__nvtx_name(GRAPE_NVTX_MSG_UNICODE, s)); }
static int cb_push_ex(const nvtx_attr_t* a) { return grape__nvtx_push(attr_name(a)); }
static int cb_pop(void) { return grape__nvtx_pop(); }
static uint64_t cb_start_a(const char* s) { return grape__nvtx_start(grape__nvtx_name(GRAPE_NVTX_MSG_ASCII, s)); }
static uint64_t cb_start_w(const wchar_t* s) { return grape__nvtx_start(grape__nvtx_name(GRAPE_NVTX_MSG_UNICODE, s)); }
static uint64_t cb_start_ex(const nvtx_attr_t* a) { return grape__nvtx_start(attr_name(a)); }
static void cb_end(uint64_t id) { grape__nvtx_end(id); }
static void cb_mark_a(const char* s) { grape__nvtx_mark(grape__nvtx_name(GRAPE_NVTX_MSG_ASCII, s)); }
static void cb_mark_w(const wchar_t* s) { grape__nvtx_mark(grape__nvtx_name(GRAPE_NVTX_MSG_UNICODE, s)); }
static void cb_mark_ex(const nvtx_attr_t* a) { grape__nvtx_mark(attr_name(a)); }

/* Domains share the thread's one stack: their pushes and pops pair up as the
 * default domain's do in any program that nests them properly. */
static int cb_d_push(const void* dom, const nvtx_attr_t* a) {
  (void)dom;
  return cb_push_ex(a);
}
static int cb_d_pop(const void* dom) {
  (void)dom;
  return cb_pop();
}
static uint64_t cb_d_start(const void* dom, const nvtx_attr_t* a) {
  (void)dom;
  return cb_start_ex(a);
}
static void cb_d_end(const void* dom, uint64_t id) {
  (void)dom;
  grape__nvtx_end(id);
}
static void cb_d_mark(const void* dom, const nvtx_attr_t* a) {
  (void)dom;
  cb_mark_ex(a);
}
/* A registered string's handle is its interned name: a message of type
 * REGISTERED then reads as text. */
static const void* cb_d_register_a(const void* dom, const char* s) {
  (void)dom;
  return grape__nvtx_name_text(grape__nvtx_name(GRAPE_NVTX_MSG_ASCII, s));
}
static const void* cb_d_register_w(const void* dom, const wchar_t* s) {
  (void)dom;
  return grape__nvtx_name_text(grape__nvtx_name(GRAPE_NVTX_MSG_UNICODE, s));
}

static void set_slot(nvtx_fn_t** table, unsigned size, unsigned id, nvtx_fn_t fn) {
  if (id <= size && table[id] != NULL)
    *table[id] = fn;
}

/* NVTX's entry point into an injection library: fills the callback tables.
 * @return 1 (success; 0 would make NVTX unload the library). */
GRAPE_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table_t get_table) {
  grape__init();
  if (!grape__active() || get_table == NULL)
    return 1;   /* off: NVTX's calls stay no-ops */
  const nvtx_callbacks_t* cb = get_table(NVTX_ETID_CALLBACKS);
  if (cb == NULL || cb->struct_size < sizeof(*cb) || cb->get_module_table == NULL)
    return 1;
  nvtx_fn_t** core = NULL;
  unsigned n = 0;
  if (cb->get_module_table(NVTX_MODULE_CORE, &core, &n) && core != NULL) {
    set_slot(core, n, CORE_MarkEx, (nvtx_fn_t)cb_mark_ex);
    set_slot(core, n, CORE_MarkA, (nvtx_fn_t)cb_mark_a);
    set_slot(core, n, CORE_MarkW, (nvtx_fn_t)cb_mark_w);
    set_slot(core, n, CORE_RangeStartEx, (nvtx_fn_t)cb_start_ex);
    set_slot(core, n, CORE_RangeStartA, (nvtx_fn_t)cb_start_a);
    set_slot(core, n, CORE_RangeStartW, (nvtx_fn_t)cb_start_w);
    set_slot(core, n, CORE_RangeEnd, (nvtx_fn_t)cb_end);
    set_slot(core, n, CORE_RangePushEx, (nvtx_fn_t)cb_push_ex);
    set_slot(core, n, CORE_RangePushA, (nvtx_fn_t)cb_push_a);
    set_slot(core, n, CORE_RangePushW, (nvtx_fn_t)cb_push_w);
    set_slot(core, n, CORE_RangePop, (nvtx_fn_t)cb_pop);
  }
  nvtx_fn_t** core2 = NULL;
  if (cb->get_module_table(NVTX_MODULE_CORE2, &core2, &n) && core2 != NULL) {
    set_slot(core2, n, CORE2_DomainMarkEx, (nvtx_fn_t)cb_d_mark);
    set_slot(core2, n, CORE2_DomainRangeStartEx, (nvtx_fn_t)cb_d_start);
    set_slot(core2, n, CORE2_DomainRangeEnd, (nvtx_fn_t)cb_d_end);
    set_slot(core2, n, CORE2_DomainRangePushEx, (nvtx_fn_t)cb_d_push);
    set_slot(core2, n, CORE2_DomainRangePop, (nvtx_fn_t)cb_d_pop);
    set_slot(core2, n, CORE2_DomainRegisterStringA, (nvtx_fn_t)cb_d_register_a);
    set_slot(core2, n, CORE2_DomainRegisterStringW, (nvtx_fn_t)cb_d_register_w);
  }
  grape__nvtx_turn_on();
  grape_log_info("NVTX: ranges recorded (NVTX_INJECTION64_PATH names libgrape.so)");
  return 1;
}

