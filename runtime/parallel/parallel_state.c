/* Megatron's process-group layout and DeepSpeed's expert groups as pure functions (see parallel_state.h).
 * The group loops follow parallel_state.py::initialize_model_parallel and groups.py::
 * _get_expert_parallel_ranks, so zt_layout_all_groups lists groups in the order they are created there. */
#include "runtime/parallel/parallel_state.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/base/error.h"

#define ZT_BAD_ARGS "inconsistent arguments"

static void check_positive(int v, const char *flag) {
  if (v < 1) zt_fatal(ZT_BAD_ARGS, "%s %d must be >= 1", flag, v);
}

void zt_layout_init(zt_layout *l, int world, int tp, int pp, int ep, int vpp, int num_layers) {
  check_positive(world, "world size");
  check_positive(tp, "--tensor-model-parallel-size");
  check_positive(pp, "--pipeline-model-parallel-size");
  check_positive(ep, "--moe-expert-parallel-size");
  check_positive(vpp, "virtual pipeline size");
  /* arguments.py: tp = min(tp, world); pp = min(pp, world // tp). */
  if (tp > world) tp = world;
  if (pp > world / tp) pp = world / tp;
  if (world % (tp * pp) != 0)
    zt_fatal(ZT_BAD_ARGS,
             "world size %d is not divisible by --tensor-model-parallel-size %d x --pipeline-model-parallel-size %d"
             " = %d", world, tp, pp, tp * pp);
  int dp = world / (tp * pp);
  if (dp % ep != 0)
    zt_fatal(ZT_BAD_ARGS,
             "data-parallel size %d (world size %d / (--tensor-model-parallel-size %d x "
             "--pipeline-model-parallel-size %d)) is not divisible by --moe-expert-parallel-size %d",
             dp, world, tp, pp, ep);
  if (vpp > 1 && pp <= 2)
    zt_fatal(ZT_BAD_ARGS,
             "--pipeline-model-parallel-size %d must be greater than 2 with the interleaved schedule "
             "(virtual pipeline size %d)", pp, vpp);
  if (num_layers > 0 && num_layers % (pp * vpp) != 0) {
    if (vpp == 1)
      zt_fatal(ZT_BAD_ARGS, "--num-layers %d is not divisible by --pipeline-model-parallel-size %d", num_layers, pp);
    zt_fatal(ZT_BAD_ARGS,
             "--num-layers %d is not divisible by --pipeline-model-parallel-size %d x virtual pipeline size %d = %d",
             num_layers, pp, vpp, pp * vpp);
  }
  l->world = world;
  l->tp = tp;
  l->pp = pp;
  l->dp = dp;
  l->ep = ep;
  l->vpp = vpp;
  l->ep_data_first = 0;
}

/* The expert groups are cut from each data group's ranks in list order: the data-parallel rank at position pos of that
 * list, and the position of data-parallel rank dpr (identities in the E + D topology). */
static int ep_list_dp(const zt_layout *l, int pos) {
  return l->ep_data_first ? pos / l->ep + (pos % l->ep) * (l->dp / l->ep) : pos;
}
static int ep_list_pos(const zt_layout *l, int dpr) {
  const int stride = l->dp / l->ep;
  return l->ep_data_first ? (dpr % stride) * l->ep + dpr / stride : dpr;
}

static void check_rank(const zt_layout *l, int rank) {
  if (rank < 0 || rank >= l->world) zt_fatal("parallel layout", "rank %d is outside world size %d", rank, l->world);
}

zt_coords zt_layout_coords(const zt_layout *l, int rank) {
  check_rank(l, rank);
  zt_coords c;
  c.tp = rank % l->tp;
  c.dp = (rank / l->tp) % l->dp;
  c.pp = rank / (l->tp * l->dp);
  return c;
}

int zt_layout_rank(const zt_layout *l, zt_coords c) {
  if (c.tp < 0 || c.tp >= l->tp || c.dp < 0 || c.dp >= l->dp || c.pp < 0 || c.pp >= l->pp)
    zt_fatal("parallel layout", "coordinates (tp %d, dp %d, pp %d) are outside sizes (tp %d, dp %d, pp %d)", c.tp,
             c.dp, c.pp, l->tp, l->dp, l->pp);
  return (c.pp * l->dp + c.dp) * l->tp + c.tp;
}

const char *zt_group_kind_name(zt_group_kind kind) {
  switch (kind) {
    case ZT_GROUP_TENSOR: return "tensor";
    case ZT_GROUP_DATA: return "data";
    case ZT_GROUP_PIPELINE: return "pipeline";
    case ZT_GROUP_MODEL: return "model";
    case ZT_GROUP_EMBEDDING: return "embedding";
    case ZT_GROUP_POSITION_EMBEDDING: return "position_embedding";
    case ZT_GROUP_EXPERT: return "expert";
    case ZT_GROUP_EXPERT_DATA: return "expert_data";
    default: return "unknown";
  }
}

/* Member k of data group (stage i, tp index j): the creation loop's range(i*W/p + j, (i+1)*W/p, t). */
static int data_member(const zt_layout *l, int i, int j, int k) { return i * (l->world / l->pp) + j + k * l->tp; }

int zt_layout_all_groups(const zt_layout *l, zt_group_kind kind, int *members, int *group_size) {
  const int W = l->world, t = l->tp, p = l->pp, d = l->dp, e = l->ep;
  const int stride = W / p; /* ranks per pipeline stage = number of pipeline groups */
  int n = 0, size = 0, *out = members;
  switch (kind) {
    case ZT_GROUP_TENSOR:
      size = t;
      for (int g = 0; g < W / t; g++, n++)
        for (int k = 0; k < t; k++) *out++ = g * t + k;
      break;
    case ZT_GROUP_DATA:
      size = d;
      for (int i = 0; i < p; i++)
        for (int j = 0; j < t; j++, n++)
          for (int k = 0; k < d; k++) *out++ = data_member(l, i, j, k);
      break;
    case ZT_GROUP_PIPELINE:
      size = p;
      for (int g = 0; g < stride; g++, n++)
        for (int k = 0; k < p; k++) *out++ = g + k * stride;
      break;
    case ZT_GROUP_MODEL: /* for i in range(dp): [dp_group[i] for dp_group in all_data_parallel_group_ranks] */
      size = t * p;
      for (int k = 0; k < d; k++, n++)
        for (int i = 0; i < p; i++)
          for (int j = 0; j < t; j++) *out++ = data_member(l, i, j, k);
      break;
    case ZT_GROUP_EMBEDDING: /* [ranks[0], ranks[-1]] when len(ranks) > 1, else ranks */
      size = p > 1 ? 2 : 1;
      for (int g = 0; g < stride; g++, n++) {
        *out++ = g;
        if (p > 1) *out++ = g + (p - 1) * stride;
      }
      break;
    case ZT_GROUP_POSITION_EMBEDDING:
      size = 1;
      for (int g = 0; g < stride; g++, n++) *out++ = g;
      break;
    case ZT_GROUP_EXPERT: /* for dp_ranks in data groups: dp_ranks[c*ep : (c+1)*ep] */
      size = e;
      for (int i = 0; i < p; i++)
        for (int j = 0; j < t; j++)
          for (int c = 0; c < d / e; c++, n++)
            for (int k = 0; k < e; k++) *out++ = data_member(l, i, j, ep_list_dp(l, c * e + k));
      break;
    case ZT_GROUP_EXPERT_DATA: /* for dp_ranks in data groups: zip(*chunks) */
      size = d / e;
      for (int i = 0; i < p; i++)
        for (int j = 0; j < t; j++)
          for (int k = 0; k < e; k++, n++)
            for (int c = 0; c < d / e; c++) *out++ = data_member(l, i, j, ep_list_dp(l, c * e + k));
      break;
    default:
      zt_fatal("parallel layout", "unknown group kind %d", (int)kind);
  }
  if (group_size) *group_size = size;
  return n;
}

int zt_layout_group(const zt_layout *l, zt_group_kind kind, int rank, int *members) {
  zt_coords c = zt_layout_coords(l, rank);
  const int W = l->world, t = l->tp, p = l->pp, d = l->dp, e = l->ep;
  const int stride = W / p;
  int n = 0;
  switch (kind) {
    case ZT_GROUP_TENSOR:
      for (int k = 0; k < t; k++) members[n++] = rank - c.tp + k;
      break;
    case ZT_GROUP_DATA:
      for (int k = 0; k < d; k++) members[n++] = data_member(l, c.pp, c.tp, k);
      break;
    case ZT_GROUP_PIPELINE:
      for (int k = 0; k < p; k++) members[n++] = rank % stride + k * stride;
      break;
    case ZT_GROUP_MODEL:
      for (int i = 0; i < p; i++)
        for (int j = 0; j < t; j++) members[n++] = data_member(l, i, j, c.dp);
      break;
    case ZT_GROUP_EMBEDDING:
      if (c.pp != 0 && c.pp != p - 1) break;
      members[n++] = rank % stride;
      if (p > 1) members[n++] = rank % stride + (p - 1) * stride;
      break;
    case ZT_GROUP_POSITION_EMBEDDING:
      if (c.pp == 0) members[n++] = rank;
      break;
    case ZT_GROUP_EXPERT: {
      int chunk = ep_list_pos(l, c.dp) / e;
      for (int k = 0; k < e; k++) members[n++] = data_member(l, c.pp, c.tp, ep_list_dp(l, chunk * e + k));
      break;
    }
    case ZT_GROUP_EXPERT_DATA: {
      int k = ep_list_pos(l, c.dp) % e;
      for (int chunk = 0; chunk < d / e; chunk++)
        members[n++] = data_member(l, c.pp, c.tp, ep_list_dp(l, chunk * e + k));
      break;
    }
    default:
      zt_fatal("parallel layout", "unknown group kind %d", (int)kind);
  }
  return n;
}

void zt_layout_stage_layers(const zt_layout *l, int num_layers, int pp_rank, int chunk, int *first, int *count) {
  if (num_layers < 1 || num_layers % (l->pp * l->vpp) != 0)
    zt_fatal(ZT_BAD_ARGS, "--num-layers %d is not divisible by --pipeline-model-parallel-size %d x virtual pipeline "
             "size %d = %d", num_layers, l->pp, l->vpp, l->pp * l->vpp);
  if (pp_rank < 0 || pp_rank >= l->pp || chunk < 0 || chunk >= l->vpp)
    zt_fatal("parallel layout", "pipeline rank %d / virtual chunk %d are outside pipeline size %d / virtual size %d",
             pp_rank, chunk, l->pp, l->vpp);
  int n = num_layers / (l->pp * l->vpp);
  *first = (chunk * l->pp + pp_rank) * n;
  *count = n;
}

void zt_layout_ds_partition(int num_layers, int pp, int front, int back, int *first) {
  const int n = front + num_layers + back, m = pp;
  int *cut = zt_calloc((size_t)m + 1, sizeof(int), "pipeline partition"); /* item boundaries of the stages */
  if (n <= m) { /* partition_uniform: one item a stage, the rest empty */
    for (int s = 0; s <= m; s++) cut[s] = s < n ? s : n;
  } else {
    const size_t W = (size_t)m + 1;
    double *mx = zt_malloc(sizeof(double) * (size_t)(n + 1) * W, "pipeline partition");
    double *mn = zt_malloc(sizeof(double) * (size_t)(n + 1) * W, "pipeline partition");
    double *cost = zt_malloc(sizeof(double) * (size_t)(n + 1) * W, "pipeline partition");
    int *pos = zt_calloc((size_t)(n + 1) * W, sizeof(int), "pipeline partition");
    double *sum = zt_malloc(sizeof(double) * (size_t)(n + 1), "pipeline partition"); /* transformer layers in [0, i) */
    for (size_t k = 0; k < (size_t)(n + 1) * W; k++) mx[k] = mn[k] = cost[k] = INFINITY;
    sum[0] = 0;
    for (int i = 1; i <= n; i++) sum[i] = sum[i - 1] + (i - 1 >= front && i - 1 < front + num_layers);
    mx[0] = 0;
    cost[0] = 0;
    for (int i = 1; i <= n; i++)
      for (int j = 1; j <= (i < m ? i : m); j++)
        for (int k = 0; k < i; k++) { /* the last stage of j holds items [k, i) */
          const double w = sum[i] - sum[k], hi = fmax(mx[k * W + j - 1], w), lo = fmin(mn[k * W + j - 1], w);
          if (cost[i * W + j] >= hi - lo) {
            cost[i * W + j] = hi - lo;
            mx[i * W + j] = hi;
            mn[i * W + j] = lo;
            pos[i * W + j] = k;
          }
        }
    cut[m] = n;
    for (int j = m; j >= 1; j--) cut[j - 1] = pos[(size_t)cut[j] * W + j];
    free(mx), free(mn), free(cost), free(pos), free(sum);
  }
  for (int s = 0; s <= m; s++) { /* items to transformer layers */
    const int c = cut[s] - front;
    first[s] = c < 0 ? 0 : c > num_layers ? num_layers : c;
  }
  free(cut);
}

uint64_t zt_layout_seed(const zt_layout *l, uint64_t seed, int rank, int data_parallel_random_init) {
  if (seed == 0) zt_fatal(ZT_BAD_ARGS, "--seed 0: Seed (0) should be a positive integer.");
  zt_coords c = zt_layout_coords(l, rank);
  uint64_t s = seed + 100u * (uint64_t)c.pp;
  if (data_parallel_random_init) s += 10u * (uint64_t)c.dp;
  return s;
}

uint64_t zt_layout_tp_seed(const zt_layout *l, uint64_t seed, int rank, int data_parallel_random_init) {
  return zt_layout_seed(l, seed, rank, data_parallel_random_init) + 2718u + (uint64_t)zt_layout_coords(l, rank).tp;
}

int zt_layout_mp_rank(const zt_layout *l, int rank) {
  zt_coords c = zt_layout_coords(l, rank);
  return c.pp * l->tp + c.tp;
}
