/* finetune_bert: Megatron-DeepSpeed's tasks/main.py for the GLUE tasks and RACE (tasks/finetune.h). */
#include "tasks/finetune.h"

int main(int argc, char **argv) { return zt_finetune_main(argc, argv); }
