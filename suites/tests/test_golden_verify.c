// test_golden_verify.c: `parity golden verify` sees a stored value that is off by 1e-9 relative. A
// scratch suite's golden (qwen3_tiny, fp64 eager) is read with the library, one expected value is
// multiplied by 1 + 1e-9 (the loss, the total gradient norm, the logits sum, or the gradient norm of
// the last parameter, so the maximum over parameters is exercised past its first entry), and the
// golden is written back through the library's writer, so its seal is valid and only the value is
// wrong. verify must exit 1, print "DRIFT" with the drift (1e-09) where it is, and count the file as
// drifted; the drift bound is 1e-12 (harness/cli/command_golden.c), so a nudge of 1e-13 and the
// golden rewritten unchanged are still "ok" (exit 0): the drift is measured, not assumed.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"
#include "golden/golden.h"
#include "harness/golden_case.h"
#include "scratch_suite.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef enum nudged_value { NUDGE_LOSS, NUDGE_GRAD_NORM, NUDGE_LOGITS_SUM, NUDGE_LAST_PARAMETER } nudged_value;

// The value the row nudges, and its name as verify prints it.
static double *value_of(parity_golden *golden, nudged_value which, char *name, size_t size) {
    parity_step_result *expected = &golden->expected;
    switch (which) {
    case NUDGE_LOSS: snprintf(name, size, "loss"); return &expected->loss;
    case NUDGE_GRAD_NORM: snprintf(name, size, "grad_norm"); return &expected->grad_norm;
    case NUDGE_LOGITS_SUM: snprintf(name, size, "logits_sum"); return &expected->logits_sum;
    case NUDGE_LAST_PARAMETER:
        cr_assert_gt(expected->parameter_count, 1);
        snprintf(name, size, "grad_norm:%s", expected->parameter_names[expected->parameter_count - 1]);
        return &expected->parameter_grad_norms[expected->parameter_count - 1];
    }
    return NULL;
}

Test(golden_verify, a_value_nudged_by_1e_9_relative_is_drift) {
    static const struct {
        nudged_value which;
        double relative; // the nudge: stored = value * (1 + relative)
        bool drift;
        const char *printed; // the drift as verify prints it (%.3g)
    } rows[] = {
        {NUDGE_LOSS, 1e-9, true, "1e-09"},
        {NUDGE_GRAD_NORM, 1e-9, true, "1e-09"},
        {NUDGE_LOGITS_SUM, 1e-9, true, "1e-09"},
        {NUDGE_LAST_PARAMETER, 1e-9, true, "1e-09"},
        {NUDGE_LAST_PARAMETER, -1e-9, true, "1e-09"},
        {NUDGE_LOSS, 1e-13, false, NULL},
        {NUDGE_LOSS, 0, false, "0"},
    };
    scratch_suite s = scratch_suite_make((scratch_spec){.goldens = true});
    char path[256], pristine[300], arguments[1024];
    parity_golden_path_of(s.goldens, "scratch", "qwen3_tiny", "a", path, sizeof path);
    snprintf(pristine, sizeof pristine, "%s/pristine.h5", s.folder); // outside the golden folder
    snprintf(arguments, sizeof arguments, "cp '%s' '%s'", path, pristine);
    cr_assert_eq(system(arguments), 0);
    for (size_t r = 0; r < ROWS(rows); r++) {
        parity_golden golden;
        parity_error *error = parity_golden_read(pristine, &golden);
        cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
        char name[160];
        double *value = value_of(&golden, rows[r].which, name, sizeof name);
        cr_assert(isfinite(*value) && *value != 0, "row %zu: %s = %g", r, name, *value);
        *value *= 1 + rows[r].relative;
        error = parity_golden_write(path, &golden, true);
        cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
        parity_golden_release(&golden);

        snprintf(arguments, sizeof arguments, "golden verify --suite %s --golden-dir %s", s.suite, s.goldens);
        command_result result = run_parity(arguments);
        char expected[640];
        if (rows[r].drift) {
            cr_expect_eq(result.exit_code, 1, "%s * (1 %+g): exit %d\n%s", name, rows[r].relative, result.exit_code,
                         result.output);
            snprintf(expected, sizeof expected, "DRIFT    %s: fp64 drift %s (largest at %s)", path, rows[r].printed, name);
            cr_expect(strstr(result.output, expected) != NULL, "%s: '%s' in\n%s", name, expected, result.output);
            cr_expect(strstr(result.output, "1 goldens checked, 1 drifted") != NULL, "%s\n%s", name, result.output);
        } else {
            cr_expect_eq(result.exit_code, 0, "%s * (1 %+g): exit %d\n%s", name, rows[r].relative, result.exit_code,
                         result.output);
            snprintf(expected, sizeof expected, "ok       %s: fp64 drift ", path);
            cr_expect(strstr(result.output, expected) != NULL, "%s: '%s' in\n%s", name, expected, result.output);
            if (rows[r].printed) {
                snprintf(expected, sizeof expected, "fp64 drift %s ", rows[r].printed);
                cr_expect(strstr(result.output, expected) != NULL, "%s: '%s' in\n%s", name, expected, result.output);
            }
            cr_expect(strstr(result.output, "1 goldens checked, 0 drifted") != NULL, "%s\n%s", name, result.output);
        }
        free(result.output);
    }
    scratch_suite_remove(&s);
}
