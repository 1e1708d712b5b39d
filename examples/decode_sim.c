/* decode_sim.c: CPU bodies of decode's kernels for the simulated device (see
 * sim/simcu.h).
 *
 * DESIGN: each body runs one block, a loop over its threads in place of
 * threadIdx, and calls the same decode_math.h functions as the kernel, so the
 * two cannot compute different bits. rmsnorm's shared RMS (thread 0, then a
 * barrier) becomes one computation before the loop. */
#include "decode_math.h"
#include "simcu.h"

/* embed(const int*, const int*, int*, dec_rows_t) */
SIMCU_PARAMS(_Z5embedPKiS0_Pi10dec_rows_s, 8, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z5embedPKiS0_Pi10dec_rows_s) {
  const int32_t* E = SIMCU_ARG(0, const int32_t*);
  const int32_t* tok = SIMCU_ARG(1, const int32_t*);
  int32_t* x = SIMCU_ARG(2, int32_t*);
  dec_rows_t rows = SIMCU_ARG(3, dec_rows_t);
  unsigned r = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) { x[r * DEC_D + j] = E[tok[rows.slot[r]] * DEC_D + j]; }
}

SIMCU_PARAMS(_Z7rmsnormPKiS0_Pi, 8, 8, 8);
SIMCU_KERNEL(_Z7rmsnormPKiS0_Pi) {
  const int32_t* x = SIMCU_ARG(0, const int32_t*);
  const int32_t* g = SIMCU_ARG(1, const int32_t*);
  int32_t* y = SIMCU_ARG(2, int32_t*);
  unsigned r = simcu_blk->idx.x;
  int32_t rms = dec_rms(x + r * DEC_D);   /* thread 0's phase, before the barrier */
  SIMCU_FOR_THREADS(j) { y[r * DEC_D + j] = dec_norm(x[r * DEC_D + j], g[j], rms); }
}

SIMCU_PARAMS(_Z4gemmPKiS0_Piii, 8, 8, 8, 4, 4);
SIMCU_KERNEL(_Z4gemmPKiS0_Piii) {
  const int32_t* a = SIMCU_ARG(0, const int32_t*);
  const int32_t* W = SIMCU_ARG(1, const int32_t*);
  int32_t* c = SIMCU_ARG(2, int32_t*);
  int k = SIMCU_ARG(3, int), m = SIMCU_ARG(4, int);
  unsigned r = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) { c[r * m + j] = dec_gemm(a + r * k, W, k, m, (int)j); }
}

SIMCU_PARAMS(_Z4ropePiS_PKi10dec_rows_s, 8, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z4ropePiS_PKi10dec_rows_s) {
  int32_t* q = SIMCU_ARG(0, int32_t*);
  int32_t* k = SIMCU_ARG(1, int32_t*);
  const int32_t* pos = SIMCU_ARG(2, const int32_t*);
  dec_rows_t rows = SIMCU_ARG(3, dec_rows_t);
  unsigned r = simcu_blk->idx.x;
  int t = pos[rows.slot[r]];
  SIMCU_FOR_THREADS(p) {
    int h = (int)p / (DEC_HD / 2), i = (int)p % (DEC_HD / 2);
    int off = (int)r * DEC_D + h * DEC_HD + 2 * i;
    dec_rope(q + off, i, t);
    dec_rope(k + off, i, t);
  }
}

SIMCU_PARAMS(_Z9kv_appendPKiS0_PiS1_S0_10dec_rows_s, 8, 8, 8, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z9kv_appendPKiS0_PiS1_S0_10dec_rows_s) {
  const int32_t* k = SIMCU_ARG(0, const int32_t*);
  const int32_t* v = SIMCU_ARG(1, const int32_t*);
  int32_t* kc = SIMCU_ARG(2, int32_t*);
  int32_t* vc = SIMCU_ARG(3, int32_t*);
  const int32_t* pos = SIMCU_ARG(4, const int32_t*);
  dec_rows_t rows = SIMCU_ARG(5, dec_rows_t);
  unsigned r = simcu_blk->idx.x;
  int sl = rows.slot[r];
  SIMCU_FOR_THREADS(j) {
    int dst = sl * DEC_KV_SLOT + pos[sl] * DEC_D + (int)j;
    kc[dst] = k[r * DEC_D + j];
    vc[dst] = v[r * DEC_D + j];
  }
}

SIMCU_PARAMS(_Z11attn_scoresPKiS0_Pi10dec_rows_s, 8, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z11attn_scoresPKiS0_Pi10dec_rows_s) {
  const int32_t* q = SIMCU_ARG(0, const int32_t*);
  const int32_t* kc = SIMCU_ARG(1, const int32_t*);
  int32_t* s = SIMCU_ARG(2, int32_t*);
  dec_rows_t rows = SIMCU_ARG(3, dec_rows_t);
  unsigned h = simcu_blk->idx.x, r = simcu_blk->idx.y;
  SIMCU_FOR_THREADS(p) {
    s[(r * DEC_NH + h) * DEC_T + p] = dec_score(
        q + r * DEC_D + h * DEC_HD, kc + rows.slot[r] * DEC_KV_SLOT + (int)p * DEC_D + (int)h * DEC_HD);
  }
}

SIMCU_PARAMS(_Z12attn_softmaxPiPKi10dec_rows_s, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z12attn_softmaxPiPKi10dec_rows_s) {
  int32_t* s = SIMCU_ARG(0, int32_t*);
  const int32_t* pos = SIMCU_ARG(1, const int32_t*);
  dec_rows_t rows = SIMCU_ARG(2, dec_rows_t);
  unsigned r = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(h) { dec_softmax(s + (r * DEC_NH + h) * DEC_T, pos[rows.slot[r]]); }
}

SIMCU_PARAMS(_Z7attn_pvPKiS0_PiS0_10dec_rows_s, 8, 8, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z7attn_pvPKiS0_PiS0_10dec_rows_s) {
  const int32_t* w = SIMCU_ARG(0, const int32_t*);
  const int32_t* vc = SIMCU_ARG(1, const int32_t*);
  int32_t* o = SIMCU_ARG(2, int32_t*);
  const int32_t* pos = SIMCU_ARG(3, const int32_t*);
  dec_rows_t rows = SIMCU_ARG(4, dec_rows_t);
  unsigned r = simcu_blk->idx.x;
  int sl = rows.slot[r];
  SIMCU_FOR_THREADS(j) {
    o[r * DEC_D + j] = dec_pv(w + (r * DEC_NH + j / DEC_HD) * DEC_T, vc + sl * DEC_KV_SLOT + (int)j,
                              pos[sl]);
  }
}

SIMCU_PARAMS(_Z3addPKiS0_Pi, 8, 8, 8);
SIMCU_KERNEL(_Z3addPKiS0_Pi) {
  const int32_t* a = SIMCU_ARG(0, const int32_t*);
  const int32_t* b = SIMCU_ARG(1, const int32_t*);
  int32_t* c = SIMCU_ARG(2, int32_t*);
  SIMCU_FOR_THREADS(t) {
    unsigned i = SIMCU_GLOBAL_X(t);
    c[i] = dec_add(a[i], b[i]);
  }
}

SIMCU_PARAMS(_Z7act_mulPKiPi, 8, 8);
SIMCU_KERNEL(_Z7act_mulPKiPi) {
  const int32_t* gu = SIMCU_ARG(0, const int32_t*);
  int32_t* a = SIMCU_ARG(1, int32_t*);
  unsigned r = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) {
    a[r * DEC_F + j] = dec_act(gu[r * 2 * DEC_F + j], gu[r * 2 * DEC_F + DEC_F + j]);
  }
}

SIMCU_PARAMS(_Z6samplePKiS0_PiS1_S1_10dec_rows_s, 8, 8, 8, 8, 8, sizeof(dec_rows_t));
SIMCU_KERNEL(_Z6samplePKiS0_PiS1_S1_10dec_rows_s) {
  const int32_t* logits = SIMCU_ARG(0, const int32_t*);
  const int32_t* seed = SIMCU_ARG(1, const int32_t*);
  int32_t* tok = SIMCU_ARG(2, int32_t*);
  int32_t* pos = SIMCU_ARG(3, int32_t*);
  int32_t* out = SIMCU_ARG(4, int32_t*);
  dec_rows_t rows = SIMCU_ARG(5, dec_rows_t);
  SIMCU_FOR_THREADS(r) {
    int sl = rows.slot[r];
    int32_t v = dec_sample(logits + r * DEC_V, (uint32_t)seed[sl], pos[sl]);
    tok[sl] = v;
    pos[sl]++;
    out[r] = v;
  }
}
