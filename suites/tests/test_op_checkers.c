// test_op_checkers.c: the op test engine (op_check.h) tested by deliberately wrong backends, as
// tests-visibility tests the harness. Each row registers an RMSNorm backend (test-only, named
// test_checker_*, in this test's process only) that is CPU eager with one bug, and runs it through the
// engine's two verdicts on the row "standard rows=7 hidden=13" (x: 7 x 13, weight: 13, y: 7 x 13):
//   finite differences in f64 (bound 1e-6, test_ops.c's default) and the comparison with eager in
//   f64 (bound 1e-12, an f64 backend pair's);
// each must be rejected with the engine's message. The bugs:
//   a NaN in dweight[3]: the second gradient the engine compares, not the first (a maximum that skips
//     NaN, `error > worst`, would have kept dx's finite error);
//   y[40] never written, and dx[40] never written: the engine poisons outputs and gradients with NaN
//     before every call, so the element left unwritten is still NaN;
//   dx * 1.001: a relative error of 1e-3 in the input gradient, everything else exact;
//   dweight * -1: the weight gradient with its sign flipped.
// A last row, eager itself under a test_checker_ name, must pass both: the checks reject the bugs, not
// every backend. And the NaN-winning maximum of worst_error.h, which every comparison loop uses.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "assert_ok.h"
#include "ops/testing/op_cases.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/testing/worst_error.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

enum { UNWRITTEN = 40, NAN_WEIGHT_ELEMENT = 3 };
static const double dx_scale = 1.001;
static const double finite_difference_bound = 1e-6, eager_pair_bound = 1e-12;

static const parity_rms_norm_kernels *eager(void) {
    return parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
}

static parity_error *eager_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    return eager()->forward(exec, args, saved);
}

static parity_error *eager_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                    const parity_rms_norm_grads *grads) {
    return eager()->backward(exec, args, saved, grads);
}

// `target` gets every element of `source` but element `skipped`, which keeps what it held.
static void copy_all_but(parity_tensor *target, const parity_tensor *source, int64_t skipped) {
    for (int64_t i = 0; i < target->numel; i++)
        if (i != skipped) parity_tensor_set(target, i, parity_tensor_get(source, i));
}

// y (N, H): eager writes a scratch y; every element but y[UNWRITTEN] is copied out.
static parity_error *unwritten_y_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    parity_tensor scratch;
    PARITY_TRY(parity_tensor_alloc(&scratch, args->output->dtype, PARITY_CPU, args->output->ndim, args->output->shape));
    parity_rms_norm_args inner = *args;
    inner.output = &scratch;
    parity_error *error = eager()->forward(exec, &inner, saved);
    if (!error) copy_all_but(args->output, &scratch, UNWRITTEN);
    parity_tensor_release(&scratch);
    return error;
}

// dx (N, H): eager writes a scratch dx; every element but dx[UNWRITTEN] is copied out.
static parity_error *unwritten_dx_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                           const parity_rms_norm_grads *grads) {
    if (!grads->dinput) return eager()->backward(exec, args, saved, grads);
    parity_tensor scratch;
    PARITY_TRY(parity_tensor_alloc(&scratch, grads->dinput->dtype, PARITY_CPU, grads->dinput->ndim, grads->dinput->shape));
    parity_rms_norm_grads inner = *grads;
    inner.dinput = &scratch;
    parity_error *error = eager()->backward(exec, args, saved, &inner);
    if (!error) copy_all_but(grads->dinput, &scratch, UNWRITTEN);
    parity_tensor_release(&scratch);
    return error;
}

static parity_error *nan_dweight_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                          const parity_rms_norm_grads *grads) {
    PARITY_TRY(eager()->backward(exec, args, saved, grads));
    if (grads->dweight) parity_tensor_set(grads->dweight, NAN_WEIGHT_ELEMENT, NAN);
    return NULL;
}

static parity_error *scaled_dx_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                        const parity_rms_norm_grads *grads) {
    PARITY_TRY(eager()->backward(exec, args, saved, grads));
    if (grads->dinput)
        for (int64_t i = 0; i < grads->dinput->numel; i++)
            parity_tensor_set(grads->dinput, i, dx_scale * parity_tensor_get(grads->dinput, i));
    return NULL;
}

static parity_error *flipped_dweight_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                              const parity_saved *saved, const parity_rms_norm_grads *grads) {
    PARITY_TRY(eager()->backward(exec, args, saved, grads));
    if (grads->dweight)
        for (int64_t i = 0; i < grads->dweight->numel; i++)
            parity_tensor_set(grads->dweight, i, -parity_tensor_get(grads->dweight, i));
    return NULL;
}

typedef struct wrong_backend {
    const char *name;
    parity_rms_norm_kernels kernels;
    const char *finite_differences; // the engine's message for each verdict; NULL: must pass
    const char *against_eager;
} wrong_backend;

static const wrong_backend wrong_backends[] = {
    {"test_checker_nan_dweight", {eager_forward, nan_dweight_backward}, "dweight[3] is NaN/Inf", "dweight[3] is NaN/Inf"},
    {"test_checker_unwritten_y", {unwritten_y_forward, eager_backward}, "y[40] is NaN/Inf", "y[40] is NaN/Inf"},
    {"test_checker_unwritten_dx", {eager_forward, unwritten_dx_backward}, "dx[40] is NaN/Inf", "dx[40] is NaN/Inf"},
    {"test_checker_dx_times_1.001", {eager_forward, scaled_dx_backward}, "dx relative error 1.000e-03 > 1e-06",
     "dx relative error 1.000e-03 > 1e-12"},
    {"test_checker_flipped_dweight", {eager_forward, flipped_dweight_backward}, "dweight relative error 2.000e+00 > 1e-06",
     "dweight relative error 2.000e+00 > 1e-12"},
    {"test_checker_honest", {eager_forward, eager_backward}, NULL, NULL},
};

static const op_check_case *rms_norm_row(const char *name) {
    for (size_t row = 0; row < rms_norm_case_list.count; row++)
        if (strcmp(rms_norm_case_list.cases[row].name, name) == 0) return &rms_norm_case_list.cases[row];
    cr_assert_fail("no rms_norm row '%s'", name);
    return NULL;
}

// The verdict of one check: rejected with exactly `expected`, or (expected NULL) passed.
static void expect_verdict(const wrong_backend *row, const char *check, const op_check_error_report *report, double bound,
                           const char *expected) {
    char why[160];
    bool within = op_check_within(report, bound, why, sizeof why);
    if (!expected) {
        cr_expect(within, "%s, %s: rejected (%s), must pass", row->name, check, why);
        return;
    }
    cr_expect(!within, "%s, %s: passed (worst %s %.3e), must be rejected", row->name, check, report->worst_tensor,
              report->worst_error);
    cr_expect_str_eq(why, expected, "%s, %s: the engine says '%s', expected '%s'", row->name, check, why, expected);
}

Test(op_checkers, wrong_backends_are_rejected_with_the_engines_message) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const parity_backend *reference = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU);
    cr_assert_not_null(reference);
    const op_check_case *test_case = rms_norm_row("standard rows=7 hidden=13");
    cr_assert_gt(7 * 13, UNWRITTEN);
    cr_assert_gt(13, NAN_WEIGHT_ELEMENT);
    op_check_state eager_run;
    assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_F64}, &eager_run), "eager");
    for (size_t r = 0; r < ROWS(wrong_backends); r++) {
        const wrong_backend *row = &wrong_backends[r];
        assert_ok(parity_registry_add(&(parity_backend){
                     .op = PARITY_OP_RMS_NORM, .name = row->name, .device = PARITY_DEVICE_CPU, .dtypes = reference->dtypes,
                     .capabilities = reference->capabilities | PARITY_CAP_TEST_ONLY, .kernels = &row->kernels,
                     .description = "test: a wrong RMSNorm for the op engine's checks", .origin = "test_op_checkers"}),
                 row->name);

        op_check_error_report finite_differences;
        assert_ok(op_check_finite_differences(test_case, row->name, &finite_differences), row->name);
        expect_verdict(row, "finite differences", &finite_differences, finite_difference_bound, row->finite_differences);

        op_check_state candidate;
        assert_ok(op_check_run(test_case, (op_check_run_options){.backend = row->name, .dtype = PARITY_F64}, &candidate),
                 row->name);
        op_check_error_report against_eager;
        assert_ok(op_check_compare_states(&eager_run, &candidate, &against_eager), row->name);
        expect_verdict(row, "against eager", &against_eager, eager_pair_bound, row->against_eager);
        cr_expect_eq(against_eager.tensors_compared, 3, "%s: dx, dweight and y compared, got %d", row->name,
                     against_eager.tensors_compared);
        op_check_release(&candidate);
    }
    op_check_release(&eager_run);
}

// The maximum every comparison loop takes (worst_error.h): a NaN anywhere wins and stays.
Test(op_checkers, the_worst_error_keeps_a_nan_from_any_position) {
    static const struct {
        double errors[4];
        bool nan;         // the worst must be NaN
        double worst;     // otherwise this
        int first_worst;  // the index that set the worst (its name is reported)
    } rows[] = {
        {{1e-3, 2e-3, 5e-4, 0}, false, 2e-3, 1},
        {{1e-3, NAN, 5e-4, 0}, true, 0, 1},
        {{1e-3, 5e-4, 0, NAN}, true, 0, 3},
        {{NAN, 1.0, INFINITY, 0}, true, 0, 0},
        {{1e-3, NAN, INFINITY, NAN}, true, 0, 1},
        {{0, INFINITY, 1.0, 0}, false, INFINITY, 1},
    };
    for (size_t r = 0; r < ROWS(rows); r++) {
        double worst = rows[r].errors[0];
        int index = 0;
        for (int i = 1; i < 4; i++)
            if (parity_test_worse(rows[r].errors[i], worst)) worst = rows[r].errors[i], index = i;
        double maximum = rows[r].errors[0];
        for (int i = 1; i < 4; i++) maximum = parity_test_max(maximum, rows[r].errors[i]);
        if (rows[r].nan) {
            cr_expect(isnan(worst) && isnan(maximum), "row %zu: worst %g, maximum %g, expected NaN", r, worst, maximum);
            cr_expect(!(worst <= 1e300), "row %zu: a NaN worst passes no bound", r);
        } else {
            cr_expect_eq(worst, rows[r].worst, "row %zu", r);
            cr_expect_eq(maximum, rows[r].worst, "row %zu", r);
        }
        cr_expect_eq(index, rows[r].first_worst, "row %zu: the worst came from %d, expected %d", r, index, rows[r].first_worst);
    }
}
