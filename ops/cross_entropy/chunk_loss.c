// chunk_loss.c: VeOmni's chunked cross-entropy (value "chunk_loss", veomni/ops/kernels/cross_entropy/
// chunk_loss.py, ChunkLoss). The forward walks the tokens chunk by chunk; for each chunk it computes
// the chunk's logits, its loss contribution sum_chunk / divisor, AND its gradients as if dloss = 1
// (dhidden rows of the chunk, dweight accumulated), and keeps only those gradients. The full (N, V)
// logits never exist: memory is O(chunk * V) plus the two gradients. Backward only rescales the saved
// gradients by the incoming dloss.
//
// Rounding follows the PyTorch path: each chunk is eager cross-entropy with reduction "sum" divided by
// the divisor (the chunk loss is f32), the total loss is an f32 accumulation of chunk losses, the
// weight gradient is accumulated in the activation dtype (grad_weight = zeros_like(weight), bf16 for
// bf16 runs), and backward multiplies the bf16 gradients by the f32 dloss, rounding to bf16.
//
// Differences from VeOmni, on purpose: chunks run over the flattened N tokens (VeOmni splits the
// sequence dimension of (B, T, H), so a chunk holds B x chunk tokens; only the rounding order differs),
// and the divisor follows this op's contract (num_items_in_batch when > 0, else the valid count),
// where VeOmni always divides by the local valid count. With no valid target the loss is NaN (mean)
// or 0 (num_items_in_batch) and the gradients are 0, as eager.
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/cross_entropy/cross_entropy_cpu.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

typedef struct chunk_buffers {
    parity_cpu_values hidden, weight;  // (N, H), (V, H)
    parity_cpu_values logits, log_probs, dlogits; // (chunk, V)
    parity_cpu_values dhidden_chunk;   // (chunk, H)
    parity_cpu_values dweight_chunk;   // (V, H)
    parity_cpu_values dweight;         // (V, H) accumulated in the storage dtype
} chunk_buffers;

static parity_error *chunk_buffers_new(const parity_cross_entropy_args *args, int64_t chunk, int64_t hidden,
                                       int64_t vocab, chunk_buffers *buffers) {
    PARITY_TRY(parity_cpu_values_load(args->hidden, "cross_entropy hidden", &buffers->hidden));
    PARITY_TRY(parity_cpu_values_load(args->weight, "cross_entropy weight", &buffers->weight));
    PARITY_TRY(parity_cpu_values_new(chunk * vocab, &buffers->logits));
    PARITY_TRY(parity_cpu_values_new(chunk * vocab, &buffers->log_probs));
    PARITY_TRY(parity_cpu_values_new(chunk * vocab, &buffers->dlogits));
    PARITY_TRY(parity_cpu_values_new(chunk * hidden, &buffers->dhidden_chunk));
    PARITY_TRY(parity_cpu_values_new(vocab * hidden, &buffers->dweight_chunk));
    PARITY_TRY(parity_cpu_values_new(vocab * hidden, &buffers->dweight));
    return NULL;
}

static void chunk_buffers_free(chunk_buffers *buffers) {
    parity_cpu_values_free(&buffers->hidden);
    parity_cpu_values_free(&buffers->weight);
    parity_cpu_values_free(&buffers->logits);
    parity_cpu_values_free(&buffers->log_probs);
    parity_cpu_values_free(&buffers->dlogits);
    parity_cpu_values_free(&buffers->dhidden_chunk);
    parity_cpu_values_free(&buffers->dweight_chunk);
    parity_cpu_values_free(&buffers->dweight);
}

// One chunk of rows [start, start + rows): adds its loss to *loss, writes its dhidden rows into
// saved_dhidden and accumulates its dweight, all for dloss = 1.
static parity_error *chunk_step(const parity_cross_entropy_args *args, const int64_t *targets, int64_t start,
                                int64_t rows, int64_t hidden, int64_t vocab, double divisor, chunk_buffers *buffers,
                                parity_tensor *saved_dhidden, double *loss) {
    parity_dtype dtype = args->hidden->dtype;
    const double *hidden_rows = buffers->hidden.data + start * hidden;
    const int64_t *chunk_targets = targets + start;
    PARITY_TRY(parity_cross_entropy_cpu_gemm(dtype, false, true, rows, vocab, hidden, hidden_rows, buffers->weight.data,
                                             buffers->logits.data));
    parity_cross_entropy_cpu_log_softmax(dtype, rows, vocab, buffers->logits.data, buffers->log_probs.data);
    double sum = parity_cross_entropy_cpu_nll_sum(dtype, rows, vocab, buffers->log_probs.data, chunk_targets,
                                                  args->ignore_index);
    *loss = parity_round_compute(*loss + parity_round_compute(sum / divisor, dtype), dtype);

    double g = -parity_round_compute(1.0 / divisor, dtype); // d(sum / divisor)/d(sum) with dloss = 1, negated by the NLL
    parity_cross_entropy_cpu_dlogits(dtype, rows, vocab, buffers->log_probs.data, chunk_targets, args->ignore_index, g,
                                     buffers->dlogits.data);
    PARITY_TRY(parity_cross_entropy_cpu_gemm(dtype, false, false, rows, hidden, vocab, buffers->dlogits.data,
                                             buffers->weight.data, buffers->dhidden_chunk.data));
    PARITY_TRY(parity_cross_entropy_cpu_gemm(dtype, true, false, vocab, hidden, rows, buffers->dlogits.data, hidden_rows,
                                             buffers->dweight_chunk.data));
    for (int64_t i = 0; i < rows * hidden; i++)
        parity_tensor_set(saved_dhidden, start * hidden + i, buffers->dhidden_chunk.data[i]);
    for (int64_t i = 0; i < vocab * hidden; i++) // grad_weight.add_(chunk_grad_weight), in the storage dtype
        buffers->dweight.data[i] = parity_round_storage(
            parity_round_compute(buffers->dweight.data[i] + buffers->dweight_chunk.data[i], dtype), dtype);
    return NULL;
}

static parity_error *chunk_loss_forward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                        parity_saved *saved) {
    int64_t tokens, hidden, vocab, valid_count;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_CHECK(!args->logits, PARITY_ERROR_UNSUPPORTED,
                 "cross_entropy: chunk_loss never materializes logits; pass logits = NULL (eager can fill them)");
    PARITY_TRY(parity_check_cpu("cross_entropy", "hidden", args->hidden));
    PARITY_TRY(parity_check_cpu("cross_entropy", "weight", args->weight));
    int64_t *targets;
    PARITY_TRY(parity_cross_entropy_load_targets(args, vocab, &targets, &valid_count));
    parity_dtype dtype = args->hidden->dtype;
    int64_t chunk = args->chunk_size ? args->chunk_size : PARITY_CROSS_ENTROPY_DEFAULT_CHUNK;
    if (chunk > tokens) chunk = tokens;

    parity_tensor *saved_dhidden, *saved_dweight;
    chunk_buffers buffers = {0};
    parity_error *error = parity_saved_alloc(saved, &saved_dhidden, dtype, PARITY_CPU, PARITY_SHAPE(tokens, hidden));
    if (!error) error = parity_saved_alloc(saved, &saved_dweight, dtype, PARITY_CPU, PARITY_SHAPE(vocab, hidden));
    if (!error) error = chunk_buffers_new(args, chunk, hidden, vocab, &buffers);
    double divisor = parity_cross_entropy_cpu_divisor(dtype, args->num_items_in_batch, valid_count);
    double loss = 0;
    for (int64_t start = 0; !error && start < tokens; start += chunk) {
        int64_t rows = tokens - start < chunk ? tokens - start : chunk;
        error = chunk_step(args, targets, start, rows, hidden, vocab, divisor, &buffers, saved_dhidden, &loss);
    }
    if (!error) {
        parity_cpu_values_store(saved_dweight, buffers.dweight.data);
        parity_tensor_set(args->loss, 0, loss);
        if (args->valid_count) *args->valid_count = valid_count;
    }
    chunk_buffers_free(&buffers);
    free(targets);
    return error;
}

// Saved gradients times dloss: bf16 tensor * f32 scalar computes in f32 and rounds to bf16.
static void rescale_into(parity_tensor *destination, const parity_tensor *saved_gradient, double dloss) {
    parity_dtype dtype = saved_gradient->dtype;
    for (int64_t i = 0; i < saved_gradient->numel; i++)
        parity_tensor_set(destination, i, parity_round_compute(parity_tensor_get(saved_gradient, i) * dloss, dtype));
}

static parity_error *chunk_loss_backward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                         const parity_saved *saved, const parity_cross_entropy_grads *grads) {
    int64_t tokens, hidden, vocab;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_TRY(parity_cross_entropy_check_grads(args, grads));
    const parity_tensor *saved_dhidden, *saved_dweight;
    PARITY_TRY(parity_saved_get(saved, 0, &saved_dhidden));
    PARITY_TRY(parity_saved_get(saved, 1, &saved_dweight));
    double dloss = parity_tensor_get(grads->dloss, 0);
    if (grads->dhidden) rescale_into(grads->dhidden, saved_dhidden, dloss);
    if (grads->dweight) rescale_into(grads->dweight, saved_dweight, dloss);
    return NULL;
}

static const parity_cross_entropy_kernels chunk_loss_kernels = {chunk_loss_forward, chunk_loss_backward};

// Per-token math, as eager, reduced with an explicit divisor, so it would be safe under sequence and expert
// parallelism with the global num_items_in_batch; not flagged so until multi-rank code exists to test it
// (test_capability_claims.c). Not batch invariant: the mean divides by the
// batch's valid count and GEMM blocking depends on N.
PARITY_BACKEND_REGISTRATION(cross_entropy, chunk_loss, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_CROSS_ENTROPY,
        .name = "chunk_loss",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_FUSED_LINEAR,
        .kernels = &chunk_loss_kernels,
        .description = "VeOmni chunked loss: per-chunk logits, gradients computed in the forward, never full logits",
    });
}
