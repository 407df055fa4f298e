#!/usr/bin/env python3
"""Tests of train/ds_config.c through tests/dsconfig/ds_config_tool.

Checks: every example config of the seeds (accepted or refused with the exact message), misspelt keys at
every level (message with the suggestion, verbatim), wrong types, ranges, duplicate keys, hjson comments
and trailing commas, JSON syntax errors with line and column, the batch triple against an independent
Python implementation of DeepSpeed's table (floor division) and its exact messages, "auto" resolution and
Megatron-flag contradictions, and the effective-configuration print.
Usage: test_ds_config.py TOOL CONFIG_DIR
"""
import itertools
import os
import subprocess
import sys
import tempfile

TOOL, CONFIGS = sys.argv[1], sys.argv[2]
failures = []
count = 0


def run(path, *args):
    p = subprocess.run([TOOL, path, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr.strip()


def write(text, name="ds.json"):
    d = tempfile.mkdtemp(prefix="dscfg")
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def check(label, ok, detail=""):
    global count
    count += 1
    if not ok:
        failures.append(f"{label}: {detail}")


def expect_error(label, path, message, *args):
    rc, out, err = run(path, *args)
    want = f"error: ds_config: {path}: {message}" if not message.startswith("error:") else message
    check(label, rc != 0 and err == want, f"rc={rc}\n  want: {want}\n  got:  {err}")


def expect_ok(label, path, *args):
    rc, out, err = run(path, *args)
    check(label, rc == 0, f"rc={rc} stderr={err}")
    return out


def typed(out):
    lines = [l for l in out.splitlines() if l.startswith("typed:")]
    vals = {k: "missing" for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")}
    if not lines:
        return vals
    line = lines[0]
    for tok in line.split()[1:]:
        k, v = tok.split("=", 1)
        vals[k] = v
    return vals


def printed(out):
    d = {}
    for l in out.splitlines():
        if l.startswith("  ") and " ." in l:
            key, rest = l.strip().split(" ", 1)
            d[key] = rest.lstrip(".").strip()
    return d


# ---- 1. the seed / reference examples -------------------------------------------------------------
LANDS = "is not supported yet: lands with"
# the compression_training refusal states what Megatron-DeepSpeed does with the block (train/ds_config_schema.c)
COMPRESSION = (f"compression_training {LANDS} the compression work (DeepSpeed's quantization-aware training and "
               "pruning). Megatron-DeepSpeed compresses none of GPT's layers with this block: its training.py passes "
               "mpu as init_compression's teacher_model, so only torch.nn.Linear/Embedding modules are compressible "
               "and a dense GPT's \"encoder.layers\" has none; after the last iteration its redundancy_clean stops on "
               "megatron.core.parallel_state.RowParallelLinear, which does not exist, before the final save. To train "
               "what it trains, remove the block")
SEED_CASES = {
    "deepnvme_tuner_aio.json": 'aio.single_submit must be a boolean (true or false), got "false"',
    "doc_activation_checkpointing.json": None,
    "doc_aio.json": 'unknown key "aio.thread_count" (did you mean "aio.intra_op_parallelism"? DeepSpeed\'s docs '
                    'still show the old name, its parser reads only intra_op_parallelism)',
    "doc_autotuning_disabled.json": None,
    "doc_comet.json": f"comet.enabled true {LANDS} the monitoring work",
    "doc_comms_logger.json": None,
    "doc_curriculum_learning.json": None,  # the legacy seqlen curriculum (tests/curriculum)
    "doc_data_efficiency.json": None,  # random-LTD and the data sampler (tests/random_ltd, tests/data_sampler)
    "doc_data_efficiency_disabled.json": None,
    "doc_flops_profiler.json": None,
    "doc_layer_reduction.json": COMPRESSION,
    "doc_lr_range_test.json": None,
    "doc_monitors.json": None,
    "doc_one_cycle.json": None,
    "doc_onebitadam.json": f'optimizer.type "OneBitAdam" {LANDS} the 1-bit optimizer work',
    "doc_row_pruning.json": COMPRESSION,
    "doc_sparse_attention.json": None,
    "doc_zerooneadam.json": f'optimizer.type "ZeroOneAdam" {LANDS} the 1-bit optimizer work',
    "hf_checkpoint_node_local.json": f"checkpoint.use_node_local_storage true {LANDS} the checkpoint work",
    "hf_optimizer_auto.json": None,
    "hf_optimizer_explicit.json": None,
    "hf_zero0.json": None,
    "hf_zero1.json": None,
    "hf_zero2_auto.json": None,
    "hf_zero2_auto_as_stage0.json": None,
    "hf_zero2_explicit.json": None,
    "hf_zero2_explicit_fp32_stage0.json": None,
    "hf_zero2_single_gpu_offload.json": None,
    "hf_zero3_explicit.json": None,
    "hf_zero3_notebook_auto.json": None,
    "hf_zero3_nvme.json": 'unknown key "zero_optimization.aio"',  # the HF page nests "aio" in the ZeRO block
    "hf_zero3_nvme_as_stage0.json": 'unknown key "zero_optimization.aio"',
    "megatron_gpt_fp32.json": None,
}
files = sorted(f for f in os.listdir(CONFIGS) if f.endswith(".json"))
check("every config file has an expected outcome", set(files) == set(SEED_CASES),
      f"files without a case: {sorted(set(files) - set(SEED_CASES))}, cases without a file: "
      f"{sorted(set(SEED_CASES) - set(files))}")
for name, msg in SEED_CASES.items():
    path = os.path.join(CONFIGS, name)
    if not os.path.exists(path):
        continue
    if msg is None:
        expect_ok(f"seed {name} accepted", path, "--quiet")
    else:
        expect_error(f"seed {name} refused", path, msg)

# The HF auto stage-0 config resolves from Megatron flags and runs the batch triple.
out = expect_ok("hf auto resolved", os.path.join(CONFIGS, "hf_zero2_auto_as_stage0.json"), "--world", "2",
                "--m", "micro_batch_size=4", "--m", "global_batch_size=64", "--m", "clip_grad=1.0", "--m", "lr=3e-4",
                "--m", "adam_beta1=0.9", "--m", "adam_beta2=0.95", "--m", "adam_eps=1e-8", "--m",
                "weight_decay=0.1", "--m", "lr_warmup_iters=100")
if out:
    t = typed(out)
    exp = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8,
           "gradient_clipping": 1.0, "lr": 3e-4, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1,
           "warmup_min_lr": 0.0, "warmup_max_lr": 3e-4, "warmup_num_steps": 100}
    for k, v in exp.items():
        got = t.get(k, "missing").replace("(auto)", "")
        check(f"auto {k}", got.replace(".", "").replace("e-", "").isdigit() and abs(float(got) - v) <= 1e-12 * max(1, abs(v)),
              f"want {v}, got {t.get(k)}")
    p = printed(out)
    check("print resolved lr", p.get("optimizer.params.lr") == "0.0003", p.get("optimizer.params.lr"))
    check("print resolved betas", p.get("optimizer.params.betas") == "[0.9,0.95]", p.get("optimizer.params.betas"))
    check("print derived gas", p.get("gradient_accumulation_steps") == "8", p.get("gradient_accumulation_steps"))

# ---- 2. unknown keys, types, ranges, duplicates, syntax --------------------------------------------
BAD = [
    ('{"zero_optimisation": {"stage": 0}}', 'unknown key "zero_optimisation" (did you mean "zero_optimization"?)'),
    ('{"train_batch_sise": 8}', 'unknown key "train_batch_sise" (did you mean "train_batch_size"?)'),
    ('{"gradient_clip": 1.0}', 'unknown key "gradient_clip" (did you mean "gradient_clipping"?)'),
    ('{"zero_optimization": {"stag": 0}}', 'unknown key "zero_optimization.stag" (did you mean "zero_optimization.stage"?)'),
    ('{"zero_optimization": {"offload_optimizer": {"devise": "none"}}}',
     'unknown key "zero_optimization.offload_optimizer.devise" (did you mean "zero_optimization.offload_optimizer.device"?)'),
    ('{"fp16": {"enable": false}}', 'unknown key "fp16.enable" (did you mean "fp16.enabled"?)'),
    ('{"optimizer": {"type": "Adam", "params": {"lr": 1e-3, "beta": [0.9, 0.99]}}}',
     'unknown key "optimizer.params.beta" (did you mean "optimizer.params.betas"?)'),
    ('{"timers": {"throughput": {"enable": true}}}',
     'unknown key "timers.throughput.enable" (did you mean "timers.throughput.enabled"?)'),
    ('{"completely_unrelated_thing": 1}', 'unknown key "completely_unrelated_thing"'),
    ('{"train_batch_size": "8"}', 'train_batch_size must be an integer, got "8"'),
    ('{"train_batch_size": 8.5}', "train_batch_size must be an integer, got 8.5"),
    ('{"wall_clock_breakdown": "true"}', 'wall_clock_breakdown must be a boolean (true or false), got "true"'),
    ('{"wall_clock_breakdown": 1}', "wall_clock_breakdown must be a boolean (true or false), got 1"),
    ('{"gradient_clipping": -1.0}', "gradient_clipping must be >= 0, got -1"),
    ('{"gradient_clipping": [1]}', "gradient_clipping must be a number, got [1]"),
    ('{"zero_optimization": {"stage": 4}}', "zero_optimization.stage must be in [0, 3], got 4"),
    ('{"zero_optimization": {"stage": 3}}', None),
    ('{"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/tmp"}}}', None),
    ('{"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}',
     'zero_optimization.offload_param.device "nvme" needs zero_optimization.offload_param.nvme_path'),
    ('{"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/tmp", "buffer_count": 0}}}',
     'zero_optimization.offload_param.buffer_count must be >= 1, got 0'),
    ('{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9, "stage3_max_reuse_distance": 1e9, "cpu_offload_param": true}}', None),
    ('{"zero_optimization": {"stage": 2, "reduce_bucket_size": 0}}', "zero_optimization.reduce_bucket_size must be >= 1, got 0"),
    ('{"zero_optimization": {"stage": "auto"}}',
     'zero_optimization.stage does not accept "auto" (it has no matching Megatron flag); give an integer'),
    ('{"zero_optimization": {"allgather_bucket_size": 5.5e8, "stage": 0}}', None),
    ('{"zero_optimization": {"reduce_bucket_size": 2.5}}', "zero_optimization.reduce_bucket_size must be an integer, got 2.5"),
    ('{"zero_optimization": {"offload_optimizer": {"ratio": 1.5}}}', "zero_optimization.offload_optimizer.ratio must be in [0, 1], got 1.5"),
    ('{"communication_data_type": "fp8"}', 'communication_data_type must be one of fp16|bf16|fp32, got "fp8"'),
    ('{"communication_data_type": "bf16"}', None),
    ('{"steps_per_print": 0}', "steps_per_print must be >= 1, got 0"),
    ('{"comms_logger": {"enabled": true, "debug": true}}',
     "comms_logger.debug true is not supported yet: lands with per-caller tracing (DeepSpeed records the Python "
     "caller of each op; C collectives have none)"),
    ('{"comms_logger": {"enabled": true, "prof_ops": ["all_reduce", "allreduce"]}}',
     'comms_logger.prof_ops[1] "allreduce" is not an op zerotron logs (all_reduce, all_gather, reduce_scatter, '
     'reduce, broadcast, send, recv, barrier, all_to_all_single)'),
    ('{"comms_logger": {"enabled": true, "prof_all": false, "prof_ops": ["all_to_all_single", "all_reduce"]}}', None),
    ('{"comms_logger": {"prof_ops": [3]}}', "comms_logger.prof_ops[0] must be a string (an op name)"),
    ('{"comms_logger": {"enabled": true, "verbose": true, "prof_all": false, "prof_ops": ["barrier"]}}', None),
    ('{"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}}',
     'scheduler.params.warmup_type must be one of log|linear, got "cosine"'),
    ('{"zero_optimization": {"stage": 0, "stage": 1}}', "Duplicate keys in DeepSpeed config: ['stage'] (in \"zero_optimization\")"),
    ('{"train_batch_size": 8, "fp16": {}, "train_batch_size": 8}', "Duplicate keys in DeepSpeed config: ['train_batch_size']"),
    ('{"a": {"b": {"c": 1, "c": 2}}}', "Duplicate keys in DeepSpeed config: ['c'] (in \"a.b\")"),
    ('{\n  "train_batch_size": 8\n  "steps_per_print": 1\n}', 'line 3 column 3: JSON syntax error near ""steps_per_print": 1"'),
    ('{"train_batch_size": 8', "line 1 column 23: JSON syntax error: unexpected end of the file"),
    ('[1, 2]', "the configuration must be a JSON object ({...})"),
    ('{"zero_optimization": {"cpu_offload": true, "offload_optimizer": {"device": "cpu"}}}',
     "Cannot provide deprecated parameter 'cpu_offload' and replacing parameter 'offload_optimizer' together"),
    ('{"zero_optimization": {"cpu_offload": true}}', 'zero_optimization.offload_optimizer.device "cpu" needs zero_optimization.stage 1, 2 or 3 (the optimizer state offloaded is the rank\'s ZeRO partition)'),
    ('{"zero_optimization": {"stage": 1, "cpu_offload": true}}', None),
    ('{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}}', 'zero_optimization.offload_optimizer.device "nvme" needs zero_optimization.offload_optimizer.nvme_path'),
    ('{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}}', 'zero_optimization.offload_optimizer.ratio 0.5 needs zero_optimization.stage 3 and offload device "cpu" (stage 2, device "cpu"): DeepSpeed\'s partial offload is a stage-3 CPU-offload feature'),
    ('{"zero_optimization": {"stage": 3, "offload_optimizer": {"ratio": 0.3}}}', 'zero_optimization.offload_optimizer.ratio 0.3 needs zero_optimization.stage 3 and offload device "cpu" (stage 3, device "none"): DeepSpeed\'s partial offload is a stage-3 CPU-offload feature'),
    ('{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}', None),
    ('{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 1}}}', None),
    ('{"zero_optimization": {"stage3_gather_fp16_weights_on_model_save": true, "stage3_gather_16bit_weights_on_model_save": true}}', None),
    ('{"zero_optimization": {"stage3_gather_fp16_weights_on_model_save": true, "gather_16bit_weights_on_model_save": true}}',
     "Cannot provide deprecated parameter 'stage3_gather_fp16_weights_on_model_save' and replacing parameter 'gather_16bit_weights_on_model_save' together"),
    ('{"zero_optimization": true}', None),
    ('{"zero_optimization": false}', None),
    ('{"zero_optimization": {"offload_param": {"device": "cpu"}}}',
     'zero_optimization.offload_param.device "cpu" needs zero_optimization.stage 3 (DeepSpeed offloads parameters only in stage 3), got stage 0'),
    ('{"zero_optimization": {"offload_param": {"device": "none", "pin_memory": true}, "overlap_comm": null}}', None),
    ('{"fp16": {"enabled": true}, "bf16": {"enabled": true}}', "bfloat16 and fp16 modes cannot be simultaneously enabled"),
    ('{"bf16": {"enabled": true}}', None),
    ('{"bfloat16": {"enabled": true}}', None),
    ('{"fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 11, "loss_scale_window": 500, "hysteresis": 2, "consecutive_hysteresis": true, "min_loss_scale": 1}}', None),
    ('{"fp16": {"enabled": true, "auto_cast": true}}', "fp16.auto_cast true is not supported yet: lands with the mixed-precision-variant work (DeepSpeed casts the floating-point forward inputs to fp16)"),
    ('{"fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}', "fp16.fp16_master_weights_and_grads true is not supported yet: lands with the mixed-precision-variant work (fp16 master weights and gradients, which DeepSpeed allows only with ZeRO-2 and CPU offload; zerotron keeps fp32 master weights)"),
    ('{"fp16": {"enabled": true, "hysteresis": 0}}', "fp16.hysteresis must be >= 1, got 0"),
    ('{"bf16": {"enabled": false}, "bfloat16": {"enabled": false}}', "Cannot provide deprecated parameter 'bfloat16' and replacing parameter 'bf16' together"),
    ('{"amp": {"enabled": true, "opt_level": "O1"}}', "amp.enabled true is not supported yet: lands with no planned work (NVIDIA Apex's amp.initialize, a Python/CUDA library; use the fp16 or bf16 block)"),
    ('{"amp": {"enabled": false, "opt_level": "O1"}}', None),
    ('{"wandb": {"enabled": true}}', "wandb.enabled true is not supported yet: lands with the monitoring work"),
    ('{"wandb": {"enabled": false, "project": "p"}}', None),
    ('{"elasticity": {"enabled": true, "max_train_batch_size": 2000}}', "elasticity.enabled true is not supported yet: lands with the elasticity work"),
    ('{"autotuning": {"enabled": true}}', "autotuning.enabled true is not supported yet: lands with the autotuning work"),
    ('{"activation_checkpointing": {"partition_activations": true}}', None),
    ('{"activation_checkpointing": {"contiguous_memory_optimization": true}}', "activation_checkpointing: Contiguous Checkpointing is only available with partitioned activations. Set partitioned activations to true in deepspeed config"),
    ('{"activation_checkpointing": {"number_checkpoints": 4}}', None),
    ('{"memory_breakdown": true}', "memory_breakdown true is not supported yet: lands with the profiling work"),
    ('{"sparse_gradients": true}', "sparse_gradients true is not supported yet: lands with the sparse-gradient work"),
    ('{"tensor_parallel": {"autotp_size": 2}}', "tensor_parallel is not supported yet: lands with no planned work (DeepSpeed's AutoTP, which shards Hugging Face models by itself; a Megatron model's tensor parallelism is --tensor-model-parallel-size)"),
    # DeepSpeed's engine never reads stages/partition/seed_layers; pipe/grad_partitioned only split what its
    # PipelineEngine sends between stages: accepted, no effect. activation_checkpoint_interval recomputes layers.
    ('{"pipeline": {"stages": 2, "partition": "uniform", "seed_layers": true, "pipe_partitioned": false, "grad_partitioned": false}}', None),
    ('{"pipeline": {"activation_checkpoint_interval": 1}}', "pipeline.activation_checkpoint_interval 1 is not supported yet: lands with no planned work (DeepSpeed's PipelineEngine then recomputes every N layers: pass --checkpoint-activations --checkpoint-num-layers N, from which Megatron-DeepSpeed sets it)"),
    ('{"seq_parallel_comm_data_type": "bf16"}', None),
    ('{"bf16": {"enabled": true, "immediate_grad_update": true}}', "bf16.immediate_grad_update true is not supported yet: lands with the mixed-precision-variant work (the bf16 optimizer's per-parameter fp32 gradient update)"),
    ('{"progressive_layer_drop": {"enabled": true}}', "progressive_layer_drop.enabled true is not supported yet: lands with the progressive-layer-drop work"),
    ('{"optimizer": {"type": "Adam", "params": {"lr": 1e-3, "max_grad_norm": 1.0}}}',
     "'max_grad_norm' is not supported as an optimizer parameter, please switch to using the deepspeed parameter "
     "'gradient_clipping' see: https://www.deepspeed.ai/docs/config-json/#gradient-clipping for more details"),
    ('{"optimizer": {"type": "SGD", "params": {"lr": 1e-3}}}',
     'optimizer.type "SGD" is not a DeepSpeed optimizer (DeepSpeed would look it up in torch.optim): zerotron implements adam, adamw and lamb'),
    ('{"optimizer": {"type": "Lion"}}',
     'optimizer.type "Lion" is not supported yet: lands with the optimizer work (zerotron implements adam, adamw and lamb)'),
    ('{"optimizer": {"params": {"lr": 1e-3}}}', 'optimizer.type is required in an "optimizer" block (adam, adamw or lamb)'),
    ('{"optimizer": {"type": "Adam", "params": {"max_coeff": 10}}}', 'optimizer.params.max_coeff is not a parameter of optimizer "Adam" (lamb only)'),
    ('{"optimizer": {"type": "Lamb", "params": {"adam_w_mode": true}}}', 'optimizer.params.adam_w_mode is not a parameter of optimizer "Lamb" (adam/adamw only)'),
    ('{"optimizer": {"type": "LAMB", "params": {"lr": 1e-3, "max_coeff": 5.0, "min_coeff": 0.02}}}', None),
    ('{"optimizer": {"type": "Adam", "params": {"betas": [0.9]}}}', "optimizer.params.betas must be a list of two numbers in [0, 1), got [0.9]"),
    ('{"optimizer": {"type": "Adam", "params": {"betas": [0.9, 1.0]}}}', "optimizer.params.betas must be a list of two numbers in [0, 1), got [0.9,1]"),
    ('{"optimizer": {"type": "Adam", "params": {"bias_correction": false}}}',
     "optimizer.params.bias_correction false is not supported yet: lands with no planned work (bias_correction false)"),
    ('{"optimizer": {"type": "Adam", "params": {"freeze_step": 400}}}', 'unknown key "optimizer.params.freeze_step"'),
    ('{"scheduler": {"type": "StepLR", "params": {}}}',
     'scheduler.type "StepLR" is not supported yet: lands with the scheduler work (zerotron implements LRRangeTest, '
     'OneCycle, WarmupLR, WarmupDecayLR, WarmupCosineLR; torch.optim.lr_scheduler names are not)'),
    ('{"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}}',
     'scheduler.params.total_num_steps is required by scheduler "WarmupDecayLR"'),
    ('{"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.1}}}', 'scheduler.params.cycle_max_lr is required by scheduler "OneCycle"'),
    ('{"scheduler": {"type": "WarmupLR", "params": {"cycle_min_lr": 0.1}}}',
     'scheduler.params.cycle_min_lr is not a parameter of scheduler "WarmupLR" (its parameters: warmup_min_lr '
     'warmup_max_lr warmup_num_steps warmup_type last_batch_iteration )'),
    ('{"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 10, "cos_min_ratio": 0.1, "warmup_min_ratio": 0.01, "warmup_type": "linear"}}}', None),
    ('{"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e3, "warmup_max_lr": 6e-4}}}', None),
    ('{"timers": {"throughput": {"enabled": false, "synchronized": false}}}', None),
    ('{"data_types": {"grad_accum_dtype": "bf16"}}', None),
    ('{"quantize_training": {"enabled": true, "quantize_bits": {"start_bits": 16}}}', "quantize_training.enabled true is not supported yet: lands with the compression work"),
    ('{"sequence_parallel_size": 2}', "sequence_parallel_size 2 is not supported yet: lands with no planned work (DeepSpeed's device mesh, which deepspeed.initialize builds with data_parallel_size for a client without an mpu; pretrain_gpt's DeepSpeed-Ulysses is --ds-sequence-parallel-size)"),
    ('{"compile": {"disable": false, "backend": "inductor"}, "graph_harvesting": false, "sequence_parallel_size": 1}', None),
    ('{"vocabulary_size": 50257, "dataloader_drop_last": true, "zero_allow_untested_optimizer": true}', None),
]
for i, (text, msg) in enumerate(BAD):
    path = write(text)
    if msg is None:
        expect_ok(f"case {i} accepted: {text}", path, "--quiet")
    else:
        expect_error(f"case {i}: {text}", path, msg)

# ---- 3. hjson comments and trailing commas ---------------------------------------------------------
HJSON = """// leading comment
# hash comment
{
  /* block
     comment */
  "train_batch_size": 16, // trailing comment
  "steps_per_print": 5,   # another
  "optimizer": {"type": "adam", "params": {"lr": 1e-4, "betas": [0.9, 0.95,],},},
  "tensorboard": {"output_path": "a//b/*c*/#d", "enabled": false},
}
"""
out = expect_ok("hjson comments and trailing commas", write(HJSON), "--world", "4")
if out:
    p = printed(out)
    check("hjson: slashes inside strings kept", p.get("tensorboard.output_path") == "a//b/*c*/#d", p.get("tensorboard.output_path"))
    check("hjson: values", p.get("steps_per_print") == "5" and p.get("train_micro_batch_size_per_gpu") == "4",
          f"{p.get('steps_per_print')} {p.get('train_micro_batch_size_per_gpu')}")
    check("integral 5e8 accepted", True)
out = expect_ok("5e8 as an integer", write('{"zero_optimization": {"stage": 0, "reduce_bucket_size": 5e8}}'))
if out:
    check("5e8 printed as 500000000", printed(out).get("zero_optimization.reduce_bucket_size") == "500000000",
          printed(out).get("zero_optimization.reduce_bucket_size"))

# ---- 4. the print: sorted, every key with its code default ----------------------------------------
out = expect_ok("print defaults", write("{}"))
if out:
    lines = out.splitlines()
    check("print header", lines[0] == "DeepSpeedEngine configuration:", lines[0])
    keys = [l.strip().split(" ", 1)[0] for l in lines[1:] if l.startswith("  ")]
    check("print sorted", keys == sorted(keys), "not sorted")
    p = printed(out)
    defaults = {"gradient_clipping": "0", "steps_per_print": "None", "zero_optimization.stage": "0",
                "zero_optimization.stage3_prefetch_bucket_size": None, "zero_optimization.prefetch_bucket_size": "50000000",
                "zero_optimization.overlap_comm": "None", "zero_optimization.sub_group_size": "1000000000",
                "fp16.initial_scale_power": "16", "fp16.hysteresis": "2", "aio.block_size": "1048576",
                "aio.queue_depth": "8", "tensorboard.job_name": "DeepSpeedJobName", "wandb.project": "deepspeed",
                "comms_logger.prof_all": "true", "flops_profiler.module_depth": "-1", "data_efficiency.seed": "1234",
                "zero_optimization.offload_optimizer.buffer_count": "4", "zero_optimization.offload_param.buffer_count": "5",
                "gradient_predivide_factor": "1", "seq_parallel_comm_data_type": "fp32", "timers.throughput.enabled": "true",
                "optimizer.params.adam_w_mode": "true", "scheduler.params.warmup_type": "log",
                "scheduler.params.cos_min_ratio": "0.0001", "checkpoint.tag_validation": "Warn"}
    for k, v in defaults.items():
        check(f"default {k}", p.get(k) == v, f"want {v}, got {p.get(k)}")

# ---- 5. the batch triple against an independent implementation of DeepSpeed's table -------------
def ds_batch(tb, mb, gas, W):
    """DeepSpeed config.py _set_batch_related_parameters + _batch_assertion (Python // semantics)."""
    if tb is not None and mb is not None and gas is not None:
        pass
    elif tb is not None and mb is not None:
        if mb == 0:
            return f"Micro batch size per gpu: {mb} has to be greater than 0"
        gas = (tb // mb) // W
    elif tb is not None and gas is not None:
        if gas == 0:
            return f"Gradient accumulation steps: {gas} has to be greater than 0"
        mb = (tb // W) // gas
    elif mb is not None and gas is not None:
        tb = mb * gas * W
    elif tb is not None:
        gas, mb = 1, tb // W
    elif mb is not None:
        tb, gas = mb * W, 1
    else:
        return "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"
    if tb <= 0:
        return f"Train batch size: {tb} has to be greater than 0"
    if mb <= 0:
        return f"Micro batch size per gpu: {mb} has to be greater than 0"
    if gas <= 0:
        return f"Gradient accumulation steps: {gas} has to be greater than 0"
    if tb != mb * gas * W:
        return ("Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
                f"gradient_acc_step * world_size {tb} != {mb} * {gas} * {W}")
    return (tb, mb, gas)


seen_msgs = set()
for tb, mb, gas, W in itertools.product([None, 0, 10, 32, -8], [None, 0, 3, 4], [None, 0, 1, 2, 3], [1, 2, 3]):
    cfg = {k: v for k, v in (("train_batch_size", tb), ("train_micro_batch_size_per_gpu", mb),
                             ("gradient_accumulation_steps", gas)) if v is not None}
    text = "{" + ", ".join(f'"{k}": {v}' for k, v in cfg.items()) + "}"
    path = write(text)
    want = ds_batch(tb, mb, gas, W)
    rc, out, err = run(path, "--world", str(W), "--quiet")
    label = f"batch tb={tb} mb={mb} gas={gas} W={W}"
    if isinstance(want, tuple):
        ok = rc == 0
        if ok:
            t = typed(out)
            try:
                got = (int(float(t["train_batch_size"])), int(float(t["train_micro_batch_size_per_gpu"])),
                       int(float(t["gradient_accumulation_steps"])))
            except ValueError:
                got = None
            ok = got == want
        check(label, ok, f"want {want}, rc={rc} out={out[-300:]} err={err}")
    else:
        seen_msgs.add(want.split(":")[0].split(".")[0])
        check(label, rc != 0 and err == f"error: ds_config: {path}: {want}", f"want {want}, got {err}")
check("every batch message exercised", len(seen_msgs) == 5, str(seen_msgs))
# the reference's own example: tb=10, mb=3, W=1 -> gas=3 -> 10 != 3 * 3 * 1
expect_error("reference example 10 != 3*3*1", write('{"train_batch_size": 10, "train_micro_batch_size_per_gpu": 3}'),
             "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step "
             "* world_size 10 != 3 * 3 * 1", "--world", "1")

expect_error("batch product overflow", write('{"train_micro_batch_size_per_gpu": 2147483647, '
             '"gradient_accumulation_steps": 2147483647}'), "train_micro_batch_size_per_gpu 2147483647 * "
             "gradient_accumulation_steps 2147483647 * world_size 8 overflows", "--world", "8")
expect_error("derived batch past 32 bits", write('{"train_micro_batch_size_per_gpu": 1073741824}'),
             "train_batch_size 4294967296 (train_micro_batch_size_per_gpu 1073741824 * gradient_accumulation_steps 1 "
             "* world_size 4) is out of range: zerotron holds the batch sizes in 32-bit ints (at most 2147483647)",
             "--world", "4")

# ---- 6. auto and Megatron-flag consistency -------------------------------------------------------
p = write('{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}')
rc, out, err = run(p, "--world", "1", "--m", "micro_batch_size=8")
check("contradiction micro batch", rc != 0 and err ==
      f"error: inconsistent arguments: --micro-batch-size 8 contradicts train_micro_batch_size_per_gpu 4 in {p}", err)
rc, out, err = run(p, "--world", "1", "--m", "micro_batch_size=4", "--m", "global_batch_size=8")
check("consistent flags accepted", rc == 0, err)
rc, out, err = run(p, "--world", "1", "--m", "global_batch_size=16")
check("flag fills an absent key, then DeepSpeed's check", rc != 0 and err == f"error: ds_config: {p}: Check batch related "
      "parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 16 != 4 * 2 * 1", err)
p = write('{"train_batch_size": 32, "gradient_clipping": 1.0, "optimizer": {"type": "adamw", "params": {"lr": 6e-4, '
          '"betas": [0.9, 0.95], "weight_decay": 0.1}}}')
for flag, val, msg in [("clip_grad", "0.5", "--clip-grad 0.5 contradicts gradient_clipping 1"),
                       ("lr", "1e-4", "--lr 0.0001 contradicts optimizer.params.lr 0.0006"),
                       ("adam_beta2", "0.999", "--adam-beta2 0.999 contradicts optimizer.params.betas[1] 0.95"),
                       ("weight_decay", "0.01", "--weight-decay 0.01 contradicts optimizer.params.weight_decay 0.1")]:
    rc, out, err = run(p, "--m", f"{flag}={val}")
    check(f"contradiction {flag}", rc != 0 and err == f"error: inconsistent arguments: {msg} in {p}", err)
rc, out, err = run(p, "--m", "clip_grad=1.0", "--m", "lr=6e-4", "--m", "adam_beta2=0.95", "--d", "weight_decay=0.01")
check("equal flags and a non-explicit default accepted", rc == 0, err)
p = write('{"train_batch_size": 32, "gradient_clipping": "auto", "optimizer": {"type": "adam", "params": {"lr": "auto"}}}')
rc, out, err = run(p, "--world", "2")
check("auto without the flag", rc != 0 and err ==
      f'error: inconsistent arguments: "auto" for gradient_clipping in {p} needs --clip-grad on the command line', err)
rc, out, err = run(p, "--world", "2", "--d", "clip_grad=1.0", "--m", "lr=2e-4")
check("auto from a Megatron default and a flag", rc == 0 and typed(out).get("gradient_clipping") == "1(auto)"
      and typed(out).get("lr") == "0.00020000000000000001(auto)", err or out[-400:])
p = write('{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}')
rc, out, err = run(p, "--world", "2", "--m", "micro_batch_size=2")
check("auto batch: mb from flag, tb inferred", rc == 0 and typed(out).get("train_batch_size") == "4(auto)", err or out[-300:])
rc, out, err = run(p, "--world", "2")
check("auto batch without flags", rc != 0 and err == f"error: ds_config: {p}: Either train_batch_size or "
      "train_micro_batch_size_per_gpu needs to be provided", err)
p = write('{"train_batch_size": 8, "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": "auto", '
          '"warmup_num_steps": "auto"}}}')
rc, out, err = run(p, "--m", "train_iters=5000", "--m", "lr_warmup_iters=50")
check("scheduler auto from --train-iters/--lr-warmup-iters", rc == 0 and typed(out).get("total_num_steps") == "5000(auto)"
      and typed(out).get("warmup_num_steps") == "50(auto)", err or out[-300:])
rc, out, err = run(p, "--m", "train_iters=5000")
check("scheduler auto without --lr-warmup-iters", rc != 0 and err == 'error: inconsistent arguments: "auto" for '
      f"scheduler.params.warmup_num_steps in {p} needs --lr-warmup-iters on the command line", err)

# zt_ds_megatron_from_args: the same through pretrain_gpt's own argument parser.
MEG = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "32",
       "--max-position-embeddings", "32", "--micro-batch-size", "2", "--lr", "1e-3", "--train-iters", "20",
       "--mock-data", "--vocab-size", "128"]
p = write('{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 2, "gradient_clipping": "auto", '
          '"optimizer": {"type": "adamw", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": 0.01}}, '
          '"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": "auto", "total_num_steps": "auto"}}}')
rc, out, err = run(p, "--world", "1", "--quiet", "--megatron", *MEG, "--adam-beta2", "0.95")
t = typed(out) if rc == 0 else {}
want = {"train_micro_batch_size_per_gpu": "2(auto)", "train_batch_size": "4", "gradient_clipping": "1(auto)",
        "lr": "0.001(auto)", "beta1": "0.90000000000000002(auto)", "beta2": "0.94999999999999996(auto)",
        "eps": "1e-08(auto)", "weight_decay": "0.01", "warmup_num_steps": "0(auto)", "total_num_steps": "20(auto)"}
for k, v in want.items():
    check(f"from args: {k}", t.get(k) == v, f"want {v}, got {t.get(k)} (rc={rc} err={err})")
rc, out, err = run(p, "--world", "1", "--quiet", "--megatron", *MEG, "--weight-decay", "0.1")
check("from args: contradiction", rc != 0 and err == "error: inconsistent arguments: --weight-decay 0.1 contradicts "
      f"optimizer.params.weight_decay 0.01 in {p}", err)

# ---- 8. issue 25: integers that would wrap, NUL escapes, the legacy ZeRO boolean, a 100k-key file --------
I32 = "zerotron holds it in a 32-bit int"
BOUND_CASES = [
    ('{"train_batch_size": 2147483648}',
     f"train_batch_size 2147483648 is out of range: it must be an integer in [-2147483648, 2147483647] ({I32})"),
    ('{"train_micro_batch_size_per_gpu": -2147483649}',
     f"train_micro_batch_size_per_gpu -2147483649 is out of range: it must be an integer in [-2147483648, 2147483647] ({I32})"),
    ('{"fp16": {"enabled": true, "hysteresis": 4294967298}}',
     f"fp16.hysteresis 4294967298 is out of range: it must be an integer in [1, 2147483647] ({I32})"),
    ('{"aio": {"block_size": 4294967296}}',
     f"aio.block_size 4294967296 is out of range: it must be an integer in [1, 2147483647] ({I32})"),
    ('{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "buffer_count": 4294967301}}}',
     f"zero_optimization.offload_param.buffer_count 4294967301 is out of range: it must be an integer in [1, 2147483647] ({I32})"),
    ('{"fp16": {"enabled": true, "hysteresis": 2147483647}}', None),
    ('{"zero_optimization": {"stage": 2, "reduce_bucket_size": 5e10, "allgather_bucket_size": 4294967296}}', None),
    ('{"steps_per_print": 4294967296}', None),
    ('{"train_batch_size": 2.5}', "train_batch_size must be an integer, got 2.5"),
    ('{"train_batch_size": 1e40}', "train_batch_size must be an integer, got 1e+40"),
    ('{"zero_optimization": {"reduce_bucket_size": 1e40}}', "zero_optimization.reduce_bucket_size must be an integer, got 1e+40"),
    ('{"optimizer": {"type": "Adam\\u0000W", "params": {"lr": 0.1}}}',
     "line 1 column 29: a string contains the escape \\u0000 (a NUL character); no DeepSpeed key or value can hold one "
     "(it would cut the string short)"),
    ('{\n "fp16\\u0000x": {"enabled": true}}',
     "line 2 column 7: a string contains the escape \\u0000 (a NUL character); no DeepSpeed key or value can hold one "
     "(it would cut the string short)"),
    ('{"tensorboard": {"output_path": "tb\\\\u0000"}}', None),  # an escaped backslash, then the text u0000
]
for i, (text, msg) in enumerate(BOUND_CASES):
    path = write(text)
    if msg is None:
        expect_ok(f"bounds {i} accepted: {text}", path)
    else:
        expect_error(f"bounds {i}: {text}", path, msg)
rc, out, err = run(write('{"tensorboard": {"output_path": "tb\\\\u0000"}}'))
check("an escaped backslash before u0000 is kept as text", printed(out).get("tensorboard.output_path") == "tb\\u0000",
      printed(out).get("tensorboard.output_path"))

# DeepSpeed's read_zero_config_deprecated: true is stage 1 with allgather_size, false stage 0; printed as run
for flag, stage, ag in (("true", "1", "1000"), ("false", "0", "500000000")):
    p = write('{"train_batch_size": 8, "allgather_size": 1000, "zero_optimization": %s}' % flag)
    rc, out, err = run(p)
    pr = printed(out)
    check(f"zero_optimization {flag}: printed stage", rc == 0 and pr.get("zero_optimization.stage") == stage,
          f"rc={rc} stage={pr.get('zero_optimization.stage')} err={err}")
    check(f"zero_optimization {flag}: typed stage", f"zero_stage={stage}" in out, out[-200:])
    check(f"zero_optimization {flag}: allgather bucket", pr.get("zero_optimization.allgather_bucket_size") == ag,
          pr.get("zero_optimization.allgather_bucket_size"))
    check(f"zero_optimization {flag}: deprecation warning", "this format of ZeRO optimization setup is deprecated" in err
          and f"runs ZeRO stage {stage}" in err, err)

# a 100k-key object: the duplicate-key check is linear (the pairwise one took 32 s)
import time
big = "{" + ",".join('"k%d": %d' % (i, i) for i in range(100000)) + ', "k77": 1}'
p = write(big)
t0 = time.time()
try:
    rc, out, err = run(p)
except subprocess.TimeoutExpired:
    rc, err = -1, "timed out after 30 s"
dt = time.time() - t0
check("100k keys: duplicate found", rc != 0 and err == f"error: ds_config: {p}: Duplicate keys in DeepSpeed config: ['k77']", err)
check("100k keys: in under 3 s", dt < 3.0, f"{dt:.1f} s")

# ---- 7. docs/ds_config.md carries the current key table ---------------------------------------------
doc = os.path.join(CONFIGS, "..", "..", "..", "docs", "ds_config.md")
schema = subprocess.run([TOOL, "--schema"], capture_output=True, text=True).stdout
if os.path.exists(doc):
    with open(doc) as f:
        text = f.read()
    table = text.split("## Key table", 1)[-1]
    rows = [l for l in table.splitlines() if l.startswith("|")]
    check("docs key table matches ds_config_tool --schema", rows == schema.splitlines(),
          "regenerate: ds_config_tool --schema, paste under '## Key table' in docs/ds_config.md")

print(f"{count - len(failures)}/{count} checks passed")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
