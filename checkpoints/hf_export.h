/* export_hf's conversion of a zerotron checkpoint into a Hugging Face directory (checkpoints/hf_export.c). */
#ifndef ZT_HF_EXPORT_H
#define ZT_HF_EXPORT_H

/* export_hf's command line (argv[0], checkpoint_dir, output_dir [--tag TAG] | --help): writes output_dir's
 * config.json and model.safetensors, or ends the process with the error (nothing written for a refused
 * checkpoint). Returns 0. */
int zt_export_hf_main(int argc, char **argv);

#endif
