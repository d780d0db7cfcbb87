// matmul.c: argument validation shared by every matmul backend.
#include "ops/matmul/matmul.h"

#include "ops/core/cpu_math.h"

// a's leading dimensions followed by the two given sizes.
static void batched_shape(const parity_tensor *a, int64_t rows, int64_t columns, int64_t *shape) {
    for (int dim = 0; dim < a->ndim - 2; dim++) shape[dim] = a->shape[dim];
    shape[a->ndim - 2] = rows;
    shape[a->ndim - 1] = columns;
}

parity_error *parity_matmul_check(const parity_matmul_args *args, parity_matmul_sizes *sizes) {
    const parity_tensor *a = args->a;
    PARITY_CHECK(a && a->ndim >= 2, PARITY_ERROR_SHAPE, "matmul: a must have at least two dimensions");
    PARITY_CHECK(parity_dtype_is_float(a->dtype), PARITY_ERROR_SHAPE, "matmul: a is %s, expected a float dtype",
                 parity_dtype_name(a->dtype));
    int ndim = a->ndim;
    sizes->m = a->shape[ndim - (args->transpose_a ? 1 : 2)];
    sizes->k = a->shape[ndim - (args->transpose_a ? 2 : 1)];
    sizes->batch = 1;
    for (int dim = 0; dim < ndim - 2; dim++) sizes->batch *= a->shape[dim];
    int64_t shape[PARITY_MAX_DIMS];
    if (args->transpose_b) batched_shape(a, PARITY_ANY, sizes->k, shape);
    else batched_shape(a, sizes->k, PARITY_ANY, shape);
    PARITY_TRY(parity_check_tensor("matmul", "b", args->b, a->dtype, ndim, shape));
    sizes->n = args->b->shape[ndim - (args->transpose_b ? 2 : 1)];
    batched_shape(a, sizes->m, sizes->n, shape);
    PARITY_TRY(parity_check_tensor("matmul", "output", args->output, a->dtype, ndim, shape));
    return NULL;
}

parity_error *parity_matmul_check_grads(const parity_matmul_args *args, const parity_matmul_grads *grads) {
    const parity_tensor *a = args->a, *b = args->b;
    PARITY_TRY(parity_check_tensor("matmul", "doutput", grads->doutput, a->dtype, a->ndim, args->output->shape));
    if (grads->da) PARITY_TRY(parity_check_tensor("matmul", "da", grads->da, a->dtype, a->ndim, a->shape));
    if (grads->db) PARITY_TRY(parity_check_tensor("matmul", "db", grads->db, a->dtype, b->ndim, b->shape));
    return NULL;
}
