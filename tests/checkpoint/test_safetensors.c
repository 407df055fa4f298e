/* The safetensors reader (checkpoints/safetensors.c): files of the writer read back bit for bit, hand-written F16,
 * BF16 and F64 files converted exactly (subnormals, infinities, NaN payloads, F64 ties to even), and every refusal
 * of a bad header or file returning -1 with a message naming the file and the tensor or number at fault. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/safetensors.h"
#include "tests/unit/testutil.h"

static char g_dir[64];

static const char *tmp_path(const char *name) {
  static char path[2][256];
  static int k;
  k ^= 1;
  snprintf(path[k], sizeof path[k], "%s/%s", g_dir, name);
  return path[k];
}

/* Writes an 8-byte little-endian header length, the header and the data. */
static const char *write_raw(const char *name, const char *header, size_t hlen, const void *data, size_t dlen) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "wb");
  if (!f) { perror(path); exit(2); }
  unsigned char le[8];
  for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)hlen >> (8 * b));
  if (fwrite(le, 1, 8, f) != 8 || fwrite(header, 1, hlen, f) != hlen || (dlen && fwrite(data, 1, dlen, f) != dlen) ||
      fclose(f) != 0) {
    perror(path);
    exit(2);
  }
  return path;
}

static uint32_t bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float from_bits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* The writer's tensors (a matrix, a vector with special values, a scalar, an empty one) come back bit for bit. */
static void test_roundtrip(void) {
  zt_st_entry e[4] = {{.name = "model.embed_tokens.weight", .ndim = 2, .shape = {5, 3}},
                      {.name = "a \"quoted\\\" name", .ndim = 1, .shape = {7}},
                      {.name = "scalar", .ndim = 0},
                      {.name = "empty", .ndim = 2, .shape = {0, 3}}};
  float m[15], v[7] = {-0.0f, INFINITY, -INFINITY, from_bits(0x7fc12345u), from_bits(0x00000001u), FLT_MAX,
                       1.0f / 3.0f}, s = 42.5f;
  tu_rng rng = {7};
  tu_fill(&rng, m, 15, -2, 2);
  const char *path = tmp_path("roundtrip.safetensors");
  zt_st_writer w;
  zt_st_begin(&w, path, e, 4);
  zt_st_write(&w, m, 15);
  zt_st_write(&w, v, 7);
  zt_st_write(&w, &s, 1);
  zt_st_write(&w, NULL, 0);
  zt_st_end(&w);

  zt_st_reader r;
  char err[1024] = "";
  int rc = zt_st_open(&r, path, err, sizeof err);
  if (!tu_check(rc == 0 && r.n == 4, "roundtrip: open", "rc %d n %d: %s", rc, r.n, err)) return;
  int ok = 1;
  for (int i = 0; i < 4; i++) {
    const zt_st_tensor *t = &r.tensors[i];
    ok &= strcmp(t->name, e[i].name) == 0 && t->dtype == ZT_ST_F32 && strcmp(t->dtype_name, "F32") == 0 &&
          t->ndim == e[i].ndim && zt_st_find(&r, e[i].name) == i;
    for (int d = 0; d < t->ndim; d++) ok &= t->shape[d] == e[i].shape[d];
  }
  tu_check(ok, "roundtrip: names, dtypes, shapes, find", "tensor 0 is \"%s\" %s ndim %d", r.tensors[0].name,
           r.tensors[0].dtype_name, r.tensors[0].ndim);
  tu_check(zt_st_find(&r, "missing") == -1 && zt_st_numel(&r.tensors[2]) == 1 && zt_st_numel(&r.tensors[3]) == 0 &&
           zt_st_numel(&r.tensors[0]) == 15, "roundtrip: numel and a missing name", "numel %zu %zu %zu",
           zt_st_numel(&r.tensors[0]), zt_st_numel(&r.tensors[2]), zt_st_numel(&r.tensors[3]));
  float gm[15], gv[7], gs = 0, ge = -1;
  rc = zt_st_read_f32(&r, 0, gm, err, sizeof err) | zt_st_read_f32(&r, 1, gv, err, sizeof err) |
       zt_st_read_f32(&r, 2, &gs, err, sizeof err) | zt_st_read_f32(&r, 3, &ge, err, sizeof err);
  tu_check(rc == 0, "roundtrip: reads", "%s", err);
  tu_cmp_exact("roundtrip: matrix bit for bit", gm, m, 15);
  tu_cmp_exact("roundtrip: -0, inf, NaN payload, subnormal, FLT_MAX bit for bit", gv, v, 7);
  tu_cmp_exact("roundtrip: scalar", &gs, &s, 1);
  tu_check(ge == -1, "roundtrip: an empty tensor writes nothing", "out[0] = %g", ge);
  tu_check(r.data_bytes == 4 * 23 && r.data_start % 8 == 0, "roundtrip: data_start and data_bytes",
           "start %llu bytes %llu", (unsigned long long)r.data_start, (unsigned long long)r.data_bytes);
  zt_st_close(&r);
  tu_check(r.f == NULL && r.tensors == NULL && r.n == 0, "roundtrip: close", "%s", "");
}

/* F16, BF16 and F64 values chosen at the edges of the conversions; an I64 tensor is refused by read_f32. */
static void test_conversions(void) {
  static const uint16_t f16[] = {0x3c00, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x8000, 0x3555,
                                 0x7e00, 0x7d01};
  const float f16_want[] = {1.0f, ldexpf(1, -24), -ldexpf(1, -24), ldexpf(1023, -24), ldexpf(1, -14), 65504.0f,
                            INFINITY, -INFINITY, -0.0f, ldexpf(1365, -12), from_bits(0x7fc00000u),
                            from_bits(0x7fa02000u)};
  static const uint16_t bf16[] = {0x3f80, 0xc000, 0x0001, 0x7f80, 0x7fc1, 0x8000};
  const float bf16_want[] = {1.0f, -2.0f, from_bits(0x00010000u), INFINITY, from_bits(0x7fc10000u), -0.0f};
  const double f64[] = {1.0, 0.1, 1e300, -1e300, 1e-50, 1.0 + ldexp(1, -24), 1.0 + 3 * ldexp(1, -24), -0.0,
                        (double)FLT_MAX, ldexp(1, -149)};
  const float f64_want[] = {1.0f, from_bits(0x3dcccccdu), INFINITY, -INFINITY, 0.0f, 1.0f, 1.0f + ldexpf(1, -22),
                            -0.0f, FLT_MAX, from_bits(1)};
  const int64_t i64[2] = {1, -1};
  unsigned char data[24 + 12 + 80 + 16];
  memcpy(data, f16, 24);
  memcpy(data + 24, bf16, 12);
  memcpy(data + 36, f64, 80);
  memcpy(data + 116, i64, 16);
  /* listed out of offset order, with metadata and padding: the reader sorts by offsets to check the tiling */
  const char *hdr = "{\"bf\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[24,36]},"
                    "\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"},"
                    "\"half\":{\"shape\":[12],\"dtype\":\"F16\",\"data_offsets\":[0,24]},"
                    "\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[116,132]},"
                    "\"dbl\":{\"dtype\":\"F64\",\"shape\":[10],\"data_offsets\":[36,116]}}   \n ";
  const char *path = write_raw("conv.safetensors", hdr, strlen(hdr), data, sizeof data);
  zt_st_reader r;
  char err[1024] = "";
  if (!tu_check(zt_st_open(&r, path, err, sizeof err) == 0 && r.n == 4, "conversions: open", "n %d: %s", r.n, err))
    return;
  tu_check(strcmp(r.tensors[0].name, "bf") == 0 && r.tensors[0].dtype == ZT_ST_BF16 && r.tensors[0].ndim == 2 &&
           r.tensors[0].shape[1] == 3 && r.tensors[2].dtype == ZT_ST_OTHER &&
           strcmp(r.tensors[2].dtype_name, "I64") == 0 && r.tensors[3].dtype == ZT_ST_F64 &&
           r.tensors[3].begin == 36 && r.tensors[3].end == 116, "conversions: header order, dtypes, offsets",
           "first \"%s\" %s", r.tensors[0].name, r.tensors[0].dtype_name);
  float got[12];
  int rc = zt_st_read_f32(&r, zt_st_find(&r, "half"), got, err, sizeof err);
  if (tu_check(rc == 0, "conversions: F16 read", "%s", err)) tu_cmp_exact("conversions: F16 exact", got, f16_want, 12);
  rc = zt_st_read_f32(&r, zt_st_find(&r, "bf"), got, err, sizeof err);
  if (tu_check(rc == 0, "conversions: BF16 read", "%s", err))
    tu_cmp_exact("conversions: BF16 exact", got, bf16_want, 6);
  rc = zt_st_read_f32(&r, zt_st_find(&r, "dbl"), got, err, sizeof err);
  if (tu_check(rc == 0, "conversions: F64 read", "%s", err))
    tu_cmp_exact("conversions: F64 rounded to nearest even", got, f64_want, 10);
  rc = zt_st_read_f32(&r, zt_st_find(&r, "ids"), got, err, sizeof err);
  tu_check(rc == -1 && strstr(err, "I64") && strstr(err, "\"ids\"") && strstr(err, path),
           "conversions: I64 refused naming the dtype", "rc %d: %s", rc, err);
  rc = zt_st_read_f32(&r, 4, got, err, sizeof err);
  tu_check(rc == -1 && strstr(err, "no tensor 4"), "conversions: index out of range", "rc %d: %s", rc, err);
  zt_st_close(&r);

  /* every F16 bit pattern twice and three more (131,075 values, across the reader's 64 KiB chunks) against a
   * conversion written here from the format's definition */
  enum { N = 2 * 65536 + 3 };
  uint16_t *all = malloc(N * 2);
  float *want = malloc(N * 4), *out = malloc(N * 4);
  if (!all || !want || !out) exit(2);
  for (uint32_t i = 0; i < N; i++) {
    const uint16_t h = (uint16_t)(i * 40503u); /* odd multiplier: a permutation of the 16-bit patterns */
    const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
    all[i] = h;
    want[i] = e == 0 ? ldexpf((float)m, -24) : e == 31 ? from_bits(0x7f800000u | m << 13) : ldexpf(1024.0f + m,
                                                                                                  (int)e - 25);
    if (h & 0x8000u) want[i] = from_bits(bits(want[i]) | 0x80000000u);
  }
  char big_hdr[128];
  snprintf(big_hdr, sizeof big_hdr, "{\"all\":{\"dtype\":\"F16\",\"shape\":[%d],\"data_offsets\":[0,%d]}}", N, 2 * N);
  path = write_raw("all_f16.safetensors", big_hdr, strlen(big_hdr), all, 2 * (size_t)N);
  rc = zt_st_open(&r, path, err, sizeof err);
  if (tu_check(rc == 0, "conversions: all F16 open", "%s", err)) {
    rc = zt_st_read_f32(&r, 0, out, err, sizeof err);
    if (tu_check(rc == 0, "conversions: all F16 read", "%s", err))
      tu_cmp_exact("conversions: every F16 pattern exact", out, want, N);
  }
  zt_st_close(&r);
  free(all);
  free(want);
  free(out);
}

typedef struct {
  const char *what, *json;
  uint64_t data_bytes;
  const char *needle[2];
} bad_header;

/* Every refusal of zt_st_parse_header: -1, a message naming the file and the tensor or number, nothing kept. */
static void test_refusals(void) {
  char long_name[300];
  memset(long_name, 'n', 200);
  long_name[200] = 0;
  char long_hdr[400];
  snprintf(long_hdr, sizeof long_hdr, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", long_name);
#define E(name, rest) "{\"" name "\":{" rest "}}"
#define W(rest) E("w", rest)
  const bad_header cases[] = {
      {"not an object", "[1, 2]", 0, {"not a JSON object", "0x5b"}},
      {"empty header", "  ", 0, {"empty", "2 bytes"}},
      {"UTF-8 byte order mark", "\xef\xbb\xbf{}", 0, {"not a JSON object", "0xef"}},
      {"invalid JSON", "{\"w\": {\"dtype\": \"F32\",", 0, {"not valid JSON", "of 22"}},
      {"trailing bytes", "{} {}", 0, {"after its JSON object", "from byte 2"}},
      {"metadata not an object", "{\"__metadata__\": [1]}", 0, {"\"__metadata__\"", "an array"}},
      {"metadata value not a string", "{\"__metadata__\": {\"format\": 1}}", 0, {"\"format\"", "is 1"}},
      {"metadata twice", "{\"__metadata__\": {}, \"__metadata__\": {}}", 0, {"\"__metadata__\" appears twice", 0}},
      {"entry not an object", "{\"w\": 5}", 0, {"\"w\"", "is 5"}},
      {"no dtype", W("\"shape\":[1],\"data_offsets\":[0,4]"), 4, {"\"w\"", "no \"dtype\""}},
      {"no data_offsets", W("\"shape\":[1],\"dtype\":\"F32\""), 4, {"\"w\"", "no \"data_offsets\""}},
      {"unknown member", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1"), 4,
       {"\"w\"", "\"extra\""}},
      {"member twice", W("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
       {"\"w\"", "\"dtype\" appears twice"}},
      {"dtype not a string", W("\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]"), 4, {"\"w\"", "\"dtype\" is 4"}},
      {"unknown dtype", W("\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, {"\"w\"", "\"F33\""}},
      {"sub-byte dtype", W("\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]"), 1, {"\"w\"", "\"F4\""}},
      {"shape not an array", W("\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,12]"), 12,
       {"\"w\"", "\"shape\" is 3"}},
      {"negative dimension", W("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4,
       {"\"w\"", "shape[0] is -1"}},
      {"fractional dimension", W("\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,12]"), 12,
       {"\"w\"", "shape[1] is 1.5"}},
      {"string dimension", W("\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]"), 8,
       {"\"w\"", "shape[0] is \"2\""}},
      {"infinite dimension", W("\"dtype\":\"F32\",\"shape\":[1e400],\"data_offsets\":[0,4]"), 4,
       {"\"w\"", "shape[0] is inf"}},
      {"nine dimensions", W("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]"), 4,
       {"\"w\"", "9 dimensions"}},
      {"dimension 2^53", W("\"dtype\":\"U8\",\"shape\":[9007199254740992],\"data_offsets\":[0,1]"), 1,
       {"\"w\"", "9007199254740992"}},
      {"element count overflow", W("\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]"), 0,
       {"\"w\"", "[4294967296, 4294967296] of U8 overflows"}},
      {"byte count overflow", W("\"dtype\":\"F32\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,0]"), 0,
       {"\"w\"", "[2147483648, 2147483648] of F32 overflows"}},
      {"three offsets", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]"), 8,
       {"\"w\"", "not [begin, end]"}},
      {"offsets not an array", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}"), 4,
       {"\"w\"", "an object, not [begin, end]"}},
      {"offset a string", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]"), 4,
       {"\"w\"", "begin is \"0\""}},
      {"negative offset", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]"), 4, {"\"w\"", "end is -4"}},
      {"begin after end", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]"), 8, {"\"w\"", "[8, 4]"}},
      {"end past the data", W("\"dtype\":\"F32\",\"shape\":[100],\"data_offsets\":[0,400]"), 4,
       {"\"w\"", "[0, 400] end past the data section's 4 bytes"}},
      {"size mismatch", W("\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,8]"), 8,
       {"\"w\"", "hold 8 bytes, but shape [2, 3] of BF16 needs 12"}},
      {"duplicate names",
       "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, {"\"w\" appears twice", 0}},
      {"name over 191 bytes", long_hdr, 4, {"200 bytes", "nnnnnnnn"}},
      {"first tensor not at 0", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]"), 8,
       {"\"w\"", "begins at byte 4"}},
      {"gap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
       {"\"a\" (data_offsets [0, 4]) and \"b\" ([8, 12])", "gap by 4 bytes"}},
      {"overlap", "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12,
       {"\"a\" (data_offsets [0, 8]) and \"b\" ([4, 12])", "overlap by 4 bytes"}},
      {"empty tensor inside another", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                      "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8,
       {"\"a\" (data_offsets [0, 8]) and \"z\" ([4, 4])", "overlap"}},
      {"data after the last tensor", W("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 8,
       {"\"w\", ends at byte 4", "has 8 bytes (4 belong to no tensor)"}},
      {"no tensor but data", "{\"__metadata__\":{\"format\":\"pt\"}}", 4, {"no tensor", "has 4 bytes"}},
      {"\\u0000 in a name", E("a\\u0000b", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
       {"\\u0000", "byte 3"}},
      {"invalid UTF-8", E("a\xff", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
       {"invalid UTF-8", "byte 3"}},
      {"overlong UTF-8", E("\xc0\xaf", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
       {"invalid UTF-8", "byte 2"}},
      {"UTF-8 surrogate", E("\xed\xa0\x80", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
       {"invalid UTF-8", "byte 2"}},
      {"raw tab in a name", E("a\tb", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
       {"control character", "byte 3"}},
      {"control byte outside strings", "{\x01}", 0, {"control character", "byte 1"}},
  };
#undef W
#undef E
  const int ncases = (int)(sizeof cases / sizeof cases[0]);
  int distinct_ok = 0;
  for (int c = 0; c < ncases; c++) {
    zt_st_reader r;
    memset(&r, 0, sizeof r);
    snprintf(r.path, sizeof r.path, "bad.safetensors");
    char err[1024] = "", name[160];
    const int rc = zt_st_parse_header(&r, cases[c].json, strlen(cases[c].json), cases[c].data_bytes, err, sizeof err);
    int ok = rc == -1 && r.tensors == NULL && r.n == 0 && strstr(err, "bad.safetensors: ") == err;
    for (int k = 0; k < 2; k++) ok &= !cases[c].needle[k] || strstr(err, cases[c].needle[k]) != NULL;
    snprintf(name, sizeof name, "refused: %s", cases[c].what);
    distinct_ok += tu_check(ok, name, "rc %d, wanted [%s] [%s] in: %s", rc, cases[c].needle[0],
                            cases[c].needle[1] ? cases[c].needle[1] : "", err);
    zt_st_close(&r);
  }
  tu_check(distinct_ok == ncases && ncases >= 10, "refusals: every bad header", "%d of %d", distinct_ok, ncases);
}

/* Headers the format allows: none but metadata, padding on both sides, empty tensors at the edges and between,
 * escaped and raw UTF-8 names, a scalar, every whole-byte dtype. */
static void test_accepted(void) {
  static const struct { const char *json; uint64_t data_bytes; int n; const char *find; } ok[] = {
      {"{}", 0, 0, NULL},
      {" \n{\"__metadata__\":{\"a\":\"b\",\"c\":\"\"}}\t\r\n   ", 0, 0, NULL},
      {"{\"z0\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"z1\":{\"dtype\":\"F16\",\"shape\":[3,0,2],\"data_offsets\":[4,4]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]},"
       "\"z2\":{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[8,8]}}", 8, 5, "z1"},
      {"{\"caf\\u00e9 \\\"q\\\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
       "\"\xe6\x97\xa5\xf0\x9f\x98\x80\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, 2,
       "caf\xc3\xa9 \"q\""},
      {"{\"i64\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
       "\"i32\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[8,12]},"
       "\"i16\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[12,14]},"
       "\"i8\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[14,15]},"
       "\"e4\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[15,16]},"
       "\"e5\":{\"dtype\":\"F8_E5M2\",\"shape\":[1],\"data_offsets\":[16,17]},"
       "\"u16\":{\"dtype\":\"U16\",\"shape\":[1,1,1,1,1,1,1,1],\"data_offsets\":[17,19]}}", 19, 7, "u16"},
  };
  for (int c = 0; c < (int)(sizeof ok / sizeof ok[0]); c++) {
    zt_st_reader r;
    memset(&r, 0, sizeof r);
    snprintf(r.path, sizeof r.path, "good.safetensors");
    char err[1024] = "", name[64];
    const int rc = zt_st_parse_header(&r, ok[c].json, strlen(ok[c].json), ok[c].data_bytes, err, sizeof err);
    snprintf(name, sizeof name, "accepted: header %d", c);
    tu_check(rc == 0 && r.n == ok[c].n && (!ok[c].find || zt_st_find(&r, ok[c].find) >= 0), name,
             "rc %d n %d (want %d): %s", rc, r.n, ok[c].n, err);
    zt_st_close(&r);
  }
}

/* zt_st_open's own refusals (the file before its header), and a file cut short after it was opened. */
static void test_open_errors(void) {
  zt_st_reader r;
  char err[1024] = "";
  const char *missing = tmp_path("missing.safetensors");
  int rc = zt_st_open(&r, missing, err, sizeof err);
  tu_check(rc == -1 && strstr(err, missing) && strstr(err, "No such file") && r.f == NULL, "open: missing file",
           "rc %d: %s", rc, err);
  rc = zt_st_open(&r, g_dir, err, sizeof err);
  tu_check(rc == -1 && strstr(err, "not a regular file"), "open: a directory", "rc %d: %s", rc, err);
  const char *path = tmp_path("short.safetensors");
  FILE *f = fopen(path, "wb");
  if (!f || fwrite("\x05\0\0\0\0", 1, 5, f) != 5 || fclose(f) != 0) exit(2);
  rc = zt_st_open(&r, path, err, sizeof err);
  tu_check(rc == -1 && strstr(err, path) && strstr(err, "5 bytes, too short"), "open: a 5-byte file", "rc %d: %s", rc,
           err);
  /* header length over the 100,000,000 limit: written by hand, no header follows */
  path = tmp_path("huge.safetensors");
  f = fopen(path, "wb");
  const unsigned char le[8] = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0}; /* 100,000,001 */
  if (!f || fwrite(le, 1, 8, f) != 8 || fclose(f) != 0) exit(2);
  rc = zt_st_open(&r, path, err, sizeof err);
  tu_check(rc == -1 && strstr(err, "header length 100000001 is over the limit of 100000000"),
           "open: header length over 100,000,000", "rc %d: %s", rc, err);
  path = tmp_path("trunc.safetensors");
  f = fopen(path, "wb");
  const unsigned char le50[8] = {50, 0, 0, 0, 0, 0, 0, 0};
  if (!f || fwrite(le50, 1, 8, f) != 8 || fwrite("{}        ", 1, 10, f) != 10 || fclose(f) != 0) exit(2);
  rc = zt_st_open(&r, path, err, sizeof err);
  tu_check(rc == -1 && strstr(err, "header length 50, but only 10 bytes follow"), "open: header longer than the file",
           "rc %d: %s", rc, err);
  const char *hdr = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  const float two[2] = {1, 2};
  path = write_raw("short_data.safetensors", hdr, strlen(hdr), two, 4);
  rc = zt_st_open(&r, path, err, sizeof err);
  tu_check(rc == -1 && strstr(err, path) && strstr(err, "\"t\"") && strstr(err, "section's 4 bytes"),
           "open: data section shorter than the header says", "rc %d: %s", rc, err);
  /* a bad header through open: the message names the file as given */
  const char *bad = "{\"t\":{\"dtype\":\"Q7\",\"shape\":[],\"data_offsets\":[0,0]}}";
  path = write_raw("bad_dtype.safetensors", bad, strlen(bad), NULL, 0);
  rc = zt_st_open(&r, path, err, sizeof err);
  tu_check(rc == -1 && strstr(err, path) && strstr(err, "\"Q7\"") && r.f == NULL && r.tensors == NULL,
           "open: a bad header closes the file", "rc %d: %s", rc, err);
  /* the file is cut after the header was checked: the read fails with the numbers, no garbage */
  path = write_raw("cut.safetensors", hdr, strlen(hdr), two, 8);
  rc = zt_st_open(&r, path, err, sizeof err);
  if (tu_check(rc == 0, "open: a valid file", "%s", err)) {
    if (truncate(path, (off_t)(r.data_start + 4)) != 0) exit(2);
    float out[2];
    rc = zt_st_read_f32(&r, 0, out, err, sizeof err);
    tu_check(rc == -1 && strstr(err, "\"t\"") && strstr(err, "read 4 of its 8 bytes") && strstr(err, "ends early"),
             "read: a file cut after it was opened", "rc %d: %s", rc, err);
  }
  zt_st_close(&r);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/zt_st_XXXXXX");
  if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 2; }
  test_roundtrip();
  test_conversions();
  test_refusals();
  test_accepted();
  test_open_errors();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return tu_finish();
}
