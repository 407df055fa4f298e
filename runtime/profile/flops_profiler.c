/* DeepSpeed flops profiler: the module tree a model builds, analytic MACs/flops, recorded forward latencies and
 * DeepSpeed's report layout (deepspeed/profiling/flops_profiler/profiler.py). */
#include "runtime/profile/flops_profiler.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/base/error.h"

/* ---- number formatting -------------------------------------------------------------------------- */

/* Python's round(x, 2) (decimal rounding of the exact binary value) */
static double round2(double x) {
  char b[64];
  snprintf(b, sizeof b, "%.2f", x);
  return strtod(b, NULL);
}

const char *zt_fp_number(char *buf, int n, double num, const char *suffix) {
  double mag = 1;
  const char *u = "";
  if (num >= 1e12) mag = 1e12, u = "T";
  else if (num >= 1e9) mag = 1e9, u = "G";
  else if (num >= 1e6) mag = 1e6, u = "M";
  else if (num >= 1e3) mag = 1e3, u = "K";
  else if (num >= 1 || num == 0) mag = 1, u = "";
  else if (num >= 1e-3) mag = 1e-3, u = "m";
  else mag = 1e-6, u = "u";
  snprintf(buf, (size_t)n, "%g %s%s", round2(num / mag), u, suffix);
  return buf;
}

/* params_to_string: like number_to_string, "G" spelled "B", stripped */
static const char *params_str(char *buf, int n, double num) {
  zt_fp_number(buf, n, num, "");
  size_t l = strlen(buf);
  while (l > 0 && buf[l - 1] == ' ') buf[--l] = '\0';
  if (l > 0 && buf[l - 1] == 'G') buf[l - 1] = 'B';
  return buf;
}

/* Python's str() of round(x, 2) */
static const char *pyfloat_str(char *buf, int n, double x) {
  x = round2(x);
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, (size_t)n, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) break;
  }
  if (!strpbrk(buf, ".eni")) strncat(buf, ".0", (size_t)n - strlen(buf) - 1);
  return buf;
}

/* ---- growable text ------------------------------------------------------------------------------ */

typedef struct {
  char *s;
  size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->len + (size_t)need + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (b->len + (size_t)need + 1 > cap) cap *= 2;
    char *s = realloc(b->s, cap);
    zt_check(s != NULL, "flops profiler", "out of memory for a %zu-byte report", cap);
    b->s = s;
    b->cap = cap;
  }
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
  va_end(ap2);
  b->len += (size_t)need;
}

/* ---- the module tree ---------------------------------------------------------------------------- */

int zt_fp_add(zt_flops_profiler *p, int parent, const char *name, const char *cls, int slot, double macs,
              double flops) {
  zt_check(slot < p->nslots, "internal error", "flops profiler: latency slot %d of %d", slot, p->nslots);
  if (p->count == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 64;
    p->mods = realloc(p->mods, (size_t)p->cap * sizeof *p->mods);
    zt_check(p->mods != NULL, "flops profiler", "out of memory for %d modules", p->cap);
  }
  zt_fp_module *m = &p->mods[p->count];
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  char path[512] = "";
  if (parent >= 0 && p->mods[parent].path[0]) snprintf(path, sizeof path, "%s.%s", p->mods[parent].path, name);
  else if (parent >= 0) snprintf(path, sizeof path, "%s", name);
  zt_check(strlen(path) < sizeof m->path, "flops profiler", "module path %s is longer than %zu characters", path,
           sizeof m->path - 1);
  memcpy(m->path, path, strlen(path) + 1);
  m->cls = cls;
  m->parent = parent;
  m->depth = parent < 0 ? 0 : p->mods[parent].depth + 1;
  m->slot = slot;
  m->own_macs = macs;
  m->own_flops = flops;
  return p->count++;
}

void zt_fp_set_extra(zt_flops_profiler *p, int module, const char *extra) {
  snprintf(p->mods[module].extra, sizeof p->mods[module].extra, "%s", extra);
}

void zt_fp_set_path(zt_flops_profiler *p, int module, const char *path) {
  /* the module and its descendants (they follow it in pre-order): the old prefix replaced */
  char old[sizeof p->mods[0].path];
  const size_t n = strlen(p->mods[module].path);
  memcpy(old, p->mods[module].path, n + 1);
  for (int k = module; k < p->count && (k == module || p->mods[k].depth > p->mods[module].depth); k++) {
    char full[512];
    snprintf(full, sizeof full, "%s%s", path, p->mods[k].path + n);
    zt_check(strlen(full) < sizeof p->mods[k].path && strncmp(p->mods[k].path, old, n) == 0, "flops profiler",
             "module path %s is longer than %zu characters", full, sizeof p->mods[k].path - 1);
    memcpy(p->mods[k].path, full, strlen(full) + 1);
  }
}

void zt_fp_exclude(zt_flops_profiler *p, const char *prefix) {
  p->excluded = realloc(p->excluded, (size_t)(p->nexcluded + 1) * sizeof *p->excluded);
  zt_check(p->excluded != NULL, "flops profiler", "out of memory for %d excluded prefixes", p->nexcluded + 1);
  const size_t n = strlen(prefix) + 1;
  p->excluded[p->nexcluded] = memcpy(zt_malloc(n, "flops profiler prefix"), prefix, n);
  p->nexcluded++;
}

/* Whether name is prefix or lies under it ("prefix.<...>"). */
static bool under(const char *name, const char *prefix) {
  const size_t n = strlen(prefix);
  return strncmp(name, prefix, n) == 0 && (name[n] == '.' || name[n] == 0);
}

int zt_fp_add_layernorm(zt_flops_profiler *p, int parent, const char *name, int slot, double N, int C, double eps) {
  /* F.layer_norm with affine weights: 5 flops per element */
  int i = zt_fp_add(p, parent, name, "LayerNorm", slot, 0, 5 * N * C);
  snprintf(p->mods[i].extra, sizeof p->mods[i].extra, "(%d,), eps=%g, elementwise_affine=True", C, eps);
  return i;
}

int zt_fp_add_rmsnorm(zt_flops_profiler *p, int parent, const char *name, int slot) {
  return zt_fp_add(p, parent, name, "RMSNorm", slot, 0, 0);
}

int zt_fp_add_linear(zt_flops_profiler *p, int parent, const char *name, const char *cls, int slot, double N, int in,
                     int out) {
  /* torch.matmul(input, weight.t()) in Megatron's linear_with_grad_accumulation: N*in*out MACs, 2x flops;
   * the bias is added with "+" (or fused later), which DeepSpeed does not count */
  double macs = N * in * out;
  return zt_fp_add(p, parent, name, cls, slot, macs, 2 * macs);
}

zt_flops_profiler *zt_flops_profiler_create(const zt_flops_profiler_config *cfg, int nslots) {
  zt_check(cfg->top_modules >= 1, "flops_profiler.top_modules", "must be >= 1, got %d", cfg->top_modules);
  zt_check(cfg->module_depth >= -1, "flops_profiler.module_depth", "must be >= -1, got %d", cfg->module_depth);
  zt_flops_profiler *p = zt_calloc(1, sizeof *p, "flops profiler");
  p->cfg = *cfg;
  if (cfg->output_file) snprintf(p->output_file, sizeof p->output_file, "%s", cfg->output_file);
  p->cfg.output_file = p->output_file;
  p->nslots = nslots;
  p->times = zt_calloc((size_t)nslots, sizeof(double), "flops profiler latencies");
  return p;
}

void zt_fp_finish(zt_flops_profiler *p, const zt_param_table *t) {
  /* parameters of each subtree from the parameter table (each tensor once: tied weights once) */
  for (int i = 0; i < t->count; i++) {
    const zt_param *prm = &t->params[i];
    bool here = true;
    for (int x = 0; x < p->nexcluded && here; x++) here = !under(prm->name, p->excluded[x]);
    for (int k = 0; here && k < p->count; k++) {
      size_t n = strlen(p->mods[k].path);
      if (n == 0 || (strncmp(prm->name, p->mods[k].path, n) == 0 && prm->name[n] == '.'))
        p->mods[k].params += (int64_t)prm->numel;
    }
  }
  /* subtree MACs/flops: children follow their parent, so a reverse sweep sums them */
  for (int k = 0; k < p->count; k++) p->mods[k].macs = p->mods[k].own_macs, p->mods[k].flops = p->mods[k].own_flops;
  for (int k = p->count - 1; k > 0; k--) {
    p->mods[p->mods[k].parent].macs += p->mods[k].macs;
    p->mods[p->mods[k].parent].flops += p->mods[k].flops;
  }
}

void zt_flops_profiler_reset(zt_flops_profiler *p) { memset(p->times, 0, (size_t)p->nslots * sizeof(double)); }

void zt_flops_profiler_free(zt_flops_profiler *p) {
  if (!p) return;
  for (int x = 0; x < p->nexcluded; x++) free(p->excluded[x]);
  free(p->excluded);
  free(p->mods);
  free(p->times);
  free(p);
}

int zt_flops_profiler_find(const zt_flops_profiler *p, const char *path) {
  for (int k = 0; k < p->count; k++)
    if (strcmp(p->mods[k].path, path) == 0) return k;
  return -1;
}

static double own_duration(const zt_flops_profiler *p, int k) {
  return p->mods[k].slot >= 0 ? p->times[p->mods[k].slot] : 0.0;
}

double zt_flops_profiler_duration(const zt_flops_profiler *p, int k) {
  double d = own_duration(p, k);
  if (d == 0)
    for (int c = k + 1; c < p->count; c++)
      if (p->mods[c].parent == k) d += own_duration(p, c);
  return d;
}

/* ---- the report --------------------------------------------------------------------------------- */

#define LINE(b, label, ...)                            \
  do {                                                 \
    char v_[128];                                      \
    snprintf(v_, sizeof v_, __VA_ARGS__);              \
    sb_printf(b, "%-70s  %-8s\n", label, v_);          \
  } while (0)

/* PyTorch's Module.__repr__ with the profile as extra_repr; ModuleList groups equal neighbours. */
static char *module_repr(const zt_flops_profiler *p, int k, double tp, double tm, double td);

static void indent_append(sbuf *b, const char *s) {
  for (; *s; s++) {
    sb_printf(b, "%c", *s);
    if (*s == '\n') sb_printf(b, "  ");
  }
}

static char *module_repr(const zt_flops_profiler *p, int k, double tp, double tm, double td) {
  const zt_fp_module *m = &p->mods[k];
  sbuf b = {0};
  sb_printf(&b, "%s(", m->cls);
  int nchild = 0;
  for (int c = k + 1; c < p->count; c++) nchild += p->mods[c].parent == k;
  if (m->is_list) {
    if (nchild == 0) {
      sb_printf(&b, ")");
      return b.s;
    }
    char **reprs = zt_malloc((size_t)nchild * sizeof(char *), "flops profiler repr");
    int *idx = zt_malloc((size_t)nchild * sizeof(int), "flops profiler repr");
    int n = 0;
    for (int c = k + 1; c < p->count; c++)
      if (p->mods[c].parent == k) idx[n] = c, reprs[n] = module_repr(p, c, tp, tm, td), n++;
    for (int i = 0; i < n;) {
      int j = i;
      while (j + 1 < n && strcmp(reprs[j + 1], reprs[i]) == 0) j++;
      sb_printf(&b, "\n  ");
      if (j == i) sb_printf(&b, "(%s): ", p->mods[idx[i]].name);
      else sb_printf(&b, "(%s-%s): %d x ", p->mods[idx[i]].name, p->mods[idx[j]].name, j - i + 1);
      indent_append(&b, reprs[i]);
      i = j + 1;
    }
    for (int i = 0; i < n; i++) free(reprs[i]);
    free(reprs);
    free(idx);
    sb_printf(&b, "\n)");
    return b.s;
  }
  char ps[32], ms[32], ds[32], fs[32];
  double dur = zt_flops_profiler_duration(p, k);
  sbuf extra = {0};
  sb_printf(&extra, "%s = %g%% Params, ", params_str(ps, sizeof ps, (double)m->params),
            tp ? round2(100.0 * (double)m->params / tp) : 0.0);
  sb_printf(&extra, "%s = %g%% MACs, ", zt_fp_number(ms, sizeof ms, m->macs, "MACs"),
            tm ? round2(100.0 * m->macs / tm) : 0.0);
  sb_printf(&extra, "%s = %g%% latency, ", zt_fp_number(ds, sizeof ds, dur, "s"), td ? round2(100.0 * dur / td) : 0.0);
  sb_printf(&extra, "%s", zt_fp_number(fs, sizeof fs, dur ? round2(m->flops / dur) : 0.0, "FLOPS"));
  if (m->extra[0]) sb_printf(&extra, ", %s", m->extra);
  if (nchild == 0) {
    sb_printf(&b, "%s)", extra.s);
  } else {
    sb_printf(&b, "\n  %s", extra.s);
    for (int c = k + 1; c < p->count; c++) {
      if (p->mods[c].parent != k) continue;
      char *r = module_repr(p, c, tp, tm, td);
      sb_printf(&b, "\n  (%s): ", p->mods[c].name);
      indent_append(&b, r);
      free(r);
    }
    sb_printf(&b, "\n)");
  }
  free(extra.s);
  return b.s;
}

typedef struct {
  const char *cls;
  double v[3]; /* macs, params, time */
} agg_entry;

static void print_top(sbuf *b, const char *label, agg_entry *e, int n, int which, int top) {
  int *ord = zt_malloc((size_t)n * sizeof(int), "flops profiler aggregate");
  for (int i = 0; i < n; i++) ord[i] = i;
  for (int i = 1; i < n; i++) { /* stable, descending (Python's sorted(reverse=True)) */
    int x = ord[i], j = i - 1;
    while (j >= 0 && e[ord[j]].v[which] < e[x].v[which]) ord[j + 1] = ord[j], j--;
    ord[j + 1] = x;
  }
  int k = top < n ? top : n;
  sb_printf(b, "    %s - {", label);
  for (int i = 0; i < k; i++) {
    char s[32];
    const agg_entry *x = &e[ord[i]];
    if (which == 0) zt_fp_number(s, sizeof s, x->v[0], "MACs");
    else if (which == 1) params_str(s, sizeof s, x->v[1]);
    else zt_fp_number(s, sizeof s, x->v[2], "s");
    sb_printf(b, "%s'%s': '%s'", i ? ", " : "", x->cls, s);
  }
  sb_printf(b, "}\n");
  free(ord);
}

static void aggregated(const zt_flops_profiler *p, sbuf *b) {
  int maxd = 0;
  for (int k = 0; k < p->count; k++) maxd = p->mods[k].depth > maxd ? p->mods[k].depth : maxd;
  int ndepth = maxd + 1;
  int depth = p->cfg.module_depth == -1 ? ndepth - 1 : p->cfg.module_depth;
  if (depth > ndepth) depth = ndepth;
  sb_printf(b, "Top %d modules in terms of params, MACs or fwd latency at different model depths:\n",
            p->cfg.top_modules);
  agg_entry *e = zt_malloc((size_t)p->count * sizeof *e, "flops profiler aggregate");
  for (int d = 0; d < depth; d++) {
    int n = 0;
    for (int k = 0; k < p->count; k++) { /* pre-order = DeepSpeed's walk order (dict insertion order) */
      const zt_fp_module *m = &p->mods[k];
      if (m->depth != d) continue;
      int j = 0;
      while (j < n && strcmp(e[j].cls, m->cls) != 0) j++;
      if (j == n) e[n++] = (agg_entry){m->cls, {0, 0, 0}};
      e[j].v[0] += m->macs;
      e[j].v[1] += (double)m->params;
      e[j].v[2] += zt_flops_profiler_duration(p, k);
    }
    sb_printf(b, "depth %d:\n", d);
    print_top(b, "params     ", e, n, 1, p->cfg.top_modules);
    print_top(b, "MACs       ", e, n, 0, p->cfg.top_modules);
    print_top(b, "fwd latency", e, n, 2, p->cfg.top_modules);
  }
  free(e);
}

char *zt_flops_profiler_format(const zt_flops_profiler *p, const zt_flops_report_args *r) {
  sbuf b = {0};
  char s[64];
  const zt_fp_module *top = &p->mods[0];
  const double flops = top->flops, macs = top->macs, params = (double)top->params;
  const double total_dur = zt_flops_profiler_duration(p, 0);
  const int mp = r->mp_size > 0 ? r->mp_size : 1;
  sb_printf(&b, "\n-------------------------- DeepSpeed Flops Profiler --------------------------\n");
  sb_printf(&b, "Profile Summary at step %d:\n", r->profile_step);
  sb_printf(&b, "Notations:\n"
                "data parallel size (dp_size), model parallel size(mp_size),\n"
                "number of parameters (params), number of multiply-accumulate operations(MACs),\n"
                "number of floating-point operations (flops), floating-point operations per second (FLOPS),\n"
                "fwd latency (forward propagation latency), bwd latency (backward propagation latency),\n"
                "step (weights update latency), iter latency (sum of fwd, bwd and step latency)\n\n");
  LINE(&b, "world size: ", "%d", r->world_size);
  LINE(&b, "data parallel size: ", "%d", r->dp_size);
  LINE(&b, "model parallel size: ", "%d", mp);
  LINE(&b, "batch size per GPU: ", "%d", r->micro_batch);
  LINE(&b, "params per GPU: ", "%s", params_str(s, sizeof s, params));
  LINE(&b, "params of model = params per GPU * mp_size: ", "%s", params_str(s, sizeof s, params * mp));
  LINE(&b, "fwd MACs per GPU: ", "%s", zt_fp_number(s, sizeof s, macs, "MACs"));
  LINE(&b, "fwd flops per GPU: ", "%s", zt_fp_number(s, sizeof s, flops, ""));
  LINE(&b, "fwd flops of model = fwd flops per GPU * mp_size: ", "%s", zt_fp_number(s, sizeof s, flops * mp, ""));
  double fwd = r->fwd_latency > 0 ? r->fwd_latency : total_dur;
  LINE(&b, "fwd latency: ", "%s", zt_fp_number(s, sizeof s, fwd, "s"));
  LINE(&b, "fwd FLOPS per GPU = fwd flops per GPU / fwd latency: ", "%s",
       zt_fp_number(s, sizeof s, fwd > 0 ? flops / fwd : 0, "FLOPS"));
  if (r->bwd_latency > 0) {
    const double bf = 2 + p->cfg.recompute_fwd_factor, bwd = r->bwd_latency, step = r->step_latency;
    char label[128];
    LINE(&b, "bwd latency: ", "%s", zt_fp_number(s, sizeof s, bwd, "s"));
    snprintf(label, sizeof label, "bwd FLOPS per GPU = %g * fwd flops per GPU / bwd latency: ", bf);
    LINE(&b, label, "%s", zt_fp_number(s, sizeof s, bf * flops / bwd, "FLOPS"));
    snprintf(label, sizeof label, "fwd+bwd FLOPS per GPU = %g * fwd flops per GPU / (fwd+bwd latency): ", bf + 1);
    LINE(&b, label, "%s", zt_fp_number(s, sizeof s, (bf + 1) * flops / (fwd + bwd), "FLOPS"));
    LINE(&b, "step latency: ", "%s", zt_fp_number(s, sizeof s, step, "s"));
    const double iter = fwd + bwd + step;
    LINE(&b, "iter latency: ", "%s", zt_fp_number(s, sizeof s, iter, "s"));
    snprintf(label, sizeof label, "FLOPS per GPU = %g * fwd flops per GPU / iter latency: ", bf + 1);
    LINE(&b, label, "%s", zt_fp_number(s, sizeof s, (bf + 1) * flops / iter, "FLOPS"));
    LINE(&b, "samples/second: ", "%s", pyfloat_str(s, sizeof s, (double)r->micro_batch * r->world_size / iter));
  }
  sb_printf(&b, "\n----------------------------- Aggregated Profile per GPU -----------------------------\n");
  aggregated(p, &b);
  if (p->cfg.detailed) {
    sb_printf(&b, "\n------------------------------ Detailed Profile per GPU ------------------------------\n");
    sb_printf(&b, "Each module profile is listed after its name in the following order: \n"
                  "params, percentage of total params, MACs, percentage of total MACs, fwd latency, percentage of "
                  "total fwd latency, fwd FLOPS\n");
    sb_printf(&b, "\nNote: 1. A module can have torch.nn.module or torch.nn.functional to compute logits (e.g. "
                  "CrossEntropyLoss). They are not counted as submodules, thus not to be printed out. However they "
                  "make up the difference between a parent's MACs (or latency) and the sum of its submodules'.\n"
                  "2. Number of floating-point operations is a theoretical estimation, thus FLOPS computed using "
                  "that could be larger than the maximum system throughput.\n"
                  "3. The fwd latency listed in the top module's profile is directly captured at the module forward "
                  "function in PyTorch, thus it's less than the fwd latency shown above which is captured in "
                  "DeepSpeed.\n\n");
    char *tree = module_repr(p, 0, params, macs, total_dur);
    sb_printf(&b, "%s\n", tree);
    free(tree);
  }
  sb_printf(&b, "------------------------------------------------------------------------------\n");
  return b.s;
}

static void make_parent_dirs(const char *path) {
  char d[512];
  snprintf(d, sizeof d, "%s", path);
  for (char *q = d + 1; *q; q++) {
    if (*q != '/') continue;
    *q = '\0';
    if (mkdir(d, 0777) != 0 && errno != EEXIST)
      zt_fatal("flops_profiler.output_file", "cannot create directory %s for %s: %s", d, path, strerror(errno));
    *q = '/';
  }
}

void zt_flops_profiler_report(const zt_flops_profiler *p, const zt_flops_report_args *r) {
  char *text = zt_flops_profiler_format(p, r);
  if (p->output_file[0]) {
    make_parent_dirs(p->output_file);
    FILE *f = fopen(p->output_file, "w");
    if (!f) zt_fatal("flops_profiler.output_file", "cannot write %s: %s", p->output_file, strerror(errno));
    fputs(text, f);
    if (fclose(f) != 0) zt_fatal("flops_profiler.output_file", "cannot write %s: %s", p->output_file, strerror(errno));
  } else {
    zt_log("%s", text);
  }
  free(text);
}
