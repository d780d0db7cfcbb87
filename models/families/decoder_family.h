// decoder_family.h: the decoder family's entry points (decoder.c: forward; decoder_family.c:
// requirements, parameter specs and the family row).
#ifndef PARITY_DECODER_FAMILY_H
#define PARITY_DECODER_FAMILY_H

#include "models/model.h"

extern const parity_model_family parity_decoder_family;
bool decoder_has_aux_loss(const parity_model_config *config);
parity_error *decoder_forward(parity_model *model, parity_tape *tape, const parity_batch *batch, parity_forward_outputs *outputs);

#endif
