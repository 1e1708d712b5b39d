/* The trie of the keys' op lists, and which keys are live in it.
 *
 * DESIGN: a node per (parent, op key); a key's ops lead from the root to its
 * terminal node. The launch path walks it without the lock (cache.h's
 * cursor), so a node is published whole (release) and never freed before
 * grape_gc_destroy; `term` (the live key ending here) and `live` (live keys
 * at or below) are stored atomically.
 *
 * Invariant: a key is LIVE exactly when its terminal node's `term` points
 * at it and every node from the root to it counts it in `live`; every other
 * state has term NULL and is not counted. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

#include "util/grow.h"

static grape_gc_node_t* trie_child(grape_gc_node_t* n, const grape_op_key_t* k) {
  for (grape_gc_node_t* c = n->child; c != NULL; c = c->sibling)
    if (grape__gc_key_eq(&c->key, k))
      return c;
  return NULL;
}

grape_gc_node_t* grape__gc_trie_path(grape_gc_t* c, const gkey_t* k) {
  grape_gc_node_t* n = &c->root;
  for (uint32_t i = 0; i < k->nops; i++) {
    grape_gc_node_t* next = trie_child(n, &k->keys[i]);
    if (next == NULL) {
      next = calloc(1, sizeof(*next));
      grape_gc_node_t** all =
          next ? grape__grow(c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof(*c->nodes), 64) : NULL;
      if (all == NULL) {
        free(next);
        return NULL;
      }
      c->nodes = all;
      all[c->nnodes++] = next;
      next->key = k->keys[i];
      next->parent = n;
      next->depth = n->depth + 1;
      next->sibling = n->child;
      __atomic_store_n(&n->child, next, __ATOMIC_RELEASE);   /* published whole */
    }
    n = next;
  }
  return n;
}

static void trie_count(grape_gc_node_t* n, int delta) {
  for (; n != NULL && n->parent != NULL; n = n->parent)
    __atomic_add_fetch(&n->live, (uint32_t)delta, __ATOMIC_RELAXED);
}

int grape__gc_make_live(grape_gc_t* c, gkey_t* k) {
  if (k->state == K_LIVE)
    return 0;
  if (k->node == NULL && (k->node = grape__gc_trie_path(c, k)) == NULL)
    return -ENOMEM;
  __atomic_store_n(&k->node->term, k, __ATOMIC_RELEASE);
  trie_count(k->node, 1);
  k->state = K_LIVE;
  k->stray = 0;
  grape__gc_key_judge_afresh(k);
  return 0;
}

void grape__gc_make_dead(gkey_t* k, int state) {
  if (k->state == K_LIVE) {
    __atomic_store_n(&k->node->term, NULL, __ATOMIC_RELEASE);
    trie_count(k->node, -1);
  }
  k->state = state;
}

