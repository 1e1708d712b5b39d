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
 * over candidate positions (the existing cuts, which stay, and 32 evenly
 * spaced ones) and the number of launches finds the cuts that end earliest;
 * the caller adopts them only when the gain is worth it. With no host time
 * (a program that only launches) more cuts only add launches, and none is
 * added; with a device as busy as the host, cuts start it early. */
#include "internal.h"

#include <float.h>
#include <string.h>

#define GRID 32
#define MAXC (GRID + MAX_CUTS + 2)

/* Device time of ops [0, pos): the segments' times spread over their ops. */
static double dev_before(uint32_t pos, const uint32_t* cuts, int ncuts, const double* seg_dev) {
  double t = 0;
  uint32_t from = 0;
  for (int j = 0; j < ncuts && from < pos; j++) {
    uint32_t to = cuts[j];
    uint32_t end = to < pos ? to : pos;
    if (to > from)
      t += seg_dev[j] * (double)(end - from) / (double)(to - from);
    from = to;
  }
  return t;
}

static int is_forced(uint32_t pos, const uint32_t* cuts, int ncuts) {
  for (int j = 0; j < ncuts; j++)
    if (cuts[j] == pos)
      return 1;
  return 0;
}

/* Candidate positions: 0, the existing cuts and an even grid, sorted. */
static int candidates(uint32_t n, const uint32_t* cuts, int ncuts, uint32_t* pos) {
  int k = 0;
  pos[k++] = 0;
  uint32_t step = n / GRID ? n / GRID : 1;
  uint32_t g = step;
  int j = 0;
  while (g < n || j < ncuts) {
    uint32_t next = j < ncuts && (g >= n || cuts[j] <= g) ? cuts[j++] : g;
    if (next == g)
      g += step;
    if (next > pos[k - 1] && next <= n && k < MAXC)
      pos[k++] = next;
  }
  if (pos[k - 1] != n && k < MAXC)
    pos[k++] = n;
  return k;
}

int grape__plan_cuts(uint32_t n, const uint32_t* cuts, int ncuts, const double* seg_dev_ns,
                     double host_ns, double launch_ns, uint32_t* out, double* end_old,
                     double* end_new) {
  uint32_t pos[MAXC];
  int k = candidates(n, cuts, ncuts, pos);
  double h = n ? host_ns / n : 0;
  double dev[MAXC];
  for (int i = 0; i < k; i++)
    dev[i] = dev_before(pos[i], cuts, ncuts, seg_dev_ns);
  /* The old plan's end. */
  double f = 0;
  for (int j = 0; j < ncuts; j++) {
    double launch = cuts[j] * h + (j + 1) * launch_ns;
    double d = dev_before(cuts[j], cuts, ncuts, seg_dev_ns) -
               (j ? dev_before(cuts[j - 1], cuts, ncuts, seg_dev_ns) : 0);
    f = (f > launch ? f : launch) + d;
  }
  *end_old = f;
  /* F[i][s]: earliest end of the device's work through candidate i with s
   * launches; from[i][s]: the candidate before. */
  static __thread double F[MAXC][MAX_CUTS + 1];
  static __thread signed char from[MAXC][MAX_CUTS + 1];
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
        double launch = pos[jx] * h + s * launch_ns;
        double v = (F[ix][s - 1] > launch ? F[ix][s - 1] : launch) + (dev[jx] - dev[ix]);
        if (v < F[jx][s]) {
          F[jx][s] = v;
          from[jx][s] = (signed char)ix;
        }
      }
      if (is_forced(pos[ix], cuts, ncuts))
        break;   /* a segment never spans an existing cut */
    }
  int best = -1;
  for (int s = 1; s <= MAX_CUTS; s++)
    if (F[k - 1][s] != DBL_MAX && (best < 0 || F[k - 1][s] < F[k - 1][best]))
      best = s;
  if (best < 0) {
    memcpy(out, cuts, (size_t)ncuts * sizeof(*out));
    *end_new = *end_old;
    return ncuts;
  }
  *end_new = F[k - 1][best];
  int m = best;
  for (int i = k - 1, s = best; i > 0; s--) {
    out[s - 1] = pos[i];
    i = from[i][s];
  }
  return m;
}
