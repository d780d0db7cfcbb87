// cases_cross_entropy.c: cross-entropy rows (prime vocabulary, one token, ignored targets, the
// num_items_in_batch path, chunk sizes that do not divide N) and invalid calls.
// The rows never request logits: chunk_loss cannot produce them, and every row is also compared
// between eager and chunk_loss. Eager's logits output and the all-ignored mean (a NaN loss, which
// finite differences cannot check) are tested in test_cross_entropy.c.
// The loss is smooth in hidden and weight (log-softmax of a linear map), so finite differences
// cross no discontinuity.
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/testing/op_cases.h"

#define IGNORED PARITY_CROSS_ENTROPY_IGNORE_INDEX

typedef struct cross_entropy_params {
    int64_t tokens, hidden, vocab;
    const int64_t *targets; // (tokens)
    int64_t num_items_in_batch;
    int64_t chunk_size;     // chunk_loss only; 0 = the default (one chunk for these sizes)
} cross_entropy_params;

static parity_error *cross_entropy_setup(op_check_state *state, const void *raw) {
    const cross_entropy_params *params = raw;
    op_check_input(state, "hidden", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(params->tokens, params->hidden));
    op_check_input(state, "weight", true, OP_CHECK_NORMAL, 0, 0.5, PARITY_SHAPE(params->vocab, params->hidden));
    op_check_indices(state, "targets", params->targets, PARITY_SHAPE(params->tokens));
    op_check_output_typed(state, "loss", true, parity_compute_dtype(state->dtype), 0, NULL);
    op_check_set_attributes(state, &(parity_cross_entropy_args){.ignore_index = IGNORED,
                                                               .num_items_in_batch = params->num_items_in_batch,
                                                               .chunk_size = params->chunk_size});
    return NULL;
}

#define CROSS_ENTROPY_ROW(label, tokens_, hidden_, vocab_, num_items_, chunk_, ...)                                     \
    {&parity_cross_entropy_op, label, cross_entropy_setup,                                                              \
     &(const cross_entropy_params){tokens_, hidden_, vocab_, (const int64_t[]){__VA_ARGS__}, num_items_, chunk_}, 0, 0}

// N = 100 over V = 5000 (16-byte rows on the GPU), every 8th target ignored. Its finite differences
// sum 500k log-probabilities: round-off ~2e-6 relative, hence a 1e-5 bound for that row.
static const int64_t targets_100_of_5000[] = {
    13, 2932, 851, IGNORED, 1689, 4608, 2527, 446, 3365, 1284, 4203, IGNORED,
    41, 2960, 879, 3798, 1717, 4636, 2555, IGNORED, 3393, 1312, 4231, 2150,
    69, 2988, 907, IGNORED, 1745, 4664, 2583, 502, 3421, 1340, 4259, IGNORED,
    97, 3016, 935, 3854, 1773, 4692, 2611, IGNORED, 3449, 1368, 4287, 2206,
    125, 3044, 963, IGNORED, 1801, 4720, 2639, 558, 3477, 1396, 4315, IGNORED,
    153, 3072, 991, 3910, 1829, 4748, 2667, IGNORED, 3505, 1424, 4343, 2262,
    181, 3100, 1019, IGNORED, 1857, 4776, 2695, 614, 3533, 1452, 4371, IGNORED,
    209, 3128, 1047, 3966, 1885, 4804, 2723, IGNORED, 3561, 1480, 4399, 2318,
    237, 3156, 1075, IGNORED,
};

static const op_check_case cross_entropy_cases[] = {
    CROSS_ENTROPY_ROW("N=9 V=37 H=13 3 ignored chunk=4", 9, 13, 37, 0, 4, //
                      5, IGNORED, 36, 0, 17, IGNORED, 2, 29, IGNORED),
    CROSS_ENTROPY_ROW("N=9 V=37 H=13 3 ignored chunk=1", 9, 13, 37, 0, 1, //
                      5, IGNORED, 36, 0, 17, IGNORED, 2, 29, IGNORED),
    CROSS_ENTROPY_ROW("N=1 V=37 H=13 chunk=3", 1, 13, 37, 0, 3, 11),
    CROSS_ENTROPY_ROW("N=9 V=37 H=13 all but one ignored chunk=3", 9, 13, 37, 0, 3, //
                      IGNORED, IGNORED, IGNORED, IGNORED, 23, IGNORED, IGNORED, IGNORED, IGNORED),
    CROSS_ENTROPY_ROW("N=9 V=37 H=13 num_items_in_batch=11 chunk=4", 9, 13, 37, 11, 4, //
                      5, IGNORED, 36, 0, 17, IGNORED, 2, 29, IGNORED),
    CROSS_ENTROPY_ROW("N=3 V=37 H=13 all ignored num_items_in_batch=4", 3, 13, 37, 4, 2, //
                      IGNORED, IGNORED, IGNORED),
    CROSS_ENTROPY_ROW("N=9 V=37 H=13 none ignored default chunk", 9, 13, 37, 0, 0, //
                      0, 36, 1, 35, 18, 18, 7, 30, 12),
    {&parity_cross_entropy_op, "N=100 V=5000 H=40 chunk=33 13 ignored", cross_entropy_setup,
     &(const cross_entropy_params){100, 40, 5000, targets_100_of_5000, 0, 33}, 1e-5, 0},
    CROSS_ENTROPY_ROW("N=17 V=101 H=48 chunk=5", 17, 48, 101, 0, 5, //
                      IGNORED, 100, 3, 57, 8, 99, IGNORED, 42, 1, 0, 77, 64, 13, 31, IGNORED, 88, 50),
};
const op_case_list cross_entropy_case_list = OP_CASE_LIST(cross_entropy_cases);

// ---- invalid calls ----
typedef struct invalid_call {
    const char *backend;
    parity_dtype dtype, loss_dtype;
    int64_t tokens, hidden, vocab, weight_hidden;
    const int64_t *targets; // (tokens)
} invalid_call;

static parity_error *call_forward(const invalid_call *call) {
    parity_tensor hidden = {0}, weight = {0}, targets = {0}, loss = {0};
    parity_error *error = parity_tensor_zeros(&hidden, call->dtype, PARITY_CPU, PARITY_SHAPE(call->tokens, call->hidden));
    if (!error)
        error = parity_tensor_zeros(&weight, call->dtype, PARITY_CPU, PARITY_SHAPE(call->vocab, call->weight_hidden));
    if (!error) error = parity_tensor_alloc(&targets, PARITY_I64, PARITY_CPU, PARITY_SHAPE(call->tokens));
    if (!error) error = parity_tensor_zeros(&loss, call->loss_dtype, PARITY_CPU, 0, NULL);
    const parity_backend *backend = NULL;
    if (!error) error = parity_registry_resolve(PARITY_OP_CROSS_ENTROPY, call->backend, PARITY_CPU, &backend);
    parity_saved saved = {0};
    if (!error) {
        for (int64_t i = 0; i < call->tokens; i++) ((int64_t *)targets.data)[i] = call->targets[i];
        parity_cross_entropy_args args = {.hidden = &hidden, .weight = &weight, .targets = &targets,
                                          .ignore_index = IGNORED, .loss = &loss};
        error = ((const parity_cross_entropy_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    }
    parity_saved_release(&saved);
    parity_tensor_release(&hidden);
    parity_tensor_release(&weight);
    parity_tensor_release(&targets);
    parity_tensor_release(&loss);
    return error;
}

static parity_error *call_with_target_outside_vocabulary(void) {
    return call_forward(&(invalid_call){"eager", PARITY_F64, PARITY_F64, 6, 13, 37, 13,
                                        (const int64_t[]){1, IGNORED, 36, 0, 37, 2}});
}

static parity_error *call_chunk_loss_with_negative_target(void) {
    return call_forward(&(invalid_call){"chunk_loss", PARITY_F32, PARITY_F32, 3, 13, 37, 13,
                                        (const int64_t[]){1, -1, 2}});
}

static parity_error *call_with_weight_hidden_mismatch(void) {
    return call_forward(&(invalid_call){"eager", PARITY_F32, PARITY_F32, 4, 13, 37, 12,
                                        (const int64_t[]){1, 2, 3, 4}});
}

static parity_error *call_with_bf16_loss(void) {
    return call_forward(&(invalid_call){"chunk_loss", PARITY_BF16, PARITY_BF16, 2, 13, 37, 13,
                                        (const int64_t[]){1, 2}});
}

static const op_invalid_case cross_entropy_invalid_cases[] = {
    {PARITY_OP_CROSS_ENTROPY, "target id equals the vocabulary size", call_with_target_outside_vocabulary,
     "cross_entropy: target at position 4 is 37, outside the vocabulary [0, 37)"},
    {PARITY_OP_CROSS_ENTROPY, "negative target that is not ignore_index (chunk_loss)", call_chunk_loss_with_negative_target,
     "cross_entropy: target at position 1 is -1, outside the vocabulary [0, 37) and not ignore_index -100"},
    {PARITY_OP_CROSS_ENTROPY, "weight hidden size differs from hidden", call_with_weight_hidden_mismatch,
     "cross_entropy: weight has shape (37, 12), expected (*, 13)"},
    {PARITY_OP_CROSS_ENTROPY, "bf16 loss (must be f32 for bf16 runs)", call_with_bf16_loss,
     "cross_entropy: loss is bf16, expected fp32"},
};
const op_invalid_list cross_entropy_invalid_list = OP_CASE_LIST(cross_entropy_invalid_cases);
