/* Test driver for runtime/parallel/parallel_state: prints every group, coordinate, seed and layer assignment
 * of the layouts it is given, for test_parallel_state.py to compare against its own reimplementation of
 * Megatron's and DeepSpeed's group loops.
 *   layout_tool                          read "world tp pp ep vpp num_layers" lines from stdin
 *   layout_tool world tp pp ep vpp layers  one layout (used for the refusal messages)
 *   layout_tool partition                read "num_layers pp front back" lines and print
 *                                        "P first[0] .. first[pp]" (zt_layout_ds_partition, DeepSpeed's partition)
 * With ZT_LAYOUT_DATA_FIRST=1 in the environment the expert groups follow DeepSpeed's use_data_before_expert_parallelism.
 * Output per layout:
 *   L world tp pp dp ep vpp
 *   G kind ngroups size members...          zt_layout_all_groups
 *   R kind rank n members...                zt_layout_group
 *   C rank tp dp pp rank_back mp_rank seed seed_dpri tp_seed
 *   S pp_rank chunk first count              (only when num_layers > 0)
 *   E */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/parallel/parallel_state.h"

static void dump(int world, int tp, int pp, int ep, int vpp, int layers) {
  zt_layout l;
  zt_layout_init(&l, world, tp, pp, ep, vpp, layers);
  const char *df = getenv("ZT_LAYOUT_DATA_FIRST");
  l.ep_data_first = df && atoi(df) == 1;
  printf("L %d %d %d %d %d %d\n", l.world, l.tp, l.pp, l.dp, l.ep, l.vpp);
  int *m = zt_malloc(sizeof(int) * (size_t)l.world, "layout_tool members");
  for (int k = 0; k < ZT_GROUP_KIND_COUNT; k++) {
    int size = -1;
    int n = zt_layout_all_groups(&l, (zt_group_kind)k, m, &size);
    printf("G %s %d %d", zt_group_kind_name((zt_group_kind)k), n, size);
    for (int i = 0; i < n * size; i++) printf(" %d", m[i]);
    printf("\n");
    for (int r = 0; r < l.world; r++) {
      int c = zt_layout_group(&l, (zt_group_kind)k, r, m);
      printf("R %s %d %d", zt_group_kind_name((zt_group_kind)k), r, c);
      for (int i = 0; i < c; i++) printf(" %d", m[i]);
      printf("\n");
    }
  }
  for (int r = 0; r < l.world; r++) {
    zt_coords c = zt_layout_coords(&l, r);
    printf("C %d %d %d %d %d %d %llu %llu %llu\n", r, c.tp, c.dp, c.pp, zt_layout_rank(&l, c), zt_layout_mp_rank(&l, r),
           (unsigned long long)zt_layout_seed(&l, 1234, r, 0), (unsigned long long)zt_layout_seed(&l, 1234, r, 1),
           (unsigned long long)zt_layout_tp_seed(&l, 1234, r, 0));
  }
  if (layers > 0)
    for (int s = 0; s < l.pp; s++)
      for (int c = 0; c < l.vpp; c++) {
        int first, count;
        zt_layout_stage_layers(&l, layers, s, c, &first, &count);
        printf("S %d %d %d %d\n", s, c, first, count);
      }
  printf("E\n");
  free(m);
}

static int partition(void) {
  int n, pp, front, back;
  while (scanf("%d %d %d %d", &n, &pp, &front, &back) == 4) {
    int *first = zt_malloc(sizeof(int) * (size_t)(pp + 1), "layout_tool partition");
    zt_layout_ds_partition(n, pp, front, back, first);
    printf("P");
    for (int s = 0; s <= pp; s++) printf(" %d", first[s]);
    printf("\n");
    free(first);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "partition")) return partition();
  if (argc == 7) {
    dump(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    return 0;
  }
  if (argc != 1) {
    fprintf(stderr, "usage: %s [world tp pp ep vpp num_layers]\n", argv[0]);
    return 2;
  }
  int w, t, p, e, v, n;
  while (scanf("%d %d %d %d %d %d", &w, &t, &p, &e, &v, &n) == 6) dump(w, t, p, e, v, n);
  return 0;
}
