/* Oblivious gradient-boosted trees (boost.c): internal part. */
#ifndef GRAPE_PREDICT_BOOST_H
#define GRAPE_PREDICT_BOOST_H

#include <stddef.h>
#include <stdint.h>

#ifndef GRAPE__TREE_DEPTH
#define GRAPE__TREE_DEPTH 6
#endif
#define GRAPE__TREE_LEAVES (1 << GRAPE__TREE_DEPTH)

/* An oblivious tree: level l tests x[feat[l]] > thr[l]; the answers, read as
 * bits from the root down, index `leaf`. Thresholds and leaves are floats so
 * that a model file written with 9 significant digits reads back exactly. */
typedef struct grape__tree_s {
  uint8_t feat[GRAPE__TREE_DEPTH];
  float thr[GRAPE__TREE_DEPTH];
  float leaf[GRAPE__TREE_LEAVES];
} grape__tree_t;

typedef struct grape__boost_opts_s {
  int trees;            /* number of trees */
  double rate;          /* shrinkage */
  double min_leaf;      /* rows a leaf needs to get a non-zero value */
  double l2;            /* leaf value = sum / (count + l2) */
} grape__boost_opts_t;

/* Fits `o->trees` trees to residuals r[n] (updated in place) of rows x[n][nf]
 * (nf <= 255). Deterministic. @return trees fitted (<= o->trees) or -ENOMEM. */
int grape__boost_fit(const float* x, size_t n, int nf, double* r, const grape__boost_opts_t* o,
                     grape__tree_t* out);
double grape__boost_eval(const grape__tree_t* t, int ntrees, const float* x);

#endif
