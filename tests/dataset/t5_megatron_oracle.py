"""A NumPy transcription of Megatron-DeepSpeed's T5 data code, independent of our C: t5_dataset.py's __getitem__,
build_training_sample, pad_and_convert_to_numpy, make_attention_mask and make_history_mask, and dataset_utils.py's
create_masked_lm_predictions with T5's arguments (max_ngrams 10, geometric_dist True, masking_style "t5"), run with
numpy.random.RandomState exactly as Megatron runs it. The samples mapping is bert_megatron_oracle.py's build_mapping
(T5Dataset passes max_seq_length - 2 and binary_head False). Used by test_t5_dataset.py."""
import collections

import numpy as np

MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


def is_start_piece(piece):
    return not piece.startswith("##")


def create_masked_lm_predictions(tokens, vocab_id_list, vocab_id_to_token_dict, masked_lm_prob, cls_id, sep_id,
                                 mask_id, max_predictions_per_seq, np_rng, max_ngrams=10, do_whole_word_mask=True,
                                 favor_longer_ngram=False, geometric_dist=True, masking_style="t5"):
    """dataset_utils.create_masked_lm_predictions (do_permutation False); returns the masked tokens, positions,
    labels and spans."""
    cand_indexes = []
    for (i, token) in enumerate(tokens):
        if token == cls_id or token == sep_id:
            continue
        if do_whole_word_mask and len(cand_indexes) >= 1 and not is_start_piece(vocab_id_to_token_dict[token]):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
    output_tokens = list(tokens)
    masked_lm_positions, masked_lm_labels = [], []
    if masked_lm_prob == 0:
        return output_tokens, masked_lm_positions, masked_lm_labels, None
    num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
    ngrams = np.arange(1, max_ngrams + 1, dtype=np.int64)
    if not geometric_dist:
        pvals = 1. / np.arange(1, max_ngrams + 1)
        pvals /= pvals.sum(keepdims=True)
        if favor_longer_ngram:
            pvals = pvals[::-1]
    ngram_indexes = []
    for idx in range(len(cand_indexes)):
        ngram_indexes.append([cand_indexes[idx:idx + n] for n in ngrams])
    np_rng.shuffle(ngram_indexes)
    masked_lms, masked_spans = [], []
    covered_indexes = set()
    for cand_index_set in ngram_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if not cand_index_set:
            continue
        if not geometric_dist:
            n = np_rng.choice(ngrams[:len(cand_index_set)],
                              p=pvals[:len(cand_index_set)] / pvals[:len(cand_index_set)].sum(keepdims=True))
        else:
            n = min(np_rng.geometric(0.2), max_ngrams)
        index_set = sum(cand_index_set[n - 1], [])
        n -= 1
        while len(masked_lms) + len(index_set) > num_to_predict:
            if n == 0:
                break
            index_set = sum(cand_index_set[n - 1], [])
            n -= 1
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        if any(index in covered_indexes for index in index_set):
            continue
        for index in index_set:
            covered_indexes.add(index)
            if masking_style == "bert":
                if np_rng.random() < 0.8:
                    masked_token = mask_id
                elif np_rng.random() < 0.5:
                    masked_token = tokens[index]
                else:
                    masked_token = vocab_id_list[np_rng.randint(0, len(vocab_id_list))]
            elif masking_style == "t5":
                masked_token = mask_id
            else:
                raise ValueError("invalid value of masking style")
            output_tokens[index] = masked_token
            masked_lms.append(MaskedLmInstance(index=index, label=tokens[index]))
        masked_spans.append(MaskedLmInstance(index=index_set, label=[tokens[index] for index in index_set]))
    assert len(masked_lms) <= num_to_predict
    np_rng.shuffle(ngram_indexes)
    masked_lms = sorted(masked_lms, key=lambda x: x.index)
    masked_spans = sorted(masked_spans, key=lambda x: x.index[0])
    for p in masked_lms:
        masked_lm_positions.append(p.index)
        masked_lm_labels.append(p.label)
    return output_tokens, masked_lm_positions, masked_lm_labels, masked_spans


def make_attention_mask(source_block, target_block):
    return ((target_block[None, :] >= 1) * (source_block[:, None] >= 1)).astype(np.int64)


def make_history_mask(block):
    arange = np.arange(block.shape[0])
    return (arange[None, ] <= arange[:, None]).astype(np.int64)


def pad_and_convert_to_numpy(tokens, masked_positions, masked_labels, pad_id, max_seq_length, max_seq_length_dec,
                             masked_spans, bos_id, eos_id, sentinel_tokens):
    sentinel_tokens = collections.deque(sentinel_tokens)
    t5_input = []
    t5_decoder_in, t5_decoder_out = [bos_id], []
    start_index = 0
    for span in masked_spans:
        flag = sentinel_tokens.popleft()
        t5_decoder_in.append(flag)
        t5_decoder_in.extend(span.label)
        t5_decoder_out.append(flag)
        t5_decoder_out.extend(span.label)
        end_index = span.index[0]
        t5_input.extend(tokens[start_index:end_index])
        t5_input.append(flag)
        start_index = span.index[-1] + 1
    t5_decoder_out.append(eos_id)
    t5_input.extend(tokens[start_index:])
    num_tokens = len(t5_input)
    padding_length = max_seq_length - num_tokens
    assert padding_length >= 0
    assert len(masked_positions) == len(masked_labels)
    tokens_enc = np.array(t5_input + [pad_id] * padding_length, dtype=np.int64)
    num_tokens_dec = len(t5_decoder_in)
    padding_length_dec = max_seq_length_dec - num_tokens_dec
    assert padding_length_dec >= 0
    tokens_dec_in = np.array(t5_decoder_in + [pad_id] * padding_length_dec, dtype=np.int64)
    enc_mask = make_attention_mask(tokens_enc, tokens_enc)
    enc_dec_mask = make_attention_mask(tokens_dec_in, tokens_enc)
    dec_mask = make_attention_mask(tokens_dec_in, tokens_dec_in) * make_history_mask(tokens_dec_in)
    labels = np.array(t5_decoder_out + [-1] * padding_length_dec, dtype=np.int64)
    loss_mask = np.array([1] * num_tokens_dec + [0] * padding_length_dec, dtype=np.int64)
    return tokens_enc, tokens_dec_in, labels, enc_mask, dec_mask, enc_dec_mask, loss_mask


def build_training_sample(sample, target_seq_length, max_seq_length, max_seq_length_dec, vocab_id_list,
                          vocab_id_to_token_dict, cls_id, sep_id, mask_id, pad_id, masked_lm_prob, np_rng, bos_id,
                          eos_id, sentinel_tokens):
    assert target_seq_length <= max_seq_length
    tokens = [token for sentence in sample for token in sentence]
    max_num_tokens = target_seq_length
    truncated = len(tokens) > max_num_tokens
    tokens = tokens[:max_num_tokens]
    max_predictions_per_seq = masked_lm_prob * max_num_tokens
    tokens, masked_positions, masked_labels, masked_spans = create_masked_lm_predictions(
        tokens, vocab_id_list, vocab_id_to_token_dict, masked_lm_prob, cls_id, sep_id, mask_id,
        max_predictions_per_seq, np_rng, max_ngrams=10, geometric_dist=True, masking_style="t5")
    enc, dec, labels, enc_mask, dec_mask, enc_dec_mask, loss_mask = pad_and_convert_to_numpy(
        tokens, masked_positions, masked_labels, pad_id, max_seq_length, max_seq_length_dec, masked_spans, bos_id,
        eos_id, sentinel_tokens)
    return {"text_enc": enc, "text_dec": dec, "labels": labels, "loss_mask": loss_mask, "truncated": int(truncated),
            "enc_mask": enc_mask, "dec_mask": dec_mask, "enc_dec_mask": enc_dec_mask, "spans": len(masked_spans)}


class T5Vocab:
    """Megatron's _BertWordPieceTokenizer with vocab_extra_ids: vocab.txt, then [BOS], [EOS] and <extra_id_0..K-1>,
    each added (add_token) when not already there."""

    def __init__(self, path, extra_ids):
        vocab = collections.OrderedDict()
        with open(path, "r", encoding="utf-8") as f:
            for index, line in enumerate(f):
                vocab[line.strip()] = index
        for tok in ["[BOS]", "[EOS]"] + ["<extra_id_{}>".format(i) for i in range(extra_ids)]:
            if tok not in vocab:
                vocab[tok] = len(vocab)
        self.vocab = vocab
        self.inv_vocab = {v: k for k, v in vocab.items()}
        self.vocab_id_list = list(self.inv_vocab.keys())
        self.cls, self.sep, self.mask, self.pad = (vocab[t] for t in ("[CLS]", "[SEP]", "[MASK]", "[PAD]"))
        self.bos, self.eos = vocab["[BOS]"], vocab["[EOS]"]
        self.sentinels = [vocab["<extra_id_{}>".format(i)] for i in range(extra_ids)]


def t5_sample(indexed, row, idx, seed, vocab, max_seq_length, max_seq_length_dec, masked_lm_prob):
    """T5Dataset.__getitem__(idx) for mapping row (start, end, target)."""
    start, end, target = (int(x) for x in row)
    sample = [indexed[i] for i in range(start, end)]
    np_rng = np.random.RandomState(seed=(seed + idx))
    return build_training_sample(sample, target, max_seq_length, max_seq_length_dec, vocab.vocab_id_list,
                                 vocab.inv_vocab, vocab.cls, vocab.sep, vocab.mask, vocab.pad, masked_lm_prob, np_rng,
                                 vocab.bos, vocab.eos, vocab.sentinels)
