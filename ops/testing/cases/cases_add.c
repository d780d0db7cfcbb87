// cases_add.c: residual add rows (primes, a single element, three dimensions) and invalid calls.
#include "ops/testing/invalid_call.h"
#include "ops/add/add.h"
#include "ops/testing/op_cases.h"

typedef struct add_params {
    int64_t batch, rows, hidden; // a, b, y (batch, rows, hidden)
} add_params;

static parity_error *add_setup(op_check_state *state, const void *raw) {
    const add_params *p = raw;
    op_check_input(state, "a", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, p->hidden));
    op_check_input(state, "b", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, p->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(p->batch, p->rows, p->hidden));
    return NULL;
}

#define ADD_ROW(label, batch_, rows_, hidden_)                                                              \
    {&parity_add_op, label, add_setup, &(const add_params){batch_, rows_, hidden_}, 0, 0}

static const op_check_case add_cases[] = {
    ADD_ROW("rows=7 hidden=13", 1, 7, 13),
    ADD_ROW("rows=1 hidden=1", 1, 1, 1),
    ADD_ROW("batch=2 rows=3 hidden=48", 2, 3, 48),
};
const op_case_list add_case_list = OP_CASE_LIST(add_cases);

// ---- invalid calls ----
static parity_error *call_add(int64_t b_hidden, parity_dtype b_dtype) {
    invalid_call scratch = {0};
    parity_tensor *a = invalid_call_tensor(&scratch, PARITY_BF16, PARITY_SHAPE(7, 13));
    parity_tensor *b = invalid_call_tensor(&scratch, b_dtype, PARITY_SHAPE(7, b_hidden));
    parity_tensor *y = invalid_call_tensor(&scratch, PARITY_BF16, PARITY_SHAPE(7, 13));
    const parity_add_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_ADD);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_add_args){a, b, y}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_shapes_differing(void) { return call_add(12, PARITY_BF16); }
static parity_error *call_with_dtypes_differing(void) { return call_add(13, PARITY_F32); }

static const op_invalid_case add_invalid_cases[] = {
    {PARITY_OP_ADD, "shapes differ", call_with_shapes_differing, "add: b has shape (7, 12), expected (7, 13)"},
    {PARITY_OP_ADD, "dtypes differ", call_with_dtypes_differing, "add: b is fp32, expected bf16"},
};
const op_invalid_list add_invalid_list = OP_CASE_LIST(add_invalid_cases);
