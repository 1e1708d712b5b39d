/* time_test.h: what the tests of simulated time share (test_sim_time.c,
 * test_sim_bound.c): every cost row's default by name (D_LAUNCH, ...), so that
 * expected times follow cost.h, and an idle kernel, k_idle(int), whose body
 * does no work: only its modelled duration (its threads) matters.
 *
 * Header-only; include it once per test program (it defines the body that
 * program exports). */
#ifndef GRAPE_TESTS_TIME_TEST_H
#define GRAPE_TESTS_TIME_TEST_H

#include "cost.h"
#include "simcu.h"

enum {
#define ROW_DEFAULT(id, name, dflt) D_##id = dflt,
  SIM_COST_ROWS(ROW_DEFAULT)
#undef ROW_DEFAULT
};

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_idle(.param .u32 n)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_idle, 4);
SIMCU_KERNEL(k_idle) {
  (void)simcu_blk;
  (void)simcu_args;
}

#endif
