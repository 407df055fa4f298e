/* libFuzzer harness: the safetensors reader (checkpoints/safetensors.c) on arbitrary bytes taken as a whole file:
 * an 8-byte little-endian header length N, N bytes of header, then the data section. A length past the end of the
 * input is cut to what remains (zt_st_open refuses such a file, which test_safetensors checks; cutting it lets the
 * fuzzer grow or shrink the header without also finding the length). zt_st_parse_header runs on the bytes in memory;
 * an accepted header must list tensors with unique, terminated and findable names, 0..8 dimensions, offsets within
 * the data section, numel x element size bytes each, tiling the data section. Each F64/F32/F16/BF16 tensor is then
 * read by zt_st_read_f32 from a FILE over the input (fmemopen) and compared bit for bit with a conversion written
 * here from the bytes; other dtypes must be refused, named. The same bytes as a file go through zt_st_open, which
 * must give the same answer (tensors or message) whenever the length was not cut. A broken invariant aborts (a
 * finding), and so is a zt_fatal (the reader must never end the process: the import tool decides). Every input frees
 * what it allocated. */
#include <math.h>

#include "checkpoints/safetensors.h"
#include "tests/fuzz/fuzz.h"

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "fuzz_safetensors: invariant broken at line %d: %s\n", __LINE__, #cond); \
      abort();                                                                               \
    }                                                                                        \
  } while (0)

static const struct { const char *name; int size; } k_sizes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1}, {"U64", 8},
    {"U32", 4}, {"U16", 2}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"C64", 8}};

static int elem_size(const char *dtype) {
  for (size_t k = 0; k < sizeof k_sizes / sizeof k_sizes[0]; k++)
    if (strcmp(k_sizes[k].name, dtype) == 0) return k_sizes[k].size;
  return 0;
}

static float from_bits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* The format's F16: sign, 5-bit exponent (bias 15), 10-bit fraction; subnormals m * 2^-24. */
static float ref_f16(uint16_t h) {
  const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? from_bits(0x7f800000u | m << 13)
                                                     : ldexpf(1024.0f + (float)m, (int)e - 25);
  if (h & 0x8000u) {
    uint32_t u;
    memcpy(&u, &v, 4);
    v = from_bits(u | 0x80000000u);
  }
  return v;
}

/* Invariants of an accepted header, then every tensor read from `file` (the whole input) and checked. */
static void check_accepted(zt_st_reader *r, const uint8_t *file, size_t size) {
  const uint8_t *data = file + r->data_start;
  CHECK(r->n >= 0 && (r->n == 0 || r->tensors));
  int *order = malloc(((size_t)r->n + 1) * sizeof *order);
  CHECK(order);
  for (int i = 0; i < r->n; i++) {
    const zt_st_tensor *t = &r->tensors[i];
    CHECK(memchr(t->name, 0, sizeof t->name) && memchr(t->dtype_name, 0, sizeof t->dtype_name));
    CHECK(zt_st_find(r, t->name) == i); /* names are unique */
    CHECK(t->ndim >= 0 && t->ndim <= 8);
    const int es = elem_size(t->dtype_name);
    CHECK(es > 0);
    CHECK(t->begin <= t->end && t->end <= r->data_bytes);
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
      CHECK(t->shape[d] >= 0);
      numel *= (size_t)t->shape[d]; /* cannot overflow: the product of an accepted shape is the byte count / es */
      if (numel == 0) break;
    }
    CHECK(zt_st_numel(t) == numel && t->end - t->begin == (uint64_t)numel * (uint64_t)es);
    order[i] = i;
  }
  /* sorted by (begin, end), the tensors tile [0, data_bytes) */
  for (int i = 1; i < r->n; i++)
    for (int j = i; j > 0; j--) {
      const zt_st_tensor *a = &r->tensors[order[j - 1]], *b = &r->tensors[order[j]];
      if (a->begin < b->begin || (a->begin == b->begin && a->end <= b->end)) break;
      const int tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  uint64_t pos = 0;
  for (int i = 0; i < r->n; i++) {
    CHECK(r->tensors[order[i]].begin == pos);
    pos = r->tensors[order[i]].end;
  }
  CHECK(pos == r->data_bytes);
  free(order);

  char err[1024];
  for (int i = 0; i < r->n; i++) {
    const zt_st_tensor *t = &r->tensors[i];
    const size_t n = zt_st_numel(t);
    float *out = malloc((n ? n : 1) * sizeof(float));
    CHECK(out);
    const int rc = zt_st_read_f32(r, i, out, err, sizeof err);
    const uint8_t *p = data + t->begin;
    if (t->dtype == ZT_ST_OTHER) {
      CHECK(rc == -1 && strstr(err, t->dtype_name) && strstr(err, t->name));
    } else {
      CHECK(rc == 0);
      for (size_t k = 0; k < n; k++) {
        float want;
        if (t->dtype == ZT_ST_F32) {
          memcpy(&want, p + 4 * k, 4);
        } else if (t->dtype == ZT_ST_F64) {
          double d;
          memcpy(&d, p + 8 * k, 8);
          want = (float)d;
        } else {
          const uint16_t h = (uint16_t)(p[2 * k] | p[2 * k + 1] << 8);
          want = t->dtype == ZT_ST_F16 ? ref_f16(h) : from_bits((uint32_t)h << 16);
        }
        CHECK(memcmp(&want, &out[k], 4) == 0);
      }
    }
    free(out);
  }
  CHECK(zt_st_read_f32(r, r->n, NULL, err, sizeof err) == -1);
  (void)size;
}

static void run(const uint8_t *data, size_t size) {
  const char *path = zt_fuzz_file("x.safetensors", data, size);
  char err[1024] = "", err2[1024] = "";
  zt_st_reader file;
  const int rc_open = zt_st_open(&file, path, err2, sizeof err2);
  if (size < 8) {
    CHECK(rc_open == -1 && strstr(err2, "too short"));
    return;
  }
  uint64_t n = 0;
  for (int b = 0; b < 8; b++) n |= (uint64_t)data[b] << (8 * b);
  const int cut = n > size - 8 || n > 100000000;
  if (cut) n = size - 8;

  uint8_t *copy = malloc(size);
  CHECK(copy);
  memcpy(copy, data, size);
  zt_st_reader r;
  memset(&r, 0, sizeof r);
  snprintf(r.path, sizeof r.path, "%s", path);
  const int rc = zt_st_parse_header(&r, (const char *)copy + 8, (size_t)n, size - 8 - n, err, sizeof err);
  CHECK(rc == 0 || rc == -1);
  if (rc == 0) {
    CHECK(r.f == NULL);
    r.f = fmemopen(copy, size, "rb");
    CHECK(r.f);
    r.data_start = 8 + n;
    r.data_bytes = size - 8 - n;
    check_accepted(&r, copy, size);
  } else {
    CHECK(r.tensors == NULL && r.n == 0 && strncmp(err, path, strlen(path)) == 0);
  }
  /* the file path agrees with the in-memory parse */
  if (cut) {
    CHECK(rc_open == -1 && strstr(err2, "header length"));
  } else {
    CHECK(rc_open == rc);
    if (rc == 0) {
      CHECK(file.n == r.n && file.data_start == r.data_start && file.data_bytes == r.data_bytes);
      CHECK(r.n == 0 || memcmp(file.tensors, r.tensors, (size_t)r.n * sizeof *r.tensors) == 0);
    } else {
      CHECK(strcmp(err, err2) == 0);
    }
  }
  zt_st_close(&file);
  zt_st_close(&r);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ZT_FUZZ_TRY run(data, size);
  else {
    fprintf(stderr, "fuzz_safetensors: the reader called zt_fatal: %s\n", zt_last_fatal_detail());
    abort();
  }
  return 0;
}
