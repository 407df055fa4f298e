// cub::DeviceRadixSort of the CPU emulator (tools/cuda_emu): SortPairs / SortKeys (ascending and descending) with
// CUB's calling convention. A call with d_temp_storage == NULL only writes the temporary storage it needs to
// temp_storage_bytes; the sort itself is stable and orders by the key bits [begin_bit, end_bit) only (of the key
// made unsigned as CUB does: the sign bit of signed integers flipped, floats mapped to their order), so keys equal
// in those bits keep their input order. It checks what CUB documents: device pointers, no overlap between the input
// and output ranges, enough temporary storage (the size a query for these arguments returned), 0 <= begin_bit <
// end_bit <= the key's bits; the temporary storage is overwritten, as CUB uses it.
#pragma once
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "zt_emu/api.h"

namespace zt_emu {
// Validates the call (returns cudaSuccess, or an error after a note on stderr) and, for a query, sets *bytes.
cudaError_t radix_sort_check(void *temp, size_t *temp_bytes, const void *keys_in, const void *keys_out,
                             const void *values_in, const void *values_out, long long n, size_t key_size,
                             size_t value_size, int begin_bit, int end_bit, cudaStream_t stream, const char *op);

template <class K>
inline uint64_t radix_twiddle(K k) {
  static_assert(std::is_arithmetic_v<K> && sizeof(K) <= 8, "radix sort keys are arithmetic");
  uint64_t u = 0;
  memcpy(&u, &k, sizeof k);
  const uint64_t top = 1ull << (8 * sizeof(K) - 1);
  if constexpr (std::is_floating_point_v<K>) {
    const uint64_t all = sizeof(K) == 8 ? ~0ull : (1ull << (8 * sizeof(K))) - 1;
    u = (u & top) ? (~u & all) : (u | top);
  } else if constexpr (std::is_signed_v<K>) {
    u ^= top;
  }
  return u;
}

template <class K, class V>
cudaError_t radix_sort(void *temp, size_t &temp_bytes, const K *keys_in, K *keys_out, const V *values_in,
                       V *values_out, long long n, int begin_bit, int end_bit, cudaStream_t stream, bool descending,
                       bool pairs, const char *op) {
  const cudaError_t e = radix_sort_check(temp, &temp_bytes, keys_in, keys_out, values_in, values_out, n, sizeof(K),
                                         pairs ? sizeof(V) : 0, begin_bit, end_bit, stream, op);
  if (e != cudaSuccess || temp == NULL || n <= 0) return e;
  const DeviceAccess access;
  const int bits = end_bit - begin_bit;
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  std::vector<uint64_t> key(n);
  std::vector<long long> order(n);
  for (long long i = 0; i < n; i++) {
    key[i] = radix_twiddle(keys_in[i]) >> begin_bit & mask;
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](long long a, long long b) {
    return descending ? key[a] > key[b] : key[a] < key[b];
  });
  std::vector<K> k(n);
  for (long long i = 0; i < n; i++) k[i] = keys_in[order[i]];
  std::vector<V> v;
  if (pairs) {
    v.resize(n);
    for (long long i = 0; i < n; i++) v[i] = values_in[order[i]];
  }
  memset(temp, 0xff, temp_bytes);  // the temporary storage holds nothing the caller may rely on
  memcpy(keys_out, k.data(), n * sizeof(K));
  if (pairs) memcpy(values_out, v.data(), n * sizeof(V));
  return cudaSuccess;
}
}  // namespace zt_emu

namespace cub {
struct DeviceRadixSort {
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static cudaError_t SortPairs(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                               KeyT *d_keys_out, const ValueT *d_values_in, ValueT *d_values_out, NumItemsT num_items,
                               int begin_bit = 0, int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
    return zt_emu::radix_sort(d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, d_values_in, d_values_out,
                              (long long)num_items, begin_bit, end_bit, stream, false, true,
                              "cub::DeviceRadixSort::SortPairs");
  }
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static cudaError_t SortPairsDescending(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                                         KeyT *d_keys_out, const ValueT *d_values_in, ValueT *d_values_out,
                                         NumItemsT num_items, int begin_bit = 0, int end_bit = sizeof(KeyT) * 8,
                                         cudaStream_t stream = 0) {
    return zt_emu::radix_sort(d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, d_values_in, d_values_out,
                              (long long)num_items, begin_bit, end_bit, stream, true, true,
                              "cub::DeviceRadixSort::SortPairsDescending");
  }
  template <typename KeyT, typename NumItemsT>
  static cudaError_t SortKeys(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                              KeyT *d_keys_out, NumItemsT num_items, int begin_bit = 0,
                              int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
    return zt_emu::radix_sort(d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, (const char *)NULL,
                              (char *)NULL, (long long)num_items, begin_bit, end_bit, stream, false, false,
                              "cub::DeviceRadixSort::SortKeys");
  }
};
}  // namespace cub
