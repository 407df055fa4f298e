/* libFuzzer harness: the sparse-attention layout checks and builder (models/transformer/sparsity.c) on
 * arbitrary configurations. The input's bytes become the config fields (any int, lists of any length), the
 * head count, sequence length and seed; whenever zt_sparsity_check accepts, zt_sparsity_make_layout must fill
 * an exactly sized buffer (ASan catches a write past it) with 0/1 only, the same for the same seed, with one
 * layout for every head unless different_layout_per_head, and nothing above the diagonal where DeepSpeed
 * applies tril (unidirectional bigbird and bslongformer). Layouts over 4 MiB are checked but not built. */
#include "models/transformer/sparsity.h"
#include "tests/fuzz/fuzz.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} reader;

/* Small values most of the time, any int sometimes: the first byte picks the range. */
static int rd_int(reader *r) {
  if (r->n < 1) return 0;
  uint8_t kind = *r->p++;
  r->n--;
  if (kind < 200) return (int)(kind % 40) - 4; /* -4 .. 35 */
  int32_t v = 0;
  size_t k = r->n < 4 ? r->n : 4;
  memcpy(&v, r->p, k);
  r->p += k, r->n -= k;
  return v;
}

static void rd_list(reader *r, int *out, int *count, int allow_none) {
  int n = rd_int(r);
  if (allow_none && n < 0) {
    *count = -1;
    return;
  }
  n = n < 0 ? 0 : n % (ZT_SPARSE_MAX_LIST + 3); /* up to 2 past the limit */
  *count = n;
  for (int i = 0; i < n; i++) {
    int v = rd_int(r);
    if (i < ZT_SPARSE_MAX_LIST) out[i] = v;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  zt_sparsity_config c;
  int mode = rd_int(&r);
  zt_sparsity_config_defaults(&c, (zt_sparse_mode)(mode < 0 ? 0 : mode % 5));
  if (mode == 35) c.mode = (zt_sparse_mode)7; /* not a mode */
  c.block = rd_int(&r);
  c.different_layout_per_head = rd_int(&r) & 1;
  c.num_local_blocks = rd_int(&r);
  c.num_global_blocks = rd_int(&r);
  c.unidirectional = rd_int(&r) & 1;
  c.horizontal_global_attention = rd_int(&r) & 1;
  c.num_different_global_patterns = rd_int(&r);
  c.num_random_blocks = rd_int(&r);
  c.num_sliding_window_blocks = rd_int(&r);
  rd_list(&r, c.local_window_blocks, &c.n_local_window_blocks, 0);
  rd_list(&r, c.global_block_indices, &c.n_global_block_indices, 0);
  rd_list(&r, c.global_block_end_indices, &c.n_global_block_end_indices, 1);
  int heads = rd_int(&r), seq = rd_int(&r);
  if (c.block > 0 && c.block < 64 && seq > -(1 << 24) && seq < (1 << 24)) seq *= c.block; /* mostly multiples */
  uint64_t seed = (uint64_t)(uint32_t)rd_int(&r) * 0x9E3779B97F4A7C15ull;
  char err[256];
  if (!zt_sparsity_check(&c, heads, seq, err, sizeof err)) {
    if (!err[0] || strchr(err, '\n')) abort(); /* a refusal always says why, on one line */
    return 0;
  }
  int nb = seq / c.block;
  size_t per = (size_t)nb * nb, total = per * (size_t)heads;
  if (total > (4u << 20)) return 0;
  uint8_t *a = malloc(total ? total : 1), *b = malloc(total ? total : 1);
  zt_sparsity_make_layout(&c, heads, seq, seed, a);
  zt_sparsity_make_layout(&c, heads, seq, seed, b);
  if (memcmp(a, b, total)) abort();
  bool tril = c.unidirectional && (c.mode == ZT_SPARSE_BIGBIRD || c.mode == ZT_SPARSE_BSLONGFORMER);
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < nb; i++)
      for (int j = 0; j < nb; j++) {
        uint8_t v = a[(size_t)h * per + (size_t)i * nb + j];
        if (v > 1 || (tril && j > i && v)) abort();
        if (!c.different_layout_per_head && v != a[(size_t)i * nb + j]) abort();
      }
  char line[256];
  zt_sparsity_describe(&c, a, heads, nb, line, sizeof line);
  free(a);
  free(b);
  return 0;
}
