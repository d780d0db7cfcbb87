// cases_rms_norm.c: RMSNorm rows (standard and offset variants, awkward sizes) and invalid calls.
#include "ops/rms_norm/rms_norm.h"
#include "ops/testing/op_cases.h"

typedef struct rms_norm_params {
    int64_t rows, hidden;
    parity_rms_norm_variant variant;
    double eps;
} rms_norm_params;

static parity_error *rms_norm_setup(op_check_state *state, const void *raw) {
    const rms_norm_params *params = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(params->rows, params->hidden));
    op_check_input(state, "weight", true, OP_CHECK_UNIFORM, 0.5, 1.5, PARITY_SHAPE(params->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(params->rows, params->hidden));
    op_check_set_attributes(state, &(parity_rms_norm_args){.eps = params->eps, .variant = params->variant});
    return NULL;
}

#define RMS_NORM_ROW(label, rows_, hidden_, variant_, eps_)                                                      \
    {&parity_rms_norm_op, label, rms_norm_setup, &(const rms_norm_params){rows_, hidden_, variant_, eps_}, 0, 0}

static const op_check_case rms_norm_cases[] = {
    RMS_NORM_ROW("standard rows=7 hidden=13", 7, 13, PARITY_RMS_NORM_STANDARD, 1e-6),
    RMS_NORM_ROW("standard rows=1 hidden=1 eps=1", 1, 1, PARITY_RMS_NORM_STANDARD, 1.0),
    RMS_NORM_ROW("standard rows=3 hidden=64 eps=1e-2", 3, 64, PARITY_RMS_NORM_STANDARD, 1e-2),
    RMS_NORM_ROW("offset rows=5 hidden=48", 5, 48, PARITY_RMS_NORM_OFFSET, 1e-6),
    RMS_NORM_ROW("offset rows=2 hidden=17", 2, 17, PARITY_RMS_NORM_OFFSET, 1e-6),
    // 151k outputs: central differences on their sum carry ~1e-6 relative round-off, hence 1e-5
    {&parity_rms_norm_op, "standard rows=37 hidden=4096", rms_norm_setup,
     &(const rms_norm_params){37, 4096, PARITY_RMS_NORM_STANDARD, 1e-6}, 1e-5, 0},
    RMS_NORM_ROW("offset rows=300 hidden=1000", 300, 1000, PARITY_RMS_NORM_OFFSET, 1e-6),
    RMS_NORM_ROW("standard rows=3 hidden=8191 (prime)", 3, 8191, PARITY_RMS_NORM_STANDARD, 1e-6),
};
const op_case_list rms_norm_case_list = OP_CASE_LIST(rms_norm_cases);

// ---- invalid calls ----
static parity_error *call_with_mismatched_weight(void) {
    parity_tensor x, weight, y;
    parity_error *error = parity_tensor_zeros(&x, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (!error) error = parity_tensor_zeros(&weight, PARITY_F64, PARITY_CPU, PARITY_SHAPE(7));
    if (!error) error = parity_tensor_zeros(&y, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (error) return error;
    parity_saved saved = {0};
    const parity_backend *backend;
    error = parity_registry_resolve(PARITY_OP_RMS_NORM, "eager", PARITY_CPU, &backend);
    if (!error) {
        parity_rms_norm_args args = {&x, &weight, 1e-6, PARITY_RMS_NORM_STANDARD, &y};
        error = ((const parity_rms_norm_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    }
    parity_saved_release(&saved);
    parity_tensor_release(&x);
    parity_tensor_release(&weight);
    parity_tensor_release(&y);
    return error;
}

static parity_error *call_with_mixed_dtypes(void) {
    parity_tensor x, weight, y;
    parity_error *error = parity_tensor_zeros(&x, PARITY_F32, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (!error) error = parity_tensor_zeros(&weight, PARITY_F64, PARITY_CPU, PARITY_SHAPE(8));
    if (!error) error = parity_tensor_zeros(&y, PARITY_F32, PARITY_CPU, PARITY_SHAPE(4, 8));
    if (error) return error;
    parity_saved saved = {0};
    const parity_backend *backend;
    error = parity_registry_resolve(PARITY_OP_RMS_NORM, "eager", PARITY_CPU, &backend);
    if (!error) {
        parity_rms_norm_args args = {&x, &weight, 1e-6, PARITY_RMS_NORM_STANDARD, &y};
        error = ((const parity_rms_norm_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    }
    parity_saved_release(&saved);
    parity_tensor_release(&x);
    parity_tensor_release(&weight);
    parity_tensor_release(&y);
    return error;
}

static const op_invalid_case rms_norm_invalid_cases[] = {
    {PARITY_OP_RMS_NORM, "weight size differs from hidden", call_with_mismatched_weight,
     "rms_norm: weight has shape (7), expected (8)"},
    {PARITY_OP_RMS_NORM, "weight dtype differs from input", call_with_mixed_dtypes, "rms_norm: weight is fp64, expected fp32"},
};
const op_invalid_list rms_norm_invalid_list = OP_CASE_LIST(rms_norm_invalid_cases);
