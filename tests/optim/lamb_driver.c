/* Test driver for the Lamb optimizer (runtime/optim/optimizer.c, ZT_OPT_LAMB): reads a case written by
 * test_lamb.py, builds a parameter table (one 1-D tensor per entry, with its no_weight_decay flag),
 * runs the steps and prints, after each step, "coeffs c0 c1 ..." and "params p..." (then the final
 * "m ..." and "v ..."), with %.9g. Input (whitespace-separated text):
 *   beta1 beta2 eps weight_decay max_coeff min_coeff bias_correction eps_inside_sqrt lamb_legacy
 *   steps ntensors
 *   ntensors x (numel no_weight_decay)
 *   initial parameters (all tensors, in order)
 *   steps x (lr grad_scale gradients...) */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/base/error.h"
#include "runtime/optim/optimizer.h"

static double rd(FILE *f, const char *what) {
  double x;
  zt_check(fscanf(f, "%lf", &x) == 1, "lamb_driver", "cannot read %s", what);
  return x;
}

static void print_flat(const char *tag, const zt_param_table *t, const float *x) {
  printf("%s", tag);
  for (int i = 0; i < t->count; i++)
    for (size_t j = 0; j < t->params[i].numel; j++) printf(" %.9g", x[t->params[i].offset + j]);
  printf("\n");
}

int main(int argc, char **argv) {
  zt_check(argc == 2, "lamb_driver", "usage: lamb_driver <case file>");
  FILE *f = fopen(argv[1], "r");
  zt_check(f != NULL, "lamb_driver", "cannot open %s", argv[1]);
  zt_opt_config c;
  zt_opt_config_lamb_defaults(&c);
  c.beta1 = (float)rd(f, "beta1");
  c.beta2 = (float)rd(f, "beta2");
  c.eps = (float)rd(f, "eps");
  c.weight_decay = (float)rd(f, "weight_decay");
  c.max_coeff = (float)rd(f, "max_coeff");
  c.min_coeff = (float)rd(f, "min_coeff");
  c.bias_correction = (int)rd(f, "bias_correction");
  c.eps_inside_sqrt = (int)rd(f, "eps_inside_sqrt");
  c.lamb_legacy = (int)rd(f, "lamb_legacy");
  int steps = (int)rd(f, "steps"), nt = (int)rd(f, "ntensors");
  zt_param_table t;
  zt_param_table_init(&t);
  for (int i = 0; i < nt; i++) {
    char name[32];
    snprintf(name, sizeof(name), "t%d", i);
    int64_t shape[1] = {(int64_t)rd(f, "numel")};
    int nwd = (int)rd(f, "no_weight_decay");
    zt_param_table_add(&t, name, 1, shape, ZT_INIT_ZEROS, 0.0f, nwd, -1);
  }
  float *p = zt_calloc(t.numel, sizeof(float), "params");
  float *g = zt_calloc(t.numel, sizeof(float), "grads");
  float *state = zt_calloc(2 * t.numel, sizeof(float), "lamb state");
  float *coeffs = zt_calloc((size_t)nt, sizeof(float), "coeffs");
  for (int i = 0; i < nt; i++)
    for (size_t j = 0; j < t.params[i].numel; j++) p[t.params[i].offset + j] = (float)rd(f, "param");
  zt_optimizer o;
  zt_optimizer_init(&o, &c, &t, state);
  o.lamb_coeffs = coeffs;
  for (int s = 0; s < steps; s++) {
    double lr = rd(f, "lr");
    float gs = (float)rd(f, "grad_scale");
    for (int i = 0; i < nt; i++)
      for (size_t j = 0; j < t.params[i].numel; j++) g[t.params[i].offset + j] = (float)rd(f, "grad");
    zt_optimizer_step(&o, p, g, lr, gs);
    for (size_t j = 0; j < t.numel; j++) zt_check(g[j] == 0.0f, "lamb_driver", "gradient %zu not zeroed", j);
    printf("coeffs");
    for (int i = 0; i < nt; i++) printf(" %.9g", coeffs[i]);
    printf("\n");
    print_flat("params", &t, p);
  }
  print_flat("m", &t, o.m);
  print_flat("v", &t, o.v);
  fclose(f);
  free(p);
  free(g);
  free(state);
  free(coeffs);
  zt_param_table_free(&t);
  return 0;
}
