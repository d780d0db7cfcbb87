// load_balancing_loss.c: argument validation shared by every load-balancing-loss backend.
#include "ops/load_balancing_loss/load_balancing_loss.h"

#include "ops/core/cpu_math.h"

parity_dtype parity_load_balancing_loss_dtype(parity_dtype logits_dtype) {
    return logits_dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
}

parity_error *parity_load_balancing_loss_check(const parity_load_balancing_loss_args *args, int64_t *rows,
                                               int64_t *experts, int64_t *layers) {
    const parity_tensor *logits = args->router_logits;
    PARITY_CHECK(logits, PARITY_ERROR_SHAPE, "load_balancing_loss: router_logits is missing");
    PARITY_CHECK(logits->dtype == PARITY_F64 || logits->dtype == PARITY_F32 || logits->dtype == PARITY_BF16,
                 PARITY_ERROR_SHAPE, "load_balancing_loss: router_logits is %s, expected fp64, fp32 or bf16",
                 parity_dtype_name(logits->dtype));
    PARITY_TRY(parity_check_tensor("load_balancing_loss", "router_logits", logits, logits->dtype, 2,
                                   (int64_t[]){PARITY_ANY, PARITY_ANY}));
    *rows = logits->shape[0];
    *experts = logits->shape[1];
    *layers = args->num_layers > 0 ? args->num_layers : 1;
    PARITY_CHECK(*experts > 0 && *rows > 0, PARITY_ERROR_SHAPE, "load_balancing_loss: router_logits has shape (%lld, %lld)",
                 (long long)*rows, (long long)*experts);
    PARITY_CHECK(args->num_layers >= 0 && *rows % *layers == 0, PARITY_ERROR_SHAPE,
                 "load_balancing_loss: %lld rows do not split into num_layers=%lld equal layers", (long long)*rows,
                 (long long)args->num_layers);
    PARITY_CHECK(args->top_k >= 1 && args->top_k <= *experts, PARITY_ERROR_SHAPE,
                 "load_balancing_loss: top_k %lld outside [1, %lld] (the number of experts)", (long long)args->top_k,
                 (long long)*experts);
    PARITY_TRY(parity_check_tensor("load_balancing_loss", "loss", args->loss, parity_load_balancing_loss_dtype(logits->dtype),
                                   0, NULL));
    return NULL;
}

parity_error *parity_load_balancing_loss_check_grads(const parity_load_balancing_loss_args *args,
                                                     const parity_load_balancing_loss_grads *grads) {
    const parity_tensor *logits = args->router_logits;
    PARITY_TRY(parity_check_tensor("load_balancing_loss", "dloss", grads->dloss, args->loss->dtype, 0, NULL));
    if (grads->drouter_logits)
        PARITY_TRY(parity_check_tensor("load_balancing_loss", "drouter_logits", grads->drouter_logits, logits->dtype, 2,
                                       logits->shape));
    return NULL;
}
