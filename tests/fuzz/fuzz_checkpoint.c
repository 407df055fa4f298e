/* libFuzzer harness: the checkpoint reader (checkpoints/ckpt_reader.c, h5io.c) as --load, zero_to_fp32,
 * export_hf and inspect_checkpoint use it, on a checkpoint directory built from the input. The input is up to
 * five sections separated by the 8 bytes "ZTFZSEC\1" (tests/fuzz/corpus/checkpoint/ holds real ones from a tiny
 * model, made by tests/checkpoint/make_fuzz_seeds.sh):
 *   0: the `latest` file's bytes (also written as `latest_universal`, which --universal-checkpoint reads),
 *   1: mp_rank_00_model_states.h5, 2: zero_pp_rank_0_mp_rank_00_optim_states.h5 (absent or empty: none),
 *   3: latest_checkpointed_iteration.txt (absent: none), 4: zt_manifest.txt (absent: computed from the files,
 *   as after a user "repaired" a manifest, so the HDF5 parsing is what gets fuzzed).
 * The files go to <scratch>/ck/t/ (so a `latest` of "t" names them); then the tracker is resolved, the tag
 * opened (manifest check, metadata, tensor table, slice maps) and every tensor's weights and optimizer states
 * read. HDF5 objects a refusal leaves open are closed after each input.
 * The reader tries its HDF5 reads in a child process first (h5_probe.c), and a refusal there is the parent's
 * without the parent repeating the reads: the child's coverage counters (libFuzzer's inline 8-bit counters,
 * section __sancov_cntrs) are handed back through shared memory as it exits and merged into the parent's, so the
 * fuzzer is guided by what the child covered as well. The child's memory budget (h5_probe.c: 256 MiB over these
 * small files) and a 1 s time limit keep HDF5's own blow-ups on damaged files cheap. */
#include <dirent.h>
#include <hdf5.h>
#include <sys/mman.h>

#include "checkpoints/ckpt_reader.h"
#include "checkpoints/h5io.h"
#include "runtime/base/crc32c.h"
#include "tests/fuzz/fuzz.h"

static const char k_sep[8] = {'Z', 'T', 'F', 'Z', 'S', 'E', 'C', 1};

/* g_cov: the coverage counters; g_child_cov: as many shared bytes, the maximum of the counters of this input's
 * children, merged into this process's counters after the input. */
uint8_t *zt_fuzz_cov_counters(size_t *n); /* tests/fuzz/cov_bounds.c */
static uint8_t *g_cov, *g_child_cov;
static size_t g_cov_n;

static void child_cov_out(void) { /* in the child, at its exit */
  for (size_t i = 0; i < g_cov_n; i++)
    if (g_cov[i] > g_child_cov[i]) g_child_cov[i] = g_cov[i];
}

static void child_cov_in(void) { /* in the parent, after the input */
  uint8_t *c = g_cov;
  for (size_t i = 0; i < g_cov_n; i++) {
    if (g_child_cov[i] > c[i]) c[i] = g_child_cov[i];
    g_child_cov[i] = 0;
  }
}

static void put(const char *dir, const char *name, const uint8_t *data, size_t size) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
}

static void clear_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[600];
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..") != 0)) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
}

/* Closes what a refusal left open (files, groups, datasets, attributes, named types). */
static void close_all_h5(void) {
  const ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (n <= 0) return;
  hid_t *ids = malloc((size_t)n * sizeof(hid_t));
  const ssize_t k = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_ALL, (size_t)n, ids);
  for (ssize_t i = 0; i < k; i++) {
    switch (H5Iget_type(ids[i])) {
    case H5I_GROUP: H5Gclose(ids[i]); break;
    case H5I_DATASET: H5Dclose(ids[i]); break;
    case H5I_ATTR: H5Aclose(ids[i]); break;
    case H5I_DATATYPE: H5Tclose(ids[i]); break;
    default: break;
    }
  }
  for (ssize_t i = 0; i < k; i++)
    if (H5Iget_type(ids[i]) == H5I_FILE) H5Fclose(ids[i]);
  free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *sec[5] = {0};
  size_t len[5] = {0};
  int nsec = 0;
  size_t at = 0;
  while (nsec < 5) {
    size_t end = at;
    while (end + sizeof k_sep <= size && memcmp(data + end, k_sep, sizeof k_sep) != 0) end++;
    if (end + sizeof k_sep > size) end = size;
    sec[nsec] = data + at;
    len[nsec++] = end - at;
    if (end >= size) break;
    at = end + sizeof k_sep;
  }
  const char *scratch = zt_fuzz_file("unused", data, 0);
  char root[600], dir[600];
  snprintf(root, sizeof root, "%s", scratch);
  *strrchr(root, '/') = '\0';
  strcat(root, "/ck");
  snprintf(dir, sizeof dir, "%s/t", root);
  mkdir(root, 0700);
  mkdir(dir, 0700);
  clear_dir(dir);
  clear_dir(root);
  put(root, "latest", sec[0], len[0]);
  put(root, "latest_universal", sec[0], len[0]);
  if (nsec > 3) put(root, "latest_checkpointed_iteration.txt", sec[3], len[3]);
  static const char *const names[2] = {"mp_rank_00_model_states.h5", "zero_pp_rank_0_mp_rank_00_optim_states.h5"};
  char manifest[1024] = "# zerotron checkpoint manifest v1: crc32c bytes file\n";
  for (int i = 0; i < 2; i++) {
    if (nsec <= 1 + i || (i == 1 && len[2] == 0)) continue;
    put(dir, names[i], sec[1 + i], len[1 + i]);
    snprintf(manifest + strlen(manifest), sizeof manifest - strlen(manifest), "%08x %zu %s\n",
             zt_crc32c(0, sec[1 + i], len[1 + i]), len[1 + i], names[i]);
  }
  if (nsec > 4) put(dir, "zt_manifest.txt", sec[4], len[4]);
  else put(dir, "zt_manifest.txt", (const uint8_t *)manifest, strlen(manifest));

  static zt_ckpt_reader r;
  memset(&r, 0, sizeof r);
  float *buf = NULL;
  ZT_FUZZ_TRY {
    char tag[256], err[4600];
    zt_ckpt_universal_tag(root, tag, sizeof tag, err, sizeof err);
    if (zt_ckpt_discover(root, NULL, tag, sizeof tag, err, sizeof err) == 1) {
      zt_ckpt_open(&r, root, NULL);
      char v[64];
      zt_ckpt_arg(r.args_text, "num_layers", v, sizeof v);
      for (int i = 0; i < r.n_tensors; i++) {
        /* a deflate dataset may legitimately claim up to 1100x its stored bytes (h5io.c: zeros compress that
         * well), which the reader then allocates; past 4M elements the harness skips the data, keeping libFuzzer's
         * 2 GiB RSS budget for finding real growth */
        if (r.tensors[i].numel > ((size_t)1 << 22)) continue;
        buf = realloc(buf, r.tensors[i].numel * sizeof(float) + 1);
        zt_ckpt_read_weights(&r, i, buf);
        static const char *const states[4] = {"fp32", "exp_avg", "exp_avg_sq", "momentum_buffer"};
        for (int s = 0; r.has_optim && s < 4; s++)
          if (s == 0 || (s < 3) == (strcmp(r.optimizer, "sgd") != 0))
            zt_ckpt_read_state(&r, i, states[s], buf);
      }
      zt_ckpt_close(&r);
    }
  }
  free(buf);
  close_all_h5();
  child_cov_in();
  return 0;
}

/* ASan's defaults for this harness: an allocation the child's address-space limit (h5_probe.c) refuses returns
 * NULL (HDF5 then fails the read) instead of ending the child with a report; a 16 MiB quarantine of freed memory
 * (256 by default) keeps this process small, and so each fork cheap (73 -> 104 executions a second) */
const char *__asan_default_options(void) { return "allocator_may_return_null=1:quarantine_size_mb=16"; }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* the child that walks a file's HDF5 structures: a sanitizer report there (stack symbolization) takes seconds;
   * the limit turns it and a real hang into a refusal well inside libFuzzer's -timeout */
  setenv("ZT_CKPT_PROBE_TIMEOUT", "1", 0);
  g_cov = zt_fuzz_cov_counters(&g_cov_n);
  g_child_cov = mmap(NULL, g_cov_n + 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_child_cov == MAP_FAILED) abort();
  zt_h5_set_child_exit_hook(child_cov_out);
  return 0;
}
