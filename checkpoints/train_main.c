/* The main program of every pretrain_* driver (Megatron's pretrain()): MPI, the arguments of the model family, the
 * tokenizer, the DeepSpeed config, the engine with the model kind, and the checkpoint hooks around its loop. It lives
 * with the checkpoints because it is the one place that joins them to the engine (train/ does not include
 * checkpoints/). */
#include "checkpoints/train_main.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_reader.h"
#include "runtime/base/blas.h"
#include "runtime/base/error.h"
#include "runtime/comm/comm.h"
#include "train/args.h"
#include "train/progress.h"

/* The per-layer experts of a saved argument summary (its num_experts list over num_layers at expert_interval, as
 * get_num_experts_per_layer reads them) into out[num_layers]; 0 when the summary lacks them. */
static int saved_layer_experts(const char *text, int num_layers, int *out) {
  char list[256], iv[32];
  if (!zt_ckpt_arg(text, "num_experts", list, sizeof list) || !zt_ckpt_arg(text, "expert_interval", iv, sizeof iv))
    return 0;
  int v[128], n = 0;
  for (char *p = list; *p && n < 128;) {
    while (*p && (*p < '0' || *p > '9')) p++;
    if (!*p) break;
    v[n++] = (int)strtol(p, &p, 10);
  }
  const int interval = atoi(iv) > 0 ? atoi(iv) : 1;
  for (int l = 0; l < num_layers; l++) {
    const int idx = n == 1 ? 0 : l / interval;
    out[l] = (l + 1) % interval == 0 && idx < n ? v[idx] : 1;
  }
  return 1;
}

/* --mos/--kd: the teacher's checkpoint against the teacher flags, before anything is built (item 8 of issue 18):
 * its saved shape, with the numbers, so a wrong teacher is refused and not discovered tensor by tensor. */
static void check_teacher_checkpoint(const zt_args *a) {
  const char *how = a->mos ? "--mos" : "--kd";
  char *text = zt_ckpt_saved_args(a->load_teacher, NULL);
  zt_check(text != NULL, "checkpoint", "%s: --load-teacher %s: no checkpoint there (no %s/latest)", how,
           a->load_teacher, a->load_teacher);
  const struct { const char *flag, *saved; int want; } dims[] = {
      {"--num-layers-teacher", "num_layers", a->num_layers_teacher},
      {"--hidden-size-teacher", "hidden_size", a->hidden_size_teacher},
      {"--num-attention-heads-teacher", "num_attention_heads", a->num_attention_heads_teacher},
      {"the teacher's MLP width (see docs/moe.md)", "ffn_hidden_size", a->teacher_ffn_hidden_size},
      {"--max-position-embeddings", "max_position_embeddings", a->max_position_embeddings}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    char v[64];
    if (!zt_ckpt_arg(text, dims[i].saved, v, sizeof v)) continue;
    zt_check(atoi(v) == dims[i].want, "checkpoint", "%s: --load-teacher %s was saved with %s %s, and %s is %d: the "
             "teacher flags must describe the teacher's checkpoint", how, a->load_teacher, dims[i].saved, v,
             dims[i].flag, dims[i].want);
  }
  int *saved = malloc((size_t)a->num_layers_teacher * sizeof(int));
  if (saved && saved_layer_experts(text, a->num_layers_teacher, saved))
    for (int l = 0; l < a->num_layers_teacher; l++)
      zt_check(saved[l] == a->teacher_layer_experts[l], "checkpoint", "%s: --load-teacher %s has %d experts in layer "
               "%d, --num-experts-teacher gives it %d", how, a->load_teacher, saved[l], l + 1,
               a->teacher_layer_experts[l]);
  free(saved);
  free(text);
}

int zt_train_main(int argc, char **argv, const zt_model_kind *kind, const char *family) {
  zt_blas_setup(argc, argv); /* may re-execute the program: before MPI starts */
  zt_comm_init(&argc, &argv); /* mpirun, srun, or a single process */
  zt_args args;
  zt_args_model = family;
  zt_args_checkpoint_reader = zt_ckpt_saved_args; /* --use-checkpoint-args */
  zt_args_parse(&args, argc, argv, zt_comm_size());
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_args_print(&args);
  zt_ds_config *ds = zt_engine_deepspeed_setup(&args, kind);
  zt_log("> host: %d OpenMP threads, OpenBLAS %s kernels\n", omp_get_max_threads(), zt_blas_core());
  if (zt_ckpt_kill_switch(&args)) { /* Megatron-DeepSpeed's pretrain(): before anything is built */
    char line[4200];
    snprintf(line, sizeof line, "Detected kill switch at %s. Exiting", args.kill_switch_file);
    zt_print_datetime(line);
    if (ds) {
      zt_ds_config_free(ds);
      free(ds);
    }
    if (tok) zt_tokenizer_free(tok);
    zt_comm_finalize();
    return 0;
  }
  if (args.mos || args.kd) check_teacher_checkpoint(&args);
  zt_engine e;
  zt_engine_init(&e, &args, tok, ds, kind);
  if (args.mos || args.kd) { /* setup_teacher_model: built forward-only, the weights of --load-teacher */
    zt_args targs;
    zt_engine_teacher_args(&args, &targs);
    e.teacher = zt_engine_build_teacher(&e);
    zt_ckpt_load_weights(e.teacher, &targs, e.st.tp_rank, e.st.tp_size, 0, 1, e.st.dp_rank, e.st.dp_size);
  }
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
