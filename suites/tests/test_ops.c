// test_ops.c: runs every op row (op_cases.c) through every check: backward against central finite
// differences in f64, bitwise determinism in each dtype, f32/bf16 close to f64, every non-eager
// backend against eager, and invalid calls rejected with a message naming the op and the mismatch.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <string.h>

#include "assert_ok.h"
#include "ops/testing/op_cases.h"

static const double default_finite_difference_tolerance = 1e-6;

Test(ops, backward_matches_finite_differences) {
    int checked = 0;
    for (size_t list = 0; list < all_op_case_list_count; list++) {
        for (size_t row = 0; row < all_op_cases[list]->count; row++) {
            const op_check_case *test_case = &all_op_cases[list]->cases[row];
            op_check_error_report report;
            assert_ok(op_check_finite_differences(test_case, "eager", &report), test_case->name);
            double tolerance = test_case->finite_difference_tolerance ? test_case->finite_difference_tolerance
                                                                      : default_finite_difference_tolerance;
            cr_log_info("%-20s %-44s finite differences: max relative error %.2e (%s), bound %.0e", test_case->op->name,
                        test_case->name, report.worst_error, report.worst_tensor, tolerance);
            cr_expect(report.tensors_compared > 0, "%s [%s]: no differentiable input", test_case->op->name, test_case->name);
            char why[160];
            cr_expect(op_check_within(&report, tolerance, why, sizeof why), "%s [%s]: %s", test_case->op->name,
                      test_case->name, why);
            checked++;
        }
    }
    cr_assert(checked > 0);
}

Test(ops, eager_is_bitwise_deterministic_in_every_dtype) {
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    for (size_t list = 0; list < all_op_case_list_count; list++) {
        for (size_t row = 0; row < all_op_cases[list]->count; row++) {
            const op_check_case *test_case = &all_op_cases[list]->cases[row];
            for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
                op_check_state first, second;
                op_check_run_options options = {.dtype = dtypes[d]};
                assert_ok(op_check_run(test_case, options, &first), test_case->name);
                assert_ok(op_check_run(test_case, options, &second), test_case->name);
                char differing[48] = "";
                cr_expect(op_check_bitwise_equal(&first, &second, differing, sizeof differing),
                          "%s [%s] %s: %s differs between two identical runs", test_case->op->name, test_case->name,
                          parity_dtype_name(dtypes[d]), differing);
                op_check_release(&first);
                op_check_release(&second);
            }
        }
    }
}

// f32 and bf16 eager against f64 eager on the same (rounded) inputs: the precision emulation is
// sane. Bounds: f32 1e-4, bf16 5e-2 relative L2 (bf16 has 8 significant bits).
Test(ops, low_precision_eager_is_close_to_f64) {
    const struct { parity_dtype dtype; double bound; } precisions[] = {{PARITY_F32, 1e-4}, {PARITY_BF16, 5e-2}};
    for (size_t list = 0; list < all_op_case_list_count; list++) {
        for (size_t row = 0; row < all_op_cases[list]->count; row++) {
            const op_check_case *test_case = &all_op_cases[list]->cases[row];
            for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++) {
                op_check_state reference, candidate;
                parity_dtype dtype = precisions[p].dtype;
                assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_F64, .input_precision = dtype},
                                           &reference), test_case->name);
                assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = dtype}, &candidate), test_case->name);
                op_check_error_report report;
                assert_ok(op_check_compare_states(&reference, &candidate, &report), test_case->name);
                cr_log_info("%-20s %-44s %s eager vs f64: %.2e (%s)", test_case->op->name, test_case->name,
                            parity_dtype_name(dtype), report.worst_error, report.worst_tensor);
                char why[160];
                cr_expect(op_check_within(&report, precisions[p].bound, why, sizeof why), "%s [%s] %s: %s",
                          test_case->op->name, test_case->name, parity_dtype_name(dtype), why);
                op_check_release(&reference);
                op_check_release(&candidate);
            }
        }
    }
}

// Every non-eager CPU backend against eager: f64 within the pair's tolerance, and in bf16 no
// further from the f64 truth than 2x what eager bf16 shows (plus 1e-3 for round-off luck).
Test(ops, other_backends_match_eager) {
    for (size_t pair = 0; pair < all_backend_pair_count; pair++) {
        const op_backend_pair *backend = &all_backend_pairs[pair];
        if (!backend->op) continue;
        int rows = 0;
        for (size_t list = 0; list < all_op_case_list_count; list++) {
            for (size_t row = 0; row < all_op_cases[list]->count; row++) {
                const op_check_case *test_case = &all_op_cases[list]->cases[row];
                if (strcmp(test_case->op->name, backend->op) != 0) continue;
                rows++;
                op_check_state truth, eager_f64, other_f64, eager_bf16, other_bf16;
                assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_F64}, &eager_f64), test_case->name);
                assert_ok(op_check_run(test_case, (op_check_run_options){.backend = backend->backend, .dtype = PARITY_F64},
                                           &other_f64), test_case->name);
                op_check_error_report f64_report;
                assert_ok(op_check_compare_states(&eager_f64, &other_f64, &f64_report), test_case->name);
                char why[160];
                cr_expect(op_check_within(&f64_report, backend->f64_tolerance, why, sizeof why), "%s %s [%s] f64: %s",
                          backend->op, backend->backend, test_case->name, why);

                assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_F64, .input_precision = PARITY_BF16},
                                           &truth), test_case->name);
                assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_BF16}, &eager_bf16), test_case->name);
                assert_ok(op_check_run(test_case, (op_check_run_options){.backend = backend->backend, .dtype = PARITY_BF16},
                                           &other_bf16), test_case->name);
                op_check_error_report eager_report, other_report;
                assert_ok(op_check_compare_states(&truth, &eager_bf16, &eager_report), test_case->name);
                assert_ok(op_check_compare_states(&truth, &other_bf16, &other_report), test_case->name);
                double bound = 2 * eager_report.worst_error + 1e-3;
                cr_log_info("%-20s %-12s %-40s f64 vs eager %.2e; bf16 error %.2e (eager bf16 %.2e)", backend->op,
                            backend->backend, test_case->name, f64_report.worst_error, other_report.worst_error,
                            eager_report.worst_error);
                cr_expect(op_check_within(&other_report, bound, why, sizeof why), "%s %s [%s] bf16: %s (bound: 2 x eager's %.3e + 1e-3)",
                          backend->op, backend->backend, test_case->name, why, eager_report.worst_error);
                op_check_release(&truth);
                op_check_release(&eager_f64);
                op_check_release(&other_f64);
                op_check_release(&eager_bf16);
                op_check_release(&other_bf16);
            }
        }
        cr_expect(rows > 0, "backend %s/%s has no rows to be compared on", backend->op, backend->backend);
    }
}

Test(ops, invalid_calls_are_rejected_with_a_named_mismatch) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    for (size_t list = 0; list < all_invalid_case_list_count; list++) {
        for (size_t row = 0; row < all_invalid_cases[list]->count; row++) {
            const op_invalid_case *invalid = &all_invalid_cases[list]->cases[row];
            parity_error *error = invalid->call();
            cr_expect(error != NULL, "%s [%s]: accepted", invalid->op, invalid->name);
            if (!error) continue;
            const char *message = parity_error_message(error);
            cr_expect(strstr(message, invalid->expected_message) != NULL, "%s [%s]: message '%s' lacks '%s'", invalid->op,
                      invalid->name, message, invalid->expected_message);
            cr_expect(strstr(message, invalid->op) != NULL, "%s [%s]: message '%s' does not name the op", invalid->op,
                      invalid->name, message);
            parity_error_free(error);
        }
    }
}
