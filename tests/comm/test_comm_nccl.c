/* The NCCL backend of runtime/comm against the MPI backend: every collective and point-to-point call given
 * device buffers (after zt_comm_enable_nccl) returns what the same call returns on host buffers, for the
 * world and a subgroup, odd sizes, in-place allgather and reduce-scatter, n = 0; the all-to-all also against the
 * values each sender addressed to this rank. NCCL sums in its own order, so sums agree to 1e-6 of their magnitude, max and
 * copies bit for bit. Needs one GPU per rank (NCCL allows no two ranks of a communicator on one GPU): exits 77
 * (SKIP) with the reason otherwise. Run as a world of 1 and under mpirun by tests/comm/CMakeLists.txt. */
#include <math.h>
#include <stdint.h>
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

/* All-to-all payload: a code of (sender, destination, index) in group ranks; fp32 as an exact integer below 2^24,
 * the 2-byte type as raw bits. */
static uint32_t a2a_code(int sender, int dest, size_t i) {
  uint64_t x = (uint64_t)(sender + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(dest + 1) * 0xD6E8FEB86659FD93ull ^
               (uint64_t)(i + 1) * 0xC2B2AE3D27D4EB4Full;
  x ^= x >> 29; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 32;
  return (uint32_t)x;
}
static void a2a_put(zt_dtype dt, void *buf, size_t at, uint32_t code) {
  if (dt == ZT_DTYPE_FP32) ((float *)buf)[at] = (float)(code >> 8);
  else ((uint16_t *)buf)[at] = (uint16_t)code;
}

/* zt_alltoall on device buffers: recv's block r is what group rank r addressed to this rank, bit for bit, and the
 * same as the MPI backend's result on host buffers. */
static void alltoall_case(const zt_group *g, const char *name, size_t n, zt_dtype dt) {
  const int gr = zt_group_rank(g), gp = zt_group_size(g);
  const size_t es = zt_dtype_size(dt), bytes = n * gp * es;
  unsigned char *hs = malloc(bytes + 1), *hr = malloc(bytes + 1), *want = malloc(bytes + 1), *got = malloc(bytes + 1);
  for (int d = 0; d < gp; d++)
    for (size_t i = 0; i < n; i++) a2a_put(dt, hs, d * n + i, a2a_code(gr, d, i)), a2a_put(dt, want, d * n + i,
                                                                                              a2a_code(d, gr, i));
  void *ds = dev_copy(hs, bytes), *dr = zt_cuda_malloc(bytes + 4, "recv");
  zt_alltoall(g, dt, hs, n, hr);
  zt_alltoall(g, dt, ds, n, dr);
  host_copy(got, dr, bytes);
  unsigned char *hs2 = malloc(bytes + 1);
  host_copy(hs2, ds, bytes);
  const int ok = memcmp(got, want, bytes) == 0 && memcmp(hr, want, bytes) == 0 && memcmp(hs2, hs, bytes) == 0;
  if (!ok) {
    fails++;
    fprintf(stderr, "FAIL [rank %d] %s all_to_all %s, %zu per rank: device %s, host %s, device send %s\n", R, name,
            zt_dtype_name(dt), n, memcmp(got, want, bytes) ? "wrong" : "right", memcmp(hr, want, bytes) ? "wrong" : "right",
            memcmp(hs2, hs, bytes) ? "changed" : "kept");
  } else if (R == 0) {
    printf("PASS %s all_to_all %s, %zu per rank (bitwise, host and device)\n", name, zt_dtype_name(dt), n);
  }
  zt_cuda_free(ds), zt_cuda_free(dr);
  free(hs), free(hr), free(want), free(got), free(hs2);
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
  alltoall_case(g, name, n, ZT_DTYPE_FP32);
  alltoall_case(g, name, n, ZT_DTYPE_BF16);
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
