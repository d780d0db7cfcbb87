// descriptor.c: the attention op descriptor (ops/op_descriptor.h).
//   slots: query (N, Hq, D), key (N, Hk, D), value (N, Hk, Dv), cu_seqlens (S + 1) int64 (data) -> output
//          (N, Hq, Dv); attributes: parity_attention_args (scale, causal, sliding_window)
//   work (BATCHxQUERY_HEADSxKV_HEADSxTOKENSxHEAD_DIMxDOCUMENTS, causal, Dv = D): B rows of T tokens, each
//   row packed with S documents (parity_attention_work_document_length; S = 1: a plain batch). Flops are
//   the causal count, 2 B Hq D sum(L^2) over the documents forward (2 B H T^2 D for S = 1), 3.5x
//   that forward + backward; bytes: the forward reads q, k, v and writes o, the backward also reads q, k,
//   v, o, do and writes dq, dk, dv (the f32 log-sum-exp is not counted).
//   prepare: the block mask of a backend with PARITY_CAP_BLOCK_MASK (block_mask.h), from the call's
//   visibility, for the op tests and the bench.
#include <stdlib.h>

#include "ops/attention/attention.h"
#include "ops/attention/block_mask.h"
#include "ops/registry.h"

enum { SLOT_QUERY = 0, SLOT_CU_SEQLENS = 3 }; // indices in `slots`

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(attention, "query", PARITY_SLOT_INPUT, query, dquery),
    PARITY_OP_SLOT(attention, "key", PARITY_SLOT_INPUT, key, dkey),
    PARITY_OP_SLOT(attention, "value", PARITY_SLOT_INPUT, value, dvalue),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(attention, "cu_seqlens", PARITY_SLOT_DATA, cu_seqlens),
    PARITY_OP_SLOT(attention, "output", PARITY_SLOT_OUTPUT, output, doutput),
};

int64_t parity_attention_work_document_length(int64_t tokens, int64_t documents, int64_t index) {
    int64_t weights = documents * (documents + 1) / 2, before = 0;
    for (int64_t i = 0; i < index; i++) before += tokens * (i + 1) / weights;
    return index == documents - 1 ? tokens - before : tokens * (index + 1) / weights;
}

static double squared_lengths(const int64_t *sizes) {
    double sum = 0;
    for (int64_t i = 0; i < sizes[5]; i++) {
        double length = (double)parity_attention_work_document_length(sizes[3], sizes[5], i);
        sum += length * length;
    }
    return sum;
}

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double tokens = (double)(sizes[0] * sizes[3]), hq = (double)sizes[1], hk = (double)sizes[2], d = (double)sizes[4];
    double elements = tokens * d * (2 * hq + 2 * hk);                          // q, k, v read; o written
    if (with_backward) elements += tokens * d * (3 * hq + 2 * hk) + tokens * d * (hq + 2 * hk); // q k v o do; dq dk dv
    return elements * (double)parity_dtype_size(dtype) + (double)(sizes[0] * sizes[5] + 1) * 8; // + cu_seqlens
}

static double flops(const int64_t *sizes, bool with_backward) {
    double forward = 2 * (double)sizes[0] * (double)sizes[1] * (double)sizes[4] * squared_lengths(sizes);
    return with_backward ? 3.5 * forward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * sizes[3] * (sizes[1] + 2 * sizes[2]) * sizes[4]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"BATCHxQUERY_HEADSxKV_HEADSxTOKENSxHEAD_DIMxDOCUMENTS", 6, true, bytes, flops,
                                          gradient_bytes};

// The op tests' and the bench's block mask: a backend with PARITY_CAP_BLOCK_MASK gets the mask of the
// call's own visibility (cu_seqlens, causal, sliding_window), built by the model's builder on the
// query's device; every other backend gets block_mask = NULL.
static void release_block_mask(void *prepared) {
    parity_block_mask_free(prepared);
    free(prepared);
}

static parity_error *prepare_block_mask(const parity_backend *backend, void *attributes, parity_tensor *const *tensors,
                                        void **prepared) {
    parity_attention_args *args = attributes;
    args->block_mask = NULL;
    if (!(backend->capabilities & PARITY_CAP_BLOCK_MASK)) return NULL;
    const parity_tensor *query = tensors[SLOT_QUERY];
    PARITY_CHECK(query && query->ndim == 3, PARITY_ERROR_SHAPE, "attention: a block mask needs the query (N, Hq, D)");
    parity_block_mask *mask = calloc(1, sizeof *mask);
    if (!mask) return PARITY_ERROR(PARITY_ERROR_MEMORY, "attention: a block mask");
    parity_error *error = parity_block_mask_from_visibility(query->device, tensors[SLOT_CU_SEQLENS], query->shape[0],
                                                            args->causal, args->sliding_window, mask);
    if (error) {
        free(mask);
        return error;
    }
    args->block_mask = mask;
    *prepared = mask;
    return NULL;
}

PARITY_OP_DESCRIPTOR(attention, PARITY_OP_ATTENTION, PARITY_OP_ARGS_ATTRIBUTES(attention), .work = &work,
                     .prepare = prepare_block_mask, .release_prepared = release_block_mask)
