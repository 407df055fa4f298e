"""Megatron-DeepSpeed's pretraining samplers over the real torch.randperm, as the oracle of
data/pretraining_sampler.c (test_pretraining_sampler.py, test_dataloader_types.sh): MegatronPretrainingRandomSampler
under training.py's cyclic_iter (--dataloader-type cyclic, --no-data-sharding), MegatronPretrainingSampler under
DeepSpeed's RepeatingLoader (--repeated-dataloader). Transcribed from megatron/data/data_samplers.py,
megatron/training.py and deepspeed/runtime/dataloader.py."""
import torch


class RandomSampler:  # megatron/data/data_samplers.py MegatronPretrainingRandomSampler (no RandomSeedDataset)
    def __init__(self, total, consumed, mbs, rank, dp, sharding):
        self.total, self.consumed, self.mbs, self.rank, self.dp, self.sharding = total, consumed, mbs, rank, dp, sharding
        self.step = mbs * dp
        self.last = total % self.step

    def __iter__(self):
        active = self.total - self.last
        epoch = self.consumed // active
        cur = self.consumed % active
        assert cur % self.step == 0
        g = torch.Generator()
        g.manual_seed(epoch)
        if self.sharding:
            bucket = (self.total // self.step) * self.mbs
            start = self.rank * bucket
            order = [start + x for x in torch.randperm(bucket, generator=g).tolist()[cur // self.dp:]]
        else:
            full = (self.total // self.mbs) * self.mbs
            order = torch.randperm(full, generator=g).tolist()[cur:][self.rank::self.dp]
        batch = []
        for i in order:
            batch.append(i)
            if len(batch) == self.mbs:
                self.consumed += self.step
                yield batch
                batch = []


class SequentialSampler:  # MegatronPretrainingSampler: its consumed_samples never moves
    def __init__(self, total, consumed, mbs, rank, dp):
        assert consumed < total
        self.total, self.consumed, self.mbs, self.rank, self.dp = total, consumed, mbs, rank, dp

    def __iter__(self):
        batch = []
        for i in range(self.consumed, self.total):
            batch.append(i)
            if len(batch) == self.mbs * self.dp:
                yield batch[self.rank * self.mbs:(self.rank + 1) * self.mbs]
                batch = []


def cyclic_iter(it):  # megatron/training.py
    while True:
        for x in it:
            yield x


def repeating(loader):  # deepspeed.runtime.dataloader.RepeatingLoader
    it = iter(loader)
    while True:
        try:
            yield next(it)
        except StopIteration:
            it = iter(loader)
            yield next(it)




def rank_batches(kind, sharding, total, mbs, dp, rank, start):
    """The micro batches (lists of mbs dataset ids) data-parallel rank `rank` loads, from a loader built after
    `start` consumed samples; kind "cyclic" or "repeat"."""
    if kind == "cyclic":
        return cyclic_iter(RandomSampler(total, start, mbs, rank, dp, sharding))
    return repeating(SequentialSampler(total, start, mbs, rank, dp))


def positions(kind, sharding, total, mbs, dp, start, steps):
    """The dataset id at each sample position start + j x mbs x dp + rank x mbs + i of the first `steps` micro
    batches (the sequential sampler's positions), as a list from `start`."""
    gens = [rank_batches(kind, sharding, total, mbs, dp, r, start) for r in range(dp)]
    out = []
    for _ in range(steps):
        for g in gens:
            out += next(g)
    return out
