// cases_matmul.c: matmul rows (primes, every transpose combination, M = N = 1, several batch
// dimensions, no batch dimension) and invalid calls.
#include "ops/testing/invalid_call.h"
#include "ops/matmul/matmul.h"
#include "ops/testing/op_cases.h"

typedef struct matmul_params {
    int batch_dims;                  // 0, 1 or 2 leading dimensions (sizes 2 and batch)
    int64_t batch, m, k, n;
    bool transpose_a, transpose_b;
} matmul_params;

// The leading dimensions of the row, then the two given sizes; returns the rank.
static int shape_of(const matmul_params *p, int64_t rows, int64_t columns, int64_t *shape) {
    int ndim = 0;
    if (p->batch_dims == 2) shape[ndim++] = 2;
    if (p->batch_dims >= 1) shape[ndim++] = p->batch;
    shape[ndim++] = rows;
    shape[ndim++] = columns;
    return ndim;
}

static parity_error *matmul_setup(op_check_state *state, const void *raw) {
    const matmul_params *p = raw;
    int64_t shape[4];
    int ndim = p->transpose_a ? shape_of(p, p->k, p->m, shape) : shape_of(p, p->m, p->k, shape);
    op_check_input(state, "a", true, OP_CHECK_NORMAL, 0, 1, ndim, shape);
    ndim = p->transpose_b ? shape_of(p, p->n, p->k, shape) : shape_of(p, p->k, p->n, shape);
    op_check_input(state, "b", true, OP_CHECK_NORMAL, 0, 1, ndim, shape);
    ndim = shape_of(p, p->m, p->n, shape);
    op_check_output(state, "c", true, ndim, shape);
    op_check_set_attributes(state, &(parity_matmul_args){.transpose_a = p->transpose_a, .transpose_b = p->transpose_b});
    return NULL;
}

#define MATMUL_ROW(label, batch_dims_, batch_, m_, k_, n_, transpose_a_, transpose_b_)                      \
    {&parity_matmul_op, label, matmul_setup,                                                                \
     &(const matmul_params){batch_dims_, batch_, m_, k_, n_, transpose_a_, transpose_b_}, 0, 0}

static const op_check_case matmul_cases[] = {
    MATMUL_ROW("batch=1 M=7 K=13 N=11", 1, 1, 7, 13, 11, false, false),
    MATMUL_ROW("batch=3 M=7 K=13 N=11 transpose a", 1, 3, 7, 13, 11, true, false),
    MATMUL_ROW("batch=2 M=5 K=48 N=7 transpose b", 1, 2, 5, 48, 7, false, true),
    MATMUL_ROW("batch=3 M=7 K=13 N=11 transpose a and b", 1, 3, 7, 13, 11, true, true),
    MATMUL_ROW("batch=2 M=1 K=13 N=1", 1, 2, 1, 13, 1, false, false),
    MATMUL_ROW("batch=1 M=1 K=1 N=1 transpose a and b", 1, 1, 1, 1, 1, true, true),
    MATMUL_ROW("batch=2x3 M=4 K=5 N=3 transpose b", 2, 3, 4, 5, 3, false, true),
    MATMUL_ROW("no batch M=7 K=13 N=11", 0, 1, 7, 13, 11, false, false),
};
const op_case_list matmul_case_list = OP_CASE_LIST(matmul_cases);

// ---- invalid calls ----
static parity_error *call_matmul(int64_t b_batch, int64_t b_rows, parity_dtype output_dtype) {
    invalid_call scratch = {0};
    parity_tensor *a = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(2, 7, 13));
    parity_tensor *b = invalid_call_tensor(&scratch, PARITY_F64, PARITY_SHAPE(b_batch, b_rows, 11));
    parity_tensor *c = invalid_call_tensor(&scratch, output_dtype, PARITY_SHAPE(2, 7, 11));
    const parity_matmul_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_MATMUL);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_matmul_args){a, b, false, false, c}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_inner_sizes_differing(void) { return call_matmul(2, 12, PARITY_F64); }
static parity_error *call_with_batches_differing(void) { return call_matmul(3, 13, PARITY_F64); }
static parity_error *call_with_output_of_other_dtype(void) { return call_matmul(2, 13, PARITY_F32); }

static const op_invalid_case matmul_invalid_cases[] = {
    {PARITY_OP_MATMUL, "inner sizes differ", call_with_inner_sizes_differing,
     "matmul: b has shape (2, 12, 11), expected (2, 13, *)"},
    {PARITY_OP_MATMUL, "batch sizes differ", call_with_batches_differing,
     "matmul: b has shape (3, 13, 11), expected (2, 13, *)"},
    {PARITY_OP_MATMUL, "output dtype differs", call_with_output_of_other_dtype, "matmul: output is fp32, expected fp64"},
};
const op_invalid_list matmul_invalid_list = OP_CASE_LIST(matmul_invalid_cases);
