/* beam_sim.c: CPU bodies of beam's kernels for the simulated device. */
#include "beam_math.h"
#include "simcu.h"

SIMCU_PARAMS(_Z5scorePKjPKiPi, 8, 8, 8);
SIMCU_KERNEL(_Z5scorePKjPKiPi) {
  const uint32_t* h = SIMCU_ARG(0, const uint32_t*);
  const int32_t* cum = SIMCU_ARG(1, const int32_t*);
  int32_t* scores = SIMCU_ARG(2, int32_t*);
  unsigned k = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(v) { scores[k * BEAM_V + v] = beam_score(h[k], cum[k], (int)v); }
}

SIMCU_PARAMS(_Z8penalizePi, 8);
SIMCU_KERNEL(_Z8penalizePi) {
  int32_t* scores = SIMCU_ARG(0, int32_t*);
  SIMCU_FOR_THREADS(t) {
    unsigned i = SIMCU_GLOBAL_X(t);
    if ((i % BEAM_V) % 7 == 0)
      scores[i] -= BEAM_PENALTY;
  }
}

SIMCU_PARAMS(_Z4topkPKiPiS1_S1_S1_, 8, 8, 8, 8, 8);
SIMCU_KERNEL(_Z4topkPKiPiS1_S1_S1_) {
  beam_topk(SIMCU_ARG(0, const int32_t*), SIMCU_ARG(1, int32_t*), SIMCU_ARG(2, int32_t*),
            SIMCU_ARG(3, int32_t*), SIMCU_ARG(4, int32_t*));
}

SIMCU_PARAMS(_Z7reorderPKjPKiS2_Pj, 8, 8, 8, 8);
SIMCU_KERNEL(_Z7reorderPKjPKiS2_Pj) {
  const uint32_t* hin = SIMCU_ARG(0, const uint32_t*);
  const int32_t* parent = SIMCU_ARG(1, const int32_t*);
  const int32_t* token = SIMCU_ARG(2, const int32_t*);
  uint32_t* hout = SIMCU_ARG(3, uint32_t*);
  SIMCU_FOR_THREADS(k) { hout[k] = beam_next(hin[parent[k]], token[k]); }
}
