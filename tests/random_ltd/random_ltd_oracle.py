#!/usr/bin/env python3
"""A transcription of DeepSpeed's random-LTD scheduler (deepspeed/runtime/data_pipeline/data_routing/scheduler.py:
fixed_linear, update_seq once per step with the engine's global_steps) and of Megatron-DeepSpeed's training loop's
token count (actual_seq_length, consumed_train_tokens), written from their source for the tests.

Usage: random_ltd_oracle.py MIN MAX REQUIRE_STEPS SEQ_PER_STEP NUM_LAYERS LTD_LAYERS SEQ GLOBAL_BATCH ITERS
prints, per iteration 1..ITERS, "reserved consumed_tokens" as Megatron-DeepSpeed's log line shows them after it,
then "layer_tokens N" (the scheduler's consumed layer tokens after ITERS)."""
import math
import sys


class Scheduler:
    def __init__(self, mn, mx, require, per_step, total_layers, ltd_layers, gbs):
        self.state = {"min": mn, "max": mx, "cur": mn, "req": require, "inc": per_step, "tokens": 0, "step": -1}
        self.total_layers, self.ltd_layers, self.gbs = total_layers, ltd_layers, gbs

    def get_value(self, global_steps):
        s = self.state
        next_seq = (float(global_steps) / s["req"]) ** (1.0 / 1)
        next_seq = math.floor(next_seq * (s["max"] - s["min"]) + s["min"])
        next_seq -= (next_seq % s["inc"])
        return min(next_seq, s["max"])

    def update_seq(self, global_steps):
        s = self.state
        if s["cur"] < s["max"]:
            s["cur"] = self.get_value(global_steps)
        if global_steps != s["step"]:
            s["tokens"] += self.gbs * (s["cur"] * self.ltd_layers + s["max"] * (self.total_layers - self.ltd_layers))
            s["step"] = global_steps


def main():
    mn, mx, req, inc, L, n, seq, gbs, iters = (int(v) for v in sys.argv[1:10])
    sch = Scheduler(mn, mx, req, inc, L, n, gbs)
    consumed = 0
    for it in range(iters):
        sch.update_seq(it)  # engine.forward with global_steps = iterations done
        reserved = sch.state["cur"]
        actual = seq
        if reserved < actual:
            actual = (actual * (L - n) + reserved * n) // L
        consumed += gbs * actual
        print(reserved, consumed)
    print("layer_tokens", sch.state["tokens"])


if __name__ == "__main__":
    main()
