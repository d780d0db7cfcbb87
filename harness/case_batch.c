// case_batch.c: suite batches as arrays (case_batch.h).
#include "harness/case_batch.h"

#include <stdlib.h>
#include <string.h>

#include "golden/sha256.h"
#include "harness/text.h"
#include "models/checkpoint/safetensors.h"
#include "ops/core/rng.h"

void parity_case_batch_release(parity_case_batch *batch) {
    free(batch->input_ids);
    free(batch->labels);
    free(batch->position_ids);
    memset(batch, 0, sizeof *batch);
}

static void checksum(parity_case_batch *batch) {
    size_t bytes = (size_t)(batch->rows * batch->length) * sizeof(int64_t);
    parity_sha256 context;
    parity_sha256_begin(&context);
    // int64 little-endian: the host order on every machine parity builds for (x86-64, aarch64).
    parity_sha256_update(&context, batch->input_ids, bytes);
    parity_sha256_update(&context, batch->labels, bytes);
    if (batch->position_ids) parity_sha256_update(&context, batch->position_ids, bytes);
    parity_sha256_end(&context, batch->sha256);
}

static parity_error *allocate(parity_case_batch *batch, int64_t rows, int64_t length, bool positions) {
    batch->rows = rows;
    batch->length = length;
    size_t count = (size_t)(rows * length);
    batch->input_ids = calloc(count, sizeof(int64_t));
    batch->labels = calloc(count, sizeof(int64_t));
    batch->position_ids = positions ? calloc(count, sizeof(int64_t)) : NULL;
    if (!batch->input_ids || !batch->labels || (positions && !batch->position_ids)) {
        parity_case_batch_release(batch);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "batch of [%lld, %lld]", (long long)rows, (long long)length);
    }
    return NULL;
}

parity_error *parity_case_batch_from_arrays(int64_t rows, int64_t length, const int64_t *input_ids, const int64_t *labels,
                                            const int64_t *position_ids, const char *source, parity_case_batch *out) {
    memset(out, 0, sizeof *out);
    PARITY_TRY(allocate(out, rows, length, position_ids != NULL));
    size_t bytes = (size_t)(rows * length) * sizeof(int64_t);
    memcpy(out->input_ids, input_ids, bytes);
    memcpy(out->labels, labels, bytes);
    if (position_ids) memcpy(out->position_ids, position_ids, bytes);
    parity_text_format(out->source, sizeof out->source, "%s", source);
    checksum(out);
    return NULL;
}

static parity_error *load_file(const parity_suite_batch *spec, parity_case_batch *out) {
    parity_safetensors_file file;
    PARITY_TRY(parity_safetensors_open(spec->file, &file));
    parity_tensor ids = {0}, labels = {0}, positions = {0};
    const char *names[3] = {"input_ids", "labels", "position_ids"};
    parity_tensor *tensors[3] = {&ids, &labels, &positions};
    parity_error *error = NULL;
    for (int i = 0; i < 3 && !error; i++) {
        const parity_safetensors_entry *entry = parity_safetensors_find(&file, names[i]);
        if (!entry) {
            if (i < 2) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: no tensor named '%s'", spec->file, names[i]);
            continue;
        }
        if (entry->ndim != 2 || (i > 0 && (entry->shape[0] != ids.shape[0] || entry->shape[1] != ids.shape[1])))
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: '%s' must be [B, T]%s", spec->file, names[i], i ? " like input_ids" : "");
        else error = parity_safetensors_load(&file, names[i], PARITY_I64, tensors[i]);
    }
    char source[1100];
    parity_text_format(source, sizeof source, "file %s", spec->file);
    if (!error)
        error = parity_case_batch_from_arrays(ids.shape[0], ids.shape[1], ids.data, labels.data,
                                              positions.data ? positions.data : NULL, source, out);
    parity_tensor_release(&ids);
    parity_tensor_release(&labels);
    parity_tensor_release(&positions);
    parity_safetensors_close(&file);
    return error;
}

// Token ids uniform in [0, vocab) from the Philox stream (seed, "input_ids").
static parity_error *draw_ids(uint64_t seed, int64_t vocab_size, parity_case_batch *batch) {
    parity_tensor ids = parity_tensor_wrap(batch->input_ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(batch->rows * batch->length));
    return parity_rng_fill_integers(&ids, parity_rng_stream_named(seed, "input_ids"), vocab_size);
}

parity_error *parity_case_batch_make(const parity_suite_batch *spec, int64_t vocab_size, parity_case_batch *out) {
    memset(out, 0, sizeof *out);
    if (spec->kind == PARITY_SUITE_BATCH_FILE) {
        PARITY_TRY(load_file(spec, out));
        // The file's ids and labels against the model's vocabulary (the model-ready batch checks them),
        // so a bad file is refused here, naming it, before any golden or run uses it.
        parity_batch checked;
        parity_error *error = parity_case_batch_to_batch(out, vocab_size, &checked);
        if (error) parity_case_batch_release(out);
        else parity_batch_release(&checked);
        return error;
    }
    if (vocab_size <= 0) return PARITY_ERROR(PARITY_ERROR_DATA, "batch '%s': the model has no vocabulary size", spec->name);
    bool packed = spec->kind == PARITY_SUITE_BATCH_PACKED;
    PARITY_TRY(allocate(out, spec->rows, spec->length, packed));
    parity_error *error = draw_ids(spec->seed, vocab_size, out);
    if (error) {
        parity_case_batch_release(out);
        return error;
    }
    size_t count = (size_t)(spec->rows * spec->length);
    memcpy(out->labels, out->input_ids, count * sizeof(int64_t));
    if (packed) {
        for (int64_t row = 0; row < spec->rows; row++) {
            int64_t t = 0;
            for (size_t d = 0; d < spec->document_count; d++)
                for (int64_t position = 0; position < spec->documents[d]; position++, t++) {
                    int64_t i = row * spec->length + t;
                    out->position_ids[i] = position;
                    if (position == 0 && d > 0) out->labels[i] = PARITY_IGNORE_INDEX; // no target across documents
                }
        }
        parity_text_format(out->source, sizeof out->source, "packed [%lld, %lld] documents [", (long long)spec->rows,
                           (long long)spec->length);
        for (size_t d = 0; d < spec->document_count; d++)
            parity_text_extend(out->source, sizeof out->source, "%s%lld", d ? ", " : "", (long long)spec->documents[d]);
        parity_text_extend(out->source, sizeof out->source, "] seed %llu", (unsigned long long)spec->seed);
    } else {
        parity_text_format(out->source, sizeof out->source, "plain [%lld, %lld] seed %llu", (long long)spec->rows,
                           (long long)spec->length, (unsigned long long)spec->seed);
    }
    checksum(out);
    return NULL;
}

parity_error *parity_case_batch_to_batch(const parity_case_batch *batch, int64_t vocab_size, parity_batch *out) {
    return parity_batch_from_arrays(batch->input_ids, batch->labels, batch->position_ids, batch->rows, batch->length,
                                    vocab_size, batch->source, out);
}
