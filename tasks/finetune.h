/* finetune_bert: Megatron-DeepSpeed's `tasks/main.py --task MNLI|QQP|QNLI|SST-2|CoLA|MRPC|RTE|RACE` (tasks/glue/,
 * tasks/race/, tasks/finetune_utils.py, tasks/eval_utils.py) as one program: the task's datasets
 * (data/finetune_data.h) in torch's loader order (data/finetune_provider.h), BERT with Megatron's Classification or
 * MultipleChoice head (models/bert/bert.h, cls_classes) trained by the shared engine for --epochs epochs from the
 * weights of --pretrained-checkpoint, a checkpoint (--save) and the accuracy over each --valid-data file at each
 * epoch's end, with Megatron's log lines. The user guide is docs/finetune.md. */
#ifndef ZT_FINETUNE_H
#define ZT_FINETUNE_H

int zt_finetune_main(int argc, char **argv);

#endif
