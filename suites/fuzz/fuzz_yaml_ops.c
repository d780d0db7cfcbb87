// fuzz_yaml_ops.c: the kernel-selection YAML reader (harness/config/yaml_ops.c) on arbitrary text,
// then the config builder on what it read, as `parity config check` does (cpu, and npu for the
// NPU normalization rules).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/config/ops_config.h"
#include "harness/config/yaml_ops.h"
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
    parity_ops_settings settings = {0};
    parity_error *error = parity_yaml_ops_read_text((const char *)data, size, "fuzz/run.yaml", &settings);
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
    return 0;
}
