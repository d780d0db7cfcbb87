// upstream_compare.c: the shared comparison helpers and gradient bounds of upstream_compare.h.
#include "upstream_compare.h"

#include <math.h>
#include <string.h>

// transformers' f32 error on the g-only gradients, per case, times k = 3 (measured with
// tools/gdn_gate_diagnosis; qwen3_next_tiny needs no row: its heads decay slowly enough).
static const struct {
    const char *model;
    double in_proj_a, dt_bias, A_log;
} gate_bounds[] = {
    {"qwen3_5_tiny", 3 * 5.7e-5, 3 * 1.4e-3, 3 * 1.1e-3},
    {"qwen3_5_moe_tiny", 3 * 4.8e-4, 3 * 5.2e-3, 3 * 5.5e-3},
};

double upstream_relative(double value, double reference) { return fabs(value - reference) / fmax(fabs(reference), 1e-300); }

double upstream_relative_l2(const parity_tensor *value, const parity_tensor *reference) {
    if (value->numel != reference->numel) return INFINITY;
    double difference = 0, norm = 0;
    for (int64_t i = 0; i < value->numel; i++) {
        double a = parity_tensor_get(value, i), b = parity_tensor_get(reference, i);
        difference += (a - b) * (a - b);
        norm += b * b;
    }
    return norm > 0 ? sqrt(difference / norm) : sqrt(difference);
}

const char *upstream_error_text(parity_error *error) {
    static char buffer[4096];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    return buffer;
}

double upstream_gradient_bound(const char *model, const char *name) {
    for (size_t i = 0; i < sizeof gate_bounds / sizeof gate_bounds[0]; i++) {
        if (strcmp(gate_bounds[i].model, model) != 0) continue;
        if (strstr(name, ".linear_attn.in_proj_a.weight")) return gate_bounds[i].in_proj_a;
        if (strstr(name, ".linear_attn.dt_bias")) return gate_bounds[i].dt_bias;
        if (strstr(name, ".linear_attn.A_log")) return gate_bounds[i].A_log;
    }
    return UPSTREAM_GRADIENT_BOUND;
}
