// parameters.c: the named parameter list behind parameters.h (linear search: a model has hundreds
// of parameters at most, looked up once when the model is built).
#include "models/parameters.h"

#include <stdlib.h>
#include <string.h>

parity_error *parity_parameters_add(parity_parameters *parameters, const char *name, parity_tensor *value) {
    if (parity_parameters_find(parameters, name))
        return PARITY_ERROR(PARITY_ERROR_DATA, "parameter '%s' appears twice", name);
    if (parameters->count == parameters->capacity) {
        size_t capacity = parameters->capacity ? parameters->capacity * 2 : 64;
        parity_parameter *grown = realloc(parameters->items, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "growing the parameter list");
        parameters->items = grown;
        parameters->capacity = capacity;
    }
    parity_parameter *parameter = &parameters->items[parameters->count];
    memset(parameter, 0, sizeof *parameter);
    parameter->name = strdup(name);
    if (!parameter->name) return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying parameter name %s", name);
    parameter->value = *value;
    memset(value, 0, sizeof *value);
    parameters->count++;
    return NULL;
}

parity_parameter *parity_parameters_find(const parity_parameters *parameters, const char *name) {
    for (size_t i = 0; i < parameters->count; i++)
        if (strcmp(parameters->items[i].name, name) == 0) return &parameters->items[i];
    return NULL;
}

parity_error *parity_parameters_require(const parity_parameters *parameters, const char *name, const char *source,
                                        parity_parameter **out) {
    *out = parity_parameters_find(parameters, name);
    if (!*out) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: no tensor named '%s'", source, name);
    return NULL;
}

void parity_parameters_release(parity_parameters *parameters) {
    for (size_t i = 0; i < parameters->count; i++) {
        free(parameters->items[i].name);
        parity_tensor_release(&parameters->items[i].value);
        parity_tensor_release(&parameters->items[i].gradient);
    }
    free(parameters->items);
    memset(parameters, 0, sizeof *parameters);
}
