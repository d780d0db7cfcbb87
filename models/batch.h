// batch.h: a training batch as the models consume it: tokens flattened to N = B * T, per-token
// positions, HF-shifted targets and document boundaries (cu_seqlens). Plain [B, T] rows are B
// documents; a packed row whose position_ids restart at 0 holds one document per restart, and
// attention, RoPE and every sequence-wise op stay inside each document.
// Batch files are safetensors with int64 input_ids and labels [B, T] and optional position_ids.
// A batch is read on the host; parity_batch_to_device copies its tensors to the run's device (the
// counts stay host integers, and ops that need index values on the host copy them back themselves).
#ifndef PARITY_BATCH_H
#define PARITY_BATCH_H

#include <stdint.h>

#include "ops/core/tensor.h"

typedef struct parity_batch {
    int64_t rows, row_length;     // B, T
    int64_t token_count;          // N = B * T
    parity_tensor input_ids;      // (N) int64
    parity_tensor positions;      // (N) int64, restarting at 0 in each document
    parity_tensor targets;        // (N) int64: labels shifted left by one within each row, -100 at each row's end
    parity_tensor cu_seqlens;     // (documents + 1) int64
    int64_t document_count;
    int64_t valid_target_count;   // targets != -100
    // > 0: the loss is this batch's sum over valid targets divided by it (a data-parallel shard of a
    // larger batch divides by the whole batch's valid_target_count, so the shards' losses and
    // gradients add up to the whole batch's); 0: the mean over this batch's valid targets.
    int64_t num_items_in_batch;
    // Sequence parallel (a column slice of rows, parity_batch_columns): the documents of the whole
    // rows, every sequence-parallel rank's tokens in order, which attention sees after the Ulysses
    // all-to-all (models/parallel/); empty (numel 0) otherwise.
    parity_tensor sequence_cu_seqlens;
    int64_t sequence_row_length;  // the whole rows' length T (row_length is this slice's); 0 otherwise
} parity_batch;

#define PARITY_IGNORE_INDEX (-100)

// Reads and validates a batch file; `vocab_size` bounds ids and labels (0 = unchecked).
parity_error *parity_batch_read(const char *path, int64_t vocab_size, parity_batch *out);
// Builds a batch from host arrays (ids, labels [rows * row_length]; positions may be NULL).
parity_error *parity_batch_from_arrays(const int64_t *input_ids, const int64_t *labels, const int64_t *positions, int64_t rows,
                                       int64_t row_length, int64_t vocab_size, const char *source, parity_batch *out);
// `out` = `batch` with input_ids, positions, targets and cu_seqlens copied to `device` (contiguous int64
// tensors there); the counts are copied as they are. On error `out` holds nothing.
parity_error *parity_batch_to_device(const parity_batch *batch, parity_device device, parity_batch *out);
// `out` = rows [first, first + count) of a CPU `batch`, with their own documents (a row's targets are
// already shifted inside the row, so no target crosses the cut); num_items_in_batch is copied.
parity_error *parity_batch_rows(const parity_batch *batch, int64_t first, int64_t count, parity_batch *out);
// `out` = columns [first, first + count) of every row of a CPU `batch` (a sequence shard): input ids,
// positions and targets of those tokens (a target past the cut is already in the row's shifted
// targets), documents cut at the slice's start; sequence_cu_seqlens = `batch`'s documents and
// sequence_row_length its row length; num_items_in_batch is copied.
parity_error *parity_batch_columns(const parity_batch *batch, int64_t first, int64_t count, parity_batch *out);
void parity_batch_release(parity_batch *batch);

#endif
