// cases_causal_conv1d.c: causal_conv1d rows (prime channel counts, K = 1 .. 4 and 6, packed documents
// of 1, 2, 15 and 100 tokens, documents shorter than K, SiLU on and off) and invalid calls. What they
// cover of the CUDA fla backend (ops/causal_conv1d/fla.cu): odd C (one channel a thread) and even C
// (channel pairs), C = 1, C = 520 (three channel blocks), N = 1, documents that cross its 32-token
// forward blocks and 8-token backward blocks, cu_seqlens absent, and K = 6 (its general path).
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/testing/op_cases.h"

#define CONV_MAX_DOCUMENTS 8

typedef struct causal_conv1d_params {
    int64_t channels, kernel_size;
    int document_count;                          // 0 = no cu_seqlens (one document of `lengths[0]` tokens)
    int64_t lengths[CONV_MAX_DOCUMENTS];
    parity_causal_conv1d_activation activation;
} causal_conv1d_params;

static int64_t total_tokens(const causal_conv1d_params *params) {
    int64_t tokens = 0;
    for (int i = 0; i < (params->document_count ? params->document_count : 1); i++) tokens += params->lengths[i];
    return tokens;
}

static parity_error *causal_conv1d_setup(op_check_state *state, const void *raw) {
    const causal_conv1d_params *params = raw;
    int64_t tokens = total_tokens(params);
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(tokens, params->channels));
    op_check_input(state, "weight", true, OP_CHECK_NORMAL, 0, 0.5, PARITY_SHAPE(params->channels, params->kernel_size));
    if (params->document_count) {
        int64_t offsets[CONV_MAX_DOCUMENTS + 1] = {0};
        for (int i = 0; i < params->document_count; i++) offsets[i + 1] = offsets[i] + params->lengths[i];
        op_check_indices(state, "cu_seqlens", offsets, PARITY_SHAPE(params->document_count + 1));
    }
    op_check_output(state, "y", true, PARITY_SHAPE(tokens, params->channels));
    op_check_set_attributes(state, &(parity_causal_conv1d_args){.activation = params->activation});
    return NULL;
}

#define CONV_ROW(label, channels_, kernel_, activation_, count_, ...)                                       \
    {&parity_causal_conv1d_op, label, causal_conv1d_setup,                                                  \
     &(const causal_conv1d_params){channels_, kernel_, count_, {__VA_ARGS__}, activation_}, 0, 0}

static const op_check_case causal_conv1d_cases[] = {
    CONV_ROW("silu C=11 K=4 docs=1,5,1,7", 11, 4, PARITY_CAUSAL_CONV1D_SILU, 4, 1, 5, 1, 7),
    CONV_ROW("none C=11 K=4 docs=1,5,1,7", 11, 4, PARITY_CAUSAL_CONV1D_NONE, 4, 1, 5, 1, 7),
    CONV_ROW("silu C=11 K=4 one document N=9", 11, 4, PARITY_CAUSAL_CONV1D_SILU, 0, 9),
    CONV_ROW("silu C=7 K=1 docs=1,5,1,7", 7, 1, PARITY_CAUSAL_CONV1D_SILU, 4, 1, 5, 1, 7),
    CONV_ROW("none C=13 K=1 one document N=6", 13, 1, PARITY_CAUSAL_CONV1D_NONE, 1, 6),
    CONV_ROW("silu C=5 K=4 N=1", 5, 4, PARITY_CAUSAL_CONV1D_SILU, 1, 1),
    CONV_ROW("silu C=3 K=3 docs=2,3", 3, 3, PARITY_CAUSAL_CONV1D_SILU, 2, 2, 3),
    CONV_ROW("silu C=9 K=2 docs=1,2,15,100", 9, 2, PARITY_CAUSAL_CONV1D_SILU, 4, 1, 2, 15, 100),
    CONV_ROW("silu C=1 K=4 docs=2,100,1,15", 1, 4, PARITY_CAUSAL_CONV1D_SILU, 4, 2, 100, 1, 15),
    CONV_ROW("none C=8 K=3 docs=15,1,100,2", 8, 3, PARITY_CAUSAL_CONV1D_NONE, 4, 15, 1, 100, 2),
    CONV_ROW("silu C=6 K=4 docs=100,15,2,1", 6, 4, PARITY_CAUSAL_CONV1D_SILU, 4, 100, 15, 2, 1),
    CONV_ROW("silu C=4 K=4 one document N=100", 4, 4, PARITY_CAUSAL_CONV1D_SILU, 0, 100),
    CONV_ROW("silu C=520 K=4 docs=3,2", 520, 4, PARITY_CAUSAL_CONV1D_SILU, 2, 3, 2),
    CONV_ROW("silu C=7 K=6 docs=2,15,9", 7, 6, PARITY_CAUSAL_CONV1D_SILU, 3, 2, 15, 9),
    CONV_ROW("none C=1 K=2 N=1", 1, 2, PARITY_CAUSAL_CONV1D_NONE, 0, 1),
};
const op_case_list causal_conv1d_case_list = OP_CASE_LIST(causal_conv1d_cases);

// ---- invalid calls ----
static parity_error *call_forward(int64_t tokens, int64_t channels, int64_t weight_channels, int64_t kernel_size,
                                  const int64_t *offsets, int64_t offset_count) {
    parity_tensor x = {0}, weight = {0}, y = {0}, cu_seqlens = {0};
    parity_error *error = parity_tensor_zeros(&x, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, channels));
    if (!error) error = parity_tensor_zeros(&weight, PARITY_F64, PARITY_CPU, PARITY_SHAPE(weight_channels, kernel_size));
    if (!error) error = parity_tensor_zeros(&y, PARITY_F64, PARITY_CPU, PARITY_SHAPE(tokens, channels));
    if (!error) error = parity_tensor_alloc(&cu_seqlens, PARITY_I64, PARITY_CPU, 1, (int64_t[]){offset_count});
    if (!error) {
        for (int64_t i = 0; i < offset_count; i++) ((int64_t *)cu_seqlens.data)[i] = offsets[i];
        parity_saved saved = {0};
        const parity_backend *backend;
        error = parity_registry_resolve(PARITY_OP_CAUSAL_CONV1D, "eager", PARITY_CPU, &backend);
        if (!error) {
            parity_causal_conv1d_args args = {&x, &weight, &cu_seqlens, PARITY_CAUSAL_CONV1D_SILU, &y};
            error = ((const parity_causal_conv1d_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
        }
        parity_saved_release(&saved);
    }
    parity_tensor_release(&x);
    parity_tensor_release(&weight);
    parity_tensor_release(&y);
    parity_tensor_release(&cu_seqlens);
    return error;
}

static parity_error *call_with_short_cu_seqlens(void) {
    return call_forward(14, 11, 11, 4, (int64_t[]){0, 1, 6, 12}, 4);
}

static parity_error *call_with_mismatched_weight(void) {
    return call_forward(14, 11, 10, 4, (int64_t[]){0, 14}, 2);
}

static parity_error *call_with_decreasing_cu_seqlens(void) {
    return call_forward(14, 11, 11, 4, (int64_t[]){0, 6, 5, 14}, 4);
}

static const op_invalid_case causal_conv1d_invalid_cases[] = {
    {PARITY_OP_CAUSAL_CONV1D, "cu_seqlens does not end at N", call_with_short_cu_seqlens,
     "causal_conv1d: cu_seqlens ends at 12, expected 14 (the token count)"},
    {PARITY_OP_CAUSAL_CONV1D, "weight channels differ from input", call_with_mismatched_weight,
     "causal_conv1d: weight has shape (10, 4), expected (11, *)"},
    {PARITY_OP_CAUSAL_CONV1D, "cu_seqlens decreases", call_with_decreasing_cu_seqlens,
     "causal_conv1d: cu_seqlens decreases at entry 2 (5 after 6)"},
};
const op_invalid_list causal_conv1d_invalid_list = OP_CASE_LIST(causal_conv1d_invalid_cases);
