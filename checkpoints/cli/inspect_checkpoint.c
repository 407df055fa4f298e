/* inspect_checkpoint: prints what a zerotron checkpoint holds: its files (verified against the manifest), the
 * iteration and data position, the parallel layout, dtypes, optimizer, scheduler and loss scaler, and every
 * tensor with its full shape, tensor-parallel split and size. docs/checkpoints.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/ckpt_fs.h"
#include "checkpoints/ckpt_reader.h"
#include "runtime/base/error.h"

static void attrs_line(const zt_h5 *f, const char *group, const char *title) {
  if (!zt_h5_exists(f->id, group)) return;
  hid_t g = zt_h5_group_open(f, f->id, group);
  printf("%s:", title);
  H5O_info_t info;
  H5Oget_info(g, &info);
  for (hsize_t i = 0; i < info.num_attrs; i++) {
    hid_t a = H5Aopen_by_idx(g, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) a = H5Aopen_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
    char name[128];
    H5Aget_name(a, sizeof name, name);
    hid_t t = H5Aget_type(a);
    const H5T_class_t c = H5Tget_class(t);
    H5Tclose(t);
    H5Aclose(a);
    if (c == H5T_STRING) {
      char *s = zt_h5_get_str(f, g, group, name);
      printf(" %s=%s", name, s);
      free(s);
    } else if (c == H5T_FLOAT) {
      printf(" %s=%.9g", name, zt_h5_get_f64(f, g, group, name));
    } else {
      printf(" %s=%lld", name, (long long)zt_h5_get_i64(f, g, group, name));
    }
  }
  printf("\n");
  H5Gclose(g);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *tag = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: inspect_checkpoint checkpoint_dir [--tag TAG]\n\n"
             "Prints the layout, iteration, parallel shape, tensors and sizes of a zerotron checkpoint.\n"
             "checkpoint_dir holds `latest` (or pass --tag), or is a tag folder itself.\n");
      return 0;
    }
    if (!strcmp(argv[i], "--tag") || !strcmp(argv[i], "-t")) {
      zt_check(i + 1 < argc, "missing argument value", "%s expects one value", argv[i]);
      tag = argv[++i];
    } else if (argv[i][0] == '-') {
      zt_fatal("unrecognized argument", "%s (see --help)", argv[i]);
    } else {
      zt_check(!dir, "unrecognized argument", "%s: inspect_checkpoint takes one checkpoint_dir", argv[i]);
      dir = argv[i];
    }
  }
  zt_check(dir != NULL, "missing argument", "checkpoint_dir is required (see --help)");
  char root[4096], tagbuf[256];
  tag = zt_ckpt_tool_dir(dir, tag, root, sizeof root, tagbuf, sizeof tagbuf);
  zt_ckpt_reader r;
  zt_ckpt_open(&r, root, tag);
  char latest[256] = "";
  zt_ckpt_read_text(root, "latest", latest, sizeof latest);
  printf("checkpoint: %s (tag %s; latest: %s)\n", r.dir, r.tag, latest[0] ? latest : "none");
  printf("format: %s version %d, Megatron checkpoint_version %.1f; %d files verified against %s\n", ZT_CKPT_FORMAT,
         ZT_CKPT_FORMAT_VERSION, ZT_CKPT_MEGATRON_VERSION, r.n_files, ZT_CKPT_MANIFEST);
  uint64_t total_bytes = 0;
  for (int i = 0; i < r.n_files; i++) {
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", r.dir, r.files[i]);
    struct stat st;
    stat(p, &st);
    total_bytes += (uint64_t)st.st_size;
    printf("  %-56s %12lld bytes\n", r.files[i], (long long)st.st_size);
  }
  printf("iteration: %lld | consumed samples: %lld | consumed valid samples: %lld | consumed tokens: %lld | "
         "skipped iterations: %lld\n", (long long)r.iteration, (long long)r.consumed_train_samples,
         (long long)r.consumed_valid_samples, (long long)r.tokens, (long long)r.skipped_steps);
  printf("parallel layout: tensor %d x pipeline %d x data %d (%d model-state file%s), ZeRO stage %d\n", r.tp_size,
         r.pp_size, r.dp_size, r.mp_size, r.mp_size > 1 ? "s" : "", r.zero_stage);
  printf("weights: %s | vocabulary: %lld (padded to %lld)\n", zt_dtype_name(r.weights_dtype), (long long)r.vocab_size,
         (long long)r.padded_vocab_size);
  if (r.has_optim) {
    const zt_h5 *o = &r.optim[0];
    printf("optimizer: %s, step %lld, %d partition%s of %lld elements (flat %lld), fp32 source: ", r.optimizer,
           (long long)zt_h5_get_i64(o, o->id, "/", "step"), r.dp_size, r.dp_size > 1 ? "s" : "",
           (long long)zt_h5_get_i64(o, o->id, "/", "partition_numel"),
           (long long)zt_h5_get_i64(o, o->id, "/", "flat_numel"));
    char *src = zt_h5_get_str(o, o->id, "/", "fp32_source");
    printf("%s\n", src);
    free(src);
    attrs_line(o, "loss_scaler", "loss scaler");
  } else {
    printf("optimizer: no optimizer states (saved with --no-save-optim)\n");
  }
  attrs_line(&r.model[0], "lr_scheduler", "lr scheduler");
  if (zt_h5_exists(r.model[0].id, "rng_state")) attrs_line(&r.model[0], "rng_state", "rng state");
  else printf("rng state: not saved (--no-save-rng)\n");
  uint64_t elements = 0;
  for (int i = 0; i < r.n_tensors; i++) elements += r.tensors[i].numel;
  printf("tensors: %d, %llu elements (%.2f M)\n", r.n_tensors, (unsigned long long)elements, (double)elements / 1e6);
  printf("  %-64s %-16s %-5s %-5s %12s\n", "name", "full shape", "dtype", "split", "elements");
  for (int i = 0; i < r.n_tensors; i++) {
    const zt_ckpt_tensor *t = &r.tensors[i];
    char shape[64] = "[";
    for (int d = 0; d < t->ndim; d++)
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? ", " : "", (long long)t->full_shape[d]);
    strcat(shape, "]");
    char split[16];
    if (t->tp_split_dim < 0) snprintf(split, sizeof split, "-");
    else snprintf(split, sizeof split, "%d", t->tp_split_dim);
    printf("  %-64s %-16s %-5s %-5s %12zu%s\n", t->name, shape, zt_dtype_name(t->dtype), split, t->numel,
           t->tied_group >= 0 ? "  (tied)" : "");
  }
  printf("total: %llu bytes on disk\n", (unsigned long long)total_bytes);
  zt_ckpt_close(&r);
  return 0;
}
