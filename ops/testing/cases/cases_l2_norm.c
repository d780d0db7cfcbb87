// cases_l2_norm.c: l2_norm rows (awkward sizes, Qwen3.5's key head dim 128) and invalid calls.
#include "ops/l2_norm/l2_norm.h"
#include "ops/testing/op_cases.h"

typedef struct l2_norm_params {
    int64_t rows, dim;
    double eps;
} l2_norm_params;

static parity_error *l2_norm_setup(op_check_state *state, const void *raw) {
    const l2_norm_params *params = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(params->rows, params->dim));
    op_check_output(state, "y", true, PARITY_SHAPE(params->rows, params->dim));
    op_check_set_attributes(state, &(parity_l2_norm_args){.eps = params->eps});
    return NULL;
}

#define L2_NORM_ROW(label, rows_, dim_, eps_)                                                               \
    {&parity_l2_norm_op, label, l2_norm_setup, &(const l2_norm_params){rows_, dim_, eps_}, 0, 0}

static const op_check_case l2_norm_cases[] = {
    L2_NORM_ROW("rows=7 dim=13", 7, 13, 1e-6),
    // dim = 1 with eps = 1e-6 has y ~ sign(x) and a gradient ~ eps / |x|^3 that low precision cannot
    // resolve (ill-conditioned by construction); eps = 1 keeps the one-element row meaningful.
    L2_NORM_ROW("rows=1 dim=1 eps=1", 1, 1, 1.0),
    L2_NORM_ROW("rows=1 dim=5", 1, 5, 1e-6),
    L2_NORM_ROW("rows=3 dim=128", 3, 128, 1e-6),
    L2_NORM_ROW("rows=5 dim=48 eps=1e-2", 5, 48, 1e-2),
};
const op_case_list l2_norm_case_list = OP_CASE_LIST(l2_norm_cases);

// ---- invalid calls ----
static parity_error *call_forward(parity_dtype input_dtype, const int64_t *output_shape, parity_dtype output_dtype) {
    parity_tensor x = {0}, y = {0};
    parity_error *error = parity_tensor_zeros(&x, input_dtype, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (!error) error = parity_tensor_zeros(&y, output_dtype, PARITY_CPU, 2, output_shape);
    if (!error) {
        parity_saved saved = {0};
        const parity_backend *backend;
        error = parity_registry_resolve(PARITY_OP_L2_NORM, "eager", PARITY_CPU, &backend);
        if (!error) {
            parity_l2_norm_args args = {&x, 1e-6, &y};
            error = ((const parity_l2_norm_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
        }
        parity_saved_release(&saved);
    }
    parity_tensor_release(&x);
    parity_tensor_release(&y);
    return error;
}

static parity_error *call_with_mismatched_output(void) { return call_forward(PARITY_F64, (int64_t[]){4, 7}, PARITY_F64); }
static parity_error *call_with_mixed_dtypes(void) { return call_forward(PARITY_BF16, (int64_t[]){4, 8}, PARITY_F32); }

static const op_invalid_case l2_norm_invalid_cases[] = {
    {PARITY_OP_L2_NORM, "output shape differs from input", call_with_mismatched_output,
     "l2_norm: output has shape (4, 7), expected (4, 8)"},
    {PARITY_OP_L2_NORM, "output dtype differs from input", call_with_mixed_dtypes, "l2_norm: output is fp32, expected bf16"},
};
const op_invalid_list l2_norm_invalid_list = OP_CASE_LIST(l2_norm_invalid_cases);
