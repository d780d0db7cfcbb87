// op_descriptor.c: lookups on an op descriptor (op_descriptor.h).
#include "ops/op_descriptor.h"

#include <string.h>

int parity_op_slot_index(const parity_op_descriptor *op, const char *name) {
    for (int i = 0; i < op->slot_count; i++)
        if (strcmp(op->slots[i].name, name) == 0) return i;
    return -1;
}
