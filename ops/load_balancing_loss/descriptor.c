// descriptor.c: the load_balancing_loss op descriptor (ops/op_descriptor.h).
//   slots: router_logits (L * N, E) -> loss (); attributes: parity_load_balancing_loss_args (num_layers,
//          top_k)
//   work (ROWSxEXPERTSxTOP_K): forward reads the logits; backward reads them again and writes dlogits
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(load_balancing_loss, "router_logits", PARITY_SLOT_INPUT, router_logits, drouter_logits),
    PARITY_OP_SLOT(load_balancing_loss, "loss", PARITY_SLOT_OUTPUT, loss, dloss),
};

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double elements = (double)sizes[0] * (double)sizes[1];
    return (with_backward ? 3 : 1) * elements * (double)parity_dtype_size(dtype);
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxEXPERTSxTOP_K", 3, false, bytes, NULL, gradient_bytes};

PARITY_OP_DESCRIPTOR(load_balancing_loss, PARITY_OP_LOAD_BALANCING_LOSS,
                     PARITY_OP_ARGS_ATTRIBUTES(load_balancing_loss), .work = &work)
