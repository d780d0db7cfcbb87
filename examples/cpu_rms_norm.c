// cpu_rms_norm.c: an example backend plugin (ops/plugin_api.h) that adds one CPU RMSNorm backend,
// op "rms_norm", name "example_cpu", written from the op's contract (ops/rms_norm/rms_norm.h)
// alone. Build it against an installed parity with examples/Makefile; load it with
// `parity ... --plugin examples/build/example_cpu.so`.
//
// The math, over the last dimension (N rows of H elements; the weight w has H elements):
//   rstd  = 1 / sqrt(mean(x^2) + eps)                  one per row, saved for backward
//   x_hat = x * rstd
//   standard: y = w * dtype(x_hat)                      (Llama: weight * hidden.to(dtype))
//   offset:   y = (1 + w) * x_hat                        (Qwen3.5 / Qwen3-Next, weights start at 0)
// and its backward, with w_eff = w or 1 + w and g = dy * w_eff:
//   dx = rstd * (g - x_hat * mean(g * x_hat))            per row
//   dw = sum over rows of dy * x_hat                     per column
// Precision: fp64 tensors are computed in double; fp32 and bf16 tensors in float, as PyTorch's
// reference computes them (x.to(float32)): every operation rounded to float, sums in index order,
// rstd from 1 / sqrt in double, rounded once. Each output element is rounded once, to
// nearest even, to its tensor's dtype; the standard variant also rounds x_hat to the dtype before the
// weight multiply, where PyTorch's reference does. (A version that summed in double for every dtype
// is as honest and more accurate, but its different rounding was amplified to 1.06 x the tolerance
// in 2 fp32 combos of the smoke suite, qwen3_next_tiny with gdr=fla: the A_log / dt_bias
// cancellation for which smoke.yaml excludes fla in fp32 for qwen3_5. In float, as here, those
// combos pass at eager's own ratio.)
// Strided (non-contiguous) tensors are read and written through parity_tensor_offset.
//
// Built with -DEXAMPLE_WRONG this file is the deliberately wrong variant, under the same backend
// name (so the same --filter selects it). Its one bug: the weight gradient dw sums only the first
// half of the rows (the loop bound is rows / 2, as a wrong row split would give), so dw loses the
// terms of half the rows: each norm weight's gradient moves by up to half its size (in the smoke
// suite its norm by 1.5% to 48%, its sketches by far more), far beyond any dtype's rounding, and the
// tolerance must fail every combo in fp64, fp32 and bf16. The forward and dx are correct.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/plugin_api.h"
#include "ops/rms_norm/rms_norm.h"

#ifdef EXAMPLE_WRONG
#define EXAMPLE_VARIANT "DELIBERATELY WRONG variant (dweight sums only the first half of the rows)"
#else
#define EXAMPLE_VARIANT "correct variant"
#endif

// ---- element access: any float dtype parity stores, contiguous or strided ----

typedef struct element_view {
    const parity_tensor *tensor;
    bool contiguous;
} element_view;

static element_view view_of(const parity_tensor *tensor) {
    return (element_view){tensor, parity_tensor_is_contiguous(tensor)};
}

static int64_t element_index(element_view view, int64_t flat) {
    return view.contiguous ? flat : parity_tensor_offset(view.tensor, flat);
}

static double load(element_view view, int64_t flat) {
    int64_t at = element_index(view, flat);
    switch (view.tensor->dtype) {
    case PARITY_F64: return ((const double *)view.tensor->data)[at];
    case PARITY_F32: return (double)((const float *)view.tensor->data)[at];
    default: return parity_bf16_to_f64(((const uint16_t *)view.tensor->data)[at]); // bf16: check_dtype admits no other
    }
}

// One rounding, to nearest even, from double straight to the tensor's dtype.
static void store(element_view view, int64_t flat, double value) {
    int64_t at = element_index(view, flat);
    switch (view.tensor->dtype) {
    case PARITY_F64: ((double *)view.tensor->data)[at] = value; break;
    case PARITY_F32: ((float *)view.tensor->data)[at] = (float)value; break;
    default: ((uint16_t *)view.tensor->data)[at] = parity_f64_to_bf16(value); break;
    }
}

// ---- checks shared by forward and backward ----

static parity_error *check_cpu_tensor(const char *name, const parity_tensor *tensor) {
    if (!tensor) return NULL; // optional gradients; the required ones were checked by parity_rms_norm_check*
    if (tensor->device.type != PARITY_DEVICE_CPU)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rms_norm example_cpu: %s is on %s, expected the cpu", name,
                            parity_device_type_name(tensor->device.type));
    return NULL;
}

static parity_error *check_dtype(parity_dtype dtype) {
    if (dtype != PARITY_F64 && dtype != PARITY_F32 && dtype != PARITY_BF16)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "rms_norm example_cpu: %s is not supported (fp64, fp32, bf16)",
                            parity_dtype_name(dtype));
    return NULL;
}

// The arithmetic precision of a dtype: float for fp32 and bf16, double for fp64. The code computes in
// double and rounds every result with `in`: an f32 + - * / or sqrt computed in double and rounded
// once to float is exactly the f32 operation (double has more than 2 * 24 + 2 significand bits),
// so one body serves both precisions.
typedef struct precision {
    bool single; // float arithmetic
} precision;

static precision precision_of(parity_dtype dtype) { return (precision){dtype != PARITY_F64}; }
static parity_dtype precision_dtype(precision p) { return p.single ? PARITY_F32 : PARITY_F64; }
static double in(precision p, double value) { return p.single ? (double)(float)value : value; }

static double effective_weight(precision p, element_view weight, int64_t column, parity_rms_norm_variant variant) {
    double w = load(weight, column);
    return variant == PARITY_RMS_NORM_OFFSET ? in(p, 1.0 + w) : w;
}

// ---- forward ----

static parity_error *example_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    (void)exec; // the cpu runs synchronously: no stream
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(check_dtype(args->input->dtype));
    PARITY_TRY(check_cpu_tensor("input", args->input));
    PARITY_TRY(check_cpu_tensor("weight", args->weight));
    PARITY_TRY(check_cpu_tensor("output", args->output));

    parity_dtype dtype = args->input->dtype;
    precision p = precision_of(dtype);
    // Saved for backward: rstd of every row, in the arithmetic precision (f32 or f64).
    parity_tensor *rstd;
    PARITY_TRY(parity_saved_alloc(saved, &rstd, precision_dtype(p), PARITY_CPU, PARITY_SHAPE(rows)));
    element_view inverse_rms = view_of(rstd);

    element_view x = view_of(args->input), w = view_of(args->weight), y = view_of(args->output);
    double eps = in(p, args->eps);
    for (int64_t row = 0; row < rows; row++) {
        int64_t base = row * hidden;
        double sum_of_squares = 0.0;
        for (int64_t i = 0; i < hidden; i++) {
            double value = load(x, base + i);
            sum_of_squares = in(p, sum_of_squares + in(p, value * value));
        }
        double mean = in(p, sum_of_squares / (double)hidden);
        double inverse = in(p, 1.0 / sqrt(in(p, mean + eps))); // 1 / sqrt in double, rounded once
        store(inverse_rms, row, inverse);
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = in(p, load(x, base + i) * inverse);
            double value = args->variant == PARITY_RMS_NORM_STANDARD
                               ? load(w, i) * parity_round_to_dtype(x_hat, dtype)
                               : effective_weight(p, w, i, args->variant) * x_hat;
            store(y, base + i, in(p, value));
        }
    }
    return NULL;
}

// ---- backward ----

static parity_error *example_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                      const parity_saved *saved, const parity_rms_norm_grads *grads) {
    (void)exec;
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_check_grads(args, grads));
    PARITY_TRY(check_dtype(args->input->dtype));
    PARITY_TRY(check_cpu_tensor("input", args->input));
    PARITY_TRY(check_cpu_tensor("weight", args->weight));
    PARITY_TRY(check_cpu_tensor("doutput", grads->doutput));
    PARITY_TRY(check_cpu_tensor("dinput", grads->dinput));
    PARITY_TRY(check_cpu_tensor("dweight", grads->dweight));
    const parity_tensor *rstd;
    PARITY_TRY(parity_saved_get(saved, 0, &rstd));
    precision p = precision_of(args->input->dtype);
    if (rstd->dtype != precision_dtype(p) || rstd->ndim != 1 || rstd->shape[0] != rows)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "rms_norm example_cpu: the saved rstd is not the (%lld) %s forward made",
                            (long long)rows, parity_dtype_name(precision_dtype(p)));
    if (!grads->dinput && !grads->dweight) return NULL;

    // dw accumulates across rows in the arithmetic precision; g holds one row of dy * w_eff.
    double *dweight_sum = calloc((size_t)hidden, sizeof(double));
    double *g = malloc((size_t)hidden * sizeof(double));
    if (!dweight_sum || !g) {
        free(dweight_sum);
        free(g);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "rms_norm example_cpu: allocating 2 x %lld doubles", (long long)hidden);
    }

    element_view x = view_of(args->input), w = view_of(args->weight), dy = view_of(grads->doutput);
    element_view inverse_rms = view_of(rstd);
#ifdef EXAMPLE_WRONG
    int64_t dweight_rows = rows / 2; // THE BUG: the weight gradient stops halfway through the rows
#else
    int64_t dweight_rows = rows;
#endif
    for (int64_t row = 0; row < rows; row++) {
        int64_t base = row * hidden;
        double inverse = load(inverse_rms, row);
        double dot = 0.0; // sum over the row of g * x_hat
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = in(p, load(x, base + i) * inverse);
            double dy_i = load(dy, base + i);
            g[i] = in(p, dy_i * effective_weight(p, w, i, args->variant));
            dot = in(p, dot + in(p, g[i] * x_hat));
            if (row < dweight_rows) dweight_sum[i] = in(p, dweight_sum[i] + in(p, dy_i * x_hat));
        }
        if (grads->dinput) {
            element_view dx = view_of(grads->dinput);
            double mean = in(p, dot / (double)hidden);
            for (int64_t i = 0; i < hidden; i++) {
                double x_hat = in(p, load(x, base + i) * inverse);
                store(dx, base + i, in(p, inverse * in(p, g[i] - in(p, x_hat * mean))));
            }
        }
    }
    if (grads->dweight) {
        element_view dw = view_of(grads->dweight);
        for (int64_t i = 0; i < hidden; i++) store(dw, i, dweight_sum[i]);
    }
    free(dweight_sum);
    free(g);
    return NULL;
}

// ---- registration ----

static const parity_rms_norm_kernels example_kernels = {example_forward, example_backward};

PARITY_PLUGIN_DEFINE_VERSION()

PARITY_PLUGIN_EXPORT parity_error *parity_plugin_register(void) {
    parity_backend backend = {
        .op = PARITY_OP_RMS_NORM,
        .name = "example_cpu",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_DTYPE_BIT(PARITY_F64) | PARITY_DTYPE_BIT(PARITY_F32) | PARITY_DTYPE_BIT(PARITY_BF16),
        // One thread, sums in a fixed order: bitwise reproducible run to run.
        .capabilities = PARITY_CAP_OFFSET_WEIGHT | PARITY_CAP_DETERMINISTIC,
        .min_compute_capability = 0,
        .probe = NULL,
        .kernels = &example_kernels,
        .description = "examples/cpu_rms_norm.c, " EXAMPLE_VARIANT ": RMSNorm (standard and (1 + w) offset), "
                       "f64/f32/bf16",
        .origin = NULL, // parity sets "plugin PATH"
    };
    return parity_registry_add(&backend);
}
