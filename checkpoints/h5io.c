/* HDF5 helpers for checkpoint files (see h5io.h). HDF5's own error stack printing is turned off: every
 * failure is reported once, through zt_fatal, with the file and object names. */
#include "checkpoints/h5io.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/crc32c.h"
#include "runtime/base/error.h"

void zt_h5_init(void) {
  static int done = 0;
  if (!done) {
    /* no file is ever opened by two writers, and HDF5's flock fails on some parallel file systems (Lustre,
     * NFS: "unable to lock file"); a value the user set wins */
    setenv("HDF5_USE_FILE_LOCKING", "FALSE", 0);
    /* no library shutdown at exit: after a failed write (a full disk) zt_fatal exits with the file still open,
     * and HDF5's atexit handler then flushes it again and crashes (SIGSEGV in H5_term_library); every file a
     * successful run opens is closed explicitly, and the temporary directory of a failed save is discarded.
     * Must come before the library initializes, so before any other HDF5 call. */
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    done = 1;
  }
}

void zt_h5_create(zt_h5 *f, const char *path) {
  zt_h5_init();
  snprintf(f->path, sizeof f->path, "%s", path);
  f->id = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  zt_check(f->id >= 0, "checkpoint", "%s: cannot create the HDF5 file (directory missing or not writable?)", path);
}

void zt_h5_open(zt_h5 *f, const char *path) {
  zt_h5_init();
  snprintf(f->path, sizeof f->path, "%s", path);
  zt_h5_child_note(path);
  f->id = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  zt_check(f->id >= 0, "checkpoint", "%s: not a readable HDF5 file (truncated or corrupted?)", path);
}

void zt_h5_close(zt_h5 *f) {
  if (f->id >= 0) zt_check(H5Fclose(f->id) >= 0, "checkpoint", "%s: closing the HDF5 file failed (disk full or an I/O error?)", f->path);
  f->id = -1;
}

hid_t zt_h5_group_create(const zt_h5 *f, hid_t loc, const char *name) {
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
  H5Pclose(gcpl);
  zt_check(g >= 0, "checkpoint", "%s: cannot create group %s", f->path, name);
  return g;
}

hid_t zt_h5_group_open(const zt_h5 *f, hid_t loc, const char *name) {
  hid_t g = zt_h5_exists(loc, name) ? H5Gopen2(loc, name, H5P_DEFAULT) : -1;
  zt_check(g >= 0, "checkpoint", "%s: group /%s is missing", f->path, name);
  return g;
}

int zt_h5_exists(hid_t loc, const char *name) { return H5Lexists(loc, name, H5P_DEFAULT) > 0; }

/* ---- attributes ---------------------------------------------------------------------------------- */

static void write_attr(const zt_h5 *f, hid_t obj, const char *name, hid_t type, hid_t space, const void *v) {
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  zt_check(a >= 0 && H5Awrite(a, type, v) >= 0, "checkpoint", "%s: cannot write attribute %s", f->path, name);
  H5Aclose(a);
}

void zt_h5_attr_i64(const zt_h5 *f, hid_t obj, const char *name, int64_t v) {
  hid_t s = H5Screate(H5S_SCALAR);
  write_attr(f, obj, name, H5T_NATIVE_INT64, s, &v);
  H5Sclose(s);
}

void zt_h5_attr_f64(const zt_h5 *f, hid_t obj, const char *name, double v) {
  hid_t s = H5Screate(H5S_SCALAR);
  write_attr(f, obj, name, H5T_NATIVE_DOUBLE, s, &v);
  H5Sclose(s);
}

static hid_t vlen_str_type(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

void zt_h5_attr_str(const zt_h5 *f, hid_t obj, const char *name, const char *str) {
  hid_t s = H5Screate(H5S_SCALAR), t = vlen_str_type();
  const char *p = str ? str : "";
  write_attr(f, obj, name, t, s, &p);
  H5Tclose(t);
  H5Sclose(s);
}

void zt_h5_attr_i64v(const zt_h5 *f, hid_t obj, const char *name, const int64_t *v, int n) {
  hsize_t dim = (hsize_t)n;
  hid_t s = n > 0 ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_NULL);
  write_attr(f, obj, name, H5T_NATIVE_INT64, s, v);
  H5Sclose(s);
}

int zt_h5_has_attr(hid_t obj, const char *name) { return H5Aexists(obj, name) > 0; }

static hid_t open_attr(const zt_h5 *f, hid_t obj, const char *where, const char *name) {
  hid_t a = H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
  zt_check(a >= 0, "checkpoint", "%s: attribute %s of %s is missing", f->path, name, where);
  return a;
}

static void read_num_attr(const zt_h5 *f, hid_t obj, const char *where, const char *name, hid_t mem, void *v) {
  hid_t a = open_attr(f, obj, where, name);
  hid_t s = H5Aget_space(a), t = H5Aget_type(a);
  const int ok = H5Sget_simple_extent_npoints(s) == 1 &&
                 (H5Tget_class(t) == H5T_INTEGER || H5Tget_class(t) == H5T_FLOAT) && H5Aread(a, mem, v) >= 0;
  H5Tclose(t);
  H5Sclose(s);
  H5Aclose(a);
  zt_check(ok, "checkpoint", "%s: attribute %s of %s is not a number", f->path, name, where);
}

int64_t zt_h5_get_i64(const zt_h5 *f, hid_t obj, const char *where, const char *name) {
  int64_t v = 0;
  read_num_attr(f, obj, where, name, H5T_NATIVE_INT64, &v);
  return v;
}

double zt_h5_get_f64(const zt_h5 *f, hid_t obj, const char *where, const char *name) {
  double v = 0;
  read_num_attr(f, obj, where, name, H5T_NATIVE_DOUBLE, &v);
  return v;
}

char *zt_h5_get_str(const zt_h5 *f, hid_t obj, const char *where, const char *name) {
  hid_t a = open_attr(f, obj, where, name);
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  zt_check(H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0 && H5Sget_simple_extent_npoints(sp) == 1,
           "checkpoint", "%s: attribute %s of %s is not a string", f->path, name, where);
  H5Sclose(sp);
  hid_t mt = vlen_str_type();
  char *p = NULL;
  zt_check(H5Aread(a, mt, &p) >= 0 && p, "checkpoint", "%s: cannot read attribute %s of %s", f->path, name, where);
  char *out = strdup(p);
  H5free_memory(p);
  H5Tclose(mt);
  H5Tclose(t);
  H5Aclose(a);
  return out;
}

int zt_h5_get_i64v(const zt_h5 *f, hid_t obj, const char *where, const char *name, int64_t *v, int max) {
  hid_t a = open_attr(f, obj, where, name);
  hid_t s = H5Aget_space(a), t = H5Aget_type(a);
  const H5T_class_t c = H5Tget_class(t);
  H5Tclose(t);
  zt_check(c == H5T_INTEGER || c == H5T_FLOAT, "checkpoint", "%s: attribute %s of %s is not a list of numbers",
           f->path, name, where);
  hssize_t n = H5Sget_select_npoints(s);
  if (H5Sget_simple_extent_type(s) == H5S_NULL) n = 0;
  zt_check(n >= 0 && n <= max, "checkpoint", "%s: attribute %s of %s has %lld values, at most %d expected", f->path,
           name, where, (long long)n, max);
  if (n > 0)
    zt_check(H5Aread(a, H5T_NATIVE_INT64, v) >= 0, "checkpoint", "%s: cannot read attribute %s of %s", f->path, name,
             where);
  H5Sclose(s);
  H5Aclose(a);
  return (int)n;
}

/* ---- sizes ------------------------------------------------------------------------------------- */

/* A dataset's n elements must be stored in the file: HDF5 takes a dataspace's dimensions from the file and reads
 * unallocated or sparse storage as fill values, so a damaged or edited header could otherwise make a reader
 * allocate and fill gigabytes (or wait minutes) for a few bytes of file. Contiguous and compact datasets hold
 * exactly n x the element size; chunked ones (deflate) at least 1/1100 of it (zlib's best ratio is about 1032);
 * string lists at least n references. */
static void check_storage(const zt_h5 *f, hid_t d, const char *name, size_t n) {
  hid_t t = H5Dget_type(d), p = H5Dget_create_plist(d);
  const size_t es = H5Tget_size(t);
  const int vlen = H5Tis_variable_str(t) > 0; /* stored as global-heap references: at least es bytes each */
  const H5D_layout_t layout = H5Pget_layout(p);
  const unsigned long long stored = (unsigned long long)H5Dget_storage_size(d);
  H5Pclose(p);
  H5Tclose(t);
  zt_check(es > 0 && n <= ((size_t)1 << 46) / es, "checkpoint", "%s: dataset %s claims %zu elements of %zu bytes",
           f->path, name, n, es);
  const unsigned long long need = (unsigned long long)n * es;
  if (vlen)
    zt_check(stored >= need, "checkpoint", "%s: dataset %s claims %zu strings but stores %llu bytes: a damaged file",
             f->path, name, n, stored);
  else if (layout == H5D_CHUNKED)
    zt_check(stored * 1100ull >= need, "checkpoint", "%s: dataset %s claims %zu elements (%llu bytes) but stores "
             "%llu compressed bytes: a damaged file", f->path, name, n, need, stored);
  else
    zt_check(stored == need && (layout == H5D_CONTIGUOUS || layout == H5D_COMPACT), "checkpoint", "%s: dataset %s "
             "claims %zu elements (%llu bytes) but stores %llu bytes: a damaged file", f->path, name, n, need, stored);
}

/* ---- string lists -------------------------------------------------------------------------------- */

void zt_h5_write_strings(const zt_h5 *f, hid_t loc, const char *name, const char *const *s, size_t n) {
  hsize_t dim = (hsize_t)n;
  hid_t sp = H5Screate_simple(1, &dim, NULL), t = vlen_str_type();
  hid_t d = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  zt_check(d >= 0 && (n == 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) >= 0), "checkpoint",
           "%s: cannot write dataset %s", f->path, name);
  H5Dclose(d);
  H5Tclose(t);
  H5Sclose(sp);
}

/* HDF5 allocates a variable-length string at the length its heap entry claims: a damaged entry claimed 1.8 GB
 * for a parameter name. Strings read here (names, at most a few KiB) are refused past 16 MiB each. */
static void *capped_alloc(size_t n, void *info) {
  (void)info;
  return n <= ((size_t)16 << 20) ? malloc(n) : NULL;
}

static void capped_free(void *p, void *info) {
  (void)info;
  free(p);
}

hid_t zt_h5_capped_string_xfer(void) {
  hid_t dx = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_vlen_mem_manager(dx, capped_alloc, NULL, capped_free, NULL);
  return dx;
}

size_t zt_h5_read_strings(const zt_h5 *f, hid_t loc, const char *name, char ***out) {
  hid_t d = zt_h5_exists(loc, name) ? H5Dopen2(loc, name, H5P_DEFAULT) : -1;
  zt_check(d >= 0, "checkpoint", "%s: dataset %s is missing", f->path, name);
  hid_t sp = H5Dget_space(d), t = vlen_str_type();
  hssize_t n = H5Sget_simple_extent_npoints(sp);
  zt_check(n >= 0, "checkpoint", "%s: cannot read dataset %s", f->path, name);
  check_storage(f, d, name, (size_t)n);
  char **raw = zt_calloc(n > 0 ? (size_t)n : 1, sizeof(char *), "checkpoint strings");
  hid_t dx = zt_h5_capped_string_xfer();
  const int ok = n == 0 || H5Dread(d, t, H5S_ALL, H5S_ALL, dx, raw) >= 0;
  H5Pclose(dx);
  zt_check(ok, "checkpoint", "%s: cannot read dataset %s (a string over 16 MiB, or a damaged file)", f->path, name);
  char **s = zt_calloc(n > 0 ? (size_t)n : 1, sizeof(char *), "checkpoint strings");
  for (hssize_t i = 0; i < n; i++) {
    s[i] = strdup(raw[i] ? raw[i] : "");
    free(raw[i]); /* allocated by capped_alloc */
  }
  free(raw);
  H5Tclose(t);
  H5Sclose(sp);
  H5Dclose(d);
  *out = s;
  return (size_t)n;
}

void zt_h5_free_strings(char **s, size_t n) {
  for (size_t i = 0; i < n; i++) free(s[i]);
  free(s);
}

/* ---- tensors ------------------------------------------------------------------------------------- */

/* IEEE binary16 as an HDF5 float type (h5py maps it to numpy float16). */
static hid_t half_type(void) {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  return t;
}

static hid_t file_type(zt_dtype dt) {
  switch (dt) {
  case ZT_DTYPE_FP16: return half_type();
  case ZT_DTYPE_BF16: return H5Tcopy(H5T_STD_U16LE);
  default: return H5Tcopy(H5T_IEEE_F32LE);
  }
}

static hid_t mem_type(zt_dtype dt) {
  switch (dt) {
  case ZT_DTYPE_FP16: return half_type();
  case ZT_DTYPE_BF16: return H5Tcopy(H5T_NATIVE_UINT16);
  default: return H5Tcopy(H5T_NATIVE_FLOAT);
  }
}

static zt_dtype dtype_from_name(const zt_h5 *f, const char *where, const char *s) {
  if (strcmp(s, "fp32") == 0) return ZT_DTYPE_FP32;
  if (strcmp(s, "fp16") == 0) return ZT_DTYPE_FP16;
  if (strcmp(s, "bf16") == 0) return ZT_DTYPE_BF16;
  zt_fatal("checkpoint", "%s: %s has dtype \"%s\" (expected fp32, fp16 or bf16)", f->path, where, s);
}

hid_t zt_h5_write_tensor(const zt_h5 *f, hid_t loc, const char *name, zt_dtype storage, const float *data,
                         int ndim, const int64_t *shape, int deflate) {
  hsize_t dims[8];
  size_t n = 1;
  for (int i = 0; i < ndim; i++) {
    dims[i] = (hsize_t)shape[i];
    n *= (size_t)shape[i];
  }
  const size_t es = zt_dtype_size(storage);
  const void *bytes = data;
  void *conv = NULL;
  if (storage != ZT_DTYPE_FP32) {
    conv = zt_malloc(n * es + 1, "checkpoint tensor conversion");
    zt_convert(conv, storage, data, ZT_DTYPE_FP32, n);
    bytes = conv;
  }
  hid_t sp = H5Screate_simple(ndim, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (deflate > 0 && n > 0) { /* chunks of whole rows, about 1M elements */
    hsize_t chunk[8];
    size_t rest = 1;
    for (int i = ndim - 1; i >= 0; i--) {
      chunk[i] = dims[i];
      if (i > 0) rest *= dims[i];
    }
    if (ndim > 0) {
      size_t rows = rest ? (1u << 20) / rest : 1;
      chunk[0] = rows < 1 ? 1 : rows > dims[0] ? dims[0] : rows;
    }
    H5Pset_chunk(dcpl, ndim, chunk);
    H5Pset_deflate(dcpl, (unsigned)deflate);
  }
  hid_t ft = file_type(storage), mt = mem_type(storage);
  hid_t d = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  zt_check(d >= 0 && (n == 0 || H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes) >= 0), "checkpoint",
           "%s: cannot write dataset %s (%zu elements; disk full?)", f->path, name, n);
  zt_h5_attr_str(f, d, "dtype", zt_dtype_name(storage));
  zt_h5_attr_i64(f, d, "crc32c", (int64_t)zt_crc32c(0, bytes, n * es));
  H5Tclose(ft);
  H5Tclose(mt);
  H5Pclose(dcpl);
  H5Sclose(sp);
  free(conv);
  return d;
}

static hid_t open_dataset(const zt_h5 *f, hid_t loc, const char *name) {
  hid_t d = zt_h5_exists(loc, name) ? H5Dopen2(loc, name, H5P_DEFAULT) : -1;
  zt_check(d >= 0, "checkpoint", "%s: dataset %s is missing", f->path, name);
  return d;
}

static zt_dtype stored_dtype(const zt_h5 *f, hid_t d, const char *name) {
  char *s = zt_h5_get_str(f, d, name, "dtype");
  zt_dtype dt = dtype_from_name(f, name, s);
  free(s);
  return dt;
}

int zt_h5_tensor_shape(const zt_h5 *f, hid_t loc, const char *name, int64_t *shape, zt_dtype *storage) {
  hid_t d = open_dataset(f, loc, name);
  hid_t sp = H5Dget_space(d);
  int nd = H5Sget_simple_extent_ndims(sp);
  hsize_t dims[8];
  zt_check(nd >= 0 && nd <= 8, "checkpoint", "%s: dataset %s has %d dimensions", f->path, name, nd);
  H5Sget_simple_extent_dims(sp, dims, NULL);
  size_t n = 1;
  for (int i = 0; i < nd; i++) {
    shape[i] = (int64_t)dims[i];
    zt_check(dims[i] <= ((hsize_t)1 << 46) && (dims[i] == 0 || n <= ((size_t)1 << 46) / dims[i]), "checkpoint",
             "%s: dataset %s has a dimension of %llu", f->path, name, (unsigned long long)dims[i]);
    n *= (size_t)dims[i];
  }
  check_storage(f, d, name, n);
  if (storage) *storage = stored_dtype(f, d, name);
  H5Sclose(sp);
  H5Dclose(d);
  return nd;
}

void zt_h5_read_tensor(const zt_h5 *f, hid_t loc, const char *name, float *out, size_t n) {
  hid_t d = open_dataset(f, loc, name);
  hid_t sp = H5Dget_space(d);
  const size_t have = (size_t)H5Sget_simple_extent_npoints(sp);
  zt_check(have == n, "checkpoint", "%s: dataset %s has %zu elements, expected %zu", f->path, name, have, n);
  check_storage(f, d, name, n);
  const zt_dtype dt = stored_dtype(f, d, name);
  const size_t es = zt_dtype_size(dt);
  void *buf = dt == ZT_DTYPE_FP32 ? (void *)out : zt_malloc(n * es + 1, "checkpoint tensor read");
  hid_t mt = mem_type(dt);
  zt_check(n == 0 || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "checkpoint",
           "%s: cannot read dataset %s (truncated or corrupted file?)", f->path, name);
  const uint32_t got = zt_crc32c(0, buf, n * es);
  const int64_t want64 = zt_h5_has_attr(d, "crc32c") ? zt_h5_get_i64(f, d, name, "crc32c") : -1;
  const uint32_t want = (uint32_t)want64;
  if (want != got && buf != (void *)out) free(buf);
  zt_check(want64 >= 0, "checkpoint", "%s: attribute crc32c of %s is missing", f->path, name);
  zt_check(want == got, "checkpoint", "%s: dataset %s is corrupted: crc32c %08x, recorded %08x", f->path, name, got,
           want);
  if (dt != ZT_DTYPE_FP32) {
    zt_convert(out, ZT_DTYPE_FP32, buf, dt, n);
    free(buf);
  }
  H5Tclose(mt);
  H5Sclose(sp);
  H5Dclose(d);
}

void zt_h5_read_range(const zt_h5 *f, hid_t loc, const char *name, size_t start, size_t n, float *out) {
  if (n == 0) return;
  hid_t d = open_dataset(f, loc, name);
  hid_t sp = H5Dget_space(d);
  const size_t have = (size_t)H5Sget_simple_extent_npoints(sp);
  zt_check(start <= have && n <= have - start && H5Sget_simple_extent_ndims(sp) == 1, "checkpoint",
           "%s: dataset %s has %zu elements; elements [%zu, %zu) were asked for", f->path, name, have, start,
           start + n);
  hsize_t off = start, cnt = n;
  H5Sselect_hyperslab(sp, H5S_SELECT_SET, &off, NULL, &cnt, NULL);
  hid_t ms = H5Screate_simple(1, &cnt, NULL);
  zt_check(H5Dread(d, H5T_NATIVE_FLOAT, ms, sp, H5P_DEFAULT, out) >= 0, "checkpoint",
           "%s: cannot read elements [%zu, %zu) of dataset %s", f->path, start, start + n, name);
  H5Sclose(ms);
  H5Sclose(sp);
  H5Dclose(d);
}

void zt_h5_verify_tensor(const zt_h5 *f, hid_t loc, const char *name) {
  hid_t d = open_dataset(f, loc, name);
  hid_t sp = H5Dget_space(d);
  const int nd = H5Sget_simple_extent_ndims(sp);
  const hssize_t total = H5Sget_simple_extent_npoints(sp);
  zt_check(nd == 1 && total >= 0, "checkpoint", "%s: dataset %s has %d dimensions, 1 expected", f->path, name, nd);
  check_storage(f, d, name, (size_t)total);
  const zt_dtype dt = stored_dtype(f, d, name);
  const size_t es = zt_dtype_size(dt), step = (size_t)1 << 18;
  hid_t mt = mem_type(dt);
  void *buf = zt_malloc(step * es, "checkpoint dataset check");
  uint32_t crc = 0;
  for (size_t at = 0; at < (size_t)total; at += step) { /* in pieces: memory stays at 1 MiB */
    hsize_t off = at, cnt = (size_t)total - at < step ? (size_t)total - at : step;
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, &off, NULL, &cnt, NULL);
    hid_t ms = H5Screate_simple(1, &cnt, NULL);
    const int ok = H5Dread(d, mt, ms, sp, H5P_DEFAULT, buf) >= 0;
    H5Sclose(ms);
    if (!ok) free(buf); /* a refusal frees its 1 MiB: readers that survive refusals (tests) do not grow */
    zt_check(ok, "checkpoint", "%s: cannot read dataset %s (truncated or corrupted file?)", f->path, name);
    crc = zt_crc32c(crc, buf, (size_t)cnt * es);
  }
  free(buf);
  const uint32_t want = (uint32_t)zt_h5_get_i64(f, d, name, "crc32c");
  zt_check(want == crc, "checkpoint", "%s: dataset %s is corrupted: crc32c %08x, recorded %08x", f->path, name, crc,
           want);
  H5Tclose(mt);
  H5Sclose(sp);
  H5Dclose(d);
}
