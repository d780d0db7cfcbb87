// fuzz_safetensors.c: the safetensors reader (models/checkpoint/safetensors.c) on arbitrary file
// bytes: open (header length, JSON header, dtypes, shapes, offsets), then a view and a converted
// copy of every tensor it accepted, as a checkpoint load would take them.
#include <stdint.h>

#include "models/checkpoint/safetensors.h"
#include "suites/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parity_safetensors_file file;
    parity_error *error = parity_safetensors_open(parity_fuzz_file("model.safetensors", data, size), &file);
    if (error) {
        parity_fuzz_drop(error);
        return 0;
    }
    for (size_t i = 0; i < file.entry_count; i++) {
        const char *name = file.entries[i].name;
        parity_tensor view;
        parity_fuzz_drop(parity_safetensors_view(&file, name, &view));
        const parity_dtype dtypes[] = {PARITY_F64, PARITY_BF16};
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
            parity_tensor copy;
            error = parity_safetensors_load(&file, name, dtypes[d], &copy);
            if (!error) parity_tensor_release(&copy);
            parity_fuzz_drop(error);
        }
    }
    parity_safetensors_close(&file);
    return 0;
}
