/* libFuzzer harness: the legacy curriculum scheduler and its start-up check (train/curriculum.c) on arbitrary
 * configurations. The input's bytes become the schedule (any int64 parameters, discrete lists of any length), the
 * sequence length, tensor-parallel size and sequence parallelism, and the run's length (up to 3000 iterations).
 * Whenever zt_curriculum_check accepts, every length the scheduler gives over the run, stepped from its initial state
 * as the engine steps it and also from a fresh scheduler at any step (a resumed run), must be a usable sequence
 * length: 1 .. seq_length and, with sequence parallelism, a multiple of tp; fixed_linear and fixed_root never
 * decrease. zt_curriculum_truncate then cuts a batch to it (ASan catches a copy out of bounds). UBSan catches
 * overflows in the formulas. */
#include "tests/fuzz/fuzz.h"
#include "train/curriculum.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} reader;

/* Small values most of the time, any int64 sometimes: the first byte picks the range. */
static int64_t rd(reader *r) {
  if (r->n < 1) return 1;
  const uint8_t kind = *r->p++;
  r->n--;
  if (kind < 160) return (int64_t)(kind % 72) - 4; /* -4 .. 67 */
  if (kind < 230) return (int64_t)(kind - 160) * 37 - 100;
  int64_t v = 0;
  const size_t k = r->n < 8 ? r->n : 8;
  memcpy(&v, r->p, k);
  r->p += k, r->n -= k;
  return v;
}

static void fail(const char *what, int64_t t, int64_t d) {
  fprintf(stderr, "fuzz_curriculum: %s at step %lld: %lld\n", what, (long long)t, (long long)d);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  zt_curriculum_config c;
  memset(&c, 0, sizeof c);
  c.enabled = true;
  c.type = (zt_curriculum_type)((uint64_t)rd(&r) % 3);
  c.min_difficulty = rd(&r);
  c.max_difficulty = rd(&r);
  c.total_curriculum_step = rd(&r);
  c.difficulty_step = rd(&r);
  c.root_degree = rd(&r);
  /* the ds_config reader guarantees these (the schema's ranges; the lists' lengths and integers) */
  if (c.total_curriculum_step < 1) c.total_curriculum_step = 1;
  if (c.difficulty_step < 1) c.difficulty_step = 1;
  if (c.root_degree < 1) c.root_degree = 1;
  if (c.min_difficulty < -2147483647 || c.min_difficulty > 2147483647) c.min_difficulty %= 2147483647;
  if (c.max_difficulty < -2147483647 || c.max_difficulty > 2147483647) c.max_difficulty %= 2147483647;
  const int nm = 1 + (int)((uint64_t)rd(&r) % 8);
  c.n_difficulty = nm + 1;
  for (int i = 0; i < c.n_difficulty; i++) c.difficulty[i] = rd(&r) % 9000000000000000LL;
  for (int i = 0; i < nm; i++) c.max_step[i] = rd(&r) % 9000000000000000LL;
  const int seq = (int)(1 + (uint64_t)rd(&r) % 4096), tp = (int)(1 + (uint64_t)rd(&r) % 8);
  const int sp = (int)(rd(&r) & 1);
  const int64_t last = 1 + (int64_t)((uint64_t)rd(&r) % 3000);
  char err[512];
  if (!zt_curriculum_check(&c, seq, tp, sp, 1, last, err, sizeof err)) return 0;
  const int split = sp ? tp : 1;
  zt_curriculum s;
  zt_curriculum_init(&s, &c);
  int64_t prev = 0;
  for (int64_t t = 1; t <= last; t++) {
    const int64_t d = zt_curriculum_update(&s, t);
    if (d < 1 || d > seq || d % split != 0) fail("accepted schedule gives an unusable length", t, d);
    if (c.type != ZT_CURRICULUM_FIXED_DISCRETE && d < prev) fail("fixed_root decreased", t, d);
    prev = d;
    if (t % 97 == 1) { /* a resumed run: a fresh scheduler at step t */
      zt_curriculum f;
      zt_curriculum_init(&f, &c);
      const int64_t e = zt_curriculum_update(&f, t);
      if (e < 1 || e > seq || e % split != 0) fail("accepted schedule resumes at an unusable length", t, e);
    }
  }
  /* the truncation of a small batch to the last length */
  const int B = 2, T = seq < 64 ? seq : 64, d = (int)(prev < T ? prev : T);
  int32_t *tok = calloc((size_t)B * T, 4), *pos = calloc((size_t)B * T, 4);
  float *mask = calloc((size_t)B * T, 4);
  const zt_batch in = {.B = B, .T = T, .tokens = tok, .labels = tok, .positions = pos, .loss_mask = mask};
  zt_batch out;
  zt_curriculum_batch buf;
  memset(&buf, 0, sizeof buf);
  zt_curriculum_truncate(&in, d, &buf, &out);
  if (out.T != d || (d < T && out.tokens == tok)) fail("truncation", d, out.T);
  zt_curriculum_batch_free(&buf);
  free(tok), free(pos), free(mask);
  return 0;
}
