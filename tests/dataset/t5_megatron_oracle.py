"""A NumPy transcription of Megatron-DeepSpeed's T5 data code, independent of our C: t5_dataset.py's __getitem__,
build_training_sample, pad_and_convert_to_numpy, make_attention_mask and make_history_mask, calling dataset_utils.py's
create_masked_lm_predictions (bert_megatron_oracle.py) with T5's arguments (max_ngrams 10, geometric_dist True,
masking_style "t5"), run with numpy.random.RandomState exactly as Megatron runs it. The samples mapping is bert_megatron_oracle.py's build_mapping
(T5Dataset passes max_seq_length - 2 and binary_head False). Used by test_t5_dataset.py."""
import collections

import numpy as np

from bert_megatron_oracle import create_masked_lm_predictions


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
