/* Where to cut a key into segments (pipelined replay).
 *
 * DESIGN: a held region is issued by the host over `host_ns` (its ops at an
 * even pace: op i is held at i * host_ns / n), and a segment is launched when
 * its last op is held, costing the host `launch_ns` (which delays every later
 * op). The device runs a segment once it is launched and the segment before
 * it has finished; within a segment its device time is spread evenly over
 * its ops. The region is done when the device has run its last segment:
 *
 *   F(j) = max(F(j-1), p_j * h + s_j * L) + D(p_{j-1}, p_j)
 *
 * (p_j the cut positions, s_j launches so far, h = host_ns / n, L =
 * launch_ns, D the device time of the ops between). One segment gives
 * host_ns + L + D: the device waits for the whole region. A dynamic program
 * over candidate positions (the cuts other keys need, which stay, the key's
 * own cuts, which may go, and 32 evenly spaced ones) and the number of
 * launches finds the cuts that end earliest; the caller adopts them only
 * when the gain is worth it. With no host time (a program that only
 * launches) cuts only add launches, and none is kept; with a device as busy
 * as the host, cuts start it early. */
#include "internal.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#define GRID 32
#define MAXC (GRID + 2 * MAX_CUTS + 2)

/* Device time of ops [0, pos): each current segment's time spread over its
 * ops. */
static double dev_before(const grape_cuts_in_t* in, uint32_t pos) {
  double t = 0;
  uint32_t from = 0;
  for (int j = 0; j < in->ncuts && from < pos; j++) {
    uint32_t to = in->cuts[j];
    uint32_t end = to < pos ? to : pos;
    if (to > from)
      t += in->seg_dev_ns[j] * (double)(end - from) / (double)(to - from);
    from = to;
  }
  return t;
}

static int member(uint32_t pos, const uint32_t* v, int n) {
  for (int j = 0; j < n; j++)
    if (v[j] == pos)
      return 1;
  return 0;
}

static int cmp_u32(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}

/* Candidate positions: 0, the current and forced cuts and an even grid,
 * sorted, without repeats. */
static int candidates(const grape_cuts_in_t* in, uint32_t* pos) {
  uint32_t all[MAXC + 1];
  int k = 0;
  uint32_t step = in->n / GRID ? in->n / GRID : 1;
  for (uint32_t g = step; g < in->n && k < GRID; g += step)
    all[k++] = g;
  for (int j = 0; j < in->ncuts && k < MAXC - 1; j++)
    all[k++] = in->cuts[j];
  for (int j = 0; j < in->nforced && k < MAXC - 1; j++)
    all[k++] = in->forced[j];
  all[k++] = in->n;
  qsort(all, (size_t)k, sizeof(*all), cmp_u32);
  int m = 0;
  pos[m++] = 0;
  for (int i = 0; i < k; i++)
    if (all[i] > pos[m - 1] && all[i] <= in->n)
      pos[m++] = all[i];
  return m;
}

double grape__cuts_end(const grape_cuts_in_t* in, const uint32_t* cuts, int ncuts) {
  double h = in->n ? in->host_ns / in->n : 0, f = 0;
  for (int j = 0; j < ncuts; j++) {
    double launch = cuts[j] * h + (j + 1) * in->launch_ns;
    double d = dev_before(in, cuts[j]) - (j ? dev_before(in, cuts[j - 1]) : 0);
    f = (f > launch ? f : launch) + d;
  }
  return f;
}

int grape__cuts_best(const grape_cuts_in_t* in, uint32_t* out, double* end_old, double* end_new) {
  uint32_t pos[MAXC];
  int k = candidates(in, pos);
  double h = in->n ? in->host_ns / in->n : 0;
  double dev[MAXC];
  for (int i = 0; i < k; i++)
    dev[i] = dev_before(in, pos[i]);
  *end_old = grape__cuts_end(in, in->cuts, in->ncuts);
  /* F[i][s]: earliest end of the device's work through candidate i with s
   * launches; from[i][s]: the candidate before. */
  double F[MAXC][MAX_CUTS + 1];
  signed char from[MAXC][MAX_CUTS + 1];
  for (int i = 0; i < k; i++)
    for (int s = 0; s <= MAX_CUTS; s++) {
      F[i][s] = DBL_MAX;
      from[i][s] = -1;
    }
  F[0][0] = 0;
  for (int jx = 1; jx < k; jx++)
    for (int ix = jx - 1; ix >= 0; ix--) {
      for (int s = 1; s <= MAX_CUTS; s++) {
        if (F[ix][s - 1] == DBL_MAX)
          continue;
        double launch = pos[jx] * h + s * in->launch_ns;
        double v = (F[ix][s - 1] > launch ? F[ix][s - 1] : launch) + (dev[jx] - dev[ix]);
        if (v < F[jx][s]) {
          F[jx][s] = v;
          from[jx][s] = (signed char)ix;
        }
      }
      if (member(pos[ix], in->forced, in->nforced))
        break;   /* a segment never spans a cut another key needs */
    }
  int best = -1;
  int most = in->max_segs > 0 && in->max_segs < MAX_CUTS ? in->max_segs : MAX_CUTS;
  for (int s = 1; s <= most; s++)
    if (F[k - 1][s] != DBL_MAX && (best < 0 || F[k - 1][s] < F[k - 1][best]))
      best = s;
  if (best < 0) {
    memcpy(out, in->cuts, (size_t)in->ncuts * sizeof(*out));
    *end_new = *end_old;
    return in->ncuts;
  }
  *end_new = F[k - 1][best];
  for (int i = k - 1, s = best; i > 0; s--) {
    out[s - 1] = pos[i];
    i = from[i][s];
  }
  return best;
}

double grape__cuts_eager_end(uint32_t n, double host_ns, double launch_ns, double dev_ns) {
  double h = n ? host_ns / n + launch_ns : 0, d = n ? dev_ns / n : 0, f = 0;
  for (uint32_t i = 1; i <= n; i++) {
    double at = i * h;
    f = (f > at ? f : at) + d;
  }
  return f;
}
