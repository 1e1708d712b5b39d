/* Cubin ELF files: the kernels they define and, per kernel, the parameter
 * layout, registers, static shared memory and launch limits recorded in the
 * .nv.info sections.
 *
 * DESIGN: libelf (elf_memory) reads the section and symbol tables; before it
 * does, the ELF header and the section table are bounded here, and every
 * section whose bytes are read is checked against the image size, so a lying
 * header is an error, not a read past the end. A kernel is a symbol of type
 * FUNC with STO_CUDA_ENTRY (0x10) in st_other; its per-kernel sections
 * (.nv.info.<name>, .nv.shared.<name>) name their text section in sh_info,
 * which is how they are matched without comparing names. The .nv.info record
 * format is in CUDA-NOTES.md; codes not listed below are skipped.
 */
#include "cubin.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>

#include "bytes.h"
#include "set.h"
#include "util/grow.h"

/* .nv.info attribute codes used here (EIATTR_*). */
enum {
  ATTR_MAX_THREADS = 0x05,
  ATTR_REQNTID = 0x10,
  ATTR_KPARAM_INFO = 0x17,
  ATTR_CBANK_PARAM_SIZE = 0x19,
  ATTR_REGCOUNT = 0x2f,
  ATTR_CUDA_API_VERSION = 0x37,
  ATTR_KPARAM_INFO_V2 = 0x45,
};

/* .nv.info record formats. */
enum { FMT_NVAL = 1, FMT_BVAL = 2, FMT_HVAL = 3, FMT_SVAL = 4 };

#define STO_CUDA_ENTRY 0x10
#define SHT_CUDA_INFO 0x70000000u

/* The C++ runtime's demangler, loaded on first use: linking libstdc++ would
 * make every process the shim is preloaded into (each shell and Python
 * wrapper of a job) pay for its symbol relocations, for a function only the
 * report and the CLI need. */
typedef char* (*cxa_demangle_fn)(const char* mangled, char* buf, size_t* len, int* status);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

/* Asked by version (the C++ ABI's first, which every libstdc++.so.6 has):
 * the exact function, and the library's lookup, never a dlsym an
 * interposing library (the shim's own) may define. */
static void cxa_load(void) {
  void* h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
  if (h != NULL)
    cxa_demangle = (cxa_demangle_fn)dlvsym(h, "__cxa_demangle", "CXXABI_1.3");
}

char* grape_demangle(const char* name) {
  if (name == NULL)
    return NULL;
  if (name[0] == '_' && name[1] == 'Z') {
    pthread_once(&cxa_once, cxa_load);
    int status = 0;
    char* d = cxa_demangle ? cxa_demangle(name, NULL, NULL, &status) : NULL;
    if (d != NULL && status == 0)
      return d;
    free(d);
  }
  return strdup(name);
}

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static void elf_init(void) {
  elf_version(EV_CURRENT);
}

void grape__elf_init(void) {
  pthread_once(&elf_once, elf_init);
}

size_t grape__elf_extent(const uint8_t* d) {
  if (memcmp(d, ELFMAG, SELFMAG) != 0 || d[EI_CLASS] != ELFCLASS64 || d[EI_DATA] != ELFDATA2LSB)
    return 0;
  uint64_t phoff = rd64(d + 32), shoff = rd64(d + 40);
  uint16_t phentsize = rd16(d + 54), phnum = rd16(d + 56);
  uint16_t shentsize = rd16(d + 58), shnum = rd16(d + 60);
  const uint64_t limit = (uint64_t)1 << 32;
  if (phoff > limit || shoff > limit || (shnum && shentsize != sizeof(Elf64_Shdr)))
    return 0;
  uint64_t ext = sizeof(Elf64_Ehdr);
  if (phnum && phoff + (uint64_t)phnum * phentsize > ext)
    ext = phoff + (uint64_t)phnum * phentsize;
  if (shnum && shoff + (uint64_t)shnum * shentsize > ext)
    ext = shoff + (uint64_t)shnum * shentsize;
  for (uint16_t i = 0; i < shnum; i++) {
    const uint8_t* sh = d + shoff + (uint64_t)i * shentsize;
    uint32_t type = rd32(sh + 4);
    uint64_t off = rd64(sh + 24), size = rd64(sh + 32);
    if (type == SHT_NOBITS)
      continue;
    if (off > limit || size > limit)
      return 0;
    if (off + size > ext)
      ext = off + size;
  }
  return (size_t)ext;
}

/* ---- .nv.info records ---- */

typedef struct record_s {
  uint8_t fmt;
  uint8_t attr;
  uint16_t hval;        /* value of NVAL/BVAL/HVAL records; length of SVAL */
  const uint8_t* body;  /* SVAL bytes (hval of them) */
} record_t;

/* Reads the record at b[*off, size); advances *off. 1 = a record, 0 = end, <0 = bad. */
static int next_record(const uint8_t* b, size_t size, size_t* off, record_t* r) {
  if (*off == size)
    return 0;
  if (size - *off < 4)
    return -EINVAL;
  const uint8_t* p = b + *off;
  r->fmt = p[0];
  r->attr = p[1];
  r->hval = rd16(p + 2);
  r->body = p + 4;
  switch (r->fmt) {
    case FMT_NVAL:
    case FMT_BVAL:
    case FMT_HVAL:
      *off += 4;
      return 1;
    case FMT_SVAL:
      if (r->hval > size - *off - 4)
        return -EINVAL;
      *off += 4 + (size_t)r->hval;
      return 1;
    default:
      return -EPROTO;
  }
}

typedef struct pinfo_s {
  uint32_t ordinal;
  uint32_t offset;
  uint32_t size;
} pinfo_t;

typedef struct cubin_ctx_s {
  const uint8_t* data;
  size_t size;
  Elf* elf;
  size_t shnum;
  GElf_Shdr* sh;          /* shnum section headers */
  grape_cubin_err_t* err;
} cubin_ctx_t;

/* Parses one kernel's .nv.info.<name> section into k. */
static int parse_kernel_info(cubin_ctx_t* c, size_t sec, grape_kernel_t* k) {
  const GElf_Shdr* sh = &c->sh[sec];
  const uint8_t* b = c->data + sh->sh_offset;
  size_t size = sh->sh_size, off = 0, np = 0, cap = 0;
  pinfo_t* ps = NULL;
  uint32_t max_ordinal = 0, cbank = 0, end = 0;
  int have_cbank = 0, rc;
  record_t r;
  while ((rc = next_record(b, size, &off, &r)) == 1) {
    if (r.attr == ATTR_KPARAM_INFO || r.attr == ATTR_KPARAM_INFO_V2) {
      if (r.fmt != FMT_SVAL || r.hval < 12) {
        grape__cubin_errf(c->err, "kernel %s: parameter record at 0x%llx is %u bytes, want 12",
                          k->name, (unsigned long long)(sh->sh_offset + off - 4 - r.hval), r.hval);
        rc = -EINVAL;
        goto out;
      }
      pinfo_t pi;
      pi.ordinal = rd16(r.body + 4);
      pi.offset = rd16(r.body + 6);
      /* v1 packs the size into the top 14 bits of a flags word; v2 stores it plainly. */
      pi.size = r.attr == ATTR_KPARAM_INFO ? rd32(r.body + 8) >> 18 : rd32(r.body + 8) & 0xffff;
      if (np == cap) {
        pinfo_t* n = grape__grow(ps, &cap, np + 1, sizeof(*ps), 8);
        if (n == NULL) {
          grape__cubin_errf(c->err, "out of memory");
          rc = -ENOMEM;
          goto out;
        }
        ps = n;
      }
      ps[np++] = pi;
      if (pi.ordinal > max_ordinal)
        max_ordinal = pi.ordinal;
      if (pi.offset + pi.size > end)
        end = pi.offset + pi.size;
    } else if (r.attr == ATTR_CBANK_PARAM_SIZE && r.fmt == FMT_HVAL) {
      cbank = r.hval;
      have_cbank = 1;
    } else if ((r.attr == ATTR_MAX_THREADS || r.attr == ATTR_REQNTID) && r.fmt == FMT_SVAL &&
               r.hval >= 12) {
      uint64_t t = (uint64_t)rd32(r.body) * rd32(r.body + 4) * rd32(r.body + 8);
      if (t > 0 && t <= 65536 && (k->max_threads < 0 || r.attr == ATTR_REQNTID))
        k->max_threads = (int)t;
    } else if (r.attr == ATTR_CUDA_API_VERSION && r.fmt == FMT_SVAL && r.hval >= 4) {
      uint32_t v = rd32(r.body);
      k->cuda_api_version = v > 100000 ? -1 : (int)v;
    }
  }
  if (rc < 0) {
    grape__cubin_errf(c->err, "kernel %s: %s record at offset 0x%llx of .nv.info",
                      k->name, rc == -EPROTO ? "unknown format of" : "truncated",
                      (unsigned long long)(sh->sh_offset + off));
    rc = -EINVAL;
    goto out;
  }
  rc = 0;
  if (np) {
    /* Records come in reverse ordinal order; every ordinal must appear once. */
    if (max_ordinal + 1 != np) {
      grape__cubin_errf(c->err, "kernel %s: %zu parameter records but ordinals up to %u", k->name,
                        np, max_ordinal);
      rc = -EINVAL;
      goto out;
    }
    k->params = calloc(np, sizeof(*k->params));
    uint8_t* seen = calloc(np, 1);
    if (k->params == NULL || seen == NULL) {
      free(seen);
      grape__cubin_errf(c->err, "out of memory");
      rc = -ENOMEM;
      goto out;
    }
    for (size_t i = 0; i < np; i++) {
      if (seen[ps[i].ordinal]) {
        free(seen);
        grape__cubin_errf(c->err, "kernel %s: parameter %u described twice", k->name,
                          ps[i].ordinal);
        rc = -EINVAL;
        goto out;
      }
      seen[ps[i].ordinal] = 1;
      k->params[ps[i].ordinal].offset = ps[i].offset;
      k->params[ps[i].ordinal].size = ps[i].size;
    }
    free(seen);
    k->nparams = (uint32_t)np;
  }
  k->param_bytes = have_cbank ? cbank : end;
out:
  free(ps);
  return rc;
}

/* Applies global .nv.info records (REGCOUNT keyed by symbol index). */
static int parse_global_info(cubin_ctx_t* c, size_t sec, const int32_t* kern_of_sym, size_t nsyms,
                             grape_kernel_t* ks) {
  const GElf_Shdr* sh = &c->sh[sec];
  const uint8_t* b = c->data + sh->sh_offset;
  size_t off = 0;
  record_t r;
  int rc;
  while ((rc = next_record(b, sh->sh_size, &off, &r)) == 1) {
    if (r.fmt != FMT_SVAL || r.hval < 8)
      continue;
    uint32_t sym = rd32(r.body), val = rd32(r.body + 4);
    if (sym >= nsyms || kern_of_sym[sym] < 0)
      continue;
    grape_kernel_t* k = &ks[kern_of_sym[sym]];
    if (r.attr == ATTR_REGCOUNT && val <= 255)
      k->registers = (int)val;
    else if (r.attr == ATTR_MAX_THREADS && r.hval >= 16 && k->max_threads < 0) {
      uint64_t t = (uint64_t)val * rd32(r.body + 8) * rd32(r.body + 12);
      if (t > 0 && t <= 65536)
        k->max_threads = (int)t;
    }
  }
  if (rc < 0) {
    grape__cubin_errf(c->err, "%s record at offset 0x%llx of .nv.info",
                      rc == -EPROTO ? "unknown format of" : "truncated",
                      (unsigned long long)(sh->sh_offset + off));
    return -EINVAL;
  }
  return 0;
}

/* ---- The cubin ---- */

static int check_header(const grape_image_t* img, grape_cubin_err_t* err) {
  const uint8_t* d = img->data;
  if (img->size < sizeof(Elf64_Ehdr)) {
    grape__cubin_errf(err, "cubin: %zu bytes, shorter than an ELF header", img->size);
    return -EINVAL;
  }
  if (memcmp(d, ELFMAG, SELFMAG) != 0) {
    grape__cubin_errf(err, "cubin: wrong magic %02x %02x %02x %02x (not an ELF file)", d[0], d[1],
                      d[2], d[3]);
    return -ENOEXEC;
  }
  if (d[EI_CLASS] != ELFCLASS64 || d[EI_DATA] != ELFDATA2LSB) {
    grape__cubin_errf(err, "cubin: not a 64-bit little-endian ELF (class %u, data %u)",
                      d[EI_CLASS], d[EI_DATA]);
    return -ENOEXEC;
  }
  uint16_t machine = rd16(d + 18);
  if (machine != EM_CUDA) {
    grape__cubin_errf(err, "cubin: ELF machine %u is not CUDA (%u)", machine, EM_CUDA);
    return -ENOEXEC;
  }
  uint64_t shoff = rd64(d + 40);
  uint16_t shentsize = rd16(d + 58), shnum = rd16(d + 60);
  if (shnum == 0 || shentsize != sizeof(Elf64_Shdr) || !in_range(img->size, shoff, (uint64_t)shnum * shentsize)) {
    grape__cubin_errf(err, "cubin: section table (offset 0x%llx, %u entries of %u bytes) "
                      "is outside the %zu-byte image",
                      (unsigned long long)shoff, shnum, shentsize, img->size);
    return -EINVAL;
  }
  uint64_t phoff = rd64(d + 32);
  uint16_t phentsize = rd16(d + 54), phnum = rd16(d + 56);
  if (phnum && (phentsize != sizeof(Elf64_Phdr) ||
                !in_range(img->size, phoff, (uint64_t)phnum * phentsize))) {
    grape__cubin_errf(err, "cubin: program header table (offset 0x%llx, %u entries) "
                      "is outside the %zu-byte image",
                      (unsigned long long)phoff, phnum, img->size);
    return -EINVAL;
  }
  return 0;
}

static int starts_with(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether a section holds variables of the program's: __device__ ones
 * (.nv.global, NOBITS; .nv.global.init, with initial bytes) or __constant__
 * ones (.nv.constantN, N > 0: bank 0 holds the kernels' parameters). */
static int is_variable_section(const char* name) {
  if (strcmp(name, ".nv.global") == 0 || strcmp(name, ".nv.global.init") == 0)
    return 1;
  return starts_with(name, ".nv.constant") && name[12] >= '1' && name[12] <= '9' &&
         (name[13] == '\0' || (name[13] >= '0' && name[13] <= '9' && name[14] == '\0'));
}

/* The image's variables: the OBJECT symbols of its variable sections, with
 * their initial bytes where the section has them. */
static int parse_variables(cubin_ctx_t* c, size_t shstrndx, size_t symsec, Elf_Data* sd,
                           size_t nsyms, grape_image_t* img) {
  const GElf_Shdr* ssh = &c->sh[symsec];
  size_t cap = 0;
  for (size_t s = 0; s < nsyms; s++) {
    GElf_Sym sym;
    if (gelf_getsym(sd, (int)s, &sym) == NULL || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
        sym.st_size == 0 || sym.st_shndx == 0 || sym.st_shndx >= c->shnum)
      continue;
    const GElf_Shdr* sec = &c->sh[sym.st_shndx];
    const char* secname = elf_strptr(c->elf, shstrndx, sec->sh_name);
    if (secname == NULL || !is_variable_section(secname))
      continue;
    const char* name = elf_strptr(c->elf, ssh->sh_link, sym.st_name);
    if (name == NULL || name[0] == '\0' || sym.st_value > sec->sh_size ||
        sym.st_size > sec->sh_size - sym.st_value) {
      grape__cubin_errf(c->err, "cubin: variable symbol %zu lies outside its section %s", s,
                        secname);
      return -EINVAL;
    }
    grape_global_t* gs = grape__grow(img->globals, &cap, img->nglobals + 1, sizeof(*gs), 8);
    if (gs == NULL)
      goto oom;
    img->globals = gs;
    grape_global_t* g = &img->globals[img->nglobals++];
    memset(g, 0, sizeof(*g));
    g->size = sym.st_size;
    g->name = strdup(name);
    if (g->name == NULL)
      goto oom;
    if (sec->sh_type != SHT_NOBITS) {   /* bounded in pass 1 */
      g->init = malloc(sym.st_size);
      if (g->init == NULL)
        goto oom;
      memcpy(g->init, c->data + sec->sh_offset + sym.st_value, sym.st_size);
    }
  }
  return 0;
oom:
  grape__cubin_errf(c->err, "out of memory");
  return -ENOMEM;
}

int grape_cubin_parse(grape_image_t* img, grape_cubin_err_t* err) {
  cubin_ctx_t c = {0};
  int32_t *info_of = NULL, *shared_of = NULL, *kern_of_sym = NULL;
  size_t shstrndx, symsec = 0, globsec = 0, nsyms = 0, nk = 0;
  int rc;
  if (img == NULL || img->data == NULL) {
    grape__cubin_errf(err, "cubin: invalid argument");
    return -EINVAL;
  }
  img->kernels = NULL;
  img->nkernels = 0;
  img->globals = NULL;
  img->nglobals = 0;
  rc = check_header(img, err);
  if (rc)
    return rc;
  if (img->arch == 0)
    img->arch = (int)((rd32(img->data + 48) >> 8) & 0xff);

  grape__elf_init();
  c.data = img->data;
  c.size = img->size;
  c.err = err;
  c.elf = elf_memory((char*)(uintptr_t)img->data, img->size);
  if (c.elf == NULL || elf_kind(c.elf) != ELF_K_ELF || elf_getshdrnum(c.elf, &c.shnum) != 0 ||
      elf_getshdrstrndx(c.elf, &shstrndx) != 0) {
    grape__cubin_errf(err, "cubin: libelf cannot read it: %s", elf_errmsg(-1));
    rc = -EINVAL;
    goto out;
  }
  if (shstrndx >= c.shnum) {
    grape__cubin_errf(err, "cubin: section name table index %zu out of %zu", shstrndx, c.shnum);
    rc = -EINVAL;
    goto out;
  }
  c.sh = calloc(c.shnum, sizeof(*c.sh));
  info_of = malloc(c.shnum * sizeof(*info_of));
  shared_of = malloc(c.shnum * sizeof(*shared_of));
  if (c.sh == NULL || info_of == NULL || shared_of == NULL) {
    grape__cubin_errf(err, "out of memory");
    rc = -ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < c.shnum; i++)
    info_of[i] = shared_of[i] = -1;

  /* Pass 1: bound every section, find the symbol table and the .nv.info ones. */
  for (size_t i = 1; i < c.shnum; i++) {
    Elf_Scn* scn = elf_getscn(c.elf, i);
    GElf_Shdr* sh = &c.sh[i];
    if (scn == NULL || gelf_getshdr(scn, sh) == NULL) {
      grape__cubin_errf(err, "cubin: section %zu unreadable: %s", i, elf_errmsg(-1));
      rc = -EINVAL;
      goto out;
    }
    if (sh->sh_type != SHT_NOBITS && !in_range(c.size, sh->sh_offset, sh->sh_size)) {
      grape__cubin_errf(err, "cubin: section %zu (offset 0x%llx, size %llu) runs past the "
                        "%zu-byte image",
                        i, (unsigned long long)sh->sh_offset, (unsigned long long)sh->sh_size,
                        c.size);
      rc = -EINVAL;
      goto out;
    }
    const char* name = elf_strptr(c.elf, shstrndx, sh->sh_name);
    if (name == NULL) {
      grape__cubin_errf(err, "cubin: section %zu has a bad name offset 0x%x", i, sh->sh_name);
      rc = -EINVAL;
      goto out;
    }
    if (sh->sh_type == SHT_SYMTAB) {
      symsec = i;
    } else if (sh->sh_type == SHT_CUDA_INFO && starts_with(name, ".nv.info")) {
      if (name[8] == '\0')
        globsec = i;
      else if (name[8] == '.' && sh->sh_info < c.shnum)
        info_of[sh->sh_info] = (int32_t)i;
    } else if (sh->sh_type == SHT_NOBITS && starts_with(name, ".nv.shared.") &&
               !starts_with(name, ".nv.shared.reserved") && sh->sh_info < c.shnum) {
      shared_of[sh->sh_info] = (int32_t)i;
    }
  }
  if (symsec == 0)
    goto out;   /* no symbols, no kernels: valid (a cubin of device functions only) */

  /* Pass 2: kernels are the entry-point FUNC symbols. */
  const GElf_Shdr* ssh = &c.sh[symsec];
  if (ssh->sh_entsize != sizeof(Elf64_Sym) || ssh->sh_link >= c.shnum) {
    grape__cubin_errf(err, "cubin: symbol table has entry size %llu or string table %u",
                      (unsigned long long)ssh->sh_entsize, ssh->sh_link);
    rc = -EINVAL;
    goto out;
  }
  Elf_Data* sd = elf_getdata(elf_getscn(c.elf, symsec), NULL);
  if (sd == NULL) {
    grape__cubin_errf(err, "cubin: symbol table unreadable: %s", elf_errmsg(-1));
    rc = -EINVAL;
    goto out;
  }
  nsyms = ssh->sh_size / sizeof(Elf64_Sym);
  kern_of_sym = malloc((nsyms ? nsyms : 1) * sizeof(*kern_of_sym));
  if (kern_of_sym == NULL) {
    grape__cubin_errf(err, "out of memory");
    rc = -ENOMEM;
    goto out;
  }
  rc = parse_variables(&c, shstrndx, symsec, sd, nsyms, img);
  if (rc)
    goto out;
  for (size_t s = 0; s < nsyms; s++) {
    GElf_Sym sym;
    kern_of_sym[s] = -1;
    if (gelf_getsym(sd, (int)s, &sym) == NULL)
      continue;
    if (GELF_ST_TYPE(sym.st_info) == STT_FUNC && (sym.st_other & STO_CUDA_ENTRY) &&
        sym.st_shndx > 0 && sym.st_shndx < c.shnum)
      kern_of_sym[s] = (int32_t)nk++;
  }
  if (nk == 0)
    goto out;
  img->kernels = calloc(nk, sizeof(*img->kernels));
  if (img->kernels == NULL) {
    grape__cubin_errf(err, "out of memory");
    rc = -ENOMEM;
    goto out;
  }
  for (size_t s = 0; s < nsyms; s++) {
    GElf_Sym sym;
    if (kern_of_sym[s] < 0 || gelf_getsym(sd, (int)s, &sym) == NULL)
      continue;
    grape_kernel_t* k = &img->kernels[img->nkernels++];
    k->registers = k->max_threads = k->cuda_api_version = -1;
    const char* name = elf_strptr(c.elf, ssh->sh_link, sym.st_name);
    if (name == NULL || name[0] == '\0') {
      grape__cubin_errf(err, "cubin: kernel symbol %zu has a bad name offset 0x%x", s,
                        sym.st_name);
      rc = -EINVAL;
      goto out;
    }
    k->name = strdup(name);
    k->demangled = k->name ? grape_demangle(name) : NULL;
    if (k->demangled == NULL) {
      grape__cubin_errf(err, "out of memory");
      rc = -ENOMEM;
      goto out;
    }
    size_t text = sym.st_shndx;
    uint32_t regs = (uint32_t)(c.sh[text].sh_info >> 24);
    if (regs)
      k->registers = (int)regs;   /* pre-sm_90 cubins keep it here; REGCOUNT overrides */
    if (shared_of[text] >= 0)
      k->shared_bytes = (uint32_t)c.sh[shared_of[text]].sh_size;
    if (info_of[text] >= 0) {
      rc = parse_kernel_info(&c, (size_t)info_of[text], k);
      if (rc)
        goto out;
    }
  }
  if (globsec)
    rc = parse_global_info(&c, globsec, kern_of_sym, nsyms, img->kernels);

out:
  if (rc)
    grape__image_clear(img);
  free(kern_of_sym);
  free(shared_of);
  free(info_of);
  free(c.sh);
  if (c.elf)
    elf_end(c.elf);
  return rc;
}
