// eager.c: the reference rotary embedding on the CPU (value "eager"), as HF computes it:
//   freqs = inv_freq * float(position)            (f32)
//   cos, sin = cos(freqs) * scaling, sin(freqs) * scaling, then cast to the activation dtype
//   out = x * cos + rotate_half(x) * sin           (each product and the sum rounded to the dtype)
// with rotate_half(x) = cat(-x2, x1) over the first rotary_dim values; the interleaved layout first
// gathers pairs (2j, 2j + 1) into (j, j + rotary_dim / 2) and leaves the output in that order.
// f64 runs are pure f64. Saves cos and sin (N, rotary_dim / 2) in the activation dtype.
// Checked against HF 5.17 on an H200: bf16 outputs and gradients bit-exact on every test row; in
// f32, CUDA's cosf/sinf differ from the correctly rounded cos/sin used here by 1 ulp in ~15% of
// entries, which shows as a few-ulp difference in f32 outputs.
//
// Backward is the transpose of that rotation: dx = dy * cos - rotate_half(dy) * sin (the same code
// with sin negated), each product rounded as autograd stores it, then scattered back through the
// interleave permutation; the pass-through part copies dy.
#include <math.h>
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/rotary/rotary.h"

typedef struct rotary_plan {
    int64_t head_dim, rotary_dim;
    parity_rotary_layout layout;
    parity_dtype dtype;
} rotary_plan;

// Rounds a product or sum of activations as a tensor of the dtype would hold it (f32 arithmetic
// first, then the storage rounding).
static double stored(double value, parity_dtype dtype) {
    return parity_round_storage(parity_round_compute(value, dtype), dtype);
}

// One head's D values. Forward (transpose = false) gathers the interleaved input; backward
// (transpose = true) applies the transposed rotation and scatters through the permutation.
static void rotate_head(const double *in, double *out, const double *cos, const double *sin, const rotary_plan *plan,
                        bool transpose) {
    int64_t half = plan->rotary_dim / 2;
    parity_dtype dtype = plan->dtype;
    for (int64_t j = 0; j < half; j++) {
        int64_t first = j, second = j + half;                  // half-split positions
        int64_t in_first = first, in_second = second, out_first = first, out_second = second;
        if (plan->layout == PARITY_ROTARY_INTERLEAVED) {
            if (transpose) { out_first = 2 * j; out_second = 2 * j + 1; }
            else { in_first = 2 * j; in_second = 2 * j + 1; }
        }
        double c = cos[j], s = transpose ? -sin[j] : sin[j];
        double x1 = in[in_first], x2 = in[in_second];
        out[out_first] = stored(stored(x1 * c, dtype) - stored(x2 * s, dtype), dtype);
        out[out_second] = stored(stored(x2 * c, dtype) + stored(x1 * s, dtype), dtype);
    }
    for (int64_t j = plan->rotary_dim; j < plan->head_dim; j++) out[j] = in[j];
}

static parity_error *rotate_tensor(const parity_tensor *input, parity_tensor *output, const char *name,
                                   const double *cos, const double *sin, const rotary_plan *plan, bool transpose) {
    parity_cpu_values in, out;
    PARITY_TRY(parity_cpu_values_load(input, name, &in));
    parity_error *error = parity_cpu_values_new(input->numel, &out);
    if (error) {
        parity_cpu_values_free(&in);
        return error;
    }
    int64_t tokens = input->shape[0], heads = input->shape[1], half = plan->rotary_dim / 2;
    for (int64_t n = 0; n < tokens; n++)
        for (int64_t h = 0; h < heads; h++) {
            int64_t offset = (n * heads + h) * plan->head_dim;
            rotate_head(in.data + offset, out.data + offset, cos + n * half, sin + n * half, plan, transpose);
        }
    parity_cpu_values_store(output, out.data);
    parity_cpu_values_free(&in);
    parity_cpu_values_free(&out);
    return NULL;
}

// cos/sin (N, half) as HF's rotary embedding module returns them, in the activation dtype.
static void fill_cos_sin(const int64_t *positions, const double *inv_freq, double attention_scaling, int64_t tokens,
                         int64_t half, parity_dtype dtype, parity_tensor *cos_table, parity_tensor *sin_table) {
    double scaling = parity_round_compute(attention_scaling, dtype);
    for (int64_t n = 0; n < tokens; n++) {
        double position = parity_round_compute((double)positions[n], dtype); // position_ids.float()
        for (int64_t i = 0; i < half; i++) {
            double angle = parity_round_compute(inv_freq[i] * position, dtype);
            double c = parity_round_compute(parity_round_compute(cos(angle), dtype) * scaling, dtype);
            double s = parity_round_compute(parity_round_compute(sin(angle), dtype) * scaling, dtype);
            parity_tensor_set(cos_table, n * half + i, c); // rounds to the activation dtype
            parity_tensor_set(sin_table, n * half + i, s);
        }
    }
}

static parity_error *check_cpu_tensors(const parity_rotary_args *args) {
    PARITY_TRY(parity_check_cpu("rotary", "query", args->query));
    PARITY_TRY(parity_check_cpu("rotary", "key", args->key));
    PARITY_TRY(parity_check_cpu("rotary", "positions", args->positions));
    PARITY_TRY(parity_check_cpu("rotary", "query_out", args->query_out));
    PARITY_TRY(parity_check_cpu("rotary", "key_out", args->key_out));
    return NULL;
}

static parity_error *rotary_eager_forward(const parity_exec *exec, const parity_rotary_args *args,
                                          parity_saved *saved) {
    parity_rotary_sizes sizes;
    PARITY_TRY(parity_rotary_check(args, &sizes));
    PARITY_TRY(check_cpu_tensors(args));
    parity_dtype dtype = args->query->dtype;
    int64_t half = sizes.rotary_dim / 2;
    rotary_plan plan = {sizes.head_dim, sizes.rotary_dim, args->rope->layout, dtype};

    parity_cpu_values inv_freq;
    double attention_scaling;
    PARITY_TRY(parity_cpu_values_new(half, &inv_freq));
    parity_error *error = parity_rotary_frequencies(args->rope, sizes.rotary_dim, dtype, inv_freq.data, &attention_scaling);
    int64_t *positions = NULL;
    if (!error) error = parity_cpu_indices_load(args->positions, "rotary positions", &positions);
    parity_tensor *cos_table = NULL, *sin_table = NULL;
    if (!error) error = parity_saved_alloc(saved, &cos_table, dtype, PARITY_CPU, PARITY_SHAPE(sizes.tokens, half));
    if (!error) error = parity_saved_alloc(saved, &sin_table, dtype, PARITY_CPU, PARITY_SHAPE(sizes.tokens, half));
    if (!error) fill_cos_sin(positions, inv_freq.data, attention_scaling, sizes.tokens, half, dtype, cos_table, sin_table);
    free(positions);
    parity_cpu_values_free(&inv_freq);
    if (error) return error;

    parity_cpu_values cos_values, sin_values;
    PARITY_TRY(parity_cpu_values_load(cos_table, "rotary cos", &cos_values));
    error = parity_cpu_values_load(sin_table, "rotary sin", &sin_values);
    if (!error) error = rotate_tensor(args->query, args->query_out, "rotary query", cos_values.data, sin_values.data, &plan, false);
    if (!error) error = rotate_tensor(args->key, args->key_out, "rotary key", cos_values.data, sin_values.data, &plan, false);
    parity_cpu_values_free(&cos_values);
    parity_cpu_values_free(&sin_values);
    return error;
}

static parity_error *rotary_eager_backward(const parity_exec *exec, const parity_rotary_args *args,
                                           const parity_saved *saved, const parity_rotary_grads *grads) {
    parity_rotary_sizes sizes;
    PARITY_TRY(parity_rotary_check(args, &sizes));
    PARITY_TRY(parity_rotary_check_grads(args, grads));
    const parity_tensor *cos_table, *sin_table;
    PARITY_TRY(parity_saved_get(saved, 0, &cos_table));
    PARITY_TRY(parity_saved_get(saved, 1, &sin_table));
    rotary_plan plan = {sizes.head_dim, sizes.rotary_dim, args->rope->layout, args->query->dtype};

    parity_cpu_values cos_values, sin_values;
    PARITY_TRY(parity_cpu_values_load(cos_table, "rotary cos", &cos_values));
    parity_error *error = parity_cpu_values_load(sin_table, "rotary sin", &sin_values);
    if (!error && grads->dquery)
        error = rotate_tensor(grads->dquery_out, grads->dquery, "rotary dquery_out", cos_values.data, sin_values.data,
                              &plan, true);
    if (!error && grads->dkey)
        error = rotate_tensor(grads->dkey_out, grads->dkey, "rotary dkey_out", cos_values.data, sin_values.data, &plan,
                              true);
    parity_cpu_values_free(&cos_values);
    parity_cpu_values_free(&sin_values);
    return error;
}

static const parity_rotary_kernels rotary_eager_kernels = {rotary_eager_forward, rotary_eager_backward};

PARITY_BACKEND_REGISTRATION(rotary, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ROTARY,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_PARTIAL_ROTARY | PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT |
                        PARITY_CAP_DETERMINISTIC,
        .kernels = &rotary_eager_kernels,
        .description = "reference RoPE on query and key (default/linear/llama3/yarn, half-split or interleaved, "
                       "partial), f64/f32/bf16",
    });
}
