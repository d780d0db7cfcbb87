#!/usr/bin/env python3
"""bench_hf_step.py: times one HF transformers training step (forward + backward, no optimizer) of a
gpu-nightly model, the peer of `parity run`'s step time, so the ratio is measured in one device call.

The model is built from the same config.json parity runs (suites/configs/<model>/config.json) with
random weights in bf16 on the GPU, attn_implementation "sdpa" (the anchors of perf-anchors.md) or as
--attention says. The batch is what gpu-nightly's packed row holds: 2048 tokens in two documents of
1024, given to HF as a [2, 1024] batch (HF's sdpa path has no cu_seqlens: two rows see exactly what
parity's two packed documents see). A step is model(input_ids, labels=labels).loss.backward() with
the gradients set to None before it (outside the timed region), CUDA events around it, warm-up steps
first (after ~1 s of GEMMs that bring the clocks up), the median of the timed steps (as harness/evaluate.c times parity's steps: no L2 flush, the
step is far larger than the L2). Also reported: tokens/s at the median and the peak memory of one step.

Usage (on the GPU host):
  python3 tools/bench_hf_step.py --config suites/configs/qwen3_toy/config.json [--config ...]
      [--attention sdpa] [--warmup 10] [--runs 10] --out hf-steps.json
Writes {"peer": "transformers <version>", "steps": [{"model", "config", "attention", "median_ms", ...}]}
atomically; a model that fails to build or run is a row with its error text.
"""
import argparse
import json
import os
import statistics
import sys
import traceback


def build(config_path, attention, torch, transformers):
    with open(config_path) as f:
        fields = json.load(f)
    fields = {k: v for k, v in fields.items() if not k.startswith("_")}
    model_type = fields.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    config._attn_implementation = attention
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16,
                                                              attn_implementation=attention)
    model.to(dtype=torch.bfloat16)
    model.train()
    return model, config


def time_steps(model, config, warmup, runs, torch):
    vocab = config.vocab_size
    generator = torch.Generator(device="cuda").manual_seed(0)
    input_ids = torch.randint(0, vocab, (2, 1024), device="cuda", generator=generator)
    labels = input_ids.clone()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    peak = 0
    for i in range(warmup + runs):
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start.record()
        loss = model(input_ids=input_ids, labels=labels).loss
        loss.backward()
        stop.record()
        torch.cuda.synchronize()
        peak = max(peak, torch.cuda.max_memory_allocated() - before)
        if i >= warmup:
            times.append(start.elapsed_time(stop))
    median = statistics.median(times)
    noise = statistics.median([abs(t - median) for t in times]) / median
    return {"median_ms": median, "min_ms": min(times), "max_ms": max(times), "noise": noise, "runs": runs,
            "warmup": warmup, "tokens": 2048, "tokens_per_s": 2048 / (median / 1e3),
            "loss": float(loss.detach().float()), "extra_peak_gib": peak / 2**30}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", action="append", required=True, help="a parity config.json (repeatable)")
    parser.add_argument("--attention", default="sdpa", help="HF attn_implementation (default sdpa)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", required=True, help="JSON file to write (atomically)")
    args = parser.parse_args()
    if args.warmup < 0 or args.runs < 1:
        parser.error("--warmup must be >= 0 and --runs >= 1")
    import torch
    import transformers
    if not torch.cuda.is_available():
        sys.exit("bench_hf_step.py: no CUDA device (PyTorch sees none)")
    # Bring the clocks up before the first model (a cold GPU ran the first model's steps slower in
    # one call on the H200): ~1 s of large bf16 GEMMs.
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(60):
        a @ a
    torch.cuda.synchronize()
    del a
    rows = []
    for path in args.config:
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        row = {"model": name, "config": path, "attention": args.attention}
        model = None
        try:
            model, config = build(path, args.attention, torch, transformers)
            row["parameters"] = sum(p.numel() for p in model.parameters())
            row.update(time_steps(model, config, args.warmup, args.runs, torch))
            print(f"{name}: {row['median_ms']:.2f} ms a step, {row['tokens_per_s'] / 1e3:.1f}k tok/s "
                  f"(noise {100 * row['noise']:.1f}%)", flush=True)
        except Exception as error:  # a row with the reason, never a crash of the whole table
            row["error"] = f"{type(error).__name__}: {error}"
            traceback.print_exc()
        del model
        torch.cuda.empty_cache()
        rows.append(row)
    document = {"peer": f"transformers {transformers.__version__}, torch {torch.__version__}",
                "device": torch.cuda.get_device_name(0), "steps": rows}
    temporary = args.out + ".tmp"
    with open(temporary, "w") as f:
        json.dump(document, f, indent=1)
    os.replace(temporary, args.out)


if __name__ == "__main__":
    main()
