/* zero_to_fp32: DeepSpeed's zero_to_fp32.py for zerotron checkpoints. Consolidates the full fp32 weights of a
 * checkpoint (the fp32 master weights from the optimizer partitions when the checkpoint has them, else the saved
 * weights) into safetensors (--safe_serialization) or HDF5 files, sharded with Hugging Face's naming and an index
 * json above --max_shard_size. Streams one tensor at a time, so memory stays near the largest tensor; a progress
 * bar on a terminal. docs/checkpoints.md. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/ckpt_fs.h"
#include "checkpoints/ckpt_reader.h"
#include "checkpoints/h5io.h"
#include "checkpoints/safetensors.h"
#include "runtime/base/error.h"

static void usage(FILE *to) {
  fprintf(to, "usage: zero_to_fp32 [-h] [--max_shard_size MAX_SHARD_SIZE] [--safe_serialization] [-t TAG]\n"
              "                    [--exclude_frozen_parameters] [-d] checkpoint_dir output_dir\n\n"
              "positional arguments:\n"
              "  checkpoint_dir        path to the desired checkpoint folder, e.g., path/checkpoint-12 (holding\n"
              "                        `latest`), or a tag folder itself (path/checkpoint-12/global_step12)\n"
              "  output_dir            directory to the pytorch fp32 state_dict output files\n"
              "                        (e.g. path/checkpoint-12-output/)\n\n"
              "options:\n"
              "  --max_shard_size MAX_SHARD_SIZE\n"
              "                        largest shard, e.g. 5GB (default), 500MB, 10KB or bytes; larger states\n"
              "                        are split into shards named as Hugging Face names them, with an index json\n"
              "  --safe_serialization  write safetensors (model.safetensors); without it: HDF5 (model.h5, since\n"
              "                        zerotron writes no pickles)\n"
              "  -t TAG, --tag TAG     checkpoint tag used as a unique identifier, e.g. global_step1 (default:\n"
              "                        the contents of `latest`)\n"
              "  --exclude_frozen_parameters\n"
              "                        exclude frozen parameters (zerotron checkpoints have none)\n"
              "  -d, --debug           print each tensor\n");
}

/* Hugging Face's parse_size_to_int: decimal KB/MB/GB/TB (and KiB/MiB/GiB binary), or bytes. */
static uint64_t parse_size(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  zt_check(end != s && v > 0 && errno == 0, "bad argument value", "--max_shard_size %s: expected a size such as 5GB, "
           "500MB or a number of bytes", s);
  while (*end == ' ') end++;
  char unit[8] = "";
  for (int i = 0; end[i] && i < 7; i++) unit[i] = (char)toupper((unsigned char)end[i]);
  static const struct { const char *u; double m; } units[] = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
      {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(unit, units[i].u) == 0) return (uint64_t)(v * units[i].m);
  zt_fatal("bad argument value", "--max_shard_size %s: unknown unit \"%s\" (use KB, MB, GB, TB, KiB, MiB, GiB or "
           "bytes)", s, end);
}

typedef struct {
  int first, count;   /* tensors [first, first + count) in shard order */
  uint64_t bytes;
} shard;

static void progress(int done, int total, uint64_t bytes) {
  if (!isatty(2)) return;
  const int width = 30, fill = total ? done * width / total : width;
  fprintf(stderr, "\r[%.*s%*s] %d/%d tensors, %.1f MB", fill, "##############################", width - fill, "",
          done, total, (double)bytes / 1e6);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

int main(int argc, char **argv) {
  const char *pos[2] = {NULL, NULL}, *tag = NULL, *max_shard = "5GB";
  int npos = 0, safe = 0, debug = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--safe_serialization")) {
      safe = 1;
    } else if (!strcmp(a, "--exclude_frozen_parameters")) {
    } else if (!strcmp(a, "-d") || !strcmp(a, "--debug")) {
      debug = 1;
    } else if (!strcmp(a, "-t") || !strcmp(a, "--tag") || !strcmp(a, "--max_shard_size")) {
      zt_check(i + 1 < argc, "missing argument value", "%s expects one value", a);
      if (!strcmp(a, "--max_shard_size")) max_shard = argv[++i];
      else tag = argv[++i];
    } else if (!strncmp(a, "--tag=", 6)) {
      tag = a + 6;
    } else if (!strncmp(a, "--max_shard_size=", 17)) {
      max_shard = a + 17;
    } else if (a[0] == '-') {
      usage(stderr);
      zt_fatal("unrecognized argument", "%s", a);
    } else {
      zt_check(npos < 2, "unrecognized argument", "%s: zero_to_fp32 takes checkpoint_dir and output_dir", a);
      pos[npos++] = a;
    }
  }
  if (npos != 2) {
    usage(stderr);
    zt_fatal("missing argument", "the following arguments are required: %s", npos == 0 ? "checkpoint_dir, output_dir"
                                                                                      : "output_dir");
  }
  const uint64_t limit = parse_size(max_shard);

  char root[4096], tagbuf[256];
  tag = zt_ckpt_tool_dir(pos[0], tag, root, sizeof root, tagbuf, sizeof tagbuf);
  if (!tag) {
    char probe[256];
    zt_check(zt_ckpt_read_text(pos[0], "latest", probe, sizeof probe), "checkpoint", "Unable to find 'latest' file "
             "at %s/latest (pass --tag, or the tag folder itself)", pos[0]);
  }
  zt_ckpt_reader r;
  zt_ckpt_open(&r, root, tag);
  printf("Processing zero checkpoint '%s'\n", r.dir);
  printf("Detected checkpoint of type zero stage %d, world_size: %d (tensor parallel %d, pipeline parallel %d)\n",
         r.zero_stage, r.dp_size, r.tp_size, r.pp_size);
  printf("Reading the %s\n", r.has_optim ? "fp32 master weights of the optimizer partitions"
                                         : "saved weights (no optimizer states in this checkpoint)");

  /* Hugging Face's split: greedy in order; a tensor above the limit gets a shard of its own */
  shard *shards = zt_calloc((size_t)r.n_tensors + 1, sizeof(shard), "shards");
  int *order = zt_malloc(((size_t)r.n_tensors + 1) * sizeof(int), "shard order");
  int nsh = 0, k = 0;
  uint64_t total = 0;
  {
    int *cur = zt_malloc(((size_t)r.n_tensors + 1) * sizeof(int), "shard"), ncur = 0;
    uint64_t cur_bytes = 0;
    for (int i = 0; i < r.n_tensors; i++) {
      const uint64_t b = (uint64_t)r.tensors[i].numel * 4;
      total += b;
      if (b > limit) {
        shards[nsh++] = (shard){.first = k, .count = 1, .bytes = b};
        order[k++] = i;
        continue;
      }
      if (ncur > 0 && cur_bytes + b > limit) {
        shards[nsh++] = (shard){.first = k, .count = ncur, .bytes = cur_bytes};
        for (int j = 0; j < ncur; j++) order[k++] = cur[j];
        ncur = 0;
        cur_bytes = 0;
      }
      cur[ncur++] = i;
      cur_bytes += b;
    }
    if (ncur > 0) {
      shards[nsh++] = (shard){.first = k, .count = ncur, .bytes = cur_bytes};
      for (int j = 0; j < ncur; j++) order[k++] = cur[j];
    }
    free(cur);
  }
  zt_ckpt_mkdirs(pos[1]);
  const char *ext = safe ? "safetensors" : "h5";
  char **names = zt_calloc((size_t)nsh, sizeof(char *), "shard names");
  for (int s = 0; s < nsh; s++) {
    names[s] = zt_malloc(64, "shard name");
    if (nsh == 1) snprintf(names[s], 64, "model.%s", ext);
    else snprintf(names[s], 64, "model-%05d-of-%05d.%s", s + 1, nsh, ext);
  }
  size_t maxn = 1;
  for (int i = 0; i < r.n_tensors; i++)
    if (r.tensors[i].numel > maxn) maxn = r.tensors[i].numel;
  float *buf = zt_malloc(maxn * sizeof(float), "tensor buffer");
  int done = 0;
  uint64_t written = 0, elements = 0;
  for (int s = 0; s < nsh; s++) {
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", pos[1], names[s]);
    if (safe) {
      zt_st_entry *ent = zt_calloc((size_t)shards[s].count, sizeof(zt_st_entry), "safetensors entries");
      for (int j = 0; j < shards[s].count; j++) {
        const zt_ckpt_tensor *t = &r.tensors[order[shards[s].first + j]];
        snprintf(ent[j].name, sizeof ent[j].name, "%s", t->name);
        ent[j].ndim = t->ndim;
        memcpy(ent[j].shape, t->full_shape, (size_t)t->ndim * sizeof(int64_t));
      }
      zt_st_writer w;
      zt_st_begin(&w, path, ent, shards[s].count);
      for (int j = 0; j < shards[s].count; j++) {
        const int i = order[shards[s].first + j];
        if (r.has_optim) zt_ckpt_read_state(&r, i, "fp32", buf);
        else zt_ckpt_read_weights(&r, i, buf);
        zt_st_write(&w, buf, r.tensors[i].numel);
        written += r.tensors[i].numel * 4;
        elements += r.tensors[i].numel;
        if (debug) printf("%s: %zu elements\n", r.tensors[i].name, r.tensors[i].numel);
        progress(++done, r.n_tensors, written);
      }
      zt_st_end(&w);
      free(ent);
    } else {
      zt_h5 f;
      zt_h5_create(&f, path);
      for (int j = 0; j < shards[s].count; j++) {
        const int i = order[shards[s].first + j];
        const zt_ckpt_tensor *t = &r.tensors[i];
        if (r.has_optim) zt_ckpt_read_state(&r, i, "fp32", buf);
        else zt_ckpt_read_weights(&r, i, buf);
        H5Dclose(zt_h5_write_tensor(&f, f.id, t->name, ZT_DTYPE_FP32, buf, t->ndim, t->full_shape, 0));
        written += t->numel * 4;
        elements += t->numel;
        if (debug) printf("%s: %zu elements\n", t->name, t->numel);
        progress(++done, r.n_tensors, written);
      }
      zt_h5_close(&f);
    }
  }
  printf("Reconstructed fp32 state dict with %d params %llu elements\n", r.n_tensors, (unsigned long long)elements);
  if (nsh > 1) {
    char path[8400];
    snprintf(path, sizeof path, "%s/model.%s.index.json", pos[1], ext);
    FILE *f = fopen(path, "w");
    zt_check(f, "zero_to_fp32", "%s: cannot write: %s", path, strerror(errno));
    /* sorted by name, as Hugging Face writes it */
    int *idx = zt_malloc((size_t)r.n_tensors * sizeof(int), "index");
    for (int i = 0; i < r.n_tensors; i++) idx[i] = i;
    for (int i = 1; i < r.n_tensors; i++)
      for (int j = i; j > 0 && strcmp(r.tensors[idx[j - 1]].name, r.tensors[idx[j]].name) > 0; j--) {
        int t = idx[j];
        idx[j] = idx[j - 1];
        idx[j - 1] = t;
      }
    fprintf(f, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {\n", (unsigned long long)total);
    for (int i = 0; i < r.n_tensors; i++) {
      int shard_of = 0;
      for (int s = 0; s < nsh; s++)
        for (int j = 0; j < shards[s].count; j++)
          if (order[shards[s].first + j] == idx[i]) shard_of = s;
      fprintf(f, "    ");
      json_str(f, r.tensors[idx[i]].name);
      fprintf(f, ": ");
      json_str(f, names[shard_of]);
      fprintf(f, "%s\n", i + 1 < r.n_tensors ? "," : "");
    }
    fprintf(f, "  }\n}\n");
    fclose(f);
    free(idx);
    printf("Saving checkpoint shards and index: %d files + %s\n", nsh, path);
  } else {
    printf("Saving fp32 state dict to %s/%s\n", pos[1], names[0]);
  }
  for (int s = 0; s < nsh; s++) free(names[s]);
  free(names);
  free(buf);
  free(order);
  free(shards);
  zt_ckpt_close(&r);
  return 0;
}
