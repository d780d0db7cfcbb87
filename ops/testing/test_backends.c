// test_backends.c: the test-only backends of test_backends.h, each a thin wrapper over the CPU eager
// kernel of its op that changes exactly one thing (and, for backward, differentiates the changed
// function, so forward and backward stay consistent: the bug is in the math, not in the plumbing).
#include "ops/testing/test_backends.h"

#include <string.h>

#include "ops/attention/attention.h"
#include "ops/core/cpu_math.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm/rms_statistics.h"
#include "ops/rotary/rotary.h"

// The eager CPU kernel table of `op` (registered by the built-ins).
static parity_error *eager_kernels(const char *op, const void **out) {
    const parity_backend *eager = parity_registry_find(op, "eager", PARITY_DEVICE_CPU);
    if (!eager)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "test backends wrap the CPU eager %s, which is not registered", op);
    *out = eager->kernels;
    return NULL;
}

// ---- rms_norm "test_perturbed" and "test_perturbed_bf16_unit": y = (1 + e) * rms_norm(x) ----
// e = 1e-3 (a quarter of bf16's unit roundoff) and e = 2^-8 (one unit of it), forward and backward.
// Scaling stored values would do nothing for e = 1e-3 in bf16: half an ulp of bf16 is at least 2^-9
// (1.95e-3) relative, so round(v * 1.001) == v for every bf16 v (and with HF's unit-initialised
// weights the standard variant's y = w * round_bf16(x_hat) is already a bf16 value before it is
// stored). The factor therefore sits where a kernel bug would: in the compute precision (f32 for
// bf16), on x_hat in the forward and on dy in the backward, before anything is rounded to the storage
// dtype; both perturbations use that one placement, so they differ only in e. "One bf16 unit" is a
// relative 2^-8, bf16's unit roundoff u, not one ulp of the stored value: an ulp of a bf16 value
// with significand m in [1, 2) is 2^-7 / m relative, between u and 2u, so one ulp would be the
// larger (easier to see) change, and the relative u the stricter test. Eager runs first in the
// forward (validation, the saved inverse RMS); the values are then recomputed with eager's own
// rounding points (eager.c) plus the factor.

static parity_error *perturbed_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved,
                                       double perturbation) {
    const parity_rms_norm_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_RMS_NORM, (const void **)&eager));
    PARITY_TRY(eager->forward(exec, args, saved));
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    parity_dtype dtype = args->input->dtype;
    parity_cpu_values x, w;
    PARITY_TRY(parity_cpu_values_load(args->input, "rms_norm input", &x));
    parity_error *error = parity_cpu_values_load(args->weight, "rms_norm weight", &w);
    if (error) {
        parity_cpu_values_free(&x);
        return error;
    }
    for (int64_t row = 0; row < rows; row++) {
        const double *x_row = x.data + row * hidden;
        double inverse = parity_rms_inverse(x_row, hidden, args->eps, dtype);
        for (int64_t i = 0; i < hidden; i++) {
            double x_hat = parity_round_compute(parity_round_compute(x_row[i] * inverse, dtype) * perturbation, dtype);
            double value = args->variant == PARITY_RMS_NORM_STANDARD
                               ? parity_round_storage(x_hat, dtype) * w.data[i]
                               : x_hat * parity_round_compute(1.0 + w.data[i], dtype);
            parity_tensor_set(args->output, row * hidden + i, parity_round_compute(value, dtype));
        }
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    return NULL;
}

// Eager's backward (eager.c) of (1 + e) * y: dy enters as round_compute(dy * (1 + e)).
static parity_error *perturbed_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                        const parity_rms_norm_grads *grads, double perturbation) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_check_grads(args, grads));
    const parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_rms));
    parity_dtype dtype = args->input->dtype;
    parity_cpu_values x = {0}, w = {0}, dy = {0}, dx = {0}, dw = {0}, g = {0};
    parity_error *error = parity_cpu_values_load(args->input, "rms_norm input", &x);
    if (!error) error = parity_cpu_values_load(args->weight, "rms_norm weight", &w);
    if (!error) error = parity_cpu_values_load(grads->doutput, "rms_norm doutput", &dy);
    if (!error) error = parity_cpu_values_new(rows * hidden, &dx);
    if (!error) error = parity_cpu_values_new(hidden, &dw);
    if (!error) error = parity_cpu_values_new(hidden, &g);
    for (int64_t row = 0; !error && row < rows; row++) {
        const double *x_row = x.data + row * hidden, *dy_row = dy.data + row * hidden;
        double inverse = parity_tensor_get(inverse_rms, row);
        for (int64_t i = 0; i < hidden; i++) {
            double dy_value = parity_round_compute(dy_row[i] * perturbation, dtype);
            double x_hat = parity_round_compute(x_row[i] * inverse, dtype);
            double weight = args->variant == PARITY_RMS_NORM_OFFSET ? parity_round_compute(1.0 + w.data[i], dtype) : w.data[i];
            g.data[i] = parity_round_compute(dy_value * weight, dtype);
            dw.data[i] = parity_round_compute(dw.data[i] + parity_round_compute(dy_value * x_hat, dtype), dtype);
        }
        parity_rms_input_gradient(x_row, g.data, hidden, inverse, dtype, dx.data + row * hidden);
    }
    if (!error && grads->dinput) parity_cpu_values_store(grads->dinput, dx.data);
    if (!error && grads->dweight) parity_cpu_values_store(grads->dweight, dw.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    parity_cpu_values_free(&dw);
    parity_cpu_values_free(&g);
    return error;
}

// The two factors, as kernel-table entries.
static parity_error *perturbed_1e3_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    return perturbed_forward(exec, args, saved, 1.0 + PARITY_TEST_PERTURBATION);
}

static parity_error *perturbed_1e3_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                            const parity_saved *saved, const parity_rms_norm_grads *grads) {
    return perturbed_backward(exec, args, saved, grads, 1.0 + PARITY_TEST_PERTURBATION);
}

static parity_error *perturbed_bf16_unit_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    return perturbed_forward(exec, args, saved, 1.0 + PARITY_TEST_PERTURBATION_BF16_UNIT);
}

static parity_error *perturbed_bf16_unit_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                                  const parity_saved *saved, const parity_rms_norm_grads *grads) {
    return perturbed_backward(exec, args, saved, grads, 1.0 + PARITY_TEST_PERTURBATION_BF16_UNIT);
}

// ---- rms_norm "test_wrong_eps": eps = 1e-2 ----

static parity_error *wrong_eps_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    const parity_rms_norm_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_RMS_NORM, (const void **)&eager));
    parity_rms_norm_args changed = *args;
    changed.eps = PARITY_TEST_WRONG_EPS;
    return eager->forward(exec, &changed, saved);
}

static parity_error *wrong_eps_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                        const parity_saved *saved, const parity_rms_norm_grads *grads) {
    const parity_rms_norm_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_RMS_NORM, (const void **)&eager));
    parity_rms_norm_args changed = *args;
    changed.eps = PARITY_TEST_WRONG_EPS;
    return eager->backward(exec, &changed, saved, grads);
}

// ---- rms_norm "test_flipped_dw" and "test_flipped_dx": one gradient's sign flipped ----
// The forward is eager's and so is the backward, but for the sign of the weight gradient or of the
// input gradient (negation is exact in every dtype): the bug a kernel author makes with a wrong
// sign in one reduction. Nothing but the direction of that gradient changes.

static parity_error *eager_rms_norm_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    const parity_rms_norm_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_RMS_NORM, (const void **)&eager));
    return eager->forward(exec, args, saved);
}

static void negate(parity_tensor *tensor) {
    for (int64_t i = 0; i < tensor->numel; i++) parity_tensor_set(tensor, i, -parity_tensor_get(tensor, i));
}

static parity_error *flipped_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                      const parity_rms_norm_grads *grads, bool flip_weight) {
    const parity_rms_norm_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_RMS_NORM, (const void **)&eager));
    PARITY_TRY(eager->backward(exec, args, saved, grads));
    parity_tensor *flipped = flip_weight ? grads->dweight : grads->dinput;
    if (flipped) negate(flipped);
    return NULL;
}

static parity_error *flipped_dw_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                         const parity_rms_norm_grads *grads) {
    return flipped_backward(exec, args, saved, grads, true);
}

static parity_error *flipped_dx_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                         const parity_rms_norm_grads *grads) {
    return flipped_backward(exec, args, saved, grads, false);
}

// ---- rotary "test_position_off_by_one": the query rotated at position + 1 ----
// Forward runs eager twice: shifted positions for the query (saved tensors 0-1), the right ones for
// the key (saved tensors 2-3); backward replays each half with its own tables.

enum { ROTARY_EAGER_SAVED = 2 };

static parity_error *shifted_positions(const parity_tensor *positions, parity_tensor *out) {
    PARITY_TRY(parity_tensor_alloc(out, PARITY_I64, PARITY_CPU, positions->ndim, positions->shape));
    for (int64_t i = 0; i < positions->numel; i++)
        ((int64_t *)out->data)[i] = (int64_t)parity_tensor_get(positions, i) + PARITY_TEST_POSITION_OFFSET;
    return NULL;
}

static parity_error *off_by_one_forward(const parity_exec *exec, const parity_rotary_args *args, parity_saved *saved) {
    const parity_rotary_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_ROTARY, (const void **)&eager));
    parity_rotary_sizes sizes;
    PARITY_TRY(parity_rotary_check(args, &sizes));
    parity_tensor shifted = {0}, scratch_query = {0}, scratch_key = {0};
    parity_error *error = shifted_positions(args->positions, &shifted);
    if (!error) error = parity_tensor_alloc(&scratch_query, args->query_out->dtype, PARITY_CPU, args->query_out->ndim, args->query_out->shape);
    if (!error) error = parity_tensor_alloc(&scratch_key, args->key_out->dtype, PARITY_CPU, args->key_out->ndim, args->key_out->shape);
    if (!error) {
        parity_rotary_args query_pass = *args; // the query at position + 1
        query_pass.positions = &shifted;
        query_pass.key_out = &scratch_key;
        error = eager->forward(exec, &query_pass, saved);
    }
    if (!error && saved->count != ROTARY_EAGER_SAVED)
        error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "test_position_off_by_one: eager rotary saved %d tensors, expected %d",
                             saved->count, ROTARY_EAGER_SAVED);
    if (!error) {
        parity_rotary_args key_pass = *args; // the key at its true position
        key_pass.query_out = &scratch_query;
        error = eager->forward(exec, &key_pass, saved);
    }
    parity_tensor_release(&shifted);
    parity_tensor_release(&scratch_query);
    parity_tensor_release(&scratch_key);
    return error;
}

// A borrowed view of saved tensors [first, first + ROTARY_EAGER_SAVED) (never released).
static parity_saved saved_half(const parity_saved *saved, int first) {
    parity_saved half;
    memset(&half, 0, sizeof half);
    for (int i = 0; i < ROTARY_EAGER_SAVED && first + i < saved->count; i++) half.tensors[half.count++] = saved->tensors[first + i];
    return half;
}

static parity_error *off_by_one_backward(const parity_exec *exec, const parity_rotary_args *args,
                                         const parity_saved *saved, const parity_rotary_grads *grads) {
    const parity_rotary_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_ROTARY, (const void **)&eager));
    if (saved->count != 2 * ROTARY_EAGER_SAVED)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "test_position_off_by_one: backward found %d saved tensors, expected %d",
                            saved->count, 2 * ROTARY_EAGER_SAVED);
    parity_saved query_tables = saved_half(saved, 0), key_tables = saved_half(saved, ROTARY_EAGER_SAVED);
    parity_rotary_grads query_grads = *grads, key_grads = *grads;
    query_grads.dkey = NULL;
    key_grads.dquery = NULL;
    if (grads->dquery) PARITY_TRY(eager->backward(exec, args, &query_tables, &query_grads));
    if (grads->dkey) PARITY_TRY(eager->backward(exec, args, &key_tables, &key_grads));
    return NULL;
}

// ---- attention "test_scale_1pct": softmax scale * 1.01 ----

static parity_error *scale_forward(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved) {
    const parity_attention_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_ATTENTION, (const void **)&eager));
    parity_attention_args changed = *args;
    changed.scale = args->scale * PARITY_TEST_SCALE_FACTOR;
    return eager->forward(exec, &changed, saved);
}

static parity_error *scale_backward(const parity_exec *exec, const parity_attention_args *args,
                                    const parity_saved *saved, const parity_attention_grads *grads) {
    const parity_attention_kernels *eager = NULL;
    PARITY_TRY(eager_kernels(PARITY_OP_ATTENTION, (const void **)&eager));
    parity_attention_args changed = *args;
    changed.scale = args->scale * PARITY_TEST_SCALE_FACTOR;
    return eager->backward(exec, &changed, saved, grads);
}

static const parity_rms_norm_kernels perturbed_kernels = {perturbed_1e3_forward, perturbed_1e3_backward};
static const parity_rms_norm_kernels perturbed_bf16_unit_kernels = {perturbed_bf16_unit_forward, perturbed_bf16_unit_backward};
static const parity_rms_norm_kernels wrong_eps_kernels = {wrong_eps_forward, wrong_eps_backward};
static const parity_rms_norm_kernels flipped_dw_kernels = {eager_rms_norm_forward, flipped_dw_backward};
static const parity_rms_norm_kernels flipped_dx_kernels = {eager_rms_norm_forward, flipped_dx_backward};
static const parity_rotary_kernels off_by_one_kernels = {off_by_one_forward, off_by_one_backward};
static const parity_attention_kernels scale_kernels = {scale_forward, scale_backward};

typedef struct test_backend_row {
    const char *op, *name;
    const void *kernels;
    const char *description;
} test_backend_row;

static const test_backend_row test_backend_rows[] = {
    {PARITY_OP_RMS_NORM, "test_perturbed", &perturbed_kernels, "TEST ONLY: eager RMSNorm output * (1 + 1e-3)"},
    {PARITY_OP_RMS_NORM, "test_perturbed_bf16_unit", &perturbed_bf16_unit_kernels,
     "TEST ONLY: eager RMSNorm output * (1 + 2^-8), one unit of bf16 roundoff"},
    {PARITY_OP_RMS_NORM, "test_wrong_eps", &wrong_eps_kernels, "TEST ONLY: eager RMSNorm with eps 1e-2"},
    {PARITY_OP_RMS_NORM, "test_flipped_dw", &flipped_dw_kernels, "TEST ONLY: eager RMSNorm with the weight gradient's sign flipped"},
    {PARITY_OP_RMS_NORM, "test_flipped_dx", &flipped_dx_kernels, "TEST ONLY: eager RMSNorm with the input gradient's sign flipped"},
    {PARITY_OP_ROTARY, "test_position_off_by_one", &off_by_one_kernels,
     "TEST ONLY: eager RoPE with the query rotated at position + 1"},
    {PARITY_OP_ATTENTION, "test_scale_1pct", &scale_kernels, "TEST ONLY: eager attention with softmax scale * 1.01"},
};

parity_error *parity_test_backends_register(void) {
    for (size_t i = 0; i < sizeof test_backend_rows / sizeof test_backend_rows[0]; i++) {
        const test_backend_row *row = &test_backend_rows[i];
        if (parity_registry_find(row->op, row->name, PARITY_DEVICE_CPU)) continue;
        const parity_backend *eager = parity_registry_find(row->op, "eager", PARITY_DEVICE_CPU);
        if (!eager)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "test backend %s/%s wraps the CPU eager %s, which is not registered",
                                row->op, row->name, row->op);
        // Same dtypes and model variants as the eager kernel it wraps, marked TEST_ONLY.
        PARITY_TRY(parity_registry_add(&(parity_backend){
            .op = row->op,
            .name = row->name,
            .device = PARITY_DEVICE_CPU,
            .dtypes = eager->dtypes,
            .capabilities = (eager->capabilities & ~(uint32_t)PARITY_CAP_SEQUENCE_PARALLEL) | PARITY_CAP_TEST_ONLY,
            .kernels = row->kernels,
            .description = row->description,
            .origin = "ops/testing (test only)",
        }));
    }
    return NULL;
}
