/* export_hf's conversion of a zerotron checkpoint into a Hugging Face directory (checkpoints/hf_export.c). */
#ifndef ZT_HF_EXPORT_H
#define ZT_HF_EXPORT_H

/* export_hf's command line (argv[0], checkpoint_dir, output_dir [--tag TAG] | --help): writes output_dir's
 * config.json and model.safetensors, or ends the process with the error (nothing written for a refused
 * checkpoint). Returns 0. */
int zt_export_hf_main(int argc, char **argv);

/* Megatron-DeepSpeed's fused query_key_value rows (models/transformer/attention.c): row (g (R+2) + j) HD + d of the
 * (NH + 2 G) HD rows, R = NH / G, is dimension d of query head g R + j (j < R), of group g's key (j = R) or of its
 * value (j = R + 1); without grouped-query attention G = NH, the per-head [head][q|k|v][HD]. Hugging Face keeps q, k
 * and v apart (Llama's q/k/v_proj, MegatronBert's query/key/value, GPT-2's c_attn blocks [q | k | v]): the place of
 * fused row r in their concatenation [q (NH HD) | k (G HD) | v (G HD)]. export_hf and hf2megads_weight_converter
 * both move rows by it. */
long zt_hf_qkv_split_row(long r, long NH, long G, long HD);

#endif
