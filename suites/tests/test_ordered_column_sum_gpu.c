// test_ordered_column_sum_gpu.c: the weight and bias gradients that the CUDA eager backends sum in row
// order (ops/core/cuda/ordered_column_sum.cuh: dweight of rms_norm (standard and offset) and of
// rms_norm_gated, dbias of linear, gdn_gating's dA_log and ddt_bias), in f64, f32 and bf16, on awkward shapes: rows 1, 63, 65 (a 64-row
// step and one more), 1000, 20000 (many 128-row stages, a partial last one) x hidden 1, 5 (a partial
// column block; linear's dy rows not 16-byte aligned: one-element copies), 128 and 4096 (many column
// blocks, 16-byte copies); 20000 x 4096 is left out (its CPU run is slow). Two claims, each bytewise:
//   - the order: linear's dbias (its terms are dy itself, the same bytes on both devices) is the CPU
//     eager's sequential row sum bit for bit, unchunked and chunked;
//   - chunk invariance: with the scratch bound lowered to 4 KiB through PARITY_ORDERED_SUM_SCRATCH_BYTES
//     (down to one row a chunk at hidden 4096; each column's sum carried from chunk to chunk), every
//     dweight / dbias is the unbounded run's bit for bit.
// The norms' dweight (and gdn_gating's per-head sums) is not compared bytewise with the CPU's: its terms dy x_hat differ by an ulp or two
// between the devices (the row's inverse rms is rounded differently), which test_ops_gpu.c bounds by
// relative error. Without a GPU every test skips visibly (gpu_skip.h).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_skip.h"
#include "ops/testing/op_check.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/linear/linear.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct sum_params {
    int64_t rows, hidden;
    parity_rms_norm_variant variant; // rms_norm only
} sum_params;

static parity_error *rms_norm_setup(op_check_state *state, const void *raw) {
    const sum_params *p = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->rows, p->hidden));
    op_check_input(state, "weight", true, OP_CHECK_UNIFORM, 0.5, 1.5, PARITY_SHAPE(p->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(p->rows, p->hidden));
    op_check_set_attributes(state, &(parity_rms_norm_args){.eps = 1e-6, .variant = p->variant});
    return NULL;
}

static parity_error *rms_norm_gated_setup(op_check_state *state, const void *raw) {
    const sum_params *p = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->rows, p->hidden));
    op_check_input(state, "gate", true, OP_CHECK_NORMAL, 0, 2, PARITY_SHAPE(p->rows, p->hidden));
    op_check_input(state, "weight", true, OP_CHECK_UNIFORM, 0.5, 1.5, PARITY_SHAPE(p->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(p->rows, p->hidden));
    op_check_set_attributes(state, &(parity_rms_norm_gated_args){.eps = 1e-6});
    return NULL;
}

// rows = tokens, hidden = heads: dA_log and ddt_bias are the 2 x heads columns of one ordered sum.
static parity_error *gdn_gating_setup(op_check_state *state, const void *raw) {
    const sum_params *p = raw;
    op_check_input(state, "a", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->rows, p->hidden));
    op_check_input(state, "b", true, OP_CHECK_NORMAL, 0, 1.5, PARITY_SHAPE(p->rows, p->hidden));
    op_check_input(state, "A_log", true, OP_CHECK_UNIFORM, -1, 2.5, PARITY_SHAPE(p->hidden));
    op_check_input(state, "dt_bias", true, OP_CHECK_UNIFORM, 0.5, 1.5, PARITY_SHAPE(p->hidden));
    op_check_output_compute(state, "g", true, PARITY_SHAPE(p->rows, p->hidden));
    op_check_output(state, "beta", true, PARITY_SHAPE(p->rows, p->hidden));
    return NULL;
}

// hidden = out_features; 3 input features keep the GEMMs small.
static parity_error *linear_setup(op_check_state *state, const void *raw) {
    const sum_params *p = raw;
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(1, p->rows, 3));
    op_check_input(state, "weight", true, OP_CHECK_UNIFORM, -0.5, 0.5, PARITY_SHAPE(p->hidden, 3));
    op_check_input(state, "bias", true, OP_CHECK_UNIFORM, -1, 1, PARITY_SHAPE(p->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(1, p->rows, p->hidden));
    return NULL;
}

static const int64_t test_rows[] = {1, 63, 65, 1000, 20000};
static const int64_t test_hidden[] = {1, 5, 128, 4096};
static const parity_dtype test_dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};

static const parity_tensor *gradient_of(const op_check_state *state, const char *input) {
    for (int i = 0; i < state->tensor_count; i++)
        if (strcmp(state->tensors[i].name, input) == 0) return &state->tensors[i].gradient;
    return NULL;
}

// The runs a comparison makes: CPU eager vs CUDA eager, or CUDA eager with the default scratch bound vs
// CUDA eager with a 4 KiB one (the chunked path).
typedef enum { CPU_VS_CUDA, UNCHUNKED_VS_CHUNKED } comparison;

static void run_on(const op_check_case *row, parity_dtype dtype, parity_device device, bool small_scratch,
                   op_check_state *out) {
    if (small_scratch) cr_assert_eq(setenv("PARITY_ORDERED_SUM_SCRATCH_BYTES", "4096", 1), 0);
    else cr_assert_eq(unsetenv("PARITY_ORDERED_SUM_SCRATCH_BYTES"), 0);
    assert_ok(op_check_run(row, (op_check_run_options){.dtype = dtype, .device = device}, out), row->name);
    cr_assert_eq(unsetenv("PARITY_ORDERED_SUM_SCRATCH_BYTES"), 0);
}

// A row of the tables: an op whose CUDA eager backward sums in row order, how to set it up, and the
// gradients (one or two) that are such sums.
typedef struct sum_case {
    const parity_op_descriptor *op;
    parity_error *(*setup)(op_check_state *, const void *);
    parity_rms_norm_variant variant; // rms_norm only
    const char *inputs[2];           // the second NULL when there is one
} sum_case;

// The gradients of `c`'s inputs are byte for byte the same in the two runs of `how`.
static void expect_bitwise(const sum_case *c, const op_check_case *row, parity_dtype dtype, comparison how) {
    op_check_state first, second;
    if (how == CPU_VS_CUDA) {
        run_on(row, dtype, PARITY_CPU, false, &first);
        run_on(row, dtype, PARITY_CUDA(0), false, &second);
    } else {
        run_on(row, dtype, PARITY_CUDA(0), false, &first);
        run_on(row, dtype, PARITY_CUDA(0), true, &second);
    }
    const char *names[2] = {how == CPU_VS_CUDA ? "cpu eager" : "cuda eager",
                            how == CPU_VS_CUDA ? "cuda eager" : "cuda eager chunked"};
    for (int k = 0; k < 2 && c->inputs[k]; k++) {
        const char *input = c->inputs[k];
        const parity_tensor *a = gradient_of(&first, input), *b = gradient_of(&second, input);
        cr_assert(a && b && a->data && b->data, "%s [%s]: no gradient of %s", row->op->name, row->name, input);
        cr_assert_eq(a->numel, b->numel, "%s [%s]: d%s sizes differ", row->op->name, row->name, input);
        size_t element = parity_dtype_size(a->dtype);
        int64_t differing = 0, first_at = -1;
        for (int64_t i = 0; i < a->numel; i++)
            if (memcmp((const char *)a->data + i * element, (const char *)b->data + i * element, element) != 0) {
                if (first_at < 0) first_at = i;
                differing++;
            }
        if (differing)
            cr_expect_fail("%s [%s] %s: d%s of the %s differs from the %s's in %lld of %lld elements; "
                           "first [%lld]: %.17g vs %.17g",
                           row->op->name, row->name, parity_dtype_name(dtype), input, names[1], names[0],
                           (long long)differing, (long long)a->numel, (long long)first_at,
                           parity_tensor_get(b, first_at), parity_tensor_get(a, first_at));
    }
    op_check_release(&first);
    op_check_release(&second);
}

// Every (rows, hidden) of the tables but 20000 x 4096, every dtype. The chunked comparison takes rows 65
// and 1000 (several chunks at every hidden under the 4 KiB bound) and 20000 at hidden 1 and 5; linear
// sums f32 and f64 dy in place (no scratch), so only its bf16 rows run the chunked path there.
static void check_shapes(const sum_case *c, comparison how) {
    int compared = 0;
    for (size_t r = 0; r < ROWS(test_rows); r++)
        for (size_t h = 0; h < ROWS(test_hidden); h++) {
            int64_t rows = test_rows[r], hidden = test_hidden[h];
            if (rows * hidden > 5000000) continue; // 20000 x 4096
            if (how == UNCHUNKED_VS_CHUNKED && (rows < 65 || (rows > 1000 && hidden > 5))) continue;
            char name[96];
            snprintf(name, sizeof name, "rows=%lld hidden=%lld", (long long)rows, (long long)hidden);
            sum_params params = {rows, hidden, c->variant};
            op_check_case row = {c->op, name, c->setup, &params, 0, 0};
            for (size_t d = 0; d < ROWS(test_dtypes); d++, compared++) expect_bitwise(c, &row, test_dtypes[d], how);
        }
    cr_log_info("%s d%s%s%s: %d (shape, dtype) pairs compared bitwise (%s)", c->op->name, c->inputs[0],
                c->inputs[1] ? ", d" : "", c->inputs[1] ? c->inputs[1] : "", compared,
                how == CPU_VS_CUDA ? "cpu eager vs cuda eager" : "cuda eager vs cuda eager chunked");
}

static const sum_case linear_bias = {&parity_linear_op, linear_setup, PARITY_RMS_NORM_STANDARD, {"bias", NULL}};

// Every sum of ordered_column_sum.cuh's callers.
static const sum_case every_sum[] = {
    {&parity_rms_norm_op, rms_norm_setup, PARITY_RMS_NORM_STANDARD, {"weight", NULL}},
    {&parity_rms_norm_op, rms_norm_setup, PARITY_RMS_NORM_OFFSET, {"weight", NULL}},
    {&parity_rms_norm_gated_op, rms_norm_gated_setup, PARITY_RMS_NORM_STANDARD, {"weight", NULL}},
    {&parity_linear_op, linear_setup, PARITY_RMS_NORM_STANDARD, {"bias", NULL}},
    {&parity_gdn_gating_op, gdn_gating_setup, PARITY_RMS_NORM_STANDARD, {"A_log", "dt_bias"}},
};

static void require_gpu_and_backends(void) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
}

Test(ordered_column_sum_gpu, linear_dbias_is_the_cpu_eager_bitwise) {
    require_gpu_and_backends();
    check_shapes(&linear_bias, CPU_VS_CUDA);
}

Test(ordered_column_sum_gpu, every_sum_chunked_is_the_unchunked_bitwise) {
    require_gpu_and_backends();
    for (size_t i = 0; i < ROWS(every_sum); i++) check_shapes(&every_sum[i], UNCHUNKED_VS_CHUNKED);
}
