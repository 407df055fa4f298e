// The checks of the emulated cub::DeviceRadixSort (include/cub/device/device_radix_sort.cuh): what CUB documents
// about its arguments, refused with cudaErrorInvalidValue and a note naming the argument.
#include <cub/device/device_radix_sort.cuh>

#include "internal.h"

namespace zt_emu {

static size_t round256(size_t b) { return (b + 255) / 256 * 256; }

cudaError_t radix_sort_check(void *temp, size_t *temp_bytes, const void *keys_in, const void *keys_out,
                             const void *values_in, const void *values_out, long long n, size_t key_size,
                             size_t value_size, int begin_bit, int end_bit, cudaStream_t stream, const char *op) {
  if (!stream_valid(stream)) return set_error(cudaErrorInvalidResourceHandle);
  if (n < 0 || begin_bit < 0 || end_bit < begin_bit || end_bit > (int)(8 * key_size)) {
    note("%s: num_items %lld, bits [%d, %d) of a %zu-byte key", op, n, begin_bit, end_bit, key_size);
    return set_error(cudaErrorInvalidValue);
  }
  // CUB needs about two copies of the keys and values (the ping-pong buffers) plus its own bookkeeping
  const size_t need = 256 + 2 * round256((size_t)n * (key_size + value_size));
  if (!temp) {
    *temp_bytes = need;
    return cudaSuccess;
  }
  if (*temp_bytes < need) {
    note("%s: temp_storage_bytes is %zu, this sort of %lld items needs %zu (query with the same arguments)", op,
         *temp_bytes, n, need);
    return set_error(cudaErrorInvalidValue);
  }
  struct Range {
    const void *p;
    size_t bytes;
    const char *name;
  } r[5] = {{temp, *temp_bytes, "d_temp_storage"},
            {keys_in, (size_t)n * key_size, "d_keys_in"},
            {keys_out, (size_t)n * key_size, "d_keys_out"},
            {values_in, (size_t)n * value_size, "d_values_in"},
            {values_out, (size_t)n * value_size, "d_values_out"}};
  for (const Range &a : r) {
    if (a.bytes == 0) continue;
    if (!in_allocation(a.p, a.bytes, MEM_DEVICE)) {
      char buf[256];
      note("%s: %s of %zu bytes: %s", op, a.name, a.bytes, describe_range(a.p, a.bytes, buf, sizeof buf));
      return set_error(cudaErrorInvalidValue);
    }
  }
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (r[i].bytes && r[j].bytes && (uintptr_t)r[i].p < (uintptr_t)r[j].p + r[j].bytes &&
          (uintptr_t)r[j].p < (uintptr_t)r[i].p + r[i].bytes) {
        note("%s: %s and %s overlap (in-place sorting is not supported)", op, r[i].name, r[j].name);
        return set_error(cudaErrorInvalidValue);
      }
  return cudaSuccess;
}

}  // namespace zt_emu
