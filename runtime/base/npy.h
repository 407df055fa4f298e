/* NumPy .npy files: a writer (format 1.0) and a strict reader for little-endian float32 ("<f4") and
 * int32 ("<i4") C-order arrays of up to 4 dimensions, used by the PyTorch parity tests and the data
 * pipeline. Anything else (other dtypes, Fortran order, truncated or oversized files) dies naming
 * the file and the numbers involved. */
#ifndef ZT_NPY_H
#define ZT_NPY_H

#include <stdint.h>

#define ZT_NPY_MAX_DIMS 4

/* Writes data (numel = product of shape, 0-D: one element) as a version 1.0 .npy file.
 * descr is "<f4" or "<i4"; ndim in 0..4. Dies on any I/O error. */
void zt_npy_save(const char *path, const void *data, const char *descr, int ndim, const int64_t *shape);

/* Reads a .npy file (versions 1.0, 2.0, 3.0) whose dtype must be `descr` ("<f4" or "<i4") and whose
 * order must be C. Sets *ndim (0..4) and shape[0..ndim) (shape has room for 4) and returns the data
 * in a malloc'd buffer (free with free()). */
void *zt_npy_load(const char *path, const char *descr, int *ndim, int64_t *shape);

#endif
