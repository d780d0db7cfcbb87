// chunk_loss.cu: cross-entropy "chunk_loss" on CUDA (VeOmni's ChunkLoss, the GPU twin of chunk_loss.c):
// chunks of args->chunk_size tokens (PARITY_CROSS_ENTROPY_DEFAULT_CHUNK when 0), gradients computed in
// the forward chunk by chunk, the loss accumulated as sum_chunk / divisor in chunk order, dweight
// accumulated in the activation dtype (fused_linear_cuda.h). Never materializes logits.
#include "ops/cross_entropy/fused_linear_cuda.h"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

const char backend_name[] = "chunk_loss";

parity_error *forward(const parity_exec *exec, const parity_cross_entropy_args *args, parity_saved *saved) {
    int64_t chunk = args->chunk_size > 0 ? args->chunk_size : PARITY_CROSS_ENTROPY_DEFAULT_CHUNK;
    return parity_cross_entropy_cuda_fused_forward(exec, args, saved, chunk, true, backend_name);
}

parity_error *backward(const parity_exec *exec, const parity_cross_entropy_args *args, const parity_saved *saved,
                       const parity_cross_entropy_grads *grads) {
    return parity_cross_entropy_cuda_fused_backward(exec, args, saved, grads, backend_name);
}

const parity_cross_entropy_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(cross_entropy, chunk_loss, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_CROSS_ENTROPY;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_FUSED_LINEAR | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "VeOmni chunked loss on the GPU: chunk_size-token chunks, gradients in the forward, no full logits";
    return parity_registry_add(&backend);
}
