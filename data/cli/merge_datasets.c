/* merge_datasets: Megatron's tools/merge_datasets.py in C. Concatenates every .bin/.idx pair in the
 * --input directory, in sorted order of the prefix names (Python's sorted() on the names: byte order),
 * into --output-prefix.bin/.idx; doc_idx is shifted as MMapIndexedDatasetBuilder.merge_file_ does.
 * Every file in the directory must belong to a pair (Megatron asserts the same); the first dataset
 * fixes the dtype and a different dtype is refused naming both. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/indexed_dataset.h"
#include "runtime/base/error.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *join(const char *dir, const char *name, const char *ext) {
  char *s;
  if (asprintf(&s, "%s/%s%s", dir, name, ext) < 0) zt_fatal("out of memory", "formatting a path");
  return s;
}

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The dtype code of prefix.idx (byte 17; the full validation happens in the merge). */
static int idx_dtype_code(const char *prefix) {
  char *path;
  if (asprintf(&path, "%s.idx", prefix) < 0) zt_fatal("out of memory", "formatting a path");
  unsigned char hdr[18];
  FILE *f = fopen(path, "rb");
  if (!f) zt_fatal("--input", "cannot open %s: %s", path, strerror(errno));
  size_t got = fread(hdr, 1, sizeof hdr, f);
  fclose(f);
  if (got < sizeof hdr || memcmp(hdr, "MMIDIDX\0\0", 9) != 0) {
    zt_indexed_dataset ds;
    zt_indexed_open(&ds, prefix); /* dies with the precise reason */
    zt_indexed_close(&ds);
  }
  free(path);
  return hdr[17];
}

static void usage(void) {
  printf("usage: merge_datasets --input DIR --output-prefix PREFIX\n\n"
         "Megatron's tools/merge_datasets.py: merges every PREFIX.bin/.idx pair in DIR (sorted by name)\n"
         "into one dataset.\n\n"
         "  --input DIR             directory containing all document files to merge\n"
         "  --output-prefix PREFIX  path to the binary output file without suffix\n");
}

int main(int argc, char **argv) {
  const char *input = NULL, *output = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      return 0;
    }
    const char **dst = NULL;
    const char *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    if (n > 2 && !strncmp(a, "--input", n)) dst = &input;
    else if (n > 2 && !strncmp(a, "--output-prefix", n)) dst = &output;
    else zt_fatal("unrecognized argument", "%s (merge_datasets takes --input DIR and --output-prefix PREFIX)", a);
    if (eq) *dst = eq + 1;
    else if (i + 1 < argc) *dst = argv[++i];
    else zt_fatal(dst == &input ? "--input" : "--output-prefix", "expected one argument");
  }
  if (!input || !output)
    zt_fatal("missing argument", "the following arguments are required: %s%s%s", !input ? "--input" : "",
             !input && !output ? ", " : "", !output ? "--output-prefix" : "");
  struct stat st;
  if (stat(input, &st) != 0 || !S_ISDIR(st.st_mode))
    zt_fatal("--input", "%s is not a directory or does not exist", input);
  char *copy = strdup(output);
  const char *outdir = dirname(copy);
  if (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode))
    zt_fatal("--output-prefix", "%s: %s is not a directory or does not exist", output, outdir);
  free(copy);

  DIR *d = opendir(input);
  if (!d) zt_fatal("--input", "cannot list %s: %s", input, strerror(errno));
  char **prefixes = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *path = join(input, e->d_name, "");
    int regular = is_file(path);
    free(path);
    if (!regular) continue;
    /* os.path.splitext: the extension starts at the last '.' that is not a leading one */
    char *name = strdup(e->d_name);
    char *dot = strrchr(name, '.');
    const char *ext = "";
    if (dot && dot != name) {
      ext = e->d_name + (dot - name);
      *dot = 0;
    }
    int dup = 0;
    for (size_t k = 0; k < n && !dup; k++) dup = !strcmp(prefixes[k], name);
    if (dup) {
      free(name);
      continue;
    }
    const char *pair = !strcmp(ext, ".idx") ? ".bin" : ".idx";
    char *pair_path = join(input, name, pair);
    if (!is_file(pair_path))
      zt_fatal("--input", "%s/%s has no %s partner %s: every file in the directory must belong to a .bin/.idx pair",
               input, e->d_name, pair, pair_path);
    free(pair_path);
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      prefixes = realloc(prefixes, cap * sizeof(char *));
      zt_check(prefixes, "out of memory", "prefix list (%zu)", cap);
    }
    prefixes[n++] = name;
  }
  closedir(d);
  if (n == 0) zt_fatal("--input", "%s holds no .bin/.idx pair to merge", input);
  qsort(prefixes, n, sizeof(char *), cmp_str);

  zt_indexed_cleanup_on_signals();
  zt_indexed_builder *b = NULL;
  char *first = NULL;
  int first_code = 0;
  for (size_t k = 0; k < n; k++) {
    char *prefix = join(input, prefixes[k], "");
    int code = idx_dtype_code(prefix);
    if (!b) {
      zt_indexed_dataset ds; /* validates the first dataset before creating the output */
      zt_indexed_open(&ds, prefix);
      b = zt_indexed_builder_open(output, ds.dtype);
      zt_indexed_close(&ds);
      first = strdup(prefix);
      first_code = code;
    } else if (code != first_code) {
      zt_indexed_builder_abort(b);
      zt_fatal("--input", "%s has dtype %s but %s (the first dataset in sorted order) has %s: merged datasets must "
               "share one dtype", prefix, zt_idx_dtype_name((zt_idx_dtype)code), first,
               zt_idx_dtype_name((zt_idx_dtype)first_code));
    }
    int64_t before = zt_indexed_builder_num_items(b);
    zt_indexed_builder_merge(b, prefix);
    int64_t total = zt_indexed_builder_num_items(b);
    printf("    concat %s size=%lld for a total size of %lld\n", prefix, (long long)(total - before), (long long)total);
    fflush(stdout);
    free(prefix);
  }
  int64_t total = zt_indexed_builder_num_items(b);
  int64_t docs = zt_indexed_builder_num_docs(b);
  zt_indexed_builder_finish(b);
  printf("merged %zu datasets into %s.bin/.idx: %lld items, %lld documents\n", n, output, (long long)total,
         (long long)docs);
  return 0;
}
