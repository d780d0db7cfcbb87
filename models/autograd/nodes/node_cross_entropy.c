// node_cross_entropy.c: the causal-LM loss on the tape (hidden states + lm_head weight in, scalar
// out; the logits too when asked, never differentiated).
#include <stdio.h>

#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

parity_error *parity_node_cross_entropy(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *hidden, parity_variable *weight, const parity_tensor *targets,
                                        int64_t num_items_in_batch, parity_variable **loss, parity_variable **logits) {
    parity_dtype loss_dtype = hidden->value.dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_TRY(parity_tape_new_variable(tape, name, loss_dtype, 0, NULL, true, loss));
    if (logits) {
        char logits_name[128];
        snprintf(logits_name, sizeof logits_name, "%s (logits)", name);
        PARITY_TRY(parity_tape_new_variable(tape, logits_name, hidden->value.dtype,
                                            PARITY_SHAPE(hidden->value.shape[0], weight->value.shape[0]), false, logits));
    }
    parity_cross_entropy_args attributes = {.ignore_index = PARITY_CROSS_ENTROPY_IGNORE_INDEX,
                                            .num_items_in_batch = num_items_in_batch, .chunk_size = 0, .valid_count = NULL};
    return parity_node_op(tape, &parity_cross_entropy_op, backend, name, &attributes,
                          (parity_node_operand[]){{hidden}, {weight}, {.tensor = targets}, {*loss}, {logits ? *logits : NULL}});
}
