/* generate_samples (Megatron-DeepSpeed's tools/generate_samples_gpt.py): text generation from a pretrain_gpt
 * checkpoint, from an input file, interactively or unconditionally, with a key/value cache or --recompute
 * (evaluate/generate.c, docs/generate.md). */
#ifndef ZT_GENERATE_H
#define ZT_GENERATE_H

/* The program: flags as Megatron's generate_samples_gpt.py, output formats as its text_generation_utils. */
int zt_generate_main(int argc, char **argv);

#endif
