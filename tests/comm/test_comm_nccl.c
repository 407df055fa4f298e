/* The NCCL backend of runtime/comm against the MPI backend: every collective and point-to-point call given
 * device buffers (after zt_comm_enable_nccl) returns what the same call returns on host buffers, for the
 * world and a subgroup, odd sizes, in-place allgather and reduce-scatter, n = 0. NCCL sums in its own order, so sums agree to 1e-6 of their magnitude, max and
 * copies bit for bit. Needs one GPU per rank (NCCL allows no two ranks of a communicator on one GPU): exits 77
 * (SKIP) with the reason otherwise. Run as a world of 1 and under mpirun by tests/comm/CMakeLists.txt. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/cuda/cuda_device.h"
#include "runtime/ops/cuda/cuda_ops.h"

static int R, P, fails;

static float val(int r, size_t i, int salt) { return (float)((int)((r * 7919 + i * 104729 + salt * 31) % 2001) - 1000) / 997.0f; }

static void *dev_copy(const void *h, size_t bytes) {
  void *d = zt_cuda_malloc(bytes ? bytes : 4, "test buffer");
  if (bytes) zt_cuda_memcpy_h2d(d, h, bytes);
  return d;
}
static void host_copy(void *h, const void *d, size_t bytes) {
  if (bytes) zt_cuda_memcpy_d2h(h, d, bytes);
}

static void expect(const char *what, const float *got, const float *want, size_t n, int exact) {
  double scale = 0.0, worst = 0.0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
  int ok = exact ? memcmp(got, want, n * sizeof(float)) == 0 : worst <= 1e-6 * (scale > 0 ? scale : 1);
  if (!ok) {
    fails++;
    fprintf(stderr, "FAIL [rank %d] %s: largest difference %.3g of %.3g over %zu floats\n", R, what, worst, scale, n);
  } else if (R == 0) {
    printf("PASS %s (%zu floats, largest difference %.2g)\n", what, n, worst);
  }
}

static void cases(const zt_group *g, const char *name, size_t n) {
  if (!g) return;
  const int gr = zt_group_rank(g), gp = zt_group_size(g);
  char what[160];
  float *h = malloc((n * gp + 1) * sizeof(float)), *got = malloc((n * gp + 1) * sizeof(float));
  /* all-reduce sum (f32) */
  for (size_t i = 0; i < n; i++) h[i] = val(gr, i, 1);
  float *d = dev_copy(h, n * sizeof(float));
  zt_allreduce_sum_f32(g, h, n);
  zt_allreduce_sum_f32(g, d, n);
  host_copy(got, d, n * sizeof(float));
  snprintf(what, sizeof what, "%s all_reduce sum f32, n=%zu", name, n);
  expect(what, got, h, n, 0);
  zt_cuda_free(d);
  /* all-reduce max (f64) */
  double hd[5], gd[5];
  for (int i = 0; i < 5; i++) hd[i] = val(gr, (size_t)i, 2) * 1e300 / 1e290;
  double *dd = dev_copy(hd, sizeof hd);
  zt_allreduce_max_f64(g, hd, 5);
  zt_allreduce_max_f64(g, dd, 5);
  host_copy(gd, dd, sizeof gd);
  snprintf(what, sizeof what, "%s all_reduce max f64", name);
  if (memcmp(gd, hd, sizeof hd)) { fails++; fprintf(stderr, "FAIL [rank %d] %s\n", R, what); }
  else if (R == 0) printf("PASS %s (bitwise)\n", what);
  zt_cuda_free(dd);
  /* all-gather, in place (send = this rank's block of recv) */
  for (size_t i = 0; i < n; i++) h[gr * n + i] = val(gr, i, 3);
  float *dg = dev_copy(h, n * gp * sizeof(float));
  zt_allgather_f32(g, h + gr * n, n, h);
  zt_allgather_f32(g, dg + gr * n, n, dg);
  host_copy(got, dg, n * gp * sizeof(float));
  snprintf(what, sizeof what, "%s all_gather in place, %zu per rank", name, n);
  expect(what, got, h, n * gp, 1);
  zt_cuda_free(dg);
  /* reduce-scatter into this rank's block of send */
  for (size_t i = 0; i < n * gp; i++) h[i] = val(gr, i, 4);
  float *ds = dev_copy(h, n * gp * sizeof(float));
  zt_reduce_scatter_sum_f32(g, h, n, h + gr * n);
  zt_reduce_scatter_sum_f32(g, ds, n, ds + gr * n);
  host_copy(got, ds + gr * n, n * sizeof(float));
  snprintf(what, sizeof what, "%s reduce_scatter sum in place, %zu per rank", name, n);
  expect(what, got, h + gr * n, n, 0);
  zt_cuda_free(ds);
  /* reduce to the last rank; broadcast from it */
  for (size_t i = 0; i < n; i++) h[i] = val(gr, i, 5);
  float *dr = dev_copy(h, n * sizeof(float));
  zt_reduce_sum_f32(g, h, n, gp - 1);
  zt_reduce_sum_f32(g, dr, n, gp - 1);
  host_copy(got, dr, n * sizeof(float));
  snprintf(what, sizeof what, "%s reduce sum to group rank %d", name, gp - 1);
  if (gr == gp - 1) expect(what, got, h, n, 0);
  zt_broadcast(g, h, n * sizeof(float), gp - 1);
  zt_broadcast(g, dr, n * sizeof(float), gp - 1);
  host_copy(got, dr, n * sizeof(float));
  float *want = malloc((n + 1) * sizeof(float));
  memcpy(want, h, n * sizeof(float));
  snprintf(what, sizeof what, "%s broadcast of the reduced values", name);
  expect(what, got, want, n, 0);
  free(want);
  zt_cuda_free(dr);
  /* a ring both ways in one batch, and sendrecv */
  const int next = (gr + 1) % gp, prev = (gr + gp - 1) % gp;
  float *a = malloc((n + 1) * sizeof(float)), *b = malloc((n + 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) a[i] = val(gr, i, 6), b[i] = val(gr, i, 7);
  float *da = dev_copy(a, n * sizeof(float)), *db = dev_copy(b, n * sizeof(float));
  float *ra = zt_cuda_malloc((n + 1) * sizeof(float), "recv"), *rb = zt_cuda_malloc((n + 1) * sizeof(float), "recv");
  zt_p2p_op ops[4] = {{da, n, next, 1, ZT_DTYPE_FP32}, {db, n, prev, 1, ZT_DTYPE_FP32}, {ra, n, prev, 0, ZT_DTYPE_FP32},
                        {rb, n, next, 0, ZT_DTYPE_FP32}};
  zt_batch_sendrecv_f32(g, ops, 4);
  for (size_t i = 0; i < n; i++) a[i] = val(prev, i, 6), b[i] = val(next, i, 7);
  host_copy(got, ra, n * sizeof(float));
  snprintf(what, sizeof what, "%s batch send/recv ring, from the previous rank", name);
  expect(what, got, a, n, 1);
  host_copy(got, rb, n * sizeof(float));
  snprintf(what, sizeof what, "%s batch send/recv ring, from the next rank", name);
  expect(what, got, b, n, 1);
  zt_sendrecv_f32(g, da, n, prev, rb, n, next); /* da holds val(gr, 6): rb gets the next rank's */
  for (size_t i = 0; i < n; i++) a[i] = val(next, i, 6);
  host_copy(got, rb, n * sizeof(float));
  snprintf(what, sizeof what, "%s sendrecv", name);
  expect(what, got, a, n, 1);
  zt_cuda_free(da), zt_cuda_free(db), zt_cuda_free(ra), zt_cuda_free(rb);
  free(a), free(b), free(h), free(got);
}

int main(int argc, char **argv) {
  zt_comm_init(&argc, &argv);
  R = zt_comm_rank(), P = zt_comm_size();
  const int ngpu = zt_cuda_device_count();
  if (ngpu < P) { /* every rank sees the same count: all skip together */
    if (R == 0) printf("SKIP: %d ranks need %d GPUs (NCCL puts one rank per GPU); %d found\n", P, P, ngpu);
    zt_comm_finalize();
    return 77;
  }
  zt_cuda_init(R % ngpu);
  zt_comm_enable_nccl();
  int evens[8], ne = 0;
  for (int r = 0; r < P && ne < 8; r += 2) evens[ne++] = r;
  zt_group *sub = zt_group_create(evens, ne); /* created after enable: gets its communicator at creation */
  const size_t sizes[3] = {0, 1, 100003};
  for (int k = 0; k < 3; k++) {
    cases(zt_comm_world(), "world", sizes[k]);
    cases(sub, "even ranks", sizes[k]);
  }
  zt_group_free(sub);
  int total = fails;
  zt_allreduce_sum_f64(zt_comm_world(), &(double){0}, 1); /* keep ranks together before the summary */
  if (R == 0) printf("%s\n", total ? "some checks FAILED (see stderr)" : "all checks passed");
  zt_cuda_shutdown();
  zt_comm_finalize();
  return total ? 1 : 0;
}
