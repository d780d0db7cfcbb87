// cases_rms_norm_gated.c: gated RMSNorm rows (prime sizes, one element with a large eps, Qwen3.5's
// head_v_dim 128 alone and in more rows than one GPU block step, and sizes that pick each layout of the
// CUDA fla backend, ops/rms_norm_gated/fla.cu: D 16 and 64 (a row in 8 or 16 lanes), 128 (16 lanes in
// bf16, 32 in f32), 200 (32 lanes with 7 idle in bf16, two vectors a lane in f32, block rows in f64),
// D odd or 1 (block rows)) and invalid calls.
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/testing/op_cases.h"

typedef struct rms_norm_gated_params {
    int64_t rows, hidden;
    double eps;
} rms_norm_gated_params;

static parity_error *rms_norm_gated_setup(op_check_state *state, const void *raw) {
    const rms_norm_gated_params *params = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(params->rows, params->hidden));
    op_check_input(state, "gate", true, OP_CHECK_NORMAL, 0, 2, PARITY_SHAPE(params->rows, params->hidden));
    op_check_input(state, "weight", true, OP_CHECK_UNIFORM, 0.5, 1.5, PARITY_SHAPE(params->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(params->rows, params->hidden));
    op_check_set_attributes(state, &(parity_rms_norm_gated_args){.eps = params->eps});
    return NULL;
}

#define RMS_NORM_GATED_ROW(label, rows_, hidden_, eps_)                                                     \
    {&parity_rms_norm_gated_op, label, rms_norm_gated_setup,                                                \
     &(const rms_norm_gated_params){rows_, hidden_, eps_}, 0, 0}

static const op_check_case rms_norm_gated_cases[] = {
    RMS_NORM_GATED_ROW("rows=7 hidden=13", 7, 13, 1e-6),
    RMS_NORM_GATED_ROW("rows=1 hidden=1 eps=1", 1, 1, 1.0),
    RMS_NORM_GATED_ROW("rows=3 hidden=31 eps=1e-2", 3, 31, 1e-2),
    RMS_NORM_GATED_ROW("rows=5 hidden=16 (Qwen3.5 head_v_dim)", 5, 16, 1e-6),
    RMS_NORM_GATED_ROW("rows=65 hidden=128", 65, 128, 1e-6),
    RMS_NORM_GATED_ROW("rows=1 hidden=128", 1, 128, 1e-6),
    RMS_NORM_GATED_ROW("rows=17 hidden=64", 17, 64, 1e-6),
    RMS_NORM_GATED_ROW("rows=9 hidden=200", 9, 200, 1e-6),
    RMS_NORM_GATED_ROW("rows=300 hidden=128 (GPU: several blocks' dw partials)", 300, 128, 1e-6),
};
const op_case_list rms_norm_gated_case_list = OP_CASE_LIST(rms_norm_gated_cases);

// ---- invalid calls ----
static parity_error *call_rms_norm_gated_forward(int64_t gate_columns, int64_t weight_size) {
    parity_tensor x = {0}, gate = {0}, weight = {0}, y = {0};
    parity_error *error = parity_tensor_zeros(&x, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (!error) error = parity_tensor_zeros(&gate, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, gate_columns));
    if (!error) error = parity_tensor_zeros(&weight, PARITY_F64, PARITY_CPU, PARITY_SHAPE(weight_size));
    if (!error) error = parity_tensor_zeros(&y, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, 8));
    parity_saved saved = {0};
    const parity_backend *backend;
    if (!error) error = parity_registry_resolve(PARITY_OP_RMS_NORM_GATED, "eager", PARITY_CPU, &backend);
    if (!error) {
        parity_rms_norm_gated_args args = {&x, &gate, &weight, 1e-6, &y};
        error = ((const parity_rms_norm_gated_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    }
    parity_saved_release(&saved);
    parity_tensor_release(&x);
    parity_tensor_release(&gate);
    parity_tensor_release(&weight);
    parity_tensor_release(&y);
    return error;
}

static parity_error *call_with_mismatched_gate(void) { return call_rms_norm_gated_forward(9, 8); }
static parity_error *call_with_mismatched_weight(void) { return call_rms_norm_gated_forward(8, 7); }

static const op_invalid_case rms_norm_gated_invalid_cases[] = {
    {PARITY_OP_RMS_NORM_GATED, "gate shape differs from input", call_with_mismatched_gate,
     "rms_norm_gated: gate has shape (4, 9), expected (4, 8)"},
    {PARITY_OP_RMS_NORM_GATED, "weight size differs from hidden", call_with_mismatched_weight,
     "rms_norm_gated: weight has shape (7), expected (8)"},
};
const op_invalid_list rms_norm_gated_invalid_list = OP_CASE_LIST(rms_norm_gated_invalid_cases);
