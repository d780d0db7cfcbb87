// gpu_backend.c: the shared GPU backend checks of gpu_backend.h.
#include "gpu_backend.h"

#include <criterion/criterion.h>
#include <stdbool.h>

#include "assert_ok.h"

const parity_backend *gpu_test_available_backend(const char *op, const char *name, const char *registered_by) {
    const parity_backend *backend = parity_registry_find(op, name, PARITY_DEVICE_CUDA);
    if (!backend) {
        cr_expect_fail("%s %s is not registered on cuda (%s)", op, name, registered_by);
        return NULL;
    }
    char reason[256] = "";
    parity_availability verdict = parity_registry_availability(op, name, PARITY_CUDA(0), NULL, reason, sizeof reason);
    if (verdict != PARITY_AVAILABLE) {
        cr_expect_fail("%s %s is registered on cuda but not available on cuda:0: %s", op, name, reason);
        return NULL;
    }
    return backend;
}

int gpu_test_bitwise_equal_runs(const op_check_case *row, op_check_run_options options, int runs, const char *what) {
    op_check_state first, again;
    assert_ok(op_check_run(row, options, &first), what);
    assert_ok(op_check_run(row, options, &again), what);
    int equal_runs = 1;
    for (int run = 1; run < runs; run++) {
        if (run > 1) assert_ok(op_check_rerun(row, &again), what);
        char differing[48] = "";
        bool same = op_check_bitwise_equal(&first, &again, differing, sizeof differing);
        cr_expect(same, "%s: flagged deterministic but run %d differs from run 0 in %s", what, run, differing);
        if (!same) break;
        equal_runs++;
    }
    op_check_release(&again);
    op_check_release(&first);
    return equal_runs;
}
