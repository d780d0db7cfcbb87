// model_parallel.c: placing a model's parameters on a layout's ranks and reducing its gradients
// (model_parallel.h). Host tensors (the MPI transport); the step refuses a device model before.
#include "models/model_parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *text, const char *suffix) {
    size_t a = strlen(text), b = strlen(suffix);
    return a >= b && strcmp(text + a - b, suffix) == 0;
}

// HF buffers kept beside the weights (read whole by their op, never trained): FSDP shards parameters
// only, as torch's FSDP leaves buffers whole on every rank.
static bool is_buffer(const char *name) {
    static const char *const buffer_suffixes[] = {".e_score_correction_bias"}; // DeepSeek-V3's router bias
    for (size_t i = 0; i < sizeof buffer_suffixes / sizeof buffer_suffixes[0]; i++)
        if (ends_with(name, buffer_suffixes[i])) return true;
    return false;
}

parity_comm *parity_model_copies_group(const parity_model *model, const parity_parameter_placement *placement) {
    return placement->expert ? model->parallel->expert_replicas : model->parallel->world;
}

// The rows [first, first + count) of dim 0 of a contiguous CPU tensor, as a new tensor.
static parity_error *leading_rows(const parity_tensor *tensor, int64_t first, int64_t count, parity_tensor *out) {
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, tensor->shape, sizeof shape);
    shape[0] = count;
    PARITY_TRY(parity_tensor_alloc(out, tensor->dtype, PARITY_CPU, tensor->ndim, shape));
    const size_t row = (size_t)(tensor->numel / tensor->shape[0]) * parity_dtype_size(tensor->dtype);
    memcpy(out->data, (const char *)tensor->data + (size_t)first * row, (size_t)count * row);
    return NULL;
}

// Elements [first, first + slice) of a contiguous tensor as a flat tensor, zero past its end.
static parity_error *flat_slice(const parity_tensor *tensor, int64_t first, int64_t slice, parity_tensor *out) {
    PARITY_TRY(parity_tensor_zeros(out, tensor->dtype, PARITY_CPU, PARITY_SHAPE(slice)));
    const int64_t valid = first >= tensor->numel ? 0 : (tensor->numel - first < slice ? tensor->numel - first : slice);
    const size_t element = parity_dtype_size(tensor->dtype);
    if (valid > 0) memcpy(out->data, (const char *)tensor->data + (size_t)first * element, (size_t)valid * element);
    return NULL;
}

parity_error *parity_model_apply_layout(parity_model *model, const parity_parallel *parallel) {
    model->parallel = parallel;
    if (!parallel || !parity_layout_is_parallel(&parallel->layout)) return NULL;
    char where[32];
    PARITY_CHECK(model->device.type == PARITY_DEVICE_CPU, PARITY_ERROR_UNSUPPORTED,
                 "a parallel layout on %s needs the NCCL transport for device tensors, not built into the layouts yet "
                 "(issue 16; MPI moves host buffers)",
                 parity_device_format(model->device, where, sizeof where));
    const size_t count = model->parameters.count;
    model->placements = calloc(count ? count : 1, sizeof *model->placements);
    if (!model->placements) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parameter placements");
    const int ep = parallel->layout.ep;
    for (size_t p = 0; p < count; p++) {
        parity_parameter *parameter = &model->parameters.items[p];
        parity_parameter_placement *placement = &model->placements[p];
        placement->whole_numel = parameter->value.numel;
        placement->expert = ep > 1 && (ends_with(parameter->name, ".experts.gate_up_proj") ||
                                       ends_with(parameter->name, ".experts.down_proj"));
        if (placement->expert) {
            const int64_t experts = parameter->value.shape[0];
            PARITY_CHECK(experts % ep == 0, PARITY_ERROR_UNSUPPORTED,
                         "expert parallel over %d ranks: %s has %lld experts, which do not split evenly", ep,
                         parameter->name, (long long)experts);
            parity_tensor shard;
            PARITY_TRY(leading_rows(&parameter->value, parallel->ep_rank * (experts / ep), experts / ep, &shard));
            parity_tensor_release(&parameter->value);
            parameter->value = shard;
        }
        placement->ndim = parameter->value.ndim;
        memcpy(placement->shape, parameter->value.shape, sizeof placement->shape);
        placement->numel = parameter->value.numel;
        if (parallel->layout.fsdp && !is_buffer(parameter->name)) {
            parity_comm *group = parity_model_copies_group(model, placement);
            const int size = parity_comm_size(group), rank = parity_comm_rank(group);
            placement->slice = (placement->numel + size - 1) / size;
            parity_tensor slice;
            PARITY_TRY(flat_slice(&parameter->value, rank * placement->slice, placement->slice, &slice));
            parity_tensor_release(&parameter->value);
            parameter->value = slice;
            placement->sharded = true;
        }
    }
    return NULL;
}

parity_error *parity_model_gather_parameter(parity_model *model, parity_tape *tape, size_t index, parity_variable **out) {
    const parity_parameter_placement *placement = &model->placements[index];
    const parity_parameter *parameter = &model->parameters.items[index];
    parity_comm *group = parity_model_copies_group(model, placement);
    const size_t element = parity_dtype_size(parameter->value.dtype);
    char *all = malloc((size_t)(placement->slice * parity_comm_size(group)) * element + 1);
    if (!all) return PARITY_ERROR(PARITY_ERROR_MEMORY, "gathering %s", parameter->name);
    parity_tensor whole;
    parity_error *error = parity_comm_all_gather(group, parameter->value.data, all, placement->slice, parameter->value.dtype);
    if (!error) error = parity_tensor_alloc(&whole, parameter->value.dtype, PARITY_CPU, placement->ndim, placement->shape);
    if (!error) {
        memcpy(whole.data, all, (size_t)placement->numel * element);
        error = parity_tape_adopt(tape, parameter->name, &whole, true, out);
        if (error) parity_tensor_release(&whole);
    }
    free(all);
    return error ? parity_error_wrap(error, __FILE__, __LINE__, "fsdp: gathering %s over the %s group", parameter->name,
                                     parity_comm_name(group))
                 : NULL;
}

parity_error *parity_model_agree_gradients(const parity_model *model, bool *has) {
    const size_t count = model->parameters.count;
    int64_t *flags = calloc(2 * (count ? count : 1), sizeof *flags);
    if (!flags) return PARITY_ERROR(PARITY_ERROR_MEMORY, "gradient flags");
    for (size_t p = 0; p < count; p++) flags[p] = has[p];
    parity_error *error = parity_comm_all_reduce(model->parallel->world, flags, flags + count, (int64_t)count, PARITY_I64);
    for (size_t p = 0; !error && p < count; p++) has[p] = flags[count + p] > 0;
    free(flags);
    return error;
}

// Where this rank's piece starts in the whole parameter (row-major, every expert).
static int64_t piece_offset(const parity_model *model, const parity_parameter_placement *placement) {
    int64_t first = placement->expert ? (int64_t)model->parallel->ep_rank * placement->numel : 0;
    if (placement->sharded) first += (int64_t)parity_comm_rank(parity_model_copies_group(model, placement)) * placement->slice;
    return first;
}

parity_error *parity_model_reduce_gradient(parity_model *model, const parity_exec *exec, size_t index, parity_tensor *local,
                                           bool measure, double *squared_norm, double *sketch) {
    const parity_parallel *parallel = model->parallel;
    const parity_parameter_placement *placement = &model->placements[index];
    parity_parameter *parameter = &model->parameters.items[index];
    parity_comm *group = parity_model_copies_group(model, placement);
    // test-only: the dense gradients summed without the last rank's (VeOmni's HSDP bug, a wrong group)
    if (parallel->layout.fault_wrong_group && !placement->expert && parallel->rank == parallel->ranks - 1)
        PARITY_TRY(parity_tensor_fill_zero(local));
    parity_tensor piece = {0};
    parity_error *error = NULL;
    if (placement->sharded) {
        const int size = parity_comm_size(group);
        parity_tensor padded;
        error = flat_slice(local, 0, placement->slice * size, &padded);
        if (!error) error = parity_tensor_alloc(&piece, local->dtype, PARITY_CPU, PARITY_SHAPE(placement->slice));
        if (!error) error = parity_comm_reduce_scatter(group, padded.data, piece.data, placement->slice, local->dtype);
        parity_tensor_release(&padded);
        parity_tensor_release(local);
    } else {
        error = parity_comm_all_reduce(group, local->data, local->data, local->numel, local->dtype);
        piece = *local;
        memset(local, 0, sizeof *local);
    }
    if (error) {
        parity_tensor_release(&piece);
        return parity_error_wrap(error, __FILE__, __LINE__, "summing the gradient of %s over the %s group", parameter->name,
                                 parity_comm_name(group));
    }
    parity_tensor_release(&parameter->gradient);
    parameter->gradient = piece;
    *squared_norm = NAN;
    for (int j = 0; j < PARITY_SKETCH_K; j++) sketch[j] = NAN;
    if (!measure) return NULL;
    // the piece's own elements (an fsdp slice's padding is not the parameter's)
    const int64_t first = piece_offset(model, placement);
    int64_t valid = piece.numel;
    if (placement->sharded) {
        const int64_t start = (int64_t)parity_comm_rank(group) * placement->slice;
        valid = start >= placement->numel ? 0 : (placement->numel - start < placement->slice ? placement->numel - start : placement->slice);
    }
    parity_tensor own = parity_tensor_wrap(piece.data, piece.dtype, PARITY_CPU, PARITY_SHAPE(valid));
    double terms[1 + PARITY_SKETCH_K] = {0};
    if (valid > 0) {
        PARITY_TRY(parity_tensor_sum_of_squares(exec, &own, &terms[0]));
        PARITY_TRY(parity_tensor_sketch_at(exec, &own, parameter->name, first, terms + 1));
    }
    // the pieces of one parameter: an fsdp slice's over the world (every slice of every expert shard
    // differs), an expert shard's over the expert group; a replicated gradient is whole already
    parity_comm *pieces = placement->sharded ? parallel->world : placement->expert ? parallel->experts : NULL;
    double whole[1 + PARITY_SKETCH_K];
    if (pieces) PARITY_TRY(parity_comm_all_reduce(pieces, terms, whole, 1 + PARITY_SKETCH_K, PARITY_F64));
    else memcpy(whole, terms, sizeof whole);
    *squared_norm = whole[0];
    memcpy(sketch, whole + 1, PARITY_SKETCH_K * sizeof *sketch);
    return NULL;
}
