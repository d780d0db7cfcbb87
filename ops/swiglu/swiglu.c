// swiglu.c: argument validation shared by every SwiGLU backend.
#include "ops/swiglu/swiglu.h"

#include "ops/core/cpu_math.h"

parity_error *parity_swiglu_check(const parity_swiglu_args *args) {
    const parity_tensor *gate = args->gate;
    PARITY_CHECK(gate && gate->ndim >= 1, PARITY_ERROR_SHAPE, "swiglu: gate must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(gate->dtype), PARITY_ERROR_SHAPE, "swiglu: gate is %s, expected a float dtype",
                 parity_dtype_name(gate->dtype));
    PARITY_TRY(parity_check_tensor("swiglu", "up", args->up, gate->dtype, gate->ndim, gate->shape));
    PARITY_TRY(parity_check_tensor("swiglu", "output", args->output, gate->dtype, gate->ndim, gate->shape));
    return NULL;
}

parity_error *parity_swiglu_check_grads(const parity_swiglu_args *args, const parity_swiglu_grads *grads) {
    const parity_tensor *gate = args->gate;
    PARITY_TRY(parity_check_tensor("swiglu", "doutput", grads->doutput, gate->dtype, gate->ndim, gate->shape));
    if (grads->dgate) PARITY_TRY(parity_check_tensor("swiglu", "dgate", grads->dgate, gate->dtype, gate->ndim, gate->shape));
    if (grads->dup) PARITY_TRY(parity_check_tensor("swiglu", "dup", grads->dup, gate->dtype, gate->ndim, gate->shape));
    return NULL;
}
