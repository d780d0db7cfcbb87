// fuzz_batch.c: the batch file reader (models/batch.c) on arbitrary file bytes: a safetensors file
// with input_ids, labels and optional position_ids, checked against a vocabulary (as `golden
// generate` and `run` read a suite's batch file) and unchecked (vocab_size 0).
#include <stdint.h>

#include "models/batch.h"
#include "suites/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = parity_fuzz_file("batch.safetensors", data, size);
    const int64_t vocab_sizes[] = {0, 400}; // unchecked, and qwen3_tiny's vocabulary (the seeds' model)
    for (size_t i = 0; i < sizeof vocab_sizes / sizeof vocab_sizes[0]; i++) {
        parity_batch batch;
        parity_error *error = parity_batch_read(path, vocab_sizes[i], &batch);
        if (!error) parity_batch_release(&batch);
        parity_fuzz_drop(error);
    }
    return 0;
}
