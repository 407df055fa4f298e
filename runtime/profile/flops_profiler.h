/* DeepSpeed's flops profiler (ds_config "flops_profiler") for the GPT model: the module tree of
 * Megatron-DeepSpeed's GPTModel with parameters counted from the parameter table, forward MACs and
 * flops derived analytically with the counting rules of DeepSpeed's patched torch functions, forward
 * latencies recorded by the model's layer calls while the profiler is attached, and the report
 * (summary, aggregated profile per depth, detailed module tree) in DeepSpeed's text layout.
 * docs/flops_profiler.md describes the counting rules and the relation to Megatron's TFLOPs formula. */
#ifndef ZT_FLOPS_PROFILER_H
#define ZT_FLOPS_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

#include "models/gpt/gpt.h"

typedef struct {
  double recompute_fwd_factor;  /* bwd flops = (2 + factor) x fwd flops */
  int module_depth;             /* aggregated profile depths; -1: all */
  int top_modules;              /* >= 1 */
  bool detailed;                /* print the module tree */
  const char *output_file;      /* NULL or "": print (rank 0, zt_log) */
} zt_flops_profiler_config;

/* One module of the tree, in pre-order (children follow their parent in registration order). */
typedef struct {
  char name[48];        /* attribute name in the parent ("" for the root) */
  char path[160];       /* dotted module path = parameter-name prefix ("" for the root) */
  const char *cls;      /* Megatron / PyTorch class name */
  char extra[96];       /* the module's own extra_repr ("" when none) */
  int parent, depth;
  bool is_list;         /* nn.ModuleList: printed without a profile line */
  int slot;             /* forward-latency slot, -1: none (DeepSpeed then sums the children) */
  double own_macs, own_flops;   /* of the functions called directly in this module's forward */
  int64_t params;       /* parameters of the subtree (module.parameters(), tied weights once) */
  double macs, flops;   /* subtree totals for one micro batch */
} zt_fp_module;

typedef struct {
  zt_flops_profiler_config cfg;
  zt_fp_module *mods;
  int count, cap;
  double *times;        /* ZT_GPT_FT_SLOTS + L * ZT_FT_SLOTS seconds */
  int num_layers, nslots;
  char output_file[512];
} zt_flops_profiler;

/* Builds the module tree of m (its configuration, micro batch and parameter table). */
zt_flops_profiler *zt_flops_profiler_new(const zt_gpt *m, const zt_flops_profiler_config *cfg);
void zt_flops_profiler_free(zt_flops_profiler *p);
/* Zeroes the latencies (DeepSpeed's start_profile resets) and makes m's next forward record them. */
void zt_flops_profiler_attach(zt_flops_profiler *p, zt_gpt *m);
/* Stops recording: call right after the profiled forward, before backward (recompute is not timed). */
void zt_flops_profiler_detach(zt_flops_profiler *p, zt_gpt *m);

/* Module lookup by dotted path ("" = GPTModel); -1 when absent. */
int zt_flops_profiler_find(const zt_flops_profiler *p, const char *path);
/* Module latency as DeepSpeed reports it (its own, else the sum of its children's). */
double zt_flops_profiler_duration(const zt_flops_profiler *p, int module);

typedef struct {
  int profile_step;            /* "Profile Summary at step N" */
  int world_size, dp_size, mp_size;
  int micro_batch;             /* batch size per GPU */
  /* seconds measured by the engine over the profiled iteration; fwd_latency <= 0: the model's recorded
   * forward; bwd_latency <= 0: no bwd/step/iter lines (DeepSpeed without wall_clock_breakdown) */
  double fwd_latency, bwd_latency, step_latency;
} zt_flops_report_args;

/* The report text (malloc'd, caller frees). */
char *zt_flops_profiler_format(const zt_flops_profiler *p, const zt_flops_report_args *r);
/* Writes the report to cfg.output_file (creating/overwriting it) or prints it with zt_log. */
void zt_flops_profiler_report(const zt_flops_profiler *p, const zt_flops_report_args *r);

/* DeepSpeed's number formatting (number_to_string and friends, precision 2) into buf. */
const char *zt_fp_number(char *buf, int n, double num, const char *suffix);

#endif
