/* The bounds of libFuzzer's inline 8-bit coverage counters (the linker's __start/__stop symbols of section
 * __sancov_cntrs), for a harness that merges a child process's coverage into its own (fuzz_checkpoint.c). Built
 * without coverage instrumentation (tests/fuzz/CMakeLists.txt): an instrumented file declares these names itself,
 * and the compiler renames a second declaration, losing the counters. */
#include <stddef.h>
#include <stdint.h>

extern uint8_t __start___sancov_cntrs[], __stop___sancov_cntrs[];

uint8_t *zt_fuzz_cov_counters(size_t *n) {
  *n = (size_t)(__stop___sancov_cntrs - __start___sancov_cntrs);
  return __start___sancov_cntrs;
}
