// triton.cu: RMSNorm "triton" on CUDA: DeepSeek-V3's batch-invariant RMSNorm (VeOmni registers it
// through the model's extra_backends). Each row is reduced by one thread group whose layout depends
// on hidden and the dtype only, so y and dx of a row are bitwise the same whatever else is in the
// batch; dw sums fixed 64-row tiles in a fixed order, so it is bitwise the same on any device.
// Same one-pass kernels as liger_kernel (rms_norm_cuda.h), FIXED_TILES policy.
#include "ops/rms_norm/rms_norm_cuda.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

const char backend_name[] = "triton";

parity_error *forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    return parity_rms_norm_cuda_forward(exec, args, saved, backend_name);
}

parity_error *backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                       const parity_rms_norm_grads *grads) {
    return parity_rms_norm_cuda_backward(exec, args, saved, grads, PARITY_RMS_NORM_CUDA_FIXED_TILES, backend_name);
}

const parity_rms_norm_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(rms_norm, triton, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_OFFSET_WEIGHT | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "batch-invariant RMSNorm (DeepSeek-V3): row layout fixed by hidden, dw in fixed 64-row tiles";
    return parity_registry_add(&backend);
}
