/* The image registry (see images.h for the design). */
#include "images.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
#include "handles.h"
#include "state.h"
#include "log.h"
#include "real.h"

typedef struct image_s {
  const void* raw;             /* fatbin wrapper, parsed lazily; NULL when parsed at load */
  int collective;              /* it lives in a collective library's object (collective.h) */
  grape_fatbin_t* parsed;
  int tried;                   /* a lazy parse was attempted (under lock) */
} image_t;

static grape_handle_slot_t* images;   /* handle -> image_t*; made on first registration */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* creation, lazy parses, the arch */

/* True when the object holding address p is a collective or one-sided
 * communication library (NCCL, RCCL, NVSHMEM, DeepEP): its kernels may wait
 * on peers. */
static int collective_object(const void* p) {
  Dl_info info;
  if (p == NULL || dladdr(p, &info) == 0 || info.dli_fname == NULL)
    return 0;
  const char* base = strrchr(info.dli_fname, '/');
  base = base != NULL ? base + 1 : info.dli_fname;
  static const char* const libs[] = {"libnccl", "librccl", "libnvshmem", "deep_ep"};
  for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
    if (strncmp(base, libs[i], strlen(libs[i])) == 0)
      return 1;
  return 0;
}

static void image_put(const void* handle, const void* raw, grape_fatbin_t* fb, const void* origin) {
  grape_handle_slot_t* t = handle != NULL ? grape__handle_table(&images, &lock) : NULL;
  image_t* im = t != NULL ? calloc(1, sizeof(*im)) : NULL;
  grape_handle_slot_t* s = im != NULL ? grape__handle_slot(t, handle, 1) : NULL;
  if (s == NULL) {
    if (im != NULL)
      grape_log_warn_once("image registry full: further kernel images are not kept");
    free(im);
    grape_fatbin_free(fb);
    return;
  }
  im->raw = raw;
  im->collective = collective_object(origin);
  im->parsed = fb;
  im->tried = fb != NULL;
  /* A handle value reused after an unload replaces the old image (kept: a
   * function info may still point at it). */
  __atomic_store_n(&s->value, im, __ATOMIC_RELEASE);
}

void grape__image_register(const void* handle, const void* image) {
  image_put(handle, image, NULL, image);
}

void grape__image_register_parsed(const void* handle, grape_fatbin_t* fb, const void* origin) {
  image_put(handle, NULL, fb, origin);
}

int grape__image_collective(const void* handle) {
  grape_handle_slot_t* t = __atomic_load_n(&images, __ATOMIC_ACQUIRE);
  grape_handle_slot_t* s = t != NULL && handle != NULL ? grape__handle_slot(t, handle, 0) : NULL;
  const image_t* im = s != NULL ? __atomic_load_n(&s->value, __ATOMIC_ACQUIRE) : NULL;
  return im != NULL && im->collective;
}

/* SM version of the current device (90 for sm_90), or 0 when unknown: only
 * the image this device loads is parsed (grape_image_load_arch). Asked of the
 * driver once, after a launch or a module load, when a context exists. Under
 * lock. */
static int device_arch(void) {
  static int arch = -1;
  if (arch >= 0)
    return arch;
  typedef CUresult (*ctx_dev_fn)(CUdevice*);
  typedef CUresult (*attr_fn)(int*, CUdevice_attribute, CUdevice);
  ctx_dev_fn ctx_dev = (ctx_dev_fn)grape__real_driver("cuCtxGetDevice");
  attr_fn attr = (attr_fn)grape__real_driver("cuDeviceGetAttribute");
  CUdevice dev;
  int major = 0, minor = 0, rc = 1;
  if (ctx_dev != NULL && attr != NULL)
    GRAPE_NO_REENTRY(rc = ctx_dev(&dev) == CUDA_SUCCESS &&
                          attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
                          attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS
                      ? 0 : 1);
  arch = rc == 0 ? major * 10 + minor : 0;
  return arch;
}

int grape__image_load(const void* image, grape_fatbin_t** out, grape_cubin_err_t* err) {
  int arch;
  pthread_mutex_lock(&lock);
  arch = device_arch();
  pthread_mutex_unlock(&lock);
  return grape_image_load_arch(image, 0, arch, out, err);
}

const grape_fatbin_t* grape__image_get(const void* handle) {
  grape_handle_slot_t* t = __atomic_load_n(&images, __ATOMIC_ACQUIRE);
  grape_handle_slot_t* s = t != NULL && handle != NULL ? grape__handle_slot(t, handle, 0) : NULL;
  image_t* im = s ? grape__handle_value(s) : NULL;
  if (im == NULL)
    return NULL;
  pthread_mutex_lock(&lock);
  if (!im->tried) {
    im->tried = 1;
    grape_cubin_err_t err;
    if (grape_image_load_arch(im->raw, 0, device_arch(), &im->parsed, &err) != 0) {
      im->parsed = NULL;
      grape_log_debug("kernel image not parsed: %s", err.msg);
    }
  }
  pthread_mutex_unlock(&lock);
  return im->parsed;
}

void grape__image_each(void (*fn)(const void* handle, void* arg), void* arg) {
  grape_handle_slot_t* t = __atomic_load_n(&images, __ATOMIC_ACQUIRE);
  if (t == NULL)
    return;
  for (size_t i = 0; i < GRAPE_HANDLE_SLOTS; i++)
    if (grape__handle_value(&t[i]) != NULL)
      fn(t[i].key, arg);
}

void grape__images_reset(int free_memory) {
  if (free_memory && images != NULL) {
    for (size_t i = 0; i < GRAPE_HANDLE_SLOTS; i++) {
      image_t* im = images[i].value;
      if (im != NULL) {
        grape_fatbin_free(im->parsed);
        free(im);
      }
    }
    free(images);
  }
  images = NULL;
  pthread_mutex_init(&lock, NULL);
}
