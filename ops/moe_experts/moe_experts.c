// moe_experts.c: argument validation shared by every MoE experts backend.
#include "ops/moe_experts/moe_experts.h"

#include <stdlib.h>

#include "ops/core/cpu_math.h"

// Every index in [0, E); names the first offender by token and slot.
static parity_error *check_expert_indices(const parity_tensor *indices, int64_t experts, int64_t top_k) {
    if (indices->device.type != PARITY_DEVICE_CPU) return NULL; // a CUDA backend checks on its device
    int64_t *values;
    PARITY_TRY(parity_cpu_indices_load(indices, "moe_experts expert_indices", &values));
    parity_error *error = NULL;
    for (int64_t i = 0; !error && i < indices->numel; i++)
        if (values[i] < 0 || values[i] >= experts)
            error = PARITY_ERROR(PARITY_ERROR_SHAPE,
                                 "moe_experts: expert index %lld at token %lld, slot %lld is outside [0, %lld)",
                                 (long long)values[i], (long long)(i / top_k), (long long)(i % top_k), (long long)experts);
    free(values);
    return error;
}

parity_error *parity_moe_experts_check(const parity_moe_experts_args *args, parity_moe_experts_sizes *sizes) {
    const parity_tensor *hidden = args->hidden, *down = args->down_proj;
    PARITY_CHECK(hidden, PARITY_ERROR_SHAPE, "moe_experts: hidden is missing");
    PARITY_CHECK(hidden->dtype == PARITY_F64 || hidden->dtype == PARITY_F32 || hidden->dtype == PARITY_BF16,
                 PARITY_ERROR_SHAPE, "moe_experts: hidden is %s, expected fp64, fp32 or bf16", parity_dtype_name(hidden->dtype));
    parity_dtype dtype = hidden->dtype;
    PARITY_TRY(parity_check_tensor("moe_experts", "hidden", hidden, dtype, 2, (int64_t[]){PARITY_ANY, PARITY_ANY}));
    sizes->tokens = hidden->shape[0];
    sizes->hidden = hidden->shape[1];
    PARITY_TRY(parity_check_tensor("moe_experts", "down_proj", down, dtype, 3,
                                   (int64_t[]){PARITY_ANY, sizes->hidden, PARITY_ANY}));
    sizes->experts = down->shape[0];
    sizes->intermediate = down->shape[2];
    PARITY_CHECK(sizes->hidden > 0 && sizes->experts > 0 && sizes->intermediate > 0, PARITY_ERROR_SHAPE,
                 "moe_experts: empty hidden (%lld), expert (%lld) or intermediate (%lld) size", (long long)sizes->hidden,
                 (long long)sizes->experts, (long long)sizes->intermediate);
    PARITY_TRY(parity_check_tensor("moe_experts", "gate_up_proj", args->gate_up_proj, dtype, 3,
                                   (int64_t[]){sizes->experts, 2 * sizes->intermediate, sizes->hidden}));
    PARITY_TRY(parity_check_tensor("moe_experts", "expert_indices", args->expert_indices, PARITY_I64, 2,
                                   (int64_t[]){sizes->tokens, PARITY_ANY}));
    sizes->top_k = args->expert_indices->shape[1];
    PARITY_CHECK(sizes->top_k > 0, PARITY_ERROR_SHAPE, "moe_experts: expert_indices has no slots (K = 0)");
    const parity_tensor *weights = args->routing_weights;
    PARITY_CHECK(weights, PARITY_ERROR_SHAPE, "moe_experts: routing_weights is missing");
    bool weights_dtype_ok = weights->dtype == dtype || (dtype == PARITY_BF16 && weights->dtype == PARITY_F32);
    PARITY_CHECK(weights_dtype_ok, PARITY_ERROR_SHAPE, "moe_experts: routing_weights is %s, expected %s%s",
                 parity_dtype_name(weights->dtype), parity_dtype_name(dtype), dtype == PARITY_BF16 ? " or fp32" : "");
    PARITY_TRY(parity_check_tensor("moe_experts", "routing_weights", weights, weights->dtype, 2,
                                   (int64_t[]){sizes->tokens, sizes->top_k}));
    PARITY_TRY(parity_check_tensor("moe_experts", "output", args->output, dtype, 2, hidden->shape));
    PARITY_TRY(check_expert_indices(args->expert_indices, sizes->experts, sizes->top_k));
    return NULL;
}

parity_error *parity_moe_experts_check_grads(const parity_moe_experts_args *args, const parity_moe_experts_grads *grads) {
    parity_dtype dtype = args->hidden->dtype;
    PARITY_TRY(parity_check_tensor("moe_experts", "doutput", grads->doutput, dtype, 2, args->hidden->shape));
    if (grads->dhidden)
        PARITY_TRY(parity_check_tensor("moe_experts", "dhidden", grads->dhidden, dtype, 2, args->hidden->shape));
    if (grads->dgate_up_proj)
        PARITY_TRY(parity_check_tensor("moe_experts", "dgate_up_proj", grads->dgate_up_proj, dtype, 3,
                                       args->gate_up_proj->shape));
    if (grads->ddown_proj)
        PARITY_TRY(parity_check_tensor("moe_experts", "ddown_proj", grads->ddown_proj, dtype, 3, args->down_proj->shape));
    if (grads->drouting_weights)
        PARITY_TRY(parity_check_tensor("moe_experts", "drouting_weights", grads->drouting_weights,
                                       args->routing_weights->dtype, 2, args->routing_weights->shape));
    return NULL;
}
