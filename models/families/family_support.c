// family_support.c: helpers behind family_support.h.
#include "models/families/family_support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void format_name(char *buffer, size_t size, const char *format, va_list arguments) {
    vsnprintf(buffer, size, format, arguments);
}

parity_error *family_parameter(family_context *context, parity_variable **out, const char *format, ...) {
    char name[192];
    va_list arguments;
    va_start(arguments, format);
    format_name(name, sizeof name, format, arguments);
    va_end(arguments);
    return parity_model_parameter(context->model, context->tape, name, out);
}

bool family_has_parameter(family_context *context, const char *format, ...) {
    char name[192];
    va_list arguments;
    va_start(arguments, format);
    format_name(name, sizeof name, format, arguments);
    va_end(arguments);
    return parity_parameters_find(&context->model->parameters, name) != NULL;
}

parity_error *family_backend(family_context *context, parity_op_id op, const parity_backend **out) {
    *out = (unsigned)op < PARITY_OP_ID_COUNT ? context->model->bindings.backend[op] : NULL;
    if (*out) return NULL;
    return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s calls op %s, which has no bound backend (not among its requirements, "
                        "or left out of its bindings)", context->model->config.model_type, parity_op_id_name(op));
}

parity_error *family_linear(family_context *context, parity_variable *input, bool bias, parity_variable **out,
                            const char *module_format, ...) {
    char module[160];
    va_list arguments;
    va_start(arguments, module_format);
    format_name(module, sizeof module, module_format, arguments);
    va_end(arguments);
    const parity_backend *backend;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_LINEAR, &backend));
    parity_variable *weight, *bias_variable = NULL;
    PARITY_TRY(family_parameter(context, &weight, "%s.weight", module));
    if (bias) PARITY_TRY(family_parameter(context, &bias_variable, "%s.bias", module));
    return parity_node_linear(context->tape, backend, module, input, weight, bias_variable, out);
}

parity_error *family_rms_norm(family_context *context, parity_variable *input, parity_rms_norm_variant variant,
                              parity_variable **out, const char *module_format, ...) {
    char module[160];
    va_list arguments;
    va_start(arguments, module_format);
    format_name(module, sizeof module, module_format, arguments);
    va_end(arguments);
    const parity_backend *backend;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_RMS_NORM, &backend));
    parity_variable *weight;
    PARITY_TRY(family_parameter(context, &weight, "%s.weight", module));
    return parity_node_rms_norm(context->tape, backend, module, input, weight, context->model->config.rms_norm_eps, variant, out);
}

parity_error *family_reshape(family_context *context, parity_variable *input, int ndim, const int64_t *shape,
                             parity_variable **out) {
    return parity_tape_reshape(context->tape, input, ndim, shape, out);
}

parity_error *family_require(family_requirements *list, const char *op, uint32_t capabilities, const char *why) {
    parity_op_id id;
    if (!parity_op_id_find(op, &id)) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "a model requires '%s', which is not an op", op);
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i].op == id) { // merge: the union of what every use needs
            list->items[i].capabilities |= capabilities;
            if (why && !list->items[i].why) list->items[i].why = why;
            return NULL;
        }
    if (list->count == list->capacity) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "too many ops in one model");
    list->items[list->count++] = (parity_op_requirement){id, capabilities, why};
    return NULL;
}

parity_error *family_spec(family_specs *specs, parity_initializer initializer, int ndim, const int64_t *shape,
                          const char *format, ...) {
    if (specs->count == specs->capacity) {
        size_t capacity = specs->capacity ? specs->capacity * 2 : 128;
        parity_parameter_spec *grown = realloc(specs->items, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "listing parameters");
        specs->items = grown;
        specs->capacity = capacity;
    }
    parity_parameter_spec *spec = &specs->items[specs->count++];
    memset(spec, 0, sizeof *spec);
    va_list arguments;
    va_start(arguments, format);
    format_name(spec->name, sizeof spec->name, format, arguments);
    va_end(arguments);
    spec->ndim = ndim;
    for (int i = 0; i < ndim && i < 4; i++) spec->shape[i] = shape[i];
    spec->initializer = initializer;
    return NULL;
}
