// rotary_cuda.h: the fused CUDA rotary embedding behind "liger_kernel" and "triton" (kernels and
// launchers in rotary_cuda.cu). One block per token: the block computes the token's cos/sin from its
// position and the rope description's inverse frequencies (computed on the host exactly as the
// eager reference does, then passed by value), then rotates every query and key head of the token in
// one pass (16-byte accesses for the half-split layout). Nothing is saved: backward recomputes cos
// and sin and applies the transposed rotation.
// Per-token work with no cross-token reduction: outputs are bitwise independent of the batch.
// Rounding: cos and sin rounded to the activation dtype (HF's rotary module returns them in it, and
// Liger reads them so), the rotation in the compute precision, one rounding per output.
#ifndef PARITY_ROTARY_CUDA_H
#define PARITY_ROTARY_CUDA_H

#include <stdbool.h>

#include "ops/rotary/rotary.h"

#ifdef __cplusplus
extern "C" {
#endif

// `allow_partial` false: a rope description with partial_rotary_factor < 1 is UNSUPPORTED (Liger's
// kernel rotates the whole head). `backend` names the caller in errors. Tensors contiguous on one
// CUDA device; rotary_dim / 2 at most 256.
parity_error *parity_rotary_cuda_forward(const parity_exec *exec, const parity_rotary_args *args, parity_saved *saved,
                                         bool allow_partial, const char *backend);
parity_error *parity_rotary_cuda_backward(const parity_exec *exec, const parity_rotary_args *args,
                                          const parity_saved *saved, const parity_rotary_grads *grads,
                                          bool allow_partial, const char *backend);

#ifdef __cplusplus
}
#endif
#endif
