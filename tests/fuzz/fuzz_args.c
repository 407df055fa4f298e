/* libFuzzer harness: pretrain_gpt's argument parser and validator (train/args.c: zt_args_parse, with every
 * cross-check and the derived-count overflow checks) on an argv made from the input bytes split at NUL bytes,
 * as one process of a world of 1 would parse it. --help and -h (which print and exit, as argparse does) are
 * dropped from the words. */
#include "tests/fuzz/fuzz.h"
#include "train/args.h"

enum { MAX_WORDS = 256 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* command lines are short; long ones only slow the search */
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0;
  char *argv[MAX_WORDS + 1];
  int argc = 0;
  argv[argc++] = "pretrain_gpt";
  for (size_t i = 0; i <= size && argc < MAX_WORDS;) {
    char *w = text + i;
    size_t n = strlen(w);
    if (strcmp(w, "--help") != 0 && strcmp(w, "-h") != 0 && !(n == 0 && i == size)) argv[argc++] = w;
    i += n + 1;
  }
  argv[argc] = NULL;
  zt_args_model = "gpt";
  zt_args a;
  ZT_FUZZ_TRY { zt_args_parse(&a, argc, argv, 1); }
  free(text);
  return 0;
}
