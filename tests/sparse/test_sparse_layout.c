/* Driver for test_sparse_layout.py: reads sparsity cases (one a line) and, for each, runs zt_sparsity_check and
 * zt_sparsity_make_layout, printing "ERR <message>" or "OK <nb> <layout offset> <random offset>" and
 * "DESC <describe line>". Layouts (num_heads*nb*nb bytes) are appended to the layout file; for variable and
 * bigbird the random columns of every layout head and row (zt_sparsity_random_row, as 0/1 rows of nb bytes)
 * are appended to the random file, so the Python oracle can replay exactly those draws.
 * Case line: key=value tokens, `mode` first (it sets zt_sparsity_config_defaults), then any of
 *   block heads seq seed per_head local global uni horiz patterns random sliding lw=4,2 gi=0,3 ge=2,5|none
 * (an empty list is written `gi=`). The layout buffer has guard bytes after it, checked after each build. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/transformer/sparsity.h"

static int parse_list(const char *s, int *out) {
  int n = 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || n >= ZT_SPARSE_MAX_LIST + 4) return -2;
    if (n < ZT_SPARSE_MAX_LIST) out[n] = (int)v;
    n++;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CASES LAYOUT_OUT RANDOM_OUT\n", argv[0]);
    return 2;
  }
  FILE *in = fopen(argv[1], "r"), *lo = fopen(argv[2], "wb"), *ro = fopen(argv[3], "wb");
  if (!in || !lo || !ro) {
    perror("open");
    return 2;
  }
  char line[4096];
  long long loff = 0, roff = 0;
  int lineno = 0;
  while (fgets(line, sizeof line, in)) {
    lineno++;
    line[strcspn(line, "\n")] = 0;
    zt_sparsity_config c;
    int heads = 1, seq = 16;
    unsigned long long seed = 0;
    char *save = NULL;
    int have_mode = 0;
    for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
      char *eq = strchr(tok, '=');
      if (!eq) {
        fprintf(stderr, "line %d: token '%s' has no '='\n", lineno, tok);
        return 2;
      }
      *eq = 0;
      const char *k = tok, *v = eq + 1;
      int iv = atoi(v);
      if (!strcmp(k, "mode")) {
        zt_sparse_mode m;
        if (!zt_sparse_mode_from_name(v, &m)) {
          fprintf(stderr, "line %d: mode '%s'\n", lineno, v);
          return 2;
        }
        zt_sparsity_config_defaults(&c, m);
        have_mode = 1;
        continue;
      }
      if (!have_mode) {
        fprintf(stderr, "line %d: mode must come first\n", lineno);
        return 2;
      }
      if (!strcmp(k, "block")) c.block = iv;
      else if (!strcmp(k, "heads")) heads = iv;
      else if (!strcmp(k, "seq")) seq = iv;
      else if (!strcmp(k, "seed")) seed = strtoull(v, NULL, 10);
      else if (!strcmp(k, "per_head")) c.different_layout_per_head = iv != 0;
      else if (!strcmp(k, "local")) c.num_local_blocks = iv;
      else if (!strcmp(k, "global")) c.num_global_blocks = iv;
      else if (!strcmp(k, "uni")) c.unidirectional = iv != 0;
      else if (!strcmp(k, "horiz")) c.horizontal_global_attention = iv != 0;
      else if (!strcmp(k, "patterns")) c.num_different_global_patterns = iv;
      else if (!strcmp(k, "random")) c.num_random_blocks = iv;
      else if (!strcmp(k, "sliding")) c.num_sliding_window_blocks = iv;
      else if (!strcmp(k, "lw")) c.n_local_window_blocks = parse_list(v, c.local_window_blocks);
      else if (!strcmp(k, "gi")) c.n_global_block_indices = parse_list(v, c.global_block_indices);
      else if (!strcmp(k, "ge")) c.n_global_block_end_indices = !strcmp(v, "none") ? -1 : parse_list(v, c.global_block_end_indices);
      else {
        fprintf(stderr, "line %d: unknown key '%s'\n", lineno, k);
        return 2;
      }
    }
    if (!have_mode) {
      fprintf(stderr, "line %d: no mode\n", lineno);
      return 2;
    }
    char err[512];
    if (!zt_sparsity_check(&c, heads, seq, err, sizeof err)) {
      if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "line %d: check failed without a one-line message\n", lineno);
        return 1;
      }
      printf("ERR %s\n", err);
      continue;
    }
    int nb = seq / c.block;
    size_t per = (size_t)nb * nb, total = per * (size_t)heads;
    enum { GUARD = 64 };
    uint8_t *L = malloc(total + GUARD);
    if (!L) {
      fprintf(stderr, "line %d: no memory for a %zu-byte layout\n", lineno, total);
      return 2;
    }
    memset(L, 0xCD, total + GUARD);
    zt_sparsity_make_layout(&c, heads, seq, seed, L);
    for (int i = 0; i < GUARD; i++)
      if (L[total + i] != 0xCD) {
        fprintf(stderr, "line %d: make_layout wrote past the layout\n", lineno);
        return 1;
      }
    fwrite(L, 1, total, lo);
    int has_random = c.mode == ZT_SPARSE_VARIABLE || c.mode == ZT_SPARSE_BIGBIRD;
    printf("OK %d %lld %lld\n", nb, loff, has_random ? roff : -1LL);
    loff += (long long)total;
    if (has_random) {
      int lh = c.different_layout_per_head ? heads : 1;
      uint8_t *mark = malloc(per + GUARD);
      if (!mark) return 2;
      for (int h = 0; h < lh; h++) {
        memset(mark, 0, per);
        memset(mark + per, 0xCD, GUARD);
        for (int r = 0; r < nb; r++) zt_sparsity_random_row(&c, nb, seed, h, r, mark + (size_t)r * nb);
        for (int i = 0; i < GUARD; i++)
          if (mark[per + i] != 0xCD) {
            fprintf(stderr, "line %d: random_row wrote past the row\n", lineno);
            return 1;
          }
        fwrite(mark, 1, per, ro);
      }
      roff += (long long)lh * (long long)per;
      free(mark);
    }
    char desc[512];
    zt_sparsity_describe(&c, L, heads, nb, desc, sizeof desc);
    printf("DESC %s\n", desc);
    free(L);
  }
  fclose(in);
  if (fclose(lo) || fclose(ro)) {
    perror("write");
    return 2;
  }
  return 0;
}
