/* Test driver for train/ds_config.c: loads a ds_config.json, optionally reconciles it with Megatron
 * values and resolves the batch triple, then prints the effective configuration and the typed fields
 * (or dies with the loader's error). Usage:
 *   ds_config_tool FILE [--world N] [--m NAME=VALUE]... [--d NAME=VALUE]... [--quiet]
 *   ds_config_tool FILE [--world N] --megatron PRETRAIN_GPT_ARGS...   (zt_args_parse + zt_ds_megatron_from_args)
 * --m: a Megatron flag given explicitly on the command line; --d: a Megatron default (set, not explicit).
 * NAME: micro_batch_size global_batch_size clip_grad lr adam_beta1 adam_beta2 adam_eps weight_decay
 *       lr_warmup_iters train_iters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "train/ds_config.h"

static zt_ds_megatron_value *field(zt_ds_megatron *m, const char *name) {
  if (!strcmp(name, "micro_batch_size")) return &m->micro_batch_size;
  if (!strcmp(name, "global_batch_size")) return &m->global_batch_size;
  if (!strcmp(name, "clip_grad")) return &m->clip_grad;
  if (!strcmp(name, "lr")) return &m->lr;
  if (!strcmp(name, "adam_beta1")) return &m->adam_beta1;
  if (!strcmp(name, "adam_beta2")) return &m->adam_beta2;
  if (!strcmp(name, "adam_eps")) return &m->adam_eps;
  if (!strcmp(name, "weight_decay")) return &m->weight_decay;
  if (!strcmp(name, "lr_warmup_iters")) return &m->lr_warmup_iters;
  if (!strcmp(name, "train_iters")) return &m->train_iters;
  zt_fatal("ds_config_tool", "unknown Megatron name %s", name);
}

static void pnum(const char *name, zt_ds_num n) {
  printf(" %s=%s%.17g%s", name, n.given ? "" : "(default)", n.value, n.is_auto ? "(auto)" : "");
}

static void print_schema(void) {
  static const char *const tn[] = {"bool", "int", "float", "string", "enum", "object", "list", "any"};
  printf("| key | type | DeepSpeed default | range / choices | zerotron |\n|---|---|---|---|---|\n");
  for (int i = 0; i < zt_ds_schema_count; i++) {
    const zt_ds_key *k = &zt_ds_schema[i];
    char range[128] = "";
    if (k->choices) snprintf(range, sizeof range, "%s", k->choices);
    else if (k->min <= k->max && k->min <= -9e18) range[0] = 0;
    else if (k->min <= k->max && k->max >= 9e18) snprintf(range, sizeof range, ">= %g", k->min);
    else if (k->min <= k->max) snprintf(range, sizeof range, "[%g, %g]", k->min, k->max);
    for (char *p = range; *p; p++)
      if (*p == '|') *p = '/';
    char status[256];
    if (!k->lands) snprintf(status, sizeof status, "SUPPORTED");
    else if (k->flags & ZT_DS_INERT) snprintf(status, sizeof status, "accepted, no effect until %s", k->lands);
    else if (k->flags & ZT_DS_PRESENT) snprintf(status, sizeof status, "refused when present: lands with %s", k->lands);
    else snprintf(status, sizeof status, "non-default refused: lands with %s", k->lands);
    printf("| `%s` | %s%s%s%s | %s | %s | %s%s%s |\n", k->path, tn[k->type], (k->flags & ZT_DS_I64) ? "64" : "",(k->flags & ZT_DS_AUTO) ? ", \"auto\"" : "",
           (k->flags & ZT_DS_NULL) ? ", null" : "", k->def ? k->def : "(required)", range, status,
           k->alias_of ? "; alias of " : "", k->alias_of ? k->alias_of : "");
  }
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--schema")) {
    print_schema();
    return 0;
  }
  if (argc < 2) zt_fatal("ds_config_tool", "usage: ds_config_tool FILE [--world N] [--m NAME=VALUE]... [--d ...]");
  int world = 0, quiet = 0, have_m = 0;
  zt_ds_megatron m;
  memset(&m, 0, sizeof m);
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--world") && i + 1 < argc) {
      world = atoi(argv[++i]);
    } else if ((!strcmp(argv[i], "--m") || !strcmp(argv[i], "--d")) && i + 1 < argc) {
      int expl = argv[i][2] == 'm';
      char *eq = strchr(argv[++i], '=');
      if (!eq) zt_fatal("ds_config_tool", "expected NAME=VALUE, got %s", argv[i]);
      *eq = 0;
      zt_ds_megatron_value *v = field(&m, argv[i]);
      v->set = true;
      v->explicit_ = expl;
      v->value = strtod(eq + 1, NULL);
      have_m = 1;
    } else if (!strcmp(argv[i], "--megatron")) {
      static zt_args a;
      char **av = argv + i; /* av[0] ("--megatron") stands for the program name */
      zt_args_parse(&a, argc - i, av, world ? world : 1);
      zt_ds_megatron_from_args(&m, &a);
      have_m = 1;
      break;
    } else if (!strcmp(argv[i], "--quiet")) {
      quiet = 1;
    } else {
      zt_fatal("ds_config_tool", "unknown argument %s", argv[i]);
    }
  }
  zt_ds_config c;
  zt_ds_config_load(&c, argv[1]);
  if (have_m || world) zt_ds_config_reconcile(&c, &m);
  if (world) zt_ds_config_batch(&c, world);
  if (!quiet) zt_ds_config_print(&c);
  printf("typed:");
  pnum("train_batch_size", c.train_batch_size);
  pnum("train_micro_batch_size_per_gpu", c.train_micro_batch_size_per_gpu);
  pnum("gradient_accumulation_steps", c.gradient_accumulation_steps);
  pnum("gradient_clipping", c.gradient_clipping);
  pnum("lr", c.lr);
  pnum("beta1", c.beta1);
  pnum("beta2", c.beta2);
  pnum("eps", c.eps);
  pnum("weight_decay", c.weight_decay);
  pnum("warmup_min_lr", c.sched.warmup_min_lr);
  pnum("warmup_max_lr", c.sched.warmup_max_lr);
  pnum("warmup_num_steps", c.sched.warmup_num_steps);
  pnum("total_num_steps", c.sched.total_num_steps);
  printf(" optimizer=%s scheduler=%s zero_stage=%d adam_w_mode=%d\n", c.has_optimizer ? c.optimizer_type : "-",
         c.has_scheduler ? c.scheduler_type : "-", c.zero_stage, (int)c.adam_w_mode);
  zt_ds_config_free(&c);
  return 0;
}
