/* Shared by the libFuzzer harnesses of tests/fuzz: a refusal (zt_fatal) is the expected answer to most
 * inputs, so each input runs inside ZT_FUZZ_TRY, which turns zt_fatal into a return to the harness through
 * the fatal hook; crashes, sanitizer reports, hangs (libFuzzer's -timeout) and memory blow-ups
 * (-rss_limit_mb, -malloc_limit_mb) remain findings. Allocations made before a refusal are not freed
 * (a refusal ends the process in the real tools), so scripts/fuzz.sh runs with -detect_leaks=0.
 * zt_fuzz_file writes an input to a per-process scratch file for the readers that take a path;
 * zt_fuzz_byte_tokenizer is a one-token-per-byte GPT-2 tokenizer for the readers that need one (zt_fuzz_byte_vocab
 * writes its files, which a harness may also read as an HFTokenizer directory). */
#ifndef ZT_FUZZ_H
#define ZT_FUZZ_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/tokenizer/tokenizer.h"
#include "runtime/base/error.h"

static jmp_buf zt_fuzz_jmp;
static void zt_fuzz_hook(int code) { (void)code; longjmp(zt_fuzz_jmp, 1); }

/* ZT_FUZZ_TRY { body }: runs body; a zt_fatal inside it returns here (the body is abandoned). The hook is
 * re-armed for every input because zt_fatal clears it before calling it. */
#define ZT_FUZZ_TRY if (setjmp(zt_fuzz_jmp) == 0 && (zt_set_fatal_hook(zt_fuzz_hook), 1))

/* Writes data to /tmp/zt_fuzz_<pid>/<name> and returns that path (static storage, overwritten each call
 * with the same name). */
static inline const char *zt_fuzz_file(const char *name, const uint8_t *data, size_t size) {
  static char path[512];
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/zt_fuzz_%d", (int)getpid());
  mkdir(dir, 0700); /* exists after the first call */
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    fprintf(stderr, "zt_fuzz_file: cannot write %s\n", path);
    abort();
  }
  return path;
}

/* Writes the vocab.json and merges.txt of a GPT-2 BPE with one token per byte and no merges (GPT-2's
 * bytes_to_unicode: printable Latin-1 bytes map to themselves, the others to U+0100 + n), plus <|endoftext|> = 256,
 * under the names `prefix`vocab.json and `prefix`merges.txt (a prefix "d/" puts them in the scratch directory d, which
 * must exist); their paths go to vocab and merges (512 bytes each). */
static inline void zt_fuzz_byte_vocab(const char *prefix, char *vocab, char *merges) {
  char *json = malloc(256 * 16 + 64), *p = json;
  p += sprintf(p, "{");
  int n = 0;
  for (int b = 0; b < 256; b++) {
    const int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    const int cp = printable ? b : 256 + n++;
    if (cp == '"' || cp == '\\') p += sprintf(p, "\"\\%c\": %d, ", cp, b);
    else p += sprintf(p, "\"\\u%04x\": %d, ", cp, b);
  }
  p += sprintf(p, "\"<|endoftext|>\": 256}");
  char name[256];
  snprintf(name, sizeof name, "%svocab.json", prefix);
  snprintf(vocab, 512, "%s", zt_fuzz_file(name, (const uint8_t *)json, (size_t)(p - json)));
  snprintf(name, sizeof name, "%smerges.txt", prefix);
  snprintf(merges, 512, "%s", zt_fuzz_file(name, (const uint8_t *)"#version: 0.2\n", 14));
  free(json);
}

/* zt_fuzz_byte_vocab's files as a GPT2BPETokenizer: every text encodes, byte for byte, for the harnesses of readers
 * that need a tokenizer. Built once. */
static inline zt_tokenizer *zt_fuzz_byte_tokenizer(void) {
  static zt_tokenizer *tok;
  if (tok) return tok;
  char vocab[512], merges[512];
  zt_fuzz_byte_vocab("", vocab, merges);
  zt_tokenizer_spec spec = {.kind = ZT_TOK_GPT2BPE, .vocab_file = vocab, .merge_file = merges};
  tok = zt_tokenizer_create(&spec);
  return tok;
}

#endif
