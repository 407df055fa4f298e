#!/usr/bin/env python3
"""The oracle of test_bert_dataset.py: Megatron-DeepSpeed's BERT data code transcribed to Python/NumPy (main branch:
megatron/data/dataset_utils.py get_samples_mapping's file name, get_a_and_b_segments, truncate_segments,
create_tokens_and_tokentypes, create_masked_lm_predictions (also with T5's arguments), pad_and_convert_to_numpy,
build_train_valid_test_datasets and get_train_valid_test_split_; bert_dataset.py BertDataset / build_training_sample;
blendable_dataset.py with helpers.cpp build_blending_indices; helpers.cpp build_mapping_impl over a transcription of
std::mt19937 / std::mt19937_64, which the test checks against libstdc++), run with numpy.random.RandomState.
Also an independent reader of the .bin/.idx format and Megatron's view of a vocab.txt (load_vocab + add_token).
Nothing here is shared with the C code."""
import collections
import decimal
import struct

import numpy as np

# ---- the format, read independently (MMapIndexedDataset) ----------------------------------------------------------
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


class Indexed:
    def __init__(self, prefix):
        idx = open(prefix + ".idx", "rb").read()
        assert idx[:9] == b"MMIDIDX\x00\x00"
        dtype = DTYPES[idx[17]]
        n, d = struct.unpack("<QQ", idx[18:34])
        self.sizes = np.frombuffer(idx, np.int32, n, 34)
        self.pointers = np.frombuffer(idx, np.int64, n, 34 + 4 * n)
        self.doc_idx = np.frombuffer(idx, np.int64, d, 34 + 12 * n)
        self.bin = np.fromfile(prefix + ".bin", dtype=dtype)
        self.itemsize = np.dtype(dtype).itemsize

    def __getitem__(self, i):
        start = self.pointers[i] // self.itemsize
        return self.bin[start:start + self.sizes[i]]


# ---- the tokenizer as Megatron's BERT data sees it (bert_tokenization.load_vocab + add_token) --------------------
class Vocab:
    def __init__(self, path):
        vocab = collections.OrderedDict()
        index = 0
        with open(path, "r", encoding="utf-8") as reader:
            while True:
                token = reader.readline()
                if not token:
                    break
                vocab[token.strip()] = index
                index += 1
        inv_vocab = {v: k for k, v in vocab.items()}
        for tok in ("[BOS]", "[EOS]"):
            if tok not in vocab:
                inv_vocab[len(vocab)] = tok
                vocab[tok] = len(vocab)
        self.vocab, self.inv_vocab = vocab, inv_vocab
        self.vocab_id_list = list(inv_vocab.keys())
        self.cls, self.sep, self.mask, self.pad = (vocab[t] for t in ("[CLS]", "[SEP]", "[MASK]", "[PAD]"))


# ---- helpers.cpp: std::mt19937 / std::mt19937_64 and build_mapping ----------------------------------------------
class MT19937:
    def __init__(self, seed):
        self.x = [seed & 0xFFFFFFFF]
        for i in range(1, 624):
            self.x.append((1812433253 * (self.x[-1] ^ (self.x[-1] >> 30)) + i) & 0xFFFFFFFF)
        self.i = 624

    def __call__(self):
        if self.i == 624:
            x = self.x
            for k in range(624):
                y = (x[k] & 0x80000000) | (x[(k + 1) % 624] & 0x7FFFFFFF)
                x[k] = x[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.i = 0
        y = self.x[self.i]
        self.i += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y & 0xFFFFFFFF


class MT19937_64:
    M64 = (1 << 64) - 1

    def __init__(self, seed):
        self.x = [seed & self.M64]
        for i in range(1, 312):
            self.x.append((6364136223846793005 * (self.x[-1] ^ (self.x[-1] >> 62)) + i) & self.M64)
        self.i = 312

    def __call__(self):
        if self.i == 312:
            x = self.x
            for k in range(312):
                y = (x[k] & 0xFFFFFFFF80000000) | (x[(k + 1) % 312] & 0x7FFFFFFF)
                x[k] = x[(k + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            self.i = 0
        y = self.x[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000 & self.M64
        y ^= (y << 37) & 0xFFF7EEE000000000 & self.M64
        y ^= y >> 43
        return y & self.M64


LONG_SENTENCE_LEN = 512


def build_mapping(doc_idx, sizes, num_epochs, max_num_samples, max_seq_length, short_seq_prob, seed, min_num_sent):
    """helpers.cpp build_mapping_impl (both passes draw the same numbers: one pass is enough)."""
    ratio = 0
    if short_seq_prob > 0:  # C's round(): half away from zero
        ratio = int(decimal.Decimal(1.0 / short_seq_prob).quantize(decimal.Decimal(1), decimal.ROUND_HALF_UP))
    gen = MT19937(seed)

    def target_len():
        if ratio == 0:
            return max_seq_length
        r = gen()
        if r % ratio == 0:
            return 2 + r % (max_seq_length - 1)
        return max_seq_length

    rows = []
    for epoch in range(num_epochs):
        if len(rows) >= max_num_samples:
            break
        for doc in range(len(doc_idx) - 1):
            first, last = int(doc_idx[doc]), int(doc_idx[doc + 1])
            prev, remain = first, last - first
            long_sentence = remain > 1 and any(sizes[s] > LONG_SENTENCE_LEN for s in range(first, last))
            if remain >= min_num_sent and not long_sentence:
                seq_len = num_sent = 0
                target = target_len()
                for s in range(first, last):
                    seq_len += int(sizes[s])
                    num_sent += 1
                    remain -= 1
                    if (seq_len >= target and remain > 1 and num_sent >= min_num_sent) or remain == 0:
                        rows.append((prev, s + 1, target))
                        prev = s + 1
                        target = target_len()
                        seq_len = num_sent = 0
        assert rows, "no sample in an epoch: the test must not ask for this"
    gen64 = MT19937_64(seed + 1)
    for i in range(len(rows) - 1, 0, -1):
        j = gen64() % (i + 1)
        rows[i], rows[j] = rows[j], rows[i]
    return np.array(rows, dtype=np.uint32).reshape(-1, 3)


def mapping_name(prefix, name, num_epochs, max_num_samples, max_seq_length, short_seq_prob, seed, exact=None):
    """get_samples_mapping's file name (num_epochs None, as BertDataset passes it)."""
    if exact is not None and name == "train":
        num_epochs, max_num_samples = exact, np.iinfo(np.int64).max - 1
    else:
        if not num_epochs:
            num_epochs = np.iinfo(np.int32).max - 1
        if not max_num_samples:
            max_num_samples = np.iinfo(np.int64).max - 1
    f = prefix + "_{}_indexmap".format(name)
    if exact is not None and name == "train":
        f += "_exact{}ep".format(num_epochs)
    else:
        if num_epochs != (np.iinfo(np.int32).max - 1):
            f += "_{}ep".format(num_epochs)
        if max_num_samples != (np.iinfo(np.int64).max - 1):
            f += "_{}mns".format(max_num_samples)
    f += "_{}msl".format(max_seq_length)
    f += "_{:0.2f}ssp".format(short_seq_prob)
    f += "_{}s".format(seed)
    return f + ".npy", num_epochs, max_num_samples


# ---- dataset_utils.py / bert_dataset.py --------------------------------------------------------------------------
def get_a_and_b_segments(sample, np_rng):
    n_sentences = len(sample)
    assert n_sentences > 1
    a_end = 1
    if n_sentences >= 3:
        a_end = np_rng.randint(1, n_sentences)
    tokens_a = []
    for j in range(a_end):
        tokens_a.extend(sample[j])
    tokens_b = []
    for j in range(a_end, n_sentences):
        tokens_b.extend(sample[j])
    is_next_random = False
    if np_rng.random() < 0.5:
        is_next_random = True
        tokens_a, tokens_b = tokens_b, tokens_a
    return tokens_a, tokens_b, is_next_random


def truncate_segments(tokens_a, tokens_b, len_a, len_b, max_num_tokens, np_rng):
    assert len_a > 0
    if len_a + len_b <= max_num_tokens:
        return False
    while len_a + len_b > max_num_tokens:
        if len_a > len_b:
            len_a -= 1
            tokens = tokens_a
        else:
            len_b -= 1
            tokens = tokens_b
        if np_rng.random() < 0.5:
            del tokens[0]
        else:
            tokens.pop()
    return True


def create_tokens_and_tokentypes(tokens_a, tokens_b, cls_id, sep_id):
    tokens = [cls_id] + list(tokens_a) + [sep_id]
    tokentypes = [0] * (len(tokens_a) + 2)
    for token in tokens_b:
        tokens.append(token)
        tokentypes.append(1)
    if tokens_b:
        tokens.append(sep_id)
        tokentypes.append(1)
    return tokens, tokentypes


MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


def is_start_piece(piece):
    return not piece.startswith("##")


def create_masked_lm_predictions(tokens, vocab_id_list, vocab_id_to_token_dict, masked_lm_prob, cls_id, sep_id,
                                 mask_id, max_predictions_per_seq, np_rng, max_ngrams=3, do_whole_word_mask=True,
                                 favor_longer_ngram=False, geometric_dist=False, masking_style="bert"):
    """dataset_utils.create_masked_lm_predictions with Megatron's defaults (BERT's) and do_permutation False, which
    neither BERT nor T5 sets; returns the masked tokens, positions, labels and spans (T5Dataset's arguments:
    max_ngrams 10, geometric_dist True, masking_style "t5")."""
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


def pad_and_convert_to_numpy(tokens, tokentypes, masked_positions, masked_labels, pad_id, max_seq_length):
    num_tokens = len(tokens)
    padding_length = max_seq_length - num_tokens
    assert padding_length >= 0
    filler = [pad_id] * padding_length
    tokens_np = np.array(tokens + filler, dtype=np.int64)
    tokentypes_np = np.array(tokentypes + filler, dtype=np.int64)
    padding_mask_np = np.array([1] * num_tokens + [0] * padding_length, dtype=np.int64)
    labels = [-1] * max_seq_length
    loss_mask = [0] * max_seq_length
    for i in range(len(masked_positions)):
        labels[masked_positions[i]] = masked_labels[i]
        loss_mask[masked_positions[i]] = 1
    return tokens_np, tokentypes_np, np.array(labels, dtype=np.int64), padding_mask_np, np.array(loss_mask,
                                                                                                  dtype=np.int64)


def build_training_sample(sample, target_seq_length, max_seq_length, vocab, masked_lm_prob, np_rng, binary_head):
    if binary_head:
        assert len(sample) > 1
    assert target_seq_length <= max_seq_length
    if binary_head:
        tokens_a, tokens_b, is_next_random = get_a_and_b_segments(sample, np_rng)
    else:
        tokens_a = []
        for j in range(len(sample)):
            tokens_a.extend(sample[j])
        tokens_b = []
        is_next_random = False
    max_num_tokens = target_seq_length
    truncated = truncate_segments(tokens_a, tokens_b, len(tokens_a), len(tokens_b), max_num_tokens, np_rng)
    tokens, tokentypes = create_tokens_and_tokentypes(tokens_a, tokens_b, vocab.cls, vocab.sep)
    max_predictions_per_seq = masked_lm_prob * max_num_tokens
    tokens, masked_positions, masked_labels, _ = create_masked_lm_predictions(
        tokens, vocab.vocab_id_list, vocab.inv_vocab, masked_lm_prob, vocab.cls, vocab.sep, vocab.mask,
        max_predictions_per_seq, np_rng)
    text, types, labels, padding_mask, loss_mask = pad_and_convert_to_numpy(
        tokens, tokentypes, masked_positions, masked_labels, vocab.pad, max_seq_length)
    return {"text": text, "types": types, "labels": labels, "is_random": int(is_next_random),
            "loss_mask": loss_mask, "padding_mask": padding_mask, "truncated": int(truncated)}


class BertDataset:
    def __init__(self, name, data, prefix, doc_range, max_num_samples, masked_lm_prob, max_seq_length,
                 short_seq_prob, seed, binary_head, vocab, exact=None, mapping=None):
        self.name, self.data, self.seed, self.vocab = name, data, seed, vocab
        self.masked_lm_prob, self.max_seq_length, self.binary_head = masked_lm_prob, max_seq_length, binary_head
        docs = data.doc_idx[doc_range[0]:doc_range[1] + 1]  # set_doc_idx(doc_idx[start:end + 1])
        self.filename, num_epochs, max_num_samples = mapping_name(prefix, name, None, max_num_samples,
                                                                  max_seq_length - 3, short_seq_prob, seed, exact)
        self.samples_mapping = mapping if mapping is not None else build_mapping(
            docs, data.sizes, num_epochs, max_num_samples, max_seq_length - 3, short_seq_prob, seed,
            2 if binary_head else 1)

    def __len__(self):
        return self.samples_mapping.shape[0]

    def __getitem__(self, idx):
        start_idx, end_idx, seq_length = self.samples_mapping[idx]
        sample = [self.data[i] for i in range(start_idx, end_idx)]
        np_rng = np.random.RandomState(seed=((self.seed + idx) % 2 ** 32))
        return build_training_sample(sample, seq_length, self.max_seq_length, self.vocab, self.masked_lm_prob,
                                     np_rng, self.binary_head)


def split_bounds(splits_string, size):
    """get_train_valid_test_split_"""
    if splits_string.find(",") != -1:
        splits = [float(s) for s in splits_string.split(",")]
    elif splits_string.find("/") != -1:
        splits = [float(s) for s in splits_string.split("/")]
    else:
        splits = [float(splits_string)]
    while len(splits) < 3:
        splits.append(0.)
    splits = splits[:3]
    splits_sum = sum(splits)
    splits = [split / splits_sum for split in splits]
    splits_index = [0]
    for index, split in enumerate(splits):
        splits_index.append(splits_index[index] + int(round(split * float(size))))
    diff = splits_index[-1] - size
    for index in range(1, len(splits_index)):
        splits_index[index] -= diff
    return splits_index


def weights_and_num_samples(words, num_samples):
    """get_datasets_weights_and_num_samples"""
    weights = [float(words[2 * i]) for i in range(len(words) // 2)]
    prefixes = [words[2 * i + 1].strip() for i in range(len(words) // 2)]
    weight_sum = 0.0
    for weight in weights:
        weight_sum += weight
    weights = [weight / weight_sum for weight in weights]
    per = [[int(np.ceil(val * weight * 1.005)) for val in num_samples] for weight in weights]
    return prefixes, weights, per


def blending_indices(weights, size):
    """BlendableDataset + helpers.cpp build_blending_indices"""
    w = np.array(weights, dtype=np.float64)
    w /= np.sum(w)
    index = np.zeros(size, dtype=np.uint8)
    sample = np.zeros(size, dtype=np.int64)
    current = [0] * len(w)
    for k in range(size):
        kd = max(float(k), 1.0)
        errors = [w[i] * kd - current[i] for i in range(len(w))]
        best = int(np.argmax(errors))
        index[k], sample[k] = best, current[best]
        current[best] += 1
    return index, sample


class Split:
    """One split: a dataset or a blend (the list of (member, sample) it draws)."""

    def __init__(self, members, weights=None, size=None):
        self.members = members
        if weights is None:
            self.index, self.sample = np.zeros(len(members[0]), np.uint8), np.arange(len(members[0]))
        else:
            self.index, self.sample = blending_indices(weights, size)

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        return self.members[self.index[i]][self.sample[i]]


def build_datasets(files, vocab, words, split, num_samples, seq, mask_prob, ssp, seed, binary_head, exact=None):
    """build_train_valid_test_datasets (with _build_train_valid_test_datasets per prefix). Splits asked for 0
    samples are not built (Megatron raises ValueError for them)."""
    names = ["train", "valid", "test"]
    if len(words) == 1:
        prefixes, weights, per = [words[0]], None, [num_samples]
    else:
        prefixes, weights, per = weights_and_num_samples(words, num_samples)
    out = [[], [], []]
    for i, prefix in enumerate(prefixes):
        data = files[prefix]
        b = split_bounds(split, len(data.doc_idx) - 1)
        for k in range(3):
            if b[k + 1] > b[k] and (per[i][k] > 0 or (k == 0 and exact)):
                out[k].append(BertDataset(names[k], data, prefix, (b[k], b[k + 1]), per[i][k], mask_prob, seq, ssp,
                                          seed, binary_head, vocab, exact if k == 0 else None))
    result = []
    for k in range(3):
        if len(out[k]) != len(prefixes):
            result.append(None)
        elif weights is None:
            result.append(Split(out[k]))
        else:
            result.append(Split(out[k], weights, sum(per[i][k] for i in range(len(prefixes)))))
    return result


def build_separate(files, vocab, lists, num_samples, seq, mask_prob, ssp, seed, binary_head):
    """--train/valid/test-data-path: each list's datasets over all their documents, blended like --data-path."""
    names = ["train", "valid", "test"]
    result = []
    for k in range(3):
        words = lists[k]
        if not words:
            result.append(None)
            continue
        if len(words) == 1:
            prefixes, weights, per = [words[0]], None, [num_samples]
        else:
            prefixes, weights, per = weights_and_num_samples(words, num_samples)
        members = []
        for i, prefix in enumerate(prefixes):
            data = files[prefix]
            members.append(BertDataset(names[k], data, prefix, (0, len(data.doc_idx) - 1), per[i][k], mask_prob, seq,
                                       ssp, seed, binary_head, vocab))
        result.append(Split(members) if weights is None else
                      Split(members, weights, sum(per[i][k] for i in range(len(prefixes)))))
    return result
