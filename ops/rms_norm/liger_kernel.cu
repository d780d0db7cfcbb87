// liger_kernel.cu: RMSNorm "liger_kernel" on CUDA (LigerRMSNorm's algorithm): the fused one-pass
// forward and backward of rms_norm_cuda.h, standard and (1 + w) offset weights, with Liger's dw
// split: one partial per resident block of the device (grid = SMs x occupancy), summed by a second
// kernel. Bitwise repeatable on one device; not claimed batch invariant (the "triton" backend is).
#include "ops/rms_norm/rms_norm_cuda.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

const char backend_name[] = "liger_kernel";

parity_error *forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    return parity_rms_norm_cuda_forward(exec, args, saved, backend_name);
}

parity_error *backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                       const parity_rms_norm_grads *grads) {
    return parity_rms_norm_cuda_backward(exec, args, saved, grads, PARITY_RMS_NORM_CUDA_PERSISTENT, backend_name);
}

const parity_rms_norm_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(rms_norm, liger_kernel, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_OFFSET_WEIGHT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused one-pass RMSNorm (standard and (1 + w) offset), dw in per-SM partials, f64/f32/bf16";
    return parity_registry_add(&backend);
}
