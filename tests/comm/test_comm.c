/* Checks runtime/comm under any number of processes (run by run_comm_tests.sh, or alone as a world of 1).
 * Every rank computes what every other rank contributes (the data is a function of rank and index), so each
 * collective is checked against values computed locally, including the documented ring summation order.
 *   test_comm all                 every collective, subgroups, n = 0, odd sizes, forced tiny chunks
 *   test_comm fail <rank>         that rank dies through zt_fatal while the others wait in an allreduce
 *   test_comm mismatch            (2+ ranks) rank 1 receives fewer floats than rank 0 sends: an MPI error
 *   test_comm agree <rank>        zt_comm_agree on equal texts, then ranks >= <rank> report another text
 *   test_comm agree_stop <rank>   that rank stops itself (SIGSTOP) before zt_comm_agree; the others time out */
#include <signal.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/comm/comm.h"

static int g_fail = 0;
static int R, P; /* world rank and size */

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL [rank %d] %s:%d: ", R, __FILE__, __LINE__); \
  fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); g_fail++; } } while (0)

/* A float with a busy mantissa in [-1, 1), a function of (rank, index, salt) only. */
static float valf(int r, size_t i, int salt) {
  uint64_t x = (uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0xC2B2AE3D27D4EB4Full ^
               (uint64_t)(salt + 7) * 0x165667B19E3779F9ull;
  x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 29;
  return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0) * (float)(1 + (i % 5) * 100);
}
static double vald(int r, size_t i, int salt) { return (double)valf(r, i, salt) * 1.000000123456789; }

/* Block layout of the ring (documented in comm.c): the first n % p blocks hold one element more. */
static size_t blk_of(size_t n, int p, size_t i) {
  size_t base = n / p, rem = n % p, big = rem * (base + 1);
  return i < big ? i / (base + 1) : rem + (i - big) / base;
}

/* Expected ring sum of element i over group members (world ranks m[0..p-1]): block b is summed starting at
 * group rank b+1 and ending at b, each step acc = acc + own. */
static float ring_sum_f32(const int *m, int p, size_t n, size_t i, int salt) {
  int b = (int)blk_of(n, p, i);
  float acc = valf(m[(b + 1) % p], i, salt);
  for (int j = 2; j <= p; j++) acc = acc + valf(m[(b + j) % p], i, salt);
  return acc;
}
static double ring_sum_f64(const int *m, int p, size_t n, size_t i, int salt) {
  int b = (int)blk_of(n, p, i);
  double acc = vald(m[(b + 1) % p], i, salt);
  for (int j = 2; j <= p; j++) acc = acc + vald(m[(b + j) % p], i, salt);
  return acc;
}

/* All-to-all payload: a code of (sender's world rank, destination's world rank, index), bit-exact in both types
 * (fp32: an integer below 2^24; the 2-byte type: raw bits, moved as bytes). */
static uint32_t a2a_code(int sender, int dest, size_t i) {
  uint64_t x = (uint64_t)(sender + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(dest + 1) * 0xD6E8FEB86659FD93ull ^
               (uint64_t)(i + 1) * 0xC2B2AE3D27D4EB4Full;
  x ^= x >> 29; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 32;
  return (uint32_t)x;
}
static void a2a_fill(zt_dtype dt, void *buf, size_t at, int sender, int dest, size_t i) {
  if (dt == ZT_DTYPE_FP32) ((float *)buf)[at] = (float)(a2a_code(sender, dest, i) >> 8);
  else ((uint16_t *)buf)[at] = (uint16_t)a2a_code(sender, dest, i);
}
static int a2a_is(zt_dtype dt, const void *buf, size_t at, int sender, int dest, size_t i) {
  if (dt == ZT_DTYPE_FP32) return ((const float *)buf)[at] == (float)(a2a_code(sender, dest, i) >> 8);
  return ((const uint16_t *)buf)[at] == (uint16_t)a2a_code(sender, dest, i);
}

/* zt_alltoall on g (members m[0..p-1], this rank m[me]): block d of send is for group rank d, recv's block r must
 * be what group rank r addressed to this rank, element for element; recv starts poisoned. */
static void check_alltoall(const zt_group *g, const int *m, int p, int me, size_t n, zt_dtype dt, const char *name) {
  const size_t es = zt_dtype_size(dt);
  unsigned char *snd = malloc(n * p * es + 1), *rcv = malloc(n * p * es + 1);
  for (int d = 0; d < p; d++)
    for (size_t i = 0; i < n; i++) a2a_fill(dt, snd, d * n + i, m[me], m[d], i);
  memset(rcv, 0xA5, n * p * es + 1);
  zt_alltoall(g, dt, snd, n, rcv);
  size_t bad = 0, first = 0;
  for (int r = 0; r < p; r++)
    for (size_t i = 0; i < n; i++)
      if (!a2a_is(dt, rcv, r * n + i, m[r], m[me], i) && bad++ == 0) first = r * n + i;
  CHECK(bad == 0, "%s: alltoall %s n_per_rank=%zu: %zu of %zu elements wrong, first at %zu (block of group rank %zu)",
        name, zt_dtype_name(dt), n, bad, n * p, first, n ? first / n : 0);
  CHECK(rcv[n * p * es] == 0xA5, "%s: alltoall %s n_per_rank=%zu wrote past recv", name, zt_dtype_name(dt), n);
  for (int d = 0; d < p; d++) /* send is left as it was */
    for (size_t i = 0; i < n; i++)
      if (!a2a_is(dt, snd, d * n + i, m[me], m[d], i)) { CHECK(0, "%s: alltoall changed send", name); d = p; break; }
  free(snd);
  free(rcv);
}

/* All checks on group g whose members are world ranks m[0..p-1]; me = this rank's index in m. */
static void check_group_ops(const zt_group *g, const int *m, int p, int me, const char *name) {
  CHECK(zt_group_size(g) == p && zt_group_rank(g) == me, "%s: size %d rank %d, expected %d %d", name,
        zt_group_size(g), zt_group_rank(g), p, me);
  for (int i = 0; i < p; i++) CHECK(zt_group_world_rank(g, i) == m[i], "%s: world rank of %d", name, i);
  size_t sizes[] = {0, 1, 2, 3, 7, (size_t)p - 1, (size_t)p + 1, 1000, 4099};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    size_t n = sizes[si];
    int salt = (int)si;
    /* allreduce f32: bitwise equal to the documented ring order, and the same on a second call */
    float *a = malloc((n + 1) * sizeof(float)), *b = malloc((n + 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = b[i] = valf(m[me], i, salt);
    zt_allreduce_sum_f32(g, a, n);
    zt_allreduce_sum_f32(g, b, n);
    size_t bad = 0;
    double maxerr = 0;
    for (size_t i = 0; i < n; i++) {
      float e = ring_sum_f32(m, p, n, i, salt);
      if (memcmp(&a[i], &e, sizeof e) != 0) bad++;
      double exact = 0;
      for (int k = 0; k < p; k++) exact += valf(m[k], i, salt);
      double err = fabs(a[i] - exact) / (1 + fabs(exact));
      if (err > maxerr) maxerr = err;
    }
    CHECK(bad == 0, "%s: allreduce_sum_f32 n=%zu: %zu elements differ from the ring order", name, n, bad);
    CHECK(maxerr < 1e-5, "%s: allreduce_sum_f32 n=%zu: relative error %g against the double sum", name, n, maxerr);
    CHECK(n == 0 || memcmp(a, b, n * sizeof(float)) == 0, "%s: allreduce twice differs, n=%zu", name, n);
    /* every rank holds the same bits: compare with group rank 0's copy */
    memcpy(b, a, n * sizeof(float));
    zt_broadcast(g, b, n * sizeof(float), 0);
    CHECK(n == 0 || memcmp(a, b, n * sizeof(float)) == 0, "%s: allreduce differs from group rank 0's, n=%zu", name, n);

    /* allreduce f64 sum and max */
    double *d = malloc((n + 1) * sizeof(double)), *x = malloc((n + 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) { d[i] = vald(m[me], i, salt); x[i] = -fabs(vald(m[me], i, salt + 50)); }
    zt_allreduce_sum_f64(g, d, n);
    zt_allreduce_max_f64(g, x, n);
    bad = 0;
    size_t badmax = 0;
    for (size_t i = 0; i < n; i++) {
      double e = ring_sum_f64(m, p, n, i, salt);
      if (memcmp(&d[i], &e, sizeof e) != 0) bad++;
      double mx = -INFINITY;
      for (int k = 0; k < p; k++) { double v = -fabs(vald(m[k], i, salt + 50)); if (v > mx) mx = v; }
      if (x[i] != mx) badmax++;
    }
    CHECK(bad == 0, "%s: allreduce_sum_f64 n=%zu: %zu elements differ", name, n, bad);
    CHECK(badmax == 0, "%s: allreduce_max_f64 n=%zu: %zu elements differ", name, n, badmax);

    /* allgather: recv[r*n + i] = group rank r's send[i] */
    float *rv = malloc((n * p + 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = valf(m[me], i, salt + 100);
    zt_allgather_f32(g, a, n, rv);
    bad = 0;
    for (int r = 0; r < p; r++)
      for (size_t i = 0; i < n; i++) if (rv[r * n + i] != valf(m[r], i, salt + 100)) bad++;
    CHECK(bad == 0, "%s: allgather n=%zu: %zu elements out of place", name, n, bad);

    /* reduce-scatter: block me of the sum, bitwise equal to the allreduce of the same data */
    float *full = malloc((n * p + 1) * sizeof(float)), *out = malloc((n + 1) * sizeof(float));
    for (size_t i = 0; i < n * p; i++) full[i] = valf(m[me], i, salt + 200);
    zt_reduce_scatter_sum_f32(g, full, n, out);
    zt_allreduce_sum_f32(g, full, n * p);
    bad = 0;
    for (size_t i = 0; i < n; i++) {
      double exact = 0;
      for (int k = 0; k < p; k++) exact += valf(m[k], me * n + i, salt + 200);
      if (memcmp(&out[i], &full[me * n + i], sizeof(float)) != 0 || fabs(out[i] - exact) > 1e-3 * (1 + fabs(exact)))
        bad++;
    }
    CHECK(bad == 0, "%s: reduce_scatter n=%zu: %zu elements wrong", name, n, bad);

    /* broadcast from the last group rank (non-zero root when p > 1), an odd byte count */
    size_t bytes = n * sizeof(float) + (n % 3);
    unsigned char *bb = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++) bb[i] = (unsigned char)(me * 31 + i * 7);
    zt_broadcast(g, bb, bytes, p - 1);
    bad = 0;
    for (size_t i = 0; i < bytes; i++) if (bb[i] != (unsigned char)((p - 1) * 31 + i * 7)) bad++;
    CHECK(bad == 0, "%s: broadcast of %zu bytes from group rank %d: %zu bytes wrong", name, bytes, p - 1, bad);

    /* point to point ring: send to me+1, receive from me-1 (even ranks send first) and the same by sendrecv */
    if (p > 1) {
      int right = (me + 1) % p, left = (me - 1 + p) % p;
      for (size_t i = 0; i < n; i++) a[i] = valf(m[me], i, salt + 300);
      if (me % 2 == 0) { zt_send_f32(g, a, n, right); zt_recv_f32(g, b, n, left); }
      else { zt_recv_f32(g, b, n, left); zt_send_f32(g, a, n, right); }
      bad = 0;
      for (size_t i = 0; i < n; i++) if (b[i] != valf(m[left], i, salt + 300)) bad++;
      CHECK(bad == 0, "%s: send/recv ring n=%zu: %zu wrong", name, n, bad);
      memset(b, 0, n * sizeof(float));
      zt_sendrecv_f32(g, a, n, right, b, n, left);
      bad = 0;
      for (size_t i = 0; i < n; i++) if (b[i] != valf(m[left], i, salt + 300)) bad++;
      CHECK(bad == 0, "%s: sendrecv ring n=%zu: %zu wrong", name, n, bad);
      /* batched: both directions of the ring at once (a send-first ring of blocking sends would deadlock on
       * large messages); the two messages between the ranks of a pair (p = 2) match in posting order */
      float *a2 = malloc((n + 1) * sizeof(float)), *b2 = malloc((n + 1) * sizeof(float));
      for (size_t i = 0; i < n; i++) a2[i] = valf(m[me], i, salt + 400);
      zt_p2p_op ops[4] = {{a, n, right, 1, ZT_DTYPE_FP32}, {a2, n, left, 1, ZT_DTYPE_FP32}, {b, n, left, 0, ZT_DTYPE_FP32},
                            {b2, n, right, 0, ZT_DTYPE_FP32}};
      zt_batch_sendrecv_f32(g, ops, 4);
      bad = 0;
      for (size_t i = 0; i < n; i++)
        if (b[i] != valf(m[left], i, salt + 300) || b2[i] != valf(m[right], i, salt + 400)) bad++;
      free(a2);
      free(b2);
      CHECK(bad == 0, "%s: batched ring both ways n=%zu: %zu wrong", name, n, bad);
    }
    /* all-to-all in fp32 and a 2-byte type (the chunk settings of run_all split the larger blocks) */
    check_alltoall(g, m, p, me, n, ZT_DTYPE_FP32, name);
    check_alltoall(g, m, p, me, n, ZT_DTYPE_BF16, name);
    zt_barrier(g);
    free(a); free(b); free(d); free(x); free(rv); free(full); free(out); free(bb);
  }
}

static void run_all(void) {
  int all[64];
  for (int i = 0; i < P; i++) all[i] = i;
  CHECK(zt_rank() == R && zt_world_size() == P, "zt_set_rank not set: %d/%d vs %d/%d", zt_rank(), zt_world_size(), R,
        P);
  size_t chunks[] = {(size_t)1 << 30, 8, 12, 24}; /* 12 rounds down to 8; 24 = 6 floats or 3 doubles */
  for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
    zt_comm_set_chunk_bytes(chunks[c]);
    char name[64];
    snprintf(name, sizeof name, "world (chunk %zu bytes)", chunks[c]);
    check_group_ops(zt_comm_world(), all, P, R, name);
  }
  zt_comm_set_chunk_bytes((size_t)1 << 30);
  /* all-to-all without a group: this rank alone, a copy */
  const int self[1] = {R};
  for (size_t n = 0; n < 20; n += 19) {
    check_alltoall(NULL, self, 1, 0, n, ZT_DTYPE_FP32, "no group");
    check_alltoall(NULL, self, 1, 0, n, ZT_DTYPE_FP16, "no group");
  }
  /* subgroups: even ranks, odd ranks, pairs, and the world in reverse order */
  int ev[64], od[64], ne = 0, no = 0;
  for (int i = 0; i < P; i++) { if (i % 2) od[no++] = i; else ev[ne++] = i; }
  zt_group *ge = zt_group_create(ev, ne);
  zt_group *go = no ? zt_group_create(od, no) : NULL;
  CHECK((ge != NULL) == (R % 2 == 0) && (go != NULL) == (R % 2 == 1), "even/odd membership");
  if (ge) check_group_ops(ge, ev, ne, R / 2, "even ranks");
  if (go) check_group_ops(go, od, no, R / 2, "odd ranks");
  /* the all-to-all on a subgroup with small chunks too (12 rounds down to 8 bytes: 2 floats, 4 bf16 per message) */
  zt_comm_set_chunk_bytes(12);
  for (size_t n = 0; n < 40; n += 13) {
    if (ge) check_alltoall(ge, ev, ne, R / 2, n, ZT_DTYPE_FP32, "even ranks (chunk 8 bytes)");
    if (ge) check_alltoall(ge, ev, ne, R / 2, n, ZT_DTYPE_BF16, "even ranks (chunk 8 bytes)");
    if (go) check_alltoall(go, od, no, R / 2, n, ZT_DTYPE_FP16, "odd ranks (chunk 8 bytes)");
  }
  zt_comm_set_chunk_bytes((size_t)1 << 30);
  for (int first = 0; first + 1 < P; first += 2) {
    int pair[2] = {first, first + 1};
    zt_group *gp = zt_group_create(pair, 2);
    CHECK((gp != NULL) == (R / 2 == first / 2), "pair %d membership", first);
    if (gp) check_group_ops(gp, pair, 2, R - first, "pair");
    zt_group_free(gp);
  }
  int rev[64];
  for (int i = 0; i < P; i++) rev[i] = P - 1 - i;
  zt_group *gr = zt_group_create(rev, P);
  check_group_ops(gr, rev, P, P - 1 - R, "reversed world");
  zt_group_free(gr);
  zt_group_free(ge);
  /* go is left alive: zt_comm_finalize frees it */
  (void)go;
}

/* zt_comm_agree's explain hook for text: the first differing character position and both texts. */
static void explain_text(const void *mine, size_t n_mine, const void *theirs, size_t n_theirs, int other, char *msg,
                         size_t cap) {
  snprintf(msg, cap, "\"%.*s\" on world rank 0, \"%.*s\" on world rank %d", (int)n_mine, (const char *)mine,
           (int)n_theirs, (const char *)theirs, other);
}

int main(int argc, char **argv) {
  zt_comm_init(&argc, &argv);
  R = zt_comm_rank();
  P = zt_comm_size();
  const char *mode = argc > 1 ? argv[1] : "all";
  if (strcmp(mode, "all") == 0) {
    if (P > 64) zt_fatal("test_comm", "at most 64 ranks, got %d", P);
    run_all();
  } else if (strcmp(mode, "fail") == 0 && argc > 2) {
    int who = atoi(argv[2]);
    zt_barrier(zt_comm_world());
    float v[4] = {1, 2, 3, 4};
    if (R == who) {
      usleep(200000);
      zt_fatal("test_comm", "deliberate failure on world rank %d of %d", R, P);
    }
    zt_allreduce_sum_f32(zt_comm_world(), v, 4); /* never completes: rank `who` is gone */
    fprintf(stderr, "FAIL [rank %d]: allreduce returned although rank %d died\n", R, who);
    g_fail++;
  } else if (strcmp(mode, "agree") == 0 && argc > 2) {
    /* equal texts pass; then world rank `who` (and every rank above it) reports another text */
    const int who = atoi(argv[2]);
    zt_comm_agree(zt_comm_world(), "the test text", "same", 4, 30, explain_text);
    if (R == 0) printf("agreed on equal texts\n");
    fflush(stdout);
    char text[32];
    snprintf(text, sizeof text, R >= who ? "text of rank %d" : "text", R);
    zt_comm_agree(zt_comm_world(), "the test text", text, strlen(text), 30, explain_text);
    fprintf(stderr, "FAIL [rank %d]: zt_comm_agree returned although rank %d differs\n", R, who);
    g_fail++;
  } else if (strcmp(mode, "agree_stop") == 0 && argc > 2) {
    /* world rank `who` stops itself (SIGSTOP) before the agreement; the others give up after 2 s */
    const int who = atoi(argv[2]);
    if (R == who) raise(SIGSTOP);
    zt_comm_agree(zt_comm_world(), "the test text", "same", 4, 2, explain_text);
    if (R != who) { /* the stopped rank itself may be continued by the launcher's shutdown and finish */
      fprintf(stderr, "FAIL [rank %d]: zt_comm_agree returned although rank %d is stopped\n", R, who);
      g_fail++;
    }
  } else if (strcmp(mode, "mismatch") == 0) {
    float v[4] = {1, 2, 3, 4};
    if (R == 0) zt_send_f32(zt_comm_world(), v, 4, 1);
    if (R == 1) zt_recv_f32(zt_comm_world(), v, 2, 0);
    zt_barrier(zt_comm_world());
  } else {
    zt_fatal("test_comm", "unknown mode '%s' (all, fail <rank>, agree <rank>, agree_stop <rank>, mismatch)", mode);
  }
  int fails = g_fail;
  if (strcmp(mode, "all") == 0) {
    double f = fails;
    zt_allreduce_sum_f64(zt_comm_world(), &f, 1);
    if (R == 0) printf("%s: %d ranks, %.0f failed checks\n", f == 0 ? "PASS" : "FAIL", P, f);
    fails = f != 0;
  }
  zt_comm_finalize();
  return fails ? 1 : 0;
}
