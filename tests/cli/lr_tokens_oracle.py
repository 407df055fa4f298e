"""Oracle for test_script_flags.sh: Megatron-DeepSpeed's OptimizerParamScheduler (optimizer_param_scheduler.py,
get_lr and step with token_num) and training loop (the --train-tokens condition, consumed tokens added after the
step), transcribed independently of zerotron's C. Prints the learning rate after each iteration, one per line.
Usage: lr_tokens_oracle.py KEY=VALUE ... with lr, min_lr, style, gbs, seq, train_iters, warmup_steps (samples),
decay_steps (samples), and optionally warmup_tokens, decay_tokens, train_tokens."""
import math
import sys

kv = dict(a.split("=", 1) for a in sys.argv[1:])
opt = lambda k: int(kv[k]) if k in kv else None


class Sched:
    def __init__(self):
        self.max_lr, self.min_lr = float(kv["lr"]), float(kv["min_lr"])
        self.lr_warmup_steps, self.lr_decay_steps = int(kv["warmup_steps"]), int(kv["decay_steps"])
        self.lr_warmup_tokens, self.lr_decay_tokens = opt("warmup_tokens"), opt("decay_tokens")
        self.lr_decay_style = kv["style"]
        self.num_steps = 0
        self.num_tokens = 0

    def get_lr(self):
        if self.lr_warmup_tokens is None:
            if self.lr_warmup_steps > 0 and self.num_steps <= self.lr_warmup_steps:
                if self.num_steps == self.lr_warmup_steps and self.lr_decay_tokens is not None:
                    self.lr_warmup_tokens = self.num_tokens
                return self.max_lr * float(self.num_steps) / float(self.lr_warmup_steps)
        else:
            if self.lr_warmup_tokens > 0 and self.num_tokens <= self.lr_warmup_tokens:
                return self.max_lr * float(self.num_tokens) / float(self.lr_warmup_tokens)
        if self.lr_decay_style == "constant":
            return self.max_lr
        if self.lr_decay_tokens is None:
            if self.num_steps > self.lr_decay_steps:
                return self.min_lr
        else:
            if self.num_tokens > self.lr_decay_tokens:
                return self.min_lr
        if self.lr_decay_style == "inverse-square-root":
            if self.lr_warmup_tokens is None:
                lr = self.max_lr * max(self.lr_warmup_steps, 1) ** 0.5 / (max(self.num_steps, 1) ** 0.5)
            else:
                lr = self.max_lr * max(self.lr_warmup_tokens, 1) ** 0.5 / (max(self.num_tokens, 1) ** 0.5)
            return max(self.min_lr, lr)
        if self.lr_decay_tokens is None:
            ratio = float(self.num_steps - self.lr_warmup_steps) / float(self.lr_decay_steps - self.lr_warmup_steps)
        else:
            ratio = float(self.num_tokens - self.lr_warmup_tokens) / float(self.lr_decay_tokens - self.lr_warmup_tokens)
        assert 0.0 <= ratio <= 1.0
        coeff = (1.0 - ratio) if self.lr_decay_style == "linear" else 0.5 * (math.cos(math.pi * ratio) + 1.0)
        return self.min_lr + coeff * (self.max_lr - self.min_lr)

    def step(self, increment, token_num):
        self.num_tokens = token_num
        self.num_steps += increment
        return self.get_lr()


s = Sched()
s.step(0, 0)
gbs, seq, train_iters, train_tokens = int(kv["gbs"]), int(kv["seq"]), int(kv["train_iters"]), opt("train_tokens")
iteration, consumed_tokens = 0, 0
while iteration < train_iters and (train_tokens is None or consumed_tokens < train_tokens):
    lr = s.step(gbs, consumed_tokens)  # train_step: the scheduler steps before the tokens are counted
    iteration += 1
    consumed_tokens += gbs * seq
    print("%d %.17g" % (iteration, lr))
