/* The data of finetune_bert (Megatron-DeepSpeed's tasks/main.py --task MNLI|QQP|QNLI|SST-2|CoLA|MRPC|RTE|RACE):
 * the GLUE readers (tasks/glue/{mnli,qqp,qnli,sst2,cola,mrpc,rte}.py) and the RACE reader (tasks/race/data.py) with
 * tasks/data_utils.py's clean_text and build_tokens_types_paddings_from_ids, every sample tokenized up front; and
 * the order torch gives the samples: torch.randperm on a CPU generator, DistributedSampler and DataLoader batches
 * (tasks/finetune_utils.py build_data_loader).
 *
 * Python's semantics are kept where they decide the samples: files are read as UTF-8 text with universal newlines
 * (a line ends at "\n", "\r\n" or a lone "\r"; invalid UTF-8 is refused, as open(f, 'r') raises), str.strip() and
 * re's \s use Python 3's Unicode whitespace set, int() takes a sign, '_' between digits and any Unicode decimal
 * digit. Where Megatron's reader asserts or raises (a bad label, an empty text where it asserts, a wrong column
 * count where it asserts or indexes past the row, a bad or negative uid, RACE's answer outside A-D, choices != 4,
 * questions / answers / options of different lengths, invalid JSON, a missing key) the load dies naming the file,
 * the line and the value; its "***WARNING*** ... skipping" rows are skipped with Megatron's line plus the file
 * and line. Two RACE inputs are refused where Megatron reads on: a value of the wrong JSON type (a string of four
 * characters where the four options are read as a list) and a lone UTF-16 surrogate escape (data/jsonl.c refuses
 * it; Megatron's tokenizer would make it an [UNK]).
 *
 * RACE's glob(os.path.join(datapath, '*.txt')) returns os.listdir order, which depends on the filesystem; here the
 * names (not starting with '.', as glob skips hidden files) are taken in bytewise sorted order, so the samples'
 * order, and so each sample's uid (the running count within one datapath, as Megatron's num_samples), is the same
 * on every machine. It equals Megatron's wherever its listdir happens to return sorted names. A datapath with no
 * *.txt file is refused (Megatron would silently read no sample). */
#ifndef ZT_FINETUNE_DATA_H
#define ZT_FINETUNE_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

typedef enum {
  ZT_FT_MNLI, ZT_FT_QQP, ZT_FT_QNLI, ZT_FT_SST2, ZT_FT_COLA, ZT_FT_MRPC, ZT_FT_RTE, ZT_FT_RACE, ZT_FT_STSB
} zt_ft_task;

/* Megatron's --task names: "MNLI", "QQP", "QNLI", "SST-2", "CoLA", "MRPC", "RTE", "RACE", "STS-B". Returns 0 and sets
 * *out,
 * or -1 for any other name. */
int zt_ft_task_parse(const char *name, zt_ft_task *out);
const char *zt_ft_task_name(zt_ft_task task);
/* The classification head's outputs: MNLI 3, RACE 1 (one logit per choice), STS-B 1 (a regression), the others 2. */
int zt_ft_task_classes(zt_ft_task task);
/* Sequences per sample: RACE 4 (Megatron's sample_multiplier), the others 1. */
int zt_ft_task_choices(zt_ft_task task);

typedef struct {
  char name[256];         /* Megatron's dataset_name ("training", "validation", or name_from_datapath of one path) */
  int64_t n;              /* samples */
  int choices, seq_length;
  int32_t pad;            /* the [PAD] id */
  /* the rows (row r = sample s's choice c at s * choices + c) unpadded, back to back: row r's token ids are
   * ids[off[r] .. off[r + 1]), of type 1 from position b_start[r] on (the row's length when it has none);
   * zt_ft_dataset_row frames one. About 4 bytes a real token: MNLI's 393k training pairs take ~70 MB, not the
   * 1.8 GB of padded ids, types and masks at --seq-length 512. */
  int32_t *ids;
  int64_t *off;           /* [n * choices + 1] */
  int32_t *b_start;       /* [n * choices] */
  int32_t *labels;        /* [n]; STS-B: int() of its score (Megatron's build_sample truncates every label to an int,
                              so its regression learns and is scored against the truncated scores) */
  int64_t *uids;          /* [n] */
} zt_ft_dataset;

/* Reads paths[0..npaths) in order (GLUE: .tsv files; RACE: directories of *.txt JSON-lines files) as Megatron's
 * Dataset(name, paths, tokenizer, seq_length) does, printing its log lines through zt_log. tok must have [CLS],
 * [SEP] and [PAD] (a BERT WordPiece --tokenizer-type); seq_length >= 1. A padded position has types = pad id (as
 * Megatron writes it) and paddings = 0. Dies (zt_fatal "finetune data") on the cases listed above. */
void zt_ft_dataset_load(zt_ft_dataset *d, zt_ft_task task, const char *name, const char *const *paths, int npaths,
                        const zt_tokenizer *tok, int seq_length);
void zt_ft_dataset_free(zt_ft_dataset *d);
/* Choice `choice` of sample s as Megatron's build_tokens_types_paddings_from_ids returns it: ids, types and paddings
 * (1 = real token, 0 = padding: Megatron's padding_mask) of seq_length entries each; a padded position has id and
 * type = the pad id, as Megatron writes them. */
void zt_ft_dataset_row(const zt_ft_dataset *d, int64_t s, int choice, int32_t *ids, int32_t *types, uint8_t *pads);

/* Megatron's name_from_datapath of the task's finetune.py, into out (n bytes, truncated to fit): GLUE
 * path.split(TASK)[-1].strip('.tsv').strip('/').replace('_', '-') with the task's own name (str.strip(chars) drops
 * any of those characters from both ends: ".../MNLI/dev_matched.tsv" -> "dev-matched", ".../MNLI/test.tsv" ->
 * "te"); RACE path.split('RACE')[-1].strip('/').replace('/', '-'). */
void zt_ft_name_from_path(zt_ft_task task, const char *path, char *out, size_t n);

/* DistributedSampler(dataset, num_replicas=world, rank=r) (shuffle, seed 0, no drop_last in the sampler) then
 * DataLoader(batch_size=batch, drop_last=drop_last): each rank reads per_rank = ceil(n / world) indices of the
 * permutation padded by repeating its start, rank r taking positions r, r + world, ...; batches = per_rank / batch
 * (drop_last) or ceil(per_rank / batch). */
typedef struct {
  int64_t n;
  int world, batch, drop_last;
  int64_t per_rank, batches;
  /* the permutation of the last epoch asked for */
  int64_t *perm;
  uint64_t perm_epoch;
  int perm_valid;
} zt_ft_loader;

/* n >= 0, world >= 1, batch >= 1 (dies otherwise); n = 0 gives per_rank = batches = 0. */
void zt_ft_loader_init(zt_ft_loader *l, int64_t n, int world, int batch, int drop_last);
/* The dataset index of slot j (0 <= j < batch) of batch q (0 <= q < batches) of rank r (0 <= r < world) when the
 * sampler's epoch is `epoch` (the generator's seed of torch.randperm, zt_torch_randperm of data/pretraining_sampler.h:
 * Megatron's set_epoch argument, args.seed + epoch for training, 0 for validation); -1 for a slot past the end of a
 * last partial batch. Arguments outside those ranges die. The permutation is computed once per epoch and kept in l. */
int64_t zt_ft_loader_index(zt_ft_loader *l, uint64_t epoch, int rank, int64_t q, int j);
void zt_ft_loader_free(zt_ft_loader *l);

#endif
