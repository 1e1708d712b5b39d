/* PTX text: the target arch, the kernels (.entry) it defines and their
 * parameter layouts, computed from the .param declarations the way ptxas
 * lays them out (each parameter aligned to its .align or element size), and
 * its module-scope variables (.global, .const: name, size, initial bytes).
 *
 * DESIGN: a single forward scan over bounded text; a PTX image that is not
 * text (control bytes) or has no .version directive is rejected, so a binary
 * payload mislabelled as PTX is an error. Registers and shared memory are not
 * known before ptxas runs: they stay -1 and 0.
 */
#include "ptx.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"
#include "util/grow.h"

typedef struct scan_s {
  const char* p;
  const char* end;
} scan_t;

static void skip_space(scan_t* s) {
  while (s->p < s->end) {
    if (isspace((unsigned char)*s->p)) {
      s->p++;
    } else if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '/') {
      while (s->p < s->end && *s->p != '\n')
        s->p++;
    } else if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '*') {
      s->p += 2;
      while (s->end - s->p >= 2 && !(s->p[0] == '*' && s->p[1] == '/'))
        s->p++;
      s->p = s->end - s->p >= 2 ? s->p + 2 : s->end;
    } else {
      return;
    }
  }
}

static int ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* The next token: an identifier/directive, or one punctuation character. */
static size_t token(scan_t* s, const char** tok) {
  skip_space(s);
  *tok = s->p;
  if (s->p >= s->end)
    return 0;
  if (!ident_char(*s->p)) {
    s->p++;
    return 1;
  }
  while (s->p < s->end && ident_char(*s->p))
    s->p++;
  return (size_t)(s->p - *tok);
}

/* The decimal number t[0, n) (a token, not NUL-terminated); -1 if it is not
 * all digits or too large. */
static long tok_num(const char* t, size_t n) {
  long v = 0;
  if (n == 0 || n > 9)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (t[i] < '0' || t[i] > '9')
      return -1;
    v = v * 10 + (t[i] - '0');
  }
  return v;
}

static int tok_is(const char* t, size_t n, const char* word) {
  return n == strlen(word) && memcmp(t, word, n) == 0;
}

/* Bytes of a PTX scalar type such as .u64 or .f32; 0 if not one. */
static uint32_t type_size(const char* t, size_t n) {
  if (n < 3 || t[0] != '.')
    return 0;
  if (tok_is(t, n, ".pred"))
    return 1;
  char c = t[1];
  if (c != 'u' && c != 's' && c != 'b' && c != 'f')
    return 0;
  long bits = tok_num(t + 2, n - 2);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? (uint32_t)bits / 8 : 0;
}

/* Parses "( .param ... , ... )" after an entry name into k's parameters. */
static int parse_params(scan_t* s, grape_kernel_t* k) {
  const char* t;
  size_t n = token(s, &t);
  if (!tok_is(t, n, "("))
    return 0;   /* no parameter list */
  uint32_t off = 0;
  size_t cap = 0;
  for (;;) {
    n = token(s, &t);
    if (n == 0)
      return -EINVAL;
    if (tok_is(t, n, ")"))
      break;
    if (tok_is(t, n, ","))
      continue;
    if (!tok_is(t, n, ".param"))
      return -EINVAL;
    uint32_t esize = 0, align = 0, count = 1;
    int ptr = 0;
    /* Directives up to the parameter name, then an optional [N]. After .ptr,
     * ".align N" is the alignment of the memory pointed to, not of the
     * parameter (".param .u64 .ptr .align 1 p" is an 8-aligned pointer). */
    for (;;) {
      n = token(s, &t);
      if (n == 0)
        return -EINVAL;
      if (tok_is(t, n, ".align")) {
        n = token(s, &t);
        long a = tok_num(t, n);
        if (a <= 0 || a > 4096 || (a & (a - 1)))
          return -EINVAL;
        if (!ptr)
          align = (uint32_t)a;
      } else if (tok_is(t, n, ".ptr")) {
        ptr = 1;
      } else if (t[0] == '.') {
        uint32_t sz = type_size(t, n);
        if (sz)
          esize = sz;
      } else {
        break;   /* the name */
      }
    }
    const char* save = s->p;
    n = token(s, &t);
    if (tok_is(t, n, "[")) {
      n = token(s, &t);
      long c = tok_num(t, n);
      if (c <= 0 || c > 65536)
        return -EINVAL;
      count = (uint32_t)c;
      n = token(s, &t);
      if (!tok_is(t, n, "]"))
        return -EINVAL;
    } else {
      s->p = save;
    }
    if (esize == 0)
      return -EINVAL;
    if (align == 0)
      align = esize;
    off = (off + align - 1) & ~(align - 1);
    if (k->nparams == cap) {
      grape_kparam_t* p = grape__grow(k->params, &cap, k->nparams + 1, sizeof(*p), 8);
      if (p == NULL)
        return -ENOMEM;
      k->params = p;
    }
    k->params[k->nparams].offset = off;
    k->params[k->nparams].size = esize * count;
    k->nparams++;
    off += esize * count;
    if (off > 1u << 20)
      return -EINVAL;
  }
  k->param_bytes = off;
  return 0;
}

/* ---- Variables (.global / .const at module scope) ---- */

/* The value of an initialiser's element: a decimal or 0x integer (a sign
 * before it is the caller's), or a float's bits as PTX writes them (0fXXXXXXXX,
 * 0dXXXXXXXXXXXXXXXX); 0 if it is none of those. */
static int tok_value(const char* t, size_t n, uint64_t* v) {
  int base = 10;
  size_t i = 0, max = 20;
  if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X' || t[1] == 'f' || t[1] == 'd')) {
    base = 16;
    max = t[1] == 'f' ? 8 : 16;
    i = 2;
    if (n - i != max && t[1] != 'x' && t[1] != 'X')
      return 0;
  }
  if (i == n || n - i > max)
    return 0;
  uint64_t x = 0;
  for (; i < n; i++) {
    int d = isdigit((unsigned char)t[i]) ? t[i] - '0'
            : base == 16 && isxdigit((unsigned char)t[i]) ? (tolower((unsigned char)t[i]) - 'a' + 10)
                                                           : -1;
    if (d < 0)
      return 0;
    x = x * (uint64_t)base + (uint64_t)d;
  }
  *v = x;
  return 1;
}

/* Reads "= value" or "= { ... }" (nested braces flattened) into init, count
 * elements of esize bytes at most. 0, or -1 where an element is not a number
 * (an address, say): the variable is then left out, never given wrong bytes. */
static int parse_init(scan_t* s, uint8_t* init, uint32_t esize, uint64_t count, uint64_t* got) {
  const char* t;
  size_t n;
  int depth = 0, neg = 0;
  *got = 0;
  for (;;) {
    n = token(s, &t);
    if (n == 0)
      return -1;
    if (tok_is(t, n, "{")) {
      depth++;
    } else if (tok_is(t, n, "}")) {
      if (--depth < 0)
        return -1;
    } else if (tok_is(t, n, ",")) {
    } else if (tok_is(t, n, "-")) {
      neg = 1;
    } else if (tok_is(t, n, ";")) {
      return depth == 0 ? 0 : -1;
    } else {
      uint64_t v;
      if (!tok_value(t, n, &v) || *got >= count)
        return -1;
      if (neg)
        v = (uint64_t)0 - v;
      neg = 0;
      if (init != NULL)
        for (uint32_t b = 0; b < esize; b++)   /* little-endian, as the device */
          init[*got * esize + b] = (uint8_t)(v >> (8 * b));
      (*got)++;
    }
  }
}

/* Whether the declaration at p starts its line, after the linkage
 * directives that may precede it (.visible, .weak, .common): not the state
 * space of a pointer parameter (".ptr .global") or of an instruction. */
static int starts_declaration(const char* text, const char* p) {
  const char* q = p;
  while (q > text && q[-1] != '\n' && q[-1] != ';' && q[-1] != '}')
    q--;
  scan_t s = {q, p};
  const char* t;
  size_t n;
  while ((n = token(&s, &t)) != 0)
    if (!tok_is(t, n, ".visible") && !tok_is(t, n, ".weak") && !tok_is(t, n, ".common"))
      return 0;
  return 1;
}

/* Parses the declaration after ".global" / ".const" into g: its size and its
 * initial bytes. 1: a variable; 0: none to keep (no storage, or an
 * initialiser it cannot read); -ENOMEM. */
static int parse_variable(scan_t* s, grape_global_t* g) {
  const char* t;
  size_t n;
  uint32_t esize = 0, lanes = 1;
  for (;;) {
    n = token(s, &t);
    if (n == 0)
      return 0;
    if (tok_is(t, n, ".align")) {
      (void)token(s, &t);
    } else if (tok_is(t, n, ".v2") || tok_is(t, n, ".v4")) {
      lanes = (uint32_t)(t[2] - '0');
    } else if (t[0] == '.') {
      uint32_t sz = type_size(t, n);
      if (sz)
        esize = sz;
    } else {
      break;   /* the name */
    }
  }
  if (esize == 0 || !ident_char(*t) || *t == '.')
    return 0;
  const char* name = t;
  size_t name_n = n;
  uint64_t count = lanes;
  int open_dim = 0;
  for (;;) {
    n = token(s, &t);
    if (!tok_is(t, n, "["))
      break;
    n = token(s, &t);
    if (tok_is(t, n, "]")) {
      open_dim = 1;   /* [] : its length is the initialiser's */
      continue;
    }
    long c = tok_num(t, n);
    if (c <= 0 || count > (1ull << 40) / (uint64_t)c)
      return 0;
    count *= (uint64_t)c;
    n = token(s, &t);
    if (!tok_is(t, n, "]"))
      return 0;
  }
  uint64_t got = 0;
  if (tok_is(t, n, "=")) {
    const char* at = s->p;
    if (open_dim) {   /* first pass: count the elements */
      if (parse_init(s, NULL, esize, UINT64_MAX, &got) != 0 || got == 0)
        return 0;
      count *= got;
      s->p = at;
    }
    g->init = calloc(count, esize);
    if (g->init == NULL)
      return -ENOMEM;
    if (parse_init(s, g->init, esize, count, &got) != 0) {
      free(g->init);
      g->init = NULL;
      return 0;
    }
  } else if (!tok_is(t, n, ";") || open_dim) {
    return 0;
  }
  g->size = count * esize;
  g->name = strndup(name, name_n);
  if (g->name == NULL) {
    free(g->init);
    g->init = NULL;
    return -ENOMEM;
  }
  return 1;
}

/* Every module-scope ".global" and ".const" variable of the text, in order
 * (an ".extern" one has no storage here and is not a declaration this
 * accepts). */
static int parse_variables(const char* text, const char* end, grape_image_t* img) {
  static const char* const spaces[] = {".global", ".const"};
  size_t cap = 0;
  for (int sp = 0; sp < 2; sp++) {
    size_t len = strlen(spaces[sp]);
    const char* p = text;
    while ((p = memmem(p, (size_t)(end - p), spaces[sp], len)) != NULL) {
      const char* after = p + len;
      int word = (p == text || isspace((unsigned char)p[-1])) && after < end &&
                 isspace((unsigned char)*after);
      const char* at = p;
      p = after;
      if (!word || !starts_declaration(text, at))
        continue;
      grape_global_t g = {0};
      scan_t s = {after, end};
      int rc = parse_variable(&s, &g);
      if (rc < 0)
        return rc;
      p = s.p > p ? s.p : p;
      if (rc == 0)
        continue;
      grape_global_t* gs = grape__grow(img->globals, &cap, img->nglobals + 1, sizeof(*gs), 8);
      if (gs == NULL) {
        free(g.name);
        free(g.init);
        return -ENOMEM;
      }
      img->globals = gs;
      img->globals[img->nglobals++] = g;
    }
  }
  return 0;
}

/* PTX puts .version first (after comments); a payload without it in its first
 * bytes is not PTX. Only that prefix is checked for control bytes: a full scan
 * would cost more than the rest of the parse on large libraries. */
#define PTX_HEAD 4096

int grape__ptx_parse(grape_image_t* img, grape_cubin_err_t* err) {
  const char* text = (const char*)img->data;
  size_t size = strnlen(text, img->size);
  size_t head = size < PTX_HEAD ? size : PTX_HEAD;
  size_t cap = 0;
  int rc = 0;
  for (size_t i = 0; i < head; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r' && ch != '\f' && ch != '\v') {
      grape__cubin_errf(err, "ptx: control byte 0x%02x at offset %zu: not PTX text", ch, i);
      return -ENOEXEC;
    }
  }
  if (memmem(text, head, ".version", 8) == NULL) {
    grape__cubin_errf(err, "ptx: no .version directive in the first %zu bytes: not PTX text",
                      head);
    return -ENOEXEC;
  }
  const char* t;
  size_t n;
  const char* target = memmem(text, head, ".target", 7);
  if (target && img->arch == 0) {
    scan_t s = {target + 7, text + size};
    n = token(&s, &t);
    size_t m = 3;   /* "sm_90", "sm_90a", "sm_100f" */
    while (m < n && t[m] >= '0' && t[m] <= '9')
      m++;
    long a = n > 3 && memcmp(t, "sm_", 3) == 0 ? tok_num(t + 3, m - 3) : -1;
    if (a > 0 && a < 10000) {
      img->arch = (int)a;
      if (m + 1 == n && (t[m] == 'a' || t[m] == 'f'))
        img->variant = t[m];
    }
  }
  /* Kernels: every ".entry" directive (memmem is much faster than tokenising). */
  const char* p = text;
  const char* end = text + size;
  while ((p = memmem(p, (size_t)(end - p), ".entry", 6)) != NULL) {
    const char* after = p + 6;
    int word = (p == text || isspace((unsigned char)p[-1])) && after < end &&
               isspace((unsigned char)*after);
    p = after;
    if (!word)
      continue;
    scan_t s = {after, end};
    n = token(&s, &t);
    if (n == 0 || !ident_char(*t)) {
      grape__cubin_errf(err, "ptx: .entry without a name at offset %zu", (size_t)(t - text));
      rc = -EINVAL;
      goto fail;
    }
    if (img->nkernels == cap) {
      grape_kernel_t* ks =
          grape__grow(img->kernels, &cap, img->nkernels + 1, sizeof(*ks), 8);
      if (ks == NULL) {
        rc = -ENOMEM;
        grape__cubin_errf(err, "out of memory");
        goto fail;
      }
      img->kernels = ks;
    }
    grape_kernel_t* k = &img->kernels[img->nkernels++];
    memset(k, 0, sizeof(*k));
    k->registers = k->max_threads = k->cuda_api_version = -1;
    k->name = strndup(t, n);
    k->demangled = k->name ? grape_demangle(k->name) : NULL;
    if (k->demangled == NULL) {
      rc = -ENOMEM;
      grape__cubin_errf(err, "out of memory");
      goto fail;
    }
    size_t at = (size_t)(s.p - text);
    rc = parse_params(&s, k);
    if (rc) {
      grape__cubin_errf(err, "ptx: kernel %s: %s in its parameter list at offset %zu", k->name,
                        rc == -ENOMEM ? "out of memory" : "syntax error", at);
      goto fail;
    }
    p = s.p;
  }
  rc = parse_variables(text, end, img);
  if (rc) {
    grape__cubin_errf(err, "out of memory");
    goto fail;
  }
  return 0;
fail:
  grape__image_clear(img);
  return rc;
}
