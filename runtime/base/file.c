/* zt_read_file: see runtime/base/file.h. */
#include "runtime/base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

char *zt_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  size_t cap = 1 << 16, n = 0;
  /* a regular file's size (+1, so that EOF is seen without growing); anything else starts at 64 KiB */
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0) cap = (size_t)st.st_size + 1;
  char *buf = malloc(cap + 1);
  if (!buf) {
    fclose(f);
    errno = ENOMEM;
    return NULL;
  }
  for (;;) {
    const size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) break; /* EOF or an error: ferror below tells */
    char *nb = cap > ((size_t)-1 - 1) / 2 ? NULL : realloc(buf, cap * 2 + 1);
    if (!nb) {
      free(buf);
      fclose(f);
      errno = ENOMEM;
      return NULL;
    }
    buf = nb;
    cap *= 2;
  }
  if (ferror(f)) {
    const int e = errno ? errno : EIO;
    free(buf);
    fclose(f);
    errno = e;
    return NULL;
  }
  fclose(f);
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}
