// cases_swiglu.c: SwiGLU rows (prime sizes, one element, gates reaching deep into silu's negative
// tail) and invalid calls.
#include "ops/swiglu/swiglu.h"
#include "ops/testing/op_cases.h"

typedef struct swiglu_params {
    int64_t rows, intermediate;
    double gate_std; // gate ~ normal(0, gate_std)
} swiglu_params;

static parity_error *swiglu_setup(op_check_state *state, const void *raw) {
    const swiglu_params *params = raw;
    op_check_input(state, "gate", true, OP_CHECK_NORMAL, 0, params->gate_std, PARITY_SHAPE(params->rows, params->intermediate));
    op_check_input(state, "up", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(params->rows, params->intermediate));
    op_check_output(state, "y", true, PARITY_SHAPE(params->rows, params->intermediate));
    return NULL;
}

#define SWIGLU_ROW(label, rows_, intermediate_, gate_std_)                                                  \
    {&parity_swiglu_op, label, swiglu_setup, &(const swiglu_params){rows_, intermediate_, gate_std_}, 0, 0}

static const op_check_case swiglu_cases[] = {
    SWIGLU_ROW("rows=7 intermediate=13", 7, 13, 1),
    SWIGLU_ROW("rows=1 intermediate=1", 1, 1, 1),
    SWIGLU_ROW("rows=3 intermediate=97", 3, 97, 1),
    SWIGLU_ROW("rows=5 intermediate=11 wide gates", 5, 11, 6),
    SWIGLU_ROW("rows=129 intermediate=1031 (16-byte path and a tail)", 129, 1031, 2),
};
const op_case_list swiglu_case_list = OP_CASE_LIST(swiglu_cases);

// ---- invalid calls ----
static parity_error *call_swiglu_forward(parity_dtype up_dtype, int64_t up_columns) {
    parity_tensor gate = {0}, up = {0}, y = {0};
    parity_error *error = parity_tensor_zeros(&gate, PARITY_F32, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (!error) error = parity_tensor_zeros(&up, up_dtype, PARITY_CPU, PARITY_SHAPE(4, up_columns));
    if (!error) error = parity_tensor_zeros(&y, PARITY_F32, PARITY_CPU, PARITY_SHAPE(4, 8));
    parity_saved saved = {0};
    const parity_backend *backend;
    if (!error) error = parity_registry_resolve(PARITY_OP_SWIGLU, "eager", PARITY_CPU, &backend);
    if (!error) {
        parity_swiglu_args args = {&gate, &up, &y};
        error = ((const parity_swiglu_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    }
    parity_saved_release(&saved);
    parity_tensor_release(&gate);
    parity_tensor_release(&up);
    parity_tensor_release(&y);
    return error;
}

static parity_error *call_with_mismatched_up(void) { return call_swiglu_forward(PARITY_F32, 7); }
static parity_error *call_with_mixed_dtypes(void) { return call_swiglu_forward(PARITY_F64, 8); }

static const op_invalid_case swiglu_invalid_cases[] = {
    {PARITY_OP_SWIGLU, "up shape differs from gate", call_with_mismatched_up, "swiglu: up has shape (4, 7), expected (4, 8)"},
    {PARITY_OP_SWIGLU, "up dtype differs from gate", call_with_mixed_dtypes, "swiglu: up is fp64, expected fp32"},
};
const op_invalid_list swiglu_invalid_list = OP_CASE_LIST(swiglu_invalid_cases);
