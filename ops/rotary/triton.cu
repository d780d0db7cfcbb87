// triton.cu: rotary "triton" on CUDA: DeepSeek-V3's deterministic RoPE (VeOmni registers it through
// the model's extra_backends). Every output element depends only on its own token's position and
// values, computed in a fixed order with no reduction, so results are bitwise the same run to run and
// whatever else is in the batch. Same kernels as liger_kernel (rotary_cuda.h), with the pass-through
// of partial rotary and the interleaved layout DeepSeek-V3 uses.
#include "ops/rotary/rotary_cuda.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

const char backend_name[] = "triton";

parity_error *forward(const parity_exec *exec, const parity_rotary_args *args, parity_saved *saved) {
    return parity_rotary_cuda_forward(exec, args, saved, true, backend_name);
}

parity_error *backward(const parity_exec *exec, const parity_rotary_args *args, const parity_saved *saved,
                       const parity_rotary_grads *grads) {
    return parity_rotary_cuda_backward(exec, args, saved, grads, true, backend_name);
}

const parity_rotary_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(rotary, triton, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ROTARY;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_PARTIAL_ROTARY | PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT |
                           PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "deterministic, batch-invariant RoPE (DeepSeek-V3): per-token, no reductions, partial rotary";
    return parity_registry_add(&backend);
}
