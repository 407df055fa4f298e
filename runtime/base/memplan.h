/* The memory plan: parameters, gradients, optimizer state and activations each live in one
 * allocation sized before the first step. Models reserve regions (two passes: size, then carve),
 * the plan prints MiB per kind and refuses, with the numbers, a plan larger than available memory.
 * The allocation comes from host mappings, or from a backend's allocator (device memory) when set. */
#ifndef ZT_MEMPLAN_H
#define ZT_MEMPLAN_H

#include <stddef.h>

typedef enum {
  ZT_MEM_PARAMS = 0,
  ZT_MEM_GRADS,
  ZT_MEM_OPTIM,
  ZT_MEM_ACTIVATIONS,
  ZT_MEM_KINDS
} zt_mem_kind;

typedef struct {
  size_t bytes[ZT_MEM_KINDS];
  char *base[ZT_MEM_KINDS];
  size_t used[ZT_MEM_KINDS];
  int allocated;
  /* where the regions come from: NULL = zeroed host mappings; else an allocator returning zeroed memory */
  void *(*alloc)(size_t bytes, const char *what);
  void (*release)(void *p, size_t bytes);
} zt_memplan;

const char *zt_mem_kind_name(zt_mem_kind k);
/* Sizing pass: adds a region (64-byte aligned) of `count` floats to a kind; returns NULL before
 * allocation. Carving pass (after zt_memplan_allocate): returns the region's address. The two passes
 * must make the same calls in the same order; the carving pass checks that nothing overflows. */
float *zt_memplan_floats(zt_memplan *p, zt_mem_kind k, size_t count);
/* The same for `bytes` bytes (64-byte aligned). */
void *zt_memplan_bytes(zt_memplan *p, zt_mem_kind k, size_t bytes);
/* The current end of a kind's reservations (either pass) and moving it: regions reserved again from
 * an earlier cursor overlap (full recompute shares one block's activations among all layers). */
size_t zt_memplan_cursor(const zt_memplan *p, zt_mem_kind k);
void zt_memplan_set_cursor(zt_memplan *p, zt_mem_kind k, size_t cursor);
/* Resets the carving cursors so the same reservation sequence can run again. */
void zt_memplan_rewind(zt_memplan *p);
size_t zt_memplan_total(const zt_memplan *p);
/* Prints the plan ("memory plan (MiB): params X | grads Y | ...") on rank 0. */
void zt_memplan_print(const zt_memplan *p);
/* Dies naming each kind's MiB when the total exceeds limit_bytes (0: MemAvailable of the host), with a remedy that
 * applies: sharding when the model states alone exceed it, else smaller batches or sequences, and recompute when the
 * run has none (recompute: it is on already). */
void zt_memplan_check_fits(const zt_memplan *p, size_t limit_bytes, int recompute);
/* One zeroed allocation per kind (host: page-aligned mappings whose untouched pages take no memory); then rewinds
 * for the carving pass. */
void zt_memplan_allocate(zt_memplan *p);
void zt_memplan_free(zt_memplan *p);
/* Host memory available to us (MemAvailable from /proc/meminfo), in bytes; 0 if unknown. */
size_t zt_host_available_bytes(void);

/* A field of this process's /proc/self/status in KiB ("VmRSS", "VmHWM", "VmSize", "RssAnon"); -1 when absent. */
long zt_proc_status_kib(const char *field);

#endif
