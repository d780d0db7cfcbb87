// parameters.h: a model's named parameters (HF in-memory names, e.g. "model.layers.0.mlp.experts.gate_up_proj")
// with their values and gradients. Insertion order is kept so reports list parameters as HF does.
#ifndef PARITY_PARAMETERS_H
#define PARITY_PARAMETERS_H

#include <stddef.h>

#include "ops/core/tensor.h"

typedef struct parity_parameter {
    char *name;
    parity_tensor value;      // owned
    parity_tensor gradient;   // owned; empty until a backward produced one
} parity_parameter;

typedef struct parity_parameters {
    parity_parameter *items;
    size_t count, capacity;
    size_t *index;            // hash slots of the names: item index + 1, 0 = empty (parameters.c)
    size_t index_capacity;    // a power of two, at least twice count
    char source[1100];        // where the values came from, for messages (the checkpoint file), or ""
} parity_parameters;

// Takes ownership of `value` (the caller's struct is reset). Duplicate names are an error.
parity_error *parity_parameters_add(parity_parameters *parameters, const char *name, parity_tensor *value);
parity_parameter *parity_parameters_find(const parity_parameters *parameters, const char *name);
// The parameter or a DATA error "checkpoint has no tensor 'name'" naming `source`.
parity_error *parity_parameters_require(const parity_parameters *parameters, const char *name, const char *source,
                                        parity_parameter **out);
void parity_parameters_release(parity_parameters *parameters);

#endif
