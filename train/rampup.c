/* Megatron's batch-size ramp-up (see rampup.h). The ramp's steps are walked segment by segment (one global batch
 * size each, its length found by bisection on the exact per-step formula), so a ramp of 10^12 samples costs a few
 * thousand evaluations, not one per iteration. */
#include "train/rampup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

#define FLAG "--rampup-batch-size"
#define MAX_COUNT 9007199254740992LL /* 2^53: exact in the double the formula divides in */
#define MAX_INCREMENTS 1000000      /* batch sizes of one ramp; Megatron's examples use a few hundred */

/* Python's int() of one value (an optional sign, decimal digits, surrounding blanks). */
static int64_t parse_value(const char *s, const char *what, const char *all) {
  char *end;
  errno = 0;
  const long long v = strtoll(s, &end, 10);
  while (*end == ' ' || *end == '\t') end++;
  zt_check(end != s && *end == '\0' && errno == 0, "bad argument value", FLAG " %s: the %s '%s' is not an integer",
           all, what, s);
  return v;
}

/* One segment of steps with the same global batch size: the first step starts after c0 consumed samples. */
typedef struct {
  int64_t batch, c0, steps;
} segment;

/* Whether step j of the segment starting at c with batch b still has that batch and starts inside the ramp. */
static int in_segment(const zt_rampup *r, int64_t c, int64_t b, int64_t j) {
  const int64_t cj = c + j * b;
  return cj <= r->samples && zt_rampup_batch(r, cj) == b;
}

/* Calls fn on each segment of the ramp phase (the steps that start at most `samples` consumed samples in, Megatron's
 * update_train_iters loop); returns the samples consumed after it and the number of its steps. fn returns 0 to stop
 * early. */
static int64_t walk(const zt_rampup *r, int64_t *steps, int (*fn)(void *, const segment *), void *ctx) {
  int64_t c = 0, it = 0;
  while (c <= r->samples) {
    const int64_t b = zt_rampup_batch(r, c);
    int64_t lo = 1, hi = (r->samples - c) / b + 1; /* step hi starts past the ramp */
    while (lo < hi) {                               /* the first step outside the segment */
      const int64_t mid = lo + (hi - lo) / 2;
      if (in_segment(r, c, b, mid)) lo = mid + 1;
      else hi = mid;
    }
    const segment s = {b, c, lo};
    if (fn && !fn(ctx, &s)) break;
    c += lo * b;
    it += lo;
  }
  if (steps) *steps = it;
  return c;
}

typedef struct {
  const zt_rampup *r;
  const zt_args *a;
  const char *all;
} check_ctx;

static int check_segment(void *p, const segment *s) {
  const check_ctx *k = p;
  zt_check(s->batch % k->r->per_step == 0, "inconsistent arguments", FLAG " %s: the global batch size %lld (from %lld "
           "consumed samples on) is not divisible by --micro-batch-size %d x data-parallel size %d = %lld "
           "(Megatron-DeepSpeed's consistency check stops the run there)", k->all, (long long)s->batch,
           (long long)s->c0, k->a->micro_batch_size, k->a->data_parallel_size, (long long)k->r->per_step);
  return 1;
}

/* The flag's words joined by spaces, as the errors quote them. */
static void joined(const zt_strlist *l, char *all, size_t cap) {
  all[0] = '\0';
  for (int i = 0, len = 0; i < l->n && len < (int)cap; i++)
    len += snprintf(all + len, cap - (size_t)len, "%s%s", i ? " " : "", l->v[i]);
}

void zt_rampup_parse(zt_rampup *r, const zt_args *a) {
  memset(r, 0, sizeof *r);
  const zt_strlist *l = &a->rampup_batch_size;
  r->global = a->global_batch_size;
  r->per_step = (int64_t)a->micro_batch_size * a->data_parallel_size;
  if (!l->v) return;
  char all[160];
  joined(l, all, sizeof all);
  zt_check(l->n == 3, "bad argument value", FLAG " %s: expected the following format: " FLAG " <start batch size> "
           "<batch size increment> <ramp-up samples> (got %d value%s)", all, l->n, l->n == 1 ? "" : "s");
  r->on = 1;
  r->start = parse_value(l->v[0], "start batch size", all);
  r->increment = parse_value(l->v[1], "batch size increment", all);
  r->samples = parse_value(l->v[2], "ramp-up samples", all);
  zt_check(r->start > 0, "bad argument value", FLAG " %s: the start batch size must be > 0", all);
  zt_check(r->increment > 0, "bad argument value", FLAG " %s: the batch size increment must be > 0", all);
  zt_check(r->samples > 0 && r->samples <= MAX_COUNT, "bad argument value", FLAG " %s: the ramp-up samples must be in "
           "[1, 2^53] (Megatron-DeepSpeed divides by zero with 0)", all);
  zt_check(a->train_samples >= 0, "inconsistent arguments", FLAG " %s: expected no batch-size rampup for "
           "iteration-based training (--train-iters %lld); give the length as --train-samples", all,
           (long long)a->train_iters);
}

void zt_rampup_init(zt_rampup *r, const zt_args *a, const char *source) {
  zt_rampup_parse(r, a);
  if (!r->on) return;
  char all[160];
  joined(&a->rampup_batch_size, all, sizeof all);
  const int64_t diff = r->global - r->start;
  zt_check(diff > 0, "inconsistent arguments", FLAG " %s: the start batch size %lld must be less than the global batch "
           "size %lld (%s)%s", all, (long long)r->start, (long long)r->global, source,
           diff == 0 ? ": there is nothing to ramp (Megatron-DeepSpeed divides by zero there)" : "");
  zt_check(diff % r->increment == 0, "inconsistent arguments", FLAG " %s: expected global batch size interval (%lld = "
           "%lld - %lld) to be divisible by global batch size increment (%lld)", all, (long long)diff,
           (long long)r->global, (long long)r->start, (long long)r->increment);
  /* each increment is a batch size of its own, walked one by one (and by Megatron's update_train_iters loop) */
  zt_check(diff / r->increment <= MAX_INCREMENTS, "bad argument value", FLAG " %s: %lld increments from %lld to the "
           "global batch size %lld; at most %d are supported (use a larger increment)", all,
           (long long)(diff / r->increment), (long long)r->start, (long long)r->global, MAX_INCREMENTS);
  r->per_increment = (double)r->samples / (double)(diff / r->increment);
  zt_check(r->global % r->per_step == 0, "inconsistent arguments", "the global batch size %lld (%s) is not divisible "
           "by --micro-batch-size %d x data-parallel size %d = %lld", (long long)r->global, source,
           a->micro_batch_size, a->data_parallel_size, (long long)r->per_step);
  check_ctx k = {r, a, all};
  int64_t steps;
  const int64_t end = walk(r, &steps, check_segment, &k);
  zt_check(a->train_samples >= end, "inconsistent arguments", FLAG " %s: --train-samples %lld ends inside the ramp-up, "
           "whose %lld steps consume %lld samples (Megatron-DeepSpeed's update_train_iters then takes whole global "
           "batches off the ramp's steps, a length that is neither); give at least %lld samples or a shorter ramp-up", all, (long long)a->train_samples,
           (long long)steps, (long long)end, (long long)end);
}

int64_t zt_rampup_train_iters(const zt_rampup *r, int64_t train_samples) {
  if (!r->on) return train_samples / r->global;
  int64_t steps;
  const int64_t end = walk(r, &steps, NULL, NULL);
  const int64_t rest = train_samples - end; /* >= 0: zt_rampup_init refuses less */
  return steps + rest / r->global;
}

typedef struct {
  int64_t *sizes, last;
  int cap, n;
} list_ctx;

static void add_size(list_ctx *k, int64_t b) {
  if (k->n > 0 && k->last == b) return;
  if (k->n < k->cap) k->sizes[k->n] = b;
  k->last = b;
  k->n++;
}

static int list_segment(void *p, const segment *s) {
  add_size(p, s->batch);
  return 1;
}

int zt_rampup_batches(const zt_rampup *r, int64_t *sizes, int cap) {
  list_ctx k = {sizes, 0, cap, 0};
  if (r->on) walk(r, NULL, list_segment, &k);
  add_size(&k, r->global);
  return k.n;
}

typedef struct {
  int64_t samples;
  int found;
} reach_ctx;

static int reach_segment(void *p, const segment *s) {
  reach_ctx *k = p;
  if (k->samples >= s->c0 && k->samples <= s->c0 + s->steps * s->batch && (k->samples - s->c0) % s->batch == 0)
    k->found = 1;
  return !k->found && k->samples > s->c0;
}

int zt_rampup_reaches(const zt_rampup *r, int64_t samples) {
  if (samples < 0) return 0;
  if (!r->on) return samples % r->global == 0;
  reach_ctx k = {samples, samples == 0};
  const int64_t end = walk(r, NULL, reach_segment, &k);
  if (k.found) return 1;
  return samples >= end && (samples - end) % r->global == 0;
}
