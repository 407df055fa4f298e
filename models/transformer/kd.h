/* Knowledge distillation's term on the student's logits (Megatron-DeepSpeed's calculate_mos_loss, models/model.h's
 * zt_kd_config): the loss of a micro batch against the teacher's logits and its gradient, both computed where the
 * logits live (the backend's kd_rows: in double on the CPU, fp32 on a GPU); the gradient is kept from the forward and
 * added to d(logits) in the output layer's backward. */
#ifndef ZT_KD_H
#define ZT_KD_H

#include <stddef.h>

#include "models/model.h"
#include "models/transformer/tensor_parallel.h"

typedef struct zt_kd_state {
  zt_kd_config cfg;
  int active;        /* the last forward had a teacher: its gradient applies */
  size_t n;          /* elements of the last forward's logits (N x V) */
  size_t cap, rows_cap; /* elements and rows the buffers hold */
  float *grad;       /* backend fp32 [N, V]: d kd / d student logits of the last forward */
  float *rows;       /* backend fp32 [N]: each row's KL term */
  float *h_rows;     /* host copy of rows */
  float *lse;        /* tensor parallelism: backend fp32 [2N] the whole vocabulary's log-sum-exps */
  float *h_lse, *h_all; /* host [2N], and [tp size, 2N] every rank's slice's */
  void *half;        /* backend [N, V] of the logits' half dtype: the scaled gradient rounded to it */
  zt_dtype dt;
  const zt_backend *be;
} zt_kd_state;

/* The KD term of the last forward's logits (student [N, V], teacher [N, V], both of dt in be's memory; N = B x T
 * tokens of B rows); keeps the gradient. With tensor parallelism (tp on) both are this rank's vocabulary slice of V
 * rows: the softmaxes are over the whole vocabulary (each slice's log-sum-exps all-gathered over the group and
 * combined), the gradient is the slice's and the term the whole one (the slices' shares summed over the group). */
float zt_kd_forward(zt_kd_state *k, const zt_backend *be, zt_dtype dt, const void *student, const void *teacher,
                    int B, int N, int V, const zt_tp *tp);
/* dlogits [N, V] (dt, be's memory) += grad_scale x the kept gradient; nothing when the last forward had no term. */
void zt_kd_backward(zt_kd_state *k, zt_dtype dt, void *dlogits, float grad_scale);
void zt_kd_free(zt_kd_state *k);

#endif
