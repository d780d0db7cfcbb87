// descriptor.c: the swiglu op descriptor (ops/op_descriptor.h).
//   slots: gate (N, I), up (N, I) -> y (N, I); no attributes
//   work (ROWSxINTERMEDIATE): forward reads gate and up and writes y; backward reads gate, up and dy and
//   writes dgate and dup
#include "ops/registry.h"
#include "ops/swiglu/swiglu.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(swiglu, "gate", PARITY_SLOT_INPUT, gate, dgate),
    PARITY_OP_SLOT(swiglu, "up", PARITY_SLOT_INPUT, up, dup),
    PARITY_OP_SLOT(swiglu, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double elements = (double)sizes[0] * (double)sizes[1];
    return (with_backward ? 8 : 3) * elements * (double)parity_dtype_size(dtype);
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return 2.0 * (double)(sizes[0] * sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxINTERMEDIATE", 2, false, bytes, NULL, gradient_bytes};

PARITY_OP_DESCRIPTOR(swiglu, PARITY_OP_SWIGLU, .work = &work)
