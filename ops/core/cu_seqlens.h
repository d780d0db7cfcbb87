// cu_seqlens.h: packed documents. A packed row of N tokens holds S documents; cu_seqlens (S + 1,
// int64) lists their boundaries: document s is tokens [cu_seqlens[s], cu_seqlens[s + 1]). Ops with
// per-document state (causal conv, linear attention) never carry that state across a boundary.
// A NULL cu_seqlens means one document of all N tokens.
#ifndef PARITY_CU_SEQLENS_H
#define PARITY_CU_SEQLENS_H

#include <stdint.h>

#include "ops/core/error.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_documents {
    int64_t *offsets; // (count + 1): offsets[0] = 0, nondecreasing, offsets[count] = tokens
    int64_t count;    // number of documents S (>= 1)
} parity_documents;

// Shape and dtype only (no data access, so any device): NULL, or 1-D int64 with at least 2 entries.
parity_error *parity_cu_seqlens_check(const char *op, const parity_tensor *cu_seqlens);
// Reads the boundaries (from any device) and checks their values against `tokens`:
// "gated_delta_rule: cu_seqlens ends at 12, expected 14 (the token count)".
parity_error *parity_cu_seqlens_load(const char *op, const parity_tensor *cu_seqlens, int64_t tokens,
                                     parity_documents *out);
void parity_documents_free(parity_documents *documents);

#ifdef __cplusplus
}
#endif
#endif
