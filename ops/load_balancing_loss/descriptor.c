// descriptor.c: the load_balancing_loss op descriptor (ops/op_descriptor.h).
//   slots: router_logits (L * N, E) -> loss (); attributes: parity_load_balancing_loss_args (num_layers, top_k)
//   work (ROWSxEXPERTSxTOP_K): forward reads the logits; backward reads them again and writes dlogits
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/registry.h"

enum { LOGITS, LOSS };

static const parity_op_slot slots[] = {
    [LOGITS] = {"router_logits", PARITY_SLOT_INPUT, false},
    [LOSS] = {"loss", PARITY_SLOT_OUTPUT, false},
};

static parity_load_balancing_loss_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_load_balancing_loss_args args = *(const parity_load_balancing_loss_args *)attributes;
    args.router_logits = tensors[LOGITS];
    args.loss = tensors[LOSS];
    return args;
}

static parity_load_balancing_loss_grads grads_of(parity_tensor *const *gradients, parity_load_balancing_loss_args *args) {
    return (parity_load_balancing_loss_grads){gradients[LOSS], gradients[LOGITS]};
}

PARITY_OP_KERNEL_CALLS(load_balancing_loss)

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double elements = (double)sizes[0] * (double)sizes[1];
    return (with_backward ? 3 : 1) * elements * (double)parity_dtype_size(dtype);
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxEXPERTSxTOP_K", 3, false, bytes, NULL, gradient_bytes};

const parity_op_descriptor parity_load_balancing_loss_op = {
    .name = PARITY_OP_LOAD_BALANCING_LOSS, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_load_balancing_loss_args), .forward = kernel_forward,
    .backward = kernel_backward, .work = &work,
};
