// exec_fixture.c: see exec_fixture.h.
#include "suites/tests/exec_fixture.h"

#include <criterion/criterion.h>

#include "ops/testing/check_exec.h"

const parity_exec *parity_test_exec(parity_device device) {
    const parity_exec *exec;
    parity_error *error = op_check_exec(device, &exec);
    if (error) {
        char message[512];
        parity_error_format(error, message, sizeof message);
        parity_error_free(error);
        cr_assert_fail("test execution context: %s", message);
    }
    return exec;
}
