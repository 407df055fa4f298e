/* Python's str semantics that Megatron's finetuning readers depend on (internal to data/finetune_data.c): files read
 * as UTF-8 text with universal newlines, str.strip() / re's \s over Python 3's Unicode whitespace, str.split('\t'),
 * tasks/data_utils.py's clean_text, int() of a string, and repr() of a list of strings for the warning lines. */
#ifndef ZT_FINETUNE_TEXT_H
#define ZT_FINETUNE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* A run of UTF-8 bytes (not NUL-terminated: it may hold NULs). */
typedef struct {
  const char *p;
  size_t n;
} zt_span;

/* A growable byte buffer, NUL-terminated after n. */
typedef struct {
  char *p;
  size_t n, cap;
} zt_ftbuf;

void zt_ftbuf_reserve(zt_ftbuf *b, size_t n);
void zt_ftbuf_put(zt_ftbuf *b, const char *s, size_t n);
void zt_ftbuf_free(zt_ftbuf *b);

/* Python's str.isspace() (the set re's \s matches in a str pattern): \t \n \v \f \r, U+001C-U+001F, space, U+0085,
 * U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000. */
int zt_py_isspace(uint32_t cp);
/* str.strip(): Unicode whitespace off both ends (s is valid UTF-8). */
zt_span zt_py_strip(zt_span s);
/* str.strip(chars) for an ASCII set of chars. */
zt_span zt_py_strip_chars(zt_span s, const char *chars);

/* The fields of str.split('\t'), pointing into the line. */
typedef struct {
  zt_span *f;
  size_t n, cap;
} zt_ftrow;
void zt_ft_split_tab(zt_span s, zt_ftrow *row);
void zt_ftrow_free(zt_ftrow *row);

/* tasks/data_utils.py clean_text: "\n" -> " ", re.sub(r'\s+', ' ', text), then text.replace(' . ', '. ') three
 * times; into out (replacing its contents). */
void zt_ft_clean_text(zt_span in, zt_ftbuf *out);

/* int(s) for a str: optional surrounding whitespace and sign, decimal digits (any Unicode Nd) with single '_'
 * between digits. ok = 0 where Python raises ValueError; overflow = 1 where the value is outside int64 (v is then
 * meaningless). */
typedef struct {
  int ok, overflow;
  int64_t v;
} zt_pyint;
zt_pyint zt_py_int(zt_span s);

/* Python's repr() of the list of the fields (the "['a', 'b']" of Megatron's warning lines), appended to out. */
void zt_py_repr_row(const zt_ftrow *row, zt_ftbuf *out);
/* Python's repr() of one string, appended to out. */
void zt_py_repr_str(zt_span s, zt_ftbuf *out);

/* A whole file and its lines as Python's text-mode iteration gives them: a line ends at "\n", "\r\n" or a lone "\r"
 * (the terminator is not part of the span); the last line may lack one. Line numbers are 1-based. */
typedef struct {
  char *buf;
  size_t n, pos;
  long no;
  const char *path;
} zt_ftlines;
/* Reads path whole; a missing, unreadable or directory path dies naming it (zt_fatal "finetune data"). */
void zt_ftlines_open(zt_ftlines *l, const char *path);
/* The next line (dies naming the file and line when it is not valid UTF-8, as Python's decoding raises); 0 at the
 * end. */
int zt_ftlines_next(zt_ftlines *l, zt_span *line);
void zt_ftlines_close(zt_ftlines *l);

#endif
