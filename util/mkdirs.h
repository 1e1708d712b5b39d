/* Creating the folders of an output file's name (`run/rank0/r.json` makes
 * `run/` and `run/rank0/`), as nsys does for its --output: the recipes of a
 * job write one file per rank into a folder nobody made first.
 *
 * DESIGN: header-only and libc-only like every file of util/ (see grow.h).
 * Allocates nothing, so the shim may call it while it starts. A folder that
 * exists already (made by another rank at the same moment, say) is success;
 * the mode is 0777 less the umask, as mkdir -p gives. */
#ifndef GRAPE_UTIL_MKDIRS_H
#define GRAPE_UTIL_MKDIRS_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

/* Creates every missing folder above the file name path (not path itself).
 * @return 0, or a negative errno (-ENAMETOOLONG beyond 4095 bytes). */
static inline int grape__mkdirs_for(const char* path) {
  char buf[4096];
  size_t len = strlen(path);
  if (len >= sizeof(buf))
    return -ENAMETOOLONG;
  memcpy(buf, path, len + 1);
  char* last = strrchr(buf, '/');
  if (last == NULL || last == buf)
    return 0;   /* a bare name, or a file in / */
  *last = '\0';
  for (char* p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    struct stat st;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return -errno;
    if (stat(buf, &st) != 0)
      return -errno;
    if (!S_ISDIR(st.st_mode))
      return -ENOTDIR;
    if (c == '\0')
      return 0;
    *p = c;
  }
}

#endif
