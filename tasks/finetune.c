/* finetune_bert (finetune.h): Megatron-DeepSpeed's tasks/main.py for the GLUE and RACE tasks over the shared engine
 * and checkpoints. */
#include "tasks/finetune.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_reader.h"
#include "data/finetune_data.h"
#include "data/finetune_provider.h"
#include "models/bert/bert.h"
#include "runtime/base/blas.h"
#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"
#include "tasks/metrics.h"
#include "train/args.h"
#include "train/engine.h"
#include "train/schedule.h"

/* tasks/main.py's own flags (the rest are Megatron's, parsed by train/args.c) */
typedef struct {
  const char *task, *pretrained;
  int epochs, epochs_given, keep_last;
  int finetune; /* Megatron's --finetune: taken here because finetune_bert accepts it without --load */
  const char **train_data, **valid_data;
  int n_train, n_valid;
} ft_flags;

/* The run, for the hooks (the engine's loop calls them with its train state only). */
typedef struct {
  zt_engine *e;
  zt_ft_task task;
  int64_t ipe;                 /* training micro batches per epoch (Megatron's train_iters_per_epoch) */
  int choices, n_metric;
  const zt_ft_dataset **metric;
} ft_run;
static ft_run g_run;
static zt_ft_provider_setup g_data; /* what the model kind's build_data hands the engine */

static void usage(void) {
  printf("usage: finetune_bert --task {MNLI,QQP,QNLI,SST-2,CoLA,STS-B,MRPC,RTE,RACE} --epochs N\n"
         "                     --train-data PATH... --valid-data PATH... [--pretrained-checkpoint DIR]\n"
         "                     [--keep-last] MEGATRON_FLAGS...\n\n"
         "Fine-tunes BERT on a GLUE task or RACE as Megatron-DeepSpeed's tasks/main.py does: the task's files\n"
         "(GLUE: the .tsv files; RACE: directories of *.txt JSON lines) tokenized with --tokenizer-type (default\n"
         "BertWordPieceLowerCase) at --seq-length; BERT with Megatron's Classification head (pooler, dropout,\n"
         "classification_head) or, for RACE, MultipleChoice (multichoice_head, 4 rows per question); the weights of\n"
         "--pretrained-checkpoint (a pretrain_bert checkpoint, any layout) unless --load finds a checkpoint of this\n"
         "run; --epochs passes over the training data in torch's DistributedSampler order (seeded --seed + epoch);\n"
         "the validation loss every --eval-interval iterations; at each epoch's end a checkpoint (--save) and the\n"
         "accuracy over each --valid-data file. Every parallel layout, ZeRO, mixed precision and --deepspeed apply.\n\n"
         "task flags:\n"
         "  --task NAME                 MNLI (3 classes), QQP, QNLI, SST-2, CoLA, MRPC, RTE (2), RACE (4 choices),\n"
         "                              STS-B (a regression: mean squared error; with --finetune the Pearson and\n"
         "                              Spearman correlations; CoLA with --finetune: the Matthews correlation)\n"
         "  --epochs N                  passes over --train-data; 0 evaluates only (epoch -1)\n"
         "  --train-data PATH...        the training files (RACE: directories)\n"
         "  --valid-data PATH...        the validation files; each gets its own accuracy line\n"
         "  --pretrained-checkpoint DIR the pretrained BERT (its pretraining heads are left out; the task head starts\n"
         "                              random, as Megatron warns)\n"
         "  --keep-last                 keep a last incomplete micro batch (accepted where each rank's share divides\n"
         "                              into micro batches, when it changes nothing)\n\n"
         "The user guide is docs/finetune.md.\n");
}

/* The words after a list flag up to the next flag. */
static int take_list(int argc, char **argv, int *i, const char *inl, const char ***out) {
  int k = 0;
  *out = zt_malloc(((size_t)argc + 1) * sizeof(char *), "arguments");
  if (inl) (*out)[k++] = inl;
  while (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) (*out)[k++] = argv[++*i];
  return k;
}

static int parse_int(const char *flag, const char *v) {
  char *end;
  const long x = strtol(v, &end, 10);
  zt_check(*v && !*end && x >= -2147483647L && x <= 2147483647L, "bad argument value", "%s: invalid int value: '%s'",
           flag, v);
  return (int)x;
}

/* Takes tasks/main.py's flags out of argv; the rest, with placeholders for what the parser wants of a pretraining run
 * (the iterations, which finetune sets from --epochs, and the data, which is --train-data here), goes to *rest. */
static void split_args(int argc, char **argv, ft_flags *f, int *rest_n, char ***rest) {
  char **r = zt_malloc(((size_t)argc + 6) * sizeof(char *), "arguments");
  int n = 0;
  r[n++] = argv[0];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *eq = strchr(a, '=');
    const int flag = strncmp(a, "--", 2) == 0;
    const size_t key = eq && flag ? (size_t)(eq - a) : strlen(a);
    const char *inl = eq && flag ? eq + 1 : NULL;
#define IS(s) (key == strlen(s) && strncmp(a, s, key) == 0)
    if (IS("--task") || IS("--epochs") || IS("--pretrained-checkpoint")) {
      const char *v = inl;
      if (!v) {
        zt_check(i + 1 < argc, "missing argument value", "%.*s expects a value", (int)key, a);
        v = argv[++i];
      }
      if (IS("--task")) f->task = v;
      else if (IS("--epochs")) f->epochs = parse_int("--epochs", v), f->epochs_given = 1;
      else f->pretrained = v;
    } else if (IS("--finetune")) {
      zt_check(!inl, "bad argument value", "--finetune takes no value");
      f->finetune = 1;
    } else if (IS("--keep-last")) {
      zt_check(!inl, "bad argument value", "--keep-last takes no value");
      f->keep_last = 1;
    } else if (IS("--train-data")) {
      f->n_train = take_list(argc, argv, &i, inl, &f->train_data);
      zt_check(f->n_train >= 1, "missing argument value", "--train-data expects one or more paths");
    } else if (IS("--valid-data")) {
      f->n_valid = take_list(argc, argv, &i, inl, &f->valid_data);
    } else if (IS("--overlapping-eval") || IS("--strict-lambada")) {
      zt_fatal("unsupported argument", "%.*s: a flag of the zero-shot GPT tasks (LAMBADA, WIKITEXT103), which "
               "evaluate_zeroshot runs; finetune_bert fine-tunes BERT on GLUE and RACE", (int)key, a);
    } else if (IS("--qa-data-dev") || IS("--qa-data-test") || IS("--faiss-use-gpu") || IS("--faiss-match") ||
               IS("--faiss-topk-retrievals") || IS("--eval-micro-batch-size") || IS("--train-with-neg") ||
               IS("--train-hard-neg") || IS("--val-av-rank-hard-neg") || IS("--val-av-rank-other-neg")) {
      zt_fatal("unsupported argument", "%.*s: a flag of Megatron's ORQA retriever tasks (ICT-ZEROSHOT-NQ, "
               "RETRIEVER-EVAL, RET-FINETUNE-NQ), which zerotron does not have (no biencoder model)", (int)key, a);
    } else if (IS("--num-layers-per-virtual-pipeline-stage")) {
      zt_fatal("unsupported argument", "%.*s: Interleaved pipeline schedule is not yet supported for downstream "
               "tasks.", (int)key, a);
    } else if (IS("--train-iters") || IS("--train-samples")) {
      zt_fatal("inconsistent arguments", "%.*s: fine-tuning runs --epochs passes over --train-data (Megatron's "
               "finetune sets train_iters = epochs x the micro batches of an epoch); drop it", (int)key, a);
    } else if (IS("--data-path") || IS("--train-data-path") || IS("--valid-data-path") || IS("--test-data-path") ||
               IS("--mock-data")) {
      zt_fatal("unsupported argument", "%.*s: finetune_bert reads the task's files from --train-data and "
               "--valid-data, not pretraining datasets", (int)key, a);
    } else {
      r[n++] = argv[i];
    }
#undef IS
  }
  r[n++] = "--train-iters";
  r[n++] = "1";
  r[n++] = "--data-path";
  r[n++] = "finetune_bert-reads-train-data";
  r[n] = NULL;
  *rest_n = n;
  *rest = r;
}

static void check_flags(const ft_flags *f, const zt_args *a, zt_ft_task *task) {
  zt_check(f->task != NULL, "missing argument", "--task is required (MNLI, QQP, QNLI, SST-2, CoLA, STS-B, MRPC, RTE "
           "or RACE)");
  if (zt_ft_task_parse(f->task, task) != 0) {
    zt_check(strcmp(f->task, "LAMBADA") && strcmp(f->task, "WIKITEXT103"), "unsupported argument", "--task %s: a "
             "zero-shot GPT task; evaluate_zeroshot runs it", f->task);
    zt_fatal("unsupported argument", "--task %s: Task %s is not implemented (finetune_bert runs MNLI, QQP, QNLI, "
             "SST-2, CoLA, STS-B, MRPC, RTE and RACE)", f->task, f->task);
  }
  zt_check(f->epochs_given, "missing argument", "--epochs is required (Megatron's default None fails in finetune; 0 "
           "evaluates only)");
  zt_check(f->epochs >= 0, "bad argument value", "--epochs %d: expected 0 or more", f->epochs);
  zt_check(f->n_valid >= 1, "missing argument", "--valid-data PATH... is required: the accuracy at each epoch's end "
           "is computed over each of them (and the validation loss over all)");
  zt_check(f->epochs == 0 || f->n_train >= 1, "missing argument", "--train-data PATH... is required with --epochs %d",
           f->epochs);
  zt_check(!a->rampup_batch_size.v, "unsupported argument", "--rampup-batch-size: batch size scaling is not supported "
           "for finetuning (Megatron's finetune asserts it)");
  const int64_t per_step = (int64_t)a->micro_batch_size * a->data_parallel_size;
  zt_check(a->global_batch_size == per_step, "inconsistent arguments", "--global-batch-size %lld is not --micro-batch-"
           "size %d x %d data-parallel ranks = %lld: finetuning with gradient accumulation doesn't currently work "
           "(Megatron's finetune asserts one micro batch per step)", (long long)a->global_batch_size,
           a->micro_batch_size, a->data_parallel_size, (long long)per_step);
}

/* STS-B with --finetune (eval_utils.py): the predictions and labels of every data-parallel rank gathered, Pearson's
 * and Spearman's correlations and their mean. */
static void print_correlations(int epoch, const char *name, const double *pred, const double *label, int64_t n,
                               double secs) {
  double *rp = zt_malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof(double), "ranks"), *rl = rp + n;
  zt_rankdata(pred, n, rp);
  zt_rankdata(label, n, rl);
  const double pr = zt_pearson(pred, label, n), sr = zt_pearson(rp, rl, n);
  free(rp);
  char a[64], b[64], c[64];
  zt_py_float(a, sizeof a, pr, 0), zt_py_float(b, sizeof b, sr, 0), zt_py_float(c, sizeof c, (pr + sr) / 2, 0);
  zt_log(" > |epoch: %d| metrics for %s: pearson = %s spearmanr = %s corr = %s elapsed time (sec): %.3f\n", epoch,
         name, a, b, c, secs);
}

/* Megatron's accuracy_func_provider's metrics_func: the accuracy (CoLA with --finetune: the Matthews correlation)
 * over each --valid-data file, forward only, every sample once (the last micro batch of a rank may be partial: its
 * padding rows are not counted; with several data-parallel ranks the sampler pads to the ranks and the loader drops
 * the last partial batch, as torch's does). */
static void metrics(ft_run *run, int epoch) {
  zt_engine *e = run->e;
  const zt_args *a = e->args;
  zt_model *m = e->model;
  const int B = a->micro_batch_size / run->choices, W = a->data_parallel_size;
  const int mcc = a->finetune && run->task == ZT_FT_COLA; /* eval_utils.py: CoLA's metric under --finetune */
  const int corr = a->finetune && run->task == ZT_FT_STSB; /* and STS-B's */
  zt_log("calculating metrics ...\n");
  if (e->st.zero_stage == 3) zt_zero3_set_training(&e->st.zero3, 0);
  double all[2] = {0, 0};
  for (int d = 0; d < run->n_metric; d++) {
    const int split = ZT_FT_SPLIT_METRIC + d;
    const double t0 = zt_now();
    const int64_t nb = zt_ft_provider_batches(e->data, split), slots = nb * B * W;
    double c[6] = {0, 0, 0, 0, 0, 0}; /* correct, total; CoLA: tp, tn, fp, fn */
    /* STS-B: [prediction | label | present] of every rank's slots, summed over the world (an all-gather) */
    double *pl = corr ? zt_calloc((size_t)slots * 3 + 1, sizeof(double), "predictions") : NULL;
    for (int64_t q = 0; q < nb; q++) {
      const uint64_t first = ((uint64_t)q * (uint64_t)B * (uint64_t)W + (uint64_t)e->st.dp_rank * (uint64_t)B) *
                             (uint64_t)run->choices;
      const int real = zt_ft_provider_real(e->data, split, first);
      e->data->load(e->data, split, first, &e->batch);
      const zt_pass pass = {.B = a->micro_batch_size, .T = a->seq_length, .first_sample = first, .seed = a->seed,
                            .training = 0};
      zt_loss_sums sum = zt_loss_sums_empty(m);
      zt_schedule_eval_forward(e, &pass, &sum);
      if (!m->last || e->st.tp_rank != 0) continue;
      zt_check(m->predictions && m->n_predictions == B, "internal error", "finetune: %d predictions for %d samples",
               m->predictions ? m->n_predictions : 0, B);
      for (int j = 0; j < real && pl; j++) {
        const int64_t at = ((int64_t)e->st.dp_rank * nb + q) * B + j;
        pl[at] = m->prediction_scores[j], pl[slots + at] = e->batch.sentence_labels[j], pl[2 * slots + at] = 1;
      }
      for (int j = 0; j < real; j++) {
        const int p = m->predictions[j], y = e->batch.sentence_labels[j];
        c[0] += p == y;
        c[1] += 1;
        c[2] += p == 1 && y == 1, c[3] += p == 0 && y == 0, c[4] += p == 1 && y == 0, c[5] += p == 0 && y == 1;
      }
    }
    if (zt_world_size() > 1) zt_allreduce_sum_f64(zt_comm_world(), c, 6);
    if (pl && zt_world_size() > 1) zt_allreduce_sum_f64(zt_comm_world(), pl, (size_t)slots * 3);
    const double secs = zt_now() - t0;
    if (pl) {
      int64_t n = 0;
      for (int64_t i = 0; i < slots; i++)
        if (pl[2 * slots + i] > 0) pl[n] = pl[i], pl[slots + n] = pl[slots + i], n++;
      print_correlations(epoch, run->metric[d]->name, pl, pl + slots, n, secs);
      free(pl);
      continue; /* Megatron's calculate_correct_answers returns 0, 0 then */
    }
    if (mcc) { /* sklearn's matthews_corrcoef of the gathered labels and predictions */
      char v[64];
      zt_py_float(v, sizeof v, zt_matthews(c[2], c[3], c[4], c[5]), 0);
      zt_log(" > |epoch: %d| metrics for %s: mcc = %s , elapsed time (sec): %.3f\n", epoch,
             run->metric[d]->name, v, secs);
      continue; /* Megatron's calculate_correct_answers returns 0, 0 then */
    }
    zt_log(" > |epoch: %d| metrics for %s: correct / total = %.0f / %.0f = %.4f %%, elapsed time (sec): %.3f\n", epoch,
           run->metric[d]->name, c[0], c[1], c[1] > 0 ? c[0] * 100.0 / c[1] : 0.0, secs);
    all[0] += c[0], all[1] += c[1];
  }
  zt_log(" >> |epoch: %d| overall: correct / total = %.0f / %.0f = %.4f %%\n", epoch, all[0], all[1],
         all[1] > 0 ? all[0] * 100.0 / all[1] : 0.0);
}

/* After each training iteration: Megatron's save and exit points, then at an epoch's end its checkpoint (--save)
 * and the accuracy callback. */
static int after_step(zt_train_state *st) {
  if (zt_ckpt_after_step(st)) return 1;
  const zt_args *a = st->args;
  if (st->iteration % g_run.ipe != 0) return 0;
  const int epoch = (int)(st->iteration / g_run.ipe) - 1;
  if (a->save && !(a->save_interval > 0 && st->iteration % a->save_interval == 0)) zt_ckpt_save(st);
  metrics(&g_run, epoch);
  if (st->iteration < a->train_iters) zt_log("working on epoch %d ...\n", epoch + 2);
  return 0;
}

static zt_data_provider *build_data(const zt_data_setup *s) {
  (void)s;
  return zt_ft_provider_create(&g_data);
}

int zt_finetune_main(int argc, char **argv) {
  if (zt_program_start(&argc, &argv, usage)) return 0;
  ft_flags f = {0};
  int rn;
  char **rest;
  split_args(argc, argv, &f, &rn, &rest);
  zt_args args;
  zt_args_model = "bert";
  zt_args_checkpoint_reader = zt_ckpt_saved_args;
  zt_args_parse(&args, rn, rest, zt_comm_size());
  zt_ft_task task;
  check_flags(&f, &args, &task);
  /* --finetune (the example scripts pass it): a --load checkpoint's weights only, iteration 0; CoLA's metric */
  args.finetune = f.finetune;
  args.data_path = (zt_strlist){0}; /* the parser's placeholder: the data is --train-data and --valid-data */
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_check(tok != NULL, "missing argument", "finetune_bert needs the tokenizer (--tokenizer-type and --vocab-file)");
  zt_args_print(&args);
  zt_log("> finetune_bert: task %s, epochs %d, pretrained_checkpoint %s, keep_last %s, %d train_data and %d valid_data "
         "paths\n", f.task, f.epochs, f.pretrained ? f.pretrained : "None", f.keep_last ? "True" : "False", f.n_train,
         f.n_valid);
  static const zt_model_kind kind = {.name = "BERT", .build_model = zt_bert_create, .build_data = build_data,
                                     .count_params = zt_bert_count};
  zt_ds_config *ds = zt_engine_deepspeed_setup(&args, &kind);
  zt_log("> host: %d OpenMP threads, OpenBLAS %s kernels\n", omp_get_max_threads(), zt_blas_core());

  /* the datasets before the model: a bad file is refused before anything is allocated (Megatron's order: training
   * and validation, then the accuracy callback's one per --valid-data path) */
  const int T = args.seq_length, choices = zt_ft_task_choices(task);
  zt_ft_dataset train = {0}, valid = {0};
  if (f.epochs > 0) {
    zt_ft_dataset_load(&train, task, "training", f.train_data, f.n_train, tok, T);
    zt_ft_dataset_load(&valid, task, "validation", f.valid_data, f.n_valid, tok, T);
  }
  zt_ft_dataset *metric = zt_calloc((size_t)f.n_valid, sizeof *metric, "finetune datasets");
  const zt_ft_dataset **mptr = zt_malloc((size_t)f.n_valid * sizeof *mptr, "finetune datasets");
  for (int d = 0; d < f.n_valid; d++) {
    char name[256];
    zt_ft_name_from_path(task, f.valid_data[d], name, sizeof name);
    zt_ft_dataset_load(&metric[d], task, name, &f.valid_data[d], 1, tok, T);
    mptr[d] = &metric[d];
  }
  const int B = args.micro_batch_size, W = args.data_parallel_size;
  g_data = (zt_ft_provider_setup){.train = f.epochs > 0 ? &train : NULL, .valid = f.epochs > 0 ? &valid : NULL,
                                  .metric = mptr, .n_metric = f.n_valid, .micro_batch = B, .world = W,
                                  .seed = args.seed, .keep_last = f.keep_last};
  int64_t ipe = 1;
  if (f.epochs > 0) {
    zt_ft_loader l;
    zt_ft_loader_init(&l, train.n, W, B, !f.keep_last);
    ipe = l.batches;
    const int64_t per_rank = l.per_rank;
    zt_ft_loader_free(&l);
    zt_check(ipe > 0, "finetune data", "--train-data: %lld training samples make no micro batch of %d on each of %d "
             "data-parallel ranks", (long long)train.n, B, W);
    zt_check(!f.keep_last || per_rank % B == 0, "unsupported argument", "--keep-last: each data-parallel rank's %lld "
             "training samples end in an incomplete micro batch of %lld (of %d), which zerotron's fixed micro batch "
             "cannot run; drop --keep-last (the incomplete batch is dropped) or choose --micro-batch-size to divide "
             "%lld", (long long)per_rank, (long long)(per_rank % B), B, (long long)per_rank);
    zt_ft_loader_init(&l, valid.n, W, B, !f.keep_last);
    zt_check(l.batches > 0 || args.eval_iters == 0, "finetune data", "--valid-data: %lld validation samples make no "
             "micro batch of %d on each of %d data-parallel ranks (the validation loss needs one; --eval-iters 0 "
             "turns it off)", (long long)valid.n, B, W);
    zt_check(!f.keep_last || l.per_rank % B == 0, "unsupported argument", "--keep-last: each data-parallel rank's "
             "%lld validation samples end in an incomplete micro batch (of %d); drop --keep-last",
             (long long)l.per_rank, B);
    zt_ft_loader_free(&l);
  }
  for (int d = 0; d < f.n_valid; d++)
    zt_check(metric[d].n >= (W > 1 ? (int64_t)W * B : 1), "finetune data", "--valid-data %s: %lld samples make no "
             "micro batch of %d on each of %d data-parallel ranks", f.valid_data[d], (long long)metric[d].n, B, W);
  /* Megatron: train_iters = epochs x len(train_dataloader); the micro and global batches count rows (x the
   * dataset's sample_multiplier: RACE's 4 choices), which the learning-rate schedule sees too */
  args.train_iters = f.epochs > 0 ? (int64_t)f.epochs * ipe : 1; /* --epochs 0: no step runs; the schedule, which
                                                                     needs a length, is never used */
  if (f.epochs == 0) args.no_load_optim = args.no_load_rng = 1; /* evaluation only: --load's weights */
  args.micro_batch_size *= choices;
  args.global_batch_size *= choices;
  args.finetune_classes = zt_ft_task_classes(task);
  args.finetune_choices = choices;
  args.finetune_regression = task == ZT_FT_STSB; /* Megatron's mse_forward_step */
  zt_log("building %s model for %s ...\n", task == ZT_FT_RACE ? "multichoice" : "classification",
         task == ZT_FT_RACE ? "RACE" : f.task);
  if (task == ZT_FT_STSB && !f.finetune)
    zt_log("> STS-B without --finetune: the end-of-epoch metric is Megatron's accuracy of argmax over the one output "
           "(always 0) against the truncated scores; --finetune gives its Pearson and Spearman correlations\n");

  zt_engine e;
  zt_engine_init(&e, &args, tok, ds, &kind);
  e.final_eval_off = 1;
  g_run = (ft_run){.e = &e, .task = task, .ipe = ipe, .choices = choices, .n_metric = f.n_valid, .metric = mptr};
  zt_ckpt_start(&e.st); /* --load: a checkpoint of this fine-tuning run continues it */
  if (e.st.iteration == 0 && f.pretrained) {
    const zt_bert_config cfg = {.cls_classes = args.finetune_classes, .cls_choices = choices};
    zt_ckpt_load_pretrained(&e.st, f.pretrained, zt_bert_cls_head_name(&cfg));
  }
  e.hooks = (zt_train_hooks){.after_step = after_step, .end_of_training = zt_ckpt_end_of_training};
  if (f.epochs > 0) {
    zt_check(e.st.iteration <= args.train_iters, "checkpoint", "--load %s is at iteration %lld, past the %lld of "
             "--epochs %d x %lld micro batches", args.load, (long long)e.st.iteration, (long long)args.train_iters,
             f.epochs, (long long)ipe);
    zt_log("working on epoch %lld ...\n", (long long)(e.st.iteration / ipe + 1));
    zt_engine_run(&e);
  } else {
    zt_log("evaluation only mode, setting epoch to -1\n");
    metrics(&g_run, -1);
  }
  zt_log("done :-)\n");
  zt_engine_free(&e);
  for (int d = 0; d < f.n_valid; d++) zt_ft_dataset_free(&metric[d]);
  free(metric), free(mptr);
  if (f.epochs > 0) zt_ft_dataset_free(&train), zt_ft_dataset_free(&valid);
  free(f.train_data), free(f.valid_data), free(rest);
  zt_tokenizer_free(tok);
  if (ds) {
    zt_ds_config_free(ds);
    free(ds);
  }
  zt_comm_finalize();
  return 0;
}
