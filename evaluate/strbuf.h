/* A growable, always NUL-terminated byte buffer for the texts evaluate/ builds (task prompts and requests,
 * detokenized pages); the bytes may hold NULs (n counts them). Dies naming `what` when memory runs out. */
#ifndef ZT_EVAL_STRBUF_H
#define ZT_EVAL_STRBUF_H

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

typedef struct {
  char *p;
  size_t n, cap;
} zt_strbuf;

static inline void zt_strbuf_put(zt_strbuf *b, const char *s, size_t n) {
  zt_check(n < ((size_t)1 << 40), "out of memory", "evaluation text: %zu bytes", n);
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (b->n + n + 1 > cap) cap *= 2;
    char *p = realloc(b->p, cap);
    zt_check(p != NULL, "out of memory", "evaluation text: %zu bytes", cap);
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

/* The text (malloc'd, "" for an empty buffer); *len (if not NULL) its length. The buffer is given away. */
static inline char *zt_strbuf_take(zt_strbuf *b, size_t *len) {
  if (!b->p) zt_strbuf_put(b, "", 0);
  if (len) *len = b->n;
  return b->p;
}

#endif
