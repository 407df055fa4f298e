"""A transcription of DeepSpeed 0.16's DeepSpeedDataSampler
(deepspeed/runtime/data_pipeline/data_sampling/data_sampler.py) for one process: the curriculum clusters, the
draws from NumPy's own np.random.default_rng, NumPy's set operations, and __iter__'s micro-batch slices per
data-parallel rank. It is the reference test_data_sampler.py compares zerotron's sampler with. DeepSpeed's
broadcast from rank 0 and its cluster files are left out (every rank computes the same batch here)."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "curriculum"))
from curriculum_oracle import CurriculumScheduler  # noqa: E402

DS_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint16, 7: np.uint32, 8: np.uint64}


def read_index(prefix):
    """MMapIndexedDataset (DeepSpeed's dtype table): the list of items as arrays."""
    with open(prefix + ".idx", "rb") as f:
        b = f.read()
    assert b[:9] == b"MMIDIDX\x00\x00"
    code = b[17]
    n = int(np.frombuffer(b, np.uint64, 1, 18)[0])
    sizes = np.frombuffer(b, np.int32, n, 34)
    ptrs = np.frombuffer(b, np.int64, n, 34 + 4 * n)
    data = np.fromfile(prefix + ".bin", DS_DTYPES[code])
    es = np.dtype(DS_DTYPES[code]).itemsize
    return [data[p // es:p // es + s] for p, s in zip(ptrs, sizes)]


class Sampler:
    def __init__(self, de, one_epoch, mbs, dp, gbs):
        self.cfg = de
        self.one_epoch = one_epoch
        self.mbs, self.dp, self.gbs = mbs, dp, gbs
        self.np_rng = np.random.default_rng(de["seed"])
        cl = de["data_sampling"]["curriculum_learning"]
        self.metrics = cl["curriculum_metrics"]
        self.curriculum_step = 0
        self.current = {}
        self.data_1epoch_size = None
        self.clusters, self.sizes, self.positions = [], [], []
        self.sched, self.to_sample, self.to_metric = {}, {}, {}
        self.log = []
        for m, mc in self.metrics.items():
            self.sched[m] = CurriculumScheduler(mc)
            if mc["clustering_type"] != "single_cluster":
                self.to_sample[m] = read_index(mc["index_to_sample_path"])
                if mc["difficulty_type"] == "value":
                    self.to_metric[m] = read_index(mc["index_to_metric_path"])

    def by_value(self, m, start, end):
        new = None
        for row in range(len(self.to_sample[m])):
            if self.to_metric[m][row] <= end and self.to_metric[m][row] > start:
                rs = np.copy(self.to_sample[m][row])
                new = rs if new is None else np.concatenate((new, rs), axis=None)
        return new

    def by_percentile(self, m, pstart, pend):
        new = None
        if self.data_1epoch_size is None:
            self.data_1epoch_size = sum(len(x) for x in self.to_sample[m])
        maxp = self.metrics[m]["max_difficulty"]
        per = self.data_1epoch_size // maxp
        start_count, end_count = per * pstart, per * pend
        if pend == maxp:
            end_count = self.data_1epoch_size
        cur = 0
        for row in range(len(self.to_sample[m])):
            rs = len(self.to_sample[m][row])
            if cur + rs > start_count:
                lo = max(0, start_count - cur)
                hi = rs if cur + rs <= end_count else end_count - cur
                part = np.copy(self.to_sample[m][row][lo:hi])
                new = part if new is None else np.concatenate((new, part), axis=None)
            cur += rs
            if cur >= end_count:
                break
        return new

    def new_cluster(self, prev):
        need = sum(1 for m in self.metrics if self.metrics[m]["clustering_type"] != "single_cluster")
        new = None
        if need > 1:
            for m, mc in self.metrics.items():
                if mc["clustering_type"] == "single_cluster":
                    mcl = np.arange(0, self.one_epoch, 1)
                elif mc["difficulty_type"] == "value":
                    mcl = self.by_value(m, float("-inf"), self.current[m])
                else:
                    mcl = self.by_percentile(m, 0, self.current[m])
                if mcl is None:
                    mcl = np.zeros(0, np.int64)
                new = mcl if new is None else np.intersect1d(new, mcl, assume_unique=True)
            for c in self.clusters:
                new = np.setdiff1d(new, c, assume_unique=True)
        else:
            if len(self.clusters) == 0:
                new = np.arange(0, self.one_epoch, 1)
            for m, mc in self.metrics.items():
                if mc["clustering_type"] != "single_cluster":
                    if mc["difficulty_type"] == "value":
                        new = self.by_value(m, prev[m], self.current[m])
                    else:
                        new = self.by_percentile(m, prev[m], self.current[m])
        if new is not None and len(new) > 0:
            self.log.append(f"new data cluster (previous_difficulties {prev}, current_difficulties {self.current}) "
                            f"with size {len(new)} generated.")
            self.np_rng.shuffle(new)
            self.clusters.append(np.array(new))
            self.sizes.append(len(new))
            self.positions.append(0)
        else:
            self.log.append(f"new data cluster (previous_difficulties {prev}, current_difficulties {self.current}) "
                            f"has no matched data thus skipped.")

    def from_cluster(self, c, k):
        start = self.positions[c]
        samples = list(np.copy(self.clusters[c][start:start + k]))
        self.positions[c] += k
        if len(samples) < k:
            rem = k - len(samples)
            cl = np.copy(self.clusters[c])
            self.np_rng.shuffle(cl)
            self.clusters[c] = cl
            samples += list(np.copy(self.clusters[c][:rem]))
            self.positions[c] = rem
        return samples

    def next_global_batch(self):
        self.curriculum_step += 1
        changed, prev = False, {}
        for m in self.metrics:
            nd = self.sched[m].update_difficulty(self.curriculum_step)
            if m not in self.current or nd != self.current[m]:
                changed = True
            if m in self.current:
                prev[m] = self.current[m]
            else:
                prev[m] = float("-inf") if self.metrics[m]["difficulty_type"] == "value" else 0
            self.current[m] = nd
        if changed:
            self.new_cluster(prev)
        total = sum(self.sizes)
        weights = [x / total for x in self.sizes]
        counts = np.bincount(self.np_rng.choice(len(self.clusters), self.gbs, replace=True, p=weights),
                             minlength=len(self.clusters))
        batch = []
        for c in range(len(counts)):
            batch += self.from_cluster(c, counts[c])
        self.np_rng.shuffle(batch)
        assert len(batch) == self.gbs, "short global batch"
        return [int(x) for x in batch]

    def micro_slices(self, batch):
        """__iter__: chunks of micro batch x dp, each rank's [round(r n / dp), round((r + 1) n / dp))."""
        per = self.mbs * self.dp
        out = []
        for mb in range(len(batch) // per):
            chunk = batch[mb * per:(mb + 1) * per]
            for r in range(self.dp):
                lo, hi = round(r * len(chunk) / self.dp), round((r + 1) * len(chunk) / self.dp)
                out.append((mb, r, chunk[lo:hi]))
        return out


def dump(de, one_epoch, mbs, dp, gbs, steps):
    """The lines data_sampler_dump prints."""
    s = Sampler(de, one_epoch, mbs, dp, gbs)
    lines = []
    for _ in range(steps):
        n = len(s.log)
        batch = s.next_global_batch()
        lines += s.log[n:]
        lines.append("step %d %s | %s" % (s.curriculum_step, " ".join(str(s.current[m]) for m in s.metrics),
                                          " ".join(map(str, batch))))
        for mb, r, ids in s.micro_slices(batch):
            lines.append("  mb %d rank %d: %s" % (mb, r, " ".join(map(str, ids))))
    return lines
