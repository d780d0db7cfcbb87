// fuzz_ops_override.c: the --ops text parser (harness/config/ops_override.c) on arbitrary text,
// then the config builder on what it read, as `parity run --ops` does (cpu, and npu for the NPU
// normalization rules).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/config/ops_config.h"
#include "harness/config/ops_override.h"
#include "ops/registry.h"
#include "suites/fuzz/fuzz_common.h"

// The built-in backends, as the CLI registers them at start (availability is asked of the registry).
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    parity_error *error = parity_registry_register_builtins();
    if (error) {
        parity_error_print(error, stderr);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = parity_fuzz_text(data, size);
    parity_ops_settings settings = {0};
    parity_error *error = parity_ops_override_parse(text, &settings);
    if (!error) {
        parity_ops_config_options options = parity_ops_config_options_default();
        const parity_device devices[] = {PARITY_CPU, {PARITY_DEVICE_NPU, 0}};
        for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
            options.device = devices[i];
            parity_ops_config config;
            parity_fuzz_drop(parity_ops_config_build(&settings, &options, &config));
            parity_ops_config_release(&config);
        }
    }
    parity_fuzz_drop(error);
    parity_ops_settings_free(&settings);
    free(text);
    return 0;
}
