/* The shared main program of the pretrain_* drivers (checkpoints/train_main.c). */
#ifndef ZT_TRAIN_MAIN_H
#define ZT_TRAIN_MAIN_H

#include "train/engine.h"

/* Runs a training program for the model kind; family ("gpt", "bert") selects its flags' defaults and refusals
 * (zt_args_model). Returns the exit status. */
int zt_train_main(int argc, char **argv, const zt_model_kind *kind, const char *family);

#endif
