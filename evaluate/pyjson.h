/* Python's json.dumps spellings for the evaluation programs' JSON output (generate_samples' --genfile lines, the
 * text-generation server's replies): strings with ensure_ascii, and floats as Python's repr writes them. */
#ifndef ZT_PYJSON_H
#define ZT_PYJSON_H

#include <stddef.h>

#include "evaluate/strbuf.h"

/* json.dumps of a str: non-ASCII as \uXXXX (surrogate pairs past U+FFFF, lowercase hex), invalid UTF-8 as U+FFFD. */
void zt_pyjson_string(zt_strbuf *b, const char *s, size_t n);
/* json.dumps of a float: repr's shortest round-trip digits ("0.1", "-2.5e-05", "100.0", "1e+16"), NaN, Infinity. */
void zt_pyjson_float(zt_strbuf *b, double x);

#endif
