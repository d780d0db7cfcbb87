#!/usr/bin/env python3
# attention_delta_noise.py: how much rounding noise lands on the gradient of a key bias under three
# ways of computing the attention backward's delta (CPU, torch, f64 with explicit bf16 rounding points).
# That gradient is exactly zero in exact arithmetic (a bias shared by every key shifts each softmax row
# by a constant), so whatever a backend reports there is noise; gpu-nightly's seed_oss_toy compares
# that noise with eager's (grad_sketch of k_proj.bias). One causal head, T = 1024, D = 128:
#   delta = rowsum(P dP) in f64;  delta = rowsum(dO * bf16(O)) (FlashAttention-2, flash/backward.cu);
#   eager-like: P, dP and delta rounded to bf16. dS is rounded to bf16 before the dK GEMM in all three.
# Usage: python3 tools/attention_delta_noise.py [--seeds N]   (needs torch; no GPU)
import argparse

import torch


def noise(seed, tokens=1024, dim=128):
    bf = lambda x: x.to(torch.bfloat16).to(torch.float64)
    g = torch.Generator().manual_seed(seed)
    q, k, v = (bf(torch.randn(tokens, dim, generator=g, dtype=torch.float64)) for _ in range(3))
    do = bf(torch.randn(tokens, dim, generator=g, dtype=torch.float64) * 0.01)
    scale = dim ** -0.5
    mask = torch.ones(tokens, tokens, dtype=torch.bool).tril()
    p = torch.softmax(((q @ k.T) * scale).masked_fill(~mask, float("-inf")), -1)
    o, dp = p @ v, do @ v.T
    bias_gradient = lambda ds: ((ds.T @ q) * scale).sum(0).norm().item()  # |sum_j dK_j|, exactly 0
    out = {}
    for name, delta in (("rowsum(P dP) f64", (p * dp).sum(-1, keepdim=True)),
                        ("rowsum(dO bf16(O)) FA2", (do * bf(o)).sum(-1, keepdim=True))):
        out[name] = bias_gradient(bf(p * (dp - delta)))
    pb, dpb = bf(p), bf(dp)
    out["eager-like bf16"] = bias_gradient(bf(pb * (dpb - bf((pb * dpb).sum(-1, keepdim=True)))))
    return out


def main():
    parser = argparse.ArgumentParser(description="noise on a key-bias gradient under three delta computations")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    for seed in range(args.seeds):
        print(f"seed {seed}: " + ", ".join(f"{k} {v:.3e}" for k, v in noise(seed).items()))


if __name__ == "__main__":
    main()
