/* Thin HDF5 helpers for the checkpoint files: files, groups that keep creation order, typed scalar and
 * array attributes, UTF-8 string attributes and string-list datasets, and tensor datasets stored in fp32,
 * fp16 (IEEE half, read by h5py as float16) or bf16 (uint16 bit patterns, "dtype" attribute "bf16"), each
 * with a CRC32C of its stored bytes that every read verifies. Every failure names the file and object. */
#ifndef ZT_H5IO_H
#define ZT_H5IO_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/dtype.h"

typedef struct {
  hid_t id;
  char path[4096];
} zt_h5;

/* Library set-up, once (every function here calls it): HDF5's error printing off, no file locking unless the
 * user set HDF5_USE_FILE_LOCKING, no library shutdown at exit. */
void zt_h5_init(void);
/* Runs fn(arg) in a child process (its output discarded; a zt_fatal there ends it, and is the parent's own when
 * forwarded, see zt_h5_child_forward_refusals) whose address space may grow by ZT_CKPT_PROBE_MEMORY_MB, or by
 * 256 MiB and twice the bytes of path (a file, or a directory's files): an allocation past that fails there, as
 * HDF5's for what damaged metadata claims do; fatal, naming path,
 * when the child crashes (a signal or a sanitizer's exit) or runs past ZT_CKPT_PROBE_TIMEOUT seconds (default
 * 300), naming the last file the child noted (zt_h5_child_note; path when none): HDF5 itself is not safe on
 * damaged files, so the readers try their reads there first. h5_probe.c. */
void zt_h5_in_child(const char *path, void (*fn)(void *), void *arg);
/* Opens path and reads every object, attribute and string dataset, and the data of chunked datasets in slabs
 * of about 1M elements (what a child of zt_h5_in_child does for the readers, e.g. inspect_checkpoint, which lists
 * attributes); a read that fails is a refusal naming the object, which the parent adopts. */
void zt_h5_walk(const char *path);
/* In such a child: tells the parent the file now being read (the one a crash or hang is blamed on). */
void zt_h5_child_note(const char *path);
/* In such a child: on (1) while a refusal means the files are damaged (the reader's own reads, zt_h5_walk), so
 * that a zt_fatal there ends the child and the parent refuses with the same words at once, without the reads;
 * off (0, the start): a refusal is left to the parent, which goes on. */
void zt_h5_child_forward_refusals(int on);
/* fn runs in every such child just before it exits normally or after a refusal (the checkpoint fuzzer hands the
 * child's coverage counters to the parent with it); none by default. */
void zt_h5_set_child_exit_hook(void (*fn)(void));
/* zt_h5_walk(path) in a child process. */
void zt_h5_probe(const char *path);

/* The global heap collections of a file (where HDF5 keeps variable-length strings), found in its bytes as they
 * stream past (the manifest's crc32c pass) and then checked before HDF5 reads them: HDF5 1.10 decodes a damaged
 * collection forever (a free-space object of 0 bytes) or out of bounds (an object past the collection's end).
 * A collection is found by its 8 bytes "GCOL", version 1, three zeros, which tensor data does not hold in
 * practice (as fp32: 5.4e7 followed by the smallest denormal). */
typedef struct {
  uint64_t at;       /* bytes seen so far */
  uint8_t tail[7];   /* the last of them, for a signature across two buffers */
  size_t ntail;
  uint64_t *found;   /* offsets of the collections' signatures */
  int n, cap;
} zt_h5_heap_scan;
/* The next n bytes of the file (start from a zeroed zt_h5_heap_scan). */
void zt_h5_heap_scan_bytes(zt_h5_heap_scan *s, const uint8_t *buf, size_t n);
/* 0, with why (naming the collection's byte offset and what is wrong), for a collection past the end of the file
 * or whose objects do not tile it; 1 when all are sound. Frees what the scan holds (s is zeroed) either way. */
int zt_h5_heap_scan_check(zt_h5_heap_scan *s, const char *path, uint64_t file_bytes, char *why, size_t whyn);
/* Creates (truncating) a file for writing; fatal on failure. */
void zt_h5_create(zt_h5 *f, const char *path);
/* Opens read-only; fatal (naming the file) when it is not a readable HDF5 file. */
void zt_h5_open(zt_h5 *f, const char *path);
void zt_h5_close(zt_h5 *f);

/* A group (creation order tracked, so h5py lists members in the order written); close with H5Gclose. */
hid_t zt_h5_group_create(const zt_h5 *f, hid_t loc, const char *name);
/* Opens an existing group; fatal naming the file when it is missing. */
hid_t zt_h5_group_open(const zt_h5 *f, hid_t loc, const char *name);
int zt_h5_exists(hid_t loc, const char *name);

/* Attributes on an object (file root, group or dataset). */
void zt_h5_attr_i64(const zt_h5 *f, hid_t obj, const char *name, int64_t v);
void zt_h5_attr_f64(const zt_h5 *f, hid_t obj, const char *name, double v);
void zt_h5_attr_str(const zt_h5 *f, hid_t obj, const char *name, const char *s);
void zt_h5_attr_i64v(const zt_h5 *f, hid_t obj, const char *name, const int64_t *v, int n);
int zt_h5_has_attr(hid_t obj, const char *name);
/* Readers: fatal naming file, object and attribute when missing or of another kind. `where` names the
 * object in messages (e.g. "/module/<name>"). */
int64_t zt_h5_get_i64(const zt_h5 *f, hid_t obj, const char *where, const char *name);
double zt_h5_get_f64(const zt_h5 *f, hid_t obj, const char *where, const char *name);
char *zt_h5_get_str(const zt_h5 *f, hid_t obj, const char *where, const char *name); /* malloc'd */
int zt_h5_get_i64v(const zt_h5 *f, hid_t obj, const char *where, const char *name, int64_t *v, int max);

/* A dataset of n UTF-8 strings, and its reader (returns n; *out is malloc'd, each string malloc'd). */
void zt_h5_write_strings(const zt_h5 *f, hid_t loc, const char *name, const char *const *s, size_t n);
size_t zt_h5_read_strings(const zt_h5 *f, hid_t loc, const char *name, char ***out);
/* A dataset-transfer property list whose variable-length strings are allocated with malloc and refused past
 * 16 MiB each (a damaged heap entry can claim gigabytes); the strings are then free()d. H5Pclose it. */
hid_t zt_h5_capped_string_xfer(void);
void zt_h5_free_strings(char **s, size_t n);

/* Writes fp32 data (n = product of shape) as a dataset stored in `storage` dtype (rounded to nearest even
 * for fp16/bf16), with attributes "dtype" and "crc32c" (of the stored little-endian bytes). deflate: 0 off,
 * 1-9 zlib level (chunked storage). Returns the open dataset (close with H5Dclose) for more attributes. */
hid_t zt_h5_write_tensor(const zt_h5 *f, hid_t loc, const char *name, zt_dtype storage, const float *data,
                         int ndim, const int64_t *shape, int deflate);
/* Shape of a dataset (returns ndim) and its storage dtype (from the "dtype" attribute). */
int zt_h5_tensor_shape(const zt_h5 *f, hid_t loc, const char *name, int64_t *shape, zt_dtype *storage);
/* Reads a whole dataset into fp32, verifying its CRC32C (fatal, naming the file and dataset, on mismatch). */
void zt_h5_read_tensor(const zt_h5 *f, hid_t loc, const char *name, float *out, size_t n);
/* Checks the CRC32C of a whole 1-D dataset, read in pieces of 256K elements (fatal, naming the file and dataset,
 * on mismatch): what range readers call once per dataset before trusting its ranges. */
void zt_h5_verify_tensor(const zt_h5 *f, hid_t loc, const char *name);
/* Reads elements [start, start + n) of a 1-D fp32 dataset (no CRC check: see zt_h5_verify_tensor). */
void zt_h5_read_range(const zt_h5 *f, hid_t loc, const char *name, size_t start, size_t n, float *out);

#endif
