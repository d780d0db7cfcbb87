#!/usr/bin/env python3
"""Regenerates golden/upstream/: tiny HF checkpoints and what upstream transformers computes on them.

Needs PyTorch and transformers. Runs on the CPU unless --device says otherwise (reference.json records
it): the models are tiny, and the CPU is where parity's tests compare with these files, bit for bit in
bf16 (logits_bf16.safetensors). For each case it writes <out>/<case>/:
  config.json, model.safetensors   save_pretrained output (MoE experts one by one, as on the hub), float32.
                                   Every norm weight is its initial value (1, or 0 for the (1 + w) norms)
                                   + 0.1 * N(0, 1) and every bias (attention biases, dt_bias,
                                   e_score_correction_bias) its initial value + 0.02 * N(0, 1)
                                   (perturb_norms_and_biases), so that a dropped rounding point after
                                   a norm's scale, or a weight or bias used in the wrong place, shows.
  batch.safetensors                int64 input_ids / labels [2, 40], about 15% labels = -100
  batch_packed.safetensors         [1, 80]: documents of 33 and 47 tokens, position_ids restart at 0,
                                   the label at each document start = -100 (attention-only models)
  logits.safetensors               fp64 eager logits of batch, float64
  logits_bf16.safetensors          bf16 eager logits of batch, bfloat16 (what transformers' bf16 recipe
                                   rounds to; parity's eager bf16 matches most of them bit for bit)
  grads.safetensors                fp64 eager gradients, float64, transformers 5.x in-memory names
  reference.json                   loss, aux_loss, grad_norm, per-parameter grad norms for
                                   fp64/fp32/bf16 x eager/sdpa, and packed_fp64/fp32_eager
Every run loads the saved checkpoint with from_pretrained(dtype=...), the way a user runs transformers
in that dtype (modules transformers keeps in float32 stay float32 in the bf16 runs).
The packed references run each document separately (that is what cu_seqlens attention computes;
transformers' eager attention would attend across documents of a packed row).

The fp64 runs are float64 from end to end, which transformers alone is not: even in a float64 model it
casts to float32 in places written for bf16/fp16 safety. Found in transformers 5.17's modeling files of
the shipped model types (grep "float32\|.float()" modeling_<model>.py):
  - the loss: ForCausalLMLoss upcasts the logits with `.float()` (loss/loss_utils.py);
  - RMSNorm: `hidden_states.to(torch.float32)`; the (1 + w) norms: `x.float()`, `self.weight.float()`;
    the gated norm of the linear-attention layers: `.to(torch.float32)` of x and the gate;
  - rotary: inv_freq built with `torch.arange(..., dtype=torch.float)` (modeling_rope_utils.py, also
    llama3's and yarn's scaling) and `inv_freq.float() @ position_ids.float()`;
  - eager attention: `softmax(..., dtype=torch.float32)`;
  - routers: `softmax(router_logits, dtype=torch.float)` (Qwen3-MoE / Qwen3.5-MoE / Qwen3-Next),
    DeepSeek-V3's `F.linear(x.type(torch.float32), weight.type(torch.float32))` and its float32
    e_score_correction_bias (_keep_in_fp32_modules_strict); the load-balancing loss's float32 sums;
  - the gated delta rule: torch_chunk_gated_delta_rule / torch_recurrent_gated_delta_rule cast q, k,
    v, g, beta `.to(torch.float32)`, and the log decay is `-A_log.float().exp() * softplus(a.float() + ...)`.
Each fp64 run (and only those) therefore runs inside `float64_only()`: a TorchFunctionMode
(Float64Casts) that rewrites, for every torch call made while it is active, a float32 dtype argument
into float64 and `Tensor.float()` into `Tensor.double()`, with float64 as the default dtype; and a
TorchDispatchMode (Float64Guard) that fails the run if any aten operator of the forward, the loss or the
backward still reads or writes a floating tensor that is not float64. So the casts above are bypassed
by one rule, nothing else of transformers' math changes, and the guard proves none was missed (a new
cast in a later transformers release fails the run instead of silently rounding). The fp32 and bf16
runs are transformers unchanged.

    python3 tools/make_upstream_reference.py --out golden/upstream [--cases qwen3_tiny,llama3_tiny] [--device cpu]
"""
import argparse
import contextlib
import json
import math
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
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

DEVICE = "cpu"  # --device
NORM_WEIGHT_SCALE, BIAS_SCALE, PERTURBATION_SEED = 0.1, 0.02, 43


class Float64Casts(TorchFunctionMode):
    """Every torch call: a float32 dtype argument becomes float64, Tensor.float() becomes Tensor.double()."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.float:
            func = torch.Tensor.double
        promote = lambda value: torch.float64 if value is torch.float32 else value
        return func(*[promote(a) for a in args], **{k: promote(v) for k, v in (kwargs or {}).items()})


class Float64Guard(TorchDispatchMode):
    """Fails on any aten operator (forward, loss or backward) that reads or writes a non-float64 float tensor."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        output = func(*args, **kwargs)
        for value in tree_leaves((args, kwargs, output)):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64:
                raise RuntimeError(f"fp64 run: {func} has a {value.dtype} tensor (a cast float64_only() misses)")
        return output


@contextlib.contextmanager
def float64_only(guard=True):
    """transformers in float64 with its float32 casts bypassed (Float64Casts); guard: Float64Guard too."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Float64Casts(), (Float64Guard() if guard else contextlib.nullcontext()):
            yield
    finally:
        torch.set_default_dtype(default)


def run_context(dtype, guard=True):
    return float64_only(guard) if dtype == torch.float64 else contextlib.nullcontext()


def perturb_norms_and_biases(model):
    """Norm weights: initial + 0.1 N(0,1) (the initial value is all 1, or all 0 for the (1 + w) norms);
    every parameter or buffer named *bias: initial + 0.02 N(0,1). Seeded, in named order."""
    generator = torch.Generator().manual_seed(PERTURBATION_SEED)
    norms = {f"{name}.weight" for name, module in model.named_modules()
             if "Norm" in type(module).__name__ and isinstance(getattr(module, "weight", None), torch.Tensor)}
    if not norms:
        raise RuntimeError(f"{type(model).__name__}: no norm weight found to perturb")
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    with torch.no_grad():
        for name, tensor in state.items():
            if name in norms:
                scale = NORM_WEIGHT_SCALE
                if not (bool((tensor == 1).all()) or bool((tensor == 0).all())):
                    raise RuntimeError(f"{name}: a norm weight that is neither all 1 nor all 0")
            elif name.endswith("bias"):
                scale = BIAS_SCALE
            else:
                continue
            tensor.add_(scale * torch.randn(tensor.shape, generator=generator, dtype=torch.float64).to(tensor.dtype))


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


def instantiate(directory, attention, dtype):
    """The saved checkpoint, loaded as a user loads it in `dtype` (fp64: inside float64_only)."""
    options = {"attn_implementation": attention, "dtype": dtype}
    if dtype == torch.float64:
        options["experts_implementation"] = "eager"  # grouped_mm kernels have no fp64 path
    with run_context(dtype, guard=False):  # loading copies float32 checkpoint tensors: not guarded
        try:
            model = AutoModelForCausalLM.from_pretrained(directory, **options)
        except TypeError:
            options.pop("experts_implementation", None)
            model = AutoModelForCausalLM.from_pretrained(directory, **options)
        model = model.to(DEVICE).train()
    if dtype == torch.float64:  # what the guard then checks op by op, checked once for the stored state
        low = [name for name, t in list(model.named_parameters()) + list(model.named_buffers())
               if t.is_floating_point() and t.dtype != torch.float64]
        if low:
            raise RuntimeError(f"fp64 model holds non-float64 tensors: {low[:4]}")
    return model


def gradients(model):
    return {name: p.grad.detach() for name, p in model.named_parameters() if p.grad is not None}


def summary(loss, aux_loss, grads):
    norms = {name: float(g.double().norm()) for name, g in grads.items()}
    return {"loss": float(loss), "aux_loss": None if aux_loss is None else float(aux_loss),
            "grad_norm": math.sqrt(sum(v * v for v in norms.values())), "param_grad_norms": norms}


def packed_by_document(model, batch, config, dtype):
    """Loss of a packed row with attention confined to each document: run documents one by one."""
    import importlib
    input_ids, labels = batch["input_ids"][0].to(DEVICE), batch["labels"][0].to(DEVICE)
    valid = (labels[1:] != -100).sum()
    moe = bool(getattr(config, "output_router_logits", False))
    total, start, router_outputs = 0.0, 0, []
    with run_context(dtype):
        for length in PACKED_DOCUMENTS:
            ids, doc_labels = input_ids[start:start + length], labels[start:start + length]
            kwargs = {"output_router_logits": True} if moe else {}
            output = model(input_ids=ids[None], **kwargs)
            logits = output.logits[0].to(torch.float64 if dtype == torch.float64 else torch.float32)
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
    perturb_norms_and_biases(base)
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    base.save_pretrained(directory, safe_serialization=True)
    with contextlib.suppress(FileNotFoundError):  # save_pretrained's generation defaults: nothing reads them
        os.remove(os.path.join(directory, "generation_config.json"))
    input_ids, labels = random_batch(config.vocab_size, 7, ROWS, ROW_LENGTH)
    batch = {"input_ids": input_ids, "labels": labels}
    save_file(batch, os.path.join(directory, "batch.safetensors"))
    reference = {"model_type": model_type, "transformers": transformers.__version__, "torch": torch.__version__,
                 "device": DEVICE, "batch": [ROWS, ROW_LENGTH], "runs": {}}
    for tag, dtype, attention in RUNS:
        try:
            model = instantiate(directory, attention, dtype)
            with run_context(dtype):
                output = model(**{key: value.to(DEVICE) for key, value in batch.items()})
                output.loss.backward()
            aux_loss = getattr(output, "aux_loss", None)
            reference["runs"][tag] = summary(output.loss.item(), None if aux_loss is None else aux_loss.item(),
                                             gradients(model))
            if tag == "bf16_eager":
                save_file({"logits": output.logits.detach().cpu().contiguous()},
                          os.path.join(directory, "logits_bf16.safetensors"))
            if tag == "fp64_eager":
                save_file({"logits": output.logits.detach().cpu().contiguous()},
                          os.path.join(directory, "logits.safetensors"))
                save_file({key: g.cpu().contiguous() for key, g in gradients(model).items()},
                          os.path.join(directory, "grads.safetensors"))
        except Exception as failure:  # record and keep going: a missing run is visible in reference.json
            reference["runs"][tag] = {"error": repr(failure)[:300]}
    if model_type not in LINEAR_ATTENTION_TYPES:
        packed = packed_batch(config.vocab_size, 11)
        save_file(packed, os.path.join(directory, "batch_packed.safetensors"))
        for tag, dtype in (("packed_fp64_eager", torch.float64), ("packed_fp32_eager", torch.float32)):
            try:
                model = instantiate(directory, "eager", dtype)
                reference["runs"][tag] = packed_by_document(model, packed, config, dtype)
            except Exception as failure:
                reference["runs"][tag] = {"error": repr(failure)[:300]}
    with open(os.path.join(directory, "reference.json"), "w") as stream:
        json.dump(reference, stream, indent=1)
    return {tag: run.get("loss", run.get("error")) for tag, run in reference["runs"].items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory (e.g. golden/upstream)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--device", default="cpu", help="torch device of every run (default cpu)")
    arguments = parser.parse_args()
    global DEVICE
    DEVICE = arguments.device
    failed = False
    for name in arguments.cases.split(","):
        if name not in CASES:
            sys.exit(f"unknown case '{name}' (known: {', '.join(CASES)})")
        model_type, overrides = CASES[name]
        losses = write_case(name, model_type, overrides, arguments.out)
        failed = failed or any(isinstance(value, str) for value in losses.values())
        print(name, json.dumps(losses), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
