/* NumPy .npy files: a writer (format 1.0) and a strict reader for little-endian C-order arrays of up
 * to 4 dimensions with dtypes "<f4" float32, "<i4" int32, "<u4" uint32, "<i8" int64, "<u8" uint64
 * and "<f8" float64, used by the PyTorch parity tests and the data pipeline (index caches). Anything else (other dtypes, Fortran order, truncated or oversized files) dies naming
 * the file and the numbers involved. */
#ifndef ZT_NPY_H
#define ZT_NPY_H

#include <stddef.h>
#include <stdint.h>

#define ZT_NPY_MAX_DIMS 4

/* Writes data (numel = product of shape, 0-D: one element) as a version 1.0 .npy file.
 * descr is one of the dtypes above; ndim in 0..4. Dies on any I/O error. */
void zt_npy_save(const char *path, const void *data, const char *descr, int ndim, const int64_t *shape);

/* Bytes per element of a supported descr (dies on others). */
size_t zt_npy_itemsize(const char *descr);

/* Reads a .npy file (versions 1.0, 2.0, 3.0) whose dtype must be `descr` and whose
 * order must be C. Sets *ndim (0..4) and shape[0..ndim) (shape has room for 4) and returns the data
 * in a malloc'd buffer (free with free()). */
void *zt_npy_load(const char *path, const char *descr, int *ndim, int64_t *shape);
/* The same for any supported dtype, returned in descr (e.g. "<u4"). */
void *zt_npy_load_any(const char *path, char descr[8], int *ndim, int64_t *shape);

#endif
