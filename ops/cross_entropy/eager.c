// eager.c: the reference cross-entropy on the CPU (value "eager"), as HF's ForCausalLM computes it
// on the GPU (VeOmni eager_cross_entropy -> fixed_cross_entropy -> F.cross_entropy):
//   logits = hidden @ weight^T                   activation dtype (bf16 GEMM, f32 accumulation)
//   logp   = log_softmax(logits.float())         f32 for f32/bf16 runs, f64 for f64
//   loss   = sum(-logp[i, t_i] over valid i) / divisor,  divisor = num_items_in_batch or valid count
// The full (N, V) logits exist here by design; they fill args->logits when asked.
// Saves logp (N, V) in the compute precision for backward.
//
// Backward: g = -(dloss / divisor) on valid rows; dlogits = g * (onehot - softmax), rounded to the
// activation dtype (the .float() cast's backward); dhidden = dlogits @ W, dweight = dlogits^T @ hidden.
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/cross_entropy/cross_entropy_cpu.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *cross_entropy_eager_forward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                                 parity_saved *saved) {
    int64_t tokens, hidden, vocab, valid_count;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_TRY(parity_check_cpu("cross_entropy", "hidden", args->hidden));
    PARITY_TRY(parity_check_cpu("cross_entropy", "weight", args->weight));
    int64_t *targets;
    PARITY_TRY(parity_cross_entropy_load_targets(args, vocab, &targets, &valid_count));
    parity_dtype dtype = args->hidden->dtype;
    parity_tensor *saved_log_probs;
    parity_error *error = parity_saved_alloc(saved, &saved_log_probs, parity_compute_dtype(dtype), PARITY_CPU,
                                             PARITY_SHAPE(tokens, vocab));
    if (error) {
        free(targets);
        return error;
    }

    parity_cpu_values h = {0}, w = {0}, logits = {0}, log_probs = {0};
    error = parity_cpu_values_load(args->hidden, "cross_entropy hidden", &h);
    if (!error) error = parity_cpu_values_load(args->weight, "cross_entropy weight", &w);
    if (!error) error = parity_cpu_values_new(tokens * vocab, &logits);
    if (!error) error = parity_cpu_values_new(tokens * vocab, &log_probs);
    if (!error) error = parity_cross_entropy_cpu_gemm(dtype, false, true, tokens, vocab, hidden, h.data, w.data, logits.data);
    if (!error) {
        parity_cross_entropy_cpu_log_softmax(dtype, tokens, vocab, logits.data, log_probs.data);
        double sum = parity_cross_entropy_cpu_nll_sum(dtype, tokens, vocab, log_probs.data, targets, args->ignore_index);
        double divisor = parity_cross_entropy_cpu_divisor(dtype, args->num_items_in_batch, valid_count);
        parity_tensor_set(args->loss, 0, parity_round_compute(sum / divisor, dtype)); // 0 / 0 = NaN, as PyTorch
        parity_cpu_values_store(saved_log_probs, log_probs.data);
        if (args->logits) parity_cpu_values_store(args->logits, logits.data);
        if (args->valid_count) *args->valid_count = valid_count;
    }
    parity_cpu_values_free(&h);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&logits);
    parity_cpu_values_free(&log_probs);
    free(targets);
    return error;
}

static parity_error *cross_entropy_eager_backward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                                  const parity_saved *saved, const parity_cross_entropy_grads *grads) {
    int64_t tokens, hidden, vocab, valid_count;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_TRY(parity_cross_entropy_check_grads(args, grads));
    const parity_tensor *saved_log_probs;
    PARITY_TRY(parity_saved_get(saved, 0, &saved_log_probs));
    int64_t *targets;
    PARITY_TRY(parity_cross_entropy_load_targets(args, vocab, &targets, &valid_count));
    parity_dtype dtype = args->hidden->dtype;
    double divisor = parity_cross_entropy_cpu_divisor(dtype, args->num_items_in_batch, valid_count);
    double g = -parity_round_compute(parity_tensor_get(grads->dloss, 0) / divisor, dtype);

    parity_cpu_values h = {0}, w = {0}, log_probs = {0}, dlogits = {0}, dh = {0}, dw = {0};
    parity_error *error = parity_cpu_values_load(args->hidden, "cross_entropy hidden", &h);
    if (!error) error = parity_cpu_values_load(args->weight, "cross_entropy weight", &w);
    if (!error) error = parity_cpu_values_load(saved_log_probs, "cross_entropy saved log_probs", &log_probs);
    if (!error) error = parity_cpu_values_new(tokens * vocab, &dlogits);
    if (!error) error = parity_cpu_values_new(tokens * hidden, &dh);
    if (!error) error = parity_cpu_values_new(vocab * hidden, &dw);
    if (!error)
        parity_cross_entropy_cpu_dlogits(dtype, tokens, vocab, log_probs.data, targets, args->ignore_index, g, dlogits.data);
    if (!error && grads->dhidden)
        error = parity_cross_entropy_cpu_gemm(dtype, false, false, tokens, hidden, vocab, dlogits.data, w.data, dh.data);
    if (!error && grads->dweight)
        error = parity_cross_entropy_cpu_gemm(dtype, true, false, vocab, hidden, tokens, dlogits.data, h.data, dw.data);
    if (!error && grads->dhidden) parity_cpu_values_store(grads->dhidden, dh.data);
    if (!error && grads->dweight) parity_cpu_values_store(grads->dweight, dw.data);
    parity_cpu_values_free(&h);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&log_probs);
    parity_cpu_values_free(&dlogits);
    parity_cpu_values_free(&dh);
    parity_cpu_values_free(&dw);
    free(targets);
    return error;
}

static const parity_cross_entropy_kernels cross_entropy_eager_kernels = {cross_entropy_eager_forward,
                                                                         cross_entropy_eager_backward};

// Per-token math reduced with an explicit divisor, so it would be safe under sequence and expert
// parallelism with the global num_items_in_batch; not flagged so until multi-rank code exists to test it
// (test_capability_claims.c). Not batch invariant: the mean divides by the
// batch's valid count and GEMM blocking depends on N.
PARITY_BACKEND_REGISTRATION(cross_entropy, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_CROSS_ENTROPY,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC,
        .kernels = &cross_entropy_eager_kernels,
        .description = "reference cross-entropy: full logits, f32 log-softmax, mean or sum / num_items_in_batch",
    });
}
