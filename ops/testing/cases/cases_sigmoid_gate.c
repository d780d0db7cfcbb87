// cases_sigmoid_gate.c: sigmoid gate rows (gate of x's shape, and one gate per row broadcast over
// the last dim as Qwen3.5-MoE's shared-expert gate; primes, a single element, head_dim 48) and
// invalid calls.
#include "ops/testing/invalid_call.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/testing/op_cases.h"

typedef struct sigmoid_gate_params {
    int64_t batch, rows, width;  // x (batch, rows, width)
    bool broadcast;              // gate (batch, rows, 1) instead of x's shape
} sigmoid_gate_params;

static parity_error *sigmoid_gate_setup(op_check_state *state, const void *raw) {
    const sigmoid_gate_params *p = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, p->width));
    op_check_input(state, "gate", true, OP_CHECK_NORMAL, 0, 2, PARITY_SHAPE(p->batch, p->rows, p->broadcast ? 1 : p->width));
    op_check_output(state, "y", true, PARITY_SHAPE(p->batch, p->rows, p->width));
    return NULL;
}

#define SIGMOID_GATE_ROW(label, batch_, rows_, width_, broadcast_)                                          \
    {&parity_sigmoid_gate_op, label, sigmoid_gate_setup,                                                    \
     &(const sigmoid_gate_params){batch_, rows_, width_, broadcast_}, 0, 0}

static const op_check_case sigmoid_gate_cases[] = {
    SIGMOID_GATE_ROW("rows=7 width=13", 1, 7, 13, false),
    SIGMOID_GATE_ROW("rows=1 width=1", 1, 1, 1, false),
    SIGMOID_GATE_ROW("batch=2 rows=3 width=48", 2, 3, 48, false),
    SIGMOID_GATE_ROW("rows=7 width=13 broadcast gate", 1, 7, 13, true),
    SIGMOID_GATE_ROW("rows=1 width=11 broadcast gate", 1, 1, 11, true),
    SIGMOID_GATE_ROW("batch=2 rows=5 width=48 broadcast gate", 2, 5, 48, true),
};
const op_case_list sigmoid_gate_case_list = OP_CASE_LIST(sigmoid_gate_cases);

// ---- invalid calls ----
static parity_error *call_sigmoid_gate(int64_t gate_rows, int64_t gate_width, parity_dtype gate_dtype) {
    invalid_call scratch = {0};
    parity_tensor *x = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(7, 13));
    parity_tensor *gate = invalid_call_tensor(&scratch, gate_dtype, PARITY_SHAPE(gate_rows, gate_width));
    parity_tensor *y = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(7, 13));
    const parity_sigmoid_gate_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_SIGMOID_GATE);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_sigmoid_gate_args){x, gate, y}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_gate_of_other_width(void) { return call_sigmoid_gate(7, 2, PARITY_F64); }
static parity_error *call_with_gate_of_other_rows(void) { return call_sigmoid_gate(6, 1, PARITY_F64); }
static parity_error *call_with_gate_of_other_dtype(void) { return call_sigmoid_gate(7, 1, PARITY_BF16); }

static const op_invalid_case sigmoid_gate_invalid_cases[] = {
    {PARITY_OP_SIGMOID_GATE, "gate width neither D nor 1", call_with_gate_of_other_width,
     "sigmoid_gate: gate has shape (7, 2), expected (7, 13) or (7, 1)"},
    {PARITY_OP_SIGMOID_GATE, "gate rows differ", call_with_gate_of_other_rows,
     "sigmoid_gate: gate has shape (6, 1), expected (7, 13) or (7, 1)"},
    {PARITY_OP_SIGMOID_GATE, "gate dtype differs", call_with_gate_of_other_dtype, "sigmoid_gate: gate is bf16, expected fp64"},
};
const op_invalid_list sigmoid_gate_invalid_list = OP_CASE_LIST(sigmoid_gate_invalid_cases);
