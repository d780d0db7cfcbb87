// descriptor.c: the rotary op descriptor (ops/op_descriptor.h).
//   slots: query (N, Hq, D), key (N, Hk, D), positions (N) int64 (data) -> query_out (N, Hq, D), key_out
//          (N, Hk, D); attributes: the parity_rope_description args.rope points to. The backward reads both
//          incoming gradients (zeros for an output that received none).
//   work (TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM): each way reads q and k (and the positions) and writes
//   the rotated q and k
#include "ops/registry.h"
#include "ops/rotary/rotary.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(rotary, "query", PARITY_SLOT_INPUT, query, dquery),
    PARITY_OP_SLOT(rotary, "key", PARITY_SLOT_INPUT, key, dkey),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(rotary, "positions", PARITY_SLOT_DATA, positions),
    PARITY_OP_SLOT(rotary, "query_out", PARITY_SLOT_OUTPUT, query_out, dquery_out),
    PARITY_OP_SLOT(rotary, "key_out", PARITY_SLOT_OUTPUT, key_out, dkey_out),
};

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double tokens = (double)sizes[0], heads = (double)(sizes[1] + sizes[2]), d = (double)sizes[3];
    double one_way = 2 * tokens * heads * d * (double)parity_dtype_size(dtype) + tokens * 8;
    return with_backward ? 2 * one_way : one_way;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * (sizes[1] + sizes[2]) * sizes[3]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM", 4, false, bytes, NULL,
                                          gradient_bytes};

PARITY_OP_DESCRIPTOR(rotary, PARITY_OP_ROTARY, .attributes = PARITY_ATTRIBUTES_POINTED,
                     .attributes_size = sizeof(parity_rope_description),
                     .attributes_field = offsetof(parity_rotary_args, rope), .needs_every_output_gradient = true,
                     .work = &work)
