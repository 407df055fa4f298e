/* Knowledge distillation's term on the student's logits (Megatron-DeepSpeed's calculate_mos_loss, models/model.h's
 * zt_kd_config): the loss of a micro batch against the teacher's logits, computed in double on the host, and its
 * gradient, kept from the forward and added to d(logits) in the output layer's backward. */
#ifndef ZT_KD_H
#define ZT_KD_H

#include <stddef.h>

#include "models/model.h"

typedef struct zt_kd_state {
  zt_kd_config cfg;
  int active;        /* the last forward had a teacher: its gradient applies */
  size_t n;          /* elements of the last forward's logits (N x V) */
  size_t cap;        /* elements the buffers hold */
  float *grad;       /* host [N, V]: d kd / d student logits of the last forward */
  float *hs, *ht;    /* host [N, V]: the logits in fp32 (backends whose memory the host cannot read, half dtypes) */
  void *raw;         /* host [N, V] of the dtype: staging */
  void *dev;         /* backend [N, V] of the dtype: the scaled gradient, added to d(logits) */
  size_t dev_bytes;
  const zt_backend *be;
} zt_kd_state;

/* The KD term of the last forward's logits (student [N, V], teacher [N, V], both of dt in be's memory; N = B x T
 * tokens of B rows); keeps the gradient. */
float zt_kd_forward(zt_kd_state *k, const zt_backend *be, zt_dtype dt, const void *student, const void *teacher,
                    int B, int N, int V);
/* dlogits [N, V] (dt, be's memory) += grad_scale x the kept gradient; nothing when the last forward had no term. */
void zt_kd_backward(zt_kd_state *k, zt_dtype dt, void *dlogits, float grad_scale);
/* The host and backend bytes the buffers take for N x V logits of dt on be (the memory-plan line). */
size_t zt_kd_bytes(const zt_backend *be, zt_dtype dt, size_t nv);
void zt_kd_free(zt_kd_state *k);

#endif
