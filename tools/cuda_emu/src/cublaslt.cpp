// cuBLASLt on the host: descriptors with the documented attribute sizes, a heuristic that returns one algorithm for
// every problem it can describe (the alignments it was promised recorded in the algorithm), and a reference GEMM:
//   D = epilogue(alpha op(A) op(B) + beta C)      (C is not read when beta == 0, as in BLAS)
// with every product accumulated in fp32 by fmaf in increasing k, inputs converted exactly from fp32/bf16/fp16 and
// the result rounded once to D's type. Nothing is repaired: dimensions that do not agree, ld < rows, a pointer
// less aligned than the heuristic was told, a buffer that ends before its layout does, an aux ld that is not a
// multiple of 8, are refused with CUBLAS_STATUS_INVALID_VALUE (or NOT_SUPPORTED for what the emulator does not
// implement) and a note on stderr naming the problem; a layout that is consistent but not the caller's intent
// (a wrong but large enough ld, swapped transposes) is computed as described, so the caller's results are wrong.
#include <cublasLt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "internal.h"

using namespace zt_emu;

namespace {
enum : uint32_t { kMagicCtx = 0x4c544858u, kMagicDesc = 0x4c544453u, kMagicLayout = 0x4c544c59u,
                  kMagicPref = 0x4c545052u, kMagicAlgo = 0x414c474fu, kDead = 0xdeadu };
}

struct zt_emu_lt_context {
  uint32_t magic;
};
struct zt_emu_lt_desc {
  uint32_t magic;
  int32_t compute, scale, pointer_mode, transa, transb, transc, fill;
  uint32_t epilogue;
  const void *bias;
  void *aux;
  int64_t aux_ld, bias_stride, aux_stride;
  int32_t bias_type, aux_type;
};
struct zt_emu_lt_layout {
  uint32_t magic;
  int32_t type, order;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch;
  int64_t stride;
};
struct zt_emu_lt_pref {
  uint32_t magic;
  uint32_t search;
  uint64_t max_workspace;
  uint32_t reduction_mask;
  uint32_t align[4];  // A, B, C, D
};

namespace {

template <class T>
bool alive(const T *p, uint32_t magic) {
  return p && p->magic == magic;
}

cublasStatus_t refuse(cublasStatus_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cublasStatus_t refuse(cublasStatus_t st, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  note("cuBLASLt: %s (%s)", buf, cublasLtGetStatusName(st));
  return st;
}

size_t type_size(int32_t t) { return t == CUDA_R_32F ? 4 : 2; }
const char *type_name(int32_t t) {
  return t == CUDA_R_32F ? "fp32" : t == CUDA_R_16F ? "fp16" : t == CUDA_R_16BF ? "bf16" : "unsupported";
}
bool known_type(int32_t t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }

uint32_t align_of(const void *p) {
  uint32_t a = 256;
  while (a > 1 && ((uintptr_t)p & (a - 1))) a >>= 1;
  return a;
}

// A setter/getter table entry: where the attribute lives and its documented size.
struct Field {
  void *p;
  size_t size;
};
Field desc_field(zt_emu_lt_desc *d, int attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return {&d->compute, 4};
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return {&d->scale, 4};
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return {&d->pointer_mode, 4};
    case CUBLASLT_MATMUL_DESC_TRANSA: return {&d->transa, 4};
    case CUBLASLT_MATMUL_DESC_TRANSB: return {&d->transb, 4};
    case CUBLASLT_MATMUL_DESC_TRANSC: return {&d->transc, 4};
    case CUBLASLT_MATMUL_DESC_FILL_MODE: return {&d->fill, 4};
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return {&d->epilogue, 4};
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return {&d->bias, sizeof(void *)};
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return {&d->bias_stride, 8};
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return {&d->aux, sizeof(void *)};
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return {&d->aux_ld, 8};
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: return {&d->aux_stride, 8};
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return {&d->aux_type, 4};
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return {&d->bias_type, 4};
  }
  return {NULL, 0};
}
Field layout_field(zt_emu_lt_layout *l, int attr) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return {&l->type, 4};
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return {&l->order, 4};
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return {&l->rows, 8};
    case CUBLASLT_MATRIX_LAYOUT_COLS: return {&l->cols, 8};
    case CUBLASLT_MATRIX_LAYOUT_LD: return {&l->ld, 8};
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return {&l->batch, 4};
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return {&l->stride, 8};
  }
  return {NULL, 0};
}

cublasStatus_t set_field(Field f, const void *buf, size_t size, const char *what, int attr) {
  if (!f.p) return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s attribute %d is not emulated", what, attr);
  if (!buf || size != f.size)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s attribute %d takes %zu bytes, %zu given", what, attr, f.size, size);
  memcpy(f.p, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t get_field(Field f, void *buf, size_t size, size_t *written) {
  if (!f.p) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0 && written) {
    *written = f.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, f.p, size);
  if (written) *written = f.size;
  return CUBLAS_STATUS_SUCCESS;
}

// ---- the problem a descriptor and four layouts describe ---------------------------------------------------------
struct Problem {
  int64_t m, n, k;
  bool ta, tb, bias, gelu, relu, aux;
  int32_t ab_type, cd_type, bias_type, aux_type;
  int batch;
};

bool rows_cols(const zt_emu_lt_layout *l, bool trans, int64_t *r, int64_t *c) {
  *r = (int64_t)(trans ? l->cols : l->rows);
  *c = (int64_t)(trans ? l->rows : l->cols);
  return true;
}

cublasStatus_t check_layout(const zt_emu_lt_layout *l, const char *name) {
  if (!known_type(l->type))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matrix %s has data type %d (the emulator has fp32, fp16, bf16)", name,
                  l->type);
  if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matrix %s has order %d (the emulator has COL and ROW)", name, l->order);
  const int64_t need = l->order == CUBLASLT_ORDER_COL ? (int64_t)l->rows : (int64_t)l->cols;
  if (l->ld < (need > 1 ? need : 1))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "matrix %s is %llu x %llu (%s) with ld %lld < %lld", name,
                  (unsigned long long)l->rows, (unsigned long long)l->cols,
                  l->order == CUBLASLT_ORDER_COL ? "column-major" : "row-major", (long long)l->ld, (long long)need);
  if (l->batch < 1) return refuse(CUBLAS_STATUS_INVALID_VALUE, "matrix %s has batch count %d", name, l->batch);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t describe(const zt_emu_lt_desc *d, const zt_emu_lt_layout *A, const zt_emu_lt_layout *B,
                        const zt_emu_lt_layout *C, const zt_emu_lt_layout *D, Problem *p) {
  if (d->compute != CUBLAS_COMPUTE_32F && d->compute != CUBLAS_COMPUTE_32F_PEDANTIC)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "compute type %d (the emulator has CUBLAS_COMPUTE_32F)", d->compute);
  if (d->scale != CUDA_R_32F)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "scale type %d with CUBLAS_COMPUTE_32F (needs CUDA_R_32F)", d->scale);
  if (d->pointer_mode != CUBLASLT_POINTER_MODE_HOST && d->pointer_mode != CUBLASLT_POINTER_MODE_DEVICE)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "pointer mode %d (the emulator has HOST and DEVICE)", d->pointer_mode);
  for (int32_t op : {d->transa, d->transb})
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T && op != CUBLAS_OP_C)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "transpose operation %d", op);
  if (d->transc != CUBLAS_OP_N) return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "TRANSC %d (only N exists)", d->transc);
  const zt_emu_lt_layout *ls[4] = {A, B, C, D};
  const char *names = "ABCD";
  for (int i = 0; i < 4; i++) {
    char nm[2] = {names[i], 0};
    if (cublasStatus_t st = check_layout(ls[i], nm)) return st;
  }
  if (A->type != B->type)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "A is %s but B is %s", type_name(A->type), type_name(B->type));
  if (C->type != D->type)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "C is %s but D is %s", type_name(C->type), type_name(D->type));
  if (C->type != A->type && !(C->type == CUDA_R_32F && A->type != CUDA_R_32F))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "A/B %s with C/D %s", type_name(A->type), type_name(C->type));
  p->ta = d->transa != CUBLAS_OP_N, p->tb = d->transb != CUBLAS_OP_N;
  int64_t am, ak, bk, bn;
  rows_cols(A, p->ta, &am, &ak);
  rows_cols(B, p->tb, &bk, &bn);
  if (ak != bk)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "op(A) is %lld x %lld (A %llu x %llu, op %c) but op(B) is %lld x %lld (B %llu x %llu, op %c): k differs",
                  (long long)am, (long long)ak, (unsigned long long)A->rows, (unsigned long long)A->cols,
                  p->ta ? 'T' : 'N', (long long)bk, (long long)bn, (unsigned long long)B->rows,
                  (unsigned long long)B->cols, p->tb ? 'T' : 'N');
  if ((int64_t)C->rows != am || (int64_t)C->cols != bn)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "op(A) op(B) is %lld x %lld but C is %llu x %llu", (long long)am,
                  (long long)bn, (unsigned long long)C->rows, (unsigned long long)C->cols);
  if (D->rows != C->rows || D->cols != C->cols)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "C is %llu x %llu but D is %llu x %llu", (unsigned long long)C->rows,
                  (unsigned long long)C->cols, (unsigned long long)D->rows, (unsigned long long)D->cols);
  p->batch = D->batch;
  for (const zt_emu_lt_layout *l : ls)
    if (l->batch != p->batch)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "batch counts differ (%d and %d)", l->batch, p->batch);
  p->m = am, p->n = bn, p->k = ak;
  p->ab_type = A->type, p->cd_type = D->type;
  const uint32_t e = d->epilogue;
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: case CUBLASLT_EPILOGUE_RELU: case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS: case CUBLASLT_EPILOGUE_GELU: case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX: case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: break;
    default: return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "epilogue %u is not emulated", e);
  }
  p->bias = e & CUBLASLT_EPILOGUE_BIAS;
  p->gelu = e & CUBLASLT_EPILOGUE_GELU;
  p->relu = e & CUBLASLT_EPILOGUE_RELU;
  p->aux = e & 128;
  p->bias_type = d->bias_type == -1 ? D->type : d->bias_type;
  p->aux_type = d->aux_type == -1 ? D->type : d->aux_type;
  if (p->bias && p->bias_type != D->type)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "bias of type %s with D %s (the bias has D's type)",
                  type_name(p->bias_type), type_name(D->type));
  if (p->aux) {
    if (p->aux_type != D->type)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "GELU aux of type %s with D %s", type_name(p->aux_type),
                    type_name(D->type));
    if (d->aux_ld < p->m || d->aux_ld % 8)
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "EPILOGUE_AUX_LD %lld: must be at least the %lld rows of D and a multiple of 8",
                    (long long)d->aux_ld, (long long)p->m);
  }
  return CUBLAS_STATUS_SUCCESS;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}
// What an algorithm is tied to: everything but the pointers.
uint64_t fingerprint(const zt_emu_lt_desc *d, const zt_emu_lt_layout *const ls[4]) {
  uint64_t h = 1469598103934665603ull;
  const int64_t dv[] = {d->compute, d->scale, d->pointer_mode, d->transa, d->transb, d->epilogue, d->bias_type,
                        d->aux_type, d->aux_ld};
  for (int64_t v : dv) h = mix(h, (uint64_t)v);
  for (int i = 0; i < 4; i++) {
    const zt_emu_lt_layout *l = ls[i];
    const int64_t lv[] = {l->type, l->order, (int64_t)l->rows, (int64_t)l->cols, l->ld, l->batch, l->stride};
    for (int64_t v : lv) h = mix(h, (uint64_t)v);
  }
  return h;
}

// The elements a layout spans, from its first: the buffer must hold them.
size_t extent(const zt_emu_lt_layout *l) {
  if (l->rows == 0 || l->cols == 0) return 0;
  const uint64_t inner = l->order == CUBLASLT_ORDER_COL ? l->rows : l->cols;
  const uint64_t outer = l->order == CUBLASLT_ORDER_COL ? l->cols : l->rows;
  return (size_t)((outer - 1) * (uint64_t)l->ld + inner + (uint64_t)(l->batch - 1) * (uint64_t)l->stride);
}

cublasStatus_t check_buffer(const void *p, size_t bytes, const char *name) {
  if (bytes == 0) return CUBLAS_STATUS_SUCCESS;
  if (!p) return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s is NULL", name);
  if (in_allocation(p, bytes, MEM_DEVICE)) return CUBLAS_STATUS_SUCCESS;
  char buf[256];
  return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s of %zu bytes: %s", name, bytes, describe_range(p, bytes, buf, sizeof buf));
}

bool overlap(const void *a, size_t na, const void *b, size_t nb) {
  return na && nb && (uintptr_t)a < (uintptr_t)b + nb && (uintptr_t)b < (uintptr_t)a + na;
}

float load(const void *p, int32_t t, size_t i) {
  switch (t) {
    case CUDA_R_32F: return ((const float *)p)[i];
    case CUDA_R_16F: return half_bits_to_float(((const uint16_t *)p)[i]);
    default: return bf16_bits_to_float(((const uint16_t *)p)[i]);
  }
}
void store(void *p, int32_t t, size_t i, float x) {
  switch (t) {
    case CUDA_R_32F: ((float *)p)[i] = x; break;
    case CUDA_R_16F: ((uint16_t *)p)[i] = float_to_half_bits(x); break;
    default: ((uint16_t *)p)[i] = float_to_bf16_bits(x); break;
  }
}
size_t at(const zt_emu_lt_layout *l, int64_t r, int64_t c) {
  return l->order == CUBLASLT_ORDER_COL ? (size_t)(r + c * l->ld) : (size_t)(r * l->ld + c);
}

// acc[i][j] = sum_p a[i][p] b[p][j] in fp32, fmaf in increasing p (a: m x k, b: k x n, row-major); four rows of
// a share each row of b, the j loop vectorizes (each element's sum keeps its own order).
__attribute__((optimize("O3"))) void gemm_rows(const float *__restrict a, const float *__restrict b,
                                               float *__restrict acc, int64_t m, int64_t n, int64_t k) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    float *__restrict c0 = acc + i * n, *__restrict c1 = c0 + n, *__restrict c2 = c1 + n, *__restrict c3 = c2 + n;
    for (int64_t j = 0; j < 4 * n; j++) c0[j] = 0.0f;
    for (int64_t p = 0; p < k; p++) {
      const float a0 = a[i * k + p], a1 = a[(i + 1) * k + p], a2 = a[(i + 2) * k + p], a3 = a[(i + 3) * k + p];
      const float *__restrict br = b + p * n;
      for (int64_t j = 0; j < n; j++) {
        c0[j] = __builtin_fmaf(a0, br[j], c0[j]);
        c1[j] = __builtin_fmaf(a1, br[j], c1[j]);
        c2[j] = __builtin_fmaf(a2, br[j], c2[j]);
        c3[j] = __builtin_fmaf(a3, br[j], c3[j]);
      }
    }
  }
  for (; i < m; i++) {
    float *__restrict c0 = acc + i * n;
    for (int64_t j = 0; j < n; j++) c0[j] = 0.0f;
    for (int64_t p = 0; p < k; p++) {
      const float a0 = a[i * k + p];
      const float *__restrict br = b + p * n;
      for (int64_t j = 0; j < n; j++) c0[j] = __builtin_fmaf(a0, br[j], c0[j]);
    }
  }
}

float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

int epilogue_level() {  // ZT_EMU_LT_EPILOGUES: which fused epilogues the heuristic offers
  static int level = -1;
  if (level < 0) {
    const char *s = getenv("ZT_EMU_LT_EPILOGUES");
    level = !s || !strcmp(s, "all") ? 2 : !strcmp(s, "bias") ? 1 : !strcmp(s, "none") ? 0 : -2;
    if (level == -2) fatal("ZT_EMU_LT_EPILOGUES=%s: use all, bias or none", s);
  }
  return level;
}

}  // namespace

extern "C" {

const char *cublasLtGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "<unrecognized>";
}
const char *cublasLtGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return cublasLtGetStatusName(s);
  }
}
size_t cublasLtGetVersion(void) { return 130000; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new zt_emu_lt_context{kMagicCtx};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  if (!alive(h, kMagicCtx)) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->magic = kDead;  // objects are marked dead, not freed, so a use after destroy is caught
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale) {
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  *d = new zt_emu_lt_desc{kMagicDesc, compute, scale, CUBLASLT_POINTER_MODE_HOST, CUBLAS_OP_N, CUBLAS_OP_N,
                          CUBLAS_OP_N, 2, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0, 0, 0, -1, -1};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  if (!alive(d, kMagicDesc)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "destroy of a matmul descriptor that is not live");
  d->magic = kDead;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size) {
  if (!alive(d, kMagicDesc)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul descriptor is not live");
  return set_field(desc_field(d, attr), buf, size, "matmul descriptor", attr);
}
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, void *buf,
                                              size_t size, size_t *written) {
  if (!alive(d, kMagicDesc)) return CUBLAS_STATUS_INVALID_VALUE;
  return get_field(desc_field(d, attr), buf, size, written);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t type, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  *l = new zt_emu_lt_layout{kMagicLayout, type, CUBLASLT_ORDER_COL, rows, cols, ld, 1, 0};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  if (!alive(l, kMagicLayout)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "destroy of a matrix layout that is not live");
  l->magic = kDead;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
  if (!alive(l, kMagicLayout)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "matrix layout is not live");
  return set_field(layout_field(l, attr), buf, size, "matrix layout", attr);
}
cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                void *buf, size_t size, size_t *written) {
  if (!alive(l, kMagicLayout)) return CUBLAS_STATUS_INVALID_VALUE;
  return get_field(layout_field(l, attr), buf, size, written);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  if (!p) return CUBLAS_STATUS_INVALID_VALUE;
  *p = new zt_emu_lt_pref{kMagicPref, 0, 0, 0xffffffffu, {256, 256, 256, 256}};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  if (!alive(p, kMagicPref)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "destroy of a preference that is not live");
  p->magic = kDead;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t size) {
  if (!alive(p, kMagicPref)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "preference is not live");
  Field f = {NULL, 0};
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: f = {&p->search, 4}; break;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: f = {&p->max_workspace, 8}; break;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: f = {&p->reduction_mask, 4}; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: f = {&p->align[0], 4}; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: f = {&p->align[1], 4}; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: f = {&p->align[2], 4}; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: f = {&p->align[3], 4}; break;
  }
  return set_field(f, buf, size, "matmul preference", attr);
}

// One algorithm for every problem describe() accepts, whatever the alignments (the misaligned cases run). The
// algorithm records the alignments it was chosen for: those the preference promises for A, B, C, D and those of
// the bias and aux pointers in the descriptor now (the library reads them for the same purpose).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t pref,
                                              int requested, cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
  if (!alive(h, kMagicCtx)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alive(d, kMagicDesc) || !alive(a, kMagicLayout) || !alive(b, kMagicLayout) || !alive(c, kMagicLayout) ||
      !alive(dd, kMagicLayout) || !alive(pref, kMagicPref) || requested < 1 || !results || !returned)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "heuristic query with a dead or NULL object, or %d results", requested);
  *returned = 0;
  Problem p;
  if (cublasStatus_t st = describe(d, a, b, c, dd, &p)) return st;
  const int level = epilogue_level();
  if ((p.aux && level < 2) || ((p.bias || p.gelu || p.relu) && level < 1)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const size_t es[4] = {type_size(a->type), type_size(b->type), type_size(c->type), type_size(dd->type)};
  for (int i = 0; i < 4; i++)
    if (pref->align[i] < es[i] || (pref->align[i] & (pref->align[i] - 1))) return CUBLAS_STATUS_NOT_SUPPORTED;
  const zt_emu_lt_layout *ls[4] = {a, b, c, dd};
  memset(&results[0], 0, sizeof results[0]);
  uint64_t *al = results[0].algo.data;
  al[0] = kMagicAlgo;
  al[1] = fingerprint(d, ls);
  for (int i = 0; i < 4; i++) al[2 + i] = pref->align[i];
  al[6] = p.bias ? align_of(d->bias) : 0;
  al[7] = p.aux ? align_of(d->aux) : 0;
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Ad, const void *B, cublasLtMatrixLayout_t Bd, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t ws_bytes,
                              cudaStream_t stream) {
  if (!alive(h, kMagicCtx)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const DeviceAccess access;
  if (!alive(d, kMagicDesc) || !alive(Ad, kMagicLayout) || !alive(Bd, kMagicLayout) || !alive(Cd, kMagicLayout) ||
      !alive(Dd, kMagicLayout))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul with a dead or NULL descriptor or layout");
  if (!stream_valid(stream)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul on a stream that is not live");
  Problem p;
  if (cublasStatus_t st = describe(d, Ad, Bd, Cd, Dd, &p)) return st;
  const zt_emu_lt_layout *ls[4] = {Ad, Bd, Cd, Dd};
  const void *ptrs[4] = {A, B, C, D};
  const char *names[4] = {"A", "B", "C", "D"};
  if (algo) {  // NULL: the library runs its own heuristic for these pointers
    if (algo->data[0] != kMagicAlgo) return refuse(CUBLAS_STATUS_INVALID_VALUE, "the algorithm was not returned by the heuristic");
    if (algo->data[1] != fingerprint(d, ls))
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "the algorithm was chosen for another problem (descriptor or layouts changed since the heuristic)");
    for (int i = 0; i < 4; i++)
      if (ptrs[i] && align_of(ptrs[i]) < algo->data[2 + i])
        return refuse(CUBLAS_STATUS_INVALID_VALUE,
                      "%s at %p is aligned to %u bytes but the algorithm was chosen for %llu-byte alignment "
                      "(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_%s_BYTES)",
                      names[i], ptrs[i], align_of(ptrs[i]), (unsigned long long)algo->data[2 + i], names[i]);
    if (p.bias && align_of(d->bias) < algo->data[6])
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "the bias at %p is aligned to %u bytes but the algorithm was chosen for a bias aligned to %llu",
                    d->bias, align_of(d->bias), (unsigned long long)algo->data[6]);
    if (p.aux && align_of(d->aux) < algo->data[7])
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "the aux buffer at %p is aligned to %u bytes but the algorithm was chosen for one aligned to %llu",
                    d->aux, align_of(d->aux), (unsigned long long)algo->data[7]);
  }
  if (!alpha || !beta) return refuse(CUBLAS_STATUS_INVALID_VALUE, "alpha or beta is NULL");
  const bool dev_scalars = d->pointer_mode == CUBLASLT_POINTER_MODE_DEVICE;
  for (const void *s : {alpha, beta})
    if (in_allocation(s, 4, MEM_DEVICE) != dev_scalars)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "alpha/beta at %p with pointer mode %s", s,
                    dev_scalars ? "DEVICE (not device memory)" : "HOST (it is device memory)");
  const float fa = *(const float *)alpha, fb = *(const float *)beta;
  const bool read_c = fb != 0.0f;
  size_t bytes[4];
  for (int i = 0; i < 4; i++) {
    bytes[i] = extent(ls[i]) * type_size(ls[i]->type);
    if ((uintptr_t)ptrs[i] % type_size(ls[i]->type))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s at %p is not aligned to its element size", names[i], ptrs[i]);
    if (i == 2 && !read_c) continue;  // beta = 0: C is not read
    if (cublasStatus_t st = check_buffer(ptrs[i], bytes[i], names[i])) return st;
  }
  const size_t bias_bytes = p.bias ? (size_t)(p.m + (p.batch - 1) * d->bias_stride) * type_size(p.bias_type) : 0;
  const size_t aux_bytes = p.aux ? (size_t)((p.n - 1) * d->aux_ld + p.m + (p.batch - 1) * d->aux_stride) *
                                       type_size(p.aux_type)
                                 : 0;
  if (p.m && p.n) {
    if (cublasStatus_t st = check_buffer(d->bias, bias_bytes, "the bias")) return st;
    if (cublasStatus_t st = check_buffer(d->aux, aux_bytes, "the GELU aux buffer")) return st;
  }
  if (read_c && C == D && (Cd->type != Dd->type || Cd->order != Dd->order || Cd->ld != Dd->ld || Cd->stride != Dd->stride))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "C and D are the same buffer with different layouts");
  if (read_c && C != D && overlap(C, bytes[2], D, bytes[3]))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "C and D overlap without being the same matrix");
  for (int i = 0; i < 2; i++)
    if (overlap(ptrs[i], bytes[i], D, bytes[3]))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s overlaps D (the output)", names[i]);
  if (p.aux && overlap(d->aux, aux_bytes, D, bytes[3])) return refuse(CUBLAS_STATUS_INVALID_VALUE, "aux overlaps D");
  if (ws_bytes && !in_allocation(workspace, ws_bytes, MEM_DEVICE))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "workspace of %zu bytes at %p is not device memory", ws_bytes, workspace);
  if (p.m == 0 || p.n == 0) return CUBLAS_STATUS_SUCCESS;

  std::vector<float> af((size_t)(p.m * p.k)), bf((size_t)(p.k * p.n)), acc((size_t)(p.m * p.n));
  for (int bi = 0; bi < p.batch; bi++) {
    const size_t oa = (size_t)bi * Ad->stride, ob = (size_t)bi * Bd->stride, oc = (size_t)bi * Cd->stride,
                 od = (size_t)bi * Dd->stride;
    for (int64_t i = 0; i < p.m; i++)  // op(A)(i, q) = A(q, i) when transposed
      for (int64_t q = 0; q < p.k; q++)
        af[i * p.k + q] = load(A, Ad->type, oa + (p.ta ? at(Ad, q, i) : at(Ad, i, q)));
    for (int64_t q = 0; q < p.k; q++)
      for (int64_t j = 0; j < p.n; j++)
        bf[q * p.n + j] = load(B, Bd->type, ob + (p.tb ? at(Bd, j, q) : at(Bd, q, j)));
    gemm_rows(af.data(), bf.data(), acc.data(), p.m, p.n, p.k);
    for (int64_t j = 0; j < p.n; j++)
      for (int64_t i = 0; i < p.m; i++) {
        float v = fa * acc[i * p.n + j];
        if (read_c) v += fb * load(C, Cd->type, oc + at(Cd, i, j));
        if (p.bias) v += load(d->bias, p.bias_type, (size_t)(bi * d->bias_stride + i));
        if (p.aux) store(d->aux, p.aux_type, (size_t)(bi * d->aux_stride + j * d->aux_ld + i), v);
        if (p.gelu) v = gelu_tanh(v);
        if (p.relu) v = v > 0.0f ? v : 0.0f;
        store(D, Dd->type, od + at(Dd, i, j), v);
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
