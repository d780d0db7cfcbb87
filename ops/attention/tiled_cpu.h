// tiled_cpu.h: the CPU's tiled online-softmax attention kernels (sdpa.c), which two values share:
// "sdpa" and "flash_attention_2" on the CPU are both the FlashAttention-2 algorithm (16 x 16 tiles,
// running max and sum, lse saved, a recomputing backward, key blocks outer).
#ifndef PARITY_ATTENTION_TILED_CPU_H
#define PARITY_ATTENTION_TILED_CPU_H

#include "ops/attention/attention.h"

extern const parity_attention_kernels parity_attention_tiled_cpu_kernels;

#endif
