// expert_parallel.c: expert-parallel dispatch and combine as tape nodes (parallel_nodes.h): the
// tokens' (token, slot) items travel to the rank holding their expert by an uneven all-to-all, the
// experts run there on what arrived (any moe_experts backend, K = 1 per item), and the outputs come
// back the same way. Sums over a token's items are in f64 in the order the items were sent, rounded
// once to the activation dtype.
#include <stdlib.h>
#include <string.h>

#include "models/parallel/parallel_nodes.h"

struct parity_expert_plan {
    parity_comm *experts;
    int size;
    int64_t tokens, slots, width;      // N, K, H
    int64_t sent, received;            // items this rank sends (N K), receives (M)
    parity_variable *hidden, *weights, *received_hidden, *received_weights;
    int64_t *send_counts, *recv_counts; // (size) items per rank
    int64_t *items;                     // (N K): the item n K + j at each send position
};

// rows (count, width) of `element` bytes: out[p] = in[map[p]] (gather) or out[map[p]] = in[p] (scatter)
static void move_rows(const char *in, char *out, const int64_t *map, int64_t count, size_t row_bytes, bool gather) {
    for (int64_t p = 0; p < count; p++) {
        if (gather) memcpy(out + (size_t)p * row_bytes, in + (size_t)map[p] * row_bytes, row_bytes);
        else memcpy(out + (size_t)map[p] * row_bytes, in + (size_t)p * row_bytes, row_bytes);
    }
}

// The uneven exchange of `rows` of `row_elements` each: forward (counts as planned) or back.
static parity_error *exchange_rows(const parity_expert_plan *plan, bool back, const void *send, void *recv,
                                   int64_t row_elements, parity_dtype dtype) {
    int64_t *counts = malloc(2 * (size_t)plan->size * sizeof *counts);
    if (!counts) return PARITY_ERROR(PARITY_ERROR_MEMORY, "expert exchange counts");
    for (int r = 0; r < plan->size; r++) {
        counts[r] = (back ? plan->recv_counts[r] : plan->send_counts[r]) * row_elements;
        counts[plan->size + r] = (back ? plan->send_counts[r] : plan->recv_counts[r]) * row_elements;
    }
    parity_error *error = parity_comm_all_to_all_v(plan->experts, send, counts, recv, counts + plan->size, dtype);
    free(counts);
    return error;
}

// A (count, width) tensor of `dtype` from f64 sums: each token's items added into row n in item order.
static parity_error *sum_items(const parity_expert_plan *plan, const parity_tensor *items, parity_dtype dtype,
                               parity_tensor *out) {
    parity_tensor sums, item_values;
    PARITY_TRY(parity_tensor_zeros(&sums, PARITY_F64, PARITY_CPU, PARITY_SHAPE(plan->tokens, plan->width)));
    parity_error *error = parity_tensor_to(&item_values, items, PARITY_CPU, PARITY_F64);
    if (!error) {
        double *to = sums.data;
        const double *from = item_values.data;
        for (int64_t p = 0; p < plan->sent; p++) {
            const int64_t token = plan->items[p] / plan->slots;
            for (int64_t h = 0; h < plan->width; h++) to[token * plan->width + h] += from[p * plan->width + h];
        }
        parity_tensor_release(&item_values);
        error = parity_tensor_to(out, &sums, PARITY_CPU, dtype);
    }
    parity_tensor_release(&sums);
    return error;
}

static parity_error *dispatch_backward(parity_tape *tape, parity_node *node) {
    parity_expert_plan *plan = node->data;
    const int64_t H = plan->width;
    parity_error *error = NULL;
    if (plan->received_hidden->has_gradient && plan->hidden->requires_gradient) {
        const parity_tensor *gradient = &plan->received_hidden->gradient;
        parity_tensor items, summed;
        error = parity_tensor_alloc(&items, gradient->dtype, PARITY_CPU, PARITY_SHAPE(plan->sent, H));
        if (!error) {
            error = exchange_rows(plan, true, gradient->data, items.data, H, gradient->dtype);
            if (!error) error = sum_items(plan, &items, plan->hidden->value.dtype, &summed);
            if (!error) error = parity_variable_accumulate(plan->hidden, &summed);
            if (!error) parity_tensor_release(&summed);
            parity_tensor_release(&items);
        }
    }
    if (!error && plan->received_weights->has_gradient && plan->weights->requires_gradient) {
        const parity_tensor *gradient = &plan->received_weights->gradient;
        const size_t element = parity_dtype_size(gradient->dtype);
        parity_tensor items, per_slot;
        error = parity_tensor_alloc(&items, gradient->dtype, PARITY_CPU, PARITY_SHAPE(plan->sent));
        if (!error) error = parity_tensor_alloc(&per_slot, gradient->dtype, PARITY_CPU, PARITY_SHAPE(plan->tokens, plan->slots));
        if (!error) {
            error = exchange_rows(plan, true, gradient->data, items.data, 1, gradient->dtype);
            if (!error) move_rows(items.data, per_slot.data, plan->items, plan->sent, element, false);
            if (!error) error = parity_variable_accumulate(plan->weights, &per_slot);
            parity_tensor_release(&per_slot);
        }
        parity_tensor_release(&items);
    }
    return error;
}

parity_error *parity_node_expert_dispatch(parity_tape *tape, const char *name, parity_comm *experts, int64_t num_experts,
                                          parity_variable *hidden, parity_variable *indices, parity_variable *weights,
                                          parity_variable **received_hidden, parity_variable **local_indices,
                                          parity_variable **received_weights, const parity_expert_plan **plan_out) {
    const parity_tensor *x = &hidden->value, *index = &indices->value, *weight = &weights->value;
    const int size = parity_comm_size(experts);
    PARITY_CHECK(x->device.type == PARITY_DEVICE_CPU && index->device.type == PARITY_DEVICE_CPU &&
                     weight->device.type == PARITY_DEVICE_CPU && parity_tensor_is_contiguous(x) &&
                     parity_tensor_is_contiguous(index) && parity_tensor_is_contiguous(weight),
                 PARITY_ERROR_USAGE, "%s: expert dispatch: contiguous CPU tensors only (the MPI transport)", name);
    PARITY_CHECK(x->ndim == 2 && index->ndim == 2 && index->dtype == PARITY_I64 && index->shape[0] == x->shape[0] &&
                     weight->ndim == 2 && weight->shape[0] == x->shape[0] && weight->shape[1] == index->shape[1],
                 PARITY_ERROR_SHAPE, "%s: expert dispatch: hidden (N, H), indices (N, K) int64 and weights (N, K) expected", name);
    PARITY_CHECK(num_experts % size == 0, PARITY_ERROR_UNSUPPORTED, "%s: %lld experts do not split over %d expert-parallel ranks",
                 name, (long long)num_experts, size);
    const int64_t N = x->shape[0], K = index->shape[1], H = x->shape[1], local_experts = num_experts / size;
    parity_expert_plan *plan = calloc(1, sizeof *plan + (2 * (size_t)size + (size_t)(N * K)) * sizeof(int64_t));
    if (!plan) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: expert dispatch plan", name);
    plan->experts = experts, plan->size = size, plan->tokens = N, plan->slots = K, plan->width = H, plan->sent = N * K;
    plan->send_counts = (int64_t *)(plan + 1);
    plan->recv_counts = plan->send_counts + size;
    plan->items = plan->recv_counts + size;
    plan->hidden = hidden, plan->weights = weights;
    // a stable counting sort of the items by destination rank
    const int64_t *expert = index->data;
    parity_error *error = NULL;
    for (int64_t i = 0; i < N * K && !error; i++) {
        if (expert[i] < 0 || expert[i] >= num_experts)
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: expert index %lld at item %lld is not one of the %lld experts", name,
                                 (long long)expert[i], (long long)i, (long long)num_experts);
        else plan->send_counts[expert[i] / local_experts]++;
    }
    int64_t *next = calloc((size_t)size, sizeof *next);
    if (!error && !next) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: expert dispatch", name);
    for (int r = 1; !error && r < size; r++) next[r] = next[r - 1] + plan->send_counts[r - 1];
    for (int64_t i = 0; !error && i < N * K; i++) plan->items[next[expert[i] / local_experts]++] = i;
    free(next);
    if (!error) error = parity_comm_all_to_all(experts, plan->send_counts, plan->recv_counts, 1, PARITY_I64);
    for (int r = 0; !error && r < size; r++) plan->received += plan->recv_counts[r];
    if (error) {
        free(plan);
        return parity_error_wrap(error, __FILE__, __LINE__, "%s: expert dispatch over the %s group", name,
                                 parity_comm_name(experts));
    }
    const int64_t M = plan->received;
    parity_tensor send_rows = {0}, send_index = {0}, send_weight = {0}, got_rows = {0}, got_index = {0}, got_weight = {0};
    const size_t row_bytes = (size_t)H * parity_dtype_size(x->dtype), weight_bytes = parity_dtype_size(weight->dtype);
    error = parity_tensor_alloc(&send_rows, x->dtype, PARITY_CPU, PARITY_SHAPE(N * K, H));
    if (!error) error = parity_tensor_alloc(&send_index, PARITY_I64, PARITY_CPU, PARITY_SHAPE(N * K));
    if (!error) error = parity_tensor_alloc(&send_weight, weight->dtype, PARITY_CPU, PARITY_SHAPE(N * K));
    if (!error) error = parity_tensor_alloc(&got_rows, x->dtype, PARITY_CPU, PARITY_SHAPE(M, H));
    if (!error) error = parity_tensor_alloc(&got_index, PARITY_I64, PARITY_CPU, PARITY_SHAPE(M, 1));
    if (!error) error = parity_tensor_alloc(&got_weight, weight->dtype, PARITY_CPU, PARITY_SHAPE(M, 1));
    if (!error) {
        int64_t *local = send_index.data;
        for (int64_t p = 0; p < N * K; p++) {
            const int64_t item = plan->items[p];
            memcpy((char *)send_rows.data + (size_t)p * row_bytes, (const char *)x->data + (size_t)(item / K) * row_bytes,
                   row_bytes);
            local[p] = expert[item] % local_experts;
        }
        move_rows(weight->data, send_weight.data, plan->items, N * K, weight_bytes, true);
        error = exchange_rows(plan, false, send_rows.data, got_rows.data, H, x->dtype);
    }
    if (!error) error = exchange_rows(plan, false, send_index.data, got_index.data, 1, PARITY_I64);
    if (!error) error = exchange_rows(plan, false, send_weight.data, got_weight.data, 1, weight->dtype);
    parity_tensor_release(&send_rows), parity_tensor_release(&send_index), parity_tensor_release(&send_weight);
    if (!error) error = parity_tape_adopt(tape, name, &got_rows, hidden->requires_gradient, received_hidden);
    if (!error) error = parity_tape_adopt(tape, name, &got_index, false, local_indices);
    if (!error) error = parity_tape_adopt(tape, name, &got_weight, weights->requires_gradient, received_weights);
    if (error) {
        parity_tensor_release(&got_rows), parity_tensor_release(&got_index), parity_tensor_release(&got_weight);
        free(plan);
        return parity_error_wrap(error, __FILE__, __LINE__, "%s: expert dispatch over the %s group", name,
                                 parity_comm_name(experts));
    }
    plan->received_hidden = *received_hidden, plan->received_weights = *received_weights;
    *plan_out = plan;
    return parity_tape_push(tape, "expert_dispatch", "mpi", dispatch_backward, NULL, plan);
}

typedef struct combine_record {
    const parity_expert_plan *plan;
    parity_variable *expert_outputs, *output;
} combine_record;

static parity_error *combine_backward(parity_tape *tape, parity_node *node) {
    combine_record *record = node->data;
    const parity_expert_plan *plan = record->plan;
    if (!record->output->has_gradient || !record->expert_outputs->requires_gradient) return NULL;
    const parity_tensor *gradient = &record->output->gradient;
    const size_t row_bytes = (size_t)plan->width * parity_dtype_size(gradient->dtype);
    parity_tensor per_item, items;
    PARITY_TRY(parity_tensor_alloc(&per_item, gradient->dtype, PARITY_CPU, PARITY_SHAPE(plan->sent, plan->width)));
    parity_error *error = parity_tensor_alloc(&items, gradient->dtype, PARITY_CPU, PARITY_SHAPE(plan->received, plan->width));
    if (!error) {
        for (int64_t p = 0; p < plan->sent; p++)
            memcpy((char *)per_item.data + (size_t)p * row_bytes,
                   (const char *)gradient->data + (size_t)(plan->items[p] / plan->slots) * row_bytes, row_bytes);
        error = exchange_rows(plan, false, per_item.data, items.data, plan->width, gradient->dtype);
        if (!error) error = parity_variable_accumulate(record->expert_outputs, &items);
        parity_tensor_release(&items);
    }
    parity_tensor_release(&per_item);
    return error;
}

parity_error *parity_node_expert_combine(parity_tape *tape, const char *name, const parity_expert_plan *plan,
                                         parity_variable *expert_outputs, parity_variable **out) {
    const parity_tensor *y = &expert_outputs->value;
    PARITY_CHECK(y->device.type == PARITY_DEVICE_CPU && parity_tensor_is_contiguous(y) && y->ndim == 2 &&
                     y->shape[0] == plan->received && y->shape[1] == plan->width,
                 PARITY_ERROR_SHAPE, "%s: expert combine: outputs (%lld, %lld) on the CPU expected", name,
                 (long long)plan->received, (long long)plan->width);
    parity_tensor items, summed;
    PARITY_TRY(parity_tensor_alloc(&items, y->dtype, PARITY_CPU, PARITY_SHAPE(plan->sent, plan->width)));
    parity_error *error = exchange_rows(plan, true, y->data, items.data, plan->width, y->dtype);
    if (!error) error = sum_items(plan, &items, y->dtype, &summed);
    parity_tensor_release(&items);
    if (!error) {
        error = parity_tape_adopt(tape, name, &summed, expert_outputs->requires_gradient, out);
        if (error) parity_tensor_release(&summed);
    }
    if (error)
        return parity_error_wrap(error, __FILE__, __LINE__, "%s: expert combine over the %s group", name,
                                 parity_comm_name(plan->experts));
    combine_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording an expert combine");
    *record = (combine_record){plan, expert_outputs, *out};
    return parity_tape_push(tape, "expert_combine", "mpi", combine_backward, NULL, record);
}
