/* The layout-independent checkpoint reader (see ckpt_reader.h). */
#include "checkpoints/ckpt_reader.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoints/ckpt_fs.h"
#include "runtime/base/error.h"
#include "train/args.h"

/* Reads the tracker file root/name. Returns 0 when it does not exist, 1 with its text (surrounding whitespace
 * stripped, as Megatron's read_metadata strips it) in buf, -1 with the reason in err when it exists but cannot be
 * used: a directory, unreadable, empty, longer than a tag, holding a NUL or another control byte. */
static int read_tracker(const char *root, const char *name, char *buf, size_t n, char *err, size_t errn) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", root, name);
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return 0;
    snprintf(err, errn, "%s: cannot be read: %s", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errn, "%s is a directory, not a tracker file naming a checkpoint", path);
    return -1;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errn, "%s: cannot be read: %s", path, strerror(errno));
    return -1;
  }
  char raw[512];
  const size_t k = fread(raw, 1, sizeof raw, f);
  const int failed = ferror(f);
  fclose(f);
  if (failed) {
    snprintf(err, errn, "%s: cannot be read", path);
    return -1;
  }
  size_t a = 0, b = k;
  while (a < b && (raw[a] == ' ' || raw[a] == '\t' || raw[a] == '\n' || raw[a] == '\r')) a++;
  while (b > a && (raw[b - 1] == ' ' || raw[b - 1] == '\t' || raw[b - 1] == '\n' || raw[b - 1] == '\r')) b--;
  if (b - a >= n || k == sizeof raw) {
    snprintf(err, errn, "%s holds %s bytes, more than a checkpoint tag (at most %zu)", path,
             k == sizeof raw ? "512 or more" : "too many", n - 1);
    return -1;
  }
  if (a == b) {
    snprintf(err, errn, "%s is empty%s", path, k ? " (only whitespace)" : "");
    return -1;
  }
  for (size_t i = a; i < b; i++)
    if ((unsigned char)raw[i] < 0x20 || raw[i] == 0x7f) {
      snprintf(err, errn, "%s holds the control byte 0x%02x at offset %zu (a corrupted tracker file)", path,
               (unsigned char)raw[i], i);
      return -1;
    }
  memcpy(buf, raw + a, b - a);
  buf[b - a] = '\0';
  return 1;
}

int zt_ckpt_discover(const char *root, const char *tag, char *tag_out, size_t n, char *err, size_t errn) {
  tag_out[0] = '\0';
  err[0] = '\0';
  struct stat st;
  if (!(tag && *tag)) {
    if (stat(root, &st) != 0 && errno == ENOENT) return 0; /* no directory: a first run */
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
      snprintf(err, errn, "%s: %s", root, stat(root, &st) != 0 ? strerror(errno) : "not a directory");
      return -1;
    }
    /* Megatron's tracker file: when present it must hold an iteration or "release" (read_metadata exits on
     * anything else); 0 too, which Megatron-DeepSpeed writes for a checkpoint saved before training (its
     * hf2megads_weight_converter's) and loads through DeepSpeed's `latest` */
    char it[64];
    const int ti = read_tracker(root, "latest_checkpointed_iteration.txt", it, sizeof it, err, errn);
    if (ti < 0) return -1;
    if (ti > 0 && strcmp(it, "release") != 0) {
      char *end = NULL;
      errno = 0;
      const long long v = strtoll(it, &end, 10);
      if (errno || *end || v < 0) {
        snprintf(err, errn, "%s/latest_checkpointed_iteration.txt: invalid metadata file: \"%s\" is not an "
                 "iteration number (0 or more) or \"release\"", root, it);
        return -1;
      }
    }
    const int tl = read_tracker(root, "latest", tag_out, n, err, errn);
    if (tl <= 0) {
      tag_out[0] = '\0';
      return tl;
    }
  } else {
    snprintf(tag_out, n, "%s", tag);
  }
  const char *src = tag && *tag ? "--load-tag" : "named by latest";
  if (strchr(tag_out, '/') || !strcmp(tag_out, ".") || !strcmp(tag_out, "..")) {
    snprintf(err, errn, "%s%s names \"%s\", not a tag directory", tag && *tag ? "" : root,
             tag && *tag ? "--load-tag" : "/latest", tag_out);
    return -1;
  }
  char dir[4352];
  snprintf(dir, sizeof dir, "%s/%s", root, tag_out);
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errn, "%s: the checkpoint directory of tag %s is missing (%s)", dir, tag_out, src);
    return -2;
  }
  return 1;
}

/* The first torch file (*.pt) of dir or of dir/zero, for the message refusing a DeepSpeed universal checkpoint. */
static int find_torch_file(const char *dir, char *out, size_t n) {
  const char *const subs[] = {"", "/zero"};
  for (int i = 0; i < 2; i++) {
    char d[4400];
    snprintf(d, sizeof d, "%s%s", dir, subs[i]);
    DIR *h = opendir(d);
    if (!h) continue;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(h)) != NULL) {
      const size_t len = strlen(e->d_name);
      if ((len > 3 && strcmp(e->d_name + len - 3, ".pt") == 0) || (i == 1 && e->d_name[0] != '.')) {
        snprintf(out, n, "%s/%s", d, e->d_name);
        found = 1;
      }
    }
    closedir(h);
    if (found) return 1;
  }
  return 0;
}

int zt_ckpt_universal_tag(const char *root, char *tag_out, size_t n, char *err, size_t errn) {
  tag_out[0] = '\0';
  err[0] = '\0';
  const int t = read_tracker(root, "latest_universal", tag_out, n, err, errn);
  if (t <= 0) {
    tag_out[0] = '\0';
    return t;
  }
  if (strchr(tag_out, '/') || !strcmp(tag_out, ".") || !strcmp(tag_out, "..")) {
    snprintf(err, errn, "%s/latest_universal names \"%s\", not a tag directory", root, tag_out);
    return -1;
  }
  char dir[4400], manifest[4500];
  struct stat st;
  snprintf(dir, sizeof dir, "%s/%s", root, tag_out);
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errn, "%s/latest_universal names %s, but %s is missing", root, tag_out, dir);
    return -1;
  }
  snprintf(manifest, sizeof manifest, "%s/%s", dir, ZT_CKPT_MANIFEST);
  if (stat(manifest, &st) == 0) return 1;
  char torch[4700];
  if (find_torch_file(dir, torch, sizeof torch))
    snprintf(err, errn, "%s/latest_universal names %s, a DeepSpeed universal checkpoint (torch files: %s), which "
             "zerotron cannot read; zerotron's own checkpoints load into any TP/PP/DP/ZeRO layout as they are, so "
             "remove %s/latest_universal to load the checkpoint named by %s/latest, or write one of zerotron's tags "
             "into it (docs/checkpoints.md)", root, tag_out, torch, root, root);
  else
    snprintf(err, errn, "%s/latest_universal names %s, but %s holds no zerotron checkpoint (no %s)", root, tag_out,
             dir, ZT_CKPT_MANIFEST);
  return -1;
}

int zt_ckpt_resolve(const char *root, const char *tag, char *tag_out, size_t n) {
  char err[4600];
  const int r = zt_ckpt_discover(root, tag, tag_out, n, err, sizeof err);
  zt_check(r >= 0, "checkpoint", "%s (fix or remove it: only a missing directory or tracker file means no "
           "checkpoint)", err);
  return r;
}

static int parse_model_name(const char *s, int *mp) {
  char tail[64];
  return sscanf(s, "mp_rank_%d_%63s", mp, tail) == 2 && strcmp(tail, "model_states.h5") == 0;
}

static int parse_expert_name(const char *s, int *mp, int *layer, int *expert) {
  char tail[64];
  return sscanf(s, "layer_%d_expert_%d_mp_rank_%d_%63s", layer, expert, mp, tail) == 4 &&
         strcmp(tail, "model_states.h5") == 0;
}

static int parse_optim_name(const char *s, int *dp, int *mp) {
  char tail[64];
  if (strncmp(s, "bf16_", 5) == 0) s += 5;
  return sscanf(s, "zero_pp_rank_%d_mp_rank_%d_%63s", dp, mp, tail) == 3 && strcmp(tail, "optim_states.h5") == 0;
}

static void check_format(const zt_h5 *f, const char *kind) {
  char *fmt = zt_h5_has_attr(f->id, "zt_format") ? zt_h5_get_str(f, f->id, "/", "zt_format") : strdup("");
  zt_check(strcmp(fmt, ZT_CKPT_FORMAT) == 0, "checkpoint", "%s: not a zerotron checkpoint file (zt_format \"%s\")",
           f->path, fmt);
  free(fmt);
  int64_t v = zt_h5_get_i64(f, f->id, "/", "zt_format_version");
  zt_check(v >= 1 && v <= ZT_CKPT_FORMAT_VERSION, "checkpoint", "%s: format version %lld; this build reads versions "
           "1 to %d", f->path, (long long)v, ZT_CKPT_FORMAT_VERSION);
  char *k = zt_h5_get_str(f, f->id, "/", "file_kind");
  zt_check(strcmp(k, kind) == 0, "checkpoint", "%s: file_kind \"%s\", expected \"%s\"", f->path, k, kind);
  free(k);
}

/* A file of the tag records the iteration of mp_rank_00's (files of different saves are never mixed). */
static void same_iteration(const zt_ckpt_reader *r, const zt_h5 *f) {
  const int64_t it = zt_h5_get_i64(f, f->id, "/", "iteration");
  zt_check(it == r->iteration, "checkpoint", "%s: saved at iteration %lld, but %s at iteration %lld: files of "
           "different saves mixed in one checkpoint; refusing to load it", f->path, (long long)it, r->model[0].path,
           (long long)r->iteration);
}

static zt_dtype dtype_named(const zt_h5 *f, const char *s) {
  if (strcmp(s, "fp16") == 0) return ZT_DTYPE_FP16;
  if (strcmp(s, "bf16") == 0) return ZT_DTYPE_BF16;
  zt_check(strcmp(s, "fp32") == 0, "checkpoint", "%s: weights dtype \"%s\"", f->path, s);
  return ZT_DTYPE_FP32;
}

/* Adds the tensors of one model file (efile -1) or expert file (its index) to the union. */
static void collect_tensors(zt_ckpt_reader *r, const zt_h5 *f, int efile) {
  hid_t g = zt_h5_group_open(f, f->id, "module");
  char **names = NULL;
  size_t n = zt_h5_read_strings(f, f->id, "param_names", &names);
  for (size_t i = 0; i < n; i++) {
    if (zt_ckpt_find(r, names[i]) >= 0) continue;
    r->tensors = realloc(r->tensors, (size_t)(r->n_tensors + 1) * sizeof(zt_ckpt_tensor));
    zt_ckpt_tensor *t = &r->tensors[r->n_tensors++];
    memset(t, 0, sizeof *t);
    t->efile = efile;
    zt_check(strlen(names[i]) < sizeof t->name, "checkpoint", "%s: parameter name %s is too long", f->path, names[i]);
    snprintf(t->name, sizeof t->name, "%s", names[i]);
    hid_t d = H5Dopen2(g, names[i], H5P_DEFAULT);
    zt_check(d >= 0, "checkpoint", "%s: dataset /module/%s (listed in param_names) is missing", f->path, names[i]);
    char where[200];
    snprintf(where, sizeof where, "/module/%s", names[i]);
    t->ndim = zt_h5_get_i64v(f, d, where, "full_shape", t->full_shape, ZT_MAX_DIMS);
    const int64_t split = zt_h5_get_i64(f, d, where, "tp_split_dim");
    zt_check(split >= -1 && split < t->ndim, "checkpoint", "%s: %s: tp_split_dim %lld for %d dimensions", f->path,
             where, (long long)split, t->ndim);
    t->tp_split_dim = (int)split;
    /* a tensor of blocks split each (SwiGLU's dense_h_to_4h); files of earlier builds have no such attribute */
    t->tp_parts = zt_h5_has_attr(d, "tp_parts") ? (int)zt_h5_get_i64(f, d, where, "tp_parts") : 1;
    zt_check(t->tp_parts >= 1 && (t->tp_parts == 1 || (t->tp_split_dim == 0 && t->full_shape[0] % t->tp_parts == 0)),
             "checkpoint", "%s: %s: tp_parts %d for split dimension %d of %lld rows", f->path, where, t->tp_parts,
             t->tp_split_dim, (long long)t->full_shape[0]);
    /* the full shape is only believed as far as the files hold it: each model file holds at most its local
     * dataset of the tensor (checked against the stored bytes), so the full tensor is at most mp_size of those */
    int64_t local[8];
    const int lnd = zt_h5_tensor_shape(f, g, names[i], local, NULL);
    zt_check(lnd == t->ndim, "checkpoint", "%s: %s has %d dimensions, its full_shape %d", f->path, where, lnd, t->ndim);
    t->numel = 1;
    for (int k = 0; k < t->ndim; k++) {
      zt_check(t->full_shape[k] >= 0 && (k == t->tp_split_dim ? local[k] <= t->full_shape[k] :
                                                                 local[k] == t->full_shape[k]),
               "checkpoint", "%s: %s: dimension %d is %lld, its full_shape %lld (split dimension %d)", f->path, where,
               k, (long long)local[k], (long long)t->full_shape[k], t->tp_split_dim);
      t->numel *= (size_t)t->full_shape[k];
    }
    zt_check(t->tp_split_dim < 0 || t->full_shape[t->tp_split_dim] <= local[t->tp_split_dim] * (int64_t)r->mp_size,
             "checkpoint", "%s: %s: full_shape dimension %d is %lld, more than the %d model files can hold (%lld each)",
             f->path, where, t->tp_split_dim, (long long)t->full_shape[t->tp_split_dim], r->mp_size,
             (long long)local[t->tp_split_dim]);
    t->tied_group = (int)zt_h5_get_i64(f, d, where, "tied_group");
    t->no_weight_decay = (int)zt_h5_get_i64(f, d, where, "no_weight_decay");
    t->expert_id = (int)zt_h5_get_i64(f, d, where, "expert_id");
    char *dt = zt_h5_get_str(f, d, where, "dtype");
    t->dtype = dtype_named(f, dt);
    free(dt);
    H5Dclose(d);
  }
  zt_h5_free_strings(names, n);
  H5Gclose(g);
}

static void read_map(const zt_h5 *f, zt_ckpt_slice_map *m) {
  hid_t g = zt_h5_group_open(f, f->id, "param_slice_mappings");
  m->n = zt_h5_read_strings(f, g, "names", &m->names);
  int64_t *cols[3];
  static const char *const col_names[3] = {"start", "numel", "param_offset"};
  for (int c = 0; c < 3; c++) {
    cols[c] = zt_malloc((m->n + 1) * sizeof(int64_t), "slice mapping");
    hid_t d = zt_h5_exists(g, col_names[c]) ? H5Dopen2(g, col_names[c], H5P_DEFAULT) : -1;
    zt_check(d >= 0, "checkpoint", "%s: /param_slice_mappings/%s is missing", f->path, col_names[c]);
    hid_t sp = H5Dget_space(d);
    zt_check((size_t)H5Sget_simple_extent_npoints(sp) == m->n &&
                 (m->n == 0 || H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, cols[c]) >= 0),
             "checkpoint", "%s: /param_slice_mappings/%s does not hold %zu integers", f->path, col_names[c], m->n);
    H5Sclose(sp);
    H5Dclose(d);
  }
  for (size_t k = 0; k < m->n; k++)
    for (int c = 0; c < 3; c++)
      zt_check(cols[c][k] >= 0 && cols[c][k] <= ((int64_t)1 << 46), "checkpoint", "%s: /param_slice_mappings/%s[%zu] "
               "is %lld", f->path, col_names[c], k, (long long)cols[c][k]);
  m->start = cols[0];
  m->numel = cols[1];
  m->param_offset = cols[2];
  H5Gclose(g);
}

void zt_ckpt_open(zt_ckpt_reader *r, const char *root, const char *tag) { zt_ckpt_open_ex(r, root, tag, 1); }

const char *zt_ckpt_tool_dir(const char *dir, const char *tag, char *root, size_t n, char *tagbuf, size_t tn) {
  snprintf(root, n, "%s", dir);
  char manifest[4400];
  snprintf(manifest, sizeof manifest, "%s/%s", dir, ZT_CKPT_MANIFEST);
  struct stat st;
  if (tag || stat(manifest, &st) != 0) return tag;
  /* a tag folder given directly: its parent is the root */
  size_t len = strlen(root);
  while (len > 1 && root[len - 1] == '/') root[--len] = '\0';
  char *slash = strrchr(root, '/');
  snprintf(tagbuf, tn, "%s", slash ? slash + 1 : root);
  if (slash) *slash = '\0';
  else snprintf(root, n, ".");
  return tagbuf;
}

static void open_tag(zt_ckpt_reader *r, const char *root, const char *tag, int verify);
static int local_slice(const zt_ckpt_reader *r, int m, const zt_ckpt_tensor *t, int64_t *offset, int64_t *len,
                       size_t *numel);

/* In a child process (zt_h5_in_child): the reader's metadata reads of the tag r->dir (open, tensor table, slice
 * maps, every tensor's slice in every model file, every optimizer state's shape, dtype and crc32c) and a walk of
 * every file; the data of contiguous datasets (plain reads at a checked offset and size) are left out. A refusal
 * anywhere here is the parent's (zt_h5_child_forward_refusals), also for a part of the files that the parent's
 * tool would not read (zero_to_fp32 and the optimizer's moments, say): those files are damaged. */
static void dry_run(void *arg) {
  const zt_ckpt_reader *p = arg;
  zt_ckpt_reader r; /* first exactly the parent's sequence of reads (HDF5's caches then match), then the rest */
  memset(&r, 0, sizeof r);
  zt_h5_child_forward_refusals(1); /* a refusal here is the parent's: the files are damaged or inconsistent */
  open_tag(&r, p->root, p->tag, 0);
  for (int i = 0; i < r.n_tensors; i++)
    for (int m = 0; m < r.mp_size; m++) {
      int64_t off, len;
      size_t n;
      local_slice(&r, m, &r.tensors[i], &off, &len, &n);
    }
  static const char *const states[4] = {"fp32", "exp_avg", "exp_avg_sq", "momentum_buffer"};
  for (int k = 0; r.has_optim && k < r.mp_size * r.dp_size; k++) {
    const zt_h5 *f = &r.optim[k];
    hid_t g = zt_h5_group_open(f, f->id, "state");
    for (int s = 0; s < 4; s++)
      if (zt_h5_exists(g, states[s])) {
        int64_t shape[8];
        zt_dtype dt;
        zt_h5_tensor_shape(f, g, states[s], shape, &dt);
        hid_t d = H5Dopen2(g, states[s], H5P_DEFAULT);
        zt_h5_get_i64(f, d, states[s], "crc32c");
        H5Dclose(d);
      }
    H5Gclose(g);
  }
  zt_ckpt_close(&r);
  for (int i = 0; i < p->n_files; i++) {
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", p->dir, p->files[i]);
    zt_h5_walk(path);
  }
}

void zt_ckpt_open_ex(zt_ckpt_reader *r, const char *root, const char *tag, int verify) {
  open_tag(r, root, tag, verify);
}

static void open_tag(zt_ckpt_reader *r, const char *root, const char *tag, int verify) {
  memset(r, 0, sizeof *r);
  snprintf(r->root, sizeof r->root, "%s", root);
  zt_check(zt_ckpt_resolve(root, tag, r->tag, sizeof r->tag), "checkpoint",
           "%s: no checkpoint (no %s/latest file; pass a tag explicitly)", root, root);
  snprintf(r->dir, sizeof r->dir, "%s/%s", root, r->tag);
  r->n_files = zt_ckpt_manifest_check(r->dir, &r->files, verify);
  if (verify) /* HDF5 crashes or spins on some damaged files: the same reads in a child process first */
    zt_h5_in_child(r->dir, dry_run, r);

  int mp_max = -1, dp_max = -1, n_model = 0, n_optim = 0;
  for (int i = 0; i < r->n_files; i++) {
    int mp, dp;
    if (parse_model_name(r->files[i], &mp)) {
      n_model++;
      if (mp > mp_max) mp_max = mp;
    } else if (parse_optim_name(r->files[i], &dp, &mp)) {
      n_optim++;
      if (dp > dp_max) dp_max = dp;
    }
  }
  zt_check(n_model > 0, "checkpoint", "%s: no mp_rank_XX_model_states.h5 file", r->dir);
  zt_check(n_model == mp_max + 1, "checkpoint", "%s: %d model-state files for model-parallel ranks 0..%d", r->dir,
           n_model, mp_max);
  r->mp_size = n_model;
  r->model = zt_calloc((size_t)r->mp_size, sizeof(zt_h5), "checkpoint files");
  for (int i = 0; i < r->n_files; i++) {
    int mp;
    if (!parse_model_name(r->files[i], &mp)) continue;
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", r->dir, r->files[i]);
    zt_h5_open(&r->model[mp], path);
    check_format(&r->model[mp], "model_states");
  }
  const zt_h5 *m0 = &r->model[0];
  r->tp_size = (int)zt_h5_get_i64(m0, m0->id, "/", "tp_world_size");
  r->pp_size = (int)zt_h5_get_i64(m0, m0->id, "/", "pp_world_size");
  r->dp_size = (int)zt_h5_get_i64(m0, m0->id, "/", "dp_world_size");
  zt_check(r->tp_size * r->pp_size == r->mp_size, "checkpoint", "%s: %d model-state files, but tp_world_size %d x "
           "pp_world_size %d", r->dir, r->mp_size, r->tp_size, r->pp_size);
  r->iteration = zt_h5_get_i64(m0, m0->id, "/", "iteration");
  r->consumed_train_samples = zt_h5_get_i64(m0, m0->id, "/", "consumed_train_samples");
  r->consumed_valid_samples = zt_h5_get_i64(m0, m0->id, "/", "consumed_valid_samples");
  r->tokens = zt_h5_get_i64(m0, m0->id, "/", "tokens");
  r->random_ltd_layer_tokens = zt_h5_has_attr(m0->id, "random_ltd_consumed_layer_tokens")
                                   ? zt_h5_get_i64(m0, m0->id, "/", "random_ltd_consumed_layer_tokens") : -1;
  r->data_sampler_step = zt_h5_has_attr(m0->id, "data_sampler_curriculum_step")
                             ? zt_h5_get_i64(m0, m0->id, "/", "data_sampler_curriculum_step") : -1;
  r->data_sampler_digest = zt_h5_has_attr(m0->id, "data_sampler_digest")
                               ? (uint64_t)zt_h5_get_i64(m0, m0->id, "/", "data_sampler_digest") : 0;
  r->skipped_steps = zt_h5_get_i64(m0, m0->id, "/", "skipped_steps");
  r->vocab_size = zt_h5_get_i64(m0, m0->id, "/", "vocab_size");
  r->padded_vocab_size = zt_h5_get_i64(m0, m0->id, "/", "padded_vocab_size");
  r->zero_stage = (int)zt_h5_get_i64(m0, m0->id, "/", "zero_stage");
  char *dt = zt_h5_get_str(m0, m0->id, "/", "dtype");
  r->weights_dtype = dtype_named(m0, dt);
  free(dt);
  r->args_text = zt_h5_get_str(m0, m0->id, "/", "args");
  r->ds_config = zt_h5_get_str(m0, m0->id, "/", "ds_config");
  /* every file of the tag must come from the same save: the iteration each file records (and the tag's own
   * global_step<N>) agree */
  long long tag_it = -1;
  char tail = 0;
  if (sscanf(r->tag, "global_step%lld%c", &tag_it, &tail) != 1) tag_it = -1;
  zt_check(tag_it < 0 || tag_it == r->iteration, "checkpoint", "%s: saved at iteration %lld, in the tag directory of "
           "iteration %lld: a file of another save; refusing to load it", m0->path, (long long)r->iteration, tag_it);
  for (int m = 1; m < r->mp_size; m++)
    same_iteration(r, &r->model[m]);
  for (int m = 0; m < r->mp_size; m++) collect_tensors(r, &r->model[m], -1);
  for (int i = 0; i < r->n_files; i++) { /* the experts' own files (an MoE checkpoint: DeepSpeed's layout) */
    int mp, layer, expert;
    if (!parse_expert_name(r->files[i], &mp, &layer, &expert)) continue;
    zt_check(mp >= 0 && mp < r->mp_size, "checkpoint", "%s/%s: model-parallel rank %d of %d", r->dir, r->files[i], mp,
             r->mp_size);
    r->experts = realloc(r->experts, (size_t)(r->n_experts + 1) * sizeof(zt_h5));
    r->expert_mp = realloc(r->expert_mp, (size_t)(r->n_experts + 1) * sizeof(int));
    r->expert_key = realloc(r->expert_key, (size_t)(r->n_experts + 1) * 2 * sizeof(int));
    zt_check(r->experts && r->expert_mp && r->expert_key, "checkpoint", "out of memory for %d expert files",
             r->n_experts + 1);
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", r->dir, r->files[i]);
    zt_h5 *f = &r->experts[r->n_experts];
    zt_h5_open(f, path);
    r->expert_key[2 * r->n_experts] = layer, r->expert_key[2 * r->n_experts + 1] = expert;
    r->expert_mp[r->n_experts++] = mp;
    check_format(f, "expert_states");
    same_iteration(r, f);
    collect_tensors(r, f, r->n_experts - 1);
  }

  if (n_optim > 0) {
    zt_check(n_optim == r->mp_size * r->dp_size && dp_max + 1 == r->dp_size, "checkpoint",
             "%s: %d optimizer-state files, expected dp_world_size %d x %d model-parallel ranks", r->dir, n_optim,
             r->dp_size, r->mp_size);
    r->has_optim = 1;
    r->verified = zt_calloc((size_t)n_optim * 4, 1, "checkpoint dataset checks");
    r->optim = zt_calloc((size_t)n_optim, sizeof(zt_h5), "checkpoint files");
    r->maps = zt_calloc((size_t)n_optim, sizeof(zt_ckpt_slice_map), "checkpoint slice maps");
    for (int i = 0; i < r->n_files; i++) {
      int dp, mp;
      if (!parse_optim_name(r->files[i], &dp, &mp)) continue;
      zt_check(mp < r->mp_size, "checkpoint", "%s/%s: model-parallel rank %d of %d", r->dir, r->files[i], mp,
               r->mp_size);
      char path[8800];
      snprintf(path, sizeof path, "%s/%s", r->dir, r->files[i]);
      zt_h5 *f = &r->optim[mp * r->dp_size + dp];
      zt_h5_open(f, path);
      check_format(f, "optim_states");
      same_iteration(r, f);
      read_map(f, &r->maps[mp * r->dp_size + dp]);
    }
    char *o = zt_h5_get_str(&r->optim[0], r->optim[0].id, "/", "optimizer");
    snprintf(r->optimizer, sizeof r->optimizer, "%s", o);
    free(o);
  }
}

void zt_ckpt_close(zt_ckpt_reader *r) {
  for (int m = 0; m < r->mp_size; m++) zt_h5_close(&r->model[m]);
  for (int k = 0; k < r->n_experts; k++) zt_h5_close(&r->experts[k]);
  free(r->experts), free(r->expert_mp), free(r->expert_key);
  if (r->has_optim)
    for (int i = 0; i < r->mp_size * r->dp_size; i++) {
      zt_h5_close(&r->optim[i]);
      zt_h5_free_strings(r->maps[i].names, r->maps[i].n);
      free(r->maps[i].start);
      free(r->maps[i].numel);
      free(r->maps[i].param_offset);
    }
  free(r->model);
  free(r->optim);
  free(r->maps);
  free(r->verified);
  free(r->tensors);
  free(r->args_text);
  free(r->ds_config);
  for (int i = 0; i < r->n_files; i++) free(r->files[i]);
  free(r->files);
  memset(r, 0, sizeof *r);
}

int zt_ckpt_find(const zt_ckpt_reader *r, const char *name) {
  for (int i = 0; i < r->n_tensors; i++)
    if (strcmp(r->tensors[i].name, name) == 0) return i;
  return -1;
}

void zt_ckpt_slice_copy(float *dst, const float *src, int ndim, const int64_t *full, int dim, int64_t offset,
                        int64_t len, int to_full, int parts) {
  if (parts > 1) {
    zt_check(dim == 0 && full[0] % parts == 0 && len % parts == 0 && offset % parts == 0, "checkpoint", "a tensor of "
             "%d blocks split along dimension %d: %lld rows, a slice of %lld at %lld", parts, dim, (long long)full[0],
             (long long)len, (long long)offset);
    size_t inner = 1;
    for (int k = 1; k < ndim; k++) inner *= (size_t)full[k];
    const size_t F = (size_t)(full[0] / parts), L = (size_t)(len / parts), off = (size_t)(offset / parts);
    for (int j = 0; j < parts; j++) {
      float *fp = (to_full ? dst : (float *)src) + ((size_t)j * F + off) * inner;
      float *lp = (to_full ? (float *)src : dst) + (size_t)j * L * inner;
      if (to_full) memcpy(fp, lp, L * inner * sizeof(float));
      else memcpy(lp, fp, L * inner * sizeof(float));
    }
    return;
  }
  size_t outer = 1, inner = 1;
  for (int k = 0; k < dim; k++) outer *= (size_t)full[k];
  for (int k = dim + 1; k < ndim; k++) inner *= (size_t)full[k];
  const size_t F = (size_t)full[dim], L = (size_t)len;
  for (size_t o = 0; o < outer; o++) {
    float *fp = (to_full ? dst : (float *)src) + (o * F + (size_t)offset) * inner;
    float *lp = (to_full ? (float *)src : dst) + o * L * inner;
    if (to_full) memcpy(fp, lp, L * inner * sizeof(float));
    else memcpy(lp, fp, L * inner * sizeof(float));
  }
}

/* The file of model-parallel rank m that may hold tensor t: its model-state file, or for an expert's tensor rank m's
 * file of the same MoE layer and expert as the file it was found in (each tensor-parallel rank writes one; with
 * --enable-expert-tensor-parallelism each holds its slice); NULL where m has none. */
static const zt_h5 *tensor_file(const zt_ckpt_reader *r, int m, const zt_ckpt_tensor *t) {
  if (t->efile < 0) return &r->model[m];
  if (r->expert_mp[t->efile] == m) return &r->experts[t->efile];
  const int *key = r->expert_key + 2 * t->efile;
  for (int k = 0; k < r->n_experts; k++)
    if (r->expert_mp[k] == m && r->expert_key[2 * k] == key[0] && r->expert_key[2 * k + 1] == key[1])
      return &r->experts[k];
  return NULL;
}

/* Where model-parallel rank m's file holds tensor t: its local shape along the split dimension (len) and offset.
 * Returns 0 when the file does not hold it. */
static int local_slice(const zt_ckpt_reader *r, int m, const zt_ckpt_tensor *t, int64_t *offset, int64_t *len,
                       size_t *numel) {
  const zt_h5 *f = tensor_file(r, m, t);
  if (!f) return 0;
  hid_t g = zt_h5_group_open(f, f->id, "module");
  if (!zt_h5_exists(g, t->name)) {
    H5Gclose(g);
    return 0;
  }
  int64_t shape[8];
  int nd = zt_h5_tensor_shape(f, g, t->name, shape, NULL);
  zt_check(nd == t->ndim, "checkpoint", "%s: /module/%s has %d dimensions, its full_shape %d", f->path, t->name, nd,
           t->ndim);
  hid_t d = H5Dopen2(g, t->name, H5P_DEFAULT);
  char where[200];
  snprintf(where, sizeof where, "/module/%s", t->name);
  *offset = zt_h5_get_i64(f, d, where, "slice_offset");
  H5Dclose(d);
  H5Gclose(g);
  *numel = 1;
  for (int k = 0; k < nd; k++) {
    *numel *= (size_t)shape[k];
    const int split = k == t->tp_split_dim;
    zt_check(split || shape[k] == t->full_shape[k], "checkpoint", "%s: /module/%s dimension %d is %lld, full shape "
             "%lld (not the split dimension %d)", f->path, t->name, k, (long long)shape[k],
             (long long)t->full_shape[k], t->tp_split_dim);
  }
  *len = t->tp_split_dim >= 0 ? shape[t->tp_split_dim] : 0;
  if (t->tp_split_dim >= 0)
    zt_check(*offset >= 0 && *offset + *len <= t->full_shape[t->tp_split_dim], "checkpoint", "%s: /module/%s slice "
             "[%lld, %lld) along dimension %d exceeds the full size %lld", f->path, t->name, (long long)*offset,
             (long long)(*offset + *len), t->tp_split_dim, (long long)t->full_shape[t->tp_split_dim]);
  return 1;
}

/* Assembles the full tensor from per-mp-rank local tensors; fetch(m, local) fills model file m's slice. */
static void assemble(const zt_ckpt_reader *r, int i, float *out, const char *what,
                     void (*fetch)(const zt_ckpt_reader *, int, int, const char *, float *, size_t), const char *state) {
  const zt_ckpt_tensor *t = &r->tensors[i];
  size_t covered = 0;
  float *local = NULL;
  for (int m = 0; m < r->mp_size && covered < t->numel; m++) {
    int64_t off, len;
    size_t n;
    if (!local_slice(r, m, t, &off, &len, &n)) continue;
    if (t->tp_split_dim < 0 || n == t->numel) {
      fetch(r, m, i, state, out, n);
      covered = t->numel;
      break;
    }
    local = realloc(local, n * sizeof(float) + 1);
    fetch(r, m, i, state, local, n);
    zt_ckpt_slice_copy(out, local, t->ndim, t->full_shape, t->tp_split_dim, off, len, 1, t->tp_parts);
    covered += n;
  }
  free(local);
  zt_check(covered == t->numel, "checkpoint", "%s: the %s of %s cover %zu of its %zu elements", r->dir, what, t->name,
           covered, t->numel);
}

static void fetch_weights(const zt_ckpt_reader *r, int m, int i, const char *state, float *out, size_t n) {
  const zt_h5 *f = tensor_file(r, m, &r->tensors[i]);
  hid_t g = zt_h5_group_open(f, f->id, "module");
  zt_h5_read_tensor(f, g, r->tensors[i].name, out, n);
  H5Gclose(g);
}

static int state_slot(const char *state) {
  return !strcmp(state, "fp32") ? 0 : !strcmp(state, "exp_avg") ? 1 : !strcmp(state, "exp_avg_sq") ? 2 : 3;
}

/* The local (tensor-parallel slice) flat state of tensor i on mp rank m, from its data-parallel partitions. */
static void fetch_state(const zt_ckpt_reader *r, int m, int i, const char *state, float *out, size_t n) {
  const char *name = r->tensors[i].name;
  size_t covered = 0;
  for (int dp = 0; dp < r->dp_size; dp++) {
    const zt_h5 *f = &r->optim[m * r->dp_size + dp];
    const zt_ckpt_slice_map *map = &r->maps[m * r->dp_size + dp];
    for (size_t k = 0; k < map->n; k++) {
      if (strcmp(map->names[k], name) != 0) continue;
      zt_check(map->param_offset[k] >= 0 && (size_t)(map->param_offset[k] + map->numel[k]) <= n, "checkpoint",
               "%s: slice of %s [%lld, %lld) exceeds its %zu elements", f->path, name, (long long)map->param_offset[k],
               (long long)(map->param_offset[k] + map->numel[k]), n);
      hid_t g = zt_h5_group_open(f, f->id, "state");
      zt_check(zt_h5_exists(g, state), "checkpoint", "%s: optimizer state %s is missing (optimizer %s)", f->path, state,
               r->optimizer);
      /* the dataset's own crc32c, once, before any range of it is used: the manifest's check of the whole file
       * does not catch a changed value under a recomputed manifest */
      unsigned char *done = &r->verified[(size_t)(m * r->dp_size + dp) * 4 + state_slot(state)];
      if (!*done) zt_h5_verify_tensor(f, g, state);
      *done = 1;
      zt_h5_read_range(f, g, state, (size_t)map->start[k], (size_t)map->numel[k], out + map->param_offset[k]);
      H5Gclose(g);
      covered += (size_t)map->numel[k];
    }
  }
  zt_check(covered == n, "checkpoint", "%s: the optimizer partitions of model-parallel rank %d hold %zu of the %zu "
           "elements of %s", r->dir, m, covered, n, name);
}

void zt_ckpt_read_weights(const zt_ckpt_reader *r, int i, float *out) {
  assemble(r, i, out, "weight slices", fetch_weights, NULL);
}

void zt_ckpt_read_state(const zt_ckpt_reader *r, int i, const char *state, float *out) {
  zt_check(r->has_optim, "checkpoint", "%s: no optimizer states (saved with --no-save-optim)", r->dir);
  assemble(r, i, out, "optimizer partitions", fetch_state, state);
}

int zt_ckpt_arg(const char *text, const char *name, char *buf, size_t n) {
  return zt_args_summary_value(text, name, buf, n);
}

char *zt_ckpt_saved_args(const char *root, const char *tag) {
  char t[256];
  if (!zt_ckpt_resolve(root, tag, t, sizeof t)) return NULL;
  zt_ckpt_reader r;
  zt_ckpt_open_ex(&r, root, t, 0); /* only the arguments are read here; --load verifies everything */
  char *s = strdup(r.args_text);
  zt_ckpt_close(&r);
  return s;
}
