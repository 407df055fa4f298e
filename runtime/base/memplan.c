/* Memory plan: reserve, check, allocate once, carve. */
#include "runtime/base/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/base/error.h"

static const char *kind_names[ZT_MEM_KINDS] = {"params", "grads", "optimizer state", "activations"};

const char *zt_mem_kind_name(zt_mem_kind k) { return kind_names[k]; }

void *zt_memplan_bytes(zt_memplan *p, zt_mem_kind k, size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (!p->allocated) { p->bytes[k] += bytes; return NULL; }
  zt_check(p->used[k] + bytes <= p->bytes[k], "memory plan",
           "%s region overflows its plan (%zu + %zu > %zu bytes)", kind_names[k], p->used[k], bytes, p->bytes[k]);
  void *r = p->base[k] + p->used[k];
  p->used[k] += bytes;
  return r;
}

float *zt_memplan_floats(zt_memplan *p, zt_mem_kind k, size_t count) {
  return zt_memplan_bytes(p, k, count * sizeof(float));
}

size_t zt_memplan_cursor(const zt_memplan *p, zt_mem_kind k) { return p->allocated ? p->used[k] : p->bytes[k]; }

void zt_memplan_set_cursor(zt_memplan *p, zt_mem_kind k, size_t cursor) {
  if (p->allocated) p->used[k] = cursor;
  else p->bytes[k] = cursor;
}

void zt_memplan_rewind(zt_memplan *p) { memset(p->used, 0, sizeof(p->used)); }

size_t zt_memplan_total(const zt_memplan *p) {
  size_t t = 0;
  for (int k = 0; k < ZT_MEM_KINDS; k++) t += p->bytes[k];
  return t;
}

void zt_memplan_print(const zt_memplan *p) {
  zt_log("> memory plan (MiB): params %.1f | grads %.1f | optimizer state %.1f | activations %.1f | total %.1f\n",
         p->bytes[ZT_MEM_PARAMS] / 1048576.0, p->bytes[ZT_MEM_GRADS] / 1048576.0,
         p->bytes[ZT_MEM_OPTIM] / 1048576.0, p->bytes[ZT_MEM_ACTIVATIONS] / 1048576.0,
         zt_memplan_total(p) / 1048576.0);
}

size_t zt_host_available_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024;
}

void zt_memplan_check_fits(const zt_memplan *p, size_t limit, int recompute) {
  if (limit == 0) limit = zt_host_available_bytes();
  if (limit == 0) return;
  size_t total = zt_memplan_total(p);
  const size_t states = p->bytes[ZT_MEM_PARAMS] + p->bytes[ZT_MEM_GRADS] + p->bytes[ZT_MEM_OPTIM];
  const char *remedy = states > limit ? "the model states alone exceed it: shard them with "
                                        "--tensor-model-parallel-size, --pipeline-model-parallel-size or ZeRO "
                                        "(zero_optimization.stage, with offload_optimizer to NVMe)"
                       : recompute ? "reduce --micro-batch-size or --seq-length"
                                   : "reduce --micro-batch-size or --seq-length, or use --checkpoint-activations";
  zt_check(total <= limit, "memory plan does not fit",
           "needs %.1f MiB of host memory (params %.1f, grads %.1f, optimizer state %.1f, activations %.1f) but only "
           "%.1f MiB are available; %s", total / 1048576.0, p->bytes[ZT_MEM_PARAMS] / 1048576.0,
           p->bytes[ZT_MEM_GRADS] / 1048576.0, p->bytes[ZT_MEM_OPTIM] / 1048576.0,
           p->bytes[ZT_MEM_ACTIVATIONS] / 1048576.0, limit / 1048576.0, remedy);
}

/* Anonymous mappings: zero pages, page aligned, and resident only once touched (a region that is never
 * written, such as the parameters ZeRO-3 keeps on other ranks, costs no memory). */
void zt_memplan_allocate(zt_memplan *p) {
  for (int k = 0; k < ZT_MEM_KINDS; k++) {
    p->base[k] = NULL;
    if (!p->bytes[k]) continue;
    if (p->alloc) {
      p->base[k] = p->alloc(p->bytes[k], kind_names[k]);
      continue;
    }
    void *m = mmap(NULL, p->bytes[k], PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
      zt_fatal("out of memory", "mapping %zu bytes (%.1f MiB) for %s", p->bytes[k], p->bytes[k] / 1048576.0,
               kind_names[k]);
    p->base[k] = m;
  }
  p->allocated = 1;
  zt_memplan_rewind(p);
}

void zt_memplan_free(zt_memplan *p) {
  for (int k = 0; k < ZT_MEM_KINDS; k++) {
    if (!p->base[k]) continue;
    if (p->release) p->release(p->base[k], p->bytes[k]);
    else munmap(p->base[k], p->bytes[k]);
  }
  memset(p, 0, sizeof(*p));
}

long zt_proc_status_kib(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  const size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = atol(line + n + 1);
      break;
    }
  if (f) fclose(f);
  return v;
}
