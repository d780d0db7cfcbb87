// modeling_backend.c: names and parsing of MODELING_BACKEND values (see modeling_backend.h).
#include "harness/config/modeling_backend.h"

#include <string.h>

const char *parity_modeling_backend_name(parity_modeling_backend backend) {
    switch (backend) {
    case PARITY_MODELING_VEOMNI: return "veomni";
    case PARITY_MODELING_HF: return "hf";
    case PARITY_MODELING_FROM_ENVIRONMENT: return "environment";
    }
    return "unknown";
}

bool parity_modeling_backend_parse(const char *text, parity_modeling_backend *out) {
    if (!text) return false;
    if (strcmp(text, "veomni") == 0) *out = PARITY_MODELING_VEOMNI;
    else if (strcmp(text, "hf") == 0) *out = PARITY_MODELING_HF;
    else return false;
    return true;
}
