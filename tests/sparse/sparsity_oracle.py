"""An independent NumPy transcription of DeepSpeed's deepspeed/ops/sparse_attention/sparsity_config.py (Dense,
Fixed, Variable, BigBird and BSLongformer sparsity configs) and of runtime/config.py's get_sparse_*_config
(which keys each ds_config mode reads, with runtime/constants.py's defaults).

The layouts are int64 arrays [num_heads, nb, nb] built with the same loops and slices as DeepSpeed (torch
replaced by NumPy, whose slicing has the same Python semantics). The one random step, random.sample(population,
k) per row, goes through an injectable `sample(h, row, population, k)` so a test can hand in the columns the C
code drew and compare everything else exactly; the default is Python's random.sample, as in DeepSpeed.
"""
import random

import numpy as np

# runtime/constants.py
DS_DEFAULTS = {
    "mode": "fixed",
    "block": 16,
    "different_layout_per_head": False,
    "num_local_blocks": 4,
    "num_global_blocks": 1,
    "attention": "bidirectional",
    "horizontal_global_attention": False,
    "num_different_global_patterns": 1,
    "num_random_blocks": 0,
    "local_window_blocks": [4],
    "global_block_indices": [0],
    "global_block_end_indices": None,
    "num_sliding_window_blocks": 3,
}

# runtime/config.py: the keys get_sparse_<mode>_config reads (besides "mode")
DS_KEYS = {
    "dense": ["block"],
    "fixed": ["block", "different_layout_per_head", "num_local_blocks", "num_global_blocks", "attention",
              "horizontal_global_attention", "num_different_global_patterns"],
    "variable": ["block", "different_layout_per_head", "num_random_blocks", "local_window_blocks",
                 "global_block_indices", "global_block_end_indices", "attention", "horizontal_global_attention"],
    "bigbird": ["block", "different_layout_per_head", "num_random_blocks", "num_sliding_window_blocks",
                "num_global_blocks"],
    "bslongformer": ["block", "different_layout_per_head", "num_sliding_window_blocks", "global_block_indices",
                     "global_block_end_indices"],
}


def get_sparse_attention(sparsity):
    """config.py's get_sparse_attention for the `sparse_attention` dict: the parsed dict."""
    mode = sparsity.get("mode", DS_DEFAULTS["mode"])
    if mode not in DS_KEYS:
        raise NotImplementedError(f"Given sparsity mode, {mode}, has not been implemented yet!")
    out = {"mode": mode}
    for k in DS_KEYS[mode]:
        out[k] = sparsity.get(k, DS_DEFAULTS[k])
    return out


def python_sample(h, row, population, k):
    return random.sample(population, k)


class SparsityConfig:

    def __init__(self, num_heads, block=16, different_layout_per_head=False, sample=python_sample):
        self.num_heads = num_heads
        self.block = block
        self.different_layout_per_head = different_layout_per_head
        self.num_layout_heads = num_heads if different_layout_per_head else 1
        self.sample = sample

    def setup_layout(self, seq_len):
        if (seq_len % self.block != 0):
            raise ValueError(f'Sequence Length, {seq_len}, needs to be dividable by Block size {self.block}!')
        num_blocks = seq_len // self.block
        return np.zeros((self.num_heads, num_blocks, num_blocks), dtype=np.int64)

    def check_and_propagate_first_head_layout(self, layout):
        if not self.different_layout_per_head:
            layout[1:self.num_heads, :, :] = layout[0, :, :]
        return layout

    def sliding_window(self, h, layout):
        num_blocks = layout.shape[1]
        if (num_blocks < self.num_sliding_window_blocks):
            raise ValueError(f'Number of sliding window blocks, {self.num_sliding_window_blocks}, must be smaller '
                             f'than overall number of blocks in a row, {num_blocks}!')
        w = self.num_sliding_window_blocks // 2
        for row in range(0, num_blocks):
            start = max(0, row - w)
            end = min(row + w + 1, num_blocks)
            layout[h, row, start:end] = 1
        return layout

    def check_end_indices(self, global_block_indices, global_block_end_indices):
        if (global_block_end_indices is not None):
            if (len(global_block_indices) != len(global_block_end_indices)):
                raise ValueError(f'Global block start indices length, {len(global_block_indices)}, must be same as '
                                 f'global block end indices length, {len(global_block_end_indices)}!')
            for start_idx, end_idx in zip(global_block_indices, global_block_end_indices):
                if start_idx >= end_idx:
                    raise ValueError(f'Global block start index, {start_idx}, must be smaller than global block '
                                     f'end index, {end_idx}!')


class Dense(SparsityConfig):

    def make_layout(self, seq_len):
        layout = self.setup_layout(seq_len)
        layout[:, :, :] = 1
        return layout


class Fixed(SparsityConfig):

    def __init__(self, num_heads, block=16, different_layout_per_head=False, num_local_blocks=4, num_global_blocks=1,
                 attention='bidirectional', horizontal_global_attention=False, num_different_global_patterns=1,
                 sample=python_sample):
        super().__init__(num_heads, block, different_layout_per_head, sample)
        self.num_local_blocks = num_local_blocks
        if (num_local_blocks % num_global_blocks != 0):
            raise ValueError(f'Number of blocks in a local window, {num_local_blocks}, must be dividable by number '
                             f'of global blocks, {num_global_blocks}!')
        self.num_global_blocks = num_global_blocks
        if (attention != 'unidirectional' and attention != 'bidirectional'):
            raise NotImplementedError('only "uni/bi-directional" attentions are supported for now!')
        self.attention = attention
        if (attention != 'bidirectional' and horizontal_global_attention):
            raise ValueError('only "bi-directional" attentions can support horizontal global attention!')
        self.horizontal_global_attention = horizontal_global_attention
        if (num_different_global_patterns > 1 and not different_layout_per_head):
            raise ValueError('Number of different layouts cannot be more than one when you have set a single layout '
                             'for all heads! Set different_layout_per_head to True.')
        if (num_different_global_patterns > (num_local_blocks // num_global_blocks)):
            raise ValueError(f'Number of layout versions (num_different_global_patterns), '
                             f'{num_different_global_patterns}, cannot be larger than number of local window blocks '
                             f'divided by number of global blocks, {num_local_blocks} / {num_global_blocks} = '
                             f'{num_local_blocks//num_global_blocks}!')
        self.num_different_global_patterns = num_different_global_patterns

    def set_local_layout(self, h, layout):
        num_blocks = layout.shape[1]
        for i in range(0, num_blocks, self.num_local_blocks):
            end = min(i + self.num_local_blocks, num_blocks)
            for row in range(i, end):
                for col in range(i, (row + 1 if self.attention == 'unidirectional' else end)):
                    layout[h, row, col] = 1
        return layout

    def set_global_layout(self, h, layout):
        num_blocks = layout.shape[1]
        first_global_block_idx = self.num_local_blocks - (
            1 + h % self.num_different_global_patterns) * self.num_global_blocks
        end = num_blocks - (num_blocks % self.num_local_blocks)
        for i in range(first_global_block_idx, end, self.num_local_blocks):
            first_row = 0 if self.attention == 'bidirectional' else i
            layout[h, first_row:, i:i + self.num_global_blocks] = 1
            if (self.horizontal_global_attention):
                layout[h, i:i + self.num_global_blocks, :] = 1
        if (end < num_blocks):
            start = min(end + first_global_block_idx, num_blocks - self.num_global_blocks)
            end = start + self.num_global_blocks
            first_row = 0 if self.attention == 'bidirectional' else start
            layout[h, first_row:, start:end] = 1
            if (self.horizontal_global_attention):
                layout[h, start:end, :] = 1
        return layout

    def make_layout(self, seq_len):
        layout = self.setup_layout(seq_len)
        for h in range(0, self.num_layout_heads):
            layout = self.set_local_layout(h, layout)
            layout = self.set_global_layout(h, layout)
        return self.check_and_propagate_first_head_layout(layout)


class Variable(SparsityConfig):

    def __init__(self, num_heads, block=16, different_layout_per_head=False, num_random_blocks=0,
                 local_window_blocks=[4], global_block_indices=[0], global_block_end_indices=None,
                 attention='bidirectional', horizontal_global_attention=False, sample=python_sample):
        super().__init__(num_heads, block, different_layout_per_head, sample)
        self.num_random_blocks = num_random_blocks
        self.local_window_blocks = local_window_blocks
        self.global_block_indices = global_block_indices
        self.check_end_indices(global_block_indices, global_block_end_indices)
        self.global_block_end_indices = global_block_end_indices
        if (attention != 'unidirectional' and attention != 'bidirectional'):
            raise NotImplementedError('only "uni/bi-directional" attentions are supported for now!')
        self.attention = attention
        if (attention != 'bidirectional' and horizontal_global_attention):
            raise ValueError('only "bi-directional" attentions can support horizontal global attention!')
        self.horizontal_global_attention = horizontal_global_attention

    def set_random_layout(self, h, layout):
        num_blocks = layout.shape[1]
        if (num_blocks < self.num_random_blocks):
            raise ValueError(f'Number of random blocks, {self.num_random_blocks}, must be smaller than overall '
                             f'number of blocks in a row, {num_blocks}!')
        for row in range(0, num_blocks):
            rnd_cols = self.sample(h, row, range(0, num_blocks), self.num_random_blocks)
            layout[h, row, rnd_cols] = 1
        return layout

    def set_local_layout(self, h, layout):
        num_blocks = layout.shape[1]
        start_block_idx = 0
        end_block_idx = 0
        for block_size in self.local_window_blocks:
            end_block_idx += block_size
            end_block_idx = min(end_block_idx, num_blocks)
            for row in range(start_block_idx, end_block_idx):
                for col in range(start_block_idx, (row + 1 if self.attention == 'unidirectional' else end_block_idx)):
                    layout[h, row, col] = 1
            start_block_idx += block_size
        for i in range(start_block_idx, num_blocks, block_size):
            end_block_idx = min(i + block_size, num_blocks)
            for row in range(i, end_block_idx):
                for col in range(i, (row + 1 if self.attention == 'unidirectional' else end_block_idx)):
                    layout[h, row, col] = 1
        return layout

    def set_global_layout(self, h, layout):
        num_blocks = layout.shape[1]
        if (self.global_block_end_indices is None):
            for idx in self.global_block_indices:
                if (idx < num_blocks):
                    if (self.horizontal_global_attention):
                        layout[h, idx, :] = 1
                    first_row = 0 if self.attention == 'bidirectional' else idx
                    layout[h, first_row:, idx] = 1
        else:
            for start_idx, end_idx in zip(self.global_block_indices, self.global_block_end_indices):
                if (start_idx < num_blocks):
                    end_idx = min(end_idx, num_blocks)
                    if (self.horizontal_global_attention):
                        layout[h, start_idx:end_idx, :] = 1
                    first_row = 0 if self.attention == 'bidirectional' else start_idx
                    layout[h, first_row:, start_idx:end_idx] = 1
        return layout

    def make_layout(self, seq_len):
        layout = self.setup_layout(seq_len)
        for h in range(0, self.num_layout_heads):
            layout = self.set_random_layout(h, layout)
            layout = self.set_local_layout(h, layout)
            layout = self.set_global_layout(h, layout)
        return self.check_and_propagate_first_head_layout(layout)


class BigBird(SparsityConfig):

    def __init__(self, num_heads, block=16, different_layout_per_head=False, num_random_blocks=1,
                 num_sliding_window_blocks=3, num_global_blocks=1, attention='bidirectional', sample=python_sample):
        super().__init__(num_heads, block, different_layout_per_head, sample)
        self.num_random_blocks = num_random_blocks
        self.num_sliding_window_blocks = num_sliding_window_blocks
        self.num_global_blocks = num_global_blocks
        if (attention != 'unidirectional' and attention != 'bidirectional'):
            raise NotImplementedError('only "uni/bi-directional" attentions are supported for now!')
        self.attention = attention

    def set_random_layout(self, h, layout):
        num_blocks = layout.shape[1]
        if (num_blocks < self.num_random_blocks):
            raise ValueError(f'Number of random blocks, {self.num_random_blocks}, must be smaller than overall '
                             f'number of blocks in a row, {num_blocks}!')
        for row in range(0, num_blocks):
            sample_range = range(0, num_blocks) if self.attention == 'bidirectional' else range(0, row + 1)
            rnd_cols = self.sample(h, row, sample_range, self.num_random_blocks)
            layout[h, row, rnd_cols] = 1
        return layout

    def set_global_layout_itc(self, h, layout):
        num_blocks = layout.shape[1]
        if (num_blocks < self.num_global_blocks):
            raise ValueError(f'Number of global blocks, {self.num_global_blocks}, must be smaller than overall '
                             f'number of blocks in a row, {num_blocks}!')
        layout[h, 0:self.num_global_blocks, :] = 1
        layout[h, :, 0:self.num_global_blocks] = 1
        if self.attention == 'unidirectional':
            layout = np.tril(layout)  # torch.tril of the 3-d tensor: the last two dimensions of every head
        return layout

    def make_layout(self, seq_len):
        layout = self.setup_layout(seq_len)
        for h in range(0, self.num_layout_heads):
            layout = self.set_random_layout(h, layout)
            layout = self.sliding_window(h, layout)
            layout = self.set_global_layout_itc(h, layout)
        return self.check_and_propagate_first_head_layout(layout)


class BSLongformer(SparsityConfig):

    def __init__(self, num_heads, block=16, different_layout_per_head=False, num_sliding_window_blocks=3,
                 global_block_indices=[0], global_block_end_indices=None, attention='bidirectional',
                 sample=python_sample):
        super().__init__(num_heads, block, different_layout_per_head, sample)
        self.num_sliding_window_blocks = num_sliding_window_blocks
        self.global_block_indices = global_block_indices
        self.attention = attention
        self.check_end_indices(global_block_indices, global_block_end_indices)
        self.global_block_end_indices = global_block_end_indices

    def set_global_layout(self, h, layout):
        num_blocks = layout.shape[1]
        if (self.global_block_end_indices is None):
            for idx in self.global_block_indices:
                if (idx < num_blocks):
                    layout[h, idx, :] = 1
                    layout[h, :, idx] = 1
        else:
            for start_idx, end_idx in zip(self.global_block_indices, self.global_block_end_indices):
                if (start_idx < num_blocks):
                    end_idx = min(end_idx, num_blocks)
                    layout[h, start_idx:end_idx, :] = 1
                    layout[h, :, start_idx:end_idx] = 1
        if self.attention == 'unidirectional':
            layout = np.tril(layout)
        return layout

    def make_layout(self, seq_len):
        layout = self.setup_layout(seq_len)
        for h in range(0, self.num_layout_heads):
            layout = self.sliding_window(h, layout)
            layout = self.set_global_layout(h, layout)
        return self.check_and_propagate_first_head_layout(layout)


def from_config(cfg, num_heads, sample=python_sample):
    """The config object for a parsed sparse_attention dict (every key present), as model code builds it."""
    m = cfg["mode"]
    common = dict(num_heads=num_heads, block=cfg["block"], sample=sample)
    if m == "dense":
        return Dense(**common)
    common["different_layout_per_head"] = cfg["different_layout_per_head"]
    if m == "fixed":
        return Fixed(num_local_blocks=cfg["num_local_blocks"], num_global_blocks=cfg["num_global_blocks"],
                     attention=cfg["attention"], horizontal_global_attention=cfg["horizontal_global_attention"],
                     num_different_global_patterns=cfg["num_different_global_patterns"], **common)
    if m == "variable":
        return Variable(num_random_blocks=cfg["num_random_blocks"], local_window_blocks=cfg["local_window_blocks"],
                        global_block_indices=cfg["global_block_indices"],
                        global_block_end_indices=cfg["global_block_end_indices"], attention=cfg["attention"],
                        horizontal_global_attention=cfg["horizontal_global_attention"], **common)
    if m == "bigbird":
        return BigBird(num_random_blocks=cfg["num_random_blocks"],
                       num_sliding_window_blocks=cfg["num_sliding_window_blocks"],
                       num_global_blocks=cfg["num_global_blocks"], attention=cfg.get("attention", "bidirectional"),
                       **common)
    return BSLongformer(num_sliding_window_blocks=cfg["num_sliding_window_blocks"],
                        global_block_indices=cfg["global_block_indices"],
                        global_block_end_indices=cfg["global_block_end_indices"],
                        attention=cfg.get("attention", "bidirectional"), **common)
