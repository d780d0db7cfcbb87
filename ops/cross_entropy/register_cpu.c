// register_cpu.c: registers the CPU cross-entropy backends, "eager" (the reference) and
// "chunk_loss" (VeOmni's chunked loss, which never holds the full logits).
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/cross_entropy/cross_entropy_cpu_backends.h"
#include "ops/registry.h"

parity_error *parity_cross_entropy_register_cpu(void) {
    // Both are per-token math reduced with an explicit divisor, so they are safe under sequence and
    // expert parallelism when the caller passes the global num_items_in_batch. Neither claims batch
    // invariance: the mean divides by the batch's valid count and GEMM blocking depends on N.
    const uint32_t common = PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    PARITY_TRY(parity_registry_add(&(parity_backend){
        .op = PARITY_OP_CROSS_ENTROPY,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = common,
        .kernels = &parity_cross_entropy_eager_kernels,
        .description = "reference cross-entropy: full logits, f32 log-softmax, mean or sum / num_items_in_batch",
    }));
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_CROSS_ENTROPY,
        .name = "chunk_loss",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = common | PARITY_CAP_FUSED_LINEAR,
        .kernels = &parity_cross_entropy_chunk_loss_kernels,
        .description = "VeOmni chunked loss: per-chunk logits, gradients computed in the forward, never full logits",
    });
}
