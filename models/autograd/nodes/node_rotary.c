// node_rotary.c: rotary position embedding of query and key on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct rotary_record {
    const parity_rotary_kernels *kernels;
    parity_rope_description rope; // a copy: the args point here
    parity_rotary_args args;
    parity_variable *query, *key, *query_out, *key_out;
} rotary_record;

static parity_error *rotary_backward(parity_tape *tape, parity_node *node) {
    rotary_record *record = node->data;
    if (!record->query_out->has_gradient && !record->key_out->has_gradient) return NULL;
    parity_tensor zero_query = {0}, zero_key = {0}; // an output nobody used still needs a gradient for this contract
    parity_error *error = NULL;
    if (!record->query_out->has_gradient)
        error = parity_tensor_zeros(&zero_query, record->query_out->value.dtype, record->query_out->value.device,
                                    record->query_out->value.ndim, record->query_out->value.shape);
    if (!error && !record->key_out->has_gradient)
        error = parity_tensor_zeros(&zero_key, record->key_out->value.dtype, record->key_out->value.device,
                                    record->key_out->value.ndim, record->key_out->value.shape);
    parity_gradient_slot query = {0}, key = {0};
    if (!error) error = parity_gradient_slot_open(&query, record->query);
    if (!error) error = parity_gradient_slot_open(&key, record->key);
    if (!error) {
        parity_rotary_grads grads = {record->query_out->has_gradient ? &record->query_out->gradient : &zero_query,
                                     record->key_out->has_gradient ? &record->key_out->gradient : &zero_key, query.target,
                                     key.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&query);
    if (!error) error = parity_gradient_slot_close(&key);
    parity_gradient_slot_abandon(&query);
    parity_gradient_slot_abandon(&key);
    parity_tensor_release(&zero_query);
    parity_tensor_release(&zero_key);
    return error;
}

parity_error *parity_node_rotary(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                 parity_variable *key, const parity_tensor *positions, const parity_rope_description *rope,
                                 parity_variable **query_out, parity_variable **key_out) {
    parity_variable *query_result, *key_result;
    PARITY_TRY(parity_tape_new_variable(tape, name, query->value.dtype, query->value.ndim, query->value.shape,
                                        query->requires_gradient, &query_result));
    PARITY_TRY(parity_tape_new_variable(tape, name, key->value.dtype, key->value.ndim, key->value.shape, key->requires_gradient,
                                        &key_result));
    rotary_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording rotary");
    record->kernels = backend->kernels;
    record->rope = *rope;
    record->args = (parity_rotary_args){&query->value, &key->value, positions, &record->rope, &query_result->value,
                                        &key_result->value};
    record->query = query;
    record->key = key;
    record->query_out = query_result;
    record->key_out = key_result;
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    *query_out = query_result;
    *key_out = key_result;
    return parity_tape_record(tape, PARITY_OP_ROTARY, backend->name, name, error, &saved, record, rotary_backward);
}
