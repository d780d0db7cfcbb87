// exec_fixture.c: see exec_fixture.h.
#include "suites/tests/exec_fixture.h"

#include <criterion/criterion.h>

#define FIXTURE_DEVICES 16 // cpu and cuda:0..14

const parity_exec *parity_test_exec(parity_device device) {
    static parity_exec *contexts[FIXTURE_DEVICES];
    int slot = device.type == PARITY_DEVICE_CPU ? 0 : device.type == PARITY_DEVICE_CUDA ? 1 + device.index : -1;
    cr_assert(slot >= 0 && slot < FIXTURE_DEVICES, "no test execution context for device type %d index %d", device.type,
              device.index);
    if (!contexts[slot]) {
        parity_error *error = parity_exec_create(device, &contexts[slot]);
        if (error) {
            char message[512];
            parity_error_format(error, message, sizeof message);
            parity_error_free(error);
            cr_assert_fail("test execution context: %s", message);
        }
    }
    return contexts[slot];
}
