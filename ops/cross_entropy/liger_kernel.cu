// liger_kernel.cu: cross-entropy "liger_kernel" on CUDA (Liger's fused linear cross-entropy): the
// chunked forward of fused_linear_cuda.h that produces dhidden and dweight while it computes the loss,
// never holding the full (N, V) logits, with chunks sized to keep one chunk of logits within
// PARITY_CROSS_ENTROPY_LIGER_CHUNK_BYTES; the loss is one fixed-order sum over all tokens / divisor.
// The backward rescales the saved gradients by dloss. Asked for logits, it answers UNSUPPORTED.
#include "ops/cross_entropy/fused_linear_cuda.h"

extern "C" {
#include "ops/core/dtype.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

const char backend_name[] = "liger_kernel";

parity_error *forward(const parity_exec *exec, const parity_cross_entropy_args *args, parity_saved *saved) {
    int64_t tokens = args->hidden && args->hidden->ndim == 2 ? args->hidden->shape[0] : 1;
    int64_t vocab = args->weight && args->weight->ndim == 2 ? args->weight->shape[0] : 1;
    size_t element = args->hidden ? parity_dtype_size(args->hidden->dtype) : 2;
    int64_t chunk = parity_cross_entropy_liger_chunk_tokens(tokens, vocab > 0 ? vocab : 1, element ? element : 2);
    return parity_cross_entropy_cuda_fused_forward(exec, args, saved, chunk, false, backend_name);
}

parity_error *backward(const parity_exec *exec, const parity_cross_entropy_args *args, const parity_saved *saved,
                       const parity_cross_entropy_grads *grads) {
    return parity_cross_entropy_cuda_fused_backward(exec, args, saved, grads, backend_name);
}

const parity_cross_entropy_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(cross_entropy, liger_kernel, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_CROSS_ENTROPY;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_FUSED_LINEAR | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused linear + cross-entropy: token chunks of <= 288 MiB of logits, gradients in the forward";
    return parity_registry_add(&backend);
}
