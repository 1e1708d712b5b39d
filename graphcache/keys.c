/* Keys and paths: the tables by fingerprint, least recently seen out, and
 * the list of keys with staged segments.
 *
 * DESIGN: a key (internal.h's gkey_t) is a graph key's op list, a path one
 * of its sightings' dimensions; both are found by fingerprint and confirmed
 * op by op (a hash collision never merges two). Both are bounded by
 * config.max_paths: beyond it the least recently seen goes (never a key that
 * is live or being built). A key owns its paths, its staged segments'
 * references and its place on the staging list; freeing it gives them all
 * back.
 *
 * Invariant: keys with staged segments are on c's staging list until they
 * install them, die or go. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"


static uint64_t key_hash(const void* e) {
  return ((const gkey_t*)e)->fp;
}

static uint64_t path_hash(const void* e) {
  return ((const path_t*)e)->fp;
}

static void path_free(grape_gc_t* c, path_t* p) {
  if (p->key->last_path == p)
    p->key->last_path = NULL;
  grape__list_remove(&p->in_key);
  grape__table_remove(&c->paths, p, path_hash);
  grape__list_remove(&p->lru);
  free(p->dims);
  free(p->params);
  free(p->poff);
  free(p->conc);
  free(p);
}

static void key_free(grape_gc_t* c, gkey_t* k) {
  grape__gc_make_dead(k, K_WARM);
  grape__gc_unstage(c, k);
  grape__gc_staging_remove(c, k);
  while (!grape__list_empty(&k->paths))
    path_free(c, GRAPE_LIST_DATA(grape__list_first(&k->paths), path_t, in_key));
  grape__table_remove(&c->keys, k, key_hash);
  grape__list_remove(&k->lru);
  free(k->keys);
  free(k->last_dims);
  free(k->last_params);
  free(k);
}

static long max_paths(const grape_gc_t* c) {
  return c->cfg.max_paths > 0 ? c->cfg.max_paths : 1L << 20;
}

gkey_t* grape__gc_key_find_or_add(grape_gc_t* c, uint64_t fp, const grape_region_t* r) {
  if (c->keys.len * 2 >= c->keys.cap && grape__table_grow(&c->keys, key_hash))
    return NULL;
  size_t mask = c->keys.cap - 1;
  for (size_t i = grape__table_home(&c->keys, fp);; i = (i + 1) & mask) {
    gkey_t* k = c->keys.v[i];
    if (k == NULL)
      break;
    if (k->fp == fp && k->nops == r->ops.n && memcmp(k->keys, r->ops.keys, r->ops.n * sizeof(*r->ops.keys)) == 0)
      return k;
  }
  /* A new key; the least recently seen goes beyond the bound (never one
   * that is live or being built: its graphs are in use). */
  if ((long)c->keys.len >= max_paths(c))
    for (grape_list_t* q = grape__list_first(&c->key_lru); q != &c->key_lru; q = q->next) {
      gkey_t* o = GRAPE_LIST_DATA(q, gkey_t, lru);
      if (o->state != K_LIVE && o->nstaged == 0) {
        key_free(c, o);
        c->st.keys_evicted++;
        break;
      }
    }
  gkey_t* k = calloc(1, sizeof(*k));
  if (k == NULL || (k->keys = grape__gc_dup(r->ops.keys, r->ops.n * sizeof(*r->ops.keys))) == NULL) {
    free(k);
    return NULL;
  }
  k->fp = fp;
  k->nops = r->ops.n;
  for (uint32_t i = 0; i < r->ops.n; i++)
    k->nkernels += r->ops.keys[i].kind == GRAPE_OP_KERNEL;
  grape__list_init(&k->paths);
  grape__table_put(&c->keys, fp, k);
  c->st.graph_keys++;
  grape__list_insert_tail(&c->key_lru, &k->lru);
  return k;
}

path_t* grape__gc_path_find_or_add(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  /* A key's chunks mostly repeat its last path: comparing its dimensions
   * costs less than hashing them, and gives the same fingerprint. */
  path_t* last = k->last_path;
  int same = last != NULL && memcmp(last->dims, r->ops.dims, r->ops.n * sizeof(*r->ops.dims)) == 0;
  uint64_t fp = same ? last->fp : grape__fp_path(k->fp, r->ops.dims, r->ops.n);
  if (c->paths.len * 2 >= c->paths.cap && grape__table_grow(&c->paths, path_hash))
    return NULL;
  size_t mask = c->paths.cap - 1;
  for (size_t i = grape__table_home(&c->paths, fp);; i = (i + 1) & mask) {
    path_t* p = c->paths.v[i];
    if (p == NULL)
      break;
    if (p->fp != fp)
      continue;
    if (p->key == k &&
        ((same && p == last) || memcmp(p->dims, r->ops.dims, r->ops.n * sizeof(*r->ops.dims)) == 0))
      return k->last_path = p;
    c->st.collisions++;   /* equal fingerprints, different ops: kept apart */
  }
  if ((long)c->paths.len >= max_paths(c) && !grape__list_empty(&c->path_lru)) {
    path_free(c, GRAPE_LIST_DATA(grape__list_first(&c->path_lru), path_t, lru));
    c->st.paths_evicted++;
  }
  path_t* p = calloc(1, sizeof(*p));
  if (p == NULL)
    return NULL;
  p->dims = grape__gc_dup(r->ops.dims, r->ops.n * sizeof(*r->ops.dims));
  p->params = grape__gc_dup(r->ops.params, r->ops.plen);
  p->poff = grape__gc_dup(r->ops.poff, r->ops.n * sizeof(*r->ops.poff));
  if (p->dims == NULL || p->params == NULL || p->poff == NULL) {
    free(p->dims);
    free(p->params);
    free(p->poff);
    free(p);
    return NULL;
  }
  p->fp = fp;
  p->nops = r->ops.n;
  p->key = k;
  p->stamp = c->cfg.stamp ? c->cfg.stamp() : 0;
  grape__conc_path(c, p, r);
  grape__list_insert_head(&k->paths, &p->in_key);
  grape__table_put(&c->paths, fp, p);
  c->st.paths++;
  grape__list_insert_tail(&c->path_lru, &p->lru);
  return k->last_path = p;
}

/* ---- Staging list: keys whose next segments are being built ---- */

void grape__gc_staging_add(grape_gc_t* c, gkey_t* k) {
  size_t free_at = c->staging_cap;
  for (size_t i = 0; i < c->staging_cap; i++) {
    if (c->staging[i] == k)
      return;
    if (c->staging[i] == NULL && free_at == c->staging_cap)
      free_at = i;
  }
  if (free_at == c->staging_cap) {
    size_t old = c->staging_cap;
    gkey_t** v = grape__grow(c->staging, &c->staging_cap, old + 1, sizeof(*v), 16);
    if (v == NULL)
      return;   /* its own sightings still install it */
    memset(v + old, 0, (c->staging_cap - old) * sizeof(*v));
    c->staging = v;
  }
  c->staging[free_at] = k;
}

void grape__gc_staging_remove(grape_gc_t* c, gkey_t* k) {
  for (size_t i = 0; i < c->staging_cap; i++)
    if (c->staging[i] == k)
      c->staging[i] = NULL;
}


gkey_t* grape__gc_key_known(const grape_gc_t* c, const void* key) {
  const gkey_t* pk = key;
  size_t mask = c->keys.cap - 1;
  for (size_t i = c->keys.cap ? grape__table_home(&c->keys, pk->fp) : 0;
       c->keys.cap && c->keys.v[i] != NULL; i = (i + 1) & mask)
    if (c->keys.v[i] == pk)
      return c->keys.v[i];
  return NULL;
}

void grape__gc_keys_destroy(grape_gc_t* c) {
  for (size_t i = 0; i < c->keys.cap; i++) {
    gkey_t* k = c->keys.v[i];
    if (k != NULL) {
      free(k->keys);
      free(k->last_dims);
      free(k->last_params);
      free(k);
    }
  }
  free(c->keys.v);
  for (size_t i = 0; i < c->paths.cap; i++) {
    path_t* p = c->paths.v[i];
    if (p != NULL) {
      free(p->dims);
      free(p->params);
      free(p->poff);
      free(p->conc);
      free(p);
    }
  }
  free(c->paths.v);
}
