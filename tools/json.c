/* A small JSON reader (see json.h).
 *
 * DESIGN: recursive descent over the text, nodes and unescaped strings taken
 * from an arena of chunks that grows as needed and is freed in one go.
 * Nesting is bounded (64) so hostile input cannot exhaust the stack. \uXXXX
 * escapes are decoded to UTF-8 (surrogate pairs included). */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct chunk_s {
  struct chunk_s* prev;
  size_t used, cap;
  char data[];
} chunk_t;

typedef struct parser_s {
  const char* s;
  size_t pos;
  chunk_t* arena;
  char* err;
  size_t errcap;
  int failed;
} parser_t;

/* The arena's header sits in front of the root node. */
typedef struct root_s {
  chunk_t* arena;
  json_t node;
} root_t;

static void* arena_alloc(parser_t* p, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (p->arena == NULL || p->arena->used + n > p->arena->cap) {
    size_t cap = n > 65536 ? n : 65536;
    chunk_t* c = malloc(sizeof(*c) + cap);
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

__attribute__((format(printf, 2, 3)))
static void fail(parser_t* p, const char* fmt, ...) {
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

static void skip_ws(parser_t* p) {
  while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
    p->pos++;
}

static int hex4(const char* s, unsigned* out) {
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

static size_t put_utf8(char* o, unsigned cp) {
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
static const char* parse_string(parser_t* p) {
  size_t start = ++p->pos, end = start;
  while (p->s[end] != '"') {
    if (p->s[end] == '\0') {
      p->pos = end;
      fail(p, "unterminated string");
      return NULL;
    }
    end += p->s[end] == '\\' && p->s[end + 1] ? 2 : 1;
  }
  /* Unescaped text is never longer than the escaped one. */
  char* out = arena_alloc(p, end - start + 1);
  if (out == NULL) {
    fail(p, "out of memory");
    return NULL;
  }
  size_t n = 0;
  for (size_t i = start; i < end; i++) {
    char c = p->s[i];
    if ((unsigned char)c < 0x20) {
      p->pos = i;
      fail(p, "control character in a string");
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
      if (i + 4 >= end || hex4(p->s + i + 1, &cp) != 0) {
        p->pos = i;
        fail(p, "bad \\u escape");
        return NULL;
      }
      i += 4;
      if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < end && p->s[i + 1] == '\\' && p->s[i + 2] == 'u' &&
          hex4(p->s + i + 3, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
      }
      /* Six escaped bytes give at most four, so the buffer suffices. */
      n += put_utf8(out + n, cp);
      break;
    }
    default:
      p->pos = i;
      fail(p, "bad escape");
      return NULL;
    }
  }
  out[n] = '\0';
  p->pos = end + 1;
  return out;
}

static json_t* parse_value(parser_t* p, json_t* into, int depth);

static json_t* new_node(parser_t* p) {
  json_t* n = arena_alloc(p, sizeof(json_t));
  if (n == NULL)
    fail(p, "out of memory");
  else
    memset(n, 0, sizeof(*n));
  return n;
}

/* Array or object: elements parsed into a linked list of children. */
static json_t* parse_container(parser_t* p, json_t* v, int depth, int is_obj) {
  v->kind = is_obj ? JSON_OBJ : JSON_ARR;
  char close = is_obj ? '}' : ']';
  p->pos++;
  skip_ws(p);
  if (p->s[p->pos] == close) {
    p->pos++;
    return v;
  }
  json_t** tail = &v->child;
  for (;;) {
    skip_ws(p);
    const char* key = NULL;
    if (is_obj) {
      if (p->s[p->pos] != '"') {
        fail(p, "expected a member name");
        return NULL;
      }
      if ((key = parse_string(p)) == NULL)
        return NULL;
      skip_ws(p);
      if (p->s[p->pos] != ':') {
        fail(p, "expected ':'");
        return NULL;
      }
      p->pos++;
    }
    json_t* e = new_node(p);
    if (e == NULL || parse_value(p, e, depth + 1) == NULL)
      return NULL;
    e->key = key;
    *tail = e;
    tail = &e->next;
    v->len++;
    skip_ws(p);
    if (p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->s[p->pos] == close) {
      p->pos++;
      return v;
    }
    fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    return NULL;
  }
}

static json_t* parse_value(parser_t* p, json_t* v, int depth) {
  if (depth > MAX_DEPTH) {
    fail(p, "nested deeper than %d", MAX_DEPTH);
    return NULL;
  }
  skip_ws(p);
  const char* s = p->s + p->pos;
  switch (*s) {
  case '{': return parse_container(p, v, depth, 1);
  case '[': return parse_container(p, v, depth, 0);
  case '"':
    v->kind = JSON_STR;
    return (v->str = parse_string(p)) ? v : NULL;
  case 't':
  case 'f':
  case 'n': {
    static const char* const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
      size_t len = strlen(words[i]);
      if (strncmp(s, words[i], len) == 0) {
        v->kind = i == 2 ? JSON_NULL : JSON_BOOL;
        v->num = i == 0;
        p->pos += len;
        return v;
      }
    }
    break;
  }
  default:
    if (*s == '-' || (*s >= '0' && *s <= '9')) {
      char* end;
      v->kind = JSON_NUM;
      v->num = strtod(s, &end);
      if (end == s)
        break;
      p->pos += (size_t)(end - s);
      return v;
    }
  }
  fail(p, *s ? "unexpected character" : "unexpected end of text");
  return NULL;
}

json_t* json_parse(const char* text, char* err, size_t errcap) {
  parser_t p = {text, 0, NULL, err, errcap, 0};
  if (err && errcap)
    err[0] = '\0';
  root_t* r = arena_alloc(&p, sizeof(root_t));
  json_t* v = NULL;
  if (r != NULL) {
    memset(r, 0, sizeof(*r));
    v = parse_value(&p, &r->node, 0);
    if (v != NULL) {
      skip_ws(&p);
      if (text[p.pos] != '\0') {
        fail(&p, "text after the value");
        v = NULL;
      }
    }
  } else {
    fail(&p, "out of memory");
  }
  if (v == NULL) {
    while (p.arena) {
      chunk_t* prev = p.arena->prev;
      free(p.arena);
      p.arena = prev;
    }
    return NULL;
  }
  r->arena = p.arena;
  return &r->node;
}

void json_free(json_t* root) {
  if (root == NULL)
    return;
  root_t* r = (root_t*)((char*)root - offsetof(root_t, node));
  chunk_t* c = r->arena;
  while (c) {
    chunk_t* prev = c->prev;
    free(c);
    c = prev;
  }
}

const json_t* json_get(const json_t* o, const char* key) {
  if (o == NULL || o->kind != JSON_OBJ)
    return NULL;
  for (const json_t* e = o->child; e; e = e->next)
    if (strcmp(e->key, key) == 0)
      return e;
  return NULL;
}

double json_num(const json_t* v, double dflt) {
  return v != NULL && (v->kind == JSON_NUM || v->kind == JSON_BOOL) ? v->num : dflt;
}

const char* json_str(const json_t* v) {
  return v != NULL && v->kind == JSON_STR ? v->str : NULL;
}
