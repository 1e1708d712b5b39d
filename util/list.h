/* An intrusive doubly linked list: the one list of the house (libuv's
 * queue.h is the model).
 *
 * DESIGN: a list is a circular chain of grape_list_t links through one
 * sentinel, the head, which belongs to the owner; an element embeds a link
 * and is found from it with GRAPE_LIST_DATA (offsetof). With the sentinel,
 * inserting and removing never test for an end, and an element is removed
 * without knowing which list it is on. Nothing is allocated. Header-only and
 * libc-only, so every folder may use it (util/'s rule, docs/design.md).
 *
 *   grape_list_t lru;                                  owner: the head
 *   grape__list_init(&lru);                            (or GRAPE_LIST_INIT(lru) for a static)
 *   grape__list_insert_tail(&lru, &e->lru);            element: embeds a link
 *   for (grape_list_t* q = grape__list_first(&lru); q != &lru; q = q->next)
 *     use(GRAPE_LIST_DATA(q, elem_t, lru));
 *
 * An element's link is NULL-filled while it is on no list when it was made
 * with calloc and removed with grape__list_remove (which clears it), so
 * grape__list_linked tells whether it is on one. Not thread-safe: the
 * owner's lock guards the head and every link on it. */
#ifndef GRAPE_UTIL_LIST_H
#define GRAPE_UTIL_LIST_H

#include <stddef.h>

typedef struct grape_list_s {
  struct grape_list_s* prev;
  struct grape_list_s* next;
} grape_list_t;

/* A static head's initialiser: GRAPE_LIST_INIT(name) for `grape_list_t name`. */
#define GRAPE_LIST_INIT(name) {&(name), &(name)}

/* The element of type `type` whose member `field` is link q. */
#define GRAPE_LIST_DATA(q, type, field) ((type*)(void*)((char*)(q) - offsetof(type, field)))

static inline void grape__list_init(grape_list_t* head) {
  head->prev = head->next = head;
}

static inline int grape__list_empty(const grape_list_t* head) {
  return head->next == head;
}

/* The first and last links, or head itself when the list is empty. */
static inline grape_list_t* grape__list_first(const grape_list_t* head) {
  return head->next;
}

static inline grape_list_t* grape__list_last(const grape_list_t* head) {
  return head->prev;
}

/* True while e is on a list (its link is cleared when removed). */
static inline int grape__list_linked(const grape_list_t* e) {
  return e->next != NULL;
}

static inline void grape__list_insert_head(grape_list_t* head, grape_list_t* e) {
  e->next = head->next;
  e->prev = head;
  head->next->prev = e;
  head->next = e;
}

static inline void grape__list_insert_tail(grape_list_t* head, grape_list_t* e) {
  e->prev = head->prev;
  e->next = head;
  head->prev->next = e;
  head->prev = e;
}

/* Takes e off its list and clears its link. */
static inline void grape__list_remove(grape_list_t* e) {
  e->prev->next = e->next;
  e->next->prev = e->prev;
  e->prev = e->next = NULL;
}

/* Moves e (on the list of head) to its tail: a least-recently-used list's
 * "used now". */
static inline void grape__list_move_tail(grape_list_t* head, grape_list_t* e) {
  if (head->prev != e) {
    grape__list_remove(e);
    grape__list_insert_tail(head, e);
  }
}

/* Appends every element of `from` to the tail of `to`, in order, and leaves
 * `from` empty (a whole list taken out from under a lock, or put back). */
static inline void grape__list_move_all(grape_list_t* from, grape_list_t* to) {
  if (grape__list_empty(from))
    return;
  from->next->prev = to->prev;
  to->prev->next = from->next;
  from->prev->next = to;
  to->prev = from->prev;
  grape__list_init(from);
}

#endif
