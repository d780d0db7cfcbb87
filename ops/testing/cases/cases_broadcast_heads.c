// cases_broadcast_heads.c: head broadcast rows (primes, one row, head_dim 48, one head, leading
// (B, T) dims) and invalid calls.
#include "ops/testing/invalid_call.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/testing/op_cases.h"

typedef struct broadcast_heads_params {
    int64_t batch, rows, heads, head_dim; // x (batch, rows, 1, head_dim) -> y (batch, rows, heads, head_dim)
} broadcast_heads_params;

static parity_error *broadcast_heads_setup(op_check_state *state, const void *raw) {
    const broadcast_heads_params *p = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, 1, p->head_dim));
    op_check_output(state, "y", true, PARITY_SHAPE(p->batch, p->rows, p->heads, p->head_dim));
    return NULL;
}

#define BROADCAST_HEADS_ROW(label, batch_, rows_, heads_, head_dim_)                                        \
    {&parity_broadcast_heads_op, label, broadcast_heads_setup,                                              \
     &(const broadcast_heads_params){batch_, rows_, heads_, head_dim_}, 0, 0}

static const op_check_case broadcast_heads_cases[] = {
    BROADCAST_HEADS_ROW("rows=7 heads=5 head_dim=13", 1, 7, 5, 13),
    BROADCAST_HEADS_ROW("rows=1 heads=16 head_dim=48", 1, 1, 16, 48),
    BROADCAST_HEADS_ROW("batch=2 rows=3 heads=7 head_dim=4", 2, 3, 7, 4),
    BROADCAST_HEADS_ROW("rows=3 heads=1 head_dim=1", 1, 3, 1, 1),
};
const op_case_list broadcast_heads_case_list = OP_CASE_LIST(broadcast_heads_cases);

// ---- invalid calls ----
static parity_error *call_broadcast_heads(int64_t input_heads, int64_t output_head_dim) {
    invalid_call scratch = {0};
    parity_tensor *x = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(7, input_heads, 13));
    parity_tensor *y = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(7, 5, output_head_dim));
    const parity_broadcast_heads_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_BROADCAST_HEADS);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_broadcast_heads_args){x, y}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_two_input_heads(void) { return call_broadcast_heads(2, 13); }
static parity_error *call_with_output_head_dim_differing(void) { return call_broadcast_heads(1, 12); }

static const op_invalid_case broadcast_heads_invalid_cases[] = {
    {PARITY_OP_BROADCAST_HEADS, "input has more than one head", call_with_two_input_heads,
     "broadcast_heads: input has shape (7, 2, 13), expected (7, 1, 13)"},
    {PARITY_OP_BROADCAST_HEADS, "output head_dim differs", call_with_output_head_dim_differing,
     "broadcast_heads: output has shape (7, 5, 12), expected (7, *, 13)"},
};
const op_invalid_list broadcast_heads_invalid_list = OP_CASE_LIST(broadcast_heads_invalid_cases);
