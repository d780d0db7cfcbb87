#!/usr/bin/env python3
"""Regenerates golden/upstream/: tiny HF checkpoints and what upstream transformers computes on them.

Needs PyTorch and transformers (the GPU host has both); a GPU is used when present. For each case
it writes <out>/<case>/:
  config.json, model.safetensors   save_pretrained output (MoE experts one by one, as on the hub)
  batch.safetensors                int64 input_ids / labels [2, 40], about 15% labels = -100
  batch_packed.safetensors         [1, 80]: documents of 33 and 47 tokens, position_ids restart at 0,
                                   the label at each document start = -100 (attention-only models)
  logits.safetensors               fp64 eager logits of batch, stored as float32
  grads.safetensors                fp64 eager gradients (float32), transformers 5.x in-memory names
  reference.json                   loss, aux_loss, grad_norm, per-parameter grad norms for
                                   fp64/fp32/bf16 x eager/sdpa, and packed_fp64/fp32_eager
The packed references run each document separately (that is what cu_seqlens attention computes;
transformers' eager attention would attend across documents of a packed row).

    python3 tools/make_upstream_reference.py --out golden/upstream [--cases qwen3_tiny,llama3_tiny]
"""
import argparse
import json
import math
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM

ROWS, ROW_LENGTH, PACKED_DOCUMENTS = 2, 40, (33, 47)
LINEAR_ATTENTION_TYPES = ("qwen3_5_text", "qwen3_5_moe_text", "qwen3_next")

# (model_type, config overrides): small enough to run on a CPU, large enough to exercise each feature.
CASES = {
    "llama3_tiny": ("llama", {
        "hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "vocab_size": 384, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False,
        "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 32}}),
    "qwen2_tiny": ("qwen2", {
        "hidden_size": 80, "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 5,
        "num_key_value_heads": 1, "vocab_size": 300, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False}),
    "qwen3_tiny": ("qwen3", {
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 400, "max_position_embeddings": 256,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True}),
    "qwen3_moe_tiny": ("qwen3_moe", {
        "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32, "num_experts": 4,
        "num_experts_per_tok": 2, "norm_topk_prob": False, "decoder_sparse_step": 2, "mlp_only_layers": [],
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "vocab_size": 384, "max_position_embeddings": 256, "output_router_logits": True,
        "router_aux_loss_coef": 0.02, "tie_word_embeddings": False}),
    "deepseek_v3_tiny": ("deepseek_v3", {
        "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": None, "kv_lora_rank": 32,
        "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 4,
        "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "n_shared_experts": 1,
        "first_k_dense_replace": 1, "routed_scaling_factor": 1.5, "norm_topk_prob": True, "vocab_size": 384,
        "max_position_embeddings": 256, "rope_scaling": None, "tie_word_embeddings": False}),
    "seed_oss_tiny": ("seed_oss", {
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 384, "max_position_embeddings": 256,
        "attention_bias": True, "residual_dropout": 0.0, "tie_word_embeddings": False}),
    "qwen3_5_tiny": ("qwen3_5_text", {
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 32, "partial_rotary_factor": 0.25, "linear_num_key_heads": 2,
        "linear_num_value_heads": 2, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
        "linear_conv_kernel_dim": 4, "full_attention_interval": 2, "vocab_size": 384,
        "max_position_embeddings": 256, "tie_word_embeddings": False}),
    "qwen3_5_moe_tiny": ("qwen3_5_moe_text", {
        "hidden_size": 64, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32, "num_experts": 4,
        "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "partial_rotary_factor": 0.25, "linear_num_key_heads": 2, "linear_num_value_heads": 2,
        "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
        "full_attention_interval": 2, "vocab_size": 384, "max_position_embeddings": 256,
        "output_router_logits": True, "router_aux_loss_coef": 0.02, "tie_word_embeddings": False}),
    "qwen3_next_tiny": ("qwen3_next", {
        "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 1,
        "norm_topk_prob": True, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "partial_rotary_factor": 0.25, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
        "linear_key_head_dim": 16, "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4,
        "layer_types": ["linear_attention", "full_attention"], "vocab_size": 384, "max_position_embeddings": 256,
        "output_router_logits": True, "router_aux_loss_coef": 0.02, "tie_word_embeddings": False}),
}

RUNS = (("fp64_eager", torch.float64, "eager"), ("fp32_eager", torch.float32, "eager"),
        ("fp32_sdpa", torch.float32, "sdpa"), ("bf16_eager", torch.bfloat16, "eager"),
        ("bf16_sdpa", torch.bfloat16, "sdpa"))

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def random_batch(vocab_size, seed, rows, row_length):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, vocab_size, (rows, row_length), generator=generator)
    labels = input_ids.clone()
    labels[torch.rand((rows, row_length), generator=generator) < 0.15] = -100
    return input_ids, labels


def packed_batch(vocab_size, seed):
    input_ids, labels = random_batch(vocab_size, seed, 1, sum(PACKED_DOCUMENTS))
    position_ids = torch.cat([torch.arange(length) for length in PACKED_DOCUMENTS]).unsqueeze(0)
    start = 0
    for length in PACKED_DOCUMENTS:
        labels[0, start] = -100  # no target crosses into a document from the previous one
        start += length
    return {"input_ids": input_ids, "labels": labels, "position_ids": position_ids}


def instantiate(config, attention, dtype, state):
    options = {"attn_implementation": attention, "dtype": torch.float32}
    if dtype == torch.float64:
        options["experts_implementation"] = "eager"  # grouped_mm kernels have no fp64 path
    try:
        model = AutoModelForCausalLM.from_config(config, **options)
    except TypeError:
        options.pop("experts_implementation", None)
        model = AutoModelForCausalLM.from_config(config, **options)
    model.load_state_dict(state)
    return model.to(device=DEVICE, dtype=dtype).train()


def gradients(model):
    return {name: p.grad.detach() for name, p in model.named_parameters() if p.grad is not None}


def summary(loss, aux_loss, grads):
    norms = {name: float(g.double().norm()) for name, g in grads.items()}
    return {"loss": float(loss), "aux_loss": None if aux_loss is None else float(aux_loss),
            "grad_norm": math.sqrt(sum(v * v for v in norms.values())), "param_grad_norms": norms}


def packed_by_document(model, batch, config):
    """Loss of a packed row with attention confined to each document: run documents one by one."""
    import importlib
    input_ids, labels = batch["input_ids"][0].to(DEVICE), batch["labels"][0].to(DEVICE)
    valid = (labels[1:] != -100).sum()
    moe = bool(getattr(config, "output_router_logits", False))
    total, start, router_outputs = 0.0, 0, []
    for length in PACKED_DOCUMENTS:
        ids, doc_labels = input_ids[start:start + length], labels[start:start + length]
        kwargs = {"output_router_logits": True} if moe else {}
        output = model(input_ids=ids[None], **kwargs)
        logits = output.logits[0].float()
        total = total + torch.nn.functional.cross_entropy(logits[:-1], doc_labels[1:], ignore_index=-100,
                                                          reduction="sum")
        if moe:
            router_outputs.append(output.router_logits)
        start += length
    loss, aux_loss = total / valid, None
    if moe:
        balance = importlib.import_module(type(model).__module__).load_balancing_loss_func
        per_layer = tuple(torch.cat([r[i] for r in router_outputs], dim=0) for i in range(len(router_outputs[0])))
        aux_loss = balance(per_layer, config.num_experts, config.num_experts_per_tok, None)
        loss = loss + config.router_aux_loss_coef * aux_loss
    loss.backward()
    return summary(loss.item(), None if aux_loss is None else aux_loss.item(), gradients(model))


def write_case(name, model_type, overrides, out_dir):
    config = AutoConfig.for_model(model_type, **dict(overrides, attention_dropout=0.0))
    torch.manual_seed(42)
    base = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    base.save_pretrained(directory, safe_serialization=True)
    state = {key: value.clone() for key, value in base.state_dict().items()}
    input_ids, labels = random_batch(config.vocab_size, 7, ROWS, ROW_LENGTH)
    batch = {"input_ids": input_ids, "labels": labels}
    save_file(batch, os.path.join(directory, "batch.safetensors"))
    reference = {"model_type": model_type, "transformers": transformers.__version__, "torch": torch.__version__,
                 "batch": [ROWS, ROW_LENGTH], "runs": {}}
    for tag, dtype, attention in RUNS:
        try:
            model = instantiate(config, attention, dtype, state)
            output = model(**{key: value.to(DEVICE) for key, value in batch.items()})
            output.loss.backward()
            reference["runs"][tag] = summary(output.loss.item(), getattr(output, "aux_loss", None), gradients(model))
            if tag == "fp64_eager":
                save_file({"logits": output.logits.detach().float().cpu().contiguous()},
                          os.path.join(directory, "logits.safetensors"))
                save_file({key: g.float().cpu().contiguous() for key, g in gradients(model).items()},
                          os.path.join(directory, "grads.safetensors"))
        except Exception as failure:  # record and keep going: a missing run is visible in reference.json
            reference["runs"][tag] = {"error": repr(failure)[:300]}
    if model_type not in LINEAR_ATTENTION_TYPES:
        packed = packed_batch(config.vocab_size, 11)
        save_file(packed, os.path.join(directory, "batch_packed.safetensors"))
        for tag, dtype in (("packed_fp64_eager", torch.float64), ("packed_fp32_eager", torch.float32)):
            try:
                reference["runs"][tag] = packed_by_document(instantiate(config, "eager", dtype, state), packed, config)
            except Exception as failure:
                reference["runs"][tag] = {"error": repr(failure)[:300]}
    with open(os.path.join(directory, "reference.json"), "w") as stream:
        json.dump(reference, stream, indent=1)
    return {tag: run.get("loss", run.get("error")) for tag, run in reference["runs"].items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory (e.g. golden/upstream)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    arguments = parser.parse_args()
    failed = False
    for name in arguments.cases.split(","):
        if name not in CASES:
            sys.exit(f"unknown case '{name}' (known: {', '.join(CASES)})")
        model_type, overrides = CASES[name]
        print(name, json.dumps(write_case(name, model_type, overrides, arguments.out)), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
