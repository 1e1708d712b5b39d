/* grape public API: version and export macro.
 *
 * DESIGN: public headers expose opaque handles only, so that a field change is
 * never an ABI change. Module headers (cubin.h, predict.h, trace.h) include this. */
#ifndef GRAPE_GRAPE_H
#define GRAPE_GRAPE_H

#include "grape_version.h"

#define GRAPE_VERSION_NUMBER \
  (GRAPE_VERSION_MAJOR * 10000 + GRAPE_VERSION_MINOR * 100 + GRAPE_VERSION_PATCH)

#if defined(__GNUC__)
#define GRAPE_API __attribute__((visibility("default")))
#else
#define GRAPE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* @return GRAPE_VERSION_NUMBER of the library, to detect a header/library mismatch. */
GRAPE_API unsigned grape_version(void);

#ifdef __cplusplus
}
#endif
#endif
