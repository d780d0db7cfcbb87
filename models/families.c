// families.c: every model family parity implements, one row each.
#include "models/families.h"

const parity_model_family *const parity_model_families[] = {
    NULL,
};
const size_t parity_model_family_count = 0;
