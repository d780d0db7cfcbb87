// descriptor.c: the attention op descriptor (ops/op_descriptor.h).
//   slots: query (N, Hq, D), key (N, Hk, D), value (N, Hk, Dv), cu_seqlens (S + 1) int64 (data)
//          -> output (N, Hq, Dv); attributes: parity_attention_args (scale, causal, sliding_window)
#include "ops/registry.h"
#include "ops/attention/attention.h"

enum { QUERY, KEY, VALUE, CU_SEQLENS, OUTPUT };

static const parity_op_slot slots[] = {
    [QUERY] = {"query", PARITY_SLOT_INPUT, false},
    [KEY] = {"key", PARITY_SLOT_INPUT, false},
    [VALUE] = {"value", PARITY_SLOT_INPUT, false},
    [CU_SEQLENS] = {"cu_seqlens", PARITY_SLOT_DATA, false},
    [OUTPUT] = {"output", PARITY_SLOT_OUTPUT, false},
};

static parity_attention_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_attention_args args = *(const parity_attention_args *)attributes;
    args.query = tensors[QUERY];
    args.key = tensors[KEY];
    args.value = tensors[VALUE];
    args.cu_seqlens = tensors[CU_SEQLENS];
    args.output = tensors[OUTPUT];
    return args;
}

static parity_attention_grads grads_of(parity_tensor *const *gradients, parity_attention_args *args) {
    return (parity_attention_grads){gradients[OUTPUT], gradients[QUERY], gradients[KEY], gradients[VALUE]};
}

PARITY_OP_KERNEL_CALLS(attention)

const parity_op_descriptor parity_attention_op = {
    .name = PARITY_OP_ATTENTION, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_attention_args), .forward = kernel_forward, .backward = kernel_backward,
};
