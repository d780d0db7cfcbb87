// families.h: the table of model families (one row per family in families.c).
#ifndef PARITY_FAMILIES_H
#define PARITY_FAMILIES_H

#include "models/model.h"

extern const parity_model_family *const parity_model_families[];
extern const size_t parity_model_family_count;

#endif
