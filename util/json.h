/* Reading JSON: the one reader of the CLI (the shim's exit reports, the
 * sim's) and of predict/ (NeuSight's device JSONs, grape_gpu_load_json).
 *
 * DESIGN: header-only and libc-only like every file of util/ (see grow.h), so
 * that predict/ and tools/ include it without an arrow against the map in
 * docs/design.md. The whole text is parsed into a tree of nodes held in one
 * arena of chunks that grows as needed and is freed at once, so a reader
 * walks the tree by key instead of scraping text. Recursive descent over the
 * text; nesting is bounded (64) so hostile input cannot exhaust the stack;
 * numbers follow JSON's grammar (no NaN, infinity, hex or leading zeros) and
 * must fit a double; \uXXXX escapes are decoded to UTF-8 (surrogate pairs
 * included). A malformed text gives NULL and a message naming what is wrong
 * and its byte offset, never a crash. The parser's helpers are static and
 * prefixed grape__json_ so that they cannot clash with a file's own. */
#ifndef GRAPE_UTIL_JSON_H
#define GRAPE_UTIL_JSON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum grape_json_kind_e {
  GRAPE_JSON_NULL,
  GRAPE_JSON_BOOL,
  GRAPE_JSON_NUM,
  GRAPE_JSON_STR,
  GRAPE_JSON_ARR,
  GRAPE_JSON_OBJ
} grape_json_kind_t;

typedef struct grape_json_s grape_json_t;
struct grape_json_s {
  grape_json_kind_t kind;
  double num;            /* GRAPE_JSON_NUM, GRAPE_JSON_BOOL (0/1) */
  const char* str;       /* GRAPE_JSON_STR (unescaped, NUL-terminated) */
  const char* key;       /* member name when inside an object */
  grape_json_t* child;   /* first element / member */
  grape_json_t* next;    /* next sibling */
  size_t len;            /* elements / members */
};

/* ---- Parser internals ---- */

#define GRAPE_JSON_MAX_DEPTH 64

typedef struct grape__json_chunk_s {
  struct grape__json_chunk_s* prev;
  size_t used, cap;
  char data[];
} grape__json_chunk_t;

typedef struct grape__json_parser_s {
  const char* s;
  size_t pos;
  grape__json_chunk_t* arena;
  char* err;
  size_t errcap;
  int failed;
} grape__json_parser_t;

/* The arena's header sits in front of the root node. */
typedef struct grape__json_root_s {
  grape__json_chunk_t* arena;
  grape_json_t node;
} grape__json_root_t;

static inline void grape__json_arena_free(grape__json_chunk_t* c) {
  while (c) {
    grape__json_chunk_t* prev = c->prev;
    free(c);
    c = prev;
  }
}

static inline void* grape__json_alloc(grape__json_parser_t* p, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (p->arena == NULL || p->arena->used + n > p->arena->cap) {
    size_t cap = n > 65536 ? n : 65536;
    grape__json_chunk_t* c = malloc(sizeof(*c) + cap);
    if (c == NULL)
      return NULL;
    c->prev = p->arena;
    c->used = 0;
    c->cap = cap;
    p->arena = c;
  }
  void* r = p->arena->data + p->arena->used;
  p->arena->used += n;
  return r;
}

/* Records the first failure: its message and the byte offset it happened at. */
__attribute__((format(printf, 2, 3)))
static inline void grape__json_fail(grape__json_parser_t* p, const char* fmt, ...) {
  if (p->failed)
    return;
  p->failed = 1;
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (p->err != NULL && p->errcap)
    snprintf(p->err, p->errcap, "%s at byte %zu", msg, p->pos);
}

static inline void grape__json_skip_ws(grape__json_parser_t* p) {
  while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
    p->pos++;
}

static inline int grape__json_hex4(const char* s, unsigned* out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

static inline size_t grape__json_put_utf8(char* o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* A string starting at the opening quote; unescaped into the arena. */
static inline const char* grape__json_string(grape__json_parser_t* p) {
  size_t start = ++p->pos, end = start;
  while (p->s[end] != '"') {
    if (p->s[end] == '\0') {
      p->pos = end;
      grape__json_fail(p, "unterminated string");
      return NULL;
    }
    end += p->s[end] == '\\' && p->s[end + 1] ? 2 : 1;
  }
  /* Unescaped text is never longer than the escaped one. */
  char* out = grape__json_alloc(p, end - start + 1);
  if (out == NULL) {
    grape__json_fail(p, "out of memory");
    return NULL;
  }
  size_t n = 0;
  for (size_t i = start; i < end; i++) {
    char c = p->s[i];
    if ((unsigned char)c < 0x20) {
      p->pos = i;
      grape__json_fail(p, "control character in a string");
      return NULL;
    }
    if (c != '\\') {
      out[n++] = c;
      continue;
    }
    c = p->s[++i];
    switch (c) {
    case '"': case '\\': case '/': out[n++] = c; break;
    case 'b': out[n++] = '\b'; break;
    case 'f': out[n++] = '\f'; break;
    case 'n': out[n++] = '\n'; break;
    case 'r': out[n++] = '\r'; break;
    case 't': out[n++] = '\t'; break;
    case 'u': {
      unsigned cp, lo;
      if (i + 4 >= end || grape__json_hex4(p->s + i + 1, &cp) != 0) {
        p->pos = i;
        grape__json_fail(p, "bad \\u escape");
        return NULL;
      }
      i += 4;
      if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < end && p->s[i + 1] == '\\' && p->s[i + 2] == 'u' &&
          grape__json_hex4(p->s + i + 3, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
      }
      /* Six escaped bytes give at most four, so the buffer suffices. */
      n += grape__json_put_utf8(out + n, cp);
      break;
    }
    default:
      p->pos = i;
      grape__json_fail(p, "bad escape");
      return NULL;
    }
  }
  out[n] = '\0';
  p->pos = end + 1;
  return out;
}

/* Length of the JSON number at s (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?),
 * or 0 when s holds none: strtod alone would also take "inf", "nan", hex
 * and "1.", which no JSON writer means. */
static inline size_t grape__json_number_len(const char* s) {
  size_t i = s[0] == '-';
#define GRAPE__JSON_DIGIT(c) ((c) >= '0' && (c) <= '9')
  if (s[i] == '0')
    i++;
  else if (s[i] >= '1' && s[i] <= '9')
    while (GRAPE__JSON_DIGIT(s[i]))
      i++;
  else
    return 0;
  if (s[i] == '.') {
    if (!GRAPE__JSON_DIGIT(s[i + 1]))
      return 0;
    i++;
    while (GRAPE__JSON_DIGIT(s[i]))
      i++;
  }
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1 + (s[i + 1] == '+' || s[i + 1] == '-');
    if (!GRAPE__JSON_DIGIT(s[j]))
      return 0;
    while (GRAPE__JSON_DIGIT(s[j]))
      j++;
    i = j;
  }
  /* A digit right after the number ("01") is not a second value. */
  return GRAPE__JSON_DIGIT(s[i]) ? 0 : i;
#undef GRAPE__JSON_DIGIT
}

static inline grape_json_t* grape__json_value(grape__json_parser_t* p, grape_json_t* v, int depth);

static inline grape_json_t* grape__json_node(grape__json_parser_t* p) {
  grape_json_t* n = grape__json_alloc(p, sizeof(grape_json_t));
  if (n == NULL)
    grape__json_fail(p, "out of memory");
  else
    memset(n, 0, sizeof(*n));
  return n;
}

/* Array or object: elements parsed into a linked list of children. */
static inline grape_json_t* grape__json_container(grape__json_parser_t* p, grape_json_t* v, int depth,
                                                  int is_obj) {
  v->kind = is_obj ? GRAPE_JSON_OBJ : GRAPE_JSON_ARR;
  char close = is_obj ? '}' : ']';
  p->pos++;
  grape__json_skip_ws(p);
  if (p->s[p->pos] == close) {
    p->pos++;
    return v;
  }
  grape_json_t** tail = &v->child;
  for (;;) {
    grape__json_skip_ws(p);
    const char* key = NULL;
    if (is_obj) {
      if (p->s[p->pos] != '"') {
        grape__json_fail(p, "expected a member name");
        return NULL;
      }
      if ((key = grape__json_string(p)) == NULL)
        return NULL;
      grape__json_skip_ws(p);
      if (p->s[p->pos] != ':') {
        grape__json_fail(p, "expected ':'");
        return NULL;
      }
      p->pos++;
    }
    grape_json_t* e = grape__json_node(p);
    if (e == NULL || grape__json_value(p, e, depth + 1) == NULL)
      return NULL;
    e->key = key;
    *tail = e;
    tail = &e->next;
    v->len++;
    grape__json_skip_ws(p);
    if (p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->s[p->pos] == close) {
      p->pos++;
      return v;
    }
    grape__json_fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    return NULL;
  }
}

static inline grape_json_t* grape__json_value(grape__json_parser_t* p, grape_json_t* v, int depth) {
  if (depth > GRAPE_JSON_MAX_DEPTH) {
    grape__json_fail(p, "nested deeper than %d", GRAPE_JSON_MAX_DEPTH);
    return NULL;
  }
  grape__json_skip_ws(p);
  const char* s = p->s + p->pos;
  switch (*s) {
  case '{': return grape__json_container(p, v, depth, 1);
  case '[': return grape__json_container(p, v, depth, 0);
  case '"':
    v->kind = GRAPE_JSON_STR;
    return (v->str = grape__json_string(p)) ? v : NULL;
  case 't':
  case 'f':
  case 'n': {
    static const char* const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
      size_t len = strlen(words[i]);
      if (strncmp(s, words[i], len) == 0) {
        v->kind = i == 2 ? GRAPE_JSON_NULL : GRAPE_JSON_BOOL;
        v->num = i == 0;
        p->pos += len;
        return v;
      }
    }
    break;
  }
  default:
    if (*s == '-' || (*s >= '0' && *s <= '9')) {
      size_t len = grape__json_number_len(s);
      if (len == 0) {
        grape__json_fail(p, "malformed number");
        return NULL;
      }
      v->kind = GRAPE_JSON_NUM;
      v->num = strtod(s, NULL);
      if (v->num - v->num != 0) {   /* infinite: beyond a double */
        grape__json_fail(p, "number out of range");
        return NULL;
      }
      p->pos += len;
      return v;
    }
  }
  grape__json_fail(p, *s ? "unexpected character" : "unexpected end of text");
  return NULL;
}

/* ---- API ---- */

/* Parses text (NUL-terminated); NULL on error, with a message naming what is
 * wrong and its byte offset in err (errcap bytes, may be 0). The tree lives
 * until grape__json_free; its strings and keys are the tree's. Thread-safe
 * (no state outside the call). */
static inline grape_json_t* grape__json_parse(const char* text, char* err, size_t errcap) {
  grape__json_parser_t p = {text, 0, NULL, err, errcap, 0};
  if (err && errcap)
    err[0] = '\0';
  grape__json_root_t* r = grape__json_alloc(&p, sizeof(grape__json_root_t));
  grape_json_t* v = NULL;
  if (r != NULL) {
    memset(r, 0, sizeof(*r));
    v = grape__json_value(&p, &r->node, 0);
    if (v != NULL) {
      grape__json_skip_ws(&p);
      if (text[p.pos] != '\0') {
        grape__json_fail(&p, "text after the value");
        v = NULL;
      }
    }
  } else {
    grape__json_fail(&p, "out of memory");
  }
  if (v == NULL) {
    grape__json_arena_free(p.arena);
    return NULL;
  }
  r->arena = p.arena;
  return &r->node;
}

/* Frees a tree grape__json_parse returned (NULL: nothing); every node, string
 * and key of it goes stale. */
static inline void grape__json_free(grape_json_t* root) {
  if (root == NULL)
    return;
  grape__json_root_t* r = (grape__json_root_t*)((char*)root - offsetof(grape__json_root_t, node));
  grape__json_arena_free(r->arena);
}

/* Member key of object o, or NULL (also when o is not an object). */
static inline const grape_json_t* grape__json_get(const grape_json_t* o, const char* key) {
  if (o == NULL || o->kind != GRAPE_JSON_OBJ)
    return NULL;
  for (const grape_json_t* e = o->child; e; e = e->next)
    if (strcmp(e->key, key) == 0)
      return e;
  return NULL;
}

/* The number at v, or dflt when v is NULL or not a number. */
static inline double grape__json_num(const grape_json_t* v, double dflt) {
  return v != NULL && (v->kind == GRAPE_JSON_NUM || v->kind == GRAPE_JSON_BOOL) ? v->num : dflt;
}

/* The string at v, or NULL. */
static inline const char* grape__json_str(const grape_json_t* v) {
  return v != NULL && v->kind == GRAPE_JSON_STR ? v->str : NULL;
}

#endif
