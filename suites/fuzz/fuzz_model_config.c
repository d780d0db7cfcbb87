// fuzz_model_config.c: the config.json reader (models/checkpoint/model_config.c) on arbitrary text:
// JSON, model_type lookup, every field of the type's kinds, RoPE spellings, layer kinds.
#include <stdint.h>
#include <stdlib.h>

#include "models/checkpoint/model_config.h"
#include "suites/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = parity_fuzz_text(data, size);
    parity_model_config config;
    parity_error *error = parity_model_config_parse(text, "fuzz/config.json", &config);
    if (!error)
        for (int64_t layer = 0; layer < config.num_hidden_layers; layer++) (void)parity_model_config_is_moe_layer(&config, layer);
    parity_fuzz_drop(error);
    free(text);
    return 0;
}
