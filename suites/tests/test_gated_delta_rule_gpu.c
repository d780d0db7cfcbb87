// test_gated_delta_rule_gpu.c: the GPU gated_delta_rule backends of issue 15 (fla: the chunked WY/UT
// algorithm on CUDA) on the awkward rows of cases_gated_delta_rule.c's gated_delta_rule_gpu_case_list
// (T = 1, 63, 65, 1000; documents of 1, 15, 100, 300, 1200 tokens; 1, 3, 16 heads; Dk = Dv = 128 and
// Dk != Dv), through the op engine's GPU mode (CPU-built inputs mirrored to cuda:0):
//   registered   the backend is registered on cuda, available on cuda:0, claims bf16, f32 and determinism;
//   2x eager     in bf16 and in f32, for the output and the gradients of q, k, v, g and beta, with the
//                inputs and cotangent rounded to that dtype, ref = cuda eager in fp64 on those inputs,
//                eager = cuda eager (the recurrent reference) in that dtype. Two measures, both required:
//                  flash-attention's rule  max|backend - ref| <= 2 max|eager - ref| + 2 u max|ref|
//                  fla's own measure       rms(backend - ref) / rms(ref) <= 2 (that of eager) + u
//                u = the dtype's unit roundoff (2^-8 bf16, 2^-24 f32): flash-attention's floor for the
//                max rule (its tests add 2 max|(ref + 0.3 - 0.3) - ref|), and one rounding's worth of
//                relative error for the RMS rule. Every element is finite (outputs are poisoned with
//                NaN first). Each (row, dtype, tensor) prints both errors and the % of the allowance used;
//   determinism  bitwise equal output and gradients over 20 runs on the largest rows (bf16).
// Without a GPU every test skips visibly (gpu_skip.h).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "assert_ok.h"
#include "gpu_backend.h"
#include "gpu_skip.h"
#include "ops/testing/op_cases.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/testing/worst_error.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static const char *const gdr_backends[] = {"fla"};

static op_check_run_options on_cuda(const char *backend, parity_dtype dtype, parity_dtype input_precision) {
    return (op_check_run_options){.backend = backend, .dtype = dtype, .input_precision = input_precision,
                                  .device = PARITY_CUDA(0)};
}

static const parity_backend *available_backend(const char *name) {
    return gpu_test_available_backend(PARITY_OP_GATED_DELTA_RULE, name, "issue 15 registers it there");
}

Test(gated_delta_rule_gpu, every_backend_is_registered_and_available_on_cuda) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(gdr_backends); b++) {
        const parity_backend *backend = available_backend(gdr_backends[b]);
        if (!backend) continue;
        cr_expect(backend->dtypes & PARITY_DTYPE_BIT(PARITY_BF16), "gated_delta_rule %s does not claim bf16", backend->name);
        cr_expect(backend->dtypes & PARITY_DTYPE_BIT(PARITY_F32), "gated_delta_rule %s does not claim f32", backend->name);
        cr_expect(backend->capabilities & PARITY_CAP_DETERMINISTIC, "gated_delta_rule %s does not claim determinism",
                  backend->name);
        cr_expect(backend->capabilities & PARITY_CAP_VARLEN, "gated_delta_rule %s does not claim packed documents",
                  backend->name);
    }
}

enum { MAX_COMPARED = 8, COMPARED = 6 }; // output, dquery, dkey, dvalue, dg, dbeta

static void check_backend(const char *backend, const op_check_case *row, parity_dtype dtype,
                          const op_check_state *reference, const op_check_max_error *eager, int eager_count) {
    op_check_state run;
    char what[256];
    snprintf(what, sizeof what, "gated_delta_rule %s [%s] %s", backend, row->name, parity_dtype_name(dtype));
    parity_error *error = op_check_run(row, on_cuda(backend, dtype, dtype), &run);
    if (error) op_check_release(&run);
    assert_ok(error, what);
    op_check_max_error errors[MAX_COMPARED];
    int count = 0;
    assert_ok(op_check_max_errors(reference, &run, errors, MAX_COMPARED, &count), what);
    cr_expect_eq(count, eager_count, "%s: %d tensors compared, eager compared %d", what, count, eager_count);
    cr_expect_eq(count, COMPARED, "%s: %d tensors compared, expected the output and five gradients", what, count);
    const double u = dtype == PARITY_BF16 ? 0x1p-8 : 0x1p-24;
    for (int t = 0; t < count && t < eager_count; t++) {
        double max_allowance = 2 * eager[t].max_error + 2 * u * eager[t].max_reference;
        double rms_allowance = 2 * eager[t].relative_rms + u;
        cr_log_info("gdr %-4s %-4s %-50s %-7s max %.2e (eager %.2e, %5.1f%%)  rel-rms %.2e (eager %.2e, %5.1f%%)",
                    backend, parity_dtype_name(dtype), row->name, errors[t].tensor, errors[t].max_error,
                    eager[t].max_error, 100 * errors[t].max_error / max_allowance, errors[t].relative_rms,
                    eager[t].relative_rms, 100 * errors[t].relative_rms / rms_allowance);
        cr_expect(!isnan(errors[t].max_error) && !isnan(errors[t].relative_rms), "%s: %s has NaN/Inf elements", what,
                  errors[t].tensor);
        cr_expect(!parity_test_worse(errors[t].max_error, max_allowance),
                  "%s: %s max|backend - fp64| = %.3e > 2 x eager's %.3e + 2u max|ref| (%.0f%% of the allowance)", what,
                  errors[t].tensor, errors[t].max_error, eager[t].max_error, 100 * errors[t].max_error / max_allowance);
        cr_expect(!parity_test_worse(errors[t].relative_rms, rms_allowance),
                  "%s: %s relative RMS error %.3e > 2 x eager's %.3e + u (%.0f%% of the allowance)", what,
                  errors[t].tensor, errors[t].relative_rms, eager[t].relative_rms,
                  100 * errors[t].relative_rms / rms_allowance);
    }
    op_check_release(&run);
}

Test(gated_delta_rule_gpu, every_backend_within_2x_eager_error_of_fp64_on_awkward_rows, .timeout = 900) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    bool present[ROWS(gdr_backends)];
    for (size_t b = 0; b < ROWS(gdr_backends); b++) present[b] = available_backend(gdr_backends[b]) != NULL;
    const parity_dtype dtypes[] = {PARITY_BF16, PARITY_F32};
    for (size_t r = 0; r < gated_delta_rule_gpu_case_list.count; r++) {
        const op_check_case *row = &gated_delta_rule_gpu_case_list.cases[r];
        for (size_t d = 0; d < ROWS(dtypes); d++) {
            op_check_state reference, eager;
            assert_ok(op_check_run(row, on_cuda("eager", PARITY_F64, dtypes[d]), &reference), row->name);
            assert_ok(op_check_run(row, on_cuda("eager", dtypes[d], dtypes[d]), &eager), row->name);
            op_check_max_error eager_errors[MAX_COMPARED];
            int eager_count = 0;
            assert_ok(op_check_max_errors(&reference, &eager, eager_errors, MAX_COMPARED, &eager_count), row->name);
            op_check_release(&eager);
            for (int t = 0; t < eager_count; t++)
                cr_expect(!isnan(eager_errors[t].max_error), "eager %s [%s]: %s has NaN/Inf elements",
                          parity_dtype_name(dtypes[d]), row->name, eager_errors[t].tensor);
            for (size_t b = 0; b < ROWS(gdr_backends); b++)
                if (present[b]) check_backend(gdr_backends[b], row, dtypes[d], &reference, eager_errors, eager_count);
            op_check_release(&reference);
        }
    }
}

static const char *const determinism_rows[] = {
    "H=16 Dk=Dv=128 T=1000 l2norm g=f32",
    "H=3 Dk=Dv=128 docs=1,15,100,300,1200 l2norm g=f32",
    "H=16 Dk=Dv=128 docs=1,15,100,300,1200 l2norm g=f32",
};
enum { DETERMINISM_RUNS = 20 };

Test(gated_delta_rule_gpu, backends_are_bitwise_equal_over_20_runs, .timeout = 600) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t b = 0; b < ROWS(gdr_backends); b++) {
        if (!available_backend(gdr_backends[b])) continue;
        for (size_t r = 0; r < ROWS(determinism_rows); r++) {
            const op_check_case *row = NULL;
            for (size_t i = 0; i < gated_delta_rule_gpu_case_list.count; i++)
                if (strcmp(gated_delta_rule_gpu_case_list.cases[i].name, determinism_rows[r]) == 0)
                    row = &gated_delta_rule_gpu_case_list.cases[i];
            cr_assert_not_null(row, "no gated_delta_rule GPU row '%s'", determinism_rows[r]);
            char what[160];
            snprintf(what, sizeof what, "gated_delta_rule %s [%s] bf16", gdr_backends[b], row->name);
            int equal_runs =
                gpu_test_bitwise_equal_runs(row, on_cuda(gdr_backends[b], PARITY_BF16, PARITY_BF16), DETERMINISM_RUNS, what);
            cr_log_info("gated_delta_rule %-4s %-56s %d runs bitwise equal", gdr_backends[b], row->name, equal_runs);
        }
    }
}
