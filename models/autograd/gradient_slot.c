// gradient_slot.c: direct-or-accumulate gradient targets for node backwards.
#include "models/autograd/gradient_slot.h"

#include <string.h>

parity_error *parity_gradient_slot_open(parity_gradient_slot *slot, parity_variable *variable) {
    memset(slot, 0, sizeof *slot);
    slot->variable = variable;
    if (!variable || !variable->requires_gradient) return NULL;
    PARITY_TRY(parity_variable_gradient_target(variable, &slot->scratch, &slot->target, &slot->direct));
    if (slot->direct) variable->has_gradient = true; // a second slot on the same variable must accumulate
    return NULL;
}

parity_error *parity_gradient_slot_close(parity_gradient_slot *slot) {
    if (!slot->target || slot->direct) return NULL;
    return parity_variable_gradient_commit(slot->variable, &slot->scratch, false);
}

void parity_gradient_slot_abandon(parity_gradient_slot *slot) { parity_tensor_release(&slot->scratch); }
