/* Block-sparse attention layouts: CSR from a block mask, the transpose, backend copies (runtime/ops/attn_layout.h). */
#include "runtime/ops/attn_layout.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

/* The five arrays in one block: row_ptr, col_ptr [heads*nb + 1], col_idx, row_idx, t_pos [nnz]. */
static size_t layout_bytes(int heads, int nb, int64_t nnz) {
  return (2 * ((size_t)heads * (size_t)nb + 1) + 3 * (size_t)nnz) * sizeof(int32_t);
}

static void point_into(zt_attn_layout *l, void *mem) {
  int32_t *p = mem;
  const size_t rows = (size_t)l->heads * (size_t)l->nb + 1, nnz = (size_t)l->nnz;
  l->row_ptr = p;
  l->col_ptr = p + rows;
  l->col_idx = p + 2 * rows;
  l->row_idx = p + 2 * rows + nnz;
  l->t_pos = p + 2 * rows + 2 * nnz;
}

void zt_attn_layout_from_mask(zt_attn_layout_buf *out, const uint8_t *mask, int heads, int nb, int block) {
  zt_check(heads >= 1 && nb >= 1 && block >= 1, "internal error", "attention layout: %d heads, %d blocks of %d",
           heads, nb, block);
  const size_t per_head = (size_t)nb * (size_t)nb;
  int same = 1;
  for (int g = 1; g < heads && same; g++) {
    const uint8_t *a = mask, *b = mask + (size_t)g * per_head;
    for (size_t k = 0; k < per_head; k++)
      if (!a[k] != !b[k]) { same = 0; break; }
  }
  const int H = same ? 1 : heads;
  int64_t nnz = 0;
  for (size_t k = 0; k < (size_t)H * per_head; k++) nnz += mask[k] != 0;
  zt_check(nnz <= INT32_MAX, "attention layout", "%lld listed blocks (%d heads of %d x %d) exceed 2^31",
           (long long)nnz, H, nb, nb);
  memset(out, 0, sizeof *out);
  out->l = (zt_attn_layout){.block = block, .nb = nb, .heads = H, .nnz = nnz};
  out->bytes = layout_bytes(H, nb, nnz);
  out->mem = zt_calloc(1, out->bytes, "attention layout");
  point_into(&out->l, out->mem);
  int32_t *row_ptr = (int32_t *)out->l.row_ptr, *col_idx = (int32_t *)out->l.col_idx;
  int32_t *col_ptr = (int32_t *)out->l.col_ptr, *row_idx = (int32_t *)out->l.row_idx;
  int32_t *t_pos = (int32_t *)out->l.t_pos;
  int32_t k = 0;
  for (int g = 0; g < H; g++)
    for (int i = 0; i < nb; i++) {
      row_ptr[(size_t)g * nb + i] = k;
      const uint8_t *row = mask + (size_t)g * per_head + (size_t)i * nb;
      for (int j = 0; j < nb; j++)
        if (row[j]) col_idx[k++] = j;
    }
  row_ptr[(size_t)H * nb] = k;
  /* the transpose: column counts, then each row's entries in ascending row order */
  for (int g = 0; g < H; g++)
    for (int32_t e = row_ptr[(size_t)g * nb]; e < row_ptr[(size_t)(g + 1) * nb]; e++)
      col_ptr[(size_t)g * nb + col_idx[e] + 1]++;
  for (size_t c = 0; c < (size_t)H * nb; c++) col_ptr[c + 1] += col_ptr[c];
  int32_t *fill = zt_calloc((size_t)H * nb, sizeof(int32_t), "attention layout");
  for (int g = 0; g < H; g++)
    for (int i = 0; i < nb; i++)
      for (int32_t e = row_ptr[(size_t)g * nb + i]; e < row_ptr[(size_t)g * nb + i + 1]; e++) {
        const size_t c = (size_t)g * nb + col_idx[e];
        const int32_t pos = col_ptr[c] + fill[c]++;
        row_idx[pos] = i;
        t_pos[pos] = e;
      }
  free(fill);
}

void zt_attn_layout_to_backend(zt_attn_layout_buf *out, const zt_attn_layout_buf *host, const zt_backend *be) {
  *out = *host;
  out->be = be;
  out->mem = be->alloc(host->bytes, "attention layout");
  be->from_host(out->mem, host->mem, host->bytes);
  point_into(&out->l, out->mem);
}

void zt_attn_layout_free(zt_attn_layout_buf *b) {
  if (!b->mem) return;
  if (b->be) b->be->release(b->mem, b->bytes);
  else free(b->mem);
  memset(b, 0, sizeof *b);
}

int64_t zt_attn_layout_heads_nnz(const zt_attn_layout *l, int head0, int NH) {
  int64_t n = 0;
  for (int h = 0; h < NH; h++) {
    const int g = zt_attn_layout_head(l, head0, h);
    n += l->row_ptr[(size_t)(g + 1) * l->nb] - l->row_ptr[(size_t)g * l->nb];
  }
  return n;
}

int zt_attn_layout_has(const zt_attn_layout *l, int g, int i, int j) {
  int32_t lo = l->row_ptr[(size_t)g * l->nb + i], hi = l->row_ptr[(size_t)g * l->nb + i + 1];
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (l->col_idx[mid] < j) lo = mid + 1;
    else hi = mid;
  }
  return lo < l->row_ptr[(size_t)g * l->nb + i + 1] && l->col_idx[lo] == j;
}
