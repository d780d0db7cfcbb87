// batch.c: batch files -> parity_batch, with the HF label shift and document boundaries.
#include "models/batch.h"

#include <stdlib.h>
#include <string.h>

#include "models/checkpoint/safetensors.h"

void parity_batch_release(parity_batch *batch) {
    parity_tensor_release(&batch->input_ids);
    parity_tensor_release(&batch->positions);
    parity_tensor_release(&batch->targets);
    parity_tensor_release(&batch->cu_seqlens);
    parity_tensor_release(&batch->sequence_cu_seqlens);
    memset(batch, 0, sizeof *batch);
}

parity_error *parity_batch_to_device(const parity_batch *batch, parity_device device, parity_batch *out) {
    memset(out, 0, sizeof *out);
    const parity_tensor *sources[] = {&batch->input_ids, &batch->positions, &batch->targets, &batch->cu_seqlens};
    parity_tensor *targets[] = {&out->input_ids, &out->positions, &out->targets, &out->cu_seqlens};
    const char *names[] = {"input_ids", "positions", "targets", "cu_seqlens"};
    for (int i = 0; i < 4; i++) {
        parity_error *error = parity_tensor_to(targets[i], sources[i], device, PARITY_I64);
        if (error) {
            char where[32];
            parity_batch_release(out);
            return parity_error_wrap(error, __FILE__, __LINE__, "copying the batch's %s to %s", names[i],
                                     parity_device_format(device, where, sizeof where));
        }
    }
    out->rows = batch->rows;
    out->row_length = batch->row_length;
    out->token_count = batch->token_count;
    out->document_count = batch->document_count;
    out->valid_target_count = batch->valid_target_count;
    out->num_items_in_batch = batch->num_items_in_batch;
    out->sequence_row_length = batch->sequence_row_length;
    if (batch->sequence_cu_seqlens.numel > 0) {
        parity_error *error = parity_tensor_to(&out->sequence_cu_seqlens, &batch->sequence_cu_seqlens, device, PARITY_I64);
        if (error) {
            parity_batch_release(out);
            return parity_error_wrap(error, __FILE__, __LINE__, "copying the batch's sequence_cu_seqlens");
        }
    }
    return NULL;
}

parity_error *parity_batch_from_arrays(const int64_t *input_ids, const int64_t *labels, const int64_t *positions, int64_t rows,
                                       int64_t row_length, int64_t vocab_size, const char *source, parity_batch *out) {
    memset(out, 0, sizeof *out);
    if (rows <= 0 || row_length <= 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: batch shape (%lld, %lld) is empty", source, (long long)rows, (long long)row_length);
    int64_t count = rows * row_length;
    out->rows = rows;
    out->row_length = row_length;
    out->token_count = count;
    parity_error *error = parity_tensor_alloc(&out->input_ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(count));
    if (!error) error = parity_tensor_alloc(&out->positions, PARITY_I64, PARITY_CPU, PARITY_SHAPE(count));
    if (!error) error = parity_tensor_alloc(&out->targets, PARITY_I64, PARITY_CPU, PARITY_SHAPE(count));
    if (!error) error = parity_tensor_alloc(&out->cu_seqlens, PARITY_I64, PARITY_CPU, PARITY_SHAPE(count + 1));
    if (error) {
        parity_batch_release(out);
        return error;
    }
    int64_t *ids = out->input_ids.data, *position = out->positions.data, *target = out->targets.data, *bounds = out->cu_seqlens.data;
    int64_t documents = 0;
    for (int64_t row = 0; row < rows && !error; row++) {
        for (int64_t t = 0; t < row_length && !error; t++) {
            int64_t i = row * row_length + t;
            ids[i] = input_ids[i];
            if (ids[i] < 0 || (vocab_size > 0 && ids[i] >= vocab_size)) {
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: input_ids[%lld, %lld] = %lld is outside the vocabulary 0..%lld", source,
                                     (long long)row, (long long)t, (long long)ids[i], (long long)vocab_size - 1);
                break;
            }
            int64_t label = labels[i];
            if (label != PARITY_IGNORE_INDEX && (label < 0 || (vocab_size > 0 && label >= vocab_size))) {
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: labels[%lld, %lld] = %lld is neither -100 nor a token id below %lld",
                                     source, (long long)row, (long long)t, (long long)label, (long long)vocab_size);
                break;
            }
            position[i] = positions ? positions[i] : t;
            bool starts_document = t == 0 || position[i] == 0;
            if (positions && t == 0 && position[i] != 0)
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: position_ids[%lld, 0] = %lld, rows must start at 0", source,
                                     (long long)row, (long long)position[i]);
            else if (positions && t > 0 && position[i] != 0 && position[i] != position[i - 1] + 1)
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: position_ids[%lld, %lld] = %lld after %lld: positions must count up by "
                                     "one or restart at 0", source, (long long)row, (long long)t, (long long)position[i],
                                     (long long)position[i - 1]);
            if (starts_document) bounds[documents++] = i;
            // HF ForCausalLMLoss: pad labels with -100 on the right, then shift left by one.
            target[i] = t + 1 < row_length ? labels[i + 1] : PARITY_IGNORE_INDEX;
        }
    }
    if (error) {
        parity_batch_release(out);
        return error;
    }
    bounds[documents] = count;
    out->document_count = documents;
    out->cu_seqlens.shape[0] = documents + 1; // the allocation is larger; the view covers the documents
    out->cu_seqlens.numel = documents + 1;
    for (int64_t i = 0; i < count; i++) out->valid_target_count += target[i] != PARITY_IGNORE_INDEX;
    return NULL;
}

static parity_error *load_integer_tensor(const parity_safetensors_file *file, const char *name, bool required, int64_t rows,
                                         int64_t row_length, parity_tensor *out) {
    memset(out, 0, sizeof *out);
    const parity_safetensors_entry *entry = parity_safetensors_find(file, name);
    if (!entry) return required ? PARITY_ERROR(PARITY_ERROR_DATA, "%s: no tensor named '%s'", file->path, name) : NULL;
    if (entry->dtype != PARITY_I64 && entry->dtype != PARITY_I32)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: '%s' is %s, expected int64", file->path, name, parity_dtype_name(entry->dtype));
    if (entry->ndim != 2 || (rows >= 0 && (entry->shape[0] != rows || entry->shape[1] != row_length)))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: '%s' must be [B, T]%s", file->path, name, rows >= 0 ? " like input_ids" : "");
    return parity_safetensors_load(file, name, PARITY_I64, out);
}

parity_error *parity_batch_read(const char *path, int64_t vocab_size, parity_batch *out) {
    memset(out, 0, sizeof *out);
    parity_safetensors_file file;
    PARITY_TRY(parity_safetensors_open(path, &file));
    parity_tensor ids, labels, positions;
    memset(&labels, 0, sizeof labels);
    memset(&positions, 0, sizeof positions);
    parity_error *error = load_integer_tensor(&file, "input_ids", true, -1, -1, &ids);
    if (!error) error = load_integer_tensor(&file, "labels", true, ids.shape[0], ids.shape[1], &labels);
    if (!error) error = load_integer_tensor(&file, "position_ids", false, ids.shape[0], ids.shape[1], &positions);
    if (!error)
        error = parity_batch_from_arrays(ids.data, labels.data, positions.data, ids.shape[0], ids.shape[1], vocab_size, path, out);
    parity_tensor_release(&ids);
    parity_tensor_release(&labels);
    parity_tensor_release(&positions);
    parity_safetensors_close(&file);
    return error;
}

// Rows [first_row, first_row + rows) x columns [first_column, first_column + columns) of a CPU batch.
static parity_error *batch_block(const parity_batch *batch, int64_t first_row, int64_t rows, int64_t first_column,
                                 int64_t columns, parity_batch *out) {
    memset(out, 0, sizeof *out);
    PARITY_CHECK(batch->input_ids.device.type == PARITY_DEVICE_CPU, PARITY_ERROR_USAGE,
                 "batch rows: the batch must be on the CPU");
    PARITY_CHECK(first_row >= 0 && rows > 0 && first_row + rows <= batch->rows, PARITY_ERROR_USAGE,
                 "batch rows [%lld, %lld) of a batch of %lld rows", (long long)first_row, (long long)(first_row + rows),
                 (long long)batch->rows);
    const int64_t T = batch->row_length;
    PARITY_CHECK(first_column >= 0 && columns > 0 && first_column + columns <= T, PARITY_ERROR_USAGE,
                 "batch columns [%lld, %lld) of rows of %lld tokens", (long long)first_column,
                 (long long)(first_column + columns), (long long)T);
    const int64_t tokens = rows * columns;
    parity_error *error = parity_tensor_alloc(&out->input_ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(tokens));
    if (!error) error = parity_tensor_alloc(&out->positions, PARITY_I64, PARITY_CPU, PARITY_SHAPE(tokens));
    if (!error) error = parity_tensor_alloc(&out->targets, PARITY_I64, PARITY_CPU, PARITY_SHAPE(tokens));
    if (!error) error = parity_tensor_alloc(&out->cu_seqlens, PARITY_I64, PARITY_CPU, PARITY_SHAPE(tokens + 1));
    if (error) {
        parity_batch_release(out);
        return error;
    }
    const int64_t *ids = batch->input_ids.data, *positions = batch->positions.data, *targets = batch->targets.data;
    int64_t *bounds = out->cu_seqlens.data, documents = 0;
    int64_t *out_ids = out->input_ids.data, *out_positions = out->positions.data, *out_targets = out->targets.data;
    for (int64_t i = 0; i < tokens; i++) {
        const int64_t row = first_row + i / columns, column = first_column + i % columns, at = row * T + column;
        out_ids[i] = ids[at];
        out_positions[i] = positions[at];
        out_targets[i] = targets[at];
        if (i % columns == 0 || positions[at] == 0) bounds[documents++] = i;
        out->valid_target_count += targets[at] != PARITY_IGNORE_INDEX;
    }
    bounds[documents] = tokens;
    out->cu_seqlens.shape[0] = documents + 1;
    out->cu_seqlens.numel = documents + 1;
    out->rows = rows;
    out->row_length = columns;
    out->token_count = tokens;
    out->document_count = documents;
    out->num_items_in_batch = batch->num_items_in_batch;
    return NULL;
}

parity_error *parity_batch_rows(const parity_batch *batch, int64_t first, int64_t count, parity_batch *out) {
    return batch_block(batch, first, count, 0, batch->row_length, out);
}

parity_error *parity_batch_columns(const parity_batch *batch, int64_t first, int64_t count, parity_batch *out) {
    PARITY_TRY(batch_block(batch, 0, batch->rows, first, count, out));
    parity_error *error = parity_tensor_to(&out->sequence_cu_seqlens, &batch->cu_seqlens, PARITY_CPU, PARITY_I64);
    if (error) {
        parity_batch_release(out);
        return error;
    }
    out->sequence_row_length = batch->row_length;
    return NULL;
}
