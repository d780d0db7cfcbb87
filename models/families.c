// families.c: every model family parity implements, one row each.
#include "models/families.h"

#include "models/families/decoder_family.h"

const parity_model_family *const parity_model_families[] = {
    &parity_decoder_family,
};
const size_t parity_model_family_count = sizeof parity_model_families / sizeof parity_model_families[0];
