// eager.c: the reference gdn_gating on the CPU (value "eager"), op by op as HF's
// Qwen3_5GatedDeltaNet.forward runs it:
//   x = a.float() + dt_bias;  sp = softplus(x) = (x > 20 ? x : log1p(exp(x)));  g = -exp(A_log.float()) * sp
//   beta = sigmoid(b) = 1 / (1 + exp(-b))   (computed in f32, stored in the call's dtype)
// g stays in the compute precision (f32 for f32/bf16 calls; f64 calls are pure f64). Saves nothing:
// backward recomputes x, sp and exp(A_log) and reads beta from the outputs, as autograd does.
//
// Backward (autograd's order): dsp = dg * (-exp(A_log)); dnegA = sum_n dg * sp; dA_log = -dnegA * exp(A_log);
//   dx = dsp * z / (z + 1) with z = exp(x) (dsp itself past the threshold); da = dx; ddt_bias = sum_n dx;
//   db = dbeta * (1 - beta) * beta. Sums over N run in the compute precision, tokens in order.
#include <math.h>

#include "ops/core/cpu_math.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static const double softplus_threshold = 20.0; // F.softplus(beta=1, threshold=20)

static double softplus(double x, parity_dtype dtype) {
    if (x > softplus_threshold) return x;
    return parity_round_compute(log1p(parity_round_compute(exp(x), dtype)), dtype);
}

static double softplus_backward(double grad, double x, parity_dtype dtype) {
    if (x > softplus_threshold) return grad;
    double z = parity_round_compute(exp(x), dtype);
    return parity_round_compute(parity_round_compute(grad * z, dtype) / parity_round_compute(z + 1.0, dtype), dtype);
}

static double sigmoid(double x, parity_dtype dtype) {
    return parity_round_compute(1.0 / parity_round_compute(1.0 + parity_round_compute(exp(-x), dtype), dtype), dtype);
}

static parity_error *gdn_gating_eager_forward(const parity_exec *exec, const parity_gdn_gating_args *args,
                                              parity_saved *saved) {
    int64_t tokens, heads;
    PARITY_TRY(parity_gdn_gating_check(args, &tokens, &heads));
    const parity_tensor *cpu_tensors[] = {args->a, args->b, args->A_log, args->dt_bias, args->g, args->beta};
    const char *names[] = {"a", "b", "A_log", "dt_bias", "g", "beta"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_check_cpu("gdn_gating", names[i], cpu_tensors[i]));
    parity_dtype dtype = args->a->dtype;
    for (int64_t h = 0; h < heads; h++) {
        double negative_rate = -parity_round_compute(exp(parity_tensor_get(args->A_log, h)), dtype);
        double bias = parity_tensor_get(args->dt_bias, h);
        for (int64_t n = 0; n < tokens; n++) {
            int64_t i = n * heads + h;
            double x = parity_round_compute(parity_tensor_get(args->a, i) + bias, dtype);
            parity_tensor_set(args->g, i, parity_round_compute(negative_rate * softplus(x, dtype), dtype));
            parity_tensor_set(args->beta, i, parity_round_storage(sigmoid(parity_tensor_get(args->b, i), dtype), dtype));
        }
    }
    return NULL;
}

static parity_error *gdn_gating_eager_backward(const parity_exec *exec, const parity_gdn_gating_args *args,
                                               const parity_saved *saved, const parity_gdn_gating_grads *grads) {
    int64_t tokens, heads;
    PARITY_TRY(parity_gdn_gating_check(args, &tokens, &heads));
    PARITY_TRY(parity_gdn_gating_check_grads(args, grads));
    parity_dtype dtype = args->a->dtype;
    for (int64_t h = 0; h < heads; h++) {
        double rate = parity_round_compute(exp(parity_tensor_get(args->A_log, h)), dtype);
        double bias = parity_tensor_get(args->dt_bias, h);
        double dnegative_rate = 0, dbias = 0;
        for (int64_t n = 0; n < tokens; n++) {
            int64_t i = n * heads + h;
            double x = parity_round_compute(parity_tensor_get(args->a, i) + bias, dtype);
            double dg = parity_tensor_get(grads->dg, i);
            double dsoftplus = parity_round_compute(dg * -rate, dtype);
            dnegative_rate = parity_round_compute(dnegative_rate + parity_round_compute(dg * softplus(x, dtype), dtype), dtype);
            double dx = softplus_backward(dsoftplus, x, dtype);
            dbias = parity_round_compute(dbias + dx, dtype);
            if (grads->da) parity_tensor_set(grads->da, i, parity_round_storage(dx, dtype));
            if (grads->db) {
                double beta = parity_tensor_get(args->beta, i), dbeta = parity_tensor_get(grads->dbeta, i);
                double db = parity_round_compute(
                    parity_round_compute(dbeta * parity_round_compute(1.0 - beta, dtype), dtype) * beta, dtype);
                parity_tensor_set(grads->db, i, parity_round_storage(db, dtype));
            }
        }
        if (grads->dA_log)
            parity_tensor_set(grads->dA_log, h, parity_round_storage(parity_round_compute(-dnegative_rate * rate, dtype), dtype));
        if (grads->ddt_bias) parity_tensor_set(grads->ddt_bias, h, parity_round_storage(dbias, dtype));
    }
    return NULL;
}

static const parity_gdn_gating_kernels gdn_gating_eager_kernels = {gdn_gating_eager_forward, gdn_gating_eager_backward};

PARITY_BACKEND_REGISTRATION(gdn_gating, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_GDN_GATING,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &gdn_gating_eager_kernels,
        .description = "reference GatedDeltaNet gating: g = -exp(A_log) * softplus(a + dt_bias) in f32, beta = sigmoid(b)",
    });
}
