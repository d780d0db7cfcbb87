// tape.c: variables, nodes and the reverse sweep behind tape.h.
#include "models/autograd/tape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void parity_tape_init(parity_tape *tape, const parity_exec *exec, parity_dtype dtype, bool recording) {
    memset(tape, 0, sizeof *tape);
    tape->exec = exec;
    tape->device = exec->device;
    tape->dtype = dtype;
    tape->recording = recording;
}

static void release_node(parity_node *node) {
    parity_saved_release(&node->saved);
    free(node->data);
    memset(node, 0, sizeof *node);
}

void parity_tape_release(parity_tape *tape) {
    for (size_t i = 0; i < tape->node_count; i++) release_node(&tape->nodes[i]);
    for (size_t i = 0; i < tape->variable_count; i++) {
        parity_tensor_release(&tape->variables[i]->value);
        parity_tensor_release(&tape->variables[i]->gradient);
        free(tape->variables[i]);
    }
    for (size_t i = 0; i < tape->block_mask_count; i++) {
        parity_block_mask_free(&tape->block_masks[i]->mask);
        free(tape->block_masks[i]);
    }
    free(tape->block_masks);
    free(tape->nodes);
    free(tape->variables);
    memset(tape, 0, sizeof *tape);
}

static parity_error *add_variable(parity_tape *tape, const char *name, bool requires_gradient, parity_variable **out) {
    if (tape->variable_count == tape->variable_capacity) {
        size_t capacity = tape->variable_capacity ? tape->variable_capacity * 2 : 256;
        parity_variable **grown = realloc(tape->variables, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "growing the tape's variables");
        tape->variables = grown;
        tape->variable_capacity = capacity;
    }
    parity_variable *variable = calloc(1, sizeof *variable);
    if (!variable) return PARITY_ERROR(PARITY_ERROR_MEMORY, "allocating variable %s", name);
    snprintf(variable->name, sizeof variable->name, "%s", name);
    variable->exec = tape->exec;
    variable->requires_gradient = requires_gradient;
    tape->variables[tape->variable_count++] = variable;
    *out = variable;
    return NULL;
}

parity_error *parity_tape_new_variable(parity_tape *tape, const char *name, parity_dtype dtype, int ndim,
                                       const int64_t *shape, bool requires_gradient, parity_variable **out) {
    PARITY_TRY(add_variable(tape, name, requires_gradient, out));
    PARITY_TRY_CONTEXT(parity_tensor_alloc(&(*out)->value, dtype, tape->device, ndim, shape), "allocating %s", name);
    return NULL;
}

parity_error *parity_tape_borrow(parity_tape *tape, const char *name, const parity_tensor *value, bool requires_gradient,
                                 parity_variable **out) {
    PARITY_TRY(add_variable(tape, name, requires_gradient, out));
    (*out)->value = *value;
    (*out)->value.owns_data = false;
    (*out)->value.allocated_bytes = 0;
    return NULL;
}

parity_error *parity_tape_adopt(parity_tape *tape, const char *name, parity_tensor *value, bool requires_gradient,
                                parity_variable **out) {
    PARITY_TRY(add_variable(tape, name, requires_gradient, out));
    (*out)->value = *value;
    memset(value, 0, sizeof *value);
    return NULL;
}

typedef struct reshape_record {
    parity_variable *source, *output;
} reshape_record;

static parity_error *reshape_backward(parity_tape *tape, parity_node *node) {
    const reshape_record *record = node->data;
    if (!record->output->has_gradient || !record->source->requires_gradient) return NULL;
    parity_tensor view;
    PARITY_TRY(parity_tensor_reshape(&view, &record->output->gradient, record->source->value.ndim, record->source->value.shape));
    return parity_variable_accumulate(record->source, &view);
}

parity_error *parity_tape_reshape(parity_tape *tape, parity_variable *source, int ndim, const int64_t *shape,
                                  parity_variable **out) {
    parity_tensor view;
    PARITY_TRY_CONTEXT(parity_tensor_reshape(&view, &source->value, ndim, shape), "reshaping %s", source->name);
    PARITY_TRY(parity_tape_borrow(tape, source->name, &view, source->requires_gradient, out));
    if (!tape->recording || !source->requires_gradient) return NULL;
    reshape_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording a reshape");
    record->source = source;
    record->output = *out;
    return parity_tape_push(tape, "reshape", "view", reshape_backward, NULL, record);
}

parity_error *parity_tape_push(parity_tape *tape, const char *op, const char *backend, parity_node_backward backward,
                               parity_saved *saved, void *data) {
    if (tape->profile) {
        parity_error *error = parity_tape_profile_forward(tape->profile, op, backend);
        if (error) {
            if (saved) parity_saved_release(saved);
            free(data);
            return error;
        }
    }
    if (!tape->recording) {
        if (saved) parity_saved_release(saved);
        free(data);
        return NULL;
    }
    if (tape->node_count == tape->node_capacity) {
        size_t capacity = tape->node_capacity ? tape->node_capacity * 2 : 256;
        parity_node *grown = realloc(tape->nodes, capacity * sizeof *grown);
        if (!grown) {
            if (saved) parity_saved_release(saved);
            free(data);
            return PARITY_ERROR(PARITY_ERROR_MEMORY, "growing the tape's nodes");
        }
        tape->nodes = grown;
        tape->node_capacity = capacity;
    }
    parity_node *node = &tape->nodes[tape->node_count++];
    memset(node, 0, sizeof *node);
    node->variable_end = tape->variable_count;
    node->op = op;
    node->backend = backend;
    node->backward = backward;
    node->data = data;
    if (saved) {
        node->saved = *saved;
        memset(saved, 0, sizeof *saved);
    }
    return NULL;
}

parity_error *parity_tape_record(parity_tape *tape, const char *op, const char *backend, const char *name,
                                 parity_error *forward_error, parity_saved *saved, void *record,
                                 parity_node_backward backward) {
    if (forward_error) {
        parity_saved_release(saved);
        free(record);
        return parity_error_wrap(forward_error, __FILE__, __LINE__, "%s: %s (%s)", name, op, backend);
    }
    return parity_tape_push(tape, op, backend, backward, saved, record);
}

parity_error *parity_variable_accumulate(parity_variable *variable, const parity_tensor *contribution) {
    if (!variable->requires_gradient) return NULL;
    variable->gradient_written = true;
    if (!variable->has_gradient) {
        PARITY_TRY(parity_tensor_alloc(&variable->gradient, variable->value.dtype, variable->value.device, variable->value.ndim,
                                       variable->value.shape));
        PARITY_TRY_CONTEXT(parity_tensor_copy(&variable->gradient, contribution), "first gradient of %s", variable->name);
        variable->has_gradient = true;
        return NULL;
    }
    PARITY_TRY_CONTEXT(parity_tensor_add_into(variable->exec, &variable->gradient, contribution),
                       "accumulating the gradient of %s", variable->name);
    return NULL;
}

parity_error *parity_variable_gradient_target(parity_variable *variable, parity_tensor *scratch, parity_tensor **target,
                                              bool *direct) {
    memset(scratch, 0, sizeof *scratch);
    if (!variable->has_gradient) {
        PARITY_TRY(parity_tensor_alloc(&variable->gradient, variable->value.dtype, variable->value.device, variable->value.ndim,
                                       variable->value.shape));
        variable->gradient_written = true; // the backward writes into it directly
        *target = &variable->gradient;
        *direct = true;
        return NULL;
    }
    PARITY_TRY(parity_tensor_alloc(scratch, variable->value.dtype, variable->value.device, variable->value.ndim,
                                   variable->value.shape));
    *target = scratch;
    *direct = false;
    return NULL;
}

parity_error *parity_variable_gradient_commit(parity_variable *variable, parity_tensor *scratch, bool direct) {
    if (direct) {
        variable->has_gradient = true;
        return NULL;
    }
    parity_error *error = parity_variable_accumulate(variable, scratch);
    parity_tensor_release(scratch);
    return error;
}

// *finite = no NaN/Inf in a float tensor, by one reduction (a NaN or Inf makes the sum of squares
// non-finite). Integer tensors and non-contiguous device views (whose source is checked) count as
// finite.
static parity_error *is_finite(const parity_exec *exec, const parity_tensor *tensor, bool *finite) {
    *finite = true;
    if (!parity_dtype_is_float(tensor->dtype) || !tensor->data || !tensor->numel) return NULL;
    if (tensor->device.type != PARITY_DEVICE_CPU && !parity_tensor_is_contiguous(tensor)) return NULL;
    double sum = 0;
    PARITY_TRY(parity_tensor_sum_of_squares(exec, tensor, &sum));
    *finite = isfinite(sum);
    return NULL;
}

// A checking tape, after `node`'s backward: the gradients it wrote, the first non-finite one named.
static parity_error *check_written_gradients(parity_tape *tape, const parity_node *node) {
    for (size_t i = 0; i < tape->variable_count; i++) {
        parity_variable *variable = tape->variables[i];
        if (!variable->gradient_written) continue;
        variable->gradient_written = false;
        if (tape->first_non_finite[0] || !variable->has_gradient) continue;
        bool finite;
        PARITY_TRY(is_finite(tape->exec, &variable->gradient, &finite));
        if (!finite)
            snprintf(tape->first_non_finite, sizeof tape->first_non_finite, "gradient of %s (backward of %s, %s)",
                     variable->name, node->op, node->backend);
    }
    return NULL;
}

parity_error *parity_tape_find_non_finite_value(parity_tape *tape, char *where, size_t size) {
    where[0] = '\0';
    size_t node = 0; // the first node pushed after variable v was made: the one that produced it
    for (size_t v = 0; v < tape->variable_count; v++) {
        const parity_variable *variable = tape->variables[v];
        while (node < tape->node_count && tape->nodes[node].variable_end <= v) node++;
        bool finite;
        PARITY_TRY(is_finite(tape->exec, &variable->value, &finite));
        if (finite) continue;
        if (!variable->value.owns_data) snprintf(where, size, "%s (an input of the step)", variable->name);
        else if (node < tape->node_count)
            snprintf(where, size, "%s (forward of %s, %s)", variable->name, tape->nodes[node].op, tape->nodes[node].backend);
        else snprintf(where, size, "%s (forward)", variable->name);
        return NULL;
    }
    return NULL;
}

parity_error *parity_tape_backward(parity_tape *tape, parity_variable *loss) {
    if (!tape->recording) return PARITY_ERROR(PARITY_ERROR_USAGE, "backward on a tape that did not record");
    if (loss->value.numel != 1) return PARITY_ERROR(PARITY_ERROR_USAGE, "backward from %s, which is not a scalar", loss->name);
    parity_tensor one;
    PARITY_TRY(parity_tensor_alloc(&one, loss->value.dtype, PARITY_CPU, loss->value.ndim, loss->value.shape));
    parity_tensor_set(&one, 0, 1.0);
    parity_tensor on_device = one;
    parity_error *error = NULL;
    if (tape->device.type != PARITY_DEVICE_CPU) {
        error = parity_tensor_to(&on_device, &one, tape->device, loss->value.dtype);
    }
    if (!error) error = parity_variable_accumulate(loss, &on_device);
    if (tape->device.type != PARITY_DEVICE_CPU) parity_tensor_release(&on_device);
    parity_tensor_release(&one);
    for (size_t i = tape->node_count; i-- > 0 && !error;) {
        parity_node *node = &tape->nodes[i];
        double started = 0, finished = 0;
        if (tape->profile) error = parity_tape_profile_sync(tape->profile, &started);
        if (!error) error = node->backward(tape, node);
        if (!error && tape->check_gradients) error = check_written_gradients(tape, node);
        if (!error && tape->profile) error = parity_tape_profile_sync(tape->profile, &finished);
        if (!error && tape->profile)
            error = parity_tape_profile_backward(tape->profile, node->op, node->backend, (finished - started) * 1e3);
        if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "backward of node %zu (%s, %s)", i, node->op, node->backend);
        parity_saved_release(&node->saved); // free as we go: backward memory stays at the forward's peak
    }
    return error;
}
