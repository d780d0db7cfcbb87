// eager.c: the reference gated RMSNorm on the CPU (value "eager"), as HF's Qwen3_5RMSNormGated:
//   x32 = float(x); inv = rsqrt(mean(x32^2) + eps); x_hat = x32 * inv           (f32)
//   h = weight * round_to_input_dtype(x_hat)                                      (input dtype)
//   y = round_to_input_dtype(h * silu(float(gate)))                               (f32, then cast)
// f64 inputs stay f64 throughout. Saves inv (N) in the compute precision for backward.
//
// Backward follows autograd, rounding to the input dtype where it stores such a tensor:
//   dh = dy * s (cast to h's dtype), ds = dy * h (f32), dgate = silu_backward(ds, gate)
//   dweight = sum over rows of (dh * x_hat_rounded), g = dh * weight (input dtype)
//   dx = inv * (g - x_hat * mean(g * x_hat))  (shared RMSNorm math, rms_statistics.h)
// Checked against HF 5.17 on an H200 (rows=7, hidden=13): bf16 bit-exact for y, dx, dgate and
// dweight. In f32, dx differs by tens of ulps: autograd evaluates this formula op by op with GPU
// reduction order, which this compact form does not reproduce.
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_statistics.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/swiglu/silu.h"

// A product as a tensor of the dtype holds it (f32 arithmetic, then the storage rounding).
static double stored(double value, parity_dtype dtype) {
    return parity_round_storage(parity_round_compute(value, dtype), dtype);
}

static parity_error *check_cpu_tensors(const parity_rms_norm_gated_args *args) {
    PARITY_TRY(parity_check_cpu("rms_norm_gated", "input", args->input));
    PARITY_TRY(parity_check_cpu("rms_norm_gated", "gate", args->gate));
    PARITY_TRY(parity_check_cpu("rms_norm_gated", "weight", args->weight));
    PARITY_TRY(parity_check_cpu("rms_norm_gated", "output", args->output));
    return NULL;
}

static parity_error *rms_norm_gated_eager_forward(const parity_exec *exec, const parity_rms_norm_gated_args *args,
                                                  parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(check_cpu_tensors(args));
    parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_alloc(saved, &inverse_rms, parity_compute_dtype(dtype), PARITY_CPU, PARITY_SHAPE(rows)));

    parity_cpu_values x, gate, w, y;
    PARITY_TRY(parity_cpu_values_load(args->input, "rms_norm_gated input", &x));
    PARITY_TRY(parity_cpu_values_load(args->gate, "rms_norm_gated gate", &gate));
    PARITY_TRY(parity_cpu_values_load(args->weight, "rms_norm_gated weight", &w));
    PARITY_TRY(parity_cpu_values_new(rows * hidden, &y));
    for (int64_t row = 0; row < rows; row++) {
        const double *x_row = x.data + row * hidden, *gate_row = gate.data + row * hidden;
        double inverse = parity_rms_inverse(x_row, hidden, args->eps, dtype);
        parity_tensor_set(inverse_rms, row, inverse);
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = parity_round_storage(parity_round_compute(x_row[i] * inverse, dtype), dtype);
            double h = stored(w.data[i] * x_hat, dtype);
            y.data[row * hidden + i] = parity_round_compute(h * parity_silu(gate_row[i], dtype), dtype);
        }
    }
    parity_cpu_values_store(args->output, y.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&gate);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&y);
    return NULL;
}

static parity_error *rms_norm_gated_eager_backward(const parity_exec *exec, const parity_rms_norm_gated_args *args,
                                                   const parity_saved *saved,
                                                   const parity_rms_norm_gated_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_gated_check_grads(args, grads));
    const parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_rms));
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x, gate, w, dy, dx, dgate, dw, g;
    PARITY_TRY(parity_cpu_values_load(args->input, "rms_norm_gated input", &x));
    PARITY_TRY(parity_cpu_values_load(args->gate, "rms_norm_gated gate", &gate));
    PARITY_TRY(parity_cpu_values_load(args->weight, "rms_norm_gated weight", &w));
    PARITY_TRY(parity_cpu_values_load(grads->doutput, "rms_norm_gated doutput", &dy));
    PARITY_TRY(parity_cpu_values_new(rows * hidden, &dx));
    PARITY_TRY(parity_cpu_values_new(rows * hidden, &dgate));
    PARITY_TRY(parity_cpu_values_new(hidden, &dw));
    PARITY_TRY(parity_cpu_values_new(hidden, &g)); // one row of dloss / dx_hat
    for (int64_t row = 0; row < rows; row++) {
        int64_t base = row * hidden;
        double inverse = parity_tensor_get(inverse_rms, row);
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = parity_round_storage(parity_round_compute(x.data[base + i] * inverse, dtype), dtype);
            double h = stored(w.data[i] * x_hat, dtype);
            double activation = parity_silu(gate.data[base + i], dtype);
            double dh = stored(dy.data[base + i] * activation, dtype);
            double dactivation = parity_round_compute(dy.data[base + i] * h, dtype);
            dgate.data[base + i] = parity_silu_backward(dactivation, gate.data[base + i], dtype);
            dw.data[i] = parity_round_compute(dw.data[i] + stored(dh * x_hat, dtype), dtype);
            g.data[i] = stored(dh * w.data[i], dtype);
        }
        parity_rms_input_gradient(x.data + base, g.data, hidden, inverse, dtype, dx.data + base);
    }
    if (grads->dinput) parity_cpu_values_store(grads->dinput, dx.data);
    if (grads->dgate) parity_cpu_values_store(grads->dgate, dgate.data);
    if (grads->dweight) parity_cpu_values_store(grads->dweight, dw.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&gate);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    parity_cpu_values_free(&dgate);
    parity_cpu_values_free(&dw);
    parity_cpu_values_free(&g);
    return NULL;
}

static const parity_rms_norm_gated_kernels rms_norm_gated_eager_kernels = {rms_norm_gated_eager_forward,
                                                                           rms_norm_gated_eager_backward};

PARITY_BACKEND_REGISTRATION(rms_norm_gated, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_RMS_NORM_GATED,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &rms_norm_gated_eager_kernels,
        .description = "reference gated RMSNorm (Qwen3.5: w * x_hat * silu(gate)), f64/f32/bf16",
    });
}
