// test_cross_entropy.c: cross-entropy facts the table-driven engine cannot state: the loss equals a
// hand computation of mean(-log softmax), the num_items_in_batch path is sum / num_items_in_batch,
// all-ignored batches (NaN for the mean, 0 for num_items_in_batch, zero gradients), eager's logits
// output, chunk_loss refusing logits, and chunk_loss independent of the chunk size.
// The tiny case uses dyadic values, so its logits are exact in bf16, f32 and f64.
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "assert_ok.h"
#include "ops/core/cpu_math.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/registry.h"
#include "suites/tests/exec_fixture.h"

enum { TOKENS = 3, HIDDEN = 2, VOCAB = 4 };
#define IGNORED PARITY_CROSS_ENTROPY_IGNORE_INDEX

static const double tiny_hidden[TOKENS][HIDDEN] = {{1, 0.5}, {-0.25, 2}, {0.75, -1}};
static const double tiny_weight[VOCAB][HIDDEN] = {{0.5, -1}, {1, 0.25}, {-0.5, 0.5}, {0, 1}};
static const int64_t tiny_targets[TOKENS] = {1, IGNORED, 3};

typedef struct call_options {
    const char *backend;
    parity_dtype dtype;
    const int64_t *targets;
    int64_t num_items_in_batch, chunk_size;
    bool want_logits;
    double dloss;
} call_options;

typedef struct call_result {
    double loss;
    int64_t valid_count;
    double logits[TOKENS][VOCAB];
    double dhidden[TOKENS][HIDDEN];
    double dweight[VOCAB][HIDDEN];
} call_result;

// Runs forward and backward of a backend on the tiny case; returns the forward's error, if any.
static parity_error *run_tiny(call_options options, call_result *result) {
    memset(result, 0, sizeof *result);
    parity_dtype loss_dtype = parity_compute_dtype(options.dtype);
    parity_tensor hidden, weight, targets, loss, dloss, logits = {0}, dhidden, dweight;
    assert_ok(parity_tensor_alloc(&hidden, options.dtype, PARITY_CPU, PARITY_SHAPE(TOKENS, HIDDEN)), "hidden");
    assert_ok(parity_tensor_alloc(&weight, options.dtype, PARITY_CPU, PARITY_SHAPE(VOCAB, HIDDEN)), "weight");
    assert_ok(parity_tensor_alloc(&targets, PARITY_I64, PARITY_CPU, PARITY_SHAPE(TOKENS)), "targets");
    assert_ok(parity_tensor_alloc(&loss, loss_dtype, PARITY_CPU, 0, NULL), "loss");
    assert_ok(parity_tensor_alloc(&dloss, loss_dtype, PARITY_CPU, 0, NULL), "dloss");
    assert_ok(parity_tensor_alloc(&dhidden, options.dtype, PARITY_CPU, PARITY_SHAPE(TOKENS, HIDDEN)), "dhidden");
    assert_ok(parity_tensor_alloc(&dweight, options.dtype, PARITY_CPU, PARITY_SHAPE(VOCAB, HIDDEN)), "dweight");
    if (options.want_logits)
        assert_ok(parity_tensor_alloc(&logits, options.dtype, PARITY_CPU, PARITY_SHAPE(TOKENS, VOCAB)), "logits");
    parity_cpu_values_store(&hidden, &tiny_hidden[0][0]);
    parity_cpu_values_store(&weight, &tiny_weight[0][0]);
    memcpy(targets.data, options.targets ? options.targets : tiny_targets, sizeof tiny_targets);
    parity_tensor_set(&dloss, 0, options.dloss ? options.dloss : 1.0);

    const parity_backend *backend;
    assert_ok(parity_registry_register_builtins(), "registering");
    assert_ok(parity_registry_resolve(PARITY_OP_CROSS_ENTROPY, options.backend, PARITY_CPU, &backend), "resolving");
    const parity_cross_entropy_kernels *kernels = backend->kernels;
    parity_cross_entropy_args args = {
        .hidden = &hidden, .weight = &weight, .targets = &targets, .ignore_index = IGNORED,
        .num_items_in_batch = options.num_items_in_batch, .chunk_size = options.chunk_size, .loss = &loss,
        .logits = options.want_logits ? &logits : NULL, .valid_count = &result->valid_count,
    };
    parity_saved saved = {0};
    parity_error *error = kernels->forward(parity_test_exec(PARITY_CPU), &args, &saved);
    if (!error) {
        parity_cross_entropy_grads grads = {&dloss, &dhidden, &dweight};
        assert_ok(kernels->backward(parity_test_exec(PARITY_CPU), &args, &saved, &grads), "backward");
        result->loss = parity_tensor_get(&loss, 0);
        for (int64_t i = 0; i < TOKENS * HIDDEN; i++) (&result->dhidden[0][0])[i] = parity_tensor_get(&dhidden, i);
        for (int64_t i = 0; i < VOCAB * HIDDEN; i++) (&result->dweight[0][0])[i] = parity_tensor_get(&dweight, i);
        if (options.want_logits)
            for (int64_t i = 0; i < TOKENS * VOCAB; i++) (&result->logits[0][0])[i] = parity_tensor_get(&logits, i);
    }
    parity_saved_release(&saved);
    parity_tensor *all[] = {&hidden, &weight, &targets, &loss, &dloss, &logits, &dhidden, &dweight};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_tensor_release(all[i]);
    return error;
}

static double hand_logit(int token, int vocab_id) {
    return tiny_hidden[token][0] * tiny_weight[vocab_id][0] + tiny_hidden[token][1] * tiny_weight[vocab_id][1];
}

// -log softmax(logits[token])[target], straight from the definition.
static double hand_negative_log_probability(int token, int target) {
    double sum = 0;
    for (int j = 0; j < VOCAB; j++) sum += exp(hand_logit(token, j));
    return -(hand_logit(token, target) - log(sum));
}

// d(sum of -log p over valid tokens)/d(hidden[token][k]) = sum_j (softmax_j - onehot_j) * weight[j][k]
static double hand_dhidden_of_sum(int token, int k) {
    if (tiny_targets[token] == IGNORED) return 0;
    double sum = 0, gradient = 0;
    for (int j = 0; j < VOCAB; j++) sum += exp(hand_logit(token, j));
    for (int j = 0; j < VOCAB; j++)
        gradient += (exp(hand_logit(token, j)) / sum - (j == tiny_targets[token])) * tiny_weight[j][k];
    return gradient;
}

static double hand_nll_sum(void) {
    return hand_negative_log_probability(0, 1) + hand_negative_log_probability(2, 3); // token 1 is ignored
}

static const char *const backends[] = {"eager", "chunk_loss"};

Test(cross_entropy, loss_is_the_mean_of_negative_log_softmax) {
    double expected = hand_nll_sum() / 2;
    for (size_t b = 0; b < 2; b++) {
        call_result result;
        assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = PARITY_F64, .chunk_size = 2}, &result),
                      backends[b]);
        cr_log_info("%s: loss %.17g, hand %.17g", backends[b], result.loss, expected);
        cr_expect(fabs(result.loss - expected) <= 1e-15 * expected, "%s: loss %.17g, hand %.17g", backends[b], result.loss,
                  expected);
        cr_expect_eq(result.valid_count, 2, "%s: valid count %lld, expected 2", backends[b], (long long)result.valid_count);
        for (int t = 0; t < TOKENS; t++)
            for (int k = 0; k < HIDDEN; k++)
                cr_expect(fabs(result.dhidden[t][k] - hand_dhidden_of_sum(t, k) / 2) <= 1e-15, "%s: dhidden[%d][%d] %.17g, hand %.17g",
                          backends[b], t, k, result.dhidden[t][k], hand_dhidden_of_sum(t, k) / 2);
        call_result single;
        assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = PARITY_F32}, &single), backends[b]);
        cr_expect(fabs(single.loss - expected) <= 1e-6 * expected, "%s f32: loss %.9g, hand %.9g", backends[b], single.loss,
                  expected);
    }
}

Test(cross_entropy, num_items_in_batch_divides_the_sum) {
    double expected = hand_nll_sum() / 5;
    for (size_t b = 0; b < 2; b++) {
        call_result mean, summed;
        assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = PARITY_F64}, &mean), backends[b]);
        assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = PARITY_F64, .num_items_in_batch = 5,
                                              .chunk_size = 1},
                               &summed),
                      backends[b]);
        cr_expect(fabs(summed.loss - expected) <= 1e-15 * expected, "%s: loss %.17g, expected sum / 5 = %.17g", backends[b],
                  summed.loss, expected);
        // gradients scale by count / num_items_in_batch = 2 / 5
        for (int t = 0; t < TOKENS; t++)
            for (int k = 0; k < HIDDEN; k++)
                cr_expect(fabs(summed.dhidden[t][k] - mean.dhidden[t][k] * 2 / 5) <= 1e-15, "%s: dhidden[%d][%d]",
                          backends[b], t, k);
        for (int v = 0; v < VOCAB; v++)
            for (int k = 0; k < HIDDEN; k++)
                cr_expect(fabs(summed.dweight[v][k] - mean.dweight[v][k] * 2 / 5) <= 1e-15, "%s: dweight[%d][%d]",
                          backends[b], v, k);
    }
}

// PyTorch's mean over zero elements is NaN (0 / 0); the num_items_in_batch path gives 0 / n = 0.
// Either way no target contributes, so every gradient is exactly 0.
Test(cross_entropy, all_ignored_targets_give_nan_mean_zero_sum_and_zero_gradients) {
    static const int64_t none[TOKENS] = {IGNORED, IGNORED, IGNORED};
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    for (size_t b = 0; b < 2; b++) {
        for (size_t d = 0; d < 3; d++) {
            for (int64_t num_items = 0; num_items <= 4; num_items += 4) {
                call_result result;
                assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = dtypes[d], .targets = none,
                                                      .num_items_in_batch = num_items},
                                       &result),
                              backends[b]);
                const char *dtype = parity_dtype_name(dtypes[d]);
                if (num_items == 0)
                    cr_expect(isnan(result.loss), "%s %s: mean over no target is %g, expected NaN", backends[b], dtype,
                              result.loss);
                else
                    cr_expect(result.loss == 0, "%s %s: sum / num_items_in_batch over no target is %g", backends[b], dtype,
                              result.loss);
                cr_expect_eq(result.valid_count, 0);
                for (int i = 0; i < TOKENS * HIDDEN; i++)
                    cr_expect((&result.dhidden[0][0])[i] == 0, "%s %s: dhidden[%d] = %g", backends[b], dtype, i,
                              (&result.dhidden[0][0])[i]);
                for (int i = 0; i < VOCAB * HIDDEN; i++)
                    cr_expect((&result.dweight[0][0])[i] == 0, "%s %s: dweight[%d] = %g", backends[b], dtype, i,
                              (&result.dweight[0][0])[i]);
            }
        }
    }
}

Test(cross_entropy, eager_fills_logits_in_every_dtype) {
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    for (size_t d = 0; d < 3; d++) {
        call_result result;
        assert_ok(run_tiny((call_options){.backend = "eager", .dtype = dtypes[d], .want_logits = true}, &result), "eager");
        for (int t = 0; t < TOKENS; t++)
            for (int j = 0; j < VOCAB; j++)
                cr_expect(result.logits[t][j] == hand_logit(t, j), "%s: logits[%d][%d] = %.17g, expected %.17g",
                          parity_dtype_name(dtypes[d]), t, j, result.logits[t][j], hand_logit(t, j));
    }
}

Test(cross_entropy, chunk_loss_refuses_to_materialize_logits) {
    call_result result;
    parity_error *error = run_tiny((call_options){.backend = "chunk_loss", .dtype = PARITY_F32, .want_logits = true}, &result);
    cr_assert(error != NULL, "chunk_loss accepted a logits output");
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNSUPPORTED);
    cr_expect(strstr(parity_error_message(error), "cross_entropy: chunk_loss never materializes logits") != NULL, "%s",
              parity_error_message(error));
    parity_error_free(error);
}

Test(cross_entropy, chunk_loss_is_independent_of_the_chunk_size) {
    call_result eager;
    assert_ok(run_tiny((call_options){.backend = "eager", .dtype = PARITY_F64}, &eager), "eager");
    const int64_t chunk_sizes[] = {1, 2, 3, 1024};
    for (size_t c = 0; c < 4; c++) {
        call_result chunked;
        assert_ok(run_tiny((call_options){.backend = "chunk_loss", .dtype = PARITY_F64, .chunk_size = chunk_sizes[c]},
                               &chunked),
                      "chunk_loss");
        cr_expect(fabs(chunked.loss - eager.loss) <= 1e-15 * eager.loss, "chunk %lld: loss %.17g, eager %.17g",
                  (long long)chunk_sizes[c], chunked.loss, eager.loss);
        for (int i = 0; i < VOCAB * HIDDEN; i++)
            cr_expect(fabs((&chunked.dweight[0][0])[i] - (&eager.dweight[0][0])[i]) <= 1e-15, "chunk %lld: dweight[%d]",
                      (long long)chunk_sizes[c], i);
    }
}

// chunk_loss computes its gradients in the forward for dloss = 1; backward only rescales them.
Test(cross_entropy, backward_scales_with_dloss) {
    for (size_t b = 0; b < 2; b++) {
        call_result unit, scaled;
        assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = PARITY_F64, .chunk_size = 2}, &unit),
                      backends[b]);
        assert_ok(run_tiny((call_options){.backend = backends[b], .dtype = PARITY_F64, .chunk_size = 2, .dloss = -2.5},
                               &scaled),
                      backends[b]);
        for (int i = 0; i < TOKENS * HIDDEN; i++)
            cr_expect(fabs((&scaled.dhidden[0][0])[i] + 2.5 * (&unit.dhidden[0][0])[i]) <= 1e-15, "%s: dhidden[%d]",
                      backends[b], i);
        for (int i = 0; i < VOCAB * HIDDEN; i++)
            cr_expect(fabs((&scaled.dweight[0][0])[i] + 2.5 * (&unit.dweight[0][0])[i]) <= 1e-15, "%s: dweight[%d]",
                      backends[b], i);
    }
}
