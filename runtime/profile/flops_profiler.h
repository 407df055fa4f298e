/* DeepSpeed's flops profiler (ds_config "flops_profiler"), model-agnostic: a module tree that a model builds
 * (models/gpt/gpt_flops.c builds Megatron-DeepSpeed's GPTModel) with forward MACs and flops derived analytically
 * with the counting rules of DeepSpeed's patched torch functions (helpers below), parameters counted from the
 * parameter table, forward latencies recorded into latency slots by the model's calls while it is attached
 * (zt_model_profile_attach), and the report (summary, aggregated profile per depth, detailed module tree) in
 * DeepSpeed's text layout. docs/flops_profiler.md describes the counting rules and the relation to Megatron's
 * TFLOPs formula. */
#ifndef ZT_FLOPS_PROFILER_H
#define ZT_FLOPS_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/tensor/param_table.h"

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
  double *times;        /* nslots seconds, the model's latency slots */
  int nslots;
  char **excluded;      /* parameter-name prefixes not on this GPU (zt_fp_exclude) */
  int nexcluded;
  char output_file[512];
} zt_flops_profiler;

/* An empty tree with nslots latency slots (the model's layout of them). */
zt_flops_profiler *zt_flops_profiler_create(const zt_flops_profiler_config *cfg, int nslots);
void zt_flops_profiler_free(zt_flops_profiler *p);
/* Building the tree, in pre-order (children after their parent): a module with its own MACs and flops (those of
 * the functions its forward calls directly) and its latency slot (-1: none; DeepSpeed then sums the children);
 * returns its index. */
int zt_fp_add(zt_flops_profiler *p, int parent, const char *name, const char *cls, int slot, double macs,
              double flops);
/* F.layer_norm with affine weights over N rows of C: 5 flops per element; extra "(C,), eps=..., ...". */
int zt_fp_add_layernorm(zt_flops_profiler *p, int parent, const char *name, int slot, double N, int C, double eps);
/* Megatron-DeepSpeed's RMSNorm (megatron/model/rmsnorm.py: x * torch.rsqrt(x.pow(2).mean(-1) + eps) * weight, all
 * unpatched operators): a module with 0 flops. */
int zt_fp_add_rmsnorm(zt_flops_profiler *p, int parent, const char *name, int slot);
/* A linear layer's matmul over N rows: N*in*out MACs, 2x flops (the bias add is not counted, as DeepSpeed). */
int zt_fp_add_linear(zt_flops_profiler *p, int parent, const char *name, const char *cls, int slot, double N, int in,
                     int out);
/* The module's extra_repr. */
void zt_fp_set_extra(zt_flops_profiler *p, int module, const char *extra);
/* The module's parameter-name prefix when it differs from its place in the tree (DeepSpeed's local expert i is a
 * global expert of the checkpoint's names); its descendants' paths follow. */
void zt_fp_set_path(zt_flops_profiler *p, int module, const char *path);
/* Parameters under this name prefix are not on this GPU in the layout the report describes (the experts of the other
 * expert-parallel ranks): no module counts them. */
void zt_fp_exclude(zt_flops_profiler *p, const char *prefix);
/* After the last module: each subtree's parameters from the table (every tensor once: tied weights once) and its
 * MACs and flops. */
void zt_fp_finish(zt_flops_profiler *p, const zt_param_table *t);
/* Zeroes the latencies (DeepSpeed's start_profile resets them). */
void zt_flops_profiler_reset(zt_flops_profiler *p);

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
