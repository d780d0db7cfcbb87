// rms_norm_cuda.h: the fused CUDA RMSNorm behind the "liger_kernel" and "triton" backends
// (kernels and launchers in rms_norm_cuda.cu). One pass over the data each way:
//   forward:  one row group of threads per row holds the row in registers, sums x^2 once, writes y
//             and the row's inverse rms (saved, compute precision);
//   backward: each block walks a range of rows, writes dx from one read of x and dy, and keeps its
//             columns' share of dw in registers; x and dy of its next rows stream into shared memory
//             (bulk asynchronous copies, aligned tensors), so loads stay in flight through each row's
//             reduction; a second small kernel sums the per-block partials in a fixed order (the
//             two-stage dw reduction).
// The row layout depends on hidden and the dtype only, so y and dx of a row are bitwise the same in
// any batch. The policies differ in how dw is split:
//   PERSISTENT   one block per resident slot of the device (Liger: grid = SMs x occupancy); dw is
//                bitwise repeatable on one device, its rounding depends on the SM count (and on
//                the tensors' 16-byte alignment, which picks the kernel and so its occupancy)
//   FIXED_TILES  64-row tiles whatever the device (the batch-invariant "triton" backend): dw is
//                bitwise the same on any device for the same rows
// Rounding follows the eager reference (HF): x_hat = x * inv in the compute precision; standard
// y = w * round_to_dtype(x_hat), offset y = x_hat * (1 + w); backward in the compute precision.
#ifndef PARITY_RMS_NORM_CUDA_H
#define PARITY_RMS_NORM_CUDA_H

#include "ops/rms_norm/rms_norm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_rms_norm_cuda_policy {
    PARITY_RMS_NORM_CUDA_PERSISTENT = 0,
    PARITY_RMS_NORM_CUDA_FIXED_TILES,
} parity_rms_norm_cuda_policy;

// `backend` names the calling backend in error messages. Tensors must be contiguous on one CUDA
// device; rows too long for one block's registers are UNSUPPORTED.
parity_error *parity_rms_norm_cuda_forward(const parity_exec *exec, const parity_rms_norm_args *args,
                                           parity_saved *saved, const char *backend);
parity_error *parity_rms_norm_cuda_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                            const parity_saved *saved, const parity_rms_norm_grads *grads,
                                            parity_rms_norm_cuda_policy policy, const char *backend);

#ifdef __cplusplus
}
#endif
#endif
