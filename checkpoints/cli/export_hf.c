/* export_hf: a zerotron GPT, BERT or Llama-style checkpoint as a Hugging Face directory (checkpoints/hf_export.c,
 * docs/checkpoints.md "export_hf"). */
#include "checkpoints/hf_export.h"

int main(int argc, char **argv) { return zt_export_hf_main(argc, argv); }
