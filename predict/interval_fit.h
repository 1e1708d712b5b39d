/* Intervals from held-out residuals: the quantiles training stores as a
 * regime's 80% interval (interval_fit.c), for train.c's fits. */
#ifndef GRAPE_PREDICT_INTERVAL_FIT_H
#define GRAPE_PREDICT_INTERVAL_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "predict/kernel.h"

#define GRAPE__LEVEL 0.8      /* nominal coverage of the intervals */
#define GRAPE__MIN_ROWS 50    /* residuals an interval needs; fewer: not calibrated */

/* Residuals log(measured / predicted) of held-out rows, each with its
 * interval bin and the key of the group it was held out with: the GPU's
 * index in an inner leave-one-GPU-out, the shape family in the known
 * regime's calibration folds. */
typedef struct grape__resid_s {
  double* v;
  uint8_t* bin;
  uint32_t* key;
  size_t n;
} grape__resid_t;

int grape__resid_alloc(grape__resid_t* r, size_t n);
void grape__resid_free(grape__resid_t* r);
/* Appends v with p's interval bin (grape__interval_bin) and group key. */
void grape__resid_add(grape__resid_t* r, double v, const grape__kprep_t* p, uint32_t key);

/* The level's two quantiles of v[0..n) (sorted here) into iv; lo > hi (not
 * calibrated) with fewer than GRAPE__MIN_ROWS values. */
void grape__quantiles(double* v, size_t n, double* iv);
/* Per bin (nb of them), the quantiles of r's residuals of that bin into
 * iv[2 b], iv[2 b + 1]. */
int grape__bin_quantiles(const grape__resid_t* r, int nb, double* iv);
/* The interval of r's bin b (-1: every row) as a level per group plus the
 * spread within one: a group held out (a GPU, a shape family) shares one
 * error across its rows, so its level varies between groups more than
 * the spread within one, and pooled quantiles weigh a group by its rows.
 * The groups' median residuals give the level's mean and standard
 * deviation tau; the interval is the level's quantiles of N(mean, tau^2)
 * plus the residuals less their group's median. One group: its own
 * quantiles. */
int grape__level_interval(const grape__resid_t* r, int b, double* iv);
/* The share of the variance of vals[0..n) that is a level per group
 * (key[i]): the groups' medians' variance over it plus the within
 * residuals' (robust: from their 10th-90th percentile range), into *rho;
 * 0 with fewer than two groups. */
int grape__level_share(const double* vals, const uint32_t* key, size_t n, double* rho);
/* Moves r's rows of bin 1 whose predicted latency lat[] is their median
 * or more to bin 2, the median into *high_ms (0, and no row moved, with
 * fewer than 2 GRAPE__MIN_ROWS such rows: each half needs its quantiles). */
int grape__split_high(grape__resid_t* r, const double* lat, double* high_ms);

/* Residuals beyond a span: log(measured / predicted), the in-range
 * interval's bounds for the row, and the distance. */
typedef struct grape__beyond_s {
  double *r, *lo, *hi, *d;
  size_t n;
} grape__beyond_t;


#define GRAPE__EXTRAP_DMIN 0.05  /* rows nearer their span than this (5%) calibrate no slope */
int grape__beyond_alloc(grape__beyond_t* b, size_t n);
void grape__beyond_free(grape__beyond_t* b);
void grape__beyond_add(grape__beyond_t* b, double r, double lo, double hi, double d);
/* The slope by which an interval must widen on both sides with the
 * distance to keep its level beyond the span, into widen[0] (-) and
 * widen[1] (+): the level's quantile of max(r - hi, lo - r) / d, the least
 * widening that holds that share of the rows; 0 where the in-range bounds
 * already hold them. Rows nearer than GRAPE__EXTRAP_DMIN calibrate
 * nothing; fewer than GRAPE__MIN_ROWS farther leave the slope 0. */
int grape__widen_slopes(const grape__beyond_t* b, double* widen);

#endif
