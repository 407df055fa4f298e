/* The main program of every pretrain_* driver (Megatron's pretrain()): MPI, the arguments of the model family, the
 * tokenizer, the DeepSpeed config, the engine with the model kind, and the checkpoint hooks around its loop. It lives
 * with the checkpoints because it is the one place that joins them to the engine (train/ does not include
 * checkpoints/). */
#include "checkpoints/train_main.h"

#include <omp.h>
#include <stdlib.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_reader.h"
#include "runtime/base/blas.h"
#include "runtime/base/error.h"
#include "runtime/comm/comm.h"
#include "train/args.h"

int zt_train_main(int argc, char **argv, const zt_model_kind *kind, const char *family) {
  zt_blas_setup(argc, argv); /* may re-execute the program: before MPI starts */
  zt_comm_init(&argc, &argv); /* mpirun, srun, or a single process */
  zt_args args;
  zt_args_model = family;
  zt_args_checkpoint_reader = zt_ckpt_saved_args; /* --use-checkpoint-args */
  zt_args_parse(&args, argc, argv, zt_comm_size());
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_args_print(&args);
  zt_ds_config *ds = zt_engine_deepspeed_setup(&args);
  zt_log("> host: %d OpenMP threads, OpenBLAS %s kernels\n", omp_get_max_threads(), zt_blas_core());
  zt_engine e;
  zt_engine_init(&e, &args, tok, ds, kind);
  zt_ckpt_start(&e.st); /* --load (validated before any state changes), SIGTERM handler, exit clock */
  e.hooks = (zt_train_hooks){.after_step = zt_ckpt_after_step, .end_of_training = zt_ckpt_end_of_training};
  zt_engine_run(&e);
  zt_engine_free(&e);
  if (tok) zt_tokenizer_free(tok);
  if (ds) {
    zt_ds_config_free(ds);
    free(ds);
  }
  zt_comm_finalize();
  return 0;
}
