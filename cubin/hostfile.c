/* Kernel images inside files: host ELF executables and shared libraries
 * (their .nv_fatbin section, or the containers their .nvFatBinSegment
 * wrappers point at), and files that are themselves a fatbin, a cubin or PTX.
 *
 * DESIGN: libelf reads the host ELF's section table from an mmap'd file; only
 * the fatbin bytes are copied into memory the set owns (one pread), so a
 * 500 MB library costs one read of its fatbin section, not of the file.
 * Error offsets are file offsets.
 */
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads len bytes at off into a buffer owned by fb (plus a NUL). */
static int read_owned(grape_fatbin_t* fb, int fd, uint64_t off, uint64_t len, uint8_t** out,
                      grape_cubin_err_t* err) {
  uint8_t* buf = malloc(len + 1);
  if (buf == NULL || grape__fatbin_own(fb, buf)) {
    grape__cubin_errf(err, "out of memory reading %llu bytes", (unsigned long long)len);
    return -ENOMEM;
  }
  size_t done = 0;
  while (done < len) {
    ssize_t r = pread(fd, buf + done, len - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      int e = r < 0 ? errno : EIO;
      grape__cubin_errf(err, "read at offset 0x%llx: %s", (unsigned long long)(off + done),
                        r < 0 ? strerror(e) : "unexpected end of file");
      return -e;
    }
    done += (size_t)r;
  }
  buf[len] = 0;
  *out = buf;
  return 0;
}

/* Follows each __fatBinC_Wrapper_t in .nvFatBinSegment to its container. */
static int from_wrappers(grape_fatbin_t* fb, int fd, Elf* elf, const GElf_Shdr* seg,
                         uint64_t fsize, grape_cubin_err_t* err) {
  uint8_t* w;
  int rc = read_owned(fb, fd, seg->sh_offset, seg->sh_size, &w, err);
  if (rc)
    return rc;
  for (uint64_t o = 0; o + 24 <= seg->sh_size; o += 8) {
    if (rd32(w + o) != GRAPE__WRAPPER_MAGIC)
      continue;
    uint64_t va = rd64(w + o + 8);
    if (va == 0)
      continue;   /* filled by a relocation at load time (PIE): nothing to follow here */
    /* The section that holds the address gives its file offset. */
    Elf_Scn* scn = NULL;
    uint64_t foff = 0;
    int found = 0;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_addr && va >= sh.sh_addr &&
          va - sh.sh_addr < sh.sh_size) {
        foff = sh.sh_offset + (va - sh.sh_addr);
        found = 1;
        break;
      }
    }
    if (!found || foff + 16 > fsize)
      continue;
    uint8_t hdr[16];
    if (pread(fd, hdr, sizeof hdr, (off_t)foff) != (ssize_t)sizeof hdr ||
        rd32(hdr) != GRAPE__FATBIN_MAGIC)
      continue;
    uint64_t len = rd16(hdr + 6) + rd64(hdr + 8);
    if (len > fsize - foff) {
      grape__cubin_errf(err, "fatbin container at 0x%llx: fat size runs past the end of file",
                        (unsigned long long)foff);
      return -EINVAL;
    }
    uint8_t* buf;
    rc = read_owned(fb, fd, foff, len, &buf, err);
    if (rc == 0)
      rc = grape__fatbin_parse_into(fb, buf, len, foff, err);
    if (rc)
      return rc;
  }
  return 0;
}

static int from_host_elf(grape_fatbin_t* fb, int fd, uint64_t fsize, grape_cubin_err_t* err) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  size_t shstrndx;
  int rc = 0;
  if (elf == NULL || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0) {
    grape__cubin_errf(err, "libelf cannot read the file: %s", elf_errmsg(-1));
    rc = -ENOEXEC;
    goto out;
  }
  GElf_Shdr fat = {0}, seg = {0};
  int have_fat = 0, have_seg = 0;
  Elf_Scn* scn = NULL;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == NULL)
      continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == NULL || sh.sh_type == SHT_NOBITS)
      continue;
    if (strcmp(name, ".nv_fatbin") == 0) {
      fat = sh;
      have_fat = 1;
    } else if (strcmp(name, ".nvFatBinSegment") == 0) {
      seg = sh;
      have_seg = 1;
    }
  }
  if (have_fat && fat.sh_size) {
    if (!in_range(fsize, fat.sh_offset, fat.sh_size)) {
      grape__cubin_errf(err, ".nv_fatbin section (offset 0x%llx, %llu bytes) runs past the end "
                        "of the file", (unsigned long long)fat.sh_offset,
                        (unsigned long long)fat.sh_size);
      rc = -EINVAL;
      goto out;
    }
    uint8_t* buf;
    rc = read_owned(fb, fd, fat.sh_offset, fat.sh_size, &buf, err);
    if (rc == 0)
      rc = grape__fatbin_parse_into(fb, buf, fat.sh_size, fat.sh_offset, err);
  } else if (have_seg && in_range(fsize, seg.sh_offset, seg.sh_size)) {
    rc = from_wrappers(fb, fd, elf, &seg, fsize, err);
  }
out:
  if (elf)
    elf_end(elf);
  return rc;
}

int grape_fatbin_from_file(const char* path, grape_fatbin_t** out, grape_cubin_err_t* err) {
  return grape_fatbin_from_file_ex(path, 0, out, err);
}

int grape_fatbin_from_file_ex(const char* path, unsigned flags, grape_fatbin_t** out,
                              grape_cubin_err_t* err) {
  struct stat st;
  uint8_t head[64] = {0};
  int rc, fd;
  if (path == NULL || out == NULL) {
    grape__cubin_errf(err, "invalid argument");
    return -EINVAL;
  }
  *out = NULL;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    rc = -errno;
    grape__cubin_errf(err, "%s: %s", path, strerror(errno));
    return rc;
  }
  if (fstat(fd, &st) != 0) {
    rc = -errno;
    grape__cubin_errf(err, "%s: %s", path, strerror(errno));
    goto fail_fd;
  }
  if (st.st_size == 0) {
    grape__cubin_errf(err, "%s: empty file", path);
    rc = -EINVAL;
    goto fail_fd;
  }
  ssize_t nh = pread(fd, head, sizeof head, 0);
  if (nh < 0) {
    rc = -errno;
    grape__cubin_errf(err, "%s: %s", path, strerror(errno));
    goto fail_fd;
  }
  grape_fatbin_t* fb = grape__fatbin_new();
  if (fb == NULL) {
    grape__cubin_errf(err, "out of memory");
    rc = -ENOMEM;
    goto fail_fd;
  }
  fb->flags = flags;
  int host_elf = nh >= 20 && memcmp(head, ELFMAG, SELFMAG) == 0 && rd16(head + 18) != EM_CUDA;
  if (host_elf) {
    grape__elf_init();
    rc = from_host_elf(fb, fd, (uint64_t)st.st_size, err);
  } else {
    /* A fatbin, cubin or PTX file: load it as the driver would be handed it. */
    uint8_t* buf;
    grape_fatbin_t* tmp = NULL;
    rc = read_owned(fb, fd, 0, (uint64_t)st.st_size, &buf, err);
    if (rc == 0) {
      rc = grape_image_load(buf, (size_t)st.st_size, &tmp, err);
      if (rc == 0) {
        grape_fatbin_free(fb);
        fb = tmp;
      }
    }
  }
  if (rc) {
    grape__cubin_err_prefix(err, "%s", path);
    grape_fatbin_free(fb);
    goto fail_fd;
  }
  close(fd);
  if (flags & GRAPE_FATBIN_NO_PAYLOADS) {
    /* Nothing points into the buffers any more: give the memory back now. */
    for (size_t i = 0; i < fb->nimages; i++)
      fb->images[i].data = NULL;
    for (size_t i = 0; i < fb->nbufs; i++)
      free(fb->bufs[i]);
    fb->nbufs = 0;
    free(fb->scratch);
    fb->scratch = NULL;
    fb->scratch_cap = 0;
  }
  *out = fb;
  return 0;
fail_fd:
  close(fd);
  return rc;
}
