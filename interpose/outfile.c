/* Output files of the shim (GRAPE_REPORT, GRAPE_TRACE, GRAPE_LOG_FILE): their
 * names, the check at start that they can be written, and putting a finished
 * file in place without replacing another.
 *
 * DESIGN: a job of many processes (a launcher, ranks, forked workers) writes
 * one output per process, and a name may come out the same for two of them
 * (no %p in it) or for two runs (a name reused). An output is written at exit,
 * when refusing it would lose the run, so the shim never replaces a file: a
 * finished temporary file is linked to the final name, which fails when the
 * name is taken (atomically, also between processes), and then to the next
 * numbered name (x.1.json, x.2.json, ...), with a warning naming the file
 * used. GRAPE_OVERWRITE=yes renames over the name instead. Names are expanded
 * once per process with util/pattern.h (pid, rank, host, environment). A name
 * that cannot be written is reported when the process starts, by the user's
 * name, and again at exit if it still fails. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "util/mkdirs.h"
#include "util/pattern.h"

/* The folder of path into dir ("." for a bare name). */
static void folder_of(const char* path, char* dir, size_t cap) {
  const char* slash = strrchr(path, '/');
  if (slash == NULL)
    snprintf(dir, cap, ".");
  else if (slash == path)
    snprintf(dir, cap, "/");
  else
    snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

int grape__outfile_writable(const char* path, char* why, size_t cap) {
  char dir[4096];
  struct stat st;
  folder_of(path, dir, sizeof(dir));
  if (stat(dir, &st) != 0) {
    snprintf(why, cap, "its folder %s: %s", dir, strerror(errno));
    return -ENOENT;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, cap, "%s is not a folder", dir);
    return -ENOTDIR;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(why, cap, "its folder %s: %s", dir, strerror(errno));
    return -EACCES;
  }
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(why, cap, "it is a folder");
    return -EISDIR;
  }
  return 0;
}

void grape__outfile_check(grape_option_t o) {
  const char* pattern = grape__option_str(o);
  if (pattern == NULL || *pattern == '\0' ||
      (o == grape_option_report && strcmp(pattern, "stderr") == 0))
    return;
  char env[64], path[4096], why[4200];
  grape__option_env(o, env, sizeof(env));
  if (grape__option_path(pattern, path, sizeof(path)) != 0) {
    grape_log_warn("%s=%s: the name is too long; nothing will be written", env, pattern);
    return;
  }
  /* The folders of the name are made now, per process: a pattern such as
   * run/rank%r/r.json names a folder per rank that nobody made first. */
  (void)grape__mkdirs_for(path);
  if (grape__outfile_writable(path, why, sizeof(why)) != 0)
    grape_log_warn("%s=%s: cannot write %s (%s); nothing will be written there", env, pattern,
                   path, why);
}

int grape__outfile_place(const char* what, const char* tmp, const char* final, char* used,
                         size_t cap) {
  if (grape__option_get(grape_option_overwrite)) {
    if (rename(tmp, final) != 0)
      return -errno;
    snprintf(used, cap, "%s", final);
    return 0;
  }
  char name[4200];
  snprintf(name, sizeof(name), "%s", final);
  for (unsigned k = 1; k <= 10000; k++) {
    if (link(tmp, name) == 0) {
      unlink(tmp);
      snprintf(used, cap, "%s", name);
      if (k > 1)
        grape_log_warn("%s: %s exists; written to %s instead (GRAPE_OVERWRITE=yes replaces)", what,
                       final, name);
      return 0;
    }
    if (errno != EEXIST) {
      /* A file system without hard links: claim the name with O_EXCL, then
       * rename over the empty file this process created. */
      if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP)
        return -errno;
      int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) {
        close(fd);
        if (rename(tmp, name) != 0)
          return -errno;
        snprintf(used, cap, "%s", name);
        if (k > 1)
          grape_log_warn("%s: %s exists; written to %s instead (GRAPE_OVERWRITE=yes replaces)",
                         what, final, name);
        return 0;
      }
      if (errno != EEXIST)
        return -errno;
    }
    if (grape__pattern_numbered(final, k, name, sizeof(name)) != 0)
      return -ENAMETOOLONG;
  }
  return -EEXIST;
}
