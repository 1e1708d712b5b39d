/* lsq.h: weighted least squares with a ridge (lsq.c). */
#ifndef GRAPE_PREDICT_LSQ_H
#define GRAPE_PREDICT_LSQ_H

#define GRAPE__LS_MAX 24   /* the most features a fit may have */

/* Normal equations accumulated row by row; feature 0 is the intercept. */
typedef struct grape__ls_s {
  int n;
  double ata[GRAPE__LS_MAX * GRAPE__LS_MAX];
  double atb[GRAPE__LS_MAX];
  double sx[GRAPE__LS_MAX], sxx[GRAPE__LS_MAX], sw;
} grape__ls_t;

/* An empty system of n <= GRAPE__LS_MAX features. */
void grape__ls_init(grape__ls_t* l, int n);
/* Adds row x[0..n) with target y and weight w. */
void grape__ls_add(grape__ls_t* l, const double* x, double y, double w);
/* Solves with a ridge of `ridge` x variance on each non-intercept feature;
 * out[0..n) are the weights. @return 0, or -EDOM when the system is not
 * positive definite. */
int grape__ls_solve(const grape__ls_t* l, double ridge, double* out);

#endif
