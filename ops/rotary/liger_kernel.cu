// liger_kernel.cu: rotary "liger_kernel" on CUDA (liger_rotary_pos_emb): query and key rotated in one
// pass per token (rotary_cuda.h). Like Liger's kernel it rotates whole heads: a rope description with
// partial_rotary_factor < 1 is reported UNSUPPORTED (no PARTIAL_ROTARY capability), so models such as
// Qwen3.5 report "not supported" for this value, as the seed says. Half-split and interleaved layouts.
#include "ops/rotary/rotary_cuda.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

const char backend_name[] = "liger_kernel";

parity_error *forward(const parity_exec *exec, const parity_rotary_args *args, parity_saved *saved) {
    return parity_rotary_cuda_forward(exec, args, saved, false, backend_name);
}

parity_error *backward(const parity_exec *exec, const parity_rotary_args *args, const parity_saved *saved,
                       const parity_rotary_grads *grads) {
    return parity_rotary_cuda_backward(exec, args, saved, grads, false, backend_name);
}

const parity_rotary_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(rotary, liger_kernel, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ROTARY;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused RoPE on query and key, one pass per token, full rotary only, f64/f32/bf16";
    return parity_registry_add(&backend);
}
