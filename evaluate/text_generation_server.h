/* run_text_generation_server: Megatron's tools/run_text_generation_server.py with megatron/text_generation_server.py
 * (a REST server: PUT /api with a JSON body of prompts and generation settings, the reply's text, segments and
 * log-probabilities), serving a pretrain_gpt checkpoint in any TP x PP layout (evaluate/text_generation_server.c,
 * docs/generate.md). */
#ifndef ZT_TEXT_GENERATION_SERVER_H
#define ZT_TEXT_GENERATION_SERVER_H

int zt_text_generation_server_main(int argc, char **argv);

#endif
