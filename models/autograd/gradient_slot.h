// gradient_slot.h: where a node's backward writes the gradient of one input variable. The first
// gradient a variable receives is written straight into its own buffer; later ones go to a scratch
// tensor that is then added in. The op node (node_op.c) opens one for each differentiable input.
#ifndef PARITY_GRADIENT_SLOT_H
#define PARITY_GRADIENT_SLOT_H

#include "models/autograd/tape.h"

typedef struct parity_gradient_slot {
    parity_variable *variable;
    parity_tensor scratch;
    parity_tensor *target;   // NULL when the variable needs no gradient: pass it as the op's NULL d-output
    bool direct;
} parity_gradient_slot;

parity_error *parity_gradient_slot_open(parity_gradient_slot *slot, parity_variable *variable);
// Adds a scratch gradient in (no-op for direct writes and for variables without gradients).
parity_error *parity_gradient_slot_close(parity_gradient_slot *slot);
// Releases a slot's scratch after a failed backward.
void parity_gradient_slot_abandon(parity_gradient_slot *slot);

#endif
