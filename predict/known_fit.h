/* The known regime's fit (known_fit.c), called by train.c once the
 * transfer regime is fitted. */
#ifndef GRAPE_PREDICT_KNOWN_FIT_H
#define GRAPE_PREDICT_KNOWN_FIT_H

#include "predict/rows.h"

/* The known regime (known_fit.c) into m: per GPU of the rows s selects,
 * trees over the transfer regime m holds, their intervals, and their
 * behaviour beyond the rows, calibrated on the inner extrapolation split
 * lo (ml: the transfer regime fitted on lo; NULL: none), with each GPU's
 * harness floors hf. */
int grape__fit_known(const grape_dataset_t* d, const sel_t* s, const sel_t* lo,
                     const grape_model_t* ml, const double (*hf)[GRAPE_KC_COUNT],
                     grape_model_t* m);

#endif
