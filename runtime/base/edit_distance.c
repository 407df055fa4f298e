/* Levenshtein distance with one row of the dynamic-programming table; the bounded form stops as soon as the
 * distance is known to exceed its bound. */
#include "runtime/base/edit_distance.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

int zt_edit_distance_within(const char *a, const char *b, int max) {
  const size_t na = strlen(a), nb = strlen(b);
  if (max < 0) return max + 1;
  if ((na > nb ? na - nb : nb - na) > (size_t)max) return max + 1; /* at least the length difference */
  int stack[128], *row = nb < 128 ? stack : zt_malloc((nb + 1) * sizeof(int), "edit distance row");
  for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
  int d = -1;
  for (size_t i = 1; i <= na && d < 0; i++) {
    int diag = row[0];
    row[0] = (int)i;
    int low = row[0];
    for (size_t j = 1; j <= nb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
      if (best < low) low = best;
    }
    if (low > max) d = max + 1; /* every later row's entries are at least this row's minimum */
  }
  if (d < 0) d = row[nb] > max ? max + 1 : row[nb];
  if (row != stack) free(row);
  return d;
}

int zt_edit_distance(const char *a, const char *b) { return zt_edit_distance_within(a, b, INT_MAX - 1); }
