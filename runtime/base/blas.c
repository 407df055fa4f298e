/* Choosing OpenBLAS kernels by CPU features when its model table does not know the CPU. */
#include "runtime/base/blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *openblas_get_corename(void);

const char *zt_blas_core(void) { return openblas_get_corename(); }

/* The best kernel family the CPU's features allow, or NULL when the generic one is right. */
static const char *feature_core(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

static int is_generic(const char *core) {
  static const char *generic[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai",
                                  "Coppermine", "Northwood", "Banias", "Opteron", "Barcelona", NULL};
  for (int i = 0; generic[i]; i++)
    if (strcmp(core, generic[i]) == 0) return 1;
  return 0;
}

void zt_blas_setup(int argc, char **argv) {
  (void)argc;
  if (getenv("OPENBLAS_CORETYPE")) return; /* the user's choice, or our second run */
  const char *core = openblas_get_corename(), *want = feature_core();
  if (!core || !want || !is_generic(core)) return;
  setenv("OPENBLAS_CORETYPE", want, 1);
  execv("/proc/self/exe", argv);
  /* exec failed (no /proc): keep running with the slower kernels rather than fail */
  fprintf(stderr, "warning: OpenBLAS uses its generic %s kernels on this CPU; set OPENBLAS_CORETYPE=%s for "
          "3-6x faster matrix products\n", core, want);
}
