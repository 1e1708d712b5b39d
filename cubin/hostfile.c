/* Kernel images inside files: host ELF executables and shared libraries
 * (their .nv_fatbin section, or the containers their .nvFatBinSegment
 * wrappers point at, and with GRAPE_FATBIN_SCAN_DATA containers embedded in
 * data sections), and files that are themselves a fatbin, a cubin or PTX.
 *
 * DESIGN: libelf reads the host ELF's section table; the sections holding
 * containers are read into memory the set owns (one pread each) or, without
 * payloads, mapped and parsed in place, so a 500 MB library costs a read of
 * its fatbin bytes, not of the file. The work is planned first (one job per
 * container) and run by grape__fatbin_run_jobs on several threads; results
 * keep the order of the file. Error offsets are file offsets.
 */
#include "grape/cubin.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "cubin.h"
#include "fatbin.h"
#include "jobs.h"
#include "set.h"
#include "util/grow.h"

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

/* Maps [off, off + len) of fd read-only (prefaulted), for bytes nothing will
 * point into after the call; *base and *maplen are what munmap needs. */
static int map_range(int fd, uint64_t off, uint64_t len, const uint8_t** out, void** base,
                     size_t* maplen, grape_cubin_err_t* err) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t aoff = off & ~(page - 1);
  size_t n = (size_t)(len + (off - aoff));
  void* p = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)aoff);
  if (p == MAP_FAILED) {
    int e = errno;
    grape__cubin_errf(err, "mmap of %llu bytes at 0x%llx: %s", (unsigned long long)len,
                      (unsigned long long)off, strerror(e));
    return -e;
  }
  *base = p;
  *maplen = n;
  *out = (const uint8_t*)p + (off - aoff);
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

/* Drops the images a failed parse added after the first n. */
static void rollback(grape_fatbin_t* fb, size_t n) {
  while (fb->nimages > n)
    grape__image_clear(&fb->images[--fb->nimages]);
}

static int cmp_size(const void* a, const void* b) {
  size_t x = *(const size_t*)a, y = *(const size_t*)b;
  return x < y ? -1 : x > y;
}

/* ---- The work plan of one host ELF ---- */

/* A section's bytes: mapped (unmapped at the end) or owned by the set. */
typedef struct region_s {
  const uint8_t* buf;
  size_t size;
  uint64_t addr;      /* sh_addr: alignment of candidates */
  uint64_t off;       /* file offset */
  void* base;         /* mapping to unmap, or NULL */
  size_t maplen;
} region_t;

typedef struct plan_s {
  grape__job_t* jobs;
  size_t* job_region;   /* per job: its scanned region, or SIZE_MAX (.nv_fatbin) */
  size_t* job_pos;      /* per job: candidate position in that region */
  size_t njobs, jcap;
  region_t* regions;
  size_t nregions, rcap;
  int in_place;         /* NO_PAYLOADS: jobs read mappings directly */
} plan_t;

static int plan_job(plan_t* p, const uint8_t* data, size_t size, size_t base_off, int optional,
                    size_t region, size_t pos) {
  if (p->njobs == p->jcap) {
    size_t cap = p->jcap ? p->jcap * 2 : 64;
    grape__job_t* j = realloc(p->jobs, cap * sizeof(*j));
    if (j == NULL)
      return -ENOMEM;
    p->jobs = j;
    size_t* r = realloc(p->job_region, cap * sizeof(*r));
    if (r == NULL)
      return -ENOMEM;
    p->job_region = r;
    size_t* q = realloc(p->job_pos, cap * sizeof(*q));
    if (q == NULL)
      return -ENOMEM;
    p->job_pos = q;
    p->jcap = cap;
  }
  grape__job_t* j = &p->jobs[p->njobs];
  memset(j, 0, sizeof(*j));
  j->data = data;
  j->size = size;
  j->base_off = base_off;
  j->optional = optional;
  p->job_region[p->njobs] = region;
  p->job_pos[p->njobs] = pos;
  p->njobs++;
  return 0;
}

/* Makes a section's bytes available as a region: mapped (map_only, or without
 * payloads), else read into memory the set owns. */
static int plan_region(plan_t* p, grape_fatbin_t* fb, int fd, const GElf_Shdr* sh, int map_only,
                       size_t* idx, grape_cubin_err_t* err) {
  if (p->nregions == p->rcap) {
    region_t* rs = grape__grow(p->regions, &p->rcap, p->nregions + 1, sizeof(*rs), 8);
    if (rs == NULL) {
      grape__cubin_errf(err, "out of memory");
      return -ENOMEM;
    }
    p->regions = rs;
  }
  region_t* r = &p->regions[p->nregions];
  memset(r, 0, sizeof(*r));
  r->size = sh->sh_size;
  r->addr = sh->sh_addr;
  r->off = sh->sh_offset;
  int rc;
  if (p->in_place || map_only) {
    rc = map_range(fd, sh->sh_offset, sh->sh_size, &r->buf, &r->base, &r->maplen, err);
  } else {
    uint8_t* buf;
    rc = read_owned(fb, fd, sh->sh_offset, sh->sh_size, &buf, err);
    r->buf = buf;
  }
  if (rc == 0)
    *idx = p->nregions++;
  return rc;
}

/* The bytes a job parses: in place without payloads, else a copy the set
 * owns (the scanned section itself is only mapped while planning). */
static const uint8_t* job_bytes(const plan_t* p, grape_fatbin_t* fb, const uint8_t* src,
                                size_t len) {
  if (p->in_place)
    return src;
  uint8_t* copy = malloc(len + 1);
  if (copy == NULL || grape__fatbin_own(fb, copy))
    return NULL;
  memcpy(copy, src, len);
  copy[len] = 0;
  return copy;
}

static void plan_free(plan_t* p) {
  for (size_t i = 0; i < p->nregions; i++)
    if (p->regions[i].base)
      munmap(p->regions[i].base, p->regions[i].maplen);
  free(p->regions);
  free(p->jobs);
  free(p->job_region);
  free(p->job_pos);
}

/* Whether a container candidate starts at r->buf + pos; its length in *len. */
static int candidate(const region_t* r, size_t pos, size_t* len) {
  const uint8_t* h = r->buf + pos;
  if ((r->addr + pos) % 8 || r->size - pos < 16 || rd32(h) != GRAPE__FATBIN_MAGIC ||
      rd16(h + 4) != 1 || rd16(h + 6) != 16 || rd64(h + 8) == 0 ||
      rd64(h + 8) > r->size - pos - 16)
    return 0;
  *len = 16 + (size_t)rd64(h + 8);
  return 1;
}

static const uint8_t container_magic[4] = {0x50, 0xed, 0x55, 0xba};

/* The next candidate whose magic lies in r->buf[*pos, end): its address, with
 * *pos at it and its length in *len; NULL when none is left. Both scans below
 * walk a region this way. */
static const uint8_t* next_candidate(const region_t* r, size_t* pos, size_t end, size_t* len) {
  while (*pos + 16 <= end) {
    const uint8_t* hit = memmem(r->buf + *pos, end - *pos, container_magic, 4);
    if (hit == NULL)
      return NULL;
    *pos = (size_t)(hit - r->buf);
    if (candidate(r, *pos, len))
      return hit;
    *pos += 4;
  }
  return NULL;
}

/* GRAPE_FATBIN_SCAN_DATA: containers embedded in a data section (cuFFT keeps
 * ~24,000 in .ldata for cuModuleLoadData). A candidate is a container magic
 * at an 8-byte aligned address with version 1 and a 16-byte header whose
 * fat_size fits; one that then fails to parse is not a container after all
 * and is skipped (scan_failed looks inside it again), so the scan never
 * fails the file. known: sorted file offsets of first entries already
 * planned, so nothing is listed twice. */
static int plan_scan(plan_t* p, grape_fatbin_t* fb, size_t ri, const size_t* known,
                     size_t nknown) {
  const region_t* r = &p->regions[ri];
  size_t pos = 0, len;
  const uint8_t* hit;
  while ((hit = next_candidate(r, &pos, r->size, &len)) != NULL) {
    size_t first_entry = r->off + pos + 16;
    if (!(nknown && bsearch(&first_entry, known, nknown, sizeof(*known), cmp_size))) {
      const uint8_t* bytes = job_bytes(p, fb, hit, len);
      if (bytes == NULL || plan_job(p, bytes, len, r->off + pos, 1, ri, pos) != 0)
        return -ENOMEM;
    }
    pos += len;
  }
  return 0;
}

/* A candidate that did not parse: look for containers inside it, one at a
 * time on this thread (rare; real libraries have none). */
static void scan_failed(const plan_t* p, grape_fatbin_t* fb, const region_t* r, size_t from,
                        size_t to) {
  size_t pos = from, len;
  const uint8_t* hit;
  while ((hit = next_candidate(r, &pos, to, &len)) != NULL) {
    size_t before = fb->nimages;
    grape_cubin_err_t ignored;
    const uint8_t* bytes = job_bytes(p, fb, hit, len);
    if (bytes && grape__fatbin_parse_into(fb, bytes, len, r->off + pos, &ignored) == 0) {
      pos += len;
    } else {
      rollback(fb, before);
      pos += 4;
    }
  }
}

static int from_host_elf(grape_fatbin_t* fb, int fd, uint64_t fsize, grape_cubin_err_t* err) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  plan_t plan = {.in_place = (fb->flags & GRAPE_FATBIN_NO_PAYLOADS) != 0};
  size_t shstrndx, nspans = 0, *known = NULL;
  grape__span_t* spans = NULL;
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
    /* One job per container: they decompress in parallel. */
    size_t ri;
    rc = plan_region(&plan, fb, fd, &fat, 0, &ri, err);
    if (rc == 0)
      rc = grape__fatbin_split(plan.regions[ri].buf, fat.sh_size, fat.sh_offset, &spans, &nspans,
                               err);
    for (size_t i = 0; rc == 0 && i < nspans; i++)
      if (plan_job(&plan, plan.regions[ri].buf + spans[i].off, spans[i].len,
                   fat.sh_offset + spans[i].off, 0, SIZE_MAX, 0) != 0) {
        grape__cubin_errf(err, "out of memory");
        rc = -ENOMEM;
      }
    if (rc)
      goto out;
  } else if (have_seg && in_range(fsize, seg.sh_offset, seg.sh_size)) {
    rc = from_wrappers(fb, fd, elf, &seg, fsize, err);
    if (rc)
      goto out;
  }
  if (fb->flags & GRAPE_FATBIN_SCAN_DATA) {
    /* First entries of what is already parsed or planned. */
    size_t nknown = fb->nimages + nspans;
    known = malloc((nknown ? nknown : 1) * sizeof(*known));
    if (known == NULL) {
      grape__cubin_errf(err, "out of memory");
      rc = -ENOMEM;
      goto out;
    }
    for (size_t i = 0; i < fb->nimages; i++)
      known[i] = fb->images[i].offset;
    for (size_t i = 0; i < nspans; i++)
      known[fb->nimages + i] = fat.sh_offset + spans[i].off + spans[i].hsize;
    qsort(known, nknown, sizeof(*known), cmp_size);
    scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
      GElf_Shdr sh;
      size_t ri;
      if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
          !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR) || sh.sh_size < 16 ||
          !in_range(fsize, sh.sh_offset, sh.sh_size) || (have_fat && sh.sh_offset == fat.sh_offset))
        continue;
      rc = plan_region(&plan, fb, fd, &sh, 1, &ri, err);
      if (rc)
        goto out;
      if (plan_scan(&plan, fb, ri, known, nknown) != 0) {
        grape__cubin_errf(err, "out of memory");
        rc = -ENOMEM;
        goto out;
      }
    }
  }
  rc = grape__fatbin_run_jobs(fb, plan.jobs, plan.njobs, err);
  for (size_t i = 0; rc == 0 && i < plan.njobs; i++)
    if (plan.jobs[i].optional && plan.jobs[i].rc != 0) {
      const region_t* r = &plan.regions[plan.job_region[i]];
      scan_failed(&plan, fb, r, plan.job_pos[i] + 4, plan.job_pos[i] + plan.jobs[i].size);
    }
out:
  free(known);
  free(spans);
  plan_free(&plan);
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
  grape_fatbin_t* fb = grape__fatbin_new(err);
  if (fb == NULL) {
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
