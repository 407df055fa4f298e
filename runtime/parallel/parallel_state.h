/* Megatron's process-group layout ("mpu", megatron/core/parallel_state.py) and DeepSpeed's expert groups
 * (deepspeed/utils/groups.py, the "with an mpu" path) as pure functions of the sizes: no MPI here.
 * Rank order: tensor-parallel fastest, then data-parallel, then pipeline:
 *   rank = pp_rank * (tp * dp) + dp_rank * tp + tp_rank.
 * The communicator layer (runtime/comm/) creates one communicator per group from zt_layout_all_groups,
 * in the order given there, identically on every rank. */
#ifndef ZT_PARALLEL_STATE_H
#define ZT_PARALLEL_STATE_H

#include <stdint.h>

typedef struct {
  int world, tp, pp, dp, ep, vpp; /* vpp: virtual pipeline chunks per stage (1 = no interleaving) */
  /* DeepSpeed's use_data_before_expert_parallelism (the "D + E" topology): the expert groups are cut from each data
   * group listed in the order ds, ds + dp/ep, ds + 2 dp/ep, ... (ds = 0 .. dp/ep - 1), so an expert group holds every
   * (dp/ep)-th data-parallel rank and an expert-data group consecutive ones. 0 (zt_layout_init's): "E + D". */
  int ep_data_first;
} zt_layout;

/* Validates the sizes and derives dp = world / (tp * pp). As Megatron's arguments.py does, tp is clipped
 * to world and pp to world / tp first. Dies (zt_fatal, "error: inconsistent arguments: ...") naming the
 * flags and numbers when: a size is < 1; world % (tp * pp) != 0; dp % ep != 0; vpp > 1 with pp <= 2
 * (Megatron's interleaved-schedule assert); num_layers % (pp * vpp) != 0. num_layers <= 0 skips the layer
 * check (tools that do not know the model). */
void zt_layout_init(zt_layout *l, int world, int tp, int pp, int ep, int vpp, int num_layers);

typedef struct {
  int tp, dp, pp;
} zt_coords;

zt_coords zt_layout_coords(const zt_layout *l, int rank);
int zt_layout_rank(const zt_layout *l, zt_coords c);

typedef enum {
  ZT_GROUP_TENSOR,             /* W/tp groups [k*tp, k*tp + tp) */
  ZT_GROUP_DATA,               /* per stage i, per tp index j: range(i*W/pp + j, (i+1)*W/pp, tp) */
  ZT_GROUP_PIPELINE,           /* W/pp groups range(i, W, W/pp) */
  ZT_GROUP_MODEL,              /* dp groups: the k-th member of every data group (same dp rank) */
  ZT_GROUP_EMBEDDING,          /* per pipeline group: [first, last] (just [first] when pp == 1) */
  ZT_GROUP_POSITION_EMBEDDING, /* per pipeline group: [first] */
  ZT_GROUP_EXPERT,             /* each data group cut into consecutive chunks of ep (all-to-all) */
  ZT_GROUP_EXPERT_DATA,        /* the chunks of each data group zipped (expert gradient all-reduce) */
  ZT_GROUP_KIND_COUNT
} zt_group_kind;

/* "tensor", "data", ... (for logs and the tests). */
const char *zt_group_kind_name(zt_group_kind kind);

/* Members (world ranks, ascending) of the group of `kind` that contains `rank`, written to `members`
 * (room for l->world ints); returns the count. Returns 0 when the rank belongs to no group of that kind,
 * which happens only for the embedding groups (middle pipeline stages) and the position-embedding groups
 * (every stage but the first), as in Megatron where those ranks hold no such group. */
int zt_layout_group(const zt_layout *l, zt_group_kind kind, int rank, int *members);

/* All groups of `kind` in Megatron's / DeepSpeed's creation order, group g at members[g * size ...]
 * (room for l->world ints always suffices: the groups of a kind are disjoint). Returns the number of
 * groups; *group_size gets their common size. */
int zt_layout_all_groups(const zt_layout *l, zt_group_kind kind, int *members, int *group_size);

/* Layers (0-based, global) of virtual chunk `chunk` on pipeline rank `pp_rank`: with n = num_layers /
 * (pp * vpp), chunk c of stage s holds layers [(c * pp + s) * n, (c * pp + s + 1) * n). */
void zt_layout_stage_layers(const zt_layout *l, int num_layers, int pp_rank, int chunk, int *first, int *count);

/* DeepSpeed's PipelineModule partition_method 'type:transformer' (Megatron-DeepSpeed's GPTModelPipe): the stages of
 * a list of front + num_layers + back items whose num_layers middle ones are transformer layers (weight 1, the others
 * 0), as deepspeed.runtime.utils.partition_balanced cuts it (a dynamic program over the prefix sums keeping, for the
 * first i items in j stages, the cut of least max - min stage weight, the last such cut on ties; at most as many
 * items as stages: partition_uniform). Writes first[0..pp] (first[s]: the first transformer layer of stage s, 0-based,
 * first[pp] = num_layers: stage s holds layers [first[s], first[s+1])). */
void zt_layout_ds_partition(int num_layers, int pp, int front, int back, int *first);

/* Megatron's per-rank seed: seed + 100 * pp_rank (+ 10 * dp_rank with --data-parallel-random-init).
 * Dies when seed is 0 (Megatron: "Seed (0) should be a positive integer."). */
uint64_t zt_layout_seed(const zt_layout *l, uint64_t seed, int rank, int data_parallel_random_init);
/* The tensor-parallel RNG tracker's seed ('model-parallel-rng'): zt_layout_seed(...) + 2718 + tp_rank. */
uint64_t zt_layout_tp_seed(const zt_layout *l, uint64_t seed, int rank, int data_parallel_random_init);

/* DeepSpeed's model-parallel rank in the pipeline grid (names mp_rank_XX checkpoint files):
 * pp_rank * tp + tp_rank. */
int zt_layout_mp_rank(const zt_layout *l, int rank);

#endif
