/* DeepSpeed's ZeRO memory estimators (see estimate.h). The arithmetic follows Python's types step by step:
 * products of ints stay exact integers, `x / y` is a correctly rounded double division, `* abf` and
 * `* (1 / nodes)` turn the product into a double, int() truncates, and max(int, float) returns the first
 * argument unless the second is larger. */
#include "runtime/zero/estimate.h"

static int64_t py_int(double x) { return (int64_t)x; } /* int(): truncation toward zero */

zt_zero_mem zt_zero2_mem_needs(int64_t P, int gpus_per_node, int nodes, int cpu_offload, double abf) {
  int64_t G = (int64_t)nodes * gpus_per_node;
  zt_zero_mem m = {0, 0, 0};
  if (cpu_offload) {
    int64_t k = 4 * G > 16 ? 4 * G : 16; /* max(4 * total_gpus, 16) */
    m.gpu_bytes = 2 * P;
    m.cpu_bytes = py_int((double)(P * k) * abf);
  } else {
    m.gpu_bytes = 2 * P + py_int((double)(18 * P) / (double)G);
    m.cpu_bytes = py_int((double)(P * 4 * gpus_per_node) * abf);
  }
  return m;
}

/* total_params * max(4 * gpus_per_node, c * gpus_factor) * abf */
static double cpu_max_term(int64_t P, int gpus_per_node, double c_times_f, double abf) {
  int64_t a = 4LL * gpus_per_node;
  if (c_times_f > (double)a) return ((double)P * c_times_f) * abf;
  return (double)(P * a) * abf;
}

zt_zero_mem zt_zero3_mem_needs(int64_t P, int64_t L, int gpus_per_node, int nodes, int cpu_offload,
                               int cpu_offload_params, int zero_init, double abf) {
  int64_t G = (int64_t)nodes * gpus_per_node;
  double f = 1.0 / (double)nodes;
  int64_t llm = 4 * L;
  zt_zero_mem m = {0, 0, llm};
  double cpu;
  if (cpu_offload) {
    if (cpu_offload_params) {
      m.gpu_bytes = llm;
      cpu = zero_init ? ((double)(P * 18) * f) * abf : cpu_max_term(P, gpus_per_node, 18 * f, abf);
    } else {
      m.gpu_bytes = llm + py_int((double)(2 * P) / (double)G);
      cpu = zero_init ? ((double)(P * 16) * f) * abf : cpu_max_term(P, gpus_per_node, 16 * f, abf);
    }
  } else {
    m.gpu_bytes = llm + py_int((double)(18 * P) / (double)G);
    cpu = zero_init ? (double)(L * 4 * gpus_per_node) * abf : (double)(P * 4 * gpus_per_node) * abf;
  }
  m.cpu_bytes = py_int(cpu);
  return m;
}

static void print_header(FILE *f, int64_t P, int gpus_per_node, int nodes) {
  fprintf(f, "Estimated memory needed for params, optim states and gradients for a:\n");
  fprintf(f, "HW: Setup with %d %s, %d %s per node.\n", nodes, nodes > 1 ? "nodes" : "node", gpus_per_node,
          gpus_per_node > 1 ? "GPUs" : "GPU");
  fprintf(f, "SW: Model with %lldM total params", (long long)py_int((double)P / 1e6));
}

static void print_row(FILE *f, const zt_zero_mem *m, const char *options) {
  fprintf(f, " %7.2fGB | %6.2fGB | %s\n", (double)m->cpu_bytes / 1073741824.0, (double)m->gpu_bytes / 1073741824.0,
          options);
}

void zt_zero2_print_table(FILE *f, int64_t P, int gpus_per_node, int nodes, double abf, int enum_names) {
  print_header(f, P, gpus_per_node, nodes);
  fprintf(f, ".\n  per CPU  |  per GPU |   Options\n");
  const char *cpu = enum_names ? "OffloadDeviceEnum.cpu" : "cpu ";
  for (int off = 1; off >= 0; off--) {
    zt_zero_mem m = zt_zero2_mem_needs(P, gpus_per_node, nodes, off, abf);
    char opt[96];
    snprintf(opt, sizeof opt, "offload_optimizer=%s", off ? cpu : "none");
    print_row(f, &m, opt);
  }
}

void zt_zero3_print_table(FILE *f, int64_t P, int64_t L, int gpus_per_node, int nodes, double abf, int enum_names) {
  print_header(f, P, gpus_per_node, nodes);
  fprintf(f, ", %lldM largest layer params.\n  per CPU  |  per GPU |   Options\n", (long long)py_int((double)L / 1e6));
  const char *cpu = enum_names ? "OffloadDeviceEnum.cpu" : "cpu ";
  for (int off = 1; off >= 0; off--)
    for (int offp = 1; offp >= 0; offp--) {
      if (!off && offp) continue;
      for (int zi = 1; zi >= 0; zi--) {
        zt_zero_mem m = zt_zero3_mem_needs(P, L, gpus_per_node, nodes, off, offp, zi, abf);
        char opt[160];
        snprintf(opt, sizeof opt, "offload_param=%s, offload_optimizer=%s, zero_init=%d", offp ? cpu : "none",
                 off ? cpu : "none", zi);
        print_row(f, &m, opt);
      }
    }
}

int64_t zt_zero_pad_vocab(int64_t vocab, int64_t divisible_by, int64_t tp_size) {
  int64_t mult = divisible_by * tp_size;
  return (vocab + mult - 1) / mult * mult;
}
