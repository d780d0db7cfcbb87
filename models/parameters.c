// parameters.c: the named parameter list behind parameters.h. Names are found through an
// open-addressing hash index of the items (a checkpoint of 40k tensors took 10 s to load while
// every add compared the new name with every earlier one).
#include "models/parameters.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t name_hash(const char *name) { // FNV-1a
    uint64_t hash = 14695981039346656037ull;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) hash = (hash ^ *c) * 1099511628211ull;
    return hash;
}

// The slot of `name`: the one holding it, or the empty slot where it would go. The index is kept
// at most half full, so a probe ends.
static size_t slot_of(const parity_parameters *parameters, const char *name) {
    size_t mask = parameters->index_capacity - 1, slot = (size_t)name_hash(name) & mask;
    while (parameters->index[slot] && strcmp(parameters->items[parameters->index[slot] - 1].name, name) != 0)
        slot = (slot + 1) & mask;
    return slot;
}

// Room in the index for one more item (rebuilt at twice the size when it would pass half full).
static parity_error *reserve_index(parity_parameters *parameters) {
    if (2 * (parameters->count + 1) <= parameters->index_capacity) return NULL;
    size_t capacity = parameters->index_capacity ? 2 * parameters->index_capacity : 128;
    size_t *index = calloc(capacity, sizeof *index);
    if (!index) return PARITY_ERROR(PARITY_ERROR_MEMORY, "indexing %zu parameter names", parameters->count + 1);
    free(parameters->index);
    parameters->index = index;
    parameters->index_capacity = capacity;
    for (size_t i = 0; i < parameters->count; i++) parameters->index[slot_of(parameters, parameters->items[i].name)] = i + 1;
    return NULL;
}

parity_error *parity_parameters_add(parity_parameters *parameters, const char *name, parity_tensor *value) {
    if (parity_parameters_find(parameters, name))
        return PARITY_ERROR(PARITY_ERROR_DATA, "parameter '%s' appears twice", name);
    PARITY_TRY(reserve_index(parameters));
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
    parameters->index[slot_of(parameters, name)] = ++parameters->count;
    return NULL;
}

parity_parameter *parity_parameters_find(const parity_parameters *parameters, const char *name) {
    if (!parameters->count) return NULL;
    size_t item = parameters->index[slot_of(parameters, name)];
    return item ? &parameters->items[item - 1] : NULL;
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
    free(parameters->index);
    memset(parameters, 0, sizeof *parameters);
}
