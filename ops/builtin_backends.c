// builtin_backends.c: every backend family built into parity registers itself from this table.
// Values of the kernel-selection vocabulary without a row here are reported "not built yet".
#include "ops/builtin_backends.h"

#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/moe_router/moe_router.h"
#include "ops/rms_norm/rms_norm.h"

const parity_builtin_backend_family parity_builtin_backends[] = {
    {"rms_norm cpu", parity_rms_norm_register_cpu},
    {"moe_router cpu", parity_moe_router_register_cpu},
    {"moe_experts cpu", parity_moe_experts_register_cpu},
    {"load_balancing_loss cpu", parity_load_balancing_loss_register_cpu},
};
const size_t parity_builtin_backend_count = sizeof parity_builtin_backends / sizeof parity_builtin_backends[0];
