/* Loose JSON lines (Megatron's preprocess_data input): a streaming reader of plain or gzip files
 * (zlib reads both; gzip is recognized by its magic, not by the name) that hands out chunks of whole
 * lines, and the extraction of one key's text from a line (a length-counted JSON reader with Python's
 * json.loads grammar, so a "\u0000" escape stays a character of the text): a string, a list of strings, or a list
 * of lists of strings (RACE's "options", data/finetune_data.c).
 *
 * Line rules follow Python's text-mode iteration: lines end at '\n', a trailing '\r' is dropped, the
 * last line may lack its '\n'. Line numbers are 1-based. A line longer than the reader's bound (default
 * 1 GiB) is an error naming the file and the line: memory stays bounded on inputs such as /dev/zero. */
#ifndef ZT_JSONL_H
#define ZT_JSONL_H

#include <stddef.h>
#include <stdint.h>

typedef struct zt_jsonl_reader zt_jsonl_reader;

/* A run of whole lines. Line i is buf[start[i] .. start[i] + len[i]) and is NUL-terminated in place of
 * its newline. */
typedef struct {
  char *buf;
  size_t buf_len, buf_cap;
  size_t *start, *len;
  size_t n, cap;
  int64_t first_line;  /* line number of line 0 */
  size_t input_bytes;  /* bytes these lines took in the (decompressed) input, newlines included */
} zt_jsonl_chunk;

#define ZT_JSONL_DEFAULT_MAX_LINE ((size_t)1 << 30)

/* Opens path for reading (dies naming it when it is missing, a directory or unreadable). */
zt_jsonl_reader *zt_jsonl_open(const char *path);
/* Fills c with the next lines, about target_bytes of them (always at least one whole line unless at
 * the end). Returns the number of lines (0 at the end of the input). A read or decompression error
 * dies naming the file and the line. */
size_t zt_jsonl_read_chunk(zt_jsonl_reader *r, zt_jsonl_chunk *c, size_t target_bytes);
/* The longest line accepted, in (decompressed) bytes; ZT_JSONL_DEFAULT_MAX_LINE until set. */
void zt_jsonl_set_max_line(zt_jsonl_reader *r, size_t max_bytes);
/* 1 when the input is gzip-compressed (known once the first chunk has been read). */
int zt_jsonl_is_gzip(const zt_jsonl_reader *r);
void zt_jsonl_close(zt_jsonl_reader *r);
void zt_jsonl_chunk_free(zt_jsonl_chunk *c);

/* ---- extraction ---------------------------------------------------------------------------------- */

/* The texts of one key in one line: a JSON string gives one text, a list of strings gives one text per
 * element (Megatron tokenizes each element as its own item). Each text is len[i] bytes (it may hold NUL
 * bytes; a NUL also follows it). Pointers stay valid until the next zt_jsonl_parse on the same doc. */
typedef struct {
  const char **text;
  size_t *len;
  size_t n, cap;
} zt_jsonl_texts;

typedef struct zt_jsonl_doc zt_jsonl_doc;

zt_jsonl_doc *zt_jsonl_doc_new(void);
void zt_jsonl_doc_free(zt_jsonl_doc *d);
/* Parses line[0..len) as one JSON object. On failure returns -1 and writes
 * a message (with the byte offset in the line) into err. Invalid UTF-8 is refused with its byte
 * offset, before parsing. */
int zt_jsonl_parse(zt_jsonl_doc *d, const char *line, size_t len, char *err, size_t err_cap);
/* The texts of key (the last occurrence when a key repeats, as Python's json does). Returns -1 with a
 * message naming the key (missing key; not a string or list of strings) into err. */
int zt_jsonl_get(zt_jsonl_doc *d, const char *key, zt_jsonl_texts *out, char *err, size_t err_cap);
void zt_jsonl_texts_free(zt_jsonl_texts *t);

/* The kind of key's value (the last occurrence when a key repeats): a caller that needs exactly a string, or
 * exactly a list, checks it before zt_jsonl_get (which takes either). */
enum { ZT_JSONL_MISSING = -1, ZT_JSONL_STRING = 0, ZT_JSONL_LIST = 1, ZT_JSONL_OTHER = 2 };
int zt_jsonl_kind(const zt_jsonl_doc *d, const char *key);

/* A list of lists of strings (RACE's "options"): the strings of inner list i are texts.text[c_i ..
 * c_i + count[i]) with c_i the sum of the counts before it. */
typedef struct {
  zt_jsonl_texts texts;
  size_t *count;
  size_t n, cap;
} zt_jsonl_lists;
/* The texts of key when its value is a list of lists of strings. Returns -1 with a message naming the key
 * (missing; not a list; an element not a list; an inner element not a string) into err. */
int zt_jsonl_get_lists(zt_jsonl_doc *d, const char *key, zt_jsonl_lists *out, char *err, size_t err_cap);
void zt_jsonl_lists_free(zt_jsonl_lists *l);

#endif
