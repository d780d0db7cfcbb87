// check_exec.c: see check_exec.h.
#include "ops/testing/check_exec.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK_EXEC_DEVICES 16 // cpu and cuda:0..14

parity_error *op_check_exec(parity_device device, const parity_exec **out) {
    static parity_exec *contexts[CHECK_EXEC_DEVICES];
    *out = NULL;
    int slot = device.type == PARITY_DEVICE_CPU ? 0 : device.type == PARITY_DEVICE_CUDA ? 1 + device.index : -1;
    if (slot < 0 || slot >= CHECK_EXEC_DEVICES) {
        char where[32];
        return PARITY_ERROR(PARITY_ERROR_USAGE, "no check execution context for %s (cpu and cuda:0..%d only)",
                            parity_device_format(device, where, sizeof where), CHECK_EXEC_DEVICES - 2);
    }
    if (!contexts[slot]) PARITY_TRY(parity_exec_create(device, &contexts[slot]));
    *out = contexts[slot];
    return NULL;
}

const parity_exec *op_check_cpu_exec(void) {
    const parity_exec *exec;
    parity_error *error = op_check_exec(PARITY_CPU, &exec);
    if (error) {
        char message[512];
        parity_error_format(error, message, sizeof message);
        fprintf(stderr, "op check: the CPU execution context: %s\n", message);
        abort();
    }
    return exec;
}
