/* The legacy curriculum scheduler (train/curriculum.h), transcribed from DeepSpeed 0.16's
 * data_pipeline/curriculum_scheduler.py: fixed_root's d = floor((t/total)^(1/root_degree) (max - min) + min),
 * d -= d mod difficulty_step, d = min(d, max) in double as Python computes it (fixed_linear is root_degree 1);
 * fixed_discrete's first difficulty whose max_step >= t; update_difficulty recomputes only below max. */
#include "train/curriculum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

const char *zt_curriculum_type_name(zt_curriculum_type t) {
  return t == ZT_CURRICULUM_FIXED_LINEAR ? "fixed_linear" : t == ZT_CURRICULUM_FIXED_ROOT ? "fixed_root"
                                                                                          : "fixed_discrete";
}

static int64_t floor_mod(int64_t a, int64_t b) { /* Python's %: the sign of the divisor */
  int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

static int64_t fixed_root(const zt_curriculum_config *c, int64_t t, int64_t root_degree) {
  const double x = pow((double)t / (double)c->total_curriculum_step, 1.0 / (double)root_degree);
  const double v = floor(x * (double)(c->max_difficulty - c->min_difficulty) + (double)c->min_difficulty);
  /* past int64 (Python's integers have no limit): rounded down to a multiple of difficulty_step it is either 0 (a
   * step above it) or at least half of it, far above max */
  if (v >= 0x1p62) return (double)c->difficulty_step > v ? 0 : c->max_difficulty;
  int64_t d = (int64_t)v;
  d -= floor_mod(d, c->difficulty_step);
  return d < c->max_difficulty ? d : c->max_difficulty;
}

static int64_t fixed_discrete(const zt_curriculum_config *c, int64_t t) {
  const int n = c->n_difficulty - 1; /* max_step entries */
  if (t > c->max_step[n - 1]) return c->difficulty[n];
  for (int i = 0; i < n; i++)
    if (t <= c->max_step[i]) return c->difficulty[i];
  return c->difficulty[n]; /* unreachable: t <= max_step[n - 1] matched above */
}

int64_t zt_curriculum_difficulty(const zt_curriculum_config *c, int64_t t) {
  switch (c->type) {
    case ZT_CURRICULUM_FIXED_DISCRETE: return fixed_discrete(c, t);
    case ZT_CURRICULUM_FIXED_LINEAR: return fixed_root(c, t, 1);
    default: return fixed_root(c, t, c->root_degree);
  }
}

void zt_curriculum_init(zt_curriculum *s, const zt_curriculum_config *c) {
  s->cfg = c;
  s->current = c->min_difficulty;
}

int64_t zt_curriculum_update(zt_curriculum *s, int64_t t) {
  if (s->current < s->cfg->max_difficulty) s->current = zt_curriculum_difficulty(s->cfg, t);
  return s->current;
}

/* The value reached at step t is bad: the reason into err. */
static int bad_value(const zt_curriculum_config *c, int64_t t, int64_t d, int seq_length, int tp, char *err,
                     size_t errn) {
  if (d < 1) {
    snprintf(err, errn, "the %s schedule gives a sequence length of %lld at iteration %lld (min_difficulty %lld "
             "rounded down to a multiple of difficulty_step %lld): it must be at least 1", zt_curriculum_type_name(c->type),
             (long long)d, (long long)t, (long long)c->min_difficulty, (long long)c->difficulty_step);
    return 1;
  }
  if (d > seq_length) {
    snprintf(err, errn, "the %s schedule gives a sequence length of %lld at iteration %lld, more than --seq-length "
             "%d", zt_curriculum_type_name(c->type), (long long)d, (long long)t, seq_length);
    return 1;
  }
  if (tp > 1 && d % tp != 0) {
    snprintf(err, errn, "the %s schedule gives a sequence length of %lld at iteration %lld, which --sequence-parallel "
             "cannot split over %d tensor-parallel ranks (Megatron fails there: \"First dimension of the tensor should "
             "be divisible by tensor parallel size\"); make difficulty_step and max_difficulty multiples of %d",
             zt_curriculum_type_name(c->type), (long long)d, (long long)t, tp, tp);
    return 1;
  }
  return 0;
}

int zt_curriculum_check(const zt_curriculum_config *c, int seq_length, int tp, int sequence_parallel,
                        int64_t first_step, int64_t last_step, char *err, size_t errn) {
  if (c->min_difficulty < 1) {
    snprintf(err, errn, "min_difficulty %lld must be at least 1 (a sequence length)", (long long)c->min_difficulty);
    return 0;
  }
  if (c->min_difficulty > c->max_difficulty) {
    snprintf(err, errn, "min_difficulty %lld is larger than max_difficulty %lld (DeepSpeed would never update it)",
             (long long)c->min_difficulty, (long long)c->max_difficulty);
    return 0;
  }
  if (c->max_difficulty > seq_length) {
    snprintf(err, errn, "max_difficulty %lld is larger than --seq-length %d (the samples hold --seq-length tokens)",
             (long long)c->max_difficulty, seq_length);
    return 0;
  }
  const int sp_tp = sequence_parallel ? tp : 1;
  /* the lengths the run will use, stepped as the engine steps the scheduler; fixed_root is monotone in t and
   * fixed_discrete constant between max_step entries, so the walk stops once at max or visits only the steps
   * where the value can change */
  zt_curriculum s;
  zt_curriculum_init(&s, c);
  if (c->type == ZT_CURRICULUM_FIXED_DISCRETE) {
    const int n = c->n_difficulty - 1;
    for (int64_t t = first_step; t <= last_step;) {
      const int64_t d = zt_curriculum_update(&s, t);
      if (bad_value(c, t, d, seq_length, sp_tp, err, errn)) return 0;
      int64_t next = INT64_MAX; /* the next step whose value can differ */
      for (int i = 0; i < n; i++)
        if (c->max_step[i] >= t && c->max_step[i] + 1 < next) next = c->max_step[i] + 1;
      if (next == INT64_MAX || s.current >= c->max_difficulty) break;
      t = next;
    }
    /* a resumed run starts a fresh scheduler (not checkpointed, as in DeepSpeed): after a list that rose to
     * max_difficulty and fell again it resumes at the fallen entries, which the walk above never reached */
    for (int i = 0; i < c->n_difficulty; i++) {
      const int64_t d = c->difficulty[i];
      if (d < 1 || d > seq_length || (sp_tp > 1 && d % sp_tp != 0)) {
        snprintf(err, errn, "fixed_discrete difficulty[%d] = %lld (a resumed run can start there) %s", i, (long long)d,
                 d < 1 ? "is not a sequence length (at least 1)" : d > seq_length ? "is more than --seq-length"
                 : "does not split over the tensor-parallel ranks of --sequence-parallel");
        if (d > seq_length) snprintf(err + strlen(err), errn - strlen(err), " %d", seq_length);
        return 0;
      }
    }
    return 1;
  }
  for (int64_t t = first_step; t <= last_step; t++) {
    const int64_t d = zt_curriculum_update(&s, t);
    if (bad_value(c, t, d, seq_length, sp_tp, err, errn)) return 0;
    if (s.current >= c->max_difficulty) break;
    /* all later values are multiples of difficulty_step (or max): with a step that splits, nothing to find */
    if (d >= 1 && c->difficulty_step % sp_tp == 0 && c->max_difficulty % sp_tp == 0) break;
  }
  return 1;
}

static void *grow(void *p, size_t n, size_t es) {
  void *q = realloc(p, n * es);
  zt_check(q != NULL, "out of memory", "curriculum batch of %zu elements", n);
  return q;
}

/* Rows of B x T0 elements of size es cut to B x T. */
static const void *cut(const void *src, void **dst, int B, int T0, int T, size_t es) {
  if (!src) return NULL;
  for (int r = 0; r < B; r++) memcpy((char *)*dst + (size_t)r * T * es, (const char *)src + (size_t)r * T0 * es, (size_t)T * es);
  return *dst;
}

/* Room for `need` elements of each array. */
static void reserve(zt_curriculum_batch *buf, size_t need) {
  if (buf->cap >= need) return;
  buf->tokens = grow(buf->tokens, need, sizeof(int32_t));
  buf->positions = grow(buf->positions, need, sizeof(int32_t));
  buf->token_types = grow(buf->token_types, need, sizeof(int32_t));
  buf->labels = grow(buf->labels, need, sizeof(int32_t));
  buf->key_start = grow(buf->key_start, need, sizeof(int32_t));
  buf->loss_mask = grow(buf->loss_mask, need, sizeof(float));
  buf->padding = grow(buf->padding, need, 1);
  buf->cap = need;
}

void zt_curriculum_truncate(const zt_batch *in, int T, zt_curriculum_batch *buf, zt_batch *out) {
  *out = *in;
  if (T >= in->T) return;
  reserve(buf, (size_t)in->B * (size_t)in->T);
  const int B = in->B, T0 = in->T;
  out->T = T;
  out->tokens = cut(in->tokens, (void **)&buf->tokens, B, T0, T, sizeof(int32_t));
  out->positions = cut(in->positions, (void **)&buf->positions, B, T0, T, sizeof(int32_t));
  out->token_types = cut(in->token_types, (void **)&buf->token_types, B, T0, T, sizeof(int32_t));
  out->labels = cut(in->labels, (void **)&buf->labels, B, T0, T, sizeof(int32_t));
  out->key_start = cut(in->key_start, (void **)&buf->key_start, B, T0, T, sizeof(int32_t));
  out->loss_mask = cut(in->loss_mask, (void **)&buf->loss_mask, B, T0, T, sizeof(float));
  out->padding = cut(in->padding, (void **)&buf->padding, B, T0, T, 1);
}

void zt_curriculum_rows(const zt_batch *all, int r0, int P, zt_curriculum_batch *buf, zt_batch *out) {
  const int T = all->T, have = all->B - r0 < P ? all->B - r0 : P;
  const size_t o = (size_t)r0 * T;
  *out = *all;
  out->B = P;
  if (have == P) { /* a whole pass: views into all */
    out->tokens = all->tokens + o;
    out->labels = all->labels + o;
    out->loss_mask = all->loss_mask + o;
    if (all->positions) out->positions = all->positions + o;
    if (all->key_start) out->key_start = all->key_start + o;
    return;
  }
  const size_t need = (size_t)P * T, n = (size_t)have * T;
  reserve(buf, need);
  memcpy(buf->tokens, all->tokens + o, n * sizeof(int32_t));
  memcpy(buf->labels, all->labels + o, n * sizeof(int32_t));
  memcpy(buf->loss_mask, all->loss_mask + o, n * sizeof(float));
  for (size_t i = n; i < need; i++) buf->tokens[i] = buf->labels[i] = 0, buf->loss_mask[i] = 0.0f;
  out->tokens = buf->tokens;
  out->labels = buf->labels;
  out->loss_mask = buf->loss_mask;
  if (all->positions) {
    memcpy(buf->positions, all->positions + o, n * sizeof(int32_t));
    for (size_t i = n; i < need; i++) buf->positions[i] = (int32_t)(i % (size_t)T);
    out->positions = buf->positions;
  }
  if (all->key_start) {
    memcpy(buf->key_start, all->key_start + o, n * sizeof(int32_t));
    for (size_t i = n; i < need; i++) buf->key_start[i] = 0;
    out->key_start = buf->key_start;
  }
}

void zt_curriculum_batch_free(zt_curriculum_batch *buf) {
  free(buf->tokens), free(buf->positions), free(buf->token_types), free(buf->labels), free(buf->key_start);
  free(buf->loss_mask), free(buf->padding);
  memset(buf, 0, sizeof *buf);
}
