// case_batch.h: the batch of one suite case as [B, T] int64 arrays, from a batch file, or drawn:
//   plain  {rows, length, seed}:     token ids uniform in [0, vocab) from Philox (seed, "input_ids"),
//                                    one document per row, labels = input_ids (HF shifts them);
//   packed {documents, rows, seed}:  each row holds the documents back to back, position_ids
//                                    restart at 0 per document, labels = input_ids except -100 on
//                                    the first token of every document after the first, so no
//                                    target crosses a document boundary (HF shifts labels left).
// The checksum covers exactly what runs: sha256 over input_ids, labels and (when present)
// position_ids as little-endian int64, in that order. Goldens record it; a run refuses a golden
// whose batch checksum differs.
#ifndef PARITY_CASE_BATCH_H
#define PARITY_CASE_BATCH_H

#include <stdint.h>

#include "harness/suite.h"
#include "models/batch.h"

typedef struct parity_case_batch {
    int64_t rows, length;          // B, T
    int64_t *input_ids;            // (B, T)
    int64_t *labels;               // (B, T)
    int64_t *position_ids;         // (B, T), or NULL (positions 0..T-1 per row)
    char source[1024];             // "file <path>", "plain [2, 40] seed 0", "packed [1, 2048] documents [1024, 1024] seed 0"
    char sha256[65];
} parity_case_batch;

// Builds the case batch; ids and labels are checked against `vocab_size`.
parity_error *parity_case_batch_make(const parity_suite_batch *spec, int64_t vocab_size, parity_case_batch *out);
// From arrays (a golden's stored batch); copies them.
parity_error *parity_case_batch_from_arrays(int64_t rows, int64_t length, const int64_t *input_ids, const int64_t *labels,
                                            const int64_t *position_ids, const char *source, parity_case_batch *out);
// The model-ready batch (targets, cu_seqlens) of a case batch.
parity_error *parity_case_batch_to_batch(const parity_case_batch *batch, int64_t vocab_size, parity_batch *out);
void parity_case_batch_release(parity_case_batch *batch);

#endif
