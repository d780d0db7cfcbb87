// op_descriptor.c: the args builder and lookups of an op descriptor (op_descriptor.h). The slots give
// the offsets of tensor-pointer fields (checked at compile time by PARITY_OP_TENSOR_FIELD); a pointer
// is stored there by memcpy (pointers to const and non-const parity_tensor share one representation).
#include "ops/op_descriptor.h"

#include <string.h>

static void store_pointer(void *base, size_t offset, const void *pointer) {
    memcpy((char *)base + offset, &pointer, sizeof pointer);
}

void parity_op_build_args(const parity_op_descriptor *op, const void *attributes, parity_tensor *const *tensors,
                          bool for_backward, void *args) {
    memset(args, 0, op->args_size);
    if (op->attributes == PARITY_ATTRIBUTES_ARGS) memcpy(args, attributes, op->args_size);
    if (op->attributes == PARITY_ATTRIBUTES_POINTED) store_pointer(args, op->attributes_field, attributes);
    for (int i = 0; i < op->slot_count; i++) {
        const parity_op_slot *slot = &op->slots[i];
        store_pointer(args, slot->args_field, for_backward && slot->forward_only ? NULL : tensors[i]);
    }
}

void parity_op_build_grads(const parity_op_descriptor *op, parity_tensor *const *gradients, void *grads) {
    memset(grads, 0, op->grads_size);
    for (int i = 0; i < op->slot_count; i++)
        if (op->slots[i].grads_field != PARITY_OP_NO_FIELD) store_pointer(grads, op->slots[i].grads_field, gradients[i]);
}

parity_error *parity_op_prepare(const parity_op_descriptor *op, const struct parity_backend *backend, void *attributes,
                                parity_tensor *const *tensors, void **prepared) {
    *prepared = NULL;
    return op->prepare ? op->prepare(backend, attributes, tensors, prepared) : NULL;
}

void parity_op_release_prepared(const parity_op_descriptor *op, void *prepared) {
    if (prepared && op->release_prepared) op->release_prepared(prepared);
}

int parity_op_slot_index(const parity_op_descriptor *op, const char *name) {
    for (int i = 0; i < op->slot_count; i++)
        if (strcmp(op->slots[i].name, name) == 0) return i;
    return -1;
}
