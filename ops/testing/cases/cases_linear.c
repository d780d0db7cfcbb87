// cases_linear.c: linear rows (primes, one row, no bias, leading dims, a frozen input) and invalid calls.
#include "ops/testing/invalid_call.h"
#include "ops/linear/linear.h"
#include "ops/testing/op_cases.h"

typedef struct linear_params {
    int64_t batch, rows, in_features, out_features; // input (batch, rows, in)
    bool bias;
    bool input_differentiable; // false: the backward gets dinput = NULL (an input with no gradient)
} linear_params;

static parity_error *linear_setup(op_check_state *state, const void *raw) {
    const linear_params *p = raw;
    op_check_input(state, "x", p->input_differentiable, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, p->in_features));
    op_check_input(state, "weight", true, OP_CHECK_UNIFORM, -0.5, 0.5, PARITY_SHAPE(p->out_features, p->in_features));
    if (p->bias) op_check_input(state, "bias", true, OP_CHECK_UNIFORM, -1, 1, PARITY_SHAPE(p->out_features));
    op_check_output(state, "y", true, PARITY_SHAPE(p->batch, p->rows, p->out_features));
    return NULL;
}

#define LINEAR_ROW(label, batch_, rows_, in_, out_, bias_, input_differentiable_)                           \
    {&parity_linear_op, label, linear_setup,                                                                \
     &(const linear_params){batch_, rows_, in_, out_, bias_, input_differentiable_}, 0, 0}

static const op_check_case linear_cases[] = {
    LINEAR_ROW("rows=7 in=13 out=11 bias", 1, 7, 13, 11, true, true),
    LINEAR_ROW("rows=7 in=13 out=11 no bias", 1, 7, 13, 11, false, true),
    LINEAR_ROW("rows=1 in=13 out=11 bias", 1, 1, 13, 11, true, true),
    LINEAR_ROW("rows=1 in=1 out=1 no bias", 1, 1, 1, 1, false, true),
    LINEAR_ROW("batch=2 rows=3 in=48 out=5 bias", 2, 3, 48, 5, true, true),
    LINEAR_ROW("rows=5 in=17 out=3 bias, no dinput", 1, 5, 17, 3, true, false),
};
const op_case_list linear_case_list = OP_CASE_LIST(linear_cases);

// ---- invalid calls ----
static parity_error *call_linear(parity_dtype weight_dtype, int64_t weight_in, int64_t bias_size) {
    invalid_call scratch = {0};
    parity_tensor *x = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(7, 13));
    parity_tensor *weight = invalid_call_tensor(&scratch, weight_dtype, PARITY_SHAPE(11, weight_in));
    parity_tensor *bias = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(bias_size));
    parity_tensor *y = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(7, 11));
    const parity_linear_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_LINEAR);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_linear_args){x, weight, bias, y}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_weight_of_other_width(void) { return call_linear(PARITY_F32, 12, 11); }
static parity_error *call_with_bias_of_other_size(void) { return call_linear(PARITY_F32, 13, 10); }
static parity_error *call_with_weight_of_other_dtype(void) { return call_linear(PARITY_BF16, 13, 11); }

static const op_invalid_case linear_invalid_cases[] = {
    {PARITY_OP_LINEAR, "weight width differs from input features", call_with_weight_of_other_width,
     "linear: weight has shape (11, 12), expected (*, 13)"},
    {PARITY_OP_LINEAR, "bias size differs from output features", call_with_bias_of_other_size,
     "linear: bias has shape (10), expected (11)"},
    {PARITY_OP_LINEAR, "weight dtype differs from input", call_with_weight_of_other_dtype,
     "linear: weight is bf16, expected fp32"},
};
const op_invalid_list linear_invalid_list = OP_CASE_LIST(linear_invalid_cases);
