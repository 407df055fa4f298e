/* DeepSpeed's data_sampling MMapIndexedDataset files (data_sampling/indexed_dataset.py: Megatron's .idx/.bin layout
 * with DeepSpeed's own dtype table, codes 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 uint16, 7 uint32, 8 uint64),
 * read whole: the data analyzer's map results (data/analyzer.h) and the curriculum index files of the data sampler
 * (train/data_sampler.h). */
#ifndef ZT_DS_INDEX_H
#define ZT_DS_INDEX_H

#include <stdint.h>

typedef struct {
  int code;
  int64_t n, ndoc;
  int32_t *sizes;
  int64_t *doc;
  int64_t *values;  /* every element, as int64 */
  int64_t nvalues;
  int64_t *offsets; /* [n + 1]: element offsets of the items; item i is values[offsets[i] .. offsets[i + 1]) */
} zt_ds_index;

int zt_ds_dtype_size(int code);
const char *zt_ds_dtype_name(int code);
/* Reads prefix.idx and prefix.bin; any missing file or inconsistency dies naming the file, with `what` (the flag
 * or the ds_config key that named it) as the subject. */
void zt_ds_index_read(zt_ds_index *d, const char *prefix, const char *what);
void zt_ds_index_free(zt_ds_index *d);

#endif
