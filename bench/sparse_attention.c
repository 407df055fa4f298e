/* Block-sparse attention on the CPU against the dense kernel (issue 20): times zt_attention_forward +
 * zt_attention_backward with a block-sparse layout and with none (dense), on a fused-QKV view as the model passes it
 * (B = 1, ld = 3C, hs = 3HD), for two of DeepSpeed's layouts as models/transformer/sparsity.h makes them
 * (zt_sparsity_make_layout, one layout for all heads):
 *   fixed:   num_local_blocks 4, num_global_blocks 1, unidirectional (local windows of 4 blocks seen up to the
 *            diagonal, each window's last block a global column for the later rows), with the causal mask;
 *   bigbird: num_sliding_window_blocks 3, num_global_blocks 1, num_random_blocks 1, bidirectional, no element
 *            mask.
 * Prints per (seq, layout, block): the layout density (listed tiles / nb^2), ms of forward+backward (best of --reps
 * runs) for sparse and dense and their ratio, the forward's share (best forward alone), and the floats kept for the backward (attention_saved_floats) of each
 * in MiB and their ratio. Dense keeps B*NH*T*T floats (and its backward's scratch is 2*T*T per thread), so the
 * dense run is skipped above --dense-max-seq.
 * Usage: bench_sparse_attention [--seq 2048,4096,8192] [--heads 4] [--head-dim 64] [--blocks 16,64] [--reps 2]
 *                               [--dense-max-seq 8192] */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/blas.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/ops/ops.h"
#include "models/transformer/sparsity.h"

static int parse_list(const char *flag, const char *s, int *out, int max) {
  int n = 0;
  char *end;
  for (;;) {
    long v = strtol(s, &end, 10);
    if (end == s || v <= 0 || n == max) zt_fatal("bench_sparse_attention", "%s: invalid list '%s'", flag, s);
    out[n++] = (int)v;
    if (*end == 0) return n;
    if (*end != ',') zt_fatal("bench_sparse_attention", "%s: invalid list '%s'", flag, s);
    s = end + 1;
  }
}

/* DeepSpeed's fixed (kind 0) or bigbird (kind 1) layout of seq T with blocks of bs, for NH heads (all the same). */
static uint8_t *make_layout(int kind, int NH, int T, int bs) {
  zt_sparsity_config c;
  zt_sparsity_config_defaults(&c, kind == 0 ? ZT_SPARSE_FIXED : ZT_SPARSE_BIGBIRD);
  c.block = bs;
  if (kind == 0) {
    c.num_local_blocks = 4;
    c.num_global_blocks = 1;
    c.unidirectional = true;
  } else {
    c.num_sliding_window_blocks = 3;
    c.num_global_blocks = 1;
    c.num_random_blocks = 1;
  }
  char err[512];
  if (!zt_sparsity_check(&c, NH, T, err, sizeof err)) zt_fatal("bench_sparse_attention", "%s", err);
  const size_t nb = (size_t)(T / bs);
  uint8_t *m = zt_malloc((size_t)NH * nb * nb, "layout");
  zt_sparsity_make_layout(&c, NH, T, 7, m);
  return m;
}

typedef struct { double ms, fwd_ms; size_t saved; } timing;

static timing time_attention(const zt_attention_desc *a, const float *qkv, float *dqkv, const float *dout, int reps) {
  const int HD = a->HD;
  const size_t ns = zt_attention_saved_floats(a), nsc = zt_attention_scratch_floats(a);
  const size_t no = (size_t)a->B * a->Tq * a->NH * HD;
  float *saved = zt_malloc(ns * sizeof(float), "bench saved"), *scratch = zt_malloc(nsc * sizeof(float), "scratch");
  float *out = zt_malloc(no * sizeof(float), "bench out");
  memset(saved, 0, ns * sizeof(float));
  memset(scratch, 0, nsc * sizeof(float));
  double best = INFINITY, best_fwd = INFINITY;
  for (int rep = 0; rep < reps; rep++) {
    const double t0 = zt_now();
    zt_attention_forward(out, saved, qkv, qkv + HD, qkv + 2 * HD, a);
    const double tf = zt_now() - t0;
    if (tf < best_fwd) best_fwd = tf;
    zt_attention_backward(dqkv, dqkv + HD, dqkv + 2 * HD, dout, saved, qkv, qkv + HD, qkv + 2 * HD, a, scratch);
    const double t = zt_now() - t0;
    if (t < best) best = t;
  }
  free(saved);
  free(scratch);
  free(out);
  return (timing){best * 1e3, best_fwd * 1e3, ns};
}

int main(int argc, char **argv) {
  int seqs[16] = {2048, 4096, 8192}, nseq = 3, blocks[8] = {16, 64}, nblk = 2;
  zt_blas_setup(argc, argv);
  int NH = 4, HD = 64, reps = 2, dense_max = 8192;
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (i + 1 >= argc) zt_fatal("bench_sparse_attention", "%s needs a value", f);
    const char *v = argv[++i];
    if (!strcmp(f, "--seq")) nseq = parse_list(f, v, seqs, 16);
    else if (!strcmp(f, "--blocks")) nblk = parse_list(f, v, blocks, 8);
    else if (!strcmp(f, "--heads")) parse_list(f, v, &NH, 1);
    else if (!strcmp(f, "--head-dim")) parse_list(f, v, &HD, 1);
    else if (!strcmp(f, "--reps")) parse_list(f, v, &reps, 1);
    else if (!strcmp(f, "--dense-max-seq")) parse_list(f, v, &dense_max, 1);
    else zt_fatal("bench_sparse_attention", "unknown flag %s", f);
  }
  for (int s = 0; s < nseq; s++)
    for (int b = 0; b < nblk; b++)
      zt_check(seqs[s] % blocks[b] == 0, "bench_sparse_attention", "--seq %d is not a multiple of block %d", seqs[s],
               blocks[b]);
  const int C = NH * HD;
  printf("B 1, heads %d, head dim %d, fused QKV view, fp32, %d threads, OpenBLAS %s kernels, best of %d runs of forward+backward\n", NH, HD,
         omp_get_max_threads(), zt_blas_core(), reps);
  printf("%6s %-8s %5s %8s %10s %10s %7s %8s %8s %12s %12s %7s\n", "seq", "layout", "block", "density", "sparse_ms",
         "dense_ms", "ratio", "sp_fwd", "dn_fwd", "saved_sp_MiB", "saved_dn_MiB", "ratio");
  for (int s = 0; s < nseq; s++) {
    const int T = seqs[s];
    const size_t nq = (size_t)T * 3 * C, no = (size_t)T * C;
    float *qkv = zt_malloc(nq * sizeof(float), "qkv"), *dqkv = zt_malloc(nq * sizeof(float), "dqkv");
    float *dout = zt_malloc(no * sizeof(float), "dout");
    uint64_t r = 12345;
    for (size_t i = 0; i < nq; i++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      qkv[i] = (float)((double)(r >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
    }
    for (size_t i = 0; i < no; i++) dout[i] = qkv[i * 3 % nq] * 0.5f;
    memset(dqkv, 0, nq * sizeof(float));
    for (int kind = 0; kind < 2; kind++) {
      zt_attention_desc a = {.B = 1, .Tq = T, .Tk = T, .NH = NH, .HD = HD, .ld_q = 3 * C, .hs_q = 3 * HD,
                             .ld_kv = 3 * C, .hs_k = 3 * HD, .hs_v = 3 * HD,
                             .mask = kind == 0 ? ZT_ATTN_CAUSAL : ZT_ATTN_NONE, .scale = 1.0f / sqrtf((float)HD),
                             .dropout = {.p = 0.0f}};
      timing dn = {NAN, NAN, (size_t)NH * T * T};
      if (T <= dense_max) dn = time_attention(&a, qkv, dqkv, dout, reps);
      for (int bi = 0; bi < nblk; bi++) {
        const int bs = blocks[bi], nb = T / bs;
        uint8_t *m = make_layout(kind, NH, T, bs);
        zt_attn_layout_buf lb;
        zt_attn_layout_from_mask(&lb, m, NH, nb, bs);
        a.layout = &lb.l;
        timing sp = time_attention(&a, qkv, dqkv, dout, reps);
        a.layout = NULL;
        const double dens = (double)lb.l.nnz / ((double)lb.l.heads * nb * nb);
        printf("%6d %-8s %5d %7.2f%% %10.1f %10.1f %7.3f %8.1f %8.1f %12.2f %12.2f %7.4f\n", T,
               kind == 0 ? "fixed" : "bigbird", bs, 100 * dens, sp.ms, dn.ms, sp.ms / dn.ms, sp.fwd_ms, dn.fwd_ms, sp.saved * 4.0 / 1048576, dn.saved * 4.0 / 1048576,
               (double)sp.saved / (double)dn.saved);
        fflush(stdout);
        zt_attn_layout_free(&lb);
        free(m);
      }
    }
    free(qkv);
    free(dqkv);
    free(dout);
  }
  return 0;
}
