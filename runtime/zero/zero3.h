/* ZeRO stage 3 over the data-parallel group (DeepSpeed's stage3.py semantics on the model's flat buffers):
 * on top of stage 2's contiguous partitions (runtime/zero/zero.h: rank r owns [r*P, (r+1)*P) of the padded
 * flat buffer and its optimizer state), a rank keeps only its partition of the *parameters* resident, plus the
 * persistent parameters (those below param_persistence_threshold elements, up to model_persistence_threshold in
 * all), which stay whole on every rank as DeepSpeed keeps them.
 *
 * The model is cut into fetch units (contiguous ranges of the flat buffer: the embedding, each layer, the
 * head). Before a unit's forward or backward the model asks for it (zt_zero3_fetch): the owners' pieces are
 * all-gathered into the flat buffer; afterwards it gives it back (zt_zero3_release) and the non-resident
 * elements are released to the operating system (madvise), unless the recorded trace of the previous iteration
 * says the unit is used again within max_reuse_distance elements of other fetches and max_live_parameters
 * allows it. A fetch also prefetches the units the trace says come next, up to prefetch_bucket_size elements in
 * one collective. After the optimizer step every gathered copy is stale: all units are released and the
 * persistent parameters re-gathered. With offload_param nvme the rank's own pieces of the units beyond
 * max_in_cpu elements live in swap files and are read in when their unit is fetched.
 *
 * Gradients: when a unit's gradients for the micro batch are complete (zt_zero3_grad_ready) they join the
 * pending reduce bucket; at reduce_bucket_size elements (or the end of the backward, zt_zero3_flush_grads)
 * each owner's piece of the bucket is summed into the owner (zt_reduce_sum_f32) and added to its fp32 partition
 * accumulator `acc`, and the bucket's gradients are cleared and given back to the system. As DeepSpeed does,
 * this happens every micro batch, so no gradient outside a bucket in flight is resident; `acc` is the
 * partition's gradient for the norm, the clipping and the step.
 *
 * Parameters arrive by one broadcast per owner's piece of each unit, straight into the flat buffer; gradients
 * leave by one reduce per piece: no staging buffers, and each element crosses the network once per rank as
 * in an all-gather / reduce-scatter. The buffers are the model's on its backend (runtime/zero/zero.h); on a
 * GPU the released parameters keep their device memory (the device-memory pool of stage 3 is the work of the
 * offload issue: docs/zero.md), and offload_param to NVMe is host-only. docs/zero.md. */
#ifndef ZT_ZERO3_H
#define ZT_ZERO3_H

#include <stddef.h>

#include "runtime/aio/aio.h"
#include "runtime/base/dtype.h"
#include "runtime/tensor/param_table.h"
#include "runtime/zero/param_swap.h"
#include "runtime/zero/zero.h"

typedef struct {
  size_t prefetch_bucket;      /* elements fetched together ahead of use (0: only the unit asked for) */
  size_t max_live;             /* elements of gathered units kept at most (a unit in use always is) */
  size_t max_reuse;            /* keep a released unit used again within this many fetched elements */
  size_t persistence;          /* parameters with fewer elements stay whole on every rank */
  size_t model_persistence;    /* at most this many persistent elements in all */
  size_t reduce_bucket;        /* gradient elements reduce-scattered together */
  zt_dtype grad_round;         /* gradients stored in this half type (rounded per micro batch), or fp32 */
  int fp16_check;              /* count fp32 gradients beyond the fp16 range as an overflow */
  zt_dtype comm_dtype;         /* the reduce-scatter's data type */
  float pre_scale, post_scale; /* DeepSpeed's averaging around the sum */
  int poison;                  /* released parameters become NaN instead of going back to the system (tests) */
  /* offload_param nvme (runtime/zero/param_swap.h): NULL path = parameters stay in memory */
  const char *param_nvme_path;
  const zt_aio_config *aio;
  size_t max_in_cpu;           /* partition elements kept in memory (the first units'), the rest on NVMe */
  int buffer_count, pin_memory, rank;
  size_t buffer_size;
} zt_zero3_config;

typedef struct {
  const zt_zero *z;            /* the partition layout (lo, hi, part, the data-parallel group) */
  zt_zero3_config cfg;
  void *params;                /* the flat parameters, of z->param_dt, in z->be's memory */
  float *grads;
  size_t numel;
  int nunits;
  size_t *ua, *ub;             /* unit u is [ua[u], ub[u]) */
  unsigned char *live, *in_use;
  size_t *ox, *olen;           /* this rank's piece of unit u: [ox[u], ox[u] + olen[u]) */
  zt_param_swapper *ps;        /* offload_param nvme, or NULL */
  unsigned char *in;           /* a swapped unit's piece is in memory */
  size_t live_elems;
  /* persistent parameters: sorted disjoint ranges */
  size_t *pa, *pb;
  int npersist;
  size_t persist_elems;
  /* the fetch trace of one training iteration (recorded during the first, used from the second on) */
  int *trace;
  int trace_n, trace_cap, pos, recording, tracing, trace_ok;
  /* gradients */
  float *acc;                  /* [hi - lo] reduced gradients of this rank's partition */
  int *pending;
  int npending;
  size_t pending_elems;
  int overflow;                /* a gradient left the half type's range since the last take */
  /* statistics */
  size_t peak_live, gathers, broadcasts, gathered_elems, reduces, reduced_elems;
} zt_zero3;

/* Units: n contiguous ranges [a[u], b[u]) in ascending order covering the parameters; t the parameter table
 * (persistence is decided per parameter). No unit is live afterwards: the caller initializes the parameters
 * (unit by unit, with zt_zero3_discard after each, or all at once followed by zt_zero3_release_all). */
void zt_zero3_init(zt_zero3 *s, const zt_zero *z, const zt_zero3_config *cfg, const zt_param_table *t,
                   void *params, float *grads, int n, const size_t *a, const size_t *b);
void zt_zero3_free(zt_zero3 *s);

/* Training (1): fetches follow and record the trace; evaluation (0): fetch on demand, release at once. */
void zt_zero3_set_training(zt_zero3 *s, int training);
void zt_zero3_fetch(zt_zero3 *s, int unit);
void zt_zero3_release(zt_zero3 *s, int unit);
/* Every unit whole (checkpoint saves), and every unit released (after a step or a load). Collective. */
void zt_zero3_gather_all(zt_zero3 *s);
/* Gives back a unit's non-resident parameters whatever its state (after initializing it unit by unit; a piece
 * offloaded to NVMe is written first). */
void zt_zero3_discard(zt_zero3 *s, int unit);
/* After the whole parameters were written into the flat buffer (a checkpoint load): offloaded pieces are
 * written to NVMe, everything not resident given back, no unit live. */
void zt_zero3_reset(zt_zero3 *s);
/* Brings every offloaded piece of the partition into memory (the optimizer step, the optimizer swapper's
 * initial masters); zt_zero3_partition_out sends them back (written when they changed). */
void zt_zero3_partition_in(zt_zero3 *s);
void zt_zero3_partition_out(zt_zero3 *s, int changed);
void zt_zero3_release_all(zt_zero3 *s);

void zt_zero3_grad_ready(zt_zero3 *s, int unit);
void zt_zero3_flush_grads(zt_zero3 *s);
/* After the last micro batch: flushes the bucket; acc then holds the partition's gradient. Returns (and
 * clears) the overflow flag. */
int zt_zero3_take_grads(zt_zero3 *s);
/* After the optimizer step changed the partitions (or a skipped step): offloaded pieces written back, gathered
 * copies dropped, persistent parameters re-gathered, acc cleared, the iteration's trace closed. */
void zt_zero3_after_step(zt_zero3 *s, int params_changed);

/* Elements resident on this rank between fetches: the partition's own (less what is on NVMe) and the
 * persistent parameters outside it. */
size_t zt_zero3_resident(const zt_zero3 *s);

#endif
