// eager.c: the reference RMSNorm on the CPU (value "eager"), as HF computes it:
//   x32 = float(x); inv = rsqrt(mean(x32^2) + eps); x_hat = x32 * inv
//   standard: y = w * round_to_input_dtype(x_hat)      (LlamaRMSNorm: weight * hidden.to(dtype))
//   offset:   y = round_to_input_dtype(x_hat * (1 + w)) (Qwen3_5RMSNorm, computed in f32)
// f64 inputs stay f64 throughout. Saves inv (N) in the compute precision for backward.
//
// Backward, with g = dy * w_eff (w_eff = w or 1 + w) and x_hat = x * inv:
//   dx = inv * (g - x_hat * mean(g * x_hat)),  dw = sum over rows of dy * x_hat
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm/rms_statistics.h"

static parity_error *rms_norm_eager_forward(const parity_exec *exec, const parity_rms_norm_args *args,
                                            parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_check_cpu("rms_norm", "input", args->input));
    parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_alloc(saved, &inverse_rms, parity_compute_dtype(dtype), PARITY_CPU, PARITY_SHAPE(rows)));

    parity_cpu_values x, w, y;
    PARITY_TRY(parity_cpu_values_load(args->input, "rms_norm input", &x));
    PARITY_TRY(parity_cpu_values_load(args->weight, "rms_norm weight", &w));
    PARITY_TRY(parity_cpu_values_new(rows * hidden, &y));
    for (int64_t row = 0; row < rows; row++) {
        const double *x_row = x.data + row * hidden;
        double inverse = parity_rms_inverse(x_row, hidden, args->eps, dtype);
        parity_tensor_set(inverse_rms, row, inverse);
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = parity_round_compute(x_row[i] * inverse, dtype);
            double value;
            if (args->variant == PARITY_RMS_NORM_STANDARD)
                value = parity_round_storage(x_hat, dtype) * w.data[i];
            else
                value = x_hat * parity_round_compute(1.0 + w.data[i], dtype);
            y.data[row * hidden + i] = parity_round_compute(value, dtype);
        }
    }
    parity_cpu_values_store(args->output, y.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&y);
    return NULL;
}

static parity_error *rms_norm_eager_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                             const parity_saved *saved, const parity_rms_norm_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_check_grads(args, grads));
    const parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_rms));
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x, w, dy, dx, dw, g;
    PARITY_TRY(parity_cpu_values_load(args->input, "rms_norm input", &x));
    PARITY_TRY(parity_cpu_values_load(args->weight, "rms_norm weight", &w));
    PARITY_TRY(parity_cpu_values_load(grads->doutput, "rms_norm doutput", &dy));
    PARITY_TRY(parity_cpu_values_new(rows * hidden, &dx));
    PARITY_TRY(parity_cpu_values_new(hidden, &dw));
    PARITY_TRY(parity_cpu_values_new(hidden, &g)); // one row of dloss / dx_hat
    for (int64_t row = 0; row < rows; row++) {
        const double *x_row = x.data + row * hidden, *dy_row = dy.data + row * hidden;
        double inverse = parity_tensor_get(inverse_rms, row);
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = parity_round_compute(x_row[i] * inverse, dtype);
            double weight = args->variant == PARITY_RMS_NORM_OFFSET ? parity_round_compute(1.0 + w.data[i], dtype) : w.data[i];
            g.data[i] = parity_round_compute(dy_row[i] * weight, dtype);
            dw.data[i] = parity_round_compute(dw.data[i] + parity_round_compute(dy_row[i] * x_hat, dtype), dtype);
        }
        parity_rms_input_gradient(x_row, g.data, hidden, inverse, dtype, dx.data + row * hidden);
    }
    if (grads->dinput) parity_cpu_values_store(grads->dinput, dx.data);
    if (grads->dweight) parity_cpu_values_store(grads->dweight, dw.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    parity_cpu_values_free(&dw);
    parity_cpu_values_free(&g);
    return NULL;
}

static const parity_rms_norm_kernels rms_norm_eager_kernels = {rms_norm_eager_forward, rms_norm_eager_backward};

PARITY_BACKEND_REGISTRATION(rms_norm, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_RMS_NORM,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_OFFSET_WEIGHT | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &rms_norm_eager_kernels,
        .description = "reference RMSNorm (standard and (1 + w) offset), f64/f32/bf16",
    });
}
