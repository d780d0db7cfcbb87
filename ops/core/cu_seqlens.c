// cu_seqlens.c: validation and loading of packed-document boundaries (cu_seqlens.h).
#include "ops/core/cu_seqlens.h"

#include <stdlib.h>
#include <string.h>

parity_error *parity_cu_seqlens_check(const char *op, const parity_tensor *cu_seqlens) {
    if (!cu_seqlens) return NULL;
    char shape[160];
    PARITY_CHECK(cu_seqlens->ndim == 1 && cu_seqlens->shape[0] >= 2, PARITY_ERROR_SHAPE,
                 "%s: cu_seqlens has shape %s, expected (S + 1) with S >= 1 documents", op,
                 parity_tensor_shape_string(cu_seqlens, shape, sizeof shape));
    PARITY_CHECK(cu_seqlens->dtype == PARITY_I64, PARITY_ERROR_SHAPE, "%s: cu_seqlens is %s, expected int64", op,
                 parity_dtype_name(cu_seqlens->dtype));
    PARITY_CHECK(cu_seqlens->data, PARITY_ERROR_SHAPE, "%s: cu_seqlens has no data", op);
    return NULL;
}

static parity_error *check_boundaries(const char *op, const int64_t *offsets, int64_t count, int64_t tokens) {
    PARITY_CHECK(offsets[0] == 0, PARITY_ERROR_SHAPE, "%s: cu_seqlens starts at %lld, expected 0", op,
                 (long long)offsets[0]);
    for (int64_t s = 0; s < count; s++)
        PARITY_CHECK(offsets[s + 1] >= offsets[s], PARITY_ERROR_SHAPE,
                     "%s: cu_seqlens decreases at entry %lld (%lld after %lld)", op, (long long)(s + 1),
                     (long long)offsets[s + 1], (long long)offsets[s]);
    PARITY_CHECK(offsets[count] == tokens, PARITY_ERROR_SHAPE, "%s: cu_seqlens ends at %lld, expected %lld (the token count)",
                 op, (long long)offsets[count], (long long)tokens);
    return NULL;
}

parity_error *parity_cu_seqlens_load(const char *op, const parity_tensor *cu_seqlens, int64_t tokens,
                                     parity_documents *out) {
    memset(out, 0, sizeof *out);
    PARITY_TRY(parity_cu_seqlens_check(op, cu_seqlens));
    int64_t count = cu_seqlens ? cu_seqlens->shape[0] - 1 : 1;
    int64_t *offsets = malloc((size_t)(count + 1) * sizeof *offsets);
    if (!offsets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: loading cu_seqlens", op);
    if (!cu_seqlens) {
        offsets[0] = 0;
        offsets[1] = tokens;
    } else {
        parity_tensor host;
        parity_error *error = parity_tensor_to(&host, cu_seqlens, PARITY_CPU, PARITY_I64); // contiguous host copy
        if (error) {
            free(offsets);
            return parity_error_wrap(error, __FILE__, __LINE__, "%s: reading cu_seqlens", op);
        }
        memcpy(offsets, host.data, (size_t)(count + 1) * sizeof *offsets);
        parity_tensor_release(&host);
    }
    parity_error *error = check_boundaries(op, offsets, count, tokens);
    if (error) {
        free(offsets);
        return error;
    }
    out->offsets = offsets;
    out->count = count;
    return NULL;
}

void parity_documents_free(parity_documents *documents) {
    if (!documents) return;
    free(documents->offsets);
    memset(documents, 0, sizeof *documents);
}
