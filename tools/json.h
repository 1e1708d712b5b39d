/* A small JSON reader for the CLI: the shim's exit reports and the sim's.
 *
 * DESIGN: the whole text is parsed into a tree of nodes held in one arena
 * (freed at once), so a reader walks it by key instead of scraping text.
 * Depth, size and numbers are bounded; a malformed text gives NULL and a
 * message with its byte offset, never a crash. */
#ifndef GRAPE_TOOLS_JSON_H
#define GRAPE_TOOLS_JSON_H

#include <stddef.h>

typedef enum json_kind_e { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ } json_kind_t;

typedef struct json_s json_t;
struct json_s {
  json_kind_t kind;
  double num;          /* JSON_NUM, JSON_BOOL (0/1) */
  const char* str;     /* JSON_STR (unescaped, NUL-terminated) */
  const char* key;     /* member name when inside an object */
  json_t* child;       /* first element / member */
  json_t* next;        /* next sibling */
  size_t len;          /* elements / members */
};

/* Parses text; NULL on error with a message (naming the byte offset) in err.
 * The tree lives until json_free. */
json_t* json_parse(const char* text, char* err, size_t errcap);
void json_free(json_t* root);

/* Member key of object o, or NULL (also when o is not an object). */
const json_t* json_get(const json_t* o, const char* key);

/* The number at v, or dflt when v is NULL or not a number. */
double json_num(const json_t* v, double dflt);

/* The string at v, or NULL. */
const char* json_str(const json_t* v);

#endif
