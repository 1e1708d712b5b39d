/* Fitting's entry points inside predict/: the options resolved once, and
 * the fit of every model on the rows a selector picks (train.c), which
 * cross-validation (crossval.c) calls per fold. */
#ifndef GRAPE_PREDICT_TRAIN_H
#define GRAPE_PREDICT_TRAIN_H

#include "predict/rows.h"

/* o with each value out of its range taken as grape_train_opts_t documents
 * (the defaults for NULL) into k; -EINVAL when o is too old a layout. */
int grape__train_resolve(const grape_train_opts_t* o, grape_train_opts_t* k);
/* Fits every model on the rows s selects (s->o: resolved options). */
int grape__train_sel(const grape_dataset_t* d, sel_t* s, grape_model_t** out);

#endif
