// descriptor.c: the embedding op descriptor (ops/op_descriptor.h).
//   slots: ids (N) int64 (data), weight (V, H) -> y (N, H); attributes: parity_embedding_args
//          (has_padding_idx, padding_idx)
#include "ops/embedding/embedding.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT_WITHOUT_GRADIENT(embedding, "ids", PARITY_SLOT_DATA, ids),
    PARITY_OP_SLOT(embedding, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT(embedding, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(embedding, PARITY_OP_EMBEDDING, PARITY_OP_ARGS_ATTRIBUTES(embedding))
