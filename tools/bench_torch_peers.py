#!/usr/bin/env python3
"""bench_torch_peers.py: times the PyTorch peers of `parity bench op` on the same shapes, the same way,
and writes them as JSON for `parity bench op ... --peers FILE` (so the ratio is measured in one device call).

Timing matches harness/bench/bench_timer.cu: before every run a buffer >= 4x the L2 is written (the L2
flush), CUDA events around the call alone, warm-up runs first, the median of the runs and the noise
(median absolute deviation / median). fwd+bwd rows also report the extra peak memory: the most memory
allocated during one fwd+bwd beyond what the inputs held before (autograd allocates the .grad tensors
inside, so they are counted here).

Peers (bf16 unless --dtype):
  rms_norm       F.rms_norm, and the HF eager RMSNorm (x.float(), pow, mean, rsqrt, w * x.to(dtype))
  swiglu         F.silu(gate) * up (HF's MLP activation, eager)
  rotary         HF eager RoPE: cos/sin from inv_freq and position_ids (LlamaRotaryEmbedding), then
                 apply_rotary_pos_emb on q (B, Hq, T, D) and k (B, Hk, T, D)
  cross_entropy  eager linear + cross-entropy: logits = hidden @ weight.T, F.cross_entropy(logits.float())
  attention      causal F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.FLASH_ATTENTION,
                 CUDNN_ATTENTION, EFFICIENT_ATTENTION) (that order: the first is the one parity's rows are
                 compared with), and flex_attention compiled with torch.compile and a causal block mask
                 (create_block_mask), on q (B, Hq, T, D), k and v (B, Hk, T, D) (enable_gqa for GQA), the
                 shapes of harness/bench/bench_ops.c (BATCHxQUERY_HEADSxKV_HEADSxTOKENSxHEAD_DIMxDOCUMENTS).
                 The packed row (documents > 1) is timed by flex_attention alone (a causal document mask);
                 the sdpa backends have no cu_seqlens entry, so their rows say so. A peer that fails
                 (a backend refusing a shape, a compile error) is a row with its error text, not a crash.
  moe_experts    the routed experts on harness/bench/bench_ops.c's shapes (TOKENSxHIDDENxEXPERTSx
                 INTERMEDIATExTOP_K), transformers 5.x's fused layouts gate_up_proj (E, 2I, H) and down_proj
                 (E, H, I), routing as parity's (K distinct experts a token, uniform at random; weights a
                 softmax over K logits uniform in [-2, 2)); per shape the gate_up GEMM first, then the layers
                 in this order (the first layer is the one parity's rows are compared with; liger last, as its
                 Triton autotuning takes the longest; a run stopped by SIGINT/SIGTERM still writes the rows
                 measured so far, with "interrupted" set in the report):
                 "grouped_mm layer": transformers' grouped_mm experts (integrations/moe.py): stable sort
                   of the N K rows by expert, torch._grouped_mm gate_up on W^T (E, H, 2I) with int32
                   cumulative offsets, silu(gate) * up, grouped_mm down, weights, unsort, index_add_;
                 "eager loop (HF experts)": transformers' eager experts: for each expert hit, gather its
                   rows, linear gate_up, silu(gate) * up, linear down, weights, index_add_;
                 "liger LigerFusedMoEFunction": liger-kernel's Triton fused MoE (liger_kernel.ops), where
                   importable (carry ../shared/tools/peer-wheels' wheels; else the row says why);
                 "grouped_mm gate_up GEMM": the gate_up torch._grouped_mm alone on rows already
                   sorted (fwd only), a part of the op: its row carries "part" and its own flops 4 R H I.
                 Every measured row carries "flops", parity's count (ops/moe_experts/descriptor.c): 6 R H I forward,
                 R = N K, 3x that forward + backward, which `parity bench --peers` checks.
  rms_norm_gated Qwen3.5's gated RMSNorm y = (w * rms_normalize(x)) * silu(gate) on 262144x128 (8192 tokens x
                 32 value heads, ROWSxDIM): "fla rms_norm_gated" (flash-linear-attention's Triton kernel,
                 fla.modules.fused_norm_gate.rms_norm_gated, activation swish, what FusedRMSNormGated calls)
                 and "eager (HF Qwen3_5RMSNormGated)" (x.float(), pow, mean, rsqrt, w * x.to(dtype),
                 * F.silu(gate.float()), .to(dtype)); eps 1e-6, w uniform in [0.5, 1.5).
  causal_conv1d  the depthwise causal conv of GatedDeltaNet + SiLU on NxCxK = 8192x8192x4 (one document of N
                 tokens, token-major x (N, C), weight (C, K)): "fla causal_conv1d" (fla.modules.causal_conv1d,
                 backend triton, activation silu, x as (1, N, C)) and "eager F.conv1d + silu" (HF's torch
                 path: x.transpose(1, 2), F.conv1d(groups=C, padding=K - 1), the first N outputs, F.silu,
                 transposed back).
  gated_delta_rule
                 fla's chunk_gated_delta_rule ("fla chunk_gated_delta_rule", fla.ops.gated_delta_rule) on
                 harness/bench/bench_ops.c's shapes (BATCHxTOKENSxHEADSxKEY_DIMxVALUE_DIM): B documents of T
                 tokens packed into one row of B T tokens (layout (1, B T, H, K), cu_seqlens), Hk = Hv = H,
                 use_qk_l2norm_in_kernel, scale K^-0.5; q, k, v ~ N(0, 1), g (the log decay) f32 uniform in
                 [-0.1, 0) as parity's (Qwen3.5 computes g in f32), beta uniform in [0.1, 0.9). fwd and fwd+bwd;
                 where fla's chunk backward refuses to run (fla issue #640: Triton 3.6 on Hopper), its row
                 carries the exception. Every measured row carries "flops", parity's count
                 (ops/gated_delta_rule/descriptor.c): B T H (2 C (3 K + 2 V) + 6 K V) forward, C = 64, 3x
                 that forward + backward.
  comm           `parity bench comm --device cuda`'s peers (not in the default --ops): torch.distributed with the
                 NCCL backend timing all_reduce, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single
                 and broadcast over message sizes --comm-min-bytes .. --comm-max-bytes (default 1K .. 1G, x2),
                 nccl-tests' sizes as parity's (bytes of the larger buffer, the count a multiple of the ranks),
                 sending parity's values (harness/bench/bench_comm.c: ((rank + 1) 7 + 3 j) % 17 - 8, small integers)
                 so each row also carries #wrong, the elements of every rank's result that differ from the exact
                 expected values; per call a barrier, CUDA events around the call alone, --warmup calls first, the
                 median over --runs of the slowest rank's time (no L2 flush, as nccl-tests and parity bench comm),
                 algbw = bytes / time and busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather,
                 reduce_scatter, all_to_all), 1 (broadcast). Rows: op "comm", pass the collective (parity's names),
                 shape the bytes, plus bytes, count, ranks, algbw_gbps, busbw_gbps, wrong (`parity bench op
                 --peers` skips them). The world: torchrun's (WORLD_SIZE, RANK, LOCAL_RANK) or mpirun's
                 (OMPI_COMM_WORLD_*, with MASTER_ADDR / MASTER_PORT defaulting to 127.0.0.1:29500), one GPU a rank
                 (the local rank's), rank 0 writing --out; without a launcher a world of one process (a file://
                 rendezvous), the `parity bench comm --device cuda --ranks 1` peer. Over several ranks comm runs
                 alone. --dtype fp32 matches parity bench comm's default (the script's default is bf16).
  fla-core (0.6.0) and liger-kernel are pure Python on Triton: carry the wheels of ../shared/tools/peer-wheels
  and put them on PYTHONPATH (its header says how); without them their rows say why.

Needs PyTorch with CUDA (present on the GPU host; without torch only --help works). Usage:
  python3 tools/bench_torch_peers.py --out peers.json [--runs 30] [--warmup 5]
      [--ops rms_norm,swiglu,...,moe_experts,rms_norm_gated,causal_conv1d,gated_delta_rule]
  python3 tools/bench_torch_peers.py --ops comm --dtype fp32 --out comm_peers.json [--comm-max-bytes 64M]
  torchrun --nproc-per-node 8 tools/bench_torch_peers.py --ops comm --dtype fp32 --out comm_peers.json
"""
import argparse
import json
import os
import signal
import statistics
import sys
import tempfile

try:
    import torch
    import torch.nn.functional as F
except ImportError as error:  # this machine has no torch: --help still works, a run says why it cannot
    torch = F = None
    TORCH_IMPORT_ERROR = error

ROTARY_SEQUENCE = 4096  # as harness/bench/bench_ops.c: positions restart every 4096 tokens
# as harness/bench/bench_ops.c's moe_experts_shapes: (tokens, hidden, experts, intermediate, top_k)
MOE_EXPERTS_SHAPES = ((16384, 2048, 64, 768, 8), (2048, 2048, 16, 768, 2), (2048, 2048, 8, 1024, 2))
# as harness/bench/bench_ops.c's attention_shapes: (B, Hq, Hk, T, D, documents a row)
ATTENTION_SHAPES = ((4, 16, 16, 4096, 128, 1), (8, 16, 16, 2048, 64, 1), (2, 32, 8, 4096, 128, 1),
                    (1, 16, 16, 16384, 128, 8), (1, 16, 16, 16384, 128, 1))
# as harness/bench/bench_ops.c's gated_delta_rule_shapes: (B documents, T tokens each, H heads, K, V)
GATED_DELTA_RULE_SHAPES = ((1, 8192, 16, 128, 128), (4, 4096, 32, 128, 128))
GATED_DELTA_RULE_CHUNK = 64  # the C of parity's flop count (PARITY_GATED_DELTA_RULE_DEFAULT_CHUNK, fla's BT)
# causal_conv1d: (N tokens, C channels, K width): Qwen3.5's 8192 channels (2 x 16 x 128 keys + 32 x 128 values)
CAUSAL_CONV1D_SHAPES = ((8192, 8192, 4),)
RMS_NORM_GATED_SHAPES = ((262144, 128),)  # 8192 tokens x 32 value heads of 128
# the ops run without --ops: issues 13 and 14's, then issue 15's GatedDeltaNet ops
DEFAULT_OPS = "rms_norm,swiglu,rotary,cross_entropy,attention,moe_experts"
GATED_DELTA_NET_OPS = "rms_norm_gated,causal_conv1d,gated_delta_rule"


def summarize(times):
    median = statistics.median(times)
    noise = statistics.median([abs(t - median) for t in times]) / median if median > 0 else float("nan")
    return {"median_ms": median, "min_ms": min(times), "max_ms": max(times), "noise": noise, "runs": len(times)}


class Timer:
    def __init__(self, warmup, runs):
        self.warmup, self.runs = warmup, runs
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush = torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def measure(self, step, before=None, runs=None):
        runs = runs or self.runs
        times = []
        for i in range(self.warmup + runs):
            if before:
                before()
            self.flush.fill_(i & 0xFF)
            self.start.record()
            step()
            self.stop.record()
            torch.cuda.synchronize()
            if i >= self.warmup:
                times.append(self.start.elapsed_time(self.stop))
        return summarize(times)


def extra_peak(step, before=None):
    """Memory allocated at the peak of one call beyond what was allocated before it."""
    if before:
        before()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def clear_grads(*tensors):
    def clear():
        for t in tensors:
            t.grad = None
    return clear


def row(op, pass_, shape, dtype, peer, timing, extra=None, flops=None, part=None):
    """flops: the work of the call (flop-bound ops; parity checks it against its own count, or takes it as
    the work of `part`, a part of the op such as moe_experts' "gate_up GEMM")."""
    entry = {"op": op, "pass": pass_, "shape": shape, "dtype": dtype, "peer": peer}
    entry.update(timing)
    if extra is not None:
        entry["extra_peak_bytes"] = extra
    if flops is not None:
        entry["flops"] = flops
    if part is not None:
        entry["part"] = part
    rate = f", {flops / (timing['median_ms'] * 1e-3) / 1e12:.0f} TFLOP/s" if flops is not None else ""
    print(f"{op:14} {shape:18} {pass_:8} {peer:28} {timing['median_ms']:9.4f} ms (noise {100 * timing['noise']:.1f}%)"
          + rate + (f", extra peak {extra / 2**30:.2f} GiB" if extra is not None else ""), file=sys.stderr, flush=True)
    return entry


def rms_norm_peers(timer, dtype, name):
    rows, hidden = 16384, 4096
    shape = f"{rows}x{hidden}"
    x = torch.randn(rows, hidden, device="cuda", dtype=dtype)
    w = torch.empty(hidden, device="cuda", dtype=dtype).uniform_(0.5, 1.5)
    dy = torch.randn(rows, hidden, device="cuda", dtype=dtype)
    eps = 1e-6

    def eager(x, w):  # HF LlamaRMSNorm
        x32 = x.float()
        variance = x32.pow(2).mean(-1, keepdim=True)
        return w * (x32 * torch.rsqrt(variance + eps)).to(dtype)

    peers = [("F.rms_norm", lambda x, w: F.rms_norm(x, (hidden,), w, eps)), ("eager (HF LlamaRMSNorm)", eager)]
    out = []
    for peer, fn in peers:
        with torch.no_grad():
            out.append(row("rms_norm", "fwd", shape, name, peer, timer.measure(lambda: fn(x, w))))
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        step = lambda: fn(xg, wg).backward(dy)
        out.append(row("rms_norm", "fwd+bwd", shape, name, peer, timer.measure(step, clear_grads(xg, wg)),
                       extra_peak(step, clear_grads(xg, wg))))
    return out


def swiglu_peers(timer, dtype, name):
    rows, inter = 16384, 8192
    shape = f"{rows}x{inter}"
    gate = torch.randn(rows, inter, device="cuda", dtype=dtype)
    up = torch.randn(rows, inter, device="cuda", dtype=dtype)
    dy = torch.randn(rows, inter, device="cuda", dtype=dtype)
    out = []
    with torch.no_grad():
        out.append(row("swiglu", "fwd", shape, name, "eager F.silu(gate) * up", timer.measure(lambda: F.silu(gate) * up)))
    g, u = gate.clone().requires_grad_(), up.clone().requires_grad_()
    step = lambda: (F.silu(g) * u).backward(dy)
    out.append(row("swiglu", "fwd+bwd", shape, name, "eager F.silu(gate) * up", timer.measure(step, clear_grads(g, u)),
                   extra_peak(step, clear_grads(g, u))))
    return out


def rotary_peers(timer, dtype, name):
    tokens, hq, hk, d = 16384, 32, 8, 128
    batch, seq = tokens // ROTARY_SEQUENCE, ROTARY_SEQUENCE
    shape = f"{tokens}x{hq}x{hk}x{d}"
    q = torch.randn(batch, hq, seq, d, device="cuda", dtype=dtype)
    k = torch.randn(batch, hk, seq, d, device="cuda", dtype=dtype)
    dq = torch.randn_like(q)
    dk = torch.randn_like(k)
    position_ids = torch.arange(seq, device="cuda").unsqueeze(0).expand(batch, -1)
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, d, 2, dtype=torch.int64, device="cuda").float() / d))

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def rope(q, k):  # HF LlamaRotaryEmbedding.forward + apply_rotary_pos_emb
        freqs = (inv_freq[None, :, None].expand(batch, -1, 1) @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(dtype).unsqueeze(1), emb.sin().to(dtype).unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    out = []
    with torch.no_grad():
        out.append(row("rotary", "fwd", shape, name, "eager HF apply_rotary_pos_emb", timer.measure(lambda: rope(q, k))))
    qg, kg = q.clone().requires_grad_(), k.clone().requires_grad_()

    def step():
        qo, ko = rope(qg, kg)
        torch.autograd.backward([qo, ko], [dq, dk])

    out.append(row("rotary", "fwd+bwd", shape, name, "eager HF apply_rotary_pos_emb", timer.measure(step, clear_grads(qg, kg)),
                   extra_peak(step, clear_grads(qg, kg))))
    return out


def cross_entropy_peers(timer, dtype, name, runs):
    out = []
    for tokens, hidden, vocab in ((8192, 4096, 151936), (16384, 2048, 32000)):
        shape = f"{tokens}x{hidden}x{vocab}"
        h = torch.randn(tokens, hidden, device="cuda", dtype=dtype).requires_grad_()
        w = (0.02 * torch.randn(vocab, hidden, device="cuda", dtype=dtype)).requires_grad_()
        t = torch.randint(0, vocab, (tokens,), device="cuda")

        def step():
            logits = h @ w.t()
            F.cross_entropy(logits.float(), t).backward()

        out.append(row("cross_entropy", "fwd+bwd", shape, name, "eager linear + F.cross_entropy",
                       timer.measure(step, clear_grads(h, w), runs=runs), extra_peak(step, clear_grads(h, w))))
        del h, w, t
        torch.cuda.empty_cache()
    return out


def document_lengths(tokens, documents):
    """ops/attention/descriptor.c's parity_attention_work_document_length: lengths grow as 1, 2, ..., S."""
    weights = documents * (documents + 1) // 2
    lengths = [tokens * (i + 1) // weights for i in range(documents - 1)]
    return lengths + [tokens - sum(lengths)]


def failed_row(op, pass_, shape, dtype, peer, error):
    text = f"{type(error).__name__}: {error}".replace("\n", " ")[:240]
    print(f"{op:14} {shape:18} {pass_:8} {peer:28} not measured: {text}", file=sys.stderr, flush=True)
    return {"op": op, "pass": pass_, "shape": shape, "dtype": dtype, "peer": peer, "error": text}


def attention_peers(timer, dtype, name, runs):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex_error = None
    except ImportError as error:  # an old torch: every flex row says so
        flex_error = error
    # one compiled flex_attention for every shape and pass: without a larger cache torch.compile would
    # fall back to eager flex after a few recompiles and time the wrong thing
    for limit in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)
    compiled_flex = torch.compile(flex_attention, dynamic=False) if flex_error is None else None
    sdpa_backends = (("sdpa flash", SDPBackend.FLASH_ATTENTION), ("sdpa cudnn", SDPBackend.CUDNN_ATTENTION),
                     ("sdpa memory-efficient", SDPBackend.EFFICIENT_ATTENTION))
    out = []
    for batch, hq, hk, tokens, d, documents in ATTENTION_SHAPES:
        shape = f"{batch}x{hq}x{hk}x{tokens}x{d}x{documents}"
        q = torch.randn(batch, hq, tokens, d, device="cuda", dtype=dtype)
        k = torch.randn(batch, hk, tokens, d, device="cuda", dtype=dtype)
        v = torch.randn(batch, hk, tokens, d, device="cuda", dtype=dtype)
        do = torch.randn_like(q)
        gqa = hq != hk
        peers = []
        for peer, backend in sdpa_backends:
            if documents > 1:
                reason = RuntimeError("varlen (cu_seqlens) is not timed for torch sdpa: no packed-documents entry; "
                                      "flex_attention's document mask is the varlen peer")
                peers.append((peer, None, reason))
                continue

            def sdpa(q, k, v, backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
            peers.append((peer, sdpa, None))
        flex_peer = "flex_attention (torch.compile)"
        if flex_error is not None:
            peers.append((flex_peer, None, flex_error))
        else:
            try:
                if documents > 1:
                    ids = torch.cat([torch.full((length,), i, dtype=torch.int32, device="cuda")
                                     for i, length in enumerate(document_lengths(tokens, documents))])

                    def mask(b, h, q_index, kv_index):
                        return (q_index >= kv_index) & (ids[q_index] == ids[kv_index])
                else:
                    def mask(b, h, q_index, kv_index):
                        return q_index >= kv_index
                block_mask = create_block_mask(mask, None, None, tokens, tokens, device="cuda")
                peers.append((flex_peer, lambda q, k, v: compiled_flex(q, k, v, block_mask=block_mask, enable_gqa=gqa),
                              None))
            except Exception as error:  # noqa: BLE001 -- the row carries it
                peers.append((flex_peer, None, error))
        for peer, fn, error in peers:
            if error is not None:
                out.append(failed_row("attention", "fwd", shape, name, peer, error))
                out.append(failed_row("attention", "fwd+bwd", shape, name, peer, error))
                continue
            try:
                with torch.no_grad():
                    out.append(row("attention", "fwd", shape, name, peer, timer.measure(lambda: fn(q, k, v), runs=runs)))
            except Exception as error:  # noqa: BLE001
                out.append(failed_row("attention", "fwd", shape, name, peer, error))
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
            step = lambda: fn(qg, kg, vg).backward(do)
            try:
                out.append(row("attention", "fwd+bwd", shape, name, peer,
                               timer.measure(step, clear_grads(qg, kg, vg), runs=runs),
                               extra_peak(step, clear_grads(qg, kg, vg))))
            except Exception as error:  # noqa: BLE001
                out.append(failed_row("attention", "fwd+bwd", shape, name, peer, error))
            del qg, kg, vg
            torch.cuda.empty_cache()
        del q, k, v, do
        torch.cuda.empty_cache()
    return out


def moe_experts_routing(tokens, experts, top_k, dtype):
    """K distinct experts a token, uniform at random, and softmax weights over K logits uniform in [-2, 2):
    the distribution of harness/bench/bench_ops.c's moe_routing (not its Philox stream)."""
    indices = torch.rand(tokens, experts, device="cuda").argsort(dim=1)[:, :top_k].contiguous()
    logits = 4 * torch.rand(tokens, top_k, device="cuda", dtype=torch.float64) - 2
    return indices, torch.softmax(logits, dim=1).to(dtype)


def moe_grouped_mm(a, b, offsets):
    """torch._grouped_mm (2.9+; transformers' grouped_mm experts call it) or its public name."""
    grouped_mm = getattr(torch, "_grouped_mm", None) or getattr(F, "grouped_mm", None)
    if grouped_mm is None:
        raise RuntimeError(f"torch {torch.__version__} has neither torch._grouped_mm nor F.grouped_mm")
    return grouped_mm(a, b, offs=offsets)


def moe_grouped_mm_layer(x, gate_up_proj, down_proj, indices, weights):
    """transformers 5.x grouped_mm_experts_forward (integrations/moe.py) for (N, K) weights."""
    tokens, top_k = indices.shape
    experts = gate_up_proj.shape[0]
    expert_ids = indices.reshape(-1)
    token_idx = torch.arange(tokens, device=x.device).unsqueeze(1).expand(-1, top_k).reshape(-1)
    perm = torch.argsort(expert_ids, stable=True)
    inv_perm = torch.argsort(perm, stable=True)
    sample_weights_g = weights.reshape(-1)[perm]
    states_g = x[token_idx][perm]
    counts = torch.histc(expert_ids[perm].float(), bins=experts, min=0, max=experts - 1)
    offsets = torch.cumsum(counts, dim=0, dtype=torch.int32)
    gate, up = moe_grouped_mm(states_g, gate_up_proj.transpose(-2, -1), offsets).chunk(2, dim=-1)
    h = F.silu(gate) * up
    y_g = moe_grouped_mm(h, down_proj.transpose(-2, -1), offsets) * sample_weights_g.unsqueeze(-1)
    out = torch.zeros_like(x)
    out.index_add_(0, token_idx, y_g[inv_perm].to(out.dtype))
    return out


def moe_eager_loop(x, gate_up_proj, down_proj, indices, weights):
    """transformers 5.x eager experts (Qwen3MoeExperts.forward): a loop over the experts hit."""
    experts = gate_up_proj.shape[0]
    out = torch.zeros_like(x)
    with torch.no_grad():
        expert_mask = F.one_hot(indices, num_classes=experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert in expert_hit:
        expert = expert[0]
        top_k_pos, token_idx = torch.where(expert_mask[expert])
        gate, up = F.linear(x[token_idx], gate_up_proj[expert]).chunk(2, dim=-1)
        y = F.linear(F.silu(gate) * up, down_proj[expert]) * weights[token_idx, top_k_pos, None]
        out.index_add_(0, token_idx, y.to(out.dtype))
    return out


def moe_experts_peers(timer, dtype, name, runs, out):
    try:
        try:
            from liger_kernel.ops import LigerFusedMoEFunction
        except ImportError:
            from liger_kernel.ops.fused_moe import LigerFusedMoEFunction
        liger_error = None
    except Exception as error:  # noqa: BLE001 -- not installed, or a version without it: the rows say so
        LigerFusedMoEFunction, liger_error = None, error

    def liger(x, gate_up_proj, down_proj, indices, weights):
        return LigerFusedMoEFunction.apply(x, gate_up_proj, down_proj, indices.to(torch.int32), weights)

    # two passes over the shapes: torch's peers for every shape first, then liger's (its Triton autotuning
    # is the slow part, so a time cap that stops it still leaves every torch row)
    torch_layers = (("grouped_mm layer", moe_grouped_mm_layer, None), ("eager loop (HF experts)", moe_eager_loop, None))
    liger_layers = (("liger LigerFusedMoEFunction", liger, liger_error),)
    for layers, with_gemm in ((torch_layers, True), (liger_layers, False)):
        for shape in MOE_EXPERTS_SHAPES:
            moe_experts_shape_peers(timer, dtype, name, runs, out, shape, layers, with_gemm)


def moe_experts_inputs(shape_dims, dtype):
    """One shape's random inputs: x (N, H), gate_up_proj (E, 2I, H), down_proj (E, H, I), routing."""
    tokens, hidden, experts, inter, top_k = shape_dims
    x = torch.randn(tokens, hidden, device="cuda", dtype=dtype)
    gate_up_proj = 0.02 * torch.randn(experts, 2 * inter, hidden, device="cuda", dtype=dtype)
    down_proj = 0.02 * torch.randn(experts, hidden, inter, device="cuda", dtype=dtype)
    indices, weights = moe_experts_routing(tokens, experts, top_k, dtype)
    return x, gate_up_proj, down_proj, indices, weights


def moe_experts_shape_peers(timer, dtype, name, runs, out, shape_dims, layers, with_gemm):
    """Appends one shape's rows to out: the gate_up GEMM alone (with_gemm), then each layer fwd and fwd+bwd."""
    tokens, hidden, experts, inter, top_k = shape_dims
    shape = "x".join(str(d) for d in shape_dims)
    rows = tokens * top_k
    forward_flops = 2 * rows * (hidden * 2 * inter + inter * hidden)  # parity's count: 6 R H I
    x, gate_up_proj, down_proj, indices, weights = moe_experts_inputs(shape_dims, dtype)
    if with_gemm:
        # the gate_up GEMM alone, on rows already sorted by expert (the layer's first grouped_mm)
        peer = "grouped_mm gate_up GEMM"
        try:
            expert_ids = indices.reshape(-1)
            perm = torch.argsort(expert_ids, stable=True)
            token_idx = torch.arange(tokens, device="cuda").unsqueeze(1).expand(-1, top_k).reshape(-1)
            states_g = x[token_idx][perm].contiguous()  # (R, H)
            counts = torch.bincount(expert_ids, minlength=experts)
            offsets = torch.cumsum(counts, dim=0, dtype=torch.int32)  # (E,) ends, on the device
            weight_t = gate_up_proj.transpose(-2, -1)  # (E, H, 2I), column-major in its last two dimensions
            with torch.no_grad():
                out.append(row("moe_experts", "fwd", shape, name, peer,
                               timer.measure(lambda: moe_grouped_mm(states_g, weight_t, offsets), runs=runs),
                               flops=2 * rows * hidden * 2 * inter, part="gate_up GEMM"))
            del states_g
        except Exception as error:  # noqa: BLE001
            out.append(failed_row("moe_experts", "fwd", shape, name, peer, error))
    dy = torch.randn_like(x)
    for peer, fn, error in layers:
        if error is not None:
            error = RuntimeError(f"not available in liger-kernel here ({type(error).__name__}: {error}); "
                                 "liger-kernel 0.8.5 has LigerFusedMoEFunction: install its wheel")
            out.append(failed_row("moe_experts", "fwd", shape, name, peer, error))
            out.append(failed_row("moe_experts", "fwd+bwd", shape, name, peer, error))
            continue
        try:
            with torch.no_grad():
                out.append(row("moe_experts", "fwd", shape, name, peer,
                               timer.measure(lambda: fn(x, gate_up_proj, down_proj, indices, weights), runs=runs),
                               flops=forward_flops))
        except Exception as error:  # noqa: BLE001 -- the row carries it
            out.append(failed_row("moe_experts", "fwd", shape, name, peer, error))
        leaves = [t.clone().requires_grad_() for t in (x, gate_up_proj, down_proj, weights)]
        xg, gug, dg, wg = leaves
        step = lambda: fn(xg, gug, dg, indices, wg).backward(dy)
        try:
            out.append(row("moe_experts", "fwd+bwd", shape, name, peer,
                           timer.measure(step, clear_grads(*leaves), runs=runs), extra_peak(step, clear_grads(*leaves)),
                           flops=3 * forward_flops))
        except Exception as error:  # noqa: BLE001
            out.append(failed_row("moe_experts", "fwd+bwd", shape, name, peer, error))
        del leaves, xg, gug, dg, wg
        torch.cuda.empty_cache()
    del x, gate_up_proj, down_proj, indices, weights, dy
    torch.cuda.empty_cache()


def rms_norm_gated_peers(timer, dtype, name, out):
    try:
        from fla.modules.fused_norm_gate import rms_norm_gated as fla_rms_norm_gated
        fla_error = None
    except Exception as error:  # noqa: BLE001 -- fla-core not installed: its rows say so
        fla_rms_norm_gated, fla_error = None, error
    eps = 1e-6

    def eager(x, gate, w):  # HF Qwen3_5RMSNormGated.forward
        x32 = x.to(torch.float32)
        variance = x32.pow(2).mean(-1, keepdim=True)
        hidden = w * (x32 * torch.rsqrt(variance + eps)).to(x.dtype)
        return (hidden * F.silu(gate.to(torch.float32))).to(x.dtype)

    def fla(x, gate, w):
        return fla_rms_norm_gated(x, gate, w, None, activation="swish", eps=eps)

    for rows, dim in RMS_NORM_GATED_SHAPES:
        shape = f"{rows}x{dim}"
        x = torch.randn(rows, dim, device="cuda", dtype=dtype)
        gate = torch.randn(rows, dim, device="cuda", dtype=dtype)
        w = torch.empty(dim, device="cuda", dtype=dtype).uniform_(0.5, 1.5)
        dy = torch.randn(rows, dim, device="cuda", dtype=dtype)
        for peer, fn, error in (("fla rms_norm_gated", fla, fla_error), ("eager (HF Qwen3_5RMSNormGated)", eager, None)):
            if error is not None:
                error = RuntimeError(f"fla-core is not importable here ({type(error).__name__}: {error}): "
                                     "carry ../shared/tools/peer-wheels' wheels")
                out.append(failed_row("rms_norm_gated", "fwd", shape, name, peer, error))
                out.append(failed_row("rms_norm_gated", "fwd+bwd", shape, name, peer, error))
                continue
            try:
                with torch.no_grad():
                    out.append(row("rms_norm_gated", "fwd", shape, name, peer, timer.measure(lambda: fn(x, gate, w))))
            except Exception as error:  # noqa: BLE001 -- the row carries it
                out.append(failed_row("rms_norm_gated", "fwd", shape, name, peer, error))
            leaves = [t.clone().requires_grad_() for t in (x, gate, w)]
            step = lambda: fn(*leaves).backward(dy)
            try:
                out.append(row("rms_norm_gated", "fwd+bwd", shape, name, peer, timer.measure(step, clear_grads(*leaves)),
                               extra_peak(step, clear_grads(*leaves))))
            except Exception as error:  # noqa: BLE001
                out.append(failed_row("rms_norm_gated", "fwd+bwd", shape, name, peer, error))
            del leaves
            torch.cuda.empty_cache()
        del x, gate, w, dy
        torch.cuda.empty_cache()


def causal_conv1d_peers(timer, dtype, name, out):
    try:
        from fla.modules.causal_conv1d import causal_conv1d as fla_causal_conv1d
        fla_error = None
    except Exception as error:  # noqa: BLE001
        fla_causal_conv1d, fla_error = None, error

    def fla(x, w):  # x (N, C) token-major as parity's, one document
        return fla_causal_conv1d(x.unsqueeze(0), w, activation="silu", backend="triton")[0][0]

    def eager(x, w):  # HF's torch path (Qwen3_5GatedDeltaNet without causal-conv1d): channels first
        tokens, channels = x.shape
        kernel = w.shape[1]
        y = F.conv1d(x.t().unsqueeze(0), w.unsqueeze(1), groups=channels, padding=kernel - 1)[..., :tokens]
        return F.silu(y).squeeze(0).t()

    for tokens, channels, kernel in CAUSAL_CONV1D_SHAPES:
        shape = f"{tokens}x{channels}x{kernel}"
        x = torch.randn(tokens, channels, device="cuda", dtype=dtype)
        w = torch.empty(channels, kernel, device="cuda", dtype=dtype).uniform_(-0.5, 0.5)  # as parity's
        dy = torch.randn(tokens, channels, device="cuda", dtype=dtype)
        for peer, fn, error in (("fla causal_conv1d", fla, fla_error), ("eager F.conv1d + silu", eager, None)):
            if error is not None:
                error = RuntimeError(f"fla-core is not importable here ({type(error).__name__}: {error}): "
                                     "carry ../shared/tools/peer-wheels' wheels")
                out.append(failed_row("causal_conv1d", "fwd", shape, name, peer, error))
                out.append(failed_row("causal_conv1d", "fwd+bwd", shape, name, peer, error))
                continue
            try:
                with torch.no_grad():
                    out.append(row("causal_conv1d", "fwd", shape, name, peer, timer.measure(lambda: fn(x, w))))
            except Exception as error:  # noqa: BLE001 -- the row carries it
                out.append(failed_row("causal_conv1d", "fwd", shape, name, peer, error))
            leaves = [t.clone().requires_grad_() for t in (x, w)]
            step = lambda: fn(*leaves).backward(dy)
            try:
                out.append(row("causal_conv1d", "fwd+bwd", shape, name, peer, timer.measure(step, clear_grads(*leaves)),
                               extra_peak(step, clear_grads(*leaves))))
            except Exception as error:  # noqa: BLE001
                out.append(failed_row("causal_conv1d", "fwd+bwd", shape, name, peer, error))
            del leaves
            torch.cuda.empty_cache()
        del x, w, dy
        torch.cuda.empty_cache()


def gated_delta_rule_flops(batch, tokens, heads, key_dim, value_dim, backward):
    """parity's count (ops/gated_delta_rule/descriptor.c): the chunked form's products, C = 64."""
    chunk = GATED_DELTA_RULE_CHUNK
    forward = batch * tokens * heads * (2 * chunk * (3 * key_dim + 2 * value_dim) + 6 * key_dim * value_dim)
    return 3 * forward if backward else forward


def gated_delta_rule_peers(timer, dtype, name, runs, out):
    peer = "fla chunk_gated_delta_rule"
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
        fla_error = None
    except Exception as error:  # noqa: BLE001
        chunk_gated_delta_rule, fla_error = None, error
    for batch, tokens, heads, key_dim, value_dim in GATED_DELTA_RULE_SHAPES:
        shape = f"{batch}x{tokens}x{heads}x{key_dim}x{value_dim}"
        if fla_error is not None:
            error = RuntimeError(f"fla-core is not importable here ({type(fla_error).__name__}: {fla_error}): "
                                 "carry ../shared/tools/peer-wheels' wheels")
            out.append(failed_row("gated_delta_rule", "fwd", shape, name, peer, error))
            out.append(failed_row("gated_delta_rule", "fwd+bwd", shape, name, peer, error))
            continue
        n = batch * tokens
        q = torch.randn(1, n, heads, key_dim, device="cuda", dtype=dtype)
        k = torch.randn(1, n, heads, key_dim, device="cuda", dtype=dtype)
        v = torch.randn(1, n, heads, value_dim, device="cuda", dtype=dtype)
        g = torch.empty(1, n, heads, device="cuda", dtype=torch.float32).uniform_(-0.1, 0)
        beta = torch.empty(1, n, heads, device="cuda", dtype=dtype).uniform_(0.1, 0.9)
        cu_seqlens = torch.arange(0, n + 1, tokens, device="cuda", dtype=torch.long)
        do = torch.randn_like(v)
        scale = key_dim ** -0.5

        def fn(q, k, v, g, beta):
            return chunk_gated_delta_rule(q, k, v, g, beta, scale=scale, cu_seqlens=cu_seqlens,
                                          use_qk_l2norm_in_kernel=True)[0]

        try:
            with torch.no_grad():
                out.append(row("gated_delta_rule", "fwd", shape, name, peer,
                               timer.measure(lambda: fn(q, k, v, g, beta), runs=runs),
                               flops=gated_delta_rule_flops(batch, tokens, heads, key_dim, value_dim, False)))
        except Exception as error:  # noqa: BLE001 -- the row carries it
            out.append(failed_row("gated_delta_rule", "fwd", shape, name, peer, error))
        leaves = [t.clone().requires_grad_() for t in (q, k, v, g, beta)]
        step = lambda: fn(*leaves).backward(do)
        try:
            out.append(row("gated_delta_rule", "fwd+bwd", shape, name, peer,
                           timer.measure(step, clear_grads(*leaves), runs=runs), extra_peak(step, clear_grads(*leaves)),
                           flops=gated_delta_rule_flops(batch, tokens, heads, key_dim, value_dim, True)))
        except Exception as error:  # noqa: BLE001 -- fla #640: Triton 3.6 on Hopper refuses the chunk backward
            out.append(failed_row("gated_delta_rule", "fwd+bwd", shape, name, peer, error))
        del leaves, q, k, v, g, beta, do
        torch.cuda.empty_cache()


# ---- comm: torch.distributed (NCCL) peers of `parity bench comm --device cuda` ----

COMM_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")


def comm_world():
    """(rank, world size, local rank) of the launcher (torchrun, then mpirun), or of a world of one."""
    env = os.environ
    if "WORLD_SIZE" in env and "RANK" in env:
        return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", "0"))
    if "OMPI_COMM_WORLD_SIZE" in env:
        return (int(env["OMPI_COMM_WORLD_RANK"]), int(env["OMPI_COMM_WORLD_SIZE"]),
                int(env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")))
    return 0, 1, 0


def comm_init(rank, world, local_rank):
    import torch.distributed as dist
    del local_rank  # the device is set (torch.cuda.set_device) before the group is made
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:  # torchrun: env:// as it set it up
        dist.init_process_group("nccl", rank=rank, world_size=world)
        return dist, None
    if world > 1:  # mpirun: env:// from Open MPI's variables
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world)
        return dist, None
    rendezvous = tempfile.mkdtemp(prefix="bench_torch_peers_")  # a world of one: a file:// rendezvous
    dist.init_process_group("nccl", init_method=f"file://{rendezvous}/init", rank=0, world_size=1)
    return dist, rendezvous


def comm_value(rank, index):
    """bench_comm.c's parity_bench_comm_value: what `rank` sends at `index` (int64 tensors)."""
    return ((rank + 1) * 7 + index * 3) % 17 - 8


def comm_expected(collective, count, rank, ranks):
    """bench_comm.c's expected values of `rank`'s result (an int64 tensor on the GPU)."""
    c = count // ranks
    if collective == "all_reduce":
        i = torch.arange(count, device="cuda")
        return sum(comm_value(r, i) for r in range(ranks))
    if collective == "all_gather":
        i = torch.arange(count, device="cuda")
        return comm_value(i // c, i % c)
    if collective == "reduce_scatter":
        i = torch.arange(c, device="cuda") + rank * c
        return sum(comm_value(r, i) for r in range(ranks))
    if collective == "all_to_all":
        i = torch.arange(count, device="cuda")
        return comm_value(i // c, rank * c + i % c)
    return comm_value(0, torch.arange(count, device="cuda"))  # broadcast from rank 0


def comm_bus_factor(collective, ranks):
    if collective == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if collective == "broadcast":
        return 1.0
    return (ranks - 1) / ranks


def comm_sizes(min_bytes, max_bytes, factor, element, ranks):
    """bench_comm.c's message sizes: (bytes, count), count a multiple of the ranks, at least one a rank."""
    sizes, size = [], min_bytes
    while size <= max_bytes and len(sizes) < 64:
        count = size // element // ranks * ranks
        count = count if count > 0 else ranks
        sizes.append((count * element, count))
        size *= factor
    return sizes


def comm_peers(args, dtype, name, rank, ranks, out):
    import torch.distributed as dist
    element = torch.tensor([], dtype=dtype).element_size()
    sizes = comm_sizes(args.comm_min_bytes, args.comm_max_bytes, args.comm_factor, element, ranks)
    nccl = ".".join(str(v) for v in torch.cuda.nccl.version()) if hasattr(torch.cuda, "nccl") else "?"
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    functions = {"all_reduce": "all_reduce", "all_gather": "all_gather_into_tensor",
                 "reduce_scatter": "reduce_scatter_tensor", "all_to_all": "all_to_all_single", "broadcast": "broadcast"}
    if rank == 0:
        print(f"# torch.distributed nccl {nccl}: {ranks} ranks, {name}, median of {args.runs} calls after "
              f"{args.warmup} warm-up (CUDA events, the slowest rank's time)", file=sys.stderr, flush=True)
        print(f"#{'size (B)':>13} {'count':>12} {'type':>6}  {'collective':22} {'time (us)':>12} {'algbw (GB/s)':>12} "
              f"{'busbw (GB/s)':>12} {'#wrong':>8}", file=sys.stderr, flush=True)
    for collective in COMM_COLLECTIVES:
        peer = f"torch.distributed {functions[collective]}"
        for size, count in sizes:
            c = count // ranks
            sends = c if collective == "all_gather" else count
            receives = c if collective == "reduce_scatter" else count
            source = comm_value(rank, torch.arange(sends, device="cuda")).to(dtype)
            result = torch.full((receives,), 1000, device="cuda", dtype=dtype)  # poison: never a correct value
            in_place = collective in ("all_reduce", "broadcast")

            def call():
                if collective == "all_reduce":
                    dist.all_reduce(result)
                elif collective == "all_gather":
                    dist.all_gather_into_tensor(result, source)
                elif collective == "reduce_scatter":
                    dist.reduce_scatter_tensor(result, source)
                elif collective == "all_to_all":
                    dist.all_to_all_single(result, source)
                else:
                    dist.broadcast(result, src=0)

            def refill():  # the in-place collectives start from the sent values each call
                if in_place:
                    result.copy_(source)

            try:
                refill()
                call()
                torch.cuda.synchronize()
                wrong = (result.double() != comm_expected(collective, count, rank, ranks).double()).sum()
                dist.all_reduce(wrong)
                for _ in range(args.warmup):
                    refill()
                    call()
                times = []
                for _ in range(args.runs):
                    refill()
                    torch.cuda.synchronize()
                    dist.barrier(device_ids=[torch.cuda.current_device()])
                    start.record()
                    call()
                    stop.record()
                    stop.synchronize()
                    times.append(start.elapsed_time(stop))
                slowest = torch.tensor(times, device="cuda", dtype=torch.float64)
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                timing = summarize(slowest.tolist())
            except Exception as error:  # noqa: BLE001 -- the row carries it (an out-of-memory at 1 GiB, say)
                if rank == 0:
                    out.append(failed_row("comm", collective, str(size), name, peer, error))
                continue
            seconds = timing["median_ms"] * 1e-3
            algbw = size / seconds / 1e9 if seconds > 0 else 0.0
            busbw = algbw * comm_bus_factor(collective, ranks)
            entry = {"op": "comm", "pass": collective, "shape": str(size), "dtype": name, "peer": peer}
            entry.update(timing)
            entry.update({"bytes": size, "count": count, "ranks": ranks, "nccl": nccl, "algbw_gbps": algbw,
                          "busbw_gbps": busbw, "wrong": int(wrong.item())})
            if rank == 0:
                print(f" {size:13} {count:12} {name:>6}  {collective:22} {1e6 * seconds:12.2f} {algbw:12.3f} "
                      f"{busbw:12.3f} {entry['wrong']:8}", file=sys.stderr, flush=True)
                out.append(entry)
            del source, result
        torch.cuda.empty_cache()


def write_report(path, peers, interrupted=None):
    report = {"tool": "tools/bench_torch_peers.py", "torch": torch.__version__,
              "device": torch.cuda.get_device_name(0), "cuda": torch.version.cuda, "peers": list(peers)}
    if interrupted:
        report["interrupted"] = interrupted
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "w") as stream:
        json.dump(report, stream, indent=2)
    os.replace(temporary, path)


class SavedRows(list):
    """The peer rows, written to `path` after every append or extend."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def append(self, item):
        super().append(item)
        write_report(self.path, self)

    def extend(self, items):
        super().extend(items)
        write_report(self.path, self)

    def __iadd__(self, items):
        self.extend(items)
        return self


def parse_bytes(text):
    """A size as parity bench comm's --min-bytes takes it: digits with an optional K, M or G suffix."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (e.g. 1K, 64M)")
    return int(digits) * scale


def stop_on_signal(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="JSON file to write (atomically)")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--flop-bound-runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    parser.add_argument("--ops", default=DEFAULT_OPS + "," + GATED_DELTA_NET_OPS,
                        help="comma-separated ops (default: %(default)s; comm: the torch.distributed collectives)")
    parser.add_argument("--comm-min-bytes", type=parse_bytes, default=1 << 10, help="comm: smallest message (1K)")
    parser.add_argument("--comm-max-bytes", type=parse_bytes, default=1 << 30, help="comm: largest message (1G)")
    parser.add_argument("--comm-factor", type=int, default=2, help="comm: size step (2)")
    args = parser.parse_args()
    ops = args.ops.split(",")
    rank, ranks, local_rank = comm_world()
    if args.comm_factor < 2 or args.comm_max_bytes < args.comm_min_bytes:
        print("bench_torch_peers: --comm-factor must be >= 2 and --comm-max-bytes >= --comm-min-bytes", file=sys.stderr)
        return 2
    if ranks > 1 and ops != ["comm"]:
        print(f"bench_torch_peers: launched over {ranks} ranks: only --ops comm runs there (the op peers time one GPU)",
              file=sys.stderr)
        return 2
    if torch is None:
        print(f"bench_torch_peers: PyTorch is not importable here ({TORCH_IMPORT_ERROR})", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("bench_torch_peers: no CUDA device visible to PyTorch", file=sys.stderr)
        return 3
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    torch.cuda.set_device(local_rank % torch.cuda.device_count())  # one GPU a rank (comm over several)
    torch.manual_seed(0)
    timer = Timer(args.warmup, args.runs)
    # the report is rewritten (atomically) after every row, so a run killed outright still leaves the rows
    # measured before; SIGTERM (timeout(1)) and SIGINT stop the measuring and write "interrupted". Over
    # several ranks rank 0 writes it.
    peers = SavedRows(args.out) if rank == 0 else []
    distributed = rendezvous = None
    signal.signal(signal.SIGTERM, stop_on_signal)
    interrupted = None
    try:
        for op in ops:
            if op == "comm":
                if distributed is None:
                    distributed, rendezvous = comm_init(rank, ranks, local_rank)
                comm_peers(args, dtype, args.dtype, rank, ranks, peers)
            elif op == "rms_norm":
                peers += rms_norm_peers(timer, dtype, args.dtype)
            elif op == "swiglu":
                peers += swiglu_peers(timer, dtype, args.dtype)
            elif op == "rotary":
                peers += rotary_peers(timer, dtype, args.dtype)
            elif op == "cross_entropy":
                peers += cross_entropy_peers(timer, dtype, args.dtype, args.flop_bound_runs)
            elif op == "attention":
                peers += attention_peers(timer, dtype, args.dtype, args.flop_bound_runs)
            elif op == "moe_experts":
                moe_experts_peers(timer, dtype, args.dtype, args.flop_bound_runs, peers)
            elif op == "rms_norm_gated":
                rms_norm_gated_peers(timer, dtype, args.dtype, peers)
            elif op == "causal_conv1d":
                causal_conv1d_peers(timer, dtype, args.dtype, peers)
            elif op == "gated_delta_rule":
                gated_delta_rule_peers(timer, dtype, args.dtype, args.flop_bound_runs, peers)
            else:
                print(f"bench_torch_peers: unknown op '{op}'", file=sys.stderr)
                return 2
            torch.cuda.empty_cache()
    except KeyboardInterrupt:
        interrupted = "stopped by a signal: the rows measured before it are kept, later peers are absent"
        print(f"bench_torch_peers: {interrupted}", file=sys.stderr)
    if distributed is not None:
        distributed.destroy_process_group()
        if rendezvous:
            import shutil
            shutil.rmtree(rendezvous, ignore_errors=True)
    if rank == 0:
        write_report(args.out, peers, interrupted)
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
