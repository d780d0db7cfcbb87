// cross_entropy_cpu_backends.h: the kernel tables of the CPU backends, registered together by
// parity_cross_entropy_register_cpu (register_cpu.c). Internal to ops/cross_entropy.
#ifndef PARITY_CROSS_ENTROPY_CPU_BACKENDS_H
#define PARITY_CROSS_ENTROPY_CPU_BACKENDS_H

#include "ops/cross_entropy/cross_entropy.h"

extern const parity_cross_entropy_kernels parity_cross_entropy_eager_kernels;      // eager.c
extern const parity_cross_entropy_kernels parity_cross_entropy_chunk_loss_kernels; // chunk_loss.c

#endif
