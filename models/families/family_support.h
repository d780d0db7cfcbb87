// family_support.h: the small vocabulary model families are written in: parameters by formatted HF
// name, the bound backend of an op (one slot of the model's bindings, by op id), and one call per
// op that takes the bound backend and the weights of an HF module ("model.layers.3.self_attn.q_proj"
// -> .weight and, when present, .bias).
#ifndef PARITY_FAMILY_SUPPORT_H
#define PARITY_FAMILY_SUPPORT_H

#include "models/autograd/nodes.h"
#include "models/model.h"

typedef struct family_context {
    parity_model *model;
    parity_tape *tape;
    const parity_batch *batch;
} family_context;

// The parameter named by the printf-style format, as a tape variable.
parity_error *family_parameter(family_context *context, parity_variable **out, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
bool family_has_parameter(family_context *context, const char *format, ...) __attribute__((format(printf, 2, 3)));
// The backend bound to `op`; an error naming the op and the model when it has none (an op the
// family calls without declaring it in its requirements, or bindings built without it).
parity_error *family_backend(family_context *context, parity_op_id op, const parity_backend **out);

// module.weight (out, in) [+ module.bias when `bias`]: input (..., in) -> (..., out)
parity_error *family_linear(family_context *context, parity_variable *input, bool bias, parity_variable **out,
                            const char *module_format, ...) __attribute__((format(printf, 5, 6)));
// module.weight (H): RMSNorm over the last dimension
parity_error *family_rms_norm(family_context *context, parity_variable *input, parity_rms_norm_variant variant,
                              parity_variable **out, const char *module_format, ...) __attribute__((format(printf, 5, 6)));
// A view of `input` with a new shape (same storage, gradient flows back).
parity_error *family_reshape(family_context *context, parity_variable *input, int ndim, const int64_t *shape,
                             parity_variable **out);

// The requirement list builder used by every family's `requirements` (`op` is a registry op name;
// repeated uses of one op merge into one requirement).
typedef struct family_requirements {
    parity_op_requirement *items;
    size_t capacity, count;
} family_requirements;
parity_error *family_require(family_requirements *list, const char *op, uint32_t capabilities, const char *why);

// Parameter specs for random initialization.
typedef struct family_specs {
    parity_parameter_spec *items;
    size_t count, capacity;
} family_specs;
parity_error *family_spec(family_specs *specs, parity_initializer initializer, int ndim, const int64_t *shape,
                          const char *format, ...) __attribute__((format(printf, 5, 6)));

#endif
