// gather_rows.c: every rank's rows gathered on every rank, as a tape node (parallel_nodes.h); its
// backward is the reduce-scatter that gives each rank the sum of every rank's gradient of its rows.
#include <stdlib.h>
#include <string.h>

#include "models/parallel/parallel_nodes.h"

typedef struct gather_rows_record {
    parity_variable *input, *output;
    parity_comm *group;
} gather_rows_record;

static parity_error *gather_rows_backward(parity_tape *tape, parity_node *node) {
    gather_rows_record *record = node->data;
    if (!record->output->has_gradient || !record->input->requires_gradient) return NULL;
    parity_tensor gradient;
    const parity_tensor *x = &record->input->value;
    PARITY_TRY(parity_tensor_alloc(&gradient, x->dtype, PARITY_CPU, x->ndim, x->shape));
    parity_error *error = parity_comm_reduce_scatter(record->group, record->output->gradient.data, gradient.data,
                                                     gradient.numel, gradient.dtype);
    if (!error) error = parity_variable_accumulate(record->input, &gradient);
    parity_tensor_release(&gradient);
    return error;
}

parity_error *parity_node_gather_rows(parity_tape *tape, const char *name, parity_comm *group, parity_variable *input,
                                      parity_variable **out) {
    const parity_tensor *x = &input->value;
    PARITY_CHECK(x->device.type == PARITY_DEVICE_CPU && parity_tensor_is_contiguous(x) && x->ndim >= 1, PARITY_ERROR_USAGE,
                 "%s: gathering rows over the %s group: the input must be a contiguous CPU tensor (the MPI transport)", name,
                 parity_comm_name(group));
    int64_t rows = x->shape[0];
    PARITY_TRY(parity_comm_check_agreement(group, "a row count to gather", &rows, sizeof rows));
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[0] = rows * parity_comm_size(group);
    parity_tensor y;
    PARITY_TRY(parity_tensor_alloc(&y, x->dtype, PARITY_CPU, x->ndim, shape));
    parity_error *error = parity_comm_all_gather(group, x->data, y.data, x->numel, x->dtype);
    if (!error) error = parity_tape_adopt(tape, name, &y, input->requires_gradient, out);
    if (error) {
        parity_tensor_release(&y);
        return parity_error_wrap(error, __FILE__, __LINE__, "%s: gathering rows over the %s group", name,
                                 parity_comm_name(group));
    }
    gather_rows_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording a row gather");
    *record = (gather_rows_record){input, *out, group};
    return parity_tape_push(tape, "gather_rows", "mpi", gather_rows_backward, NULL, record);
}
