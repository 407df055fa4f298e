"""Oracle for test_rampup.sh: Megatron-DeepSpeed's batch-size ramp-up transcribed independently of zerotron's C:
megatron/microbatches.py (RampupBatchsizeNumMicroBatches), training.py (update_train_iters; the training loop's
update_num_microbatches, consumed samples and tokens, the --train-tokens stop) and optimizer_param_scheduler.py
(get_lr, step(increment = the current global batch, token_num = the tokens consumed before the step)).
Usage: rampup_oracle.py KEY=VALUE ... with start, incr, ramp (the three --rampup-batch-size values), gbs, mbs, dp,
train_samples, seq, lr, min_lr, style, warmup_samples, decay_samples, and optionally warmup_tokens, decay_tokens,
train_tokens. Prints "train_iters N", then "iteration consumed_samples consumed_tokens global_batch lr" per
iteration; exits 1 with the reason where Megatron-DeepSpeed would fail (an assert or a division by zero).
test_rampup_formula.py imports ramp_steps."""
import math
import sys

kv = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
opt = lambda k: int(kv[k]) if k in kv else None


class Rampup:
    def __init__(self, start_batch_size, batch_size_increment, ramup_samples, global_batch_size, micro_batch_size,
                 data_parallel_size):
        self.micro_batch_times_data_parallel_size = micro_batch_size * data_parallel_size
        self.start_batch_size = start_batch_size
        self.global_batch_size = global_batch_size
        diff_batch_size = global_batch_size - start_batch_size
        assert start_batch_size > 0 and diff_batch_size >= 0 and batch_size_increment > 0
        assert diff_batch_size % batch_size_increment == 0
        self.batch_size_increment = batch_size_increment
        num_increments = diff_batch_size // batch_size_increment
        self.ramup_samples = ramup_samples
        assert ramup_samples >= 0
        self.rampup_samples_per_increment = ramup_samples / num_increments
        self.update(0, False)

    def update(self, consumed_samples, consistency_check):
        if consumed_samples > self.ramup_samples:
            self.current_global_batch_size = self.global_batch_size
        else:
            steps = int(consumed_samples / self.rampup_samples_per_increment)
            self.current_global_batch_size = self.start_batch_size + steps * self.batch_size_increment
            assert self.current_global_batch_size <= self.global_batch_size
        if consistency_check:
            assert self.current_global_batch_size % self.micro_batch_times_data_parallel_size == 0
        self.num_micro_batches = self.current_global_batch_size // self.micro_batch_times_data_parallel_size


class Sched:
    def __init__(self, max_lr, min_lr, warmup_steps, decay_steps, style, warmup_tokens, decay_tokens):
        self.max_lr, self.min_lr, self.style = max_lr, min_lr, style
        self.lr_warmup_steps, self.lr_decay_steps = warmup_steps, decay_steps
        self.lr_warmup_tokens, self.lr_decay_tokens = warmup_tokens, decay_tokens
        self.num_steps = self.num_tokens = 0
        self.step(0, 0)

    def get_lr(self):
        if self.lr_warmup_tokens is None:
            if self.lr_warmup_steps > 0 and self.num_steps <= self.lr_warmup_steps:
                if self.num_steps == self.lr_warmup_steps and self.lr_decay_tokens is not None:
                    self.lr_warmup_tokens = self.num_tokens
                return self.max_lr * float(self.num_steps) / float(self.lr_warmup_steps)
        elif self.lr_warmup_tokens > 0 and self.num_tokens <= self.lr_warmup_tokens:
            return self.max_lr * float(self.num_tokens) / float(self.lr_warmup_tokens)
        if self.style == "constant":
            return self.max_lr
        if self.lr_decay_tokens is None:
            if self.num_steps > self.lr_decay_steps:
                return self.min_lr
            ratio = float(self.num_steps - self.lr_warmup_steps) / float(self.lr_decay_steps - self.lr_warmup_steps)
        else:
            if self.num_tokens > self.lr_decay_tokens:
                return self.min_lr
            ratio = float(self.num_tokens - self.lr_warmup_tokens) / float(self.lr_decay_tokens -
                                                                           self.lr_warmup_tokens)
        coeff = 1.0 - ratio if self.style == "linear" else 0.5 * (math.cos(math.pi * ratio) + 1.0)
        return self.min_lr + coeff * (self.max_lr - self.min_lr)

    def step(self, increment, token_num):
        self.num_tokens = token_num
        self.num_steps += increment
        return self.get_lr()


def ramp_steps(start, incr, ramp, gbs, mbs, dp, train_samples):
    """update_train_iters, then the global batch of each of the train_iters steps (the loop's
    update_num_microbatches(consumed_train_samples), consistency check on)."""
    calc = Rampup(start, incr, ramp, gbs, mbs, dp)
    iterations, consumed = 0, 0
    while consumed <= ramp:
        calc.update(consumed, False)
        consumed += calc.current_global_batch_size
        iterations += 1
    calc.update(0, False)
    iterations += (train_samples - consumed) // gbs  # the partial last batch is thrown away
    batches, samples = [], 0
    for _ in range(iterations):
        calc.update(samples, True)
        batches.append(calc.num_micro_batches * calc.micro_batch_times_data_parallel_size)
        samples += batches[-1]
    return iterations, batches


def main():
    try:
        gbs, seq, train_samples = int(kv["gbs"]), int(kv["seq"]), int(kv["train_samples"])
        train_iters, batches = ramp_steps(int(kv["start"]), int(kv["incr"]), int(kv["ramp"]), gbs, int(kv["mbs"]),
                                          int(kv["dp"]), train_samples)
        print("train_iters %d" % train_iters)
        sched = Sched(float(kv["lr"]), float(kv["min_lr"]), int(kv["warmup_samples"]), int(kv["decay_samples"]),
                      kv["style"], opt("warmup_tokens"), opt("decay_tokens"))
        train_tokens = opt("train_tokens")
        iteration, samples, tokens = 0, 0, 0
        while iteration < train_iters and (train_tokens is None or tokens < train_tokens):
            batch = batches[iteration]
            lr = sched.step(batch, tokens)
            iteration += 1
            samples += batch
            tokens += batch * seq
            print("%d %d %d %d %.17g" % (iteration, samples, tokens, batch, lr))
    except (AssertionError, ZeroDivisionError) as e:
        print("Megatron-DeepSpeed fails: %r" % e)
        sys.exit(1)


if __name__ == "__main__":
    main()
