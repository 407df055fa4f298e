/* A streaming safetensors writer (F32 tensors): the header (8-byte little-endian length, then the JSON
 * {"__metadata__": {"format": "pt"}, name: {"dtype", "shape", "data_offsets"}} padded with spaces to a multiple
 * of 8) is written first from the tensors' names and shapes, then each tensor's data in the same order, so the
 * caller holds one tensor at a time. Used by zero_to_fp32 and export_hf. */
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
} zt_st_writer;

/* Creates path and writes the header for the n entries (fatal, naming the file, on failure). */
void zt_st_begin(zt_st_writer *w, const char *path, const zt_st_entry *entries, int n);
/* Writes the data of the next entry (numel must match its shape). */
void zt_st_write(zt_st_writer *w, const float *data, size_t numel);
/* Checks every entry was written and closes the file. */
void zt_st_end(zt_st_writer *w);

#endif
