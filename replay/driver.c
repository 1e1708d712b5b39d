/* Resolving the replay's driver calls (see driver.h). */
#include "driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

int grape__drv_open(const char* lib, grape_drv_t* d, char* err, size_t errlen) {
  memset(d, 0, sizeof(*d));
  /* Never closed: a driver's threads may outlive any point where closing it
   * would be safe, and the process ends soon after a replay anyway. */
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(err, errlen, "cannot load the CUDA driver %s: %s", lib, dlerror());
    return -ENOENT;
  }
  gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  if (gpa == NULL) {
    snprintf(err, errlen, "%s has no cuGetProcAddress_v2 (a CUDA 12 or newer driver is needed)", lib);
    return -ENOENT;
  }
#define REPLAY_RESOLVE(name)                                                                 \
  {                                                                                          \
    void* p = NULL;                                                                          \
    CUdriverProcAddressQueryResult q;                                                        \
    if (gpa(#name, &p, REPLAY_CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || \
        p == NULL) {                                                                         \
      snprintf(err, errlen, "the CUDA driver %s does not provide %s", lib, #name);           \
      return -ENOSYS;                                                                        \
    }                                                                                        \
    d->name = (__typeof__(d->name))p;                                                        \
  }
  REPLAY_DRIVER_CALLS(REPLAY_RESOLVE)
#undef REPLAY_RESOLVE
  return 0;
}

const char* grape__drv_err(const grape_drv_t* d, CUresult rc, char* buf, size_t cap) {
  const char* name = NULL;
  if (d->cuGetErrorName == NULL || d->cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == NULL)
    name = "CUDA error";
  snprintf(buf, cap, "%s (%d)", name, (int)rc);
  return buf;
}
