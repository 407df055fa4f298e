/* safetensors files (https://github.com/huggingface/safetensors, README "Format"): a streaming writer of F32 (or
 * BF16) tensors and a strict reader.
 * Writer: the header (8-byte little-endian length, then the JSON
 * {"__metadata__": {"format": "pt"}, name: {"dtype", "shape", "data_offsets"}} padded with spaces to a multiple
 * of 8) is written first from the tensors' names and shapes, then each tensor's data in the same order, so the
 * caller holds one tensor at a time. Used by zero_to_fp32 and export_hf.
 * Reader: parses and validates the whole header at open (every refusal of the reference implementation, plus
 * duplicate names, unknown members and dtypes, control characters and \u0000 in strings) and reads one tensor at a
 * time converted to float. It never ends the process: every problem is -1 and a message naming the file, the
 * tensor and the numbers, so the Hugging Face import tool and the fuzz harness (tests/fuzz/fuzz_safetensors.c)
 * decide what to do. */
#ifndef ZT_SAFETENSORS_H
#define ZT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  char name[192];
  int ndim;
  int64_t shape[4];
} zt_st_entry;

typedef struct {
  FILE *f;
  char path[4096];
  const zt_st_entry *entries;
  int n, next;
  int bf16; /* the data written as BF16 (rounded to nearest even), else F32 */
} zt_st_writer;

/* Creates path and writes the header for the n entries (fatal, naming the file, on failure). */
void zt_st_begin(zt_st_writer *w, const char *path, const zt_st_entry *entries, int n);
/* The same, every tensor stored as BF16 when bf16 (the floats zt_st_write takes rounded to nearest even). */
void zt_st_begin_dtype(zt_st_writer *w, const char *path, const zt_st_entry *entries, int n, int bf16);
/* Writes the data of the next entry (numel must match its shape). */
void zt_st_write(zt_st_writer *w, const float *data, size_t numel);
/* Checks every entry was written and closes the file. */
void zt_st_end(zt_st_writer *w);

/* ---- reader ---- */

typedef enum { ZT_ST_F64, ZT_ST_F32, ZT_ST_F16, ZT_ST_BF16, ZT_ST_OTHER } zt_st_dtype;

typedef struct {
  char name[192];
  char dtype_name[16];   /* as in the header: "F32", "BF16", "I64", ... */
  zt_st_dtype dtype;
  int ndim;              /* 0..8 */
  int64_t shape[8];
  uint64_t begin, end;   /* data_offsets, relative to the start of the data section */
} zt_st_tensor;

typedef struct {
  char path[4096];
  FILE *f;
  uint64_t data_start;   /* 8 + header length */
  uint64_t data_bytes;   /* file size - data_start */
  zt_st_tensor *tensors; /* in the header's order, "__metadata__" left out */
  int n;
} zt_st_reader;

/* Parses a header (the JSON text of length len) for a data section of data_bytes bytes into r->tensors/r->n
   (r->path is used in messages). Returns 0, or -1 with a message in err naming r->path, the tensor and the numbers.
   r->tensors and r->n are overwritten (NULL and 0 after a refusal); zt_st_close frees the tensors. Accepted headers
   are well-formed UTF-8 JSON objects whose tensors tile the data section exactly (sorted by offsets, no gap, no
   overlap, the last ending at data_bytes), as the reference implementation requires. */
int zt_st_parse_header(zt_st_reader *r, const char *json, size_t len, uint64_t data_bytes, char *err, size_t errn);
/* Opens path and parses its header; -1 with err on any problem (missing file, short file, bad header). */
int zt_st_open(zt_st_reader *r, const char *path, char *err, size_t errn);
int zt_st_find(const zt_st_reader *r, const char *name);   /* index or -1 */
size_t zt_st_numel(const zt_st_tensor *t);
/* Reads tensor i converted to float (F64/F32/F16/BF16; F16 and BF16 exactly, F64 rounded to nearest float);
   -1 with err for another dtype (naming it) or a read error. out holds zt_st_numel floats. */
int zt_st_read_f32(const zt_st_reader *r, int i, float *out, char *err, size_t errn);
/* Closes the file (if open) and frees the tensors; r can be opened again. */
void zt_st_close(zt_st_reader *r);

#endif
