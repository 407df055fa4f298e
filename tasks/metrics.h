/* The metrics Megatron-DeepSpeed's tasks/eval_utils.py takes from scipy and sklearn for finetune_bert
 * (tasks/finetune.h): Pearson's and Spearman's correlations (STS-B) and the Matthews correlation (CoLA), in double
 * precision. */
#ifndef ZT_METRICS_H
#define ZT_METRICS_H

#include <stdint.h>

/* scipy.stats.pearsonr(x, y)[0]: the centred vectors' normalized dot product, clipped to [-1, 1]; nan when n < 2 or
 * one of them is constant. */
double zt_pearson(const double *x, const double *y, int64_t n);
/* scipy.stats.rankdata(v) ('average'): 1-based ranks into out[n], ties sharing their mean rank. Spearman's
 * correlation (scipy.stats.spearmanr) is zt_pearson of the two rankings. */
void zt_rankdata(const double *v, int64_t n, double *out);
/* sklearn.metrics.matthews_corrcoef of binary labels and predictions from their confusion counts; 0 when a
 * marginal is empty (sklearn's 0.0). */
double zt_matthews(double tp, double tn, double fp, double fn);

#endif
