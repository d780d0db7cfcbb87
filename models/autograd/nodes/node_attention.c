// node_attention.c: attention on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct attention_record {
    const parity_attention_kernels *kernels;
    parity_attention_args args;
    parity_variable *query, *key, *value, *output;
} attention_record;

static parity_error *attention_backward(parity_tape *tape, parity_node *node) {
    attention_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot slots[3];
    parity_variable *inputs[3] = {record->query, record->key, record->value};
    parity_error *error = NULL;
    int opened = 0;
    for (; opened < 3 && !error; opened++) error = parity_gradient_slot_open(&slots[opened], inputs[opened]);
    if (!error) {
        parity_attention_grads grads = {&record->output->gradient, slots[0].target, slots[1].target, slots[2].target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < opened; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    return error;
}

parity_error *parity_node_attention(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                    parity_variable *key, parity_variable *value, const parity_tensor *cu_seqlens, double scale,
                                    bool causal, int64_t sliding_window, parity_variable **out) {
    bool needs_gradient = query->requires_gradient || key->requires_gradient || value->requires_gradient;
    PARITY_TRY(parity_tape_new_variable(tape, name, query->value.dtype,
                                        PARITY_SHAPE(query->value.shape[0], query->value.shape[1], value->value.shape[2]),
                                        needs_gradient, out));
    attention_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording attention");
    *record = (attention_record){backend->kernels,
                                {&query->value, &key->value, &value->value, cu_seqlens, scale, causal, sliding_window, &(*out)->value},
                                query, key, value, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_ATTENTION, backend->name, name, error, &saved, record, attention_backward);
}
