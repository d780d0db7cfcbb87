// linear.c: argument validation shared by every linear backend.
#include "ops/linear/linear.h"

#include "ops/core/cpu_math.h"

// The input's shape with its last dimension replaced by `last`.
static void shape_with_last(const parity_tensor *input, int64_t last, int64_t *shape) {
    for (int dim = 0; dim < input->ndim; dim++) shape[dim] = input->shape[dim];
    shape[input->ndim - 1] = last;
}

parity_error *parity_linear_check(const parity_linear_args *args, int64_t *rows, int64_t *in_features,
                                  int64_t *out_features) {
    const parity_tensor *input = args->input;
    PARITY_CHECK(input && input->ndim >= 1, PARITY_ERROR_SHAPE, "linear: input must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE, "linear: input is %s, expected a float dtype",
                 parity_dtype_name(input->dtype));
    *in_features = input->shape[input->ndim - 1];
    PARITY_CHECK(*in_features > 0, PARITY_ERROR_SHAPE, "linear: input has 0 features");
    *rows = input->numel / *in_features;
    PARITY_TRY(parity_check_tensor("linear", "weight", args->weight, input->dtype, 2,
                                   (int64_t[]){PARITY_ANY, *in_features}));
    *out_features = args->weight->shape[0];
    PARITY_CHECK(*out_features > 0, PARITY_ERROR_SHAPE, "linear: weight has 0 output features");
    if (args->bias)
        PARITY_TRY(parity_check_tensor("linear", "bias", args->bias, input->dtype, 1, (int64_t[]){*out_features}));
    int64_t output_shape[PARITY_MAX_DIMS];
    shape_with_last(input, *out_features, output_shape);
    PARITY_TRY(parity_check_tensor("linear", "output", args->output, input->dtype, input->ndim, output_shape));
    return NULL;
}

parity_error *parity_linear_check_grads(const parity_linear_args *args, const parity_linear_grads *grads) {
    const parity_tensor *input = args->input;
    PARITY_TRY(parity_check_tensor("linear", "doutput", grads->doutput, input->dtype, args->output->ndim,
                                   args->output->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("linear", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    if (grads->dweight)
        PARITY_TRY(parity_check_tensor("linear", "dweight", grads->dweight, input->dtype, 2, args->weight->shape));
    if (grads->dbias) {
        PARITY_CHECK(args->bias, PARITY_ERROR_SHAPE, "linear: dbias given for a call without bias");
        PARITY_TRY(parity_check_tensor("linear", "dbias", grads->dbias, input->dtype, 1, args->bias->shape));
    }
    return NULL;
}
