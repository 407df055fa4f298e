/* zt_ckpt_tag_consistent (DeepSpeed's checkpoint tag validation) under mpirun: `tag_check same` gives every rank the
 * tag global_step8, `tag_check rank` gives rank r global_step8_r; each rank prints "rank R consistent C". Driven by
 * test_tag_validation.sh. */
#include <stdio.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "runtime/comm/comm.h"

int main(int argc, char **argv) {
  zt_comm_init(&argc, &argv);
  char tag[64];
  if (argc > 1 && !strcmp(argv[1], "rank")) snprintf(tag, sizeof tag, "global_step8_%d", zt_comm_rank());
  else snprintf(tag, sizeof tag, "global_step8");
  printf("rank %d consistent %d\n", zt_comm_rank(), zt_ckpt_tag_consistent(tag));
  zt_comm_finalize();
  return 0;
}
